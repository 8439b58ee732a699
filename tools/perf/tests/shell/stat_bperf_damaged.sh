#!/bin/bash
# perf stat --bpf-counters refuses or repairs damaged pinned maps (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# bperf's maps stay pinned between sessions (stat.bpf-attr-map-persistent),
# where anyone may damage them.  A control map of another layout version
# or CPU count is refused, naming it; a control map of all zeroes (what a
# session that died setting it up leaves) and a session table full of
# sessions that are dead are repaired, and the sessions that follow
# count what plain perf stat counts; a map of another layout in the
# directory is refused, naming it, whether the other maps are there or
# not.  No case may crash or hang perf, or leave a bperf program loaded,
# and what perf refused is left where it was.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
tmp=$(bperf_dir)
attr=$(bperf_attr_map)
dir=${attr}_dir
printf '[stat]\n\tbpf-attr-map-persistent = true\n' >"$tmp/perfconfig"

# kept OUT [perf stat options]: bperf_stat, the maps kept at the end,
# at most 120 s; fail if perf died of a signal or hung.
kept() {
	local rc

	PERF_CONFIG="$tmp/perfconfig" timeout -k 5 120 perf stat --bpf-counters \
		--bpf-attr-map "$attr" -x, -o "$tmp/$1.out" "${@:2}" 2>"$tmp/$1.err"
	rc=$?
	[ $rc != 124 ] && [ $rc != 137 ] || bperf_fail "$1: perf stat hung"
	[ $rc -le 128 ] || [ $rc -ge 160 ] ||
		bperf_fail "$1: perf stat died of signal $((rc - 128)): $(cat "$tmp/$1.err")"
	return $rc
}

# refused WHAT PATTERN [perf stat options]: a session must fail, saying
# PATTERN.
refused() {
	! kept refused "${@:3}" || bperf_fail "$1: perf stat succeeded"
	grep -q -- "$2" "$tmp/refused.err" ||
		bperf_fail "$1: no '$2' in: $(cat "$tmp/refused.err")"
	echo "$1: $(grep -m1 -- "$2" "$tmp/refused.err")"
}

# no_programs WHEN: no bperf program is loaded.
no_programs() {
	local n

	n=$(bpftool prog show | grep -c ' name bperf_')
	[ "$n" = 0 ] || bperf_fail "$1: $n bperf programs still loaded"
}

# counts_right WHAT: a task session counting a workload that spins for
# a second and a CPU-wide session count what plain perf stat counts, as
# CPUs utilized, within 15%; the maps are kept.
counts_right() {
	kept task -e task-clock -- perf test -w noploop 1 ||
		bperf_fail "$1: task session failed: $(cat "$tmp/task.err")"
	plain_stat task_ref -e task-clock -- perf test -w noploop 1
	bperf_check_util "$1, task-clock of a workload" task_ref task task-clock 15
	kept cpu -e cpu-clock -a -- sleep 1 ||
		bperf_fail "$1: CPU-wide session failed: $(cat "$tmp/cpu.err")"
	bperf_check_util "$1, cpu-clock -a" "$(getconf _NPROCESSORS_ONLN)" cpu cpu-clock 10
	no_programs "$1"
	[ -e "$dir/bperf_ctl" ] || bperf_fail "$1: the kept maps are gone"
}

# ctl_bytes: the control map's value, as bpftool's bytes (0x..).
ctl_bytes() {
	bpftool -j map lookup pinned "$dir/bperf_ctl" key 0 0 0 0 |
		grep -o '"value":\[[^]]*\]' | sed 's/"value":\[//; s/\]//; s/[",]/ /g' |
		tr -s ' ' | sed 's/^ //; s/ $//'
}

# ctl_write BYTES...: write the control map's value.
ctl_write() {
	# shellcheck disable=SC2068 # one byte a word
	bpftool map update pinned "$dir/bperf_ctl" key 0 0 0 0 value $@ ||
		bperf_fail "cannot write $dir/bperf_ctl"
}

# le N BYTES: N as BYTES little-endian bytes.
le() {
	local _ n=$1

	for _ in $(seq "$2"); do
		printf '%d ' $((n & 255))
		n=$((n >> 8))
	done
}

counts_right "first session"
ctl=$(ctl_bytes)
[ -n "$ctl" ] || bperf_fail "cannot read $dir/bperf_ctl"

# Another layout version in the control map: refused, left alone.
# shellcheck disable=SC2086
set -- $ctl
shift 4
ctl_write 0xef 0xbe 0xad 0xde "$@"
refused "control map of another version" "bperf_ctl has layout 0xdeadbeef" \
	-e task-clock -- true
[ "$(ctl_bytes | cut -d' ' -f1-4)" = "0xef 0xbe 0xad 0xde" ] ||
	bperf_fail "the damaged control map was changed"
no_programs "control map of another version"

# Another number of CPU ids.
# shellcheck disable=SC2086
set -- $ctl
magic="$1 $2 $3 $4"
shift 8
# shellcheck disable=SC2086
ctl_write $magic 0xe7 0x03 0 0 "$@"
refused "control map for other CPUs" "for 999 CPU ids" -e task-clock -- true
no_programs "control map for other CPUs"

# All zeroes: set up again, and the counts must be right.
# shellcheck disable=SC2046 # one byte a word
ctl_write $(printf '0 %.0s' $(seq "$(echo "$ctl" | wc -w)"))
counts_right "zeroed control map"

# A session table full of dead sessions of our pid namespace: perf
# reaps them to make room, and the table is empty once it is done.
sh -c 'exit 0' &
dead=$!
wait $dead
# 0 without pid namespaces (no /proc/self/ns/pid), as perf takes it
pidns=$(stat -L -c %i /proc/self/ns/pid 2>/dev/null || echo 0)
max=$(bpftool -j map show pinned "$dir/bperf_sessions" |
	grep -o '"max_entries":[0-9]*' | cut -d: -f2)
[ -n "$max" ] || bperf_fail "cannot read $dir/bperf_sessions"
value="$(le 12345 8)$(le "$pidns" 8)$(le 0 8)$(le "$dead" 4)$(le 0 4)"
for sid in $(seq "$max"); do
	echo "map update pinned $dir/bperf_sessions key $(le "$sid" 4) value $value"
done >"$tmp/batch"
bpftool batch file "$tmp/batch" >/dev/null || bperf_fail "cannot fill $dir/bperf_sessions"
n=$(bperf_entries "$dir/bperf_sessions")
[ "$n" = "$max" ] || bperf_fail "$n dead sessions written, want $max"
counts_right "$max dead sessions"
n=$(bperf_entries "$dir/bperf_sessions")
[ "$n" = 0 ] || bperf_fail "$n sessions left in the table, want 0"
echo "$max dead sessions reaped"

# A map of another layout in the directory: refused, naming it, with
# the other maps there and alone in the directory.
mv_tasks() {
	rm -f "$dir/bperf_tasks"
	bpftool map create "$dir/bperf_tasks" type array key 4 value 8 entries 16 \
		name bperf_tasks || bperf_fail "cannot create a map with bpftool"
}
mv_tasks
refused "tasks map of another layout" "bperf_tasks is not a map of this perf" \
	-e task-clock -- true
no_programs "tasks map of another layout"
[ -e "$dir/bperf_tasks" ] || bperf_fail "the foreign tasks map was removed"
find "$dir" -mindepth 1 ! -name bperf_tasks -delete
refused "alone, a tasks map of another layout" "bperf_tasks is not a map of this perf" \
	-e task-clock -- true
no_programs "alone, a tasks map of another layout"
[ -e "$dir/bperf_tasks" ] || bperf_fail "the foreign tasks map was removed"
# The same for a first session that keeps nothing: it makes the attr
# map, is refused, and removes what it made, not what it refused.
rm -f "$attr"
! bperf_stat foreign -e task-clock -- true ||
	bperf_fail "a first session beside a foreign tasks map succeeded"
grep -q "bperf_tasks is not a map of this perf" "$tmp/foreign.err" ||
	bperf_fail "first session: no clear error: $(cat "$tmp/foreign.err")"
no_programs "first session, a tasks map of another layout"
[ -e "$dir/bperf_tasks" ] ||
	bperf_fail "a first session that keeps nothing removed the foreign tasks map"
[ ! -e "$attr" ] || bperf_fail "the refused first session left its attr map"
echo "first session, a tasks map of another layout: refused, the map left alone"
rm -rf "$dir" "$attr"

# Last, a session that keeps nothing leaves nothing.
bperf_stat last -e cpu-clock -a true || bperf_fail "$(cat "$tmp/last.err")"
bperf_none_pinned
no_programs "the end"
exit 0
