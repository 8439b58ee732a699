#!/bin/bash
# perf stat -b counts on a CPU above an offline one (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# perf stat -b reads its event inside the profiled program, from the
# event array element of the CPU the program runs on.  With CPU 1
# offline, profile the sched_switch program of perf record --off-cpu
# while a load pinned to the last online CPU switches all the time:
# cpu-clock must be counted on that CPU, and on all CPUs together for no
# longer than the kernel says the program ran (kernel.bpf_stats_enabled).  Keyed by the
# CPU's position among the online CPUs instead of by its id, the event
# of the last CPU sits one element too low and nothing is counted there.

set -u

skip() {
	echo "skip: $*"
	exit 2
}

command -v bpftool >/dev/null || skip "no bpftool"
command -v taskset >/dev/null || skip "no taskset"
[ "$(id -u)" = 0 ] || skip "perf stat -b needs root"
cpu1=/sys/devices/system/cpu/cpu1/online
[ -w $cpu1 ] && [ "$(cat $cpu1)" = 1 ] ||
	skip "CPU 1 is offline or cannot go offline"
online=$(cat /sys/devices/system/cpu/online)
[ "${online##*[,-]}" -ge 2 ] ||
	skip "no CPU online above CPU 1 (online $online)"

tmp=$(mktemp -d /tmp/perf-test-bpf-prog-cpus.XXXXXX)
rec=
load=
down=
stats=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)
cleanup() {
	[ -n "$load" ] && kill "$load" 2>/dev/null
	if [ -n "$rec" ]; then
		kill -INT "$rec" 2>/dev/null
		# bounded: CPU 1 waits for it to come back online
		for _ in $(seq 100); do
			kill -0 "$rec" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$rec" 2>/dev/null
	fi
	wait
	[ -n "$down" ] && echo 1 >$cpu1
	[ -n "$stats" ] && echo "$stats" >/proc/sys/kernel/bpf_stats_enabled
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' TERM INT

fail() {
	echo "FAIL: $*"
	exit 1
}

echo 1 >/proc/sys/kernel/bpf_stats_enabled || skip "no kernel.bpf_stats_enabled"

# CPU 1 goes offline first: perf record does not follow CPUs that go
# away under it
down=1
echo 0 >$cpu1 || fail "cannot take CPU 1 offline"
online=$(cat /sys/devices/system/cpu/online)
last=${online##*[,-]}

# a program that runs on every context switch, on every CPU
perf record --off-cpu -a -o "$tmp/perf.data" -- sleep 120 \
	>"$tmp/rec.log" 2>&1 &
rec=$!
id=
for _ in $(seq 300); do
	id=$(bpftool prog show |
		awk -F'[: ]+' '/ name on_switch / { id = $1 } END { print id }')
	[ -n "$id" ] && break
	kill -0 "$rec" 2>/dev/null ||
		skip "perf record --off-cpu did not start: $(cat "$tmp/rec.log")"
	sleep 0.1
done
[ -n "$id" ] || fail "perf record --off-cpu loaded no on_switch program"

# run_time_ns of program $id
run_time() {
	bpftool prog show id "$id" |
		awk '{ for (i = 1; i < NF; i++) if ($i == "run_time_ns") t = $(i + 1) }
		     END { printf "%.0f\n", t }'
}

# threads: killing the benchmark ends all of it
taskset -c "$last" perf bench sched pipe -T -l 100000000 >/dev/null 2>&1 &
load=$!
r0=$(run_time)
perf stat -b "$id" -e cpu-clock -A -x, -o "$tmp/stat.out" \
	--timeout 2000 2>"$tmp/stat.err" ||
	fail "perf stat -b -A failed: $(cat "$tmp/stat.err")"
r1=$(run_time)
kill "$load"
wait "$load" 2>/dev/null
load=

count=$(awk -F, -v c="CPU$last" '$1 == c && $2 ~ /^[0-9.]+$/ { print $2; exit }' \
	"$tmp/stat.out")
total=$(awk -F, '$1 ~ /^CPU/ && $2 ~ /^[0-9.]+$/ { t += $2 } END { print t + 0 }' \
	"$tmp/stat.out")
echo "program $id, CPU 1 offline (online $online): ${count:-no} msec of" \
	"cpu-clock on CPU $last, $total on all, $(((r1 - r0) / 1000000)) msec of runs"
awk -v c="${count:-0}" 'BEGIN { exit !(c > 0) }' ||
	fail "no runs counted on CPU $last: $(cat "$tmp/stat.out")"
awk -v c="$total" -v r0="$r0" -v r1="$r1" \
	'BEGIN { exit !(c * 1e6 <= (r1 - r0) * 1.05 + 1e6) }' ||
	fail "more cpu-clock than the program ran"
exit 0
