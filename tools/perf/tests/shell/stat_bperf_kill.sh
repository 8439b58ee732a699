#!/bin/bash
# perf stat --bpf-counters recovers from a session killed with -9 (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# A session killed with SIGKILL cannot clean up.  The others must go on
# counting correctly, and the next session to start must reclaim what
# the dead one held: its registration, its roots and the event slot only
# it used.  Once the last session leaves, nothing stays pinned.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)

bperf_lock
for s in a b; do
	bperf_held $s --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
done
bperf_held ref -e cpu-clock -a

# Each victim counts a busy process's task-clock or context switches on
# every CPU: an event of its own, and for task-clock roots in the tasks
# map.  An event named twice takes the slot and the roots once more: the
# reclaim must give back every reference.  The busy process outlives
# the victims (killed below): 120 s was too short on the debug kernel of
# make check-debug, where it ended while the first -p victim was being
# checked, leaving no task in the tasks map.
perf test -w noploop 1200 9>&- &
busy=$!
bpf_test_track $busy

# started EVENT: the held sessions are registered and the victim counts,
# every event of it loaded: it printed EVENT twice
started() {
	[ -s "$tmp/a.start" ] && [ -s "$tmp/b.start" ] && [ -s "$tmp/ref.start" ] &&
		[ "$(bperf_entries "${attr}_dir/bperf_sessions" 2>/dev/null)" = 3 ] &&
		[ "$(grep -c ",$1," "$tmp/victim.out" 2>/dev/null)" -ge 2 ]
}

for victim_args in "-e task-clock -p $busy" "-e task-clock,task-clock -p $busy" \
		   "-e context-switches,context-switches -a"; do
	event=${victim_args#-e }
	event=${event%%,*}
	event=${event%% *}
	rm -f "$tmp/victim.out"
	# shellcheck disable=SC2086 # $victim_args: options
	perf stat --bpf-counters --bpf-attr-map "$attr" -I 100 -x, -o "$tmp/victim.out" \
		$victim_args >/dev/null 2>&1 9>&- &
	victim=$!
	bpf_test_track $victim
	bperf_until 60 started "$event" || bpf_test_fail "$victim_args: sessions did not start"
	[ "$(bperf_entries "$attr")" = 2 ] ||
		bpf_test_fail "$victim_args: want 2 events in the attr map"
	case "$victim_args" in
	*-p*)
		[ "$(bperf_entries "${attr}_dir/bperf_tasks")" -ge 1 ] ||
			bpf_test_fail "$victim_args: the victim tracks no task"
		;;
	esac

	kill -9 $victim
	wait $victim 2>/dev/null
	echo "killed session $victim ($victim_args)"

	# A new session reclaims what the victim left.
	bperf_stat new -e cpu-clock -a true ||
		bpf_test_fail "a new session failed: $(cat "$tmp/new.err")"
	sessions=$(bperf_entries "${attr}_dir/bperf_sessions")
	events=$(bperf_entries "$attr")
	tasks=$(bperf_entries "${attr}_dir/bperf_tasks")
	echo "after the next session: $sessions sessions, $events events, $tasks tasks"
	[ "$sessions" = 2 ] || bpf_test_fail "$victim_args: the dead session is still registered"
	[ "$events" = 1 ] ||
		bpf_test_fail "$victim_args: the dead session's event slot is still there"
	[ "$tasks" = 0 ] || bpf_test_fail "$victim_args: the dead session's tasks are still tracked"
done

sleep 1
bperf_unlock
kill $busy 2>/dev/null
wait

bperf_check_rates ref cpu-clock a b

bperf_none_pinned
exit 0
