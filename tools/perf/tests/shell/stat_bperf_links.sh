#!/bin/bash
# perf stat --bpf-counters: nothing runs on context switches for CPU-wide sessions (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# A CPU-wide session (-a, -C) reads its slots when it reads: it holds
# the bperf programs but no link, and bperf_switch does not run however
# many context switches there are (bperf_cpuhp, which runs on CPU
# hotplug only, has one link, pinned with the maps).  A task session (-p) holds the three
# links (sched_switch, task_newtask, sched_process_exit) and counts the
# busy loop it watches, a second one shares them, they go with the last
# task session when it is killed, the next one attaches anew, and they go
# with it when it exits.  Meanwhile the CPU-wide counts stay right: cpu-clock
# against plain perf stat, and context-switches between the switches
# the kernel made during the loads (/proc/stat ctxt) and what plain
# perf stat, started before, counted.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
bpf_test_stats_on
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
loops=20000

# fds_of PID KIND FIELD: FIELD (prog_id, link_id) of PID's fds of KIND
# (bpf-prog, or bpf?link: a link fd made at attach is a "bpf_link", one
# got by id a "bpf-link"), from their fdinfo
fds_of() {
	local fd

	for fd in "/proc/$1/fd/"*; do
		# shellcheck disable=SC2053 # $2 is a pattern
		[[ "$(readlink "$fd" 2>/dev/null)" == anon_inode:$2 ]] || continue
		awk -v f="$3:" '$1 == f { print $2 }' \
			"/proc/$1/fdinfo/${fd##*/}" 2>/dev/null
	done | sort -n
}

# nr_held PID KIND: how many fds of KIND PID holds
nr_held() {
	fds_of "$1" "$2" prog_id | wc -l
}

# wait_held PID KIND N: wait (up to 60 s) until PID holds N fds of KIND
wait_held() {
	for _ in $(seq 600); do
		[ "$(nr_held "$1" "$2")" = "$3" ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# wait_started OUT PID: wait (up to 60 s) for the bperf_held session
# PID to have started its workload, so to have enabled its counters
wait_started() {
	for _ in $(seq 600); do
		[ -s "$tmp/$1.start" ] && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	bpf_test_fail "session $1 did not start: $(cat "$tmp/$1.err")"
}

# links_of PROG_ID...: the links in the system that run one of them
links_of() {
	bpftool link show | awk -v ids=" $* " '
		/^[0-9]+: / {
			for (i = 2; i < NF; i++)
				if ($i == "prog" && index(ids, " " $(i + 1) " "))
					print $1 + 0
		}' | sort -n
}

# expect_links N WHY: wait (up to 60 s) for N links of our programs
expect_links() {
	local n

	for _ in $(seq 600); do
		# shellcheck disable=SC2086 # a list of ids
		n=$(links_of $progs | wc -l)
		[ "$n" = "$1" ] && return 0
		sleep 0.1
	done
	bpftool link show
	bpf_test_fail "$2: $n links of the bperf programs, want $1"
}

# run_cnt ID: how many times the program ran since stats were enabled
run_cnt() {
	bpftool prog show id "$1" | awk '
		NR == 1 { for (i = 1; i < NF; i++) if ($i == "run_cnt") c = $(i + 1) }
		END { print c + 0 }'
}

ctxt() {
	awk '$1 == "ctxt" { print $2 }' /proc/stat
}

# load: the pipe benchmark, timed out rather than waited on forever;
# adds the context switches it made to $switched
switched=0
load() {
	local c0

	c0=$(ctxt)
	timeout 120 perf bench sched pipe -T -l $loops >/dev/null 2>&1 9>&- ||
		bpf_test_fail "perf bench sched pipe failed"
	switched=$((switched + $(ctxt) - c0))
}

# task_session OUT: in the background, a bperf session counting $busy;
# returns once it holds three links; its pid is in $!
task_session() {
	perf stat --bpf-counters --bpf-attr-map "$attr" -x, -o "$tmp/$1.out" \
		-e cpu-clock -p "$busy" 2>"$tmp/$1.err" 9>&- &
	bpf_test_track $!
	wait_held $! "bpf?link" 3 ||
		bpf_test_fail "task session $1 holds no links: $(cat "$tmp/$1.err")"
}

# CPU-wide: plain perf stat first, so that its window holds bperf's
bperf_lock
bperf_held ref -e cpu-clock,context-switches -a
ref=$!
wait_started ref $ref
bperf_held all --bpf-counters --bpf-attr-map "$attr" -e cpu-clock,context-switches -a
all=$!
bperf_held cpu0 --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -C 0
cpu0=$!
wait_started all $all
wait_started cpu0 $cpu0
for p in $all $cpu0; do
	[ "$(nr_held "$p" bpf-prog)" = 6 ] ||
		bpf_test_fail "session $p holds $(nr_held "$p" bpf-prog) programs, want 6"
done
held=$(fds_of $all bpf-prog prog_id | tr '\n' ' ')
[ "$(fds_of $cpu0 bpf-prog prog_id | tr '\n' ' ')" = "$held" ] ||
	bpf_test_fail "the two sessions hold different programs:" \
		"$held and $(fds_of $cpu0 bpf-prog prog_id)"
cpuhp=$(for id in $held; do
	bpftool prog show id "$id" | awk '/ name bperf_cpuhp / { print $1 + 0 }'
done)
[ -n "$cpuhp" ] || bpf_test_fail "no bperf_cpuhp among the programs held: $held"
[ "$(links_of "$cpuhp" | wc -l)" = 1 ] ||
	bpf_test_fail "bperf_cpuhp has links $(links_of "$cpuhp"), want one"
# the links below are the task hooks'
progs=$(for id in $held; do
	[ "$id" = "$cpuhp" ] || echo "$id"
done | tr '\n' ' ')
switch=$(for id in $progs; do
	bpftool prog show id "$id" | awk '/ name bperf_switch / { print $1 + 0 }'
done)
[ -n "$switch" ] || bpf_test_fail "no bperf_switch among the programs held: $progs"
for p in $all $cpu0; do
	[ "$(nr_held "$p" "bpf?link")" = 0 ] ||
		bpf_test_fail "CPU-wide session $p holds links: $(fds_of "$p" "bpf?link" link_id)"
done
expect_links 0 "two CPU-wide sessions"

c0=$(run_cnt "$switch")
load
c1=$(run_cnt "$switch")
echo "CPU-wide sessions only: $switched context switches, bperf_switch ran $((c1 - c0)) times"
[ "$switched" -ge $loops ] || bpf_test_fail "only $switched context switches under load"
[ "$c1" = "$c0" ] || bpf_test_fail "bperf_switch ran $((c1 - c0)) times with CPU-wide sessions only"

# task sessions: the first attaches, the second shares
perf test -w noploop 1000 9>&- &
busy=$!
bpf_test_track $busy
task_session task1
task1=$!
expect_links 3 "one task session"
links=$(fds_of $task1 "bpf?link" link_id | tr '\n' ' ')
# shellcheck disable=SC2086
[ "$(links_of $progs | tr '\n' ' ')" = "$links" ] ||
	bpf_test_fail "the task session holds links $links, the system has $(links_of $progs)"

c0=$(run_cnt "$switch")
load
c1=$(run_cnt "$switch")
echo "with a task session: bperf_switch ran $((c1 - c0)) times"
[ $((c1 - c0)) -ge $loops ] ||
	bpf_test_fail "bperf_switch ran $((c1 - c0)) times with a task session, want $loops or more"

task_session task2
task2=$!
[ "$(fds_of $task2 "bpf?link" link_id | tr '\n' ' ')" = "$links" ] ||
	bpf_test_fail "the second task session holds" \
		"$(fds_of $task2 "bpf?link" link_id), not $links"
expect_links 3 "two task sessions"

# the first exits, having counted the busy loop it watched: the second
# keeps the links; it is killed: none left
kill -INT $task1
wait $task1
bperf_check_util "task session, busy loop" 1 task1 cpu-clock 15
expect_links 3 "the first task session gone"
kill -KILL $task2
wait $task2 2>/dev/null
expect_links 0 "every task session gone"
# a new one attaches anew, over the stale ids; it exits: none left
task_session task3
task3=$!
new=$(fds_of $task3 "bpf?link" link_id | tr '\n' ' ')
[ "$new" != "$links" ] || bpf_test_fail "the third task session holds the old links $links"
expect_links 3 "a task session after the others"
kill -INT $task3
wait $task3
bperf_get task3 cpu-clock >/dev/null
expect_links 0 "the last task session gone"
kill $busy
wait $busy 2>/dev/null

c0=$(run_cnt "$switch")
load
c1=$(run_cnt "$switch")
[ "$c1" = "$c0" ] ||
	bpf_test_fail "bperf_switch ran $((c1 - c0)) times after the task sessions left"

# the CPU-wide sessions counted right all along
bperf_unlock
wait $ref $all $cpu0
bperf_check_util "perf stat --bpf-counters -a" ref all cpu-clock 10
bperf_check_util "perf stat --bpf-counters -C 0" 1 cpu0 cpu-clock 10
n=$(bperf_get all context-switches)
r=$(bperf_get ref context-switches)
echo "context-switches: $n with bperf, $r with plain perf stat, $switched made by the loads"
awk -v n="$n" -v r="$r" -v s="$switched" \
	'BEGIN { exit !(n >= s && n <= r * 1.05) }' ||
	bpf_test_fail "bperf counted $n context switches: want at least the $switched" \
		"of the loads, at most 5% above plain perf stat's $r"
bperf_none_pinned
echo "Passed"
