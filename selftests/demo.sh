#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make run': runs inside the VM and shows the series at work; 'make check'
# runs it too, as the vm-test demo.
#  1. two perf stat --bpf-counters sessions sharing one set of counters:
#     bperf's pinned maps, its one leader program and its links, while both
#     sessions hold them;
#  2. the PERF_RECORD_BPF_EVENT and PERF_RECORD_KSYMBOL records of a BPF
#     program loaded and unloaded while perf record -a runs.
# Every step checks what it shows.  The sessions and the workload wait for
# the demo, never the other way round: whatever the demo looks at stays
# there until it lets go.  On a failure the last line says which step
# failed and why, and the exit status is 1.
set -u

work=$(mktemp -d /tmp/demo.XXXXXX)
demo_obj=$BUILD_DIR/tools/vm/demo.bpf.o
attr=/sys/fs/bpf/bperf_attr_map
pin=/sys/fs/bpf/perf_demo
pids=
current=start
ncpus=$(getconf _NPROCESSORS_ONLN)

failed=

# On the way out, whatever the way: end what is left and, after that,
# say why the demo failed, so that it is the last line.
cleanup() {
	local p

	exec 9>&-
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -f "$pin"
	rm -rf "$work"
	[ -z "$failed" ] || echo "$failed"
}
trap cleanup EXIT

step() {
	current=$*
	printf '\n=== %s\n' "$*"
}

fail() {
	failed="demo FAILED in step \"$current\": $(echo "$*" | tr -s ' \n' ' ')"
	exit 1
}

# wait_for SECS WHAT CMD...: run CMD every 0.1 s until it succeeds; fail
# the demo, naming WHAT, if it has not within SECS seconds.
wait_for() {
	local secs=$1 what=$2 i

	shift 2
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	fail "timed out after ${secs}s waiting for $what"
}

both_started() {
	[ -e "$work/started1" ] && [ -e "$work/started2" ]
}

# bperf_progs: id and name of each loaded program whose name starts with
# bperf_, one a line.
bperf_progs() {
	bpftool -j prog show | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("bperf_"):
        print(p["id"], p["name"])'
}

no_bperf_progs() {
	[ -z "$(bperf_progs)" ]
}

prog_gone() {
	! bpftool prog show id "$1" >/dev/null 2>&1
}

step "perf under test: $(perf version); upstream: $(perf-base version)"
command -v bpftool >/dev/null || fail "bpftool not found"
[ -e "$attr" ] && fail "$attr is already pinned: another bperf session runs"

step "two 'perf stat --bpf-counters -e cpu-clock -a' sessions at once"
# The workloads wait on a lock the demo holds: the sessions count until
# the demo has looked at them and lets go.
exec 9>"$work/lock"
flock -x 9
for s in 1 2; do
	perf stat --bpf-counters -e cpu-clock -a -o "$work/stat$s" -- \
		sh -c "touch $work/started$s; flock -s $work/lock true" 9>&- &
	pids="$pids $!"
done
# perf stat enables the counters before it starts the workload.
wait_for 180 "both sessions to start counting" both_started
echo "both sessions count now."

echo "--- bperf's pinned state: the attr map, and the maps in ${attr}_dir"
ls -d "$attr" || fail "$attr is not pinned"
(cd "${attr}_dir" && echo *)
n=$(bpftool -j map dump pinned "$attr" | grep -o '"key":\[' | wc -l)
echo "events in the attr map: $n (cpu-clock, counted once for both sessions)"
[ "$n" = 1 ] || fail "want 1 event in $attr, found $n"

echo "--- BPF programs: one leader for every session and event"
bperf_progs >"$work/progs"
cat "$work/progs"
leader=$(awk '$2 == "bperf_switch" { print $1 }' "$work/progs")
[ "$(echo "$leader" | wc -w)" = 1 ] ||
	fail "want one bperf_switch program, found: $(tr '\n' ' ' <"$work/progs")"

echo "--- their links, and the processes holding them: both sessions"
# One line a link of a bperf program; fails unless every session holds
# the leader's link.
# shellcheck disable=SC2086 # $pids: one argument per session
bpftool -j link show | python3 -c '
import json, sys
progs = dict(l.split() for l in open(sys.argv[1]))
leader, sessions = sys.argv[2], set(sys.argv[3:])
ok = False
for l in json.load(sys.stdin):
    prog = str(l.get("prog_id"))
    if prog not in progs:
        continue
    held = {str(p["pid"]) for p in l.get("pids", [])}
    print("link %d: %s, program %s (%s) on %s, held by %s" % (l["id"], l["type"],
          prog, progs[prog], l.get("tp_name", "?"),
          ", ".join("%s(%d)" % (p["comm"], p["pid"]) for p in l.get("pids", []))))
    ok |= prog == leader and sessions <= held
sys.exit(not ok)' "$work/progs" "$leader" $pids ||
	fail "the leader's link is not held by both sessions ($pids)"

echo "--- the sessions end once the demo lets go of the lock"
exec 9>&-
for p in $pids; do
	wait "$p" || fail "session $p failed: $(cat "$work"/stat*)"
done
pids=
for s in 1 2; do
	echo "session $s:"
	grep -E 'cpu-clock|elapsed' "$work/stat$s" | sed -E 's/^ +/  /'
	# -a: each CPU counts all the time the session does
	u=$(awk '/msec +cpu-clock/ && / CPUs utilized/ { print $(NF - 2) }' "$work/stat$s")
	awk -v u="${u:-0}" -v n="$ncpus" 'BEGIN { exit !(u > 0.9 * n && u < 1.1 * n) }' ||
		fail "session $s: ${u:-no} CPUs utilized, want about $ncpus: $(cat "$work/stat$s")"
done
echo "each session counted the $ncpus CPUs over its own time."

echo "--- after the last session: nothing pinned, no bperf program loaded"
[ -e "$attr" ] && fail "$attr is still pinned"
wait_for 60 "bperf's programs to be unloaded" no_bperf_progs
echo "nothing left."

step "perf record -a while a BPF program is loaded and unloaded"
[ -f "$demo_obj" ] || fail "$demo_obj missing: make build"
# The workload stops only once the program is gone: its unload record is
# written when the last reference goes, which bpffs drops after an RCU
# grace period.
cat >"$work/load.sh" <<EOF
bpftool prog load $demo_obj $pin || exit 1
bpftool prog show pinned $pin | head -n 1 | tee $work/prog
id=\$(cut -d: -f1 $work/prog)
rm $pin
for i in \$(seq 600); do
	bpftool prog show id \$id >/dev/null 2>&1 || break
	sleep 0.1
done
bpftool prog show id \$id >/dev/null 2>&1 && exit 1
echo "removed $pin: last reference gone, program \$id unloaded"
EOF
perf record -q -a -e cpu-clock -o "$work/perf.data" -- sh "$work/load.sh" \
	2>"$work/record.err" || fail "perf record failed: $(cat "$work/record.err")"
id=$(cut -d: -f1 "$work/prog")
[ -n "$id" ] || fail "the program was not loaded"
prog_gone "$id" || fail "program $id is still loaded"

echo "--- perf script --show-bpf-events: the records of program $id"
perf script -i "$work/perf.data" --show-bpf-events >"$work/script" 2>"$work/script.err" ||
	fail "perf script failed: $(cat "$work/script.err")"
grep -E "PERF_RECORD_BPF_EVENT .*id $id\$|PERF_RECORD_KSYMBOL .*_demo_nanosleep\$" \
	"$work/script" | sed -E 's/^ +//' | tee "$work/records"
echo "(type 1 = PROG_LOAD, 2 = PROG_UNLOAD; KSYMBOL flags 0x1 = unregister)"
for want in "PERF_RECORD_BPF_EVENT type 1,.* id $id\$" \
	    "PERF_RECORD_BPF_EVENT type 2,.* id $id\$" \
	    "PERF_RECORD_KSYMBOL .* flags 0x0 .*_demo_nanosleep\$" \
	    "PERF_RECORD_KSYMBOL .* flags 0x1 .*_demo_nanosleep\$"; do
	[ "$(grep -Ec "$want" "$work/records")" = 1 ] ||
		fail "want one record matching '$want' in perf script's output"
done

echo "--- perf report --stdio --sort comm (samples taken meanwhile)"
perf report -i "$work/perf.data" --stdio --sort comm >"$work/report" 2>"$work/report.err" ||
	fail "perf report failed: $(cat "$work/report.err")"
grep -v '^#' "$work/report" | grep -v '^$' | head -n 8
grep -Eq '^ +[0-9.]+% +bpftool *$' "$work/report" ||
	fail "no samples of bpftool in the report"

step "done: every step checked what it showed"
