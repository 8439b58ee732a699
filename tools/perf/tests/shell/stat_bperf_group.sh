#!/bin/bash
# perf stat --bpf-counters counts event groups together
# SPDX-License-Identifier: GPL-2.0
#
# The events of a group are opened as a perf group and read in the same
# run of the BPF program: cpu-clock and task-clock of one group, counted
# on the same CPUs over the same time, must agree with each other almost
# exactly, and with what perf stat counts for the same group.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
tmp=$(bperf_dir)
attr=$(bperf_attr_map)

# Two runs of a workload differ more than two sleeps.
for target in "-a -- sleep 1:10" "-- perf test -w noploop 1:15"; do
	tolerance=${target##*:}
	target=${target%:*}
	# shellcheck disable=SC2086 # $target is several words on purpose
	bperf_stat grp -e '{cpu-clock,task-clock}' $target
	# shellcheck disable=SC2086
	plain_stat grp_ref -e '{cpu-clock,task-clock}' $target
	cpu=$(bperf_get grp cpu-clock)
	task=$(bperf_get grp task-clock)
	bperf_check "group members, $target" "$cpu" "$task" 1
	bperf_check "group vs perf stat, $target" \
		"$(bperf_get grp_ref cpu-clock)" "$cpu" "$tolerance"
done

# A group and a lone event of the same kind are different slots, and
# can be counted at the same time.
bperf_lock
bperf_stat lone -e cpu-clock -a -- flock -s "$tmp/lock" true 9>&- &
bperf_track $!
bperf_stat grp -e '{cpu-clock,task-clock}' -a -- flock -s "$tmp/lock" true 9>&- &
bperf_track $!
for _ in $(seq 600); do
	n=$(bperf_entries "$attr" 2>/dev/null)
	[ "$n" -ge 3 ] && break
	sleep 0.1
done
[ "$n" = 3 ] || bperf_fail "want 3 events in the attr map, found $n"
sleep 1
bperf_unlock
wait
bperf_check "lone cpu-clock vs grouped" "$(bperf_get lone cpu-clock)" \
	"$(bperf_get grp cpu-clock)" 10

# Every event of a group has to be a BPF counter.
if perf stat -e '{cpu-clock:b,task-clock}' -a true >"$tmp/mixed.out" 2>&1; then
	bperf_fail "a group mixing BPF and plain counters was accepted"
fi
grep -q "every event of a group must use BPF counters" "$tmp/mixed.out" ||
	bperf_fail "no clear error for a mixed group: $(cat "$tmp/mixed.out")"

bperf_none_pinned
exit 0
