# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by check.sh, perf-test-compare.sh and perf-test-compare-guest.sh.
# perf tests: the result line perf test prints for each test.  A shell
# test that skips says why in its own output, not on that line: take the
# last line of its output that speaks of skipping.
perf_results() {
	awk '
	# perf pads the description to a column; a longer one runs right
	# up to the ": " before the verdict
	/^ *[0-9.]+: .*: (Ok|FAILED!|Skip.*)$/ {
		line = $0
		sub(/^ +/, "", line)
		match(line, / *: (Ok|FAILED!|Skip.*)$/)
		verdict = substr(line, RSTART); sub(/^ *: /, "", verdict)
		name = substr(line, 1, RSTART - 1); sub(/:/, "", name)
		reason = ""
		if (verdict ~ /^Skip \(/) {
			reason = verdict; sub(/^Skip \(/, "", reason); sub(/\)$/, "", reason)
		} else if (verdict ~ /^Skip/) {
			reason = why
		}
		sub(/ .*/, "", verdict)
		printf "%s\t%s\t%s\n", verdict, name, reason
		why = ""
		next
	}
	/[Ss]kip/ { why = $0; sub(/^ +/, "", why) }
	' "$1"
}

# rank VERDICT: how good a verdict is, higher is better: Ok > Skip >
# anything else (FAILED, a timeout, no verdict).
rank() {
	case $1 in Ok) echo 2 ;; Skip) echo 1 ;; *) echo 0 ;; esac
}
