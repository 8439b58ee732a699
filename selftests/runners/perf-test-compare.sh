#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make perf-test-compare': upstream 6.12's own perf test suite, run by
# upstream's perf (perf-base) and by ours in one VM on our kernel (guest
# side: perf-test-compare-guest.sh).  Prints each test's two verdicts and
# a TAP log, ends with the line
#   N passed, N failed, N skipped
# and fails on a regression: a test whose best verdict over three runs
# (Ok > Skip > a failure or timeout) is worse with ours than with
# perf-base, or that our perf does not have.  Tests on
# perf-test-compare-skip.txt are not run.  PTC_ONLY=ERE compares only the
# tests whose description matches; PTC_TIMEOUT is the limit of one test
# (600 s), PTC_VM_TIMEOUT that of the whole run (7200 s); PTC_OURS another
# perf binary to compare with perf-base (a path the VM sees).
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"
# shellcheck source=selftests/runners/perf-results.sh
. "$TOP/selftests/runners/perf-results.sh"
set +e

res=$BUILD_DIR/results/perf-test-compare-$(date +%Y%m%d-%H%M%S)
mkdir -p "$res"
tap=$res/compare.tap
phase "running upstream's perf tests with perf-base and ours, console in $res/console.log"
VM_CPUS=${VM_CPUS:-3} \
	"$TOP/selftests/vm/run-vm.sh" --timeout "${PTC_VM_TIMEOUT:-7200}" --job "$res/job" \
	--log "$res/console.log" -- \
	"PTC_TIMEOUT=$(printf %q "${PTC_TIMEOUT:-600}")" \
	"PTC_ONLY=$(printf %q "${PTC_ONLY:-}")" \
	"PTC_OURS=$(printf %q "${PTC_OURS:+$(realpath "$PTC_OURS")}")" \
	"$TOP/selftests/runners/perf-test-compare-guest.sh"
vm_rc=$?
phase_done

tap_begin "$tap"
tap_vm $vm_rc "VM booted and ran both suites"

table=$res/verdicts.txt
printf '%-60s %-8s %-8s %s\n' test perf-base ours verdict >"$table"
if [ -s "$res/job/verdicts.tsv" ]; then
	while IFS=$'\t' read -r desc vb vo bb bo; do
		name="perf test $desc"
		if [ "$vb" = listed ]; then
			verdict="not run: $bo"
			result skip "$name" "not run: $bo"
		elif [ "$vo" = Missing ]; then
			verdict="MISSING from ours"
			result fail "$name" "base $vb, missing from our perf"
		elif [ "$(rank "$bo")" -lt "$(rank "$bb")" ]; then
			verdict="REGRESSION (best of 3: base $bb, ours $bo)"
			result fail "$name" "base $vb, ours $vo; best of 3: base $bb, ours $bo"
		elif [ "$(rank "$vo")" -lt "$(rank "$vb")" ]; then
			verdict="flaky (best of 3: base $bb, ours $bo)"
			result skip "$name" "flaky: base $vb, ours $vo; best of 3: base $bb, ours $bo"
		elif [ "$vo" = Ok ]; then
			verdict=same
			[ "$vb" = Ok ] || verdict="only ours passes (base $vb)"
			result ok "$name"
		else
			verdict="neither passes"
			result skip "$name" "base $vb, ours $vo"
		fi
		printf '%-60.60s %-8s %-8s %s\n' "$desc" "$vb" "$vo" "$verdict" >>"$table"
	done <"$res/job/verdicts.tsv"
else
	result fail "verdicts" "no $res/job/verdicts.tsv (or no test matched PTC_ONLY)"
fi
if [ -s "$res/job/ours-only.txt" ]; then
	echo "# tests only our perf has (not compared):" >>"$table"
	sed 's/^/#   /' "$res/job/ours-only.txt" >>"$table"
fi

cat "$table"
tap_end && [ "$tap_n" -gt 1 ]
