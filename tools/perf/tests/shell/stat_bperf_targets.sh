#!/bin/bash
# perf stat --bpf-counters counts tasks as perf stat does: -p, -t, workload (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# For each kind of task target, a bperf session and a plain perf stat
# count the same thing, one after the other or, for -p and -t, the same
# process at the same time (CPU targets: stat_bperf_cpu.sh).  Sessions
# at the same time must agree on the count; sessions one after the other
# on the CPUs utilized (the count over the session's own elapsed time).
# A task session's time running is the time its tasks ran: task-clock
# again.

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

# A workload: one after the other, each spinning for 2 s of wall time.
spin="timeout 2 sh -c 'while :; do :; done'"
bperf_stat work -e task-clock -- sh -c "$spin"
plain_stat work_ref -e task-clock -- sh -c "$spin"
bperf_check_util "task-clock workload" work_ref work task-clock 10
bperf_check_running "task-clock workload" work task-clock 10

# perf stat -r: each run has its own workload process.
bperf_stat rep -r 2 -e task-clock -- sh -c "$spin"
plain_stat rep_ref -r 2 -e task-clock -- sh -c "$spin"
bperf_check_util "task-clock workload, -r 2" rep_ref rep task-clock 10

bperf_none_pinned
exit 0
