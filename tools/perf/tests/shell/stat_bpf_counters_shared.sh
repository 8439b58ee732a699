#!/bin/bash
# perf stat --bpf-counters sessions share one leader
# SPDX-License-Identifier: GPL-2.0
#
# Two concurrent system-wide bperf sessions on the same event must find the
# leader the first one set up through the attr map, instead of loading a
# second one, and each must count what a plain perf stat counts over the
# same interval.

set -u

dur=5
tmpdir=$(mktemp -d /tmp/perf-test-bperf.XXXXXX)
attr_map=/sys/fs/bpf/perf_test_attr_map_$$
pids=

cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmpdir"
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

# session NAME [perf stat options]: count cpu-clock system-wide for $dur s;
# the workload marks when counting has begun.
session() {
	local name=$1

	shift
	perf stat "$@" -e cpu-clock -a -x, -o "$tmpdir/$name.out" -- \
		sh -c "touch $tmpdir/$name.started; sleep $dur" \
		2>"$tmpdir/$name.err" &
	pids="$pids $!"
}

session a --bpf-counters --bpf-attr-map "$attr_map"
session b --bpf-counters --bpf-attr-map "$attr_map"
session plain

for i in $(seq 100); do
	[ -e "$tmpdir/a.started" ] && [ -e "$tmpdir/b.started" ] && break
	sleep 0.1
done
[ -e "$tmpdir/a.started" ] && [ -e "$tmpdir/b.started" ] ||
	fail "bperf sessions did not start: $(cat "$tmpdir"/*.err)"

# Both sessions are counting now: the attr map holds one entry, whose link
# is alive, and only one copy of the leader program is loaded.
dump=$(bpftool map dump pinned "$attr_map") || fail "cannot read $attr_map"
echo "$dump" | grep -q '^Found 1 element' ||
	fail "attr map should hold one entry: $dump"
# The value starts with the leader link id, a little-endian u32.
link_hex=$(echo "$dump" | awk '/^value:/ { getline; print $4 $3 $2 $1; exit }')
[ -n "$link_hex" ] || fail "no leader link id in the attr map"
link_id=$((16#$link_hex))
prog_id=$(bpftool link show id "$link_id" | awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "prog") print $(i + 1) }')
[ -n "$prog_id" ] || fail "leader link $link_id is gone while sessions run"
leader=$(bpftool prog show id "$prog_id" | awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "name") print $(i + 1) }')
[ -n "$leader" ] || fail "cannot name the leader program $prog_id"
nr_leaders=$(bpftool prog show | grep -c " name $leader ")
[ "$nr_leaders" = 1 ] ||
	fail "$nr_leaders copies of leader program $leader loaded, want 1"
echo "leader link $link_id, program $prog_id ($leader), shared by both sessions"

wait
pids=

count() {
	awk -F, '$3 ~ /^cpu-clock/ { printf "%.0f\n", $1; exit }' "$tmpdir/$1.out"
}

plain=$(count plain)
[ -n "$plain" ] && [ "$plain" -gt 0 ] ||
	fail "plain perf stat counted nothing: $(cat "$tmpdir/plain.out" "$tmpdir/plain.err")"
for s in a b; do
	n=$(count $s)
	[ -n "$n" ] || fail "session $s counted nothing: $(cat "$tmpdir/$s.out" "$tmpdir/$s.err")"
	# within 10% of the plain count
	if [ $((n * 10)) -lt $((plain * 9)) ] || [ $((n * 10)) -gt $((plain * 11)) ]; then
		fail "session $s counted $n msec, plain perf stat $plain msec"
	fi
	echo "session $s: $n msec, plain: $plain msec"
done
exit 0
