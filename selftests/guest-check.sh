#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the VM (selftests/check.sh boots it): the kselftests with the
# kernel's run_kselftest.sh, then the perf tests named in perf-tests.txt.
# Raw output goes to the console and to $JOB; check.sh judges it.

echo "==> kselftests"
if [ -x "$BUILD_DIR/kselftest/run_kselftest.sh" ]; then
	"$BUILD_DIR/kselftest/run_kselftest.sh" 2>&1 | tee "$JOB/kselftest.tap"
else
	echo "no kselftests installed in $BUILD_DIR/kselftest"
fi

echo "==> perf tests"
# perf test finds its shell tests under ./tests/shell; run from a writable
# copy, as some tests write to the current directory.
mkdir -p /tmp/perf-test/tests
cp -r "$BUILD_DIR/src/tools/perf/tests/shell" /tmp/perf-test/tests/
cd /tmp/perf-test || exit 1
: >"$JOB/perf-test.log"
sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/selftests/perf-tests.txt" |
while IFS= read -r t; do
	perf test -v "$t" </dev/null 2>&1 | tee -a "$JOB/perf-test.log"
done
echo "==> tests done"
