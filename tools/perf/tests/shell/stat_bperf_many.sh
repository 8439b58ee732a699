#!/bin/bash
# perf stat --bpf-counters runs 40, then 200 sessions at once (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# Upstream's bperf stops at 38 sessions per event.  Start 40, then 200
# sessions, half of them system wide (cpu-clock -a), half counting one
# process (task-clock -p), plus a plain perf stat of each kind as the
# reference.  One set of bperf programs must serve them all.
#
# The process burns a CPU for 2 s once every session is attached, and
# the -p sessions end when it exits: each must count what the reference
# counts.  The -a sessions count from their start to a common release:
# each must report about as many CPUs utilized as there are online CPUs
# (perf stat's own elapsed time is its reference; perf may read a little
# late when 200 sessions end at once, so allow more above than below).

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
ncpus=$(getconf _NPROCESSORS_ONLN)

for n in 40 200; do
	bperf_lock
	bperf_target busy 2
	pid=$(cat "$tmp/busy.pid")
	for i in $(seq "$n"); do
		if [ $((i % 2)) = 1 ]; then
			bperf_stat "s$i" -e cpu-clock -a -- flock -s "$tmp/lock" true 9>&- &
		else
			bperf_stat "s$i" -e task-clock -p "$pid" 9>&- &
		fi
		bpf_test_track $!
	done
	plain_stat cpu_ref -e cpu-clock -a -- flock -s "$tmp/lock" true 9>&- &
	ref_a=$!
	plain_stat task_ref -e task-clock -p "$pid" 9>&- &
	ref_p=$!
	bpf_test_track "$ref_a $ref_p"

	# perf starts in about a second in a TCG VM: allow 3 a session
	registered=0
	for _ in $(seq $((n * 10))); do
		registered=$(bperf_entries "${attr}_dir/bperf_sessions" 2>/dev/null)
		[ "${registered:-0}" -ge "$n" ] && break
		sleep 0.3
	done
	[ "$registered" = "$n" ] ||
		bpf_test_fail "$registered of $n sessions registered:" \
			"$(cat "$tmp"/s*.err | sort | uniq -c)"
	bperf_wait_fd $ref_a perf_event && bperf_wait_fd $ref_p perf_event ||
		bpf_test_fail "the reference sessions did not start"
	progs=$(bpftool prog show | grep -c ' name bperf_switch ')
	[ "$progs" = 1 ] || bpf_test_fail "$n sessions: $progs bperf_switch programs, want 1"
	echo "$n sessions counting, one bperf_switch program"

	sleep 1
	bperf_unlock
	bperf_go
	wait

	ref=$(bperf_get task_ref task-clock)
	echo "reference: $ref msec of task-clock," \
		"$(bperf_util cpu_ref cpu-clock) CPUs utilized of $ncpus"
	bad=0
	for i in $(seq "$n"); do
		if [ $((i % 2)) = 1 ]; then
			u=$(bperf_util "s$i" cpu-clock)
			awk -v u="${u:-0}" -v n="$ncpus" \
				'BEGIN { exit !(u >= 0.9 * n && u <= 1.3 * n) }' && continue
			echo "session $i: ${u:-no} CPUs utilized:" \
				"$(cat "$tmp/s$i.out" "$tmp/s$i.err")"
		else
			v=$(bperf_count "s$i" task-clock) && bperf_within "$ref" "$v" 5 &&
				continue
			echo "session $i: ${v:-no} msec of task-clock: $(cat "$tmp/s$i.err")"
		fi
		bad=$((bad + 1))
	done
	[ $bad = 0 ] || bpf_test_fail "$bad of $n sessions counted wrong"
	echo "all $n sessions count right"
	bperf_none_pinned
done
exit 0
