#!/bin/bash
# perf stat --bpf-counters counts forked children, unless --no-inherit
# SPDX-License-Identifier: GPL-2.0
#
# The parent of each workload sleeps while its children (and a
# grandchild) burn a CPU and exit: with inheritance a bperf session must
# count about what perf stat counts, the children included; with
# --no-inherit about the parent alone, as perf stat --no-inherit does.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
tmp=$(bperf_dir)

# A child and a grandchild of the workload spin until a common deadline
# 3 s after the workload started, each in a forked shell (no exec), and
# add how long each spun (us) to the file named by $1.  They run all that
# time, so a session that counts them counts their sum, plus the little
# the shells do besides.  Sessions one after the other cannot be compared
# with each other: how long perf and the workload take to start varies by
# 100s of ms in a TCG VM.
cat >"$tmp/work.sh" <<'WORK'
end=$((${EPOCHREALTIME/./} + 3000000))
spin() {
	local start=${EPOCHREALTIME/./}

	while ((${EPOCHREALTIME/./} < end)); do :; done
	echo $((${EPOCHREALTIME/./} - start)) >>"$1"
}
spin "$1" &
(spin "$1" & wait) &
wait
WORK

# inherited NAME [OPTION...]: count the workload with perf stat
# OPTION..., to NAME; the count must be what the children spun.
inherited() {
	local out=$1 count spun

	shift
	rm -f "$tmp/$out.spun"
	perf stat "$@" -x, -o "$tmp/$out.out" -e task-clock -- \
		bash "$tmp/work.sh" "$tmp/$out.spun" 2>"$tmp/$out.err"
	count=$(bperf_get "$out" task-clock)
	[ "$(wc -l <"$tmp/$out.spun" 2>/dev/null)" = 2 ] ||
		bperf_fail "$out: the workload's children did not spin"
	spun=$(awk '{ s += $1 } END { printf "%.2f\n", s / 1000 }' "$tmp/$out.spun")
	bperf_check "$out: task-clock vs the children's time spun" "$spun" "$count" 10
}

inherited inh --bpf-counters --bpf-attr-map "$(bperf_attr_map)"
inherited inh_ref
inh_ref=$(bperf_get inh_ref task-clock)

bperf_stat noinh --no-inherit -e task-clock -- bash "$tmp/work.sh" "$tmp/noinh.spun"
plain_stat noinh_ref --no-inherit -e task-clock -- bash "$tmp/work.sh" "$tmp/noinh.spun"
noinh=$(bperf_get noinh task-clock)
noinh_ref=$(bperf_get noinh_ref task-clock)
echo "workload, --no-inherit: $noinh (reference $noinh_ref)"
# The parent alone runs for a few milliseconds: compare with what the
# children counted, not with each other.
awk -v n="$noinh" -v r="$noinh_ref" -v i="$inh_ref" \
	'BEGIN { exit !(n < i / 4 && r < i / 4 && n - r < i / 10 && r - n < i / 10) }' ||
	bperf_fail "--no-inherit: $noinh is not about the parent alone ($noinh_ref of $inh_ref)"

# -p: the process forks its children only after both sessions attached.
for mode in inherit no-inherit; do
	opt=
	[ $mode = inherit ] || opt=--no-inherit
	bperf_target kids 1 2
	pid=$(cat "$tmp/kids.pid")
	# shellcheck disable=SC2086 # $opt may be empty
	bperf_both kids $opt -e task-clock -p "$pid"
	kids=$(bperf_get kids task-clock)
	kids_ref=$(bperf_get kids_ref task-clock)
	if [ $mode = inherit ]; then
		bperf_check "-p, children forked after the start" "$kids_ref" "$kids" 15
		kids_inh=$kids_ref
	else
		echo "-p --no-inherit: $kids (reference $kids_ref)"
		awk -v n="$kids" -v i="$kids_inh" 'BEGIN { exit !(n < i / 4) }' ||
			bperf_fail "-p --no-inherit counted the children: $kids of $kids_inh"
	fi
done

bperf_none_pinned
exit 0
