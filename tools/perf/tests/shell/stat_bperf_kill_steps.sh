#!/bin/bash
# perf stat --bpf-counters reclaims what a session killed at any step left (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# With PERF_BPERF_STOP=STEP, perf stops itself (SIGSTOP) at STEP, a
# step of a session's start or end, most of them places where it has
# changed bperf's pinned state without noting the change in its session
# record yet, or has forgotten it there first.  The test kills it there
# with SIGKILL, while three sessions count throughout: two count
# cpu-clock -a, one task-clock -p of a busy process.  The victims count
# events of their own, or the same ones as those sessions (then a wrong
# use count, not a slot left over, is what a kill would leave).  The
# next session must leave the pinned state as the three alone make it:
# three sessions registered, two events in two slots, used three times,
# once by a task session, the busy process's task tracked, with one
# root, registered once.  The three must count at the rate of a plain
# perf stat beside them.
#
# Then the last session is killed while it counts: nobody is left to
# close its events, which stay pinned, until the command perf-stat.txt
# gives releases everything: nothing is left pinned or loaded.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool python3
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)

bperf_objects >"$tmp/objects.before"
objects_back() {
	bperf_objects | cmp -s - "$tmp/objects.before"
}

# What the task sessions count, with -p: a process that outlives them.
perf test -w noploop 1200 9>&- &
busy=$!
bpf_test_track $busy

bperf_lock
for s in a b; do
	bperf_held $s --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
done
bperf_held ref -e cpu-clock -a
perf stat --bpf-counters --bpf-attr-map "$attr" -x, -o "$tmp/held_p.out" \
	-e task-clock -p $busy 2>"$tmp/held_p.err" 9>&- &
held_p=$!
perf stat -x, -o "$tmp/ref_p.out" -e task-clock -p $busy 2>"$tmp/ref_p.err" 9>&- &
ref_p=$!
bpf_test_track "$held_p $ref_p"
held_started() {
	[ -s "$tmp/a.start" ] && [ -s "$tmp/b.start" ] && [ -s "$tmp/ref.start" ] &&
		[ "$(bperf_entries "${attr}_dir/bperf_sessions" 2>/dev/null)" = 3 ] &&
		[ "$(bperf_entries "${attr}_dir/bperf_roots" 2>/dev/null)" = 1 ]
}
bperf_until 60 held_started ||
	bpf_test_fail "the held sessions did not start:" \
		"$(cat "$tmp"/a.err "$tmp"/b.err "$tmp"/held_p.err)"
bperf_wait_fd $ref_p perf_event ||
	bpf_test_fail "the plain -p session did not start: $(cat "$tmp/ref_p.err")"

# Each step, and the options of the session killed there.  "unref" and
# "leave" come once the session ends by itself (--timeout), as it gives
# back its slots and deregisters.  In a group, "ref" comes after the
# reference on its first slot.
steps=(
	"register:-e task-clock -p $busy"
	"reserve:-e context-switches -p $busy"
	"open:-e context-switches -a"
	"ref:-e {context-switches,task-clock} -a"
	"ref:-e cpu-clock -a"
	"root:-e task-clock -p $busy"
	"unref:-e task-clock -p $busy --timeout 500"
	"unref:-e cpu-clock -a --timeout 500"
	"leave:-e context-switches -a --timeout 500"
)
victim=
# fail MSG...: kill the victim, which may be stopped holding the lock
# the other sessions need to end, then fail the test.
fail() {
	[ -z "$victim" ] || kill -9 "$victim" 2>/dev/null
	bpf_test_fail "$@"
}
for s in "${steps[@]}"; do
	step=${s%%:*}
	args=${s#*:}
	# shellcheck disable=SC2086 # $args: options
	PERF_BPERF_STOP=$step perf stat --bpf-counters --bpf-attr-map "$attr" -x, \
		-o "$tmp/victim.out" $args 2>"$tmp/victim.err" 9>&- &
	victim=$!
	bpf_test_track $victim
	if ! bperf_until 60 bperf_stopped $victim; then
		bpf_test_gone $victim && fail "$step, $args: ended before the step:" \
			"$(cat "$tmp/victim.err")"
		fail "$step, $args: did not stop at the step"
	fi
	kill -9 $victim
	wait $victim 2>/dev/null
	[ $? = 137 ] || fail "$step, $args: was not killed"
	victim=

	bperf_stat new -e cpu-clock -a true ||
		fail "$step, $args: the next session failed: $(cat "$tmp/new.err")"
	sessions=$(bperf_entries "${attr}_dir/bperf_sessions")
	events=$(bperf_entries "$attr")
	tasks=$(bperf_entries "${attr}_dir/bperf_tasks")
	roots=$(bperf_entries "${attr}_dir/bperf_roots")
	task_roots=$(bperf_sum bperf_tasks roots)
	slots=$(bperf_slots_state)
	echo "killed at $step ($args): then $sessions sessions, $events events," \
		"slots (set up, users, task users) $slots, $tasks tasks," \
		"$roots roots registered, $task_roots held"
	[ "$sessions" = 3 ] || fail "$step, $args: want 3 sessions registered"
	[ "$events" = 2 ] || fail "$step, $args: want 2 events in the attr map"
	[ "$slots" = "2 3 1" ] ||
		fail "$step, $args: want 2 slots set up, used 3 times, once by a task session"
	[ "$tasks" = 1 ] || fail "$step, $args: want 1 task tracked"
	[ "$roots,$task_roots" = 1,1 ] ||
		fail "$step, $args: want 1 root registered, and held once"
done

bperf_unlock
kill -INT $held_p $ref_p
for p in $(jobs -p); do
	[ "$p" = $busy ] && continue
	bperf_until 60 bpf_test_gone "$p" || bpf_test_fail "session $p did not end"
done
bperf_check_rates ref cpu-clock a b
bperf_check_util "session held_p, task-clock" ref_p held_p task-clock 10
bperf_none_pinned "after the held sessions"

# The last session, killed: its event stays pinned until the release.
perf stat --bpf-counters --bpf-attr-map "$attr" -x, -I 100 -o "$tmp/last.out" \
	-e cpu-clock -a 2>"$tmp/last.err" 9>&- &
last=$!
bpf_test_track $last
counting() {
	grep -q ',cpu-clock,' "$tmp/last.out" 2>/dev/null
}
bperf_until 60 counting || bpf_test_fail "the last session did not count: $(cat "$tmp/last.err")"
kill -9 $last
wait $last 2>/dev/null
events=$(bperf_entries "$attr")
slots=$(bperf_slots_state)
echo "the last session killed: $events events, slots (set up, users, task users) $slots"
[ "$events,$slots" = "1,1 1 0" ] ||
	bpf_test_fail "want the killed last session's event and slot still pinned"
bperf_stat release -a -e cpu-clock true ||
	bpf_test_fail "the release command failed: $(cat "$tmp/release.err")"
bperf_none_pinned "after the release command"
kill $busy
wait
bperf_until 30 objects_back ||
	bpf_test_fail "left loaded after the release command:" \
		"$(bperf_objects | grep -vxFf "$tmp/objects.before")"
echo "nothing of bperf left"
exit 0
