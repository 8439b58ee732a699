#!/bin/bash
# perf stat --bpf-counters counts tasks as perf stat does: -p, -t, workload (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# For each kind of task target, a bperf session counts what the task
# ran: for -p and -t, a plain perf stat counting the same process at
# the same time must agree on the count; for a workload (and each run
# of -r), what the workload ran, as /proc tells it (CPU targets:
# stat_bperf_cpu.sh).  A task session's time running is the time its
# tasks ran: task-clock again.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
tmp=$(bpf_test_dir)

# -p and -t: both sessions attach to the same sleeping process, which
# then burns a CPU for 2 s; both end when it exits.
for opt in -p -t; do
	bperf_target task 2
	pid=$(cat "$tmp/task.pid")
	bperf_both task -e task-clock "$opt" "$pid"
	bperf_check "task-clock $opt" "$(bperf_get task_ref task-clock)" \
		"$(bperf_get task task-clock)" 10
	bperf_check_running "task-clock $opt" task task-clock 10
done

# A workload, one process spinning for 1 s: the session counts what it
# ran, as /proc tells it.  (Not the CPUs utilized of a plain perf stat
# run after it: those count each perf's own start, which on a debug
# kernel differ by 10% between the two.)
hz=$(getconf CLK_TCK)
bperf_spin_script "$tmp/spin.sh"
bperf_stat work -e task-clock -- bash "$tmp/spin.sh" "$tmp/work.cpu" "$hz"
bperf_check_spin "task-clock workload" work task-clock
bperf_check_running "task-clock workload" work task-clock 10

# perf stat -r: each run has its own workload process; the count is the
# mean of the runs'.
bperf_stat rep -r 2 -e task-clock -- bash "$tmp/spin.sh" "$tmp/rep.cpu" "$hz"
{ read -r b1 && read -r e1 && read -r b2 && read -r e2; } 2>/dev/null <"$tmp/rep.cpu" ||
	bpf_test_fail "-r 2: the workload did not run twice: $(cat "$tmp/rep.err")"
n=$(bperf_get rep task-clock)
echo "task-clock workload, -r 2: $n msec, the runs ran $e1 and $e2 msec," \
	"$((e1 - b1)) and $((e2 - b2)) in their loops"
bperf_check_ran "task-clock workload, -r 2" "$n" $(((e1 - b1 + e2 - b2) / 2)) \
	$(((e1 + e2) / 2))

bperf_none_pinned
exit 0
