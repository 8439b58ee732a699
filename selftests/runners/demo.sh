#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make run': runs inside the VM and shows the series at work; 'make check'
# runs it too, as the vm-test demo.
#  1. two perf stat --bpf-counters sessions sharing one set of counters,
#     one CPU-wide and one counting a task tree: bperf's pinned maps, the
#     programs both hold, and the links only the task session holds;
#  2. the PERF_RECORD_BPF_EVENT and PERF_RECORD_KSYMBOL records of a BPF
#     program loaded and unloaded while perf record -a runs;
#  3. perf bpf events streaming five programs and their links (cgroup,
#     raw_tp, fentry, perf_event, xdp) as they come and go, and perf bpf
#     list showing them while they are there;
#  4. perf bpf top watching a program that runs over and over: its rate,
#     the time of a run on average and its percentiles, the distribution
#     of its run times (--hist) and the cgroup that drove its runs
#     (--split).
# Every step checks what it shows.  The sessions and the workload wait for
# the demo, never the other way round: whatever the demo looks at stays
# there until it lets go.  Every wait has a deadline.  On a failure the
# last line says which step failed and why, and the exit status is 1.
set -u

work=$(mktemp -d /tmp/demo.XXXXXX)
demo_obj=$BUILD_DIR/tools/vm/demo.bpf.o
attr=/sys/fs/bpf/bperf_attr_map
pin=/sys/fs/bpf/perf_demo
ncpus=$(getconf _NPROCESSORS_ONLN)
pids=
ours=
events=
links=
loop=
loopcg=
cgroup=
current=start
failed=

# On the way out, whatever the way: let the sessions end as they would,
# kill what does not, remove what the demo pinned and, last, say why the
# demo failed.  perf stat dies on SIGTERM without cleaning up, so a
# session is killed only once it had its chance.
cleanup() {
	local p

	exec 9>&-
	for p in $pids; do
		until_deadline 60 gone "$p" || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "$links" ]; then
		echo go >&8
		until_deadline 60 gone "$links" || kill -KILL "$links" 2>/dev/null
	fi
	exec 8>&-
	if [ -n "$loop" ]; then
		echo end >&7
		echo end >&7
		until_deadline 60 gone "$loop" || kill -KILL "$loop" 2>/dev/null
	fi
	exec 7>&-
	if [ -n "$events" ]; then
		kill -INT "$events" 2>/dev/null
		until_deadline 60 gone "$events" || kill -KILL "$events" 2>/dev/null
	fi
	wait 2>/dev/null
	[ -z "$cgroup" ] || rmdir "$cgroup"
	[ -z "$loopcg" ] || rmdir "$loopcg"
	rm -f "$pin"
	# the demo refused to start with them there: they are its own
	[ -z "$ours" ] || rm -rf "$attr" "${attr}_dir"
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

# until_deadline SECS CMD...: run CMD until it succeeds or SECS seconds
# have passed, whichever comes first; say which.
until_deadline() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# wait_for SECS WHAT CMD...: until_deadline, failing the demo on time out.
wait_for() {
	local secs=$1 what=$2

	shift 2
	until_deadline "$secs" "$@" || fail "no $what after ${secs}s"
}

gone() {
	! kill -0 "$1" 2>/dev/null
}

# both_started: both workloads have started, so both sessions count;
# fails the demo if a session ended before.
both_started() {
	local s=1 p

	for p in $pids; do
		[ -e "$work/started$s" ] || ! gone "$p" ||
			fail "session $s ended before its workload ran: $(cat "$work/err$s")"
		s=$((s + 1))
	done
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

events_reading() {
	gone "$events" && fail "perf bpf events ended: $(cat "$work/events.err")"
	grep -q 'reading the records' "$work/events.err"
}

links_ready() {
	gone "$links" && fail "the workload ended: $(cat "$work/links.err")"
	grep -qx ready "$work/links"
}

loop_ready() {
	gone "$loop" && fail "the loop workload ended: $(cat "$work/loop.err")"
	# -s: the file may not be there yet
	grep -qsx ready "$work/loop"
}

# all_unloaded: perf bpf events has shown the unload of each program of
# the workload.
all_unloaded() {
	local p

	gone "$events" && fail "perf bpf events ended: $(cat "$work/events.err")"
	for p in $(awk '$1 == "prog" { print $3 }' "$work/links"); do
		grep -Eq " prog_unload +prog $p " "$work/events" || return 1
	done
}

step "perf under test: $(perf version); upstream: $(perf-base version)"
command -v bpftool >/dev/null || fail "bpftool not found"
[ -e "$attr" ] || [ -e "${attr}_dir" ] &&
	fail "$attr is already pinned: another bperf session runs"
ours=1

step "'perf stat --bpf-counters -e cpu-clock', with -a and of a workload, at once"
# The workloads wait on a lock the demo holds: the sessions count until
# the demo has looked at them and lets go.  Session 1 counts the CPUs,
# session 2 its workload, which spins on the lock (a shell and the
# flock processes it forks).
exec 9>"$work/lock"
flock -x 9
perf stat --bpf-counters -e cpu-clock -a -o "$work/stat1" -- \
	sh -c 'touch "$0"; flock -s "$1" true' "$work/started1" "$work/lock" \
	2>"$work/err1" 9>&- &
pids="$pids $!"
perf stat --bpf-counters -e cpu-clock -o "$work/stat2" -- \
	sh -c 'touch "$0"; until flock -n -s "$1" true; do :; done' \
	"$work/started2" "$work/lock" 2>"$work/err2" 9>&- &
pids="$pids $!"
# perf stat enables the counters before it starts the workload.
wait_for 180 "start of both sessions" both_started
echo "both sessions count now."

echo "--- bperf's pinned state: the attr map, and in ${attr}_dir the maps and"
echo "    the link of bperf_cpuhp, which follows CPU hotplug"
ls -d "$attr" || fail "$attr is not pinned"
maps=$(cd "${attr}_dir" && echo *)
echo "$maps"
want="bperf_cpu bperf_cpuhp bperf_ctl bperf_events bperf_hotplug bperf_opened"
[ "$maps" = "$want bperf_roots bperf_sessions bperf_slots bperf_tasks bperf_totals" ] ||
	fail "unexpected maps in ${attr}_dir: $maps"
n=$(bpftool -j map dump pinned "$attr" | grep -o '"key":\[' | wc -l)
echo "events in the attr map: $n (cpu-clock, counted once for both sessions)"
[ "$n" = 1 ] || fail "want 1 event in $attr, found $n"

echo "--- BPF programs: one set for every session and event"
bperf_progs >"$work/progs"
cat "$work/progs"
for p in bperf_read bperf_switch bperf_fork bperf_exit bperf_root bperf_cpuhp; do
	[ "$(awk -v p=$p '$2 == p' "$work/progs" | wc -l)" = 1 ] ||
		fail "want one $p program, found: $(cat "$work/progs")"
done

echo "--- their links, and the processes holding them: the task session only"
# One line a link of a bperf program; fails unless the task session, and
# not the CPU-wide one, holds each of the three.  Nothing of bperf runs
# on a context switch for a CPU-wide session: it reads on demand.  The
# link of bperf_cpuhp, which runs on CPU hotplug only, is pinned with
# the maps: no process holds it.
# shellcheck disable=SC2086 # $pids: one argument per session
bpftool -j link show | python3 -c '
import json, sys
progs = dict(l.split() for l in open(sys.argv[1]))
cpu, task = sys.argv[2:]
held, linked, cpuhp = 0, [], 0
for l in json.load(sys.stdin):
    prog = str(l.get("prog_id"))
    if prog not in progs:
        continue
    pids = l.get("pids", [])
    print("link %d: %s, program %s (%s) on %s, held by %s" % (l["id"], l["type"],
          prog, progs[prog], l.get("tp_name", "?"),
          ", ".join("%s(%d)" % (p["comm"], p["pid"]) for p in pids)))
    if progs[prog] == "bperf_cpuhp":
        cpuhp += 1
        continue
    holders = {str(p["pid"]) for p in pids}
    held += task in holders and cpu not in holders
    linked.append(progs[prog])
sys.exit(sorted(linked) != ["bperf_exit", "bperf_fork", "bperf_switch"] or
         held != 3 or cpuhp != 1)' \
	"$work/progs" $pids ||
	fail "want one link each of bperf_switch, bperf_fork and bperf_exit," \
		"each held by the task session, not the CPU-wide one ($pids)," \
		"and one of bperf_cpuhp"

echo "--- the sessions end once the demo lets go of the lock"
exec 9>&-
s=1
for p in $pids; do
	wait_for 120 "end of session $s" gone "$p"
	wait "$p" || fail "session $s failed: $(cat "$work/err$s")"
	s=$((s + 1))
done
pids=
# Session 1 (-a): each CPU counts all the time the session does.
lo=$(awk -v n="$ncpus" 'BEGIN { print 0.9 * n }')
hi=$(awk -v n="$ncpus" 'BEGIN { print 1.1 * n }')
echo "session 1:"
grep -E 'cpu-clock|elapsed' "$work/stat1" | sed -E 's/^ +/  /'
u=$(sed -nE 's/.* msec +cpu-clock .* ([0-9.]+) +CPUs utilized.*/\1/p' "$work/stat1")
awk -v u="${u:-0}" "BEGIN { exit !(u > $lo && u <= $hi) }" ||
	fail "session 1: ${u:-no} CPUs utilized, want more than $lo" \
		"and at most $hi: $(cat "$work/stat1")"
# Session 2 (the workload): the CPU time the kernel charged to the
# workload and everything it waited for, user plus sys as perf stat got
# them from wait4(), is what it counted.  How much of a CPU the spinning
# shell got depends on the rest of a busy 2-core host: not checked.
echo "session 2:"
grep -E 'cpu-clock|elapsed|seconds (user|sys)' "$work/stat2" | sed -E 's/^ +/  /'
awk '/ msec +cpu-clock/ { c = $1; gsub(",", "", c) }
	/ seconds user/ { r += $1 } / seconds sys/ { r += $1 }
	END { r *= 1000; printf "  counted/charged: %.3f\n", r ? c / r : 0
	      exit !(r > 100 && c >= 0.85 * r && c <= 1.15 * r) }' "$work/stat2" ||
	fail "session 2: cpu-clock is not within 15% of the user + sys time" \
		"of its workload (over 100 ms): $(cat "$work/stat2")"
echo "session 1 counted the $ncpus CPUs over its own time, session 2 the CPU time of its workload."

echo "--- after the last session: nothing pinned, no bperf program loaded"
[ -e "$attr" ] && fail "$attr is still pinned"
[ -e "${attr}_dir" ] && fail "${attr}_dir is still pinned"
wait_for 60 "unload of bperf's programs" no_bperf_progs
echo "nothing left."

step "perf record -a while a BPF program is loaded and unloaded"
[ -f "$demo_obj" ] || fail "$demo_obj missing: make build"
# The workload stops only once the program is gone: its unload record is
# written when the last reference goes, which bpffs may drop after an RCU
# grace period.
cat >"$work/load.sh" <<'EOF'
obj=$1 pin=$2 out=$3
bpftool prog load "$obj" "$pin" || { echo "bpftool prog load failed" >&2; exit 1; }
bpftool prog show pinned "$pin" | head -n 1 | tee "$out"
id=$(cut -d: -f1 "$out")
rm "$pin"
end=$((SECONDS + 60))
while bpftool prog show id "$id" >/dev/null 2>&1; do
	[ "$SECONDS" -lt "$end" ] || { echo "program $id still loaded after 60s" >&2; exit 1; }
	sleep 0.1
done
echo "removed $pin: last reference gone, program $id unloaded"
EOF
perf record -q -a -e cpu-clock -o "$work/perf.data" -- \
	bash "$work/load.sh" "$demo_obj" "$pin" "$work/prog" 2>"$work/record.err" ||
	fail "perf record failed: $(cat "$work/record.err")"
id=$(cut -d: -f1 "$work/prog")
[ -n "$id" ] || fail "the program was not loaded"

echo "--- perf script --show-bpf-events: the records of program $id"
perf script -i "$work/perf.data" --show-bpf-events >"$work/script" 2>"$work/script.err" ||
	fail "perf script failed: $(cat "$work/script.err")"
grep -E "PERF_RECORD_BPF_EVENT .*id $id(, run_cnt .*)?\$|PERF_RECORD_KSYMBOL .*_demo_nanosleep\$" \
	"$work/script" | sed -E 's/^ +//' | tee "$work/records"
echo "(type 1 = PROG_LOAD, 2 = PROG_UNLOAD, with the program's final counts on a kernel" \
	"that writes them; KSYMBOL flags 0x1 = unregister)"
for want in "PERF_RECORD_BPF_EVENT type 1,.* id $id\$" \
	    "PERF_RECORD_BPF_EVENT type 2,.* id $id(, run_cnt .*)?\$" \
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

step "perf bpf events and perf bpf list: BPF programs and links as they come and go"
# the attach type of each kind of link the workload makes
declare -A attach=([cgroup]=cgroup_inet_egress [raw_tp]=trace_raw_tp [fentry]=trace_fentry
		   [perf_event]=perf_event [xdp]=xdp)
cgroot=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cgroot" ] || fail "cgroup2 is not mounted"
mkdir "$cgroot/perf_demo_$$" || fail "cannot make $cgroot/perf_demo_$$"
cgroup=$cgroot/perf_demo_$$
# -v: it says when it reads the records, and from then on misses none
perf bpf events -a -v -o "$work/events" 2>"$work/events.err" &
events=$!
wait_for 120 "start of perf bpf events" events_reading
# The workload loads and attaches, then waits for a line from the demo.
mkfifo "$work/go" || fail "cannot make a fifo in $work"
exec 8<>"$work/go"
perf test -w bpf_links links "$cgroup" <"$work/go" >"$work/links" 2>"$work/links.err" 8>&- &
links=$!
wait_for 120 "programs and links of the workload" links_ready
echo "--- the workload (perf test -w bpf_links) loaded and attached, as it says:"
grep -E '^(prog|link) ' "$work/links"

echo "--- perf bpf list: each program with its links and their targets"
perf bpf list >"$work/list" 2>"$work/list.err" ||
	fail "perf bpf list failed: $(cat "$work/list.err")"
cat "$work/list"
# every program of the workload, with its one link of the attach type
# of its kind, both held by the workload (perf bpf events may hold them
# too for a moment)
awk '$1 == "link" { print $3, $4, $2 }' "$work/links" >"$work/link-ids"
[ "$(wc -l <"$work/link-ids")" = 5 ] ||
	fail "want 5 links from the workload: $(cat "$work/links")"
while read -r l p kind; do
	name=$(awk -v p="$p" '$1 == "prog" && $3 == p { print $4 }' "$work/links")
	awk -v p="$p" -v n="$name" -v l="$l" -v w="perf($links)" -v a="${attach[$kind]}" '
		function holds(from,  i) {
			for (i = from; i <= NF; i++)
				if ($i == w)
					return 1
			return 0
		}
		$1 == "prog" { mine = $2 == p && $3 == n }
		mine && $1 == "pids" && holds(2) { held++ }
		mine && $1 == "link" && $2 == l && $4 == a && holds(5) { linked++ }
		END { exit !(held == 1 && linked == 1) }' "$work/list" ||
		fail "want program $p ($name) held by perf($links), with link $l" \
			"(attach type ${attach[$kind]}), in perf bpf list"
done <"$work/link-ids"

echo "--- the workload detaches, closes and unloads; perf bpf events shows it all"
echo go >&8
wait_for 120 "end of the workload" gone "$links"
wait "$links" || fail "the workload failed: $(cat "$work/links.err")"
links=
wait_for 60 "unload records of the workload's programs" all_unloaded
kill -INT "$events"
wait_for 60 "end of perf bpf events on SIGINT" gone "$events"
wait "$events" || fail "perf bpf events failed: $(cat "$work/events.err")"
events=
ids=$(awk '$1 == "prog" { print $3 }' "$work/links" | paste -sd'|')
grep -E " prog ($ids) " "$work/events"
grep '^\[ perf bpf events:' "$work/events.err" ||
	fail "perf bpf events printed no summary: $(cat "$work/events.err")"
grep -q ' 0 lost \]$' "$work/events.err" ||
	fail "perf bpf events lost records: $(cat "$work/events.err")"
# one line for each event of each program and link, naming the program,
# and the link's attach type
while read -r l p kind; do
	name=$(awk -v p="$p" '$1 == "prog" && $3 == p { print $4 }' "$work/links")
	for want in "prog_load +prog $p $name " "prog_unload +prog $p $name " \
		    "link_attach +prog $p $name .* link $l [a-z_]+ ${attach[$kind]} " \
		    "link_detach +prog $p $name .* link $l [a-z_]+ ${attach[$kind]} "; do
		[ "$(grep -Ec " $want" "$work/events")" = 1 ] ||
			fail "want one line matching '$want' from perf bpf events"
	done
done <"$work/link-ids"
rmdir "$cgroup" || fail "cannot remove $cgroup"
cgroup=

step "perf bpf top --hist --split: what a program costs, run by run, and who drove it"
# perf test -w bpf_links loop: a tracepoint program, pbt_loop, that calls
# bpf_loop() 1000 times a run, run by the workload over and over
# ("spin"), in a cgroup of its own, until the demo sends it another line.
mkdir "$cgroot/perf_demo_loop_$$" || fail "cannot make $cgroot/perf_demo_loop_$$"
loopcg=$cgroot/perf_demo_loop_$$
mkfifo "$work/loop.ctl" || fail "cannot make a fifo in $work"
exec 7<>"$work/loop.ctl"
sh -c 'echo $$ >"$0/cgroup.procs" && exec perf test -w bpf_links loop' "$loopcg" \
	<"$work/loop.ctl" >"$work/loop" 2>"$work/loop.err" 7>&- 8>&- &
loop=$!
wait_for 120 "program of the loop workload" loop_ready
id=$(awk '$1 == "prog" && $2 == "loop" { print $3 }' "$work/loop")
[ -n "$id" ] || fail "no program id from the loop workload: $(cat "$work/loop")"
echo "spin 1000" >&7
echo "--- perf bpf top --hist --split --id $id: three windows of a second, the last shown"
timeout 120 perf bpf top --hist --split --id "$id" -I 1000 --interval-count 3 \
	-o "$work/top" 2>"$work/top.err" || fail "perf bpf top failed: $(cat "$work/top.err")"
# the last screen: from its last title line on
awk '/^perf bpf top/ { n = 0 } { line[n++] = $0 }
	END { for (i = 0; i < n; i++) print line[i] }' "$work/top" | tee "$work/screen"
# its row of the program: runs, the time of a run and its percentiles
awk -v id="$id" '$1 == id && $2 == "pbt_loop" {
		# RUNS/s, AVG ns; P50, P99 and MAX ns: $4, $5; $11, $12, $13
		ok = $4 > 0 && $5 > 0 && $11 > 0 && $11 <= $12 && $12 <= $13
	} END { exit !ok }' "$work/screen" ||
	fail "want pbt_loop ($id) running, with its average run time, and" \
		"P50 <= P99 <= MAX, in the last screen of perf bpf top"
# under it, the row of the workload's cgroup: its runs per second
awk -v id="$id" -v cg="/perf_demo_loop_$$" '$1 == id { mine = 1; next }
	mine && $1 == "cgroup" && $NF == cg && $2 > 0 { ok = 1 }
	mine && $1 ~ /^[0-9]+$/ { mine = 0 }
	END { exit !ok }' "$work/screen" ||
	fail "want a row of cgroup /perf_demo_loop_$$ with runs under pbt_loop ($id)" \
		"in the last screen of perf bpf top --split"
echo "--- the distribution of its runs in one window (perf bpf top -j --hist: \"hist\")"
timeout 120 perf bpf top -j --hist --id "$id" -I 1000 --interval-count 2 \
	-o "$work/top.json" 2>"$work/top.err" ||
	fail "perf bpf top -j failed: $(cat "$work/top.err")"
tail -n 1 "$work/top.json" | python3 -c '
import json, sys
w = json.loads(sys.stdin.read())
hist, timed, runs = w["hist"], w["hist_runs"], w["run_cnt"]
peak = max(c for _, _, c in hist)
print("%d runs timed, %d counted by the kernel; p50 %d ns, p90 %d ns, p99 %d ns, max %d ns" %
      (timed, runs, w["p50_ns"], w["p90_ns"], w["p99_ns"], w["max_ns"]))
print("%20s : %-8s %s" % ("nsecs", "count", "distribution"))
first = min(i for i, (_, _, c) in enumerate(hist) if c)
for lo, hi, c in hist[first:]:
    print("%8d -> %-8d : %-8d |%-40s|" % (lo, hi, c, "*" * (40 * c // peak)))
# the buckets add up to the runs timed, and those are the kernel run
# count give or take the runs in flight at the edges of the window
sys.exit(not (timed > 0 and sum(c for _, _, c in hist) == timed and
              abs(timed - runs) <= max(2, runs // 10)))' ||
	fail "want the buckets to add up to hist_runs, and hist_runs within 10%" \
		"of run_cnt: $(tail -n 1 "$work/top.json")"
echo stop >&7
wait_for 60 "end of the spin" grep -q '^spun ' "$work/loop"
echo end >&7
wait_for 60 "end of the loop workload" gone "$loop"
wait "$loop" || fail "the loop workload failed: $(cat "$work/loop.err")"
loop=
echo "the workload ended: $(grep '^spun ' "$work/loop")"
rmdir "$loopcg" || fail "cannot remove $loopcg"
loopcg=

step "done: every step checked what it showed"
