#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the VM (perf-test-compare.sh, beside it, boots it): upstream
# 6.12's own perf test suite, run by upstream's perf (perf-base) and by
# ours.  Both run upstream's tests from a copy of upstream's tools/perf
# layout (tests/, with scripts/ and util/ beside it) where "perf" is the
# binary under test, so that a verdict depends on the binary alone.  Each
# test runs on its own under a timeout; when ours does worse than
# perf-base (Ok > Skip > anything else), each runs twice more.
# Writes $JOB/verdicts.tsv, one line a test: description, first verdict
# of perf-base, of ours, best verdict of perf-base, of ours over all runs.
set -u
. "$TOP/selftests/runners/perf-results.sh"
per_test=${PTC_TIMEOUT:-600}
export PTC_ONLY=${PTC_ONLY:-}	# an ERE: compare only the tests it matches
# PTC_OURS: the perf compared with perf-base, ours by default
skips=$TOP/selftests/runners/perf-test-compare-skip.txt
pristine=$BUILD_DIR/pristine/src/tools/perf

setup() {	# setup TOOL BINARY
	local dir=/tmp/cmp/$1

	mkdir -p "$dir/bin"
	cp -r "$pristine/tests" "$dir/"
	ln -sfn "$pristine/scripts" "$dir/scripts"
	ln -sfn "$pristine/util" "$dir/util"
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

# run TOOL N: the verdict of test N: Ok, Skip, FAILED, Timeout or None.
run() {
	local out=/tmp/cmp/$1.out rc

	with_tool "$1" timeout -k 10 "$per_test" perf test -vv "$2" </dev/null >"$out" 2>&1
	rc=$?
	cat "$out" >>"$JOB/perf-test-$1.log"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		echo Timeout
		return
	fi
	# A suite with subtests has a verdict line for each: one failing
	# fails it, else one passing passes it.
	sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$out" >"$out.plain"
	perf_results "$out.plain" |
		awk -F'\t' '$1 == "FAILED!" { f = 1 } $1 == "Ok" { o = 1 } $1 == "Skip" { s = 1 }
		END { print (f ? "FAILED" : o ? "Ok" : s ? "Skip" : "None") }'
}

better() {	# better V1 V2: the better of two verdicts
	if [ "$(rank "$2")" -gt "$(rank "$1")" ]; then echo "$2"; else echo "$1"; fi
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
for t in base.all ours.list; do
	[ -s /tmp/cmp/$t ] || { echo "no tests listed by the ${t%.*} perf"; exit 1; }
done
awk -F'\t' 'ENVIRON["PTC_ONLY"] == "" || $2 ~ ENVIRON["PTC_ONLY"]' \
	/tmp/cmp/base.all >/tmp/cmp/base.list
: >"$JOB/verdicts.tsv"
: >"$JOB/perf-test-base.log"
: >"$JOB/perf-test-ours.log"
n=$(wc -l </tmp/cmp/base.list)
i=0
while IFS=$'\t' read -r nb desc; do
	i=$((i + 1))
	if reason=$(skipped "$desc"); then
		printf '%s\tlisted\tlisted\t\t%s\n' "$desc" "$reason" >>"$JOB/verdicts.tsv"
		continue
	fi
	no=$(DESC=$desc awk -F'\t' '$2 == ENVIRON["DESC"] { print $1; exit }' \
		/tmp/cmp/ours.list)
	vb=$(run base "$nb")
	if [ -z "$no" ]; then
		printf '%s\t%s\tMissing\t%s\tMissing\n' "$desc" "$vb" "$vb" >>"$JOB/verdicts.tsv"
		echo "[$i/$n] $desc: base $vb, missing from ours"
		continue
	fi
	vo=$(run ours "$no")
	bb=$vb bo=$vo again=
	if [ "$(rank "$vo")" -lt "$(rank "$vb")" ]; then
		for _ in 1 2; do
			bb=$(better "$bb" "$(run base "$nb")")
			bo=$(better "$bo" "$(run ours "$no")")
		done
		again=", best of 3: base $bb, ours $bo"
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$desc" "$vb" "$vo" "$bb" "$bo" >>"$JOB/verdicts.tsv"
	echo "[$i/$n] $desc: base $vb, ours $vo$again"
done </tmp/cmp/base.list
# tests only our perf has are not compared; say which
awk -F'\t' 'NR == FNR { b[$2] = 1; next } !($2 in b) { print $2 }' \
	/tmp/cmp/base.all /tmp/cmp/ours.list >"$JOB/ours-only.txt"
echo "==> compared $n tests, $(wc -l <"$JOB/ours-only.txt") more are ours only"
