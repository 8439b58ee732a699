#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the VM (check.sh, beside it, boots it): the kselftests with
# the kernel's run_kselftest.sh, then the perf tests named in perf-tests.txt,
# then the harness tests; on a kernel with kmemleak (make check-debug), a
# leak scan at the end.  Raw output goes to the console and to $JOB;
# check.sh judges it.  $JOB/times gets each part's seconds, and
# $JOB/perf-test-times each perf test's.
# CHECK_PART (check.sh): 'core' runs the kselftests, the perf tests of
# that part and the harness tests, 'bperf' the perf tests of its part
# only; unset or 'all', everything (perf-tests.txt names each perf
# test's part).
part=${CHECK_PART:-all}
in_part() { [ "$part" = all ] || [ "$part" = "$1" ]; }

# part NAME: the part before ends, NAME begins (none: the last one ends)
part_name='' part_t0=0
part() {
	local now

	now=$(date +%s)
	[ -z "$part_name" ] || printf '%s\t%s\n' "$part_name" $((now - part_t0)) >>"$JOB/times"
	part_name=$1 part_t0=$now
}
: >"$JOB/times"
part "guest setup"

# A hardware PMU is there if perf can count instructions.
if perf stat -e instructions -x, -o /tmp/pmu-probe true 2>/dev/null &&
   ! grep -q 'not supported' /tmp/pmu-probe; then
	pmu=1
else
	pmu=0
	echo "==> no hardware PMU in this VM: hardware-event tests skip"
fi

# A debug kernel with kmemleak: forget what boot left, scan at the end.
# An object is reported on the second scan that finds it unreferenced
# (the first only notes its checksum), and "clear" forgets only what was
# reported: scan twice, then clear.
kmemleak=/sys/kernel/debug/kmemleak
if [ -w "$kmemleak" ]; then
	# kmemleak reports nothing younger than 5 s: let what boot made
	# reach that age, so that the clear below forgets all of it.
	sleep 6
	echo scan >"$kmemleak" && echo scan >"$kmemleak" &&
		echo clear >"$kmemleak" ||
		echo "kmemleak: cannot scan at the start" >"$JOB/kmemleak-error"
fi

if in_part core; then
	part kselftests
	echo "==> kselftests"
	kst=$BUILD_DIR/kselftest
	: >"$JOB/kselftest-skipped"
	if [ -x "$kst/run_kselftest.sh" ]; then
		declare -A cond reason
		while read -r t c r; do
			cond[$t]=$c reason[$t]=$r
		done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/selftests/runners/kselftest-skip.txt")
		args=()
		for t in $("$kst/run_kselftest.sh" -l); do
			c=${cond[$t]:-}
			if [ "$c" = always ] || { [ "$c" = no-pmu ] && [ $pmu = 0 ]; }; then
				printf '%s\t%s\n' "$t" "${reason[$t]}" >>"$JOB/kselftest-skipped"
				echo "skipping $t: ${reason[$t]}"
			else
				args+=(-t "$t")
			fi
		done
		# KSFT_TIMEOUT: seconds per test, instead of the collection's own
		"$kst/run_kselftest.sh" ${KSFT_TIMEOUT:+-o "$KSFT_TIMEOUT"} "${args[@]}" 2>&1 |
			tee "$JOB/kselftest.tap"
	else
		echo "no kselftests installed in $kst"
	fi
fi

part "perf tests"
echo "==> perf tests"
# perf test finds its shell tests under ./tests/shell; run from a writable
# copy, as some tests write to the current directory.
mkdir -p /tmp/perf-test/tests
cp -r "$BUILD_DIR/src/tools/perf/tests/shell" /tmp/perf-test/tests/
cd /tmp/perf-test || exit 1
: >"$JOB/perf-test.log"
: >"$JOB/perf-test-times"
: >"$JOB/perf-test-errors"
sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/selftests/runners/perf-tests.txt" |
while read -r p t; do
	# a line without its part would run another selection, or all tests
	case $p in
	core|bperf) [ -n "$t" ] ;;
	*) false ;;
	esac || {
		echo "not 'PART TEST': '$p $t'" >>"$JOB/perf-test-errors"
		continue
	}
	in_part "$p" || continue
	t0=$(date +%s)
	perf test -vv "$t" </dev/null 2>&1 | tee /tmp/perf-test.out
	cat /tmp/perf-test.out >>"$JOB/perf-test.log"
	# a description that matches no test runs nothing, silently
	grep -Eq ': (Ok|FAILED!|Skip)' /tmp/perf-test.out ||
		echo "'$p $t' runs no perf test" >>"$JOB/perf-test-errors"
	printf '%s\t%s\n' $(($(date +%s) - t0)) "$t" >>"$JOB/perf-test-times"
done
if in_part core; then
	part "harness tests"
	echo "==> harness tests"
	: >"$JOB/vm-tests.results"
	for t in "$TOP"/selftests/runners/vm-tests/*.sh; do
		echo "--- $(basename "$t")"
		"$t" 2>&1 | tee /tmp/vm-test.out
		rc=${PIPESTATUS[0]}
		printf '%s\t%s\t%s\n' "$rc" "$(basename "$t" .sh)" "$(tail -n 1 /tmp/vm-test.out)" \
			>>"$JOB/vm-tests.results"
	done
fi
if [ -w "$kmemleak" ]; then
	part "kmemleak scan"
	echo "==> kmemleak scan"
	# two scans: an object is reported once it was seen unreferenced twice
	if echo scan >"$kmemleak" && echo scan >"$kmemleak"; then
		cat "$kmemleak" >"$JOB/kmemleak"
	else
		echo "kmemleak: cannot scan at the end" >>"$JOB/kmemleak-error"
	fi
	echo "$(grep -c 'unreferenced object' "$JOB/kmemleak") suspected leaks"
fi
part ''
echo "==> tests done"
