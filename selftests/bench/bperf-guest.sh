#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-bperf' (selftests/bench/bperf.sh runs it in
# the VM).  For upstream perf (perf-base) and ours in turn, keeps adding
# sessions of
#     perf stat --bpf-counters -e cpu-clock -a -- sleep $BENCH_HOLD
# and, at each N asked for, measures
#     perf bench sched pipe -l $BENCH_LOOPS
# $BENCH_RUNS times, then once more with kernel.bpf_stats_enabled, for
# the time the sessions' BPF programs take per context switch.
# Writes "tool,N,run,usecs_per_op" lines to $JOB/bench.csv, "tool,N,ns"
# lines to $JOB/bpf.csv and what it sees to stdout.  The same perf bench
# binary (perf-base) measures both, so only the sessions differ.

loops=${BENCH_LOOPS:-20000}
# Sessions sleep much longer than the 600 s of the original recipe: 1000
# of them take 20 minutes and more to start in a TCG VM, and with -icount
# the guest clock jumps ahead whenever the guest idles.
hold=${BENCH_HOLD:-1000000}
runs=${BENCH_RUNS:-3}
ns_base=${BENCH_N_BASE:-0 1 8 32 38}
ns_ours=${BENCH_N_OURS:-0 1 8 32 38 100 1000}
out=$JOB/bench.csv
bpf_out=$JOB/bpf.csv
: >"$out"
: >"$bpf_out"
cd /tmp || exit 1

# usecs: one run of the pipe benchmark, in usecs/op
usecs() {
	perf-base bench sched pipe -l "$loops" 2>&1 |
		awk '/usecs\/op/ { print $1; exit }'
}

# bpf_time TOOL: run_time_ns of the BPF programs of TOOL's sessions:
# upstream's leader (on_switch) and the fexit program each session
# attaches to it; all of ours (bperf_*), attached or not
bpf_time() {
	local progs='bperf_[a-z]+'

	[ "$1" = base ] && progs='on_switch|fexit_XXX'
	bpftool prog show | awk -v re="^($progs)\$" '
		/^[0-9]+: / {
			name = ""; t = 0
			for (i = 1; i < NF; i++) {
				if ($i == "name") name = $(i + 1)
				if ($i == "run_time_ns") t = $(i + 1)
			}
			if (name ~ re) T += t
		}
		END { print T + 0 }'
}

ctxt() {
	awk '$1 == "ctxt" { print $2 }' /proc/stat
}

# bpf_ns TOOL: ns of BPF per context switch over one more pipe run: the
# run time of TOOL's programs over the switches the kernel counted
bpf_ns() {
	local t0 c0 t1 c1

	sysctl -qw kernel.bpf_stats_enabled=1
	t0=$(bpf_time "$1")
	c0=$(ctxt)
	usecs >/dev/null
	t1=$(bpf_time "$1")
	c1=$(ctxt)
	sysctl -qw kernel.bpf_stats_enabled=0
	awk -v t=$((t1 - t0)) -v c=$((c1 - c0)) \
		'BEGIN { if (c > 0) printf "%.1f\n", t / c; else print "-" }'
}

# sessions TOOL: how many sessions have set up their counters: upstream
# loads one follower program per session, ours registers each one
sessions() {
	if [ "$1" = base ]; then
		bpftool prog show | grep -c ' name fexit_XXX '
	else
		bpftool -j map dump pinned /sys/fs/bpf/bperf_attr_map_dir/bperf_sessions \
			2>/dev/null | grep -o '"key":\[' | wc -l
	fi
}

# alive: how many of the sessions started are still there
alive() {
	local p n=0

	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && n=$((n + 1))
	done
	echo $n
}

for tool in base ours; do
	perf=perf
	ns=$ns_ours
	[ $tool = base ] && perf=perf-base ns=$ns_base
	pids=()
	# a first run warms up what the guest has not run yet
	usecs >/dev/null
	for n in $ns; do
		t0=$(date +%s)
		# start them 20 at a time, so that perf does not start 900 at once
		while [ ${#pids[@]} -lt "$n" ]; do
			batch=$(( n - ${#pids[@]} < 20 ? n - ${#pids[@]} : 20 ))
			for _ in $(seq $batch); do
				$perf stat --bpf-counters -e cpu-clock -a -o /dev/null \
					-- sleep "$hold" 2>>/tmp/sessions.err &
				pids+=($!)
			done
			while [ "$(sessions $tool)" -lt ${#pids[@]} ] &&
			      [ "$(alive)" = ${#pids[@]} ]; do
				sleep 1
			done
			[ "$(alive)" = ${#pids[@]} ] || break
		done
		if [ "$(alive)" != "$n" ] || [ "$(sessions $tool)" != "$n" ]; then
			echo "$tool: only $(alive) of $n sessions running:"
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
		if [ "$n" -gt 0 ]; then
			per_switch=$(bpf_ns $tool)
			echo "$tool,$n,$per_switch" >>"$bpf_out"
			echo "    BPF on sched_switch: $per_switch ns per context switch"
		fi
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
