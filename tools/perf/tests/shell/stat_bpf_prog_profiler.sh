#!/bin/bash
# perf stat -b counts events while a BPF program runs (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# bperf's sched_switch program runs on every context switch while a
# bperf session counts tasks: profile it with perf stat -b and check that
# its runs are seen, and counted for no longer than the kernel says they
# ran, also on a CPU after an offline one; that it finds the program by
# name and by tag too; and that bad program ids, names and tags are
# refused.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
tmp=$(bpf_test_dir)

# The kernel's own run time of the program (kernel.bpf_stats_enabled)
# bounds what perf stat -b counts: its cpu-clock is read inside each run.
bpf_test_stats_on
# prog_field NAME: the value bpftool shows after NAME for program $id
prog_field() {
	bpftool prog show id "$id" |
		awk -v f="$1" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }'
}
# fits MSEC RUN_TIME_BEFORE RUN_TIME_AFTER WHAT: no more cpu-clock than
# the program ran, its profiler's runs included
fits() {
	[ -n "$2" ] && [ -n "$3" ] ||
		bpf_test_fail "$4: no run time of program $id: $(bpftool prog show id "$id")"
	echo "$4: $1 msec of cpu-clock in $((($3 - $2) / 1000000)) msec of runs"
	awk -v c="$1" -v r0="$2" -v r1="$3" \
		'BEGIN { exit !(c * 1e6 <= (r1 - r0) * 1.05 + 1e6) }' ||
		bpf_test_fail "$4: more cpu-clock than the program ran"
}

bperf_lock
# a task session (its workload): CPU-wide ones attach nothing
bperf_stat hold -e cpu-clock -- flock -s "$tmp/lock" true 9>&- &
b=$!
bpf_test_track $b
bperf_wait_fd $b "bpf?link" || bpf_test_fail "bperf session did not start: $(cat "$tmp/hold.err")"
id=$(bpftool prog show name bperf_switch | awk -F: 'NR == 1 { print $1 }')
[ -n "$id" ] || bpf_test_fail "no bperf_switch program loaded"

# Profile it system-wide for 2 s, while the pipe benchmark switches
# contexts (with a workload, perf stat -b counts on the workload's task,
# which is not where the program runs).
perf bench sched pipe -T -l 100000000 >/dev/null 2>&1 9>&- &
load=$!
bpf_test_track $load
run0=$(prog_field run_time_ns)
perf stat -b "$id" -e cpu-clock -x, -o "$tmp/prof.out" --timeout 2000 \
	2>"$tmp/prof.err" 9>&- ||
	bpf_test_fail "perf stat -b failed: $(cat "$tmp/prof.err")"
run1=$(prog_field run_time_ns)
# By name and by tag: -v names the program each stands for, which must be
# that one alone, and it counts.
tag=$(prog_field tag)
[ -n "$tag" ] || bpf_test_fail "no tag for program $id: $(bpftool prog show id "$id")"
for by in bperf_switch "$tag"; do
	perf stat -v -b "$by" -e cpu-clock -x, -o "$tmp/by.out" --timeout 1000 \
		2>"$tmp/by.err" 9>&- ||
		bpf_test_fail "perf stat -b $by failed: $(cat "$tmp/by.err")"
	picked=$(sed -n "s/^bpf prog $by: id //p" "$tmp/by.err" | tr '\n' ' ')
	[ "$picked" = "$id " ] ||
		bpf_test_fail "perf stat -b $by profiled programs '$picked', want $id alone"
	count=$(bperf_count by cpu-clock) ||
		bpf_test_fail "perf stat -b $by: no count: $(cat "$tmp/by.out" "$tmp/by.err")"
	awk -v t="$count" 'BEGIN { exit !(t > 0) }' ||
		bpf_test_fail "perf stat -b $by: the program's runs were not seen"
	echo "perf stat -b $by: program $id, $count msec of cpu-clock"
done
kill $load 2>/dev/null
wait $load 2>/dev/null

# With CPU 1 offline between online CPUs: the switches of a load pinned
# to the last CPU must be counted on that CPU, which takes the program's
# per-CPU events found by CPU id, not by position among the online CPUs
# (upstream perf keys them by position and counts nothing there).
cpu1=/sys/devices/system/cpu/cpu1/online
cpu1_restore() {
	echo 1 >$cpu1
	bperf_cleanup
}
online=$(cat /sys/devices/system/cpu/online)
if ! command -v taskset >/dev/null; then
	echo "skipping the offline-CPU part: no taskset"
elif [ ! -w $cpu1 ] || [ "$(cat $cpu1)" != 1 ]; then
	echo "skipping the offline-CPU part: CPU 1 is offline or cannot go offline"
elif [ "${online##*[,-]}" -lt 2 ]; then
	echo "skipping the offline-CPU part: no CPU online above CPU 1 (online $online)"
else
	trap cpu1_restore EXIT
	trap 'cpu1_restore; exit 1' TERM INT
	echo 0 >$cpu1 || bpf_test_fail "cannot take CPU 1 offline"
	online=$(cat /sys/devices/system/cpu/online)
	last=${online##*[,-]}
	# threads: killing the benchmark ends all of it
	taskset -c "$last" perf bench sched pipe -T -l 100000000 >/dev/null 2>&1 9>&- &
	load=$!
	bpf_test_track $load
	r0=$(prog_field run_time_ns)
	perf stat -b "$id" -e cpu-clock -A -x, -o "$tmp/cpus.out" \
		--timeout 2000 2>"$tmp/cpus.err" 9>&-
	rc=$?
	r1=$(prog_field run_time_ns)
	kill $load 2>/dev/null
	wait $load 2>/dev/null
	echo 1 >$cpu1 || bpf_test_fail "cannot bring CPU 1 back online"
	trap bperf_cleanup EXIT TERM INT
	[ $rc = 0 ] || bpf_test_fail "perf stat -b -A failed: $(cat "$tmp/cpus.err")"
	count=$(awk -F, -v c="CPU$last" \
		'$1 == c && $2 ~ /^[0-9.]+$/ { print $2; exit }' "$tmp/cpus.out")
	echo "perf stat -b -A, CPU 1 offline (online $online):" \
		"program $id, ${count:-no} msec of cpu-clock on CPU $last"
	awk -v t="${count:-0}" 'BEGIN { exit !(t > 0) }' ||
		bpf_test_fail "perf stat -b -A: no runs seen on CPU $last:" \
			"$(cat "$tmp/cpus.out")"
	fits "$count" "$r0" "$r1" "perf stat -b -A, CPU $last"
fi
bperf_unlock
wait

total=$(bperf_count prof cpu-clock) ||
	bpf_test_fail "no count: $(cat "$tmp/prof.out" "$tmp/prof.err")"
echo "perf stat -b: bperf_switch ran for $total msec of cpu-clock"
awk -v t="$total" 'BEGIN { exit !(t > 0) }' ||
	bpf_test_fail "the program's runs were not seen: $(cat "$tmp/prof.out")"
fits "$total" "$run0" "$run1" "perf stat -b"

# Bad program ids are refused, as upstream perf refuses them.
for bad in 0 no_such_prog 0123456789abcdef 4294967290 1x; do
	if perf stat -b "$bad" -e cpu-clock --timeout 100 >"$tmp/bad.out" 2>&1; then
		bpf_test_fail "perf stat -b $bad succeeded"
	fi
	grep -Eq "Failed to (parse bpf prog ids|open fd for bpf prog|find a bpf prog with)" \
		"$tmp/bad.out" ||
		bpf_test_fail "perf stat -b $bad: $(cat "$tmp/bad.out")"
done
exit 0
