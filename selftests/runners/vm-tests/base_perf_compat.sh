#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Upstream 6.12 perf (perf-base) on our kernel: perf record -a while BPF
# programs are loaded, attached through links of several types, detached
# and unloaded; perf report and perf script must read the file cleanly,
# with the link records in it (old perf prints them as unknown types).
# Then our perf must read the file upstream perf wrote: perf script
# --show-bpf-events and perf report, exit 0, nothing on stderr, the link
# records decoded by name, as many as upstream perf counts.
# Exit 0 pass, 1 fail, 2 skip.

workload=$BUILD_DIR/kselftest/perf_events/bpf_link_event
command -v perf-base >/dev/null || { echo "skip: no perf-base"; exit 2; }
[ -x "$workload" ] || { echo "skip: $workload not built"; exit 2; }

tmp=$(mktemp -d /tmp/compat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# Every kind of link the kselftest makes.  Their verdict is the kselftest's
# business, and perf record would return it: ignore it here.
perf-base record -q -a -e cpu-clock -o "$tmp/perf.data" -- \
	sh -c "'$workload' >'$tmp/workload.log' 2>&1; true" \
	2>"$tmp/record.err" ||
	fail "perf-base record failed: $(cat "$tmp/record.err")"
perf-base report -i "$tmp/perf.data" --stdio >"$tmp/report" 2>"$tmp/report.err" ||
	fail "perf-base report failed: $(cat "$tmp/report.err")"
perf-base script -i "$tmp/perf.data" --show-bpf-events >"$tmp/script" 2>"$tmp/script.err" ||
	fail "perf-base script failed: $(cat "$tmp/script.err")"
if grep -Eiv '^$|^ *#' "$tmp/report.err" "$tmp/script.err" |
	grep -Eqi 'error|invalid|fail|corrupt'; then
	fail "perf-base complained: $(cat "$tmp/report.err" "$tmp/script.err")"
fi
grep -q 'bpf_link_event' "$tmp/report" || fail "no samples of the workload in the report"

attach=$(grep -c 'PERF_RECORD_BPF_EVENT type 3,' "$tmp/script")
detach=$(grep -c 'PERF_RECORD_BPF_EVENT type 4,' "$tmp/script")
load=$(grep -c 'PERF_RECORD_BPF_EVENT type 1,' "$tmp/script")
echo "perf-base script: $load PROG_LOAD, $attach LINK_ATTACH, $detach LINK_DETACH records"
if [ "$attach" = 0 ] || [ "$attach" != "$detach" ]; then
	fail "perf-base script: $attach LINK_ATTACH, $detach LINK_DETACH records, want as many" \
		"of each, and some"
fi

# Our perf, on the file upstream perf wrote.
perf script -i "$tmp/perf.data" --show-bpf-events >"$tmp/ours" 2>"$tmp/ours.err" ||
	fail "perf script of upstream perf's file: exit $?: $(cat "$tmp/ours.err")"
perf report -i "$tmp/perf.data" --stdio >"$tmp/ours.report" 2>"$tmp/ours.report.err" ||
	fail "perf report of upstream perf's file: exit $?: $(cat "$tmp/ours.report.err")"
# perf record -a on a busy VM may write a few events out of order; both
# perfs then say how many on reading the file.  Anything else is ours.
for f in ours.err ours.report.err; do
	grep -Ev '^Warning:$|^[0-9]+ out of order events recorded\.$' "$tmp/$f" >"$tmp/$f.other"
done
if [ -s "$tmp/ours.err.other" ] || [ -s "$tmp/ours.report.err.other" ]; then
	fail "our perf wrote to stderr: $(cat "$tmp/ours.err" "$tmp/ours.report.err")"
fi
grep -q 'bpf_link_event' "$tmp/ours.report" ||
	fail "our perf report: no samples of the workload: $(head -n 30 "$tmp/ours.report")"
name='link_id [0-9]+, link_type [a-z_]+, attach_type [a-z_0-9]+$'
a=$(grep -Ec "PERF_RECORD_BPF_EVENT type 3, flags 0, id [0-9]+, link_attach, $name" "$tmp/ours")
d=$(grep -Ec "PERF_RECORD_BPF_EVENT type 4, flags 0, id [0-9]+, link_detach, $name" "$tmp/ours")
l=$(grep -c 'PERF_RECORD_BPF_EVENT type 1,' "$tmp/ours")
echo "our perf script: $l PROG_LOAD, $a link_attach, $d link_detach records, decoded"
if [ "$a" != "$attach" ] || [ "$d" != "$detach" ] || [ "$l" != "$load" ]; then
	fail "our perf script: $l PROG_LOAD, $a link_attach, $d link_detach records by name," \
		"want perf-base's $load, $attach and $detach"
fi
exit 0
