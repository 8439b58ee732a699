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
# stat: every CPU with -a -A, and a workload pinned to CPU 1.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require taskset python3 bpftool
bperf_cpu1_hotplug 2

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
	local tmp w

	tmp=$(bperf_dir)
	echo "== CPU 1 $1"
	bperf_stat percpu -e cpu-clock -a -A -- sleep 1
	plain_stat percpu_ref -e cpu-clock -a -A -- sleep 1
	bperf_check "$1: CPU 1, cpu-clock -a -A, CPUs utilized" \
		"$(cpu1_util percpu_ref)" "$(cpu1_util percpu)" 10

	# a workload on CPU 1, set off once the session is set up
	rm -f "$tmp"/work*.cpu "$tmp/go"
	mkfifo "$tmp/go"
	bperf_stat work -e task-clock -- taskset -c 1 sh -c \
		'read -r _ <"$0"; exec bash "$@"' "$tmp/go" "$tmp/spin.sh" \
		"$tmp/work.cpu" "$hz" &
	w=$!
	bperf_wait_fd $w "bpf?link" ||
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

bperf_cpu1 0 || bperf_skip "cannot take CPU 1 offline"

# the long session, set up while CPU 1 is offline
bperf_lock
bperf_held long --bpf-counters --bpf-attr-map "$(bperf_attr_map)" \
	-a -e cpu-clock,task-clock
long=$!
bperf_wait_fd $long bpf-prog ||
	bperf_fail "the long session did not start: $(cat "$(bperf_dir)/long.err")"

bperf_cpu1 1 || bperf_fail "cannot bring CPU 1 online"
sessions "onlined after the slots were set up"

bperf_cpu1 0 || bperf_fail "cannot take CPU 1 offline again"
bperf_cpu1 1 || bperf_fail "cannot bring CPU 1 back online"
sessions "offline and back online"

bperf_unlock
wait $long || bperf_fail "the long session failed: $(cat "$(bperf_dir)/long.err")"
bperf_get long cpu-clock >/dev/null
bperf_none_pinned
exit 0
