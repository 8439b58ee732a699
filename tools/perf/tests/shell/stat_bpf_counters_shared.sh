#!/bin/bash
# perf stat --bpf-counters sessions share one set of BPF programs (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# Two concurrent system-wide bperf sessions on the same event must find
# the programs the first one set up through the attr map, instead of
# loading a second set, and each must count what a plain perf stat counts.
# Once both are gone, nothing stays pinned.  The second session starts
# while the first has been counting for $dur seconds, so that one that
# took the first one's counts as its own start would show about twice the
# CPUs utilized; the counts are compared as CPUs utilized, each over its
# session's own elapsed time.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
dur=4

# started OUT...: wait (up to 30 s) until the bperf_held sessions OUT have
# started counting.
started() {
	local s ok

	for _ in $(seq 300); do
		ok=1
		for s in "$@"; do
			[ -s "$tmp/$s.start" ] || ok=0
		done
		[ $ok = 1 ] && return 0
		sleep 0.1
	done
	bpf_test_fail "sessions did not start: $(cat "$tmp"/*.err)"
}

bperf_lock
bperf_held a --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
bperf_held plain -e cpu-clock -a
started a plain
sleep "$dur"
bperf_held b --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
started b

# Both sessions are counting now: the attr map holds one event, and one
# copy of bperf_read, which reads every event for every CPU-wide session,
# is loaded.
nr_events=$(bperf_entries "$attr") || bpf_test_fail "cannot read $attr"
[ "$nr_events" = 1 ] || bpf_test_fail "attr map should hold one entry, has $nr_events"
nr_readers=$(bpftool prog show | grep -c ' name bperf_read ')
[ "$nr_readers" = 1 ] ||
	bpf_test_fail "$nr_readers copies of bperf_read loaded, want 1"
nr_sessions=$(bperf_entries "${attr}_dir/bperf_sessions")
[ "$nr_sessions" = 2 ] || bpf_test_fail "$nr_sessions sessions registered, want 2"
echo "one set of programs shared by both sessions"

# Let every session count for at least $dur seconds, then stop them all.
sleep "$dur"
bperf_unlock
wait

bperf_check_rates plain cpu-clock a b
bperf_none_pinned
exit 0
