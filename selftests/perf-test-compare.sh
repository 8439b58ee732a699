#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make perf-test-compare': upstream 6.12's own perf test suite, run by
# upstream's perf (perf-base) and by ours in one VM on our kernel (guest
# side: perf-test-compare-guest.sh).  Prints each test's two verdicts and
# a TAP log, ends with the line
#   N passed, N failed, N skipped
# and fails on a regression: a test that passes with perf-base and fails
# (or skips) with ours, and still does on two reruns of each while
# perf-base passes at least one of its own.  Tests on
# perf-test-compare-skip.txt are not run.  PTC_ONLY=ERE compares only the
# tests whose description matches; PTC_TIMEOUT is the limit of one test
# (600 s), PTC_VM_TIMEOUT that of the whole run (7200 s); PTC_OURS another
# perf binary to compare with perf-base (a path the VM sees).
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/mk/common.sh"
. "$TOP/selftests/tap.sh"
set +e

res=$BUILD_DIR/results/perf-test-compare-$(date +%Y%m%d-%H%M%S)
mkdir -p "$res"
tap=$res/compare.tap
phase "running upstream's perf tests with perf-base and ours, console in $res/console.log"
VM_CPUS=${VM_CPUS:-3} \
	"$TOP/selftests/run-vm.sh" --timeout "${PTC_VM_TIMEOUT:-7200}" --job "$res/job" \
	--log "$res/console.log" -- \
	"PTC_TIMEOUT=${PTC_TIMEOUT:-600} PTC_ONLY=$(printf %q "${PTC_ONLY:-}")" \
	"PTC_OURS=$(printf %q "${PTC_OURS:-}")" \
	"$TOP/selftests/perf-test-compare-guest.sh"
vm_rc=$?
phase_done

tap_begin "$tap"
tap_vm $vm_rc "VM booted and ran both suites"

table=$res/verdicts.txt
printf '%-60s %-8s %-8s %s\n' test perf-base ours verdict >"$table"
if [ -s "$res/job/verdicts.tsv" ]; then
	while IFS=$'\t' read -r desc vb vo reruns; do
		name="perf test $desc"
		if [ "$vb" = listed ]; then
			verdict="not run: $reruns"
			result skip "$name" "not run: $reruns"
		elif [ "$vo" = Ok ]; then
			verdict=same
			[ "$vb" = Ok ] || verdict="ours only passes (base $vb)"
			result ok "$name" "${verdict#same}"
		elif [ "$vb" != Ok ]; then
			verdict="neither passes"
			result skip "$name" "base $vb, ours $vo"
		else
			ob=${reruns#base } ob=${ob%%/*}
			oo=${reruns##*ours } oo=${oo%%/*}
			if [ "${oo:-0}" = 0 ] && [ "${ob:-0}" -ge 1 ]; then
				verdict="REGRESSION ($reruns)"
				result fail "$name" "base Ok, ours $vo, reruns $reruns"
			else
				verdict="flaky ($reruns)"
				result ok "$name" "ours $vo once, reruns $reruns"
			fi
		fi
		printf '%-60.60s %-8s %-8s %s\n' "$desc" "$vb" "$vo" "$verdict" >>"$table"
	done <"$res/job/verdicts.tsv"
else
	result fail "verdicts" "missing $res/job/verdicts.tsv"
fi
if [ -s "$res/job/ours-only.txt" ]; then
	echo "# tests only our perf has (not compared):" >>"$table"
	sed 's/^/#   /' "$res/job/ours-only.txt" >>"$table"
fi

cat "$table"
tap_end && [ "$n" -gt 1 ]
