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

# Children that spin for 1 s of wall time: a shell starts in a few ms,
# where perf's own start-up in a TCG VM takes 0.4 to 0.7 s and varies.
cat >"$tmp/work.sh" <<'WORK'
timeout 1 sh -c 'while :; do :; done' &
sh -c "timeout 1 sh -c 'while :; do :; done'" &
wait
WORK

bperf_stat inh -e task-clock -- sh "$tmp/work.sh"
plain_stat inh_ref -e task-clock -- sh "$tmp/work.sh"
inh_ref=$(bperf_get inh_ref task-clock)
bperf_check_util "workload, inherited" inh_ref inh task-clock 10

bperf_stat noinh --no-inherit -e task-clock -- sh "$tmp/work.sh"
plain_stat noinh_ref --no-inherit -e task-clock -- sh "$tmp/work.sh"
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
