#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the VM (selftests/perf-test-compare.sh boots it): upstream
# 6.12's own perf test suite, run by upstream's perf (perf-base) and by
# ours.  Both run upstream's shell tests, from a directory of their own
# where "perf" is the binary under test, so that a verdict depends on the
# binary alone.  Each test runs on its own under a timeout; a test that
# passes with perf-base and not with ours runs twice more with each.
# Writes $JOB/verdicts.tsv: description, base verdict, ours verdict,
# reruns (base ok/ours ok out of 2), one line a test.
set -u
per_test=${PTC_TIMEOUT:-600}
only=${PTC_ONLY:-}	# an ERE: compare only the tests it matches
# PTC_OURS: the perf compared with perf-base, ours by default
skips=$TOP/selftests/perf-test-compare-skip.txt

setup() {	# setup TOOL BINARY
	local dir=/tmp/cmp/$1

	mkdir -p "$dir/bin" "$dir/tests"
	cp -r "$BUILD_DIR/pristine/src/tools/perf/tests/shell" "$dir/tests/"
	ln -sfn "$2" "$dir/bin/perf"
}

# with_tool TOOL CMD...: run CMD where TOOL's perf is "perf" and finds
# upstream's shell tests.
with_tool() {
	local dir=/tmp/cmp/$1

	shift
	(cd "$dir" && PATH=$dir/bin:$PATH "$@")
}

# list TOOL: "number<TAB>description" of each top-level test.
list() {
	with_tool "$1" perf test list 2>&1 |
		sed -n 's/^ *\([0-9][0-9]*\): \(.*\)$/\1\t\2/p'
}

# run TOOL N: the verdict of test N, Ok, FAILED, Skip or Timeout.
run() {
	local out=/tmp/cmp/$1.out rc

	with_tool "$1" timeout -k 10 "$per_test" perf test -vv "$2" </dev/null >"$out" 2>&1
	rc=$?
	cat "$out" >>"$JOB/perf-test-$1.log"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		echo Timeout
		return
	fi
	# a suite with subtests has a verdict line for each: one failing
	# fails it, else one passing passes it
	awk '/[0-9]+(\.[0-9]+)?: .* : (Ok|FAILED!|Skip.*)$/ {
		if ($0 ~ / : FAILED!$/) f = 1
		else if ($0 ~ / : Ok$/) o = 1
		else s = 1
	}
	END { print (f ? "FAILED" : o ? "Ok" : s ? "Skip" : "None") }' "$out"
}

skipped() {	# skipped DESCRIPTION: the reason it is on the skip list
	local pat reason

	while IFS=$'\t' read -r pat reason; do
		case $pat in ''|'#'*) continue ;; esac
		case $1 in *"$pat"*) echo "$reason"; return 0 ;; esac
	done <"$skips"
	return 1
}

setup base "$BUILD_DIR/pristine/perf/perf"
setup ours "${PTC_OURS:-$BUILD_DIR/perf/perf}"
list base >/tmp/cmp/base.all
list ours >/tmp/cmp/ours.list
awk -F'\t' -v re="$only" 're == "" || $2 ~ re' /tmp/cmp/base.all >/tmp/cmp/base.list
: >"$JOB/verdicts.tsv"
: >"$JOB/perf-test-base.log"
: >"$JOB/perf-test-ours.log"
n=$(wc -l </tmp/cmp/base.list)
i=0
while IFS=$'\t' read -r nb desc; do
	i=$((i + 1))
	if reason=$(skipped "$desc"); then
		printf '%s\tlisted\tlisted\t%s\n' "$desc" "$reason" >>"$JOB/verdicts.tsv"
		continue
	fi
	no=$(awk -F'\t' -v d="$desc" '$2 == d { print $1; exit }' /tmp/cmp/ours.list)
	vb=$(run base "$nb")
	if [ -z "$no" ]; then
		vo=Missing
	else
		vo=$(run ours "$no")
	fi
	reruns=
	if [ "$vb" = Ok ] && [ "$vo" != Ok ] && [ -n "$no" ]; then
		ob=0 oo=0
		for _ in 1 2; do
			[ "$(run base "$nb")" = Ok ] && ob=$((ob + 1))
			[ "$(run ours "$no")" = Ok ] && oo=$((oo + 1))
		done
		reruns="base $ob/2 ours $oo/2"
	fi
	printf '%s\t%s\t%s\t%s\n' "$desc" "$vb" "$vo" "$reruns" >>"$JOB/verdicts.tsv"
	echo "[$i/$n] $desc: base $vb, ours $vo${reruns:+ ($reruns)}"
done </tmp/cmp/base.list
# tests only our perf has are not compared; say which
awk -F'\t' 'NR == FNR { b[$2] = 1; next } !($2 in b) { print $2 }' \
	/tmp/cmp/base.all /tmp/cmp/ours.list >"$JOB/ours-only.txt"
echo "==> compared $n tests, $(wc -l <"$JOB/ours-only.txt") more are ours only"
