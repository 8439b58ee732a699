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
