#!/bin/bash
# perf stat --bpf-counters refuses or repairs damaged pinned maps (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# bperf's maps stay pinned between sessions (stat.bpf-attr-map-persistent),
# where anyone may damage them.  A control map of another layout version
# or CPU count is refused, naming it; a control map of all zeroes (what a
# session that died setting it up leaves) and a session table full of
# sessions that are dead are repaired, and the sessions that follow
# count what they should; a map of another layout in the directory is
# refused, naming it, whether the other maps are there or not.  No case
# may crash or hang perf, or leave a bperf program loaded, and what perf
# refused is left where it was.

set -u -o pipefail
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
[ -n "${EPOCHREALTIME-}" ] ||
	bpf_test_skip "bash $BASH_VERSION has no EPOCHREALTIME: the workload cannot time itself"
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
dir=${attr}_dir
hz=$(getconf CLK_TCK)
printf '[stat]\n\tbpf-attr-map-persistent = true\n' >"$tmp/perfconfig"

# kept OUT [perf stat options]: bperf_stat, the maps kept at the end,
# at most 120 s; fail if perf died of a signal or hung.
kept() {
	local rc

	PERF_CONFIG="$tmp/perfconfig" timeout -k 5 120 perf stat --bpf-counters \
		--bpf-attr-map "$attr" -x, -o "$tmp/$1.out" "${@:2}" 2>"$tmp/$1.err"
	rc=$?
	[ $rc != 124 ] && [ $rc != 137 ] || bpf_test_fail "$1: perf stat hung"
	[ $rc -le 128 ] || [ $rc -ge 160 ] ||
		bpf_test_fail "$1: perf stat died of signal $((rc - 128)): $(cat "$tmp/$1.err")"
	return $rc
}

# The workload: one process spinning for 1 s, which notes its CPU time.
bperf_spin_script "$tmp/spin.sh"

# refused WHAT PATTERN [perf stat options]: a session must fail, saying
# PATTERN.
refused() {
	! kept refused "${@:3}" || bpf_test_fail "$1: perf stat succeeded"
	grep -q -- "$2" "$tmp/refused.err" ||
		bpf_test_fail "$1: no '$2' in: $(cat "$tmp/refused.err")"
	echo "$1: $(grep -m1 -- "$2" "$tmp/refused.err")"
}

# no_programs WHEN: no bperf program is loaded.
no_programs() {
	local progs n

	progs=$(bpftool prog show) || bpf_test_fail "$1: bpftool prog show failed"
	n=$(grep -c ' name bperf_' <<<"$progs")
	[ "$n" = 0 ] || bpf_test_fail "$1: $n bperf programs still loaded"
}

# counts_right WHAT [LIVE]: a task session counts what its workload ran
# (bperf_check_ran), and a CPU-wide session counts as many CPUs utilized
# as there are, within 10%; the maps are kept, and no program is loaded
# after them unless a LIVE session holds them.
counts_right() {
	rm -f "$tmp/task.cpu"
	kept task -e task-clock -- bash "$tmp/spin.sh" "$tmp/task.cpu" "$hz" ||
		bpf_test_fail "$1: task session failed: $(cat "$tmp/task.err")"
	bperf_check_spin "$1, a workload" task task-clock
	kept cpu -e cpu-clock -a -- sleep 1 ||
		bpf_test_fail "$1: CPU-wide session failed: $(cat "$tmp/cpu.err")"
	bperf_check_util "$1, cpu-clock -a" "$(getconf _NPROCESSORS_ONLN)" cpu cpu-clock 10
	[ -n "${2-}" ] || no_programs "$1"
	[ -e "$dir/bperf_ctl" ] || bpf_test_fail "$1: the kept maps are gone"
}

# first_refused WHAT MAP PATTERN: beside MAP, a foreign map in the
# directory, a first session that keeps nothing makes the attr map, is
# refused, saying PATTERN, and removes what it made, not what it refused.
first_refused() {
	rm -f "$attr"
	! bperf_stat foreign -e task-clock -- true ||
		bpf_test_fail "$1: a first session succeeded"
	grep -q -- "$3" "$tmp/foreign.err" ||
		bpf_test_fail "$1: no '$3' in: $(cat "$tmp/foreign.err")"
	no_programs "$1"
	[ -e "$dir/$2" ] ||
		bpf_test_fail "$1: a first session that keeps nothing removed the foreign $2"
	[ ! -e "$attr" ] || bpf_test_fail "$1: the refused first session left its attr map"
	echo "$1: refused, the map left alone"
}

# sids: the session ids in the session table, one a line; fails if
# bpftool cannot read it.
sids() {
	local dump

	dump=$(bpftool -j map dump pinned "$dir/bperf_sessions") || return
	# an empty table is no error
	{ grep -o '"key":\["0x[0-9a-f]*","0x[0-9a-f]*"' <<<"$dump" || true; } |
		sed 's/.*\["0x\([0-9a-f]*\)","0x\([0-9a-f]*\)"/\2\1/' |
		while read -r x; do echo $((16#$x)); done
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
		bpf_test_fail "cannot write $dir/bperf_ctl"
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
# what the totals map is, for a foreign one like it
totals=$(bpftool -j map show pinned "$dir/bperf_totals") ||
	bpf_test_fail "cannot read $dir/bperf_totals"
totals_type=$(grep -o '"type":"[a-z_]*"' <<<"$totals" | cut -d'"' -f4)
totals_key=$(grep -o '"bytes_key":[0-9]*' <<<"$totals" | cut -d: -f2)
totals_value=$(grep -o '"bytes_value":[0-9]*' <<<"$totals" | cut -d: -f2)
totals_entries=$(grep -o '"max_entries":[0-9]*' <<<"$totals" | cut -d: -f2)
[ -n "$totals_type" ] && [ -n "$totals_value" ] && [ -n "$totals_entries" ] ||
	bpf_test_fail "cannot read $dir/bperf_totals: $totals"
[ -n "$ctl" ] || bpf_test_fail "cannot read $dir/bperf_ctl"

# Another layout version in the control map: refused, left alone.
# shellcheck disable=SC2086
set -- $ctl
shift 4
ctl_write 0xef 0xbe 0xad 0xde "$@"
refused "control map of another version" "bperf_ctl has layout 0xdeadbeef" \
	-e task-clock -- true
[ "$(ctl_bytes | cut -d' ' -f1-4)" = "0xef 0xbe 0xad 0xde" ] ||
	bpf_test_fail "the damaged control map was changed"
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

# A session table full: one session alive, holding the programs, and
# every other id taken by a dead session (the pid of a process reaped,
# a pid inode number no process has).  perf must tell the dead from the
# live one to make room, and leave only the live one.
mkfifo "$tmp/live.fifo" || bpf_test_fail "cannot make a fifo"
# bounded by the whole test's run, not kept's 120 s: filling the table
# and the sessions that follow take minutes in a TCG VM, and over 20 on
# the debug kernel of make check-debug (KASAN, lockdep), where a bound
# of 1200 s ended the live session before the check
PERF_CONFIG="$tmp/perfconfig" timeout -k 5 3600 perf stat --bpf-counters \
	--bpf-attr-map "$attr" -x, -o "$tmp/live.out" -e task-clock -- \
	timeout 3600 sh -c "read -r _ <'$tmp/live.fifo'" 2>"$tmp/live.err" &
live=$!
bpf_test_track $live
one_session() {
	local ids

	ids=$(sids) && [ -n "$ids" ] && [ "$(wc -l <<<"$ids")" = 1 ]
}
bperf_until 60 one_session ||
	bpf_test_fail "the live session did not register: $(cat "$tmp/live.err")"
live_sid=$(sids) || bpf_test_fail "cannot read $dir/bperf_sessions"
sh -c 'exit 0' &
dead=$!
wait $dead
max=$(bpftool -j map show pinned "$dir/bperf_sessions" |
	grep -o '"max_entries":[0-9]*' | cut -d: -f2)
[ -n "$max" ] || bpf_test_fail "cannot read $dir/bperf_sessions"
value="$(le 12345 8)$(le 0 8)$(le 0 8)$(le "$dead" 4)$(le 0 4)"
for sid in $(seq "$max"); do
	[ "$sid" = "$live_sid" ] ||
		echo "map update pinned $dir/bperf_sessions key $(le "$sid" 4) value $value"
done >"$tmp/batch"
bpftool batch file "$tmp/batch" >/dev/null || bpf_test_fail "cannot fill $dir/bperf_sessions"
n=$(sids | wc -l) || bpf_test_fail "cannot read $dir/bperf_sessions"
[ "$n" = "$max" ] || bpf_test_fail "$n sessions in the table, want $max"
counts_right "$((max - 1)) dead sessions and a live one" live
left=$(sids | tr '\n' ' ') || bpf_test_fail "cannot read $dir/bperf_sessions"
[ "$left" = "$live_sid " ] ||
	bpf_test_fail "sessions left in the table: ${left:-none}, want the live one, $live_sid"
echo "$((max - 1)) dead sessions reaped, the live one, $live_sid, left"
timeout 10 sh -c "echo >'$tmp/live.fifo'" || bpf_test_fail "cannot end the live session"
wait $live || bpf_test_fail "the live session failed: $(cat "$tmp/live.err")"
n=$(sids | wc -l) || bpf_test_fail "cannot read $dir/bperf_sessions"
[ "$n" = 0 ] || bpf_test_fail "$n sessions left in the table, want 0"
no_programs "after the live session"

# A map of another layout in the directory: refused, naming it, with
# the other maps there and alone in the directory.
mv_tasks() {
	rm -f "$dir/bperf_tasks"
	bpftool map create "$dir/bperf_tasks" type array key 4 value 8 entries 16 \
		name bperf_tasks || bpf_test_fail "cannot create a map with bpftool"
}
mv_tasks
refused "tasks map of another layout" "bperf_tasks is not a map of this perf" \
	-e task-clock -- true
no_programs "tasks map of another layout"
[ -e "$dir/bperf_tasks" ] || bpf_test_fail "the foreign tasks map was removed"
find "$dir" -mindepth 1 ! -name bperf_tasks -delete
refused "alone, a tasks map of another layout" "bperf_tasks is not a map of this perf" \
	-e task-clock -- true
no_programs "alone, a tasks map of another layout"
[ -e "$dir/bperf_tasks" ] || bpf_test_fail "the foreign tasks map was removed"
# The same for a first session that keeps nothing.
first_refused "first session, a tasks map of another layout" bperf_tasks \
	"bperf_tasks is not a map of this perf"

# A foreign map of the right name and sizes, but of another number of
# entries: refused, and a first session that keeps nothing leaves it.
rm -rf "$dir" "$attr"
mkdir "$dir" || bpf_test_fail "cannot make $dir"
bpftool map create "$dir/bperf_totals" type "$totals_type" key "$totals_key" \
	value "$totals_value" entries $((totals_entries + 1)) name bperf_totals ||
	bpf_test_fail "cannot create a map with bpftool"
first_refused "first session, a totals map of other entries" bperf_totals \
	"bperf_totals is not a map of this perf.*entries"
rm -rf "$dir" "$attr"

# Last, a session that keeps nothing leaves nothing.
bperf_stat last -e cpu-clock -a true || bpf_test_fail "$(cat "$tmp/last.err")"
bperf_none_pinned
no_programs "the end"
exit 0
