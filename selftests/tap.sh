# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The TAP log of a VM test run, sourced by check.sh and
# perf-test-compare.sh:
#   tap_begin FILE        start the log
#   result ok|fail|skip NAME [REASON]
#   tap_vm RC WHAT        the VM's exit status as the first result
#   tap_end               close the log, print it and the line
#                         "N passed, N failed, N skipped"; false on a
#                         failure or when nothing ran

tap_begin() {
	tap=$1 n=0 pass=0 fail=0 skip=0
	echo "TAP version 13" >"$tap"
}

result() {
	n=$((n + 1))
	case $1 in
	ok)	pass=$((pass + 1)); echo "ok $n - $2${3:+ # $3}" ;;
	skip)	skip=$((skip + 1)); echo "ok $n - $2 # SKIP ${3:-}" ;;
	*)	fail=$((fail + 1)); echo "not ok $n - $2${3:+ # $3}" ;;
	esac >>"$tap"
}

tap_vm() {
	case $1 in
	0) result ok "$2" ;;
	124) result fail "$2" "watchdog: the VM hung" ;;
	125) result fail "$2" "no status: boot failure or panic" ;;
	*) result fail "$2" "test script exit $1" ;;
	esac
}

tap_end() {
	echo "1..$n" >>"$tap"
	cat "$tap"
	echo "TAP log: $tap"
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ] && [ "$n" -gt 0 ]
}
