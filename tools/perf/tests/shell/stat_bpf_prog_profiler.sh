#!/bin/bash
# perf stat -b counts events while a BPF program runs
# SPDX-License-Identifier: GPL-2.0
#
# bperf's leader program runs on every context switch while a bperf
# session lives: profile it with perf stat -b and check that its runs
# are seen and take a sliver of the CPU time, on every CPU they ran on.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
command -v bpftool >/dev/null || bperf_skip "bpftool not found"
tmp=$(bperf_dir)

exec 9>"$tmp/lock"
flock -x 9
bperf_stat hold -e cpu-clock -a -- flock -s "$tmp/lock" true 9>&- &
b=$!
bperf_wait_fd $b bpf-link || bperf_fail "bperf session did not start: $(cat "$tmp/hold.err")"
id=$(bpftool prog show name bperf_switch | awk -F: 'NR == 1 { print $1 }')
[ -n "$id" ] || bperf_fail "no bperf_switch program loaded"

# context switches to profile: the pipe benchmark
perf stat -b "$id" -e cpu-clock -x, -o "$tmp/prof.out" -A -- \
	perf bench sched pipe -l 2000 >/dev/null 2>"$tmp/prof.err" 9>&- ||
	bperf_fail "perf stat -b failed: $(cat "$tmp/prof.err")"
exec 9>&-
wait

# per CPU: CPU0,<count>,msec,cpu-clock,...
total=$(awk -F, '$4 == "cpu-clock" && $2 ~ /^[0-9.]+$/ { s += $2; n++ }
		 END { if (n) print s }' "$tmp/prof.out")
echo "bperf_switch ran for ${total:-no} msec of cpu-clock"
awk -v t="${total:-0}" 'BEGIN { exit !(t > 0 && t < 1000) }' ||
	bperf_fail "implausible time in the program: $(cat "$tmp/prof.out")"
exit 0
