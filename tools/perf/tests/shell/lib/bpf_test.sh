# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers common to the BPF tests: those of perf stat --bpf-counters
# (lib/bperf.sh) and those of perf bpf (lib/perf_bpf.sh).  Each of these
# libraries sources this file first, with the name of its tests:
#
#	. "$(dirname "$0")"/lib/bpf_test.sh NAME
#
# which makes the test's temporary directory, /tmp/perf-test-NAME.XXXXXX.
# The library's cleanup, whatever way the test ends, stops the processes
# in $bpf_test_pids, calls bpf_test_stats_restore and removes
# $bpf_test_tmp.

bpf_test_tmp=$(mktemp -d "/tmp/perf-test-$1.XXXXXX")
bpf_test_pids=
bpf_test_stats_old=

# Tests use this rather than the variable: shellcheck does not follow
# this file from perf's build.
bpf_test_dir() {
	echo "$bpf_test_tmp"
}

bpf_test_skip() {
	echo "Skip: $*"
	exit 2
}

bpf_test_fail() {
	echo "FAIL: $*"
	exit 1
}

# bpf_test_require [COMMAND...]: root, and the commands the test runs
# besides perf.
bpf_test_require() {
	local c

	[ "$(id -u)" = 0 ] || bpf_test_skip "needs root"
	for c in "$@"; do
		command -v "$c" >/dev/null || bpf_test_skip "$c not found"
	done
}

# bpf_test_stats_restore: for the cleanup, kernel.bpf_stats_enabled back
# to what it was, if bpf_test_stats_on changed it.
bpf_test_stats_restore() {
	if [ -n "$bpf_test_stats_old" ]; then
		echo "$bpf_test_stats_old" >/proc/sys/kernel/bpf_stats_enabled
		bpf_test_stats_old=
	fi
}

# bpf_test_track PID: stop PID, if still there, when the test ends.
bpf_test_track() {
	bpf_test_pids="$bpf_test_pids $1"
}

# bpf_test_stats_on: kernel.bpf_stats_enabled=1 until the end of the test.
bpf_test_stats_on() {
	local old

	old=$(cat /proc/sys/kernel/bpf_stats_enabled) ||
		bpf_test_skip "no kernel.bpf_stats_enabled"
	echo 1 >/proc/sys/kernel/bpf_stats_enabled ||
		bpf_test_fail "cannot set kernel.bpf_stats_enabled"
	[ -n "$bpf_test_stats_old" ] || bpf_test_stats_old=$old
}

# bpf_test_gone PID: the process PID has ended.
bpf_test_gone() {
	! kill -0 "$1" 2>/dev/null
}
