#!/bin/bash
# perf stat --bpf-counters counts event groups together (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# The events of a group are opened as a perf group and read in the same
# run of the BPF program: cpu-clock and task-clock of one group, counted
# on the same CPUs over the same time, must agree with each other almost
# exactly.  A CPU-wide session is judged by its CPUs utilized (its count
# over its own elapsed time), which must be what perf stat reports for
# the same group, and a workload's session by what its workload says it
# ran: sessions that run one after the other, or start at different
# times, take different times to start up in a TCG VM, and a busy host
# gives a spinning task more of a CPU in one than in the other.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
[ -n "${EPOCHREALTIME-}" ] ||
	bpf_test_skip "bash $BASH_VERSION has no EPOCHREALTIME: the workload cannot time itself"
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
ncpus=$(getconf _NPROCESSORS_ONLN)
hz=$(getconf CLK_TCK)

# The workload: one process spinning for 1 s, which notes its CPU time.
bperf_spin_script "$tmp/spin.sh"

# group_check NAME OUT: the members of OUT's group agree within 1%.
group_check() {
	bperf_check "$1, group members" "$(bperf_get "$2" cpu-clock)" \
		"$(bperf_get "$2" task-clock)" 1
}

# -a: cpu-clock counts every CPU all the time, bperf and perf stat alike.
bperf_stat grp -e '{cpu-clock,task-clock}' -a -- sleep 2
plain_stat grp_ref -e '{cpu-clock,task-clock}' -a -- sleep 2
group_check "-a" grp
bperf_check_util "perf stat group -a" "$ncpus" grp_ref cpu-clock 10
bperf_check_util "bperf group -a" "$ncpus" grp cpu-clock 10

# The workload, counted by perf stat and by bperf: each counts what the
# workload ran, from its first line to its last at least, and at most
# all it ran since perf forked it, plus its exit.
for s in grp_ref grp; do
	rm -f "$tmp/$s.cpu"
	if [ $s = grp ]; then
		bperf_stat $s -e '{cpu-clock,task-clock}' -- bash "$tmp/spin.sh" "$tmp/$s.cpu" "$hz"
	else
		plain_stat $s -e '{cpu-clock,task-clock}' -- bash "$tmp/spin.sh" "$tmp/$s.cpu" "$hz"
	fi
	bperf_check_spin "$s, workload" $s cpu-clock
done
group_check "workload" grp

# A group and a lone event of the same kind are different slots, and
# can be counted at the same time: both count until the lock is let go,
# at least 2 s after both started.
bperf_lock
bperf_held lone --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
bperf_held grp --bpf-counters --bpf-attr-map "$attr" -e '{cpu-clock,task-clock}' -a
for _ in $(seq 600); do
	[ -s "$tmp/lone.start" ] && [ -s "$tmp/grp.start" ] && break
	sleep 0.1
done
[ -s "$tmp/lone.start" ] && [ -s "$tmp/grp.start" ] ||
	bpf_test_fail "sessions did not start: $(cat "$tmp/lone.err" "$tmp/grp.err")"
n=$(bperf_entries "$attr")
[ "$n" = 3 ] || bpf_test_fail "want 3 events in the attr map, found $n"
sleep 2
bperf_unlock
wait
group_check "grouped next to a lone event" grp
bperf_check_util "lone cpu-clock" "$ncpus" lone cpu-clock 10
bperf_check_util "grouped cpu-clock" "$ncpus" grp cpu-clock 10

# Every event of a group has to be a BPF counter.
if perf stat -e '{cpu-clock:b,task-clock}' -a true >"$tmp/mixed.out" 2>&1; then
	bpf_test_fail "a group mixing BPF and plain counters was accepted"
fi
grep -q "every event of a group must use BPF counters" "$tmp/mixed.out" ||
	bpf_test_fail "no clear error for a mixed group: $(cat "$tmp/mixed.out")"

bperf_none_pinned
exit 0
