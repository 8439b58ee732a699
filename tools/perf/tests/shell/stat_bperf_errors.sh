#!/bin/bash
# perf stat --bpf-counters refuses what it cannot use, and cleans up (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# A map of another layout at the attr map path, or in the directory
# beside it, a path outside bpffs, a system without bpffs, too many
# events, a user without privileges and a session that may not share the
# programs must give a clear error and a non-zero exit, and leave what is
# there alone.  The last session removes what it
# pinned, unless asked to keep it.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
command -v unshare >/dev/null || bpf_test_skip "unshare not found"
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)

# expect_error WHAT PATTERN perf-stat-args: must fail, saying PATTERN.
expect_error() {
	local what=$1 pattern=$2

	shift 2
	if "$@" >"$tmp/err.out" 2>&1; then
		bpf_test_fail "$what: perf stat succeeded"
	fi
	grep -q "$pattern" "$tmp/err.out" ||
		bpf_test_fail "$what: no '$pattern' in: $(cat "$tmp/err.out")"
	echo "$what: $(grep -m1 "$pattern" "$tmp/err.out")"
}

# An upstream perf attr map (16 entries of link and map ids).
bpftool map create "$attr" type hash key 136 value 8 entries 16 name perf_attr_map ||
	bpf_test_fail "cannot create a map with bpftool"
expect_error "upstream attr map" "is not a map of this perf" \
	perf stat --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a true
[ -e "$attr" ] || bpf_test_fail "the foreign attr map was removed"
rm -f "$attr"

# A right attr map, but a foreign control map beside it.
bpftool map create "$attr" type hash key 152 value 4 entries 64 name bperf_attr ||
	bpf_test_fail "cannot create a map with bpftool"
mkdir "${attr}_dir"
bpftool map create "${attr}_dir/bperf_ctl" type array key 4 value 8 entries 1 name bperf_ctl ||
	bpf_test_fail "cannot create a map with bpftool"
expect_error "foreign control map" "bperf_ctl is not a map of this perf" \
	perf stat --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a true
[ -e "${attr}_dir/bperf_ctl" ] || bpf_test_fail "the foreign control map was removed"
rm -rf "$attr" "${attr}_dir"

expect_error "attr map outside bpffs" "not on a BPF filesystem" \
	perf stat --bpf-counters --bpf-attr-map "$tmp/attr_map" -e cpu-clock -a true
expect_error "no bpffs mounted" "not on a BPF filesystem" \
	unshare -m sh -c 'umount /sys/fs/bpf && perf stat --bpf-counters -e cpu-clock -a true'

# Hard limits: 64 distinct events at once.  Software events with
# different modifiers are different events.
events=
for e in cpu-clock task-clock page-faults context-switches cpu-migrations \
	 minor-faults major-faults alignment-faults emulation-faults; do
	for m in "" u k h uk uh kh; do
		events="$events${events:+,}$e${m:+:$m}"
	done
done
events="$events,cpu-clock:D,task-clock:D"
expect_error "65 distinct events" "all 64 event slots are in use" \
	perf stat --bpf-counters --bpf-attr-map "$attr" -e "$events" -a true
bperf_none_pinned "after a failed session"

# Privileges: BPF counters need root.
if command -v setpriv >/dev/null; then
	expect_error "not root" "need root" \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		perf stat --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a true
fi

# Without CAP_SYS_ADMIN a session cannot take the programs another one
# loaded (ids to fds needs it): it must say so, not load its own.
if command -v setpriv >/dev/null; then
	bperf_lock
	bperf_held root --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
	bperf_wait_fd $! bpf-prog ||
		bpf_test_fail "bperf session did not start: $(cat "$tmp/root.err")"
	expect_error "no CAP_SYS_ADMIN" "sharing BPF counters needs CAP_SYS_ADMIN" \
		setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin \
		perf stat --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a true
	n=$(bpftool prog show | grep -c ' name bperf_switch ')
	[ "$n" = 1 ] || bpf_test_fail "$n bperf_switch programs loaded, want 1"
	bperf_unlock
	wait
	bperf_get root cpu-clock >/dev/null
fi

# Kept if asked; a later session uses what was kept.
printf '[stat]\n\tbpf-attr-map-persistent = true\n' >"$tmp/perfconfig"
for i in 1 2; do
	PERF_CONFIG="$tmp/perfconfig" bperf_stat keep -e cpu-clock -a -- sleep 0.5 ||
		bpf_test_fail "session $i with persistent maps failed: $(cat "$tmp/keep.err")"
	bperf_get keep cpu-clock >/dev/null
	[ -e "$attr" ] && [ -e "${attr}_dir/bperf_ctl" ] ||
		bpf_test_fail "persistent maps were removed"
	[ "$(bpftool prog show | grep -c ' name bperf_switch ')" = 0 ] ||
		bpf_test_fail "the programs stay loaded with no session"
done
echo "persistent maps kept, programs unloaded, maps reused"
bperf_stat last -e cpu-clock -a true || bpf_test_fail "$(cat "$tmp/last.err")"
bperf_none_pinned
exit 0
