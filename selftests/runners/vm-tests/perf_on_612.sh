#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Our perf where the kernel refuses attr.bpf_event_ext, as Linux 6.12
# refuses any bit it does not know: attr612.so (selftests/vm/guest) makes
# perf_event_open() answer EINVAL for such an attr, as 6.12's
# perf_copy_attr() does.  perf must fall back to what the kernel offers:
# perf record drops the bit and records program records, perf bpf events
# says once that there are no link records and shows the program records,
# --type link is refused with a reason, perf bpf top runs and says once
# that it gets no link records nor final counts.  The same runs
# without the library, on our kernel, must show link records: the test
# tells the two apart.  Links that exist before perf record starts are
# synthesized into its file on our kernel, and left out where there are
# no link records (the file would show them attached for ever).
# Exit 0 pass, 1 fail, 2 skip.

shim=$BUILD_DIR/tools/vm/attr612.so
[ -f "$shim" ] || { echo "skip: $shim not built"; exit 2; }

tmp=$(mktemp -d /tmp/on612.XXXXXX)
cg=/sys/fs/cgroup/on612_$$
holder=
cleanup() {
	exec 3>&-
	if [ -n "$holder" ]; then
		kill "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	fi
	rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap '' PIPE
fail() {
	echo "FAIL: $*"
	exit 1
}
mkdir "$cg" || fail "cannot make $cg"

# The workload, perf test -w bpf_links links: five programs, each attached
# through a link, then detached and unloaded (it waits for a line on
# stdin: none comes).

# record NAME [LD_PRELOAD]: perf record of the workload into $tmp/NAME.data; the
# BPF_EVENT types of its records, one a line, in $tmp/NAME.types
record() {
	LD_PRELOAD=$2 perf record -q -e cpu-clock -o "$tmp/$1.data" -- \
		perf test -w bpf_links links "$cg" </dev/null >/dev/null 2>"$tmp/$1.err" ||
		fail "perf record ($1): exit $?: $(cat "$tmp/$1.err")"
	perf script -i "$tmp/$1.data" --show-bpf-events 2>"$tmp/$1.script.err" |
		sed -n 's/.*PERF_RECORD_BPF_EVENT type \([0-9]*\),.*/\1/p' >"$tmp/$1.types"
	perf evlist -v -i "$tmp/$1.data" >"$tmp/$1.evlist" 2>&1
}

record on612 "$shim"
record ours ""
n612=$(grep -c '^[34]$' "$tmp/on612.types")
nours=$(grep -c '^[34]$' "$tmp/ours.types")
echo "perf record: $(grep -c '^1$' "$tmp/on612.types") PROG_LOAD, $n612 link records" \
	"where the kernel refuses bpf_event_ext; $nours link records on ours"
[ "$n612" = 0 ] || fail "perf record: link records where the kernel refuses bpf_event_ext"
grep -q '^1$' "$tmp/on612.types" || fail "perf record: no PROG_LOAD where the kernel refuses bpf_event_ext"
grep -q 'bpf_event: 1' "$tmp/on612.evlist" ||
	fail "perf evlist of perf record's file: no bpf_event: $(head -n 5 "$tmp/on612.evlist")"
grep -q 'bpf_event_ext' "$tmp/on612.evlist" &&
	fail "perf record kept bpf_event_ext in its attr: $(grep bpf_event "$tmp/on612.evlist")"
[ "$nours" = 10 ] || fail "perf record on our kernel: $nours link records, want 10"
grep -q 'bpf_event_ext: 1' "$tmp/ours.evlist" ||
	fail "perf record on our kernel did not ask for bpf_event_ext"

# Links held across perf record: synthesized on our kernel only.
# The fifo is opened read-write here, which never blocks; a line on it
# lets the workload go.
mkfifo "$tmp/hold" || fail "mkfifo"
exec 3<>"$tmp/hold"
perf test -w bpf_links links "$cg" <"$tmp/hold" >"$tmp/held.out" 2>&1 &
holder=$!
for _ in $(seq 300); do
	grep -q '^ready' "$tmp/held.out" && break
	kill -0 "$holder" 2>/dev/null || break
	sleep 0.1
done
grep -q '^ready' "$tmp/held.out" || fail "the workload holding links: $(cat "$tmp/held.out")"
held=$(awk '$1 == "link" { print $3 }' "$tmp/held.out")
[ "$(echo "$held" | wc -w)" = 5 ] || fail "the workload holds links: $held"
for run in on612 ours; do
	shim_of=""
	[ $run = on612 ] && shim_of=$shim
	LD_PRELOAD=$shim_of perf record -q -e cpu-clock -o "$tmp/held_$run.data" -- true \
		2>"$tmp/held_$run.err" || fail "perf record ($run, links held): exit $?: $(cat "$tmp/held_$run.err")"
	perf script -i "$tmp/held_$run.data" --show-bpf-events 2>/dev/null |
		grep 'PERF_RECORD_BPF_EVENT type 3,' >"$tmp/held_$run.links"
done
[ -s "$tmp/held_on612.links" ] &&
	fail "perf record synthesized link records where the kernel refuses bpf_event_ext: $(head -n 3 "$tmp/held_on612.links")"
for id in $held; do
	grep -q "link_attach, link_id $id," "$tmp/held_ours.links" ||
		fail "perf record on our kernel did not synthesize held link $id: $(cat "$tmp/held_ours.links")"
done
echo "perf record with 5 links held: $(wc -l <"$tmp/held_ours.links") LINK_ATTACH synthesized on our kernel, none where it refuses bpf_event_ext"
echo >&3 || fail "the workload holding links went: $(cat "$tmp/held.out")"
for _ in $(seq 300); do
	kill -0 "$holder" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$holder" 2>/dev/null && fail "the workload holding links did not end within 30 s"
wait "$holder" || fail "the workload holding links: exit $?: $(cat "$tmp/held.out")"
holder=
exec 3>&-

# perf bpf events: one warning, program records, no link records.
LD_PRELOAD=$shim perf bpf events -x, -- perf test -w bpf_links links "$cg" \
	</dev/null >"$tmp/events" 2>"$tmp/events.err" ||
	fail "perf bpf events: exit $?: $(cat "$tmp/events.err")"
warn=$(grep -c 'this kernel writes no link records' "$tmp/events.err")
[ "$warn" = 1 ] || fail "perf bpf events: said $warn times that there are no link records: $(cat "$tmp/events.err")"
grep -q ',prog_load,.*pbt_cgroup' "$tmp/events" ||
	fail "perf bpf events: no prog_load of pbt_cgroup: $(head -n 20 "$tmp/events")"
grep -q ',link_attach,\|,link_detach,' "$tmp/events" &&
	fail "perf bpf events: link records where the kernel refuses bpf_event_ext"
echo "perf bpf events: program records, no link records, one warning"

LD_PRELOAD=$shim perf bpf events --type link -- true >"$tmp/link.out" 2>"$tmp/link.err" &&
	fail "perf bpf events --type link: exit 0 where there are no link records"
grep -q 'this kernel writes no link records' "$tmp/link.err" ||
	fail "perf bpf events --type link: no reason given: $(cat "$tmp/link.err")"
echo "perf bpf events --type link: refused, saying why"

LD_PRELOAD=$shim perf bpf top -x, -I 200 --interval-count 2 >"$tmp/top" 2>"$tmp/top.err" ||
	fail "perf bpf top: exit $?: $(cat "$tmp/top.err")"
[ "$(grep -c 'writes no link records nor final counts' "$tmp/top.err")" = 1 ] ||
	fail "perf bpf top: does not say once what this kernel lacks: $(cat "$tmp/top.err")"
echo "perf bpf top: runs, saying once what this kernel lacks"
exit 0
