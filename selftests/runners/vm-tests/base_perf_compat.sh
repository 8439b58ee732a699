#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Upstream 6.12 perf (perf-base) and ours on our kernel, both perf record
# -a at once while BPF programs are loaded, attached through links of
# several types, detached and unloaded.  perf-base asks for bpf_event
# alone: its file must hold program records only, as on Linux 6.12.  Ours
# asks for link records too (attr.bpf_event_ext): its file must hold them.
# Each perf must read both files cleanly (perf report, perf script
# --show-bpf-events: exit 0, nothing on stderr), perf-base printing our
# link records as unknown types and ours decoding them by name.  perf-base
# warns once that our file's attr has a bit it does not know (in its
# words, "Reserved bits are set"), as any perf does for a newer perf's
# file, and reads on (without the file's event descriptions, naming
# events from their attr): that warning, and only it, is allowed there.
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

# Every kind of link the kselftest makes, under both perfs at once.  Its
# verdict is the kselftest's business, and perf record would return it:
# ignore it here.
# -F 99: two perf record -a at once on a TCG VM lose nothing to samples.
perf record -q -a -e cpu-clock -F 99 -o "$tmp/ours.data" -- \
	perf-base record -q -a -e cpu-clock -F 99 -o "$tmp/base.data" -- \
	sh -c "'$workload' >'$tmp/workload.log' 2>&1; true" \
	2>"$tmp/record.err" ||
	fail "perf record of perf-base record failed: $(cat "$tmp/record.err")"

# read_file PERF DATA NAME [ALLOWED]: PERF report and script of DATA into
# $tmp/NAME.*; fail if either fails or says more than perf record -a on a
# busy VM may (a count of events written out of order), or than the line
# ALLOWED.
read_file() {
	local allowed=${4:-^$}

	"$1" report -i "$tmp/$2" --stdio >"$tmp/$3.report" 2>"$tmp/$3.report.err" ||
		fail "$1 report -i $2: exit $?: $(cat "$tmp/$3.report.err")"
	"$1" script -i "$tmp/$2" --show-bpf-events >"$tmp/$3.script" 2>"$tmp/$3.script.err" ||
		fail "$1 script -i $2: exit $?: $(cat "$tmp/$3.script.err")"
	if cat "$tmp/$3.report.err" "$tmp/$3.script.err" |
		grep -Ev '^$|^ *#|^Warning:$|^[0-9]+ out of order events recorded\.$' |
		grep -Ev "$allowed" | grep -q .; then
		fail "$1 on $2 wrote to stderr: $(cat "$tmp/$3.report.err" "$tmp/$3.script.err")"
	fi
	grep -q 'bpf_link_event' "$tmp/$3.report" ||
		fail "$1 report -i $2: no samples of the workload: $(head -n 30 "$tmp/$3.report")"
}

# count NAME TYPE: BPF_EVENT records of TYPE in $tmp/NAME.script
count() {
	grep -c "PERF_RECORD_BPF_EVENT type $2," "$tmp/$1.script"
}

# link_ids TYPE: the link ids of the link records of TYPE in perf script
# output on stdin, sorted, once each
link_ids() {
	sed -n "s/.*PERF_RECORD_BPF_EVENT type $1, .*link_id \([0-9]*\),.*/\1/p" | sort -u
}

read_file perf-base base.data base_base
read_file perf-base ours.data base_ours \
	'^Reserved bits are set unexpectedly\. Please update perf tool\.$'
read_file perf base.data ours_base
read_file perf ours.data ours_ours

# perf-base's own file: program records only, each perf counting alike.
for f in base_base ours_base; do
	echo "$f: $(count $f 1) PROG_LOAD, $(count $f 2) PROG_UNLOAD," \
		"$(count $f 3) LINK_ATTACH, $(count $f 4) LINK_DETACH records"
	if [ "$(count $f 3)" != 0 ] || [ "$(count $f 4)" != 0 ]; then
		fail "$f: link records in the file of perf-base, which asked for bpf_event alone"
	fi
	[ "$(count $f 1)" -gt 0 ] || fail "$f: no PROG_LOAD record"
done
[ "$(count base_base 1)" = "$(count ours_base 1)" ] ||
	fail "perf-base's file: $(count base_base 1) PROG_LOAD records for perf-base," \
		"$(count ours_base 1) for our perf"

# Our file: link records, an attach for every detach and a detach for
# every attach written while recording (our perf record also writes an
# attach, at time 0, for each link there was when it started, which has
# no detach); perf-base sees them as unknown types, ours decodes each by
# name.
attach=$(count base_ours 3)
detach=$(count base_ours 4)
echo "our file, perf-base script: $attach LINK_ATTACH, $detach LINK_DETACH records"
[ "$detach" -gt 0 ] || fail "our file: no LINK_DETACH record"
link_ids 3 <"$tmp/ours_ours.script" >"$tmp/attached"
link_ids 4 <"$tmp/ours_ours.script" >"$tmp/detached"
unpaired=$(comm -13 "$tmp/attached" "$tmp/detached" | wc -l)
[ "$unpaired" = 0 ] || fail "our file: $unpaired links detached without an attach record"
grep -v ' 0\.000000: ' "$tmp/ours_ours.script" | link_ids 3 >"$tmp/attached_live"
undetached=$(comm -23 "$tmp/attached_live" "$tmp/detached" | wc -l)
[ "$undetached" = 0 ] ||
	fail "our file: $undetached links attached while recording without a detach record"
name='link_id [0-9]+, link_type [a-z_]+, attach_type [a-z_0-9]+$'
a=$(grep -Ec "PERF_RECORD_BPF_EVENT type 3, flags 0, id [0-9]+, link_attach, $name" "$tmp/ours_ours.script")
d=$(grep -Ec "PERF_RECORD_BPF_EVENT type 4, flags 0, id [0-9]+, link_detach, $name" "$tmp/ours_ours.script")
echo "our file, our perf script: $a link_attach, $d link_detach records, decoded"
if [ "$a" != "$attach" ] || [ "$d" != "$detach" ] ||
   [ "$(count ours_ours 1)" != "$(count base_ours 1)" ]; then
	fail "our file: $a link_attach, $d link_detach, $(count ours_ours 1) PROG_LOAD records" \
		"by our perf, want perf-base's $attach, $detach and $(count base_ours 1)"
fi
exit 0
