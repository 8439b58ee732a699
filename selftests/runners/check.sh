#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make check': boot the built kernel, run guest-check.sh (beside this
# script) in it and judge the results.  Writes a TAP log and ends with the line
#   N passed, N failed, N skipped
# Exits non-zero on any failed test, on a VM that never reached or never
# finished the tests, on a missing result file, and on a kernel splat in
# the guest's dmesg.
#
# CHECK_KERNEL=debug ('make check-debug') boots the debug kernel instead
# (selftests/vm/configs/debug.config), runs the stress tests for
# STRESS_SECS (60) seconds instead of their default, and fails on a
# kmemleak report too.
#
# CHECK_PART=core|bperf ('make check PART=...') runs one part of the
# suite in a VM of its own (guest-check.sh says what each holds), and
# judges only what that part ran; at its end it says which parts have
# passed at this revision of the project, so that a suite too long for
# one sitting (check-debug) can be passed part by part.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"
# shellcheck source=selftests/runners/perf-results.sh
. "$TOP/selftests/runners/perf-results.sh"
set +e

kernel=${CHECK_KERNEL:-applied}
case $kernel in
applied)
	suite=check timeout=${CHECK_TIMEOUT:-2400} guest_env= ;;
debug)
	# everything runs several times slower under KASAN and lockdep
	suite=check-debug timeout=${CHECK_TIMEOUT:-9000}
	secs=${STRESS_SECS:-60}
	[[ $secs =~ ^[1-9][0-9]*$ ]] || die "STRESS_SECS=$secs: want seconds"
	guest_env="BPF_EVENT_STRESS_SECS=$secs BPERF_CHURN_SECS=$secs KSFT_TIMEOUT=1800" ;;
kcsan)
	# KCSAN slows every memory access a little, and reports data races
	# as "BUG: KCSAN: data-race", which the splat check below fails on
	suite=check-kcsan timeout=${CHECK_TIMEOUT:-9000}
	secs=${STRESS_SECS:-60}
	[[ $secs =~ ^[1-9][0-9]*$ ]] || die "STRESS_SECS=$secs: want seconds"
	guest_env="BPF_EVENT_STRESS_SECS=$secs BPERF_CHURN_SECS=$secs KSFT_TIMEOUT=1800" ;;
*)	die "CHECK_KERNEL is applied, debug or kcsan" ;;
esac
parts='core bperf'
part=${CHECK_PART:-all}
case $part in
all|core|bperf) ;;
*)	die "PART=$part: want one of: all $parts" ;;
esac
in_part() { [ "$part" = all ] || [ "$part" = "$1" ]; }
# What is tested: the project's commit, or "changed" with any change to
# it, untracked files too (the overlay takes every file under its
# directories), when what was built last is booted (NOBUILD), when git
# cannot tell, or when it differs from what the Makefile saw before the
# build (CHECK_REV0).
revision() {
	local r st

	r=$(git -C "$TOP" rev-parse HEAD 2>/dev/null) &&
		st=$(git -C "$TOP" status --porcelain 2>/dev/null) || r=changed
	[ -z "${NOBUILD:-}" ] && [ -z "$st" ] || r=changed
	echo "$r"
}
rev=$(revision)
[ -z "${CHECK_REV0+set}" ] || [ "$CHECK_REV0" = "$rev" ] || rev=changed
tag=$suite
[ "$part" = all ] || tag=$suite-$part
res=$BUILD_DIR/results/$tag-$(date +%Y%m%d-%H%M%S)
mkdir -p "$res"
ln -sfn "$res" "$BUILD_DIR/results/latest"
tap=$res/check.tap
phase "running the tests in the VM ($kernel kernel), console in $res/console.log"
# Three vCPUs, so that the bperf test can offline the middle one.
# $res/times: each part's seconds, for check-times.sh ('make check' prints
# it at its end); the build's, if the Makefile says when it began.
vm_t0=$(date +%s)
[ -z "${CHECK_T0:-}" ] || printf 'build\t%s\n' $((vm_t0 - CHECK_T0)) >"$res/times"
VM_CPUS=${VM_CPUS:-3} \
	"$TOP/selftests/vm/run-vm.sh" --kernel "$kernel" --timeout "$timeout" \
	--job "$res/job" --log "$res/console.log" -- \
	"CHECK_PART=$part $guest_env${guest_env:+ }$TOP/selftests/runners/guest-check.sh"
vm_rc=$?
printf 'VM\t%s\n' $(($(date +%s) - vm_t0)) >>"$res/times"
phase_done

tap_begin "$tap"
tap_vm $vm_rc "VM booted and ran the tests"

# Kselftests: the top-level results of run_kselftest.sh.
if ! in_part core; then
	:
elif [ -s "$res/job/kselftest.tap" ]; then
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			name=${line#ok * }; result skip "kselftest ${name%% # SKIP*}" "${name#* # SKIP}" ;;
		"ok "*)	result ok "kselftest ${line#ok * }" ;;
		"not ok "*)
			name=${line#not ok * }; result fail "kselftest ${name%% # *}" ;;
		esac
	done < <(grep -E '^(not )?ok [0-9]+ selftests: ' "$res/job/kselftest.tap")
else
	result fail "kselftest results" "missing $res/job/kselftest.tap"
fi
# Subtests skipped inside a kselftest that passed: each one named, with
# its reason, so that a skip never hides behind its test's "ok".
while IFS= read -r line; do
	name=${line#\# ok * }
	result skip "kselftest subtest ${name%% # SKIP*}" "${name#* # SKIP }"
done < <(grep -E '^# ok [0-9]+ .* # SKIP' "$res/job/kselftest.tap" 2>/dev/null)
[ -f "$res/job/kselftest-skipped" ] &&
while IFS=$'\t' read -r name reason; do
	result skip "kselftest selftests: ${name/:/: }" "$reason"
done <"$res/job/kselftest-skipped"

if [ -s "$res/job/perf-test.log" ]; then
	while IFS=$'\t' read -r verdict name reason; do
		case $verdict in
		Ok)	result ok "perf test $name" ;;
		Skip)	result skip "perf test $name" "$reason" ;;
		*)	result fail "perf test $name" ;;
		esac
	done < <(perf_results "$res/job/perf-test.log")
else
	result fail "perf test results" "missing $res/job/perf-test.log"
fi

# Harness tests (vm-tests/, beside this script): exit 0 pass, 2 skip,
# else fail; the last line they print is the reason.
if ! in_part core; then
	:
elif [ -f "$res/job/vm-tests.results" ]; then
	while IFS=$'\t' read -r rc name last; do
		case $rc in
		0) result ok "vm-test $name" ;;
		2) result skip "vm-test $name" "$last" ;;
		*) result fail "vm-test $name" "$last" ;;
		esac
	done <"$res/job/vm-tests.results"
else
	result fail "vm-test results" "missing $res/job/vm-tests.results"
fi

# The debug kernel's leak scan, made once the tests are done.
if [ "$kernel" = debug ]; then
	if [ -f "$res/job/kmemleak-error" ]; then
		result fail "kmemleak reports no leak" "$(cat "$res/job/kmemleak-error")"
	elif [ ! -f "$res/job/kmemleak" ]; then
		result fail "kmemleak reports no leak" "missing $res/job/kmemleak"
	elif grep -q 'unreferenced object' "$res/job/kmemleak"; then
		grep -E -m 10 'unreferenced object|^ +\[<' "$res/job/kmemleak" | sed 's/^/#   /' >>"$tap"
		result fail "kmemleak reports no leak" \
			"$(grep -c 'unreferenced object' "$res/job/kmemleak") suspected leaks, see $res/job/kmemleak"
	else
		result ok "kmemleak reports no leak"
	fi
fi

# KCSAN's reports: one whose racing accesses are in the series' code (the
# first frame of either, against kcsan_ours) fails the run; the others,
# races of the kernel the series leaves as they were, are listed.  Then
# they are left out of the splat check.
kcsan_ours='bpf_link_|perf_event_bpf_|bpf_prog_get_stats|bpf_prog_stats_seen|bpf_stats_dec'
kcsan_ours+='|cgroup_bpf_release|bpf_cgroup_link|bpf_xdp_link|tcx_link|netkit_link'
kcsan_ours+='|bpf_netns_link|sock_map_link|bpf_struct_ops_link'
if [ "$kernel" = kcsan ] && [ -f "$res/console.log" ]; then
	# each access's first frame, a report's two on one line
	races=$(awk '
		/BUG: KCSAN:/ { if (r != "") print r; r = ""; n = 0 }
		/(read|write).* by (task|interrupt)/ { want = 1; next }
		want { sub(/^\[[ 0-9.]+\] +/, ""); sub(/\+.*/, ""); r = r " " $0; want = 0 }
		END { if (r != "") print r }' "$res/console.log")
	ours=$(grep -Ec "$kcsan_ours" <<<"$races")
	others=$(sort <<<"$races" | uniq -c | sort -rn | head -n 5 | tr -s ' ')
	[ -z "$races" ] || tap_print "# KCSAN reports, by their racing functions:" \
		"$(sed 's/^/#   /' <<<"$others")"
	if [ "$ours" != 0 ]; then
		result fail "KCSAN: no data race in the series' code" "$ours reports, see $res/console.log"
	else
		result ok "KCSAN: no data race in the series' code" \
			"$(grep -c . <<<"$races") reports elsewhere"
	fi
	splat_re=${splat_re/BUG:/BUG: ([^K]|K[^C])}
fi

# A splat anywhere in the guest kernel log fails the run.
if [ -f "$res/job/dmesg" ]; then
	if grep -Eq "$splat_re" "$res/job/dmesg"; then
		grep -E -m 5 "$splat_re" "$res/job/dmesg" | sed 's/^/#   /' >>"$tap"
		result fail "guest kernel log free of splats" "see $res/job/dmesg"
	else
		result ok "guest kernel log free of splats"
	fi
	# The debug kernel reports some things once, and a long run may push
	# them out of the log buffer: look at its console too.
	# Not anchored: a kernel line may follow a partial line of a test.
	klog="\[ *[0-9]+\.[0-9]+\] .*($splat_re)"
	if [ "$kernel" = applied ]; then
		:
	elif grep -Eq "$klog" "$res/console.log"; then
		grep -E -m 5 "$klog" "$res/console.log" | sed 's/^/#   /' >>"$tap"
		result fail "guest console free of splats" "see $res/console.log"
	else
		result ok "guest console free of splats"
	fi
else
	result fail "guest kernel log free of splats" "missing $res/job/dmesg"
fi

# A run whose perf-tests.txt had a line guest-check.sh could not take
if [ -s "$res/job/perf-test-errors" ]; then
	while IFS= read -r line; do
		result fail "perf-tests.txt" "$line"
	done <"$res/job/perf-test-errors"
fi

tap_end
rc=$?
# the project changed while the VM ran: what it ran is not known
[ "$(revision)" = "$rev" ] || rev=changed
printf '%s\t%s\t%s\n' "$rev" "$part" "$([ $rc = 0 ] && echo passed || echo failed)" \
	>"$res/verdict"
[ "$part" = all ] && exit $rc

# Each part's newest run at this revision.
if [ "$rev" = changed ]; then
	echo "==> $suite: changes not committed (or NOBUILD): this part is not counted with others"
	exit $rc
fi
echo "==> $suite at ${rev:0:12}, part by part"
missing=0
for p in $parts; do
	v= d=
	# oldest first: the newest run at this revision has the last word
	for r in "$BUILD_DIR/results/$suite-$p-"*; do
		[ -f "$r/verdict" ] || continue
		IFS=$'\t' read -r r_rev _ r_v <"$r/verdict"
		[ "$r_rev" = "$rev" ] || continue
		v=$r_v d=$r
	done
	if [ -n "$v" ]; then
		printf '    %-6s %s (%s)\n' "$p" "$v" "${d##*/}"
	else
		printf '    %-6s not run\n' "$p"
	fi
	[ "$v" = passed ] || missing=1
done
[ $missing = 1 ] || echo "    every part passed: $suite passes at ${rev:0:12}"
exit $rc
