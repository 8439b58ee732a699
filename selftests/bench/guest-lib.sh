# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers the guest halves of the benchmarks share.  Sourced, never run.

# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS
wait_for() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# gone PID: process PID has ended
gone() {
	! kill -0 "$1" 2>/dev/null
}

# task_ms COMMAND...: the CPU time COMMAND took, children included, in ms
# (perf stat's task-clock); its error output in /tmp/cmd.err
task_ms() {
	perf stat -x, -e task-clock -o /tmp/stat.out -- "$@" >/dev/null 2>/tmp/cmd.err ||
		return 1
	awk -F, '$3 == "task-clock" { print $1 }' /tmp/stat.out
}

# min3 COMMAND...: the smallest of three task_ms COMMAND
min3() {
	local t m=

	for _ in 1 2 3; do
		t=$(task_ms "$@") || return 1
		m=$(awk -v a="${m:-$t}" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
	done
	echo "$m"
}
