#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the VM for 'make bench-bperf': what N concurrent
#   perf stat --bpf-counters -e cpu-clock -a -- sleep 3600
# sessions cost every context switch, as the usecs/op of
# 'perf bench sched pipe', for upstream 6.12 perf (perf-base) and ours.
#
# Writes one line per measurement to $JOB/bperf.out:
#   <perf> <N> <usecs/op>        (median of BENCH_REPEAT runs)
#   <perf> <N> fail <reason>     (the Nth session could not start)
set -u

loops=${BENCH_LOOPS:-20000}
repeat=${BENCH_REPEAT:-3}
out=$JOB/bperf.out
: >"$out"

# pipe_usecs: median usecs/op of $repeat runs of sched pipe.
pipe_usecs() {
	for _ in $(seq "$repeat"); do
		perf bench sched pipe -l "$loops" 2>/dev/null |
			awk '/usecs\/op/ { print $1 }'
	done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# sessions PERF N MAP: start sessions of PERF sharing attr map MAP, one
# at a time, until N run; each is up once its workload runs (perf stat
# starts it after the counters are set up).  Sets $why if one failed.
pids=()
why=''
sessions() {
	local perf=$1 n=$2 map=$3 i log
	for i in $(seq $((${#pids[@]} + 1)) "$n"); do
		log=$JOB/session.$perf.$i
		"$perf" stat --bpf-counters --bpf-attr-map "$map" -e cpu-clock -a \
			-o "$log" -- sleep 3600 2>"$log.err" &
		pids+=($!)
		for _ in $(seq 600); do
			[ "$(pgrep -c -x -P "$!" sleep)" = 1 ] && break
			if ! kill -0 "$!" 2>/dev/null; then
				why="session $i: $(tr '\n' ' ' <"$log.err" | cut -c1-160)"
				unset 'pids[-1]'
				return
			fi
			sleep 0.1
		done
		[ "$(pgrep -c -x -P "$!" sleep)" = 1 ] ||
			{ why="session $i did not start in 60 s"; return; }
	done
}

# stop_sessions: end the workloads; each perf stat then reports and
# cleans up as it does when its workload exits.
stop_sessions() {
	local p
	for p in "${pids[@]}"; do
		pkill -x -P "$p" sleep
	done
	wait
	pids=()
}

run() {
	local perf=$1 map=$2 n
	shift 2
	rm -f "$map"
	for n in "$@"; do
		why=''
		sessions "$perf" "$n" "$map"
		if [ -n "$why" ]; then
			echo "$perf $n fail $why" >>"$out"
			echo "$perf N=$n: $why" >&2
			break
		fi
		echo "$perf $n $(pipe_usecs)" >>"$out"
		echo "$perf N=$n: $(tail -n 1 "$out" | cut -d' ' -f3) usecs/op" >&2
	done
	stop_sessions
	rm -f "$map"
}

echo "perf bench sched pipe -l $loops, median of $repeat" >&2
run perf-base /sys/fs/bpf/bench_base_attr_map ${BENCH_N_BASE:-0 1 8 32 38 39}
run perf /sys/fs/bpf/bench_ours_attr_map ${BENCH_N_OURS:-0 1 8 32 38 100 1000}
