#!/bin/bash
# perf stat --bpf-counters counts a CPU that came online after its events were opened (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# bperf's events outlive the session that opened them, and are opened
# on the CPUs online at the time: a CPU onlined later has none, and
# taking a CPU offline kills the events on it for good.  A long
# CPU-wide session holds the slots while CPU 1 first comes online
# after them, then goes offline and online again, twice: the second
# time, the session that opens CPU 1's events again is killed half way.
# After each, later sessions that share those slots must count CPU 1
# like plain perf stat: every CPU with -a -A, and a workload pinned to
# CPU 1.  Last, a session reading every 500 ms (-I) must count CPU 1
# again after it goes offline and online, with no other session
# starting meanwhile.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require taskset python3 bpftool
bperf_cpu1_hotplug 2

# cpu1_util OUT: the CPUs utilized perf stat -A printed for CPU 1's
# cpu-clock in $(bpf_test_dir)/OUT.out (CSV: CPU, count, unit, event, ...),
# 0 if it printed none ("<not supported>" when nothing counted there).
cpu1_util() {
	awk -F, '$1 == "CPU1" && $4 ~ /^cpu-clock/ {
			u = $(NF - 1)
		}
		END { print (u ~ /^[0-9.]+$/ ? u : 0) }' "$(bpf_test_dir)/$1.out"
}

# fifo_get FIFO, fifo_put FIFO: read a line from FIFO, write one to it;
# 60 s at most, so that nothing is left waiting when a test fails.
fifo_get() {
	timeout 60 sh -c 'read -r _ <"$0"' "$1"
}

fifo_put() {
	timeout 60 sh -c 'echo go >"$0"' "$1"
}

# sessions WHEN: count CPU 1 with sessions that share the long one's
# slots, and with plain perf stat.
sessions() {
	local tmp w state

	tmp=$(bpf_test_dir)
	echo "== CPU 1 $1"
	bperf_stat percpu -e cpu-clock -a -A -- sleep 1
	plain_stat percpu_ref -e cpu-clock -a -A -- sleep 1
	bperf_check "$1: CPU 1, cpu-clock -a -A, CPUs utilized" \
		"$(cpu1_util percpu_ref)" "$(cpu1_util percpu)" 10

	# a workload on CPU 1, which perf stat starts once it counts
	rm -f "$tmp"/work*.cpu "$tmp/ready" "$tmp/go"
	mkfifo "$tmp/ready" "$tmp/go"
	bperf_stat work -e task-clock -- taskset -c 1 bash "$tmp/gate.sh" \
		"$tmp/ready" "$tmp/go" bash "$tmp/spin.sh" "$tmp/work.cpu" "$hz" &
	w=$!
	fifo_get "$tmp/ready" ||
		bpf_test_fail "the session did not start: $(cat "$tmp/work.err")"
	# the long session's two slots, one of them shared
	state=$(bperf_slots_state)
	fifo_put "$tmp/go"
	wait $w
	[ "$state" = "2 3 1" ] ||
		bpf_test_fail "$1: slots, users, task users: $state, not 2 3 1"
	bperf_check_spin "$1: a workload on CPU 1" work task-clock
	plain_stat work_ref -e task-clock -- taskset -c 1 \
		bash "$tmp/spin.sh" "$tmp/work_ref.cpu" "$hz"
	bperf_check_spin "$1: a workload on CPU 1, plain perf stat" work_ref \
		task-clock
}

hz=$(getconf CLK_TCK)
bperf_spin_script "$(bpf_test_dir)/spin.sh"
# gate.sh READY GO CMD...: a workload that says on the fifo READY that
# it started, waits (60 s at most) for a line on the fifo GO, then runs
# CMD; with bash's builtins only, so that it forks nothing perf counts
cat >"$(bpf_test_dir)/gate.sh" <<'EOF'
exec 3<>"$1" 4<>"$2"
echo >&3
read -r -t 60 _ <&4 || exit 1
exec 3>&- 4<&-
shift 2
exec "$@"
EOF

bperf_cpu1 0 || bpf_test_skip "cannot take CPU 1 offline"

# the long session, set up while CPU 1 is offline
bperf_lock
bperf_held long --bpf-counters --bpf-attr-map "$(bperf_attr_map)" \
	-a -e cpu-clock,task-clock
long=$!
# its workload starts once it counts
bperf_until 60 test -s "$(bpf_test_dir)/long.start" ||
	bpf_test_fail "the long session did not start: $(cat "$(bpf_test_dir)/long.err")"

bperf_cpu1 1 || bpf_test_fail "cannot bring CPU 1 online"
sessions "onlined after the slots were set up"

bperf_cpu1 0 || bpf_test_fail "cannot take CPU 1 offline again"
bperf_cpu1 1 || bpf_test_fail "cannot bring CPU 1 back online"
sessions "offline and back online"

# A session killed as it opens CPU 1's events again, those of the first
# group out of the array with their notes pending, the others stale
# (PERF_BPERF_STOP=reopen: it stops itself there, see
# stat_bperf_kill_steps.sh): the next session must open them all.
bperf_cpu1 0 || bpf_test_fail "cannot take CPU 1 offline a third time"
bperf_cpu1 1 || bpf_test_fail "cannot bring CPU 1 back online a third time"
PERF_BPERF_STOP=reopen perf stat --bpf-counters --bpf-attr-map \
	"$(bperf_attr_map)" -x, -o "$(bpf_test_dir)/victim.out" -e cpu-clock -a \
	-- true 2>"$(bpf_test_dir)/victim.err" 9>&- &
victim=$!
bpf_test_track $victim
if ! bperf_until 60 bperf_stopped $victim; then
	bpf_test_gone $victim &&
		bpf_test_fail "the session ended before it opened the events again:" \
			"$(cat "$(bpf_test_dir)/victim.err")"
	kill -9 $victim 2>/dev/null
	bpf_test_fail "the session did not stop where it opens the events again"
fi
kill -9 $victim
wait $victim 2>/dev/null
[ $? = 137 ] || bpf_test_fail "the session stopped at the step was not killed"
sessions "offline and back online, then a session killed opening its events"

# iv_stats: how many intervals the -I session printed, and CPU 1's
# cpu-clock over CPU 0's in the last three (CSV: time, CPU, count, unit,
# event, ...).
iv_stats() {
	[ -f "$(bpf_test_dir)/iv.out" ] || {
		echo 0 0
		return
	}
	awk -F, '$5 ~ /^cpu-clock/ {
			if (!($1 in seen)) {
				seen[$1] = 1
				t[++n] = $1
			}
			c[$1, $2] = $3 ~ /^[0-9.]+$/ ? $3 : 0
		}
		END {
			for (i = n > 3 ? n - 2 : 1; i <= n; i++) {
				c0 += c[t[i], "CPU0"]
				c1 += c[t[i], "CPU1"]
			}
			r = c0 > 0 ? c1 / c0 : 0
			print n + 0, r
		}' "$(bpf_test_dir)/iv.out"
}

# iv_past N: the -I session printed more than N intervals.
iv_past() {
	local n _

	read -r n _ <<<"$(iv_stats)"
	[ "$n" -gt "$1" ]
}

echo "== CPU 1 offline and back online under a session reading it"
rm -f "$(bpf_test_dir)/stop"
mkfifo "$(bpf_test_dir)/stop"
bperf_stat iv -e cpu-clock -a -A -I 500 -- bash -c \
	'exec 3<>"$0"; read -r -t 120 _ <&3' "$(bpf_test_dir)/stop" &
iv=$!
bperf_until 60 iv_past 0 ||
	bpf_test_fail "the -I session did not start: $(cat "$(bpf_test_dir)"/iv.{out,err})"
bperf_cpu1 0 || bpf_test_fail "cannot take CPU 1 offline a fourth time"
bperf_cpu1 1 || bpf_test_fail "cannot bring CPU 1 back online a fourth time"
read -r n _ <<<"$(iv_stats)"
# the read that opens CPU 1's events again, then three whole intervals
bperf_until 60 iv_past $((n + 4)) ||
	bpf_test_fail "the -I session stopped printing: $(cat "$(bpf_test_dir)/iv.err")"
fifo_put "$(bpf_test_dir)/stop"
wait $iv
read -r n ratio <<<"$(iv_stats)"
bperf_check "-I session, last 3 of $n intervals: CPU 1's cpu-clock over CPU 0's" \
	1 "$ratio" 10

bperf_unlock
wait $long || bpf_test_fail "the long session failed: $(cat "$(bpf_test_dir)/long.err")"
bperf_get long cpu-clock >/dev/null
bperf_none_pinned
exit 0
