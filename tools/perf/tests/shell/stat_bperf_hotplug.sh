#!/bin/bash
# perf stat --bpf-counters counts a CPU that came online after its events were opened (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# bperf's events outlive the session that opened them, and are opened
# on the CPUs online at the time: a CPU onlined later has none, and
# taking a CPU offline kills the events on it for good.  A long
# CPU-wide session holds the slots while CPU 1 first comes online
# after them, then goes offline and online again.  After each, later
# sessions that share those slots must count CPU 1 like plain perf
# stat: every CPU with -a -A, and a workload pinned to CPU 1.  Last, a
# session reading every 500 ms (-I) must count CPU 1 again after it
# goes offline and online, with no other session starting meanwhile.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require taskset python3 bpftool
cpu1=/sys/devices/system/cpu/cpu1/online
present=$(getconf _NPROCESSORS_CONF)
[ "$present" -ge 2 ] || bperf_skip "needs 2 CPUs or more, has $present"
[ -w $cpu1 ] || bperf_skip "CPU 1 cannot be taken offline"
[ "$(cat $cpu1)" = 1 ] || bperf_skip "CPU 1 is offline already"

restore() {
	echo 1 >$cpu1
	bperf_cleanup
}
trap restore EXIT TERM INT

# cpu1_util OUT: the CPUs utilized perf stat -A printed for CPU 1's
# cpu-clock in $(bperf_dir)/OUT.out (CSV: CPU, count, unit, event, ...),
# 0 if it printed none ("<not supported>" when nothing counted there).
cpu1_util() {
	awk -F, '$1 == "CPU1" && $4 ~ /^cpu-clock/ {
			u = $(NF - 1)
		}
		END { print (u ~ /^[0-9.]+$/ ? u : 0) }' "$(bperf_dir)/$1.out"
}

# sessions WHEN: count CPU 1 with sessions that share the long one's
# slots, and with plain perf stat.
sessions() {
	local tmp w state

	tmp=$(bperf_dir)
	echo "== CPU 1 $1"
	bperf_stat percpu -e cpu-clock -a -A -- sleep 1
	plain_stat percpu_ref -e cpu-clock -a -A -- sleep 1
	bperf_check "$1: CPU 1, cpu-clock -a -A, CPUs utilized" \
		"$(cpu1_util percpu_ref)" "$(cpu1_util percpu)" 10

	# a workload on CPU 1: it says when it starts, which perf stat lets
	# it do once it counts, then waits for the test to set it off
	rm -f "$tmp"/work*.cpu "$tmp/ready" "$tmp/go"
	mkfifo "$tmp/ready" "$tmp/go"
	bperf_stat work -e task-clock -- taskset -c 1 sh -c \
		'echo >"$1"; read -r _ <"$2"; shift 2; exec bash "$@"' sh \
		"$tmp/ready" "$tmp/go" "$tmp/spin.sh" "$tmp/work.cpu" "$hz" &
	w=$!
	timeout 60 sh -c 'read -r _ <"$0"' "$tmp/ready" ||
		bperf_fail "the session did not start: $(cat "$tmp/work.err")"
	# the long session's two slots, one of them shared
	state=$(bperf_slots_state)
	echo go >"$tmp/go"
	wait $w
	[ "$state" = "2 3 1" ] ||
		bperf_fail "$1: slots, users, task users: $state, not 2 3 1"
	bperf_check_spin "$1: a workload on CPU 1" work task-clock
	plain_stat work_ref -e task-clock -- taskset -c 1 \
		bash "$tmp/spin.sh" "$tmp/work_ref.cpu" "$hz"
	bperf_check_spin "$1: a workload on CPU 1, plain perf stat" work_ref \
		task-clock
}

hz=$(getconf CLK_TCK)
bperf_spin_script "$(bperf_dir)/spin.sh"

echo 0 >$cpu1 || bperf_skip "cannot take CPU 1 offline"

# the long session, set up while CPU 1 is offline
bperf_lock
bperf_held long --bpf-counters --bpf-attr-map "$(bperf_attr_map)" \
	-a -e cpu-clock,task-clock
long=$!
# its workload starts once it counts
bperf_until 60 test -s "$(bperf_dir)/long.start" ||
	bperf_fail "the long session did not start: $(cat "$(bperf_dir)/long.err")"

echo 1 >$cpu1 || bperf_fail "cannot bring CPU 1 online"
sessions "onlined after the slots were set up"

echo 0 >$cpu1 || bperf_fail "cannot take CPU 1 offline again"
echo 1 >$cpu1 || bperf_fail "cannot bring CPU 1 back online"
sessions "offline and back online"

# iv_stats: how many intervals the -I session printed, and CPU 1's
# cpu-clock over CPU 0's in the last one (CSV: time, CPU, count, unit,
# event, ...).
iv_stats() {
	[ -f "$(bperf_dir)/iv.out" ] || {
		echo 0 0
		return
	}
	awk -F, '$5 ~ /^cpu-clock/ {
			if (!($1 in seen)) {
				seen[$1] = 1
				n++
			}
			c[$1, $2] = $3 ~ /^[0-9.]+$/ ? $3 : 0
			last = $1
		}
		END {
			r = c[last, "CPU0"] > 0 ? c[last, "CPU1"] / c[last, "CPU0"] : 0
			print n + 0, r
		}' "$(bperf_dir)/iv.out"
}

# iv_past N: the -I session printed more than N intervals.
iv_past() {
	local n _

	read -r n _ <<<"$(iv_stats)"
	[ "$n" -gt "$1" ]
}

echo "== CPU 1 offline and back online under a session reading it"
rm -f "$(bperf_dir)/stop"
mkfifo "$(bperf_dir)/stop"
bperf_stat iv -e cpu-clock -a -A -I 500 -- sh -c 'read -r _ <"$0"' \
	"$(bperf_dir)/stop" &
iv=$!
bperf_until 60 iv_past 0 ||
	bperf_fail "the -I session did not start: $(cat "$(bperf_dir)/iv.err")"
bperf_cpu1 0 || bperf_fail "cannot take CPU 1 offline a third time"
bperf_cpu1 1 || bperf_fail "cannot bring CPU 1 back online a third time"
read -r n _ <<<"$(iv_stats)"
# the read that opens CPU 1's events again, then three whole intervals
bperf_until 60 iv_past $((n + 4)) ||
	bperf_fail "the -I session stopped printing: $(cat "$(bperf_dir)/iv.err")"
echo go >"$(bperf_dir)/stop"
wait $iv
read -r n ratio <<<"$(iv_stats)"
bperf_check "-I session, last of $n intervals: CPU 1's cpu-clock over CPU 0's" \
	1 "$ratio" 10

bperf_unlock
wait $long || bperf_fail "the long session failed: $(cat "$(bperf_dir)/long.err")"
bperf_get long cpu-clock >/dev/null
bperf_none_pinned
exit 0
