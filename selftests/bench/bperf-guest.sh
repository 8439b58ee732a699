#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-bperf' (selftests/bench/bperf.sh runs it in
# the VM).  For each mode of $BENCH_MODES and for upstream perf
# (perf-base) and ours in turn, keeps adding idle perf stat
# --bpf-counters -e cpu-clock sessions and, at each N asked for, times
# the round trips of pingpong (two threads of one process passing a byte
# through pipes: two context switches each) $BENCH_RUNS times, then once
# more with kernel.bpf_stats_enabled for the time the sessions' BPF
# programs take per context switch.  The modes:
#     cpu    sessions of -a -- sleep $BENCH_HOLD
#     task1  sessions of -p PINGPONG, all counting the threads timed
#     taskN  session 1 on -p PINGPONG, each other one on -p of its own
#            idle sleep process
# Writes "mode,tool,N,run,usecs_per_op" lines to $JOB/bench.csv,
# "mode,tool,N,ns" lines to $JOB/bpf.csv and what it sees to stdout.  The
# same pingpong process is timed for both tools, so only the sessions
# differ.

loops=${BENCH_LOOPS:-20000}
# Sessions sleep much longer than the 600 s of the original recipe: 1000
# of them take 20 minutes and more to start in a TCG VM, and with -icount
# the guest clock jumps ahead whenever the guest idles.
hold=${BENCH_HOLD:-1000000}
runs=${BENCH_RUNS:-3}
modes=${BENCH_MODES:-cpu task1 taskN}
ns_base=${BENCH_N_BASE:-0 1 8 32 38}
ns_ours=${BENCH_N_OURS:-0 1 8 32 38 100 1000}
# task modes: every N up to this one (1000 more sessions and sleeps take
# another 20 minutes a mode)
task_max=${BENCH_TASK_MAX:-100}
pingpong=$BENCH_PINGPONG
out=$JOB/bench.csv
bpf_out=$JOB/bpf.csv
: >"$out"
: >"$bpf_out"
cd /tmp || exit 1

coproc PP { exec "$pingpong"; }
pp=$PP_PID

# usecs: one pingpong run, in usecs per round trip.  Called in a
# subshell: a pingpong that died or hangs is killed, so that no later
# run reads a stale answer, and the caller stops on the empty result.
usecs() {
	local u

	echo "$loops" >&"${PP[1]}"
	if ! read -r -t 600 u <&"${PP[0]}"; then
		echo "pingpong died or hangs" >&2
		kill "$pp" 2>/dev/null
		return 1
	fi
	echo "$u"
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
		END { printf "%.0f\n", T }'
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
	usecs >/dev/null || return 1
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

# bperf_links: how many links run one of our programs
bperf_links() {
	local ids

	ids=$(bpftool prog show | awk '/ name bperf_/ { printf " %d ", $1 }')
	bpftool link show | awk -v ids="$ids" '
		/^[0-9]+: / {
			for (i = 2; i < NF; i++)
				if ($i == "prog" && index(ids, " " $(i + 1) " ")) n++
		}
		END { print n + 0 }'
}

# alive: how many of the sessions started are still there
alive() {
	local p n=0

	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && n=$((n + 1))
	done
	echo $n
}

# session TOOL MODE I: start session I (from 1) of TOOL in MODE in the
# background; its pid goes to pids, that of its target, if any, to targets
session() {
	local bin=perf target

	[ "$1" = base ] && bin=perf-base
	case $2 in
	cpu)
		$bin stat --bpf-counters -e cpu-clock -a -o /dev/null \
			-- sleep "$hold" 2>>/tmp/sessions.err &
		;;
	task1 | taskN)
		target=$pp
		if [ "$2" = taskN ] && [ "$3" -gt 1 ]; then
			sleep "$hold" &
			target=$!
			targets+=("$target")
		fi
		$bin stat --bpf-counters -e cpu-clock -p "$target" -o /dev/null \
			2>>/tmp/sessions.err &
		;;
	esac
	pids+=($!)
}

# stop: end the sessions so that ours clean up: SIGINT for -p (perf stat
# ignores it while its workload runs), the end of the sleeps for -a
stop() {
	[ ${#pids[@]} -gt 0 ] || return 0
	kill -INT "${pids[@]}" 2>/dev/null
	pkill -x sleep
	# never a bare wait: pingpong lives on
	wait "${pids[@]}" "${targets[@]}" 2>/dev/null
	pids=() targets=()
}

for mode in $modes; do
for tool in base ours; do
	ns=$ns_ours
	[ $tool = base ] && ns=$ns_base
	pids=() targets=()
	# a first run warms up what the guest has not run yet
	usecs >/dev/null || exit 1
	for n in $ns; do
		[ "$mode" != cpu ] && [ "$n" -gt "$task_max" ] && break
		t0=$(date +%s)
		# start them 20 at a time, so that perf does not start 900 at once
		while [ ${#pids[@]} -lt "$n" ]; do
			batch=$(( n - ${#pids[@]} < 20 ? n - ${#pids[@]} : 20 ))
			for _ in $(seq $batch); do
				session $tool "$mode" $((${#pids[@]} + 1))
			done
			while [ "$(sessions $tool)" -lt ${#pids[@]} ] &&
			      [ "$(alive)" = ${#pids[@]} ]; do
				sleep 1
			done
			[ "$(alive)" = ${#pids[@]} ] || break
		done
		if [ "$(alive)" != "$n" ] || [ "$(sessions $tool)" != "$n" ]; then
			echo "$mode $tool: only $(alive) of $n sessions running:"
			sort /tmp/sessions.err | uniq -c | head -5
			break
		fi
		echo "$mode $tool: $n sessions running (started in $(($(date +%s) - t0)) s), $(free -m | awk '/^Mem/ { print $3 }') MB used, $(bperf_links) bperf links"
		sleep 2
		for r in $(seq "$runs"); do
			u=$(usecs) || exit 1
			echo "$mode,$tool,$n,$r,$u" >>"$out"
			echo "    run $r: $u usecs/op"
		done
		if [ "$n" -gt 0 ]; then
			per_switch=$(bpf_ns $tool) || exit 1
			echo "$mode,$tool,$n,$per_switch" >>"$bpf_out"
			echo "    BPF: $per_switch ns per context switch"
		fi
	done

	if [ $tool = base ] && [ ${#pids[@]} -ge 38 ]; then
		# upstream's limit: one fexit program per session on the leader
		if timeout 60 perf-base stat --bpf-counters -e cpu-clock -a -- true \
			>/tmp/s39.out 2>&1; then
			echo "$mode base: session 39 started"
		else
			echo "$mode base: session 39 fails: $(grep -v '^$' /tmp/s39.out | head -3 | tr '\n' ' ')"
		fi
	fi
	stop
	echo "$mode $tool: sessions stopped"
done
done
kill "$pp"

