#!/bin/bash
# perf stat --bpf-counters sessions share one leader
# SPDX-License-Identifier: GPL-2.0
#
# Two concurrent system-wide bperf sessions on the same event must find the
# leader the first one set up through the attr map, instead of loading a
# second one, and each must count what a plain perf stat counts over the
# same interval.  Once both are gone, nothing stays pinned.  The sessions
# start at different times (bperf takes longer to set up), so each
# workload stamps when it began and ended, and
# the counts are compared as rates over those intervals.

set -u

dur=4
tmpdir=$(mktemp -d /tmp/perf-test-bperf.XXXXXX)
attr_map=/sys/fs/bpf/perf_test_attr_map_$$
pids=

cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmpdir" "${attr_map}_dir"
	rm -f "$attr_map"
	trap - EXIT TERM INT
}
trap cleanup EXIT TERM INT

skip() {
	echo "Skip: $*"
	exit 2
}

fail() {
	echo "FAIL: $*"
	exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root"
perf version --build-options | grep -Eq 'bpf_skeletons: +\[ on' ||
	skip "perf built without BPF skeletons"
command -v bpftool >/dev/null || skip "bpftool not found"
mountpoint -q /sys/fs/bpf || skip "bpffs not mounted at /sys/fs/bpf"

# session NAME [perf stat options]: count cpu-clock system-wide until the
# stop file appears; the workload stamps its start and end (ns).
session() {
	local name=$1

	shift
	perf stat "$@" -e cpu-clock -a -x, -o "$tmpdir/$name.out" -- \
		sh -c "date +%s%N >$tmpdir/$name.start
		       while [ ! -e $tmpdir/stop ]; do sleep 0.05; done
		       date +%s%N >$tmpdir/$name.end" \
		2>"$tmpdir/$name.err" &
	pids="$pids $!"
}

session a --bpf-counters --bpf-attr-map "$attr_map"
session b --bpf-counters --bpf-attr-map "$attr_map"
session plain

started() {
	[ -s "$tmpdir/a.start" ] && [ -s "$tmpdir/b.start" ] && [ -s "$tmpdir/plain.start" ]
}
for _ in $(seq 300); do
	started && break
	sleep 0.1
done
started || fail "sessions did not start: $(cat "$tmpdir"/*.err)"

# Both sessions are counting now: the attr map holds one event, and one
# copy of the leader program, which serves every session and event, is
# loaded.
dump=$(bpftool map dump pinned "$attr_map") || fail "cannot read $attr_map"
echo "$dump" | grep -q '^Found 1 element' ||
	fail "attr map should hold one entry: $dump"
nr_leaders=$(bpftool prog show | grep -c ' name bperf_switch ')
[ "$nr_leaders" = 1 ] ||
	fail "$nr_leaders copies of the leader program loaded, want 1"
nr_sessions=$(bpftool -j map dump pinned "${attr_map}_dir/bperf_sessions" |
	      grep -o '"key":\[' | wc -l)
[ "$nr_sessions" = 2 ] || fail "$nr_sessions sessions registered, want 2"
echo "one leader program shared by both sessions"

# Let every session count for at least $dur seconds, then stop them all.
sleep "$dur"
touch "$tmpdir/stop"
wait
pids=

# rate NAME: msec of cpu-clock per second of the session's interval.
rate() {
	local count start end

	count=$(awk -F, '$3 ~ /^cpu-clock/ { print $1; exit }' "$tmpdir/$1.out")
	start=$(cat "$tmpdir/$1.start" 2>/dev/null)
	end=$(cat "$tmpdir/$1.end" 2>/dev/null)
	[ -n "$count" ] && [ -n "$start" ] && [ -n "$end" ] || return 1
	awk -v c="$count" -v s="$start" -v e="$end" \
		'BEGIN { if (e > s) printf "%.1f\n", c / ((e - s) / 1e9) }'
}

plain=$(rate plain) ||
	fail "plain perf stat counted nothing: $(cat "$tmpdir/plain.out" "$tmpdir/plain.err")"
for s in a b; do
	r=$(rate $s) ||
		fail "session $s counted nothing: $(cat "$tmpdir/$s.out" "$tmpdir/$s.err")"
	echo "session $s: $r msec/s of cpu-clock, plain perf stat: $plain msec/s"
	awk -v r="$r" -v p="$plain" 'BEGIN { exit !(r >= 0.9 * p && r <= 1.1 * p) }' ||
		fail "session $s is not within 10% of plain perf stat"
done
[ ! -e "$attr_map" ] && [ ! -e "${attr_map}_dir" ] ||
	fail "$attr_map still pinned after the last session"
exit 0
