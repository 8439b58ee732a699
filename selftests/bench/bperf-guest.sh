#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-bperf' (selftests/bench/bperf.sh runs it in
# the VM).  For upstream perf (perf-base) and ours in turn, keeps adding
# sessions of
#     perf stat --bpf-counters -e cpu-clock -a -- sleep 600
# and, at each N asked for, measures
#     perf bench sched pipe -l $BENCH_LOOPS
# three times.  Writes "tool,N,run,usecs_per_op" lines to $JOB/bench.csv
# and what it sees to stdout.  The same perf bench binary (perf-base)
# measures both, so only the sessions differ.

loops=${BENCH_LOOPS:-20000}
runs=${BENCH_RUNS:-3}
ns_base=${BENCH_N_BASE:-0 1 8 32 38}
ns_ours=${BENCH_N_OURS:-0 1 8 32 38 100 1000}
out=$JOB/bench.csv
: >"$out"
cd /tmp || exit 1

# usecs: one run of the pipe benchmark, in usecs/op
usecs() {
	perf-base bench sched pipe -l "$loops" 2>&1 |
		awk '/usecs\/op/ { print $1; exit }'
}

# ready PID: the session holds a BPF link (it has set up its counters),
# or it has died
ready() {
	local fd

	for fd in "/proc/$1/fd/"*; do
		case $(readlink "$fd" 2>/dev/null) in
		*bpf-link*) return 0 ;;
		esac
	done
	! kill -0 "$1" 2>/dev/null
}

for tool in base ours; do
	perf=perf
	ns=$ns_ours
	[ $tool = base ] && perf=perf-base ns=$ns_base
	pids=()
	for n in $ns; do
		t0=$(date +%s)
		while [ ${#pids[@]} -lt "$n" ]; do
			$perf stat --bpf-counters -e cpu-clock -a -o /dev/null -- sleep 600 \
				2>>/tmp/sessions.err &
			pids+=($!)
		done
		for p in "${pids[@]}"; do
			while ! ready "$p"; do
				sleep 0.2
			done
		done
		alive=0
		for p in "${pids[@]}"; do
			kill -0 "$p" 2>/dev/null && alive=$((alive + 1))
		done
		if [ "$alive" != "$n" ]; then
			echo "$tool: only $alive of $n sessions running:"
			sort /tmp/sessions.err | uniq -c | head -5
			break
		fi
		echo "$tool: $n sessions running (started in $(($(date +%s) - t0)) s), $(free -m | awk '/^Mem/ { print $3 }') MB used"
		sleep 2
		for r in $(seq "$runs"); do
			u=$(usecs)
			echo "$tool,$n,$r,$u" >>"$out"
			echo "    run $r: $u usecs/op"
		done
	done

	if [ $tool = base ] && [ ${#pids[@]} -ge 38 ]; then
		# upstream's limit: one fexit program per session on the leader
		if timeout 60 perf-base stat --bpf-counters -e cpu-clock -a -- true \
			>/tmp/s39.out 2>&1; then
			echo "base: session 39 started"
		else
			echo "base: session 39 fails: $(grep -v '^$' /tmp/s39.out | head -3 | tr '\n' ' ')"
		fi
	fi
	kill "${pids[@]}" 2>/dev/null
	wait 2>/dev/null
	echo "$tool: sessions stopped"
done
