#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Upstream 6.12 perf (perf-base) on our kernel: perf record -a while BPF
# programs are loaded, attached through links of several types, detached
# and unloaded; perf report and perf script must read the file cleanly,
# with the link records in it (old perf prints them as unknown types).
# Exit 0 pass, 1 fail, 2 skip.

workload=$BUILD_DIR/kselftest/perf_events/bpf_event
command -v perf-base >/dev/null || { echo "skip: no perf-base"; exit 2; }
[ -x "$workload" ] || { echo "skip: $workload not built"; exit 2; }

tmp=$(mktemp -d /tmp/compat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# -f bpf_link: the link tests only.  Their verdict is the kselftest's
# business, and perf record would return it: ignore it here.
perf-base record -q -a -e cpu-clock -o "$tmp/perf.data" -- \
	sh -c "'$workload' -f bpf_link >'$tmp/workload.log' 2>&1; true" \
	2>"$tmp/record.err" ||
	fail "perf-base record failed: $(cat "$tmp/record.err")"
perf-base report -i "$tmp/perf.data" --stdio >"$tmp/report" 2>"$tmp/report.err" ||
	fail "perf-base report failed: $(cat "$tmp/report.err")"
perf-base script -i "$tmp/perf.data" --show-bpf-events >"$tmp/script" 2>"$tmp/script.err" ||
	fail "perf-base script failed: $(cat "$tmp/script.err")"
if grep -Eiv '^$|^ *#' "$tmp/report.err" "$tmp/script.err" | grep -Eqi 'error|invalid|fail|corrupt'; then
	fail "perf-base complained: $(cat "$tmp/report.err" "$tmp/script.err")"
fi
grep -q 'bpf_event' "$tmp/report" || fail "no samples of the workload in the report"

attach=$(grep -c 'PERF_RECORD_BPF_EVENT type 3,' "$tmp/script")
detach=$(grep -c 'PERF_RECORD_BPF_EVENT type 4,' "$tmp/script")
load=$(grep -c 'PERF_RECORD_BPF_EVENT type 1,' "$tmp/script")
echo "perf-base script: $load PROG_LOAD, $attach LINK_ATTACH, $detach LINK_DETACH records"
[ "$attach" -gt 0 ] && [ "$attach" = "$detach" ] ||
	fail "want as many LINK_DETACH as LINK_ATTACH records, and some"
exit 0
