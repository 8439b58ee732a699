#!/bin/bash
# perf bpf top --split counts a program's runs by the cgroup that drove them (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# Two bpf_links runs workloads, one in cgroup a and one in cgroup b (both
# under this test's cgroup), each load pbt_runs, a tracepoint program on
# syscalls:sys_enter_getcpu, which only they enter.  perf bpf top -j
# --split watches the first one's program; then, at once, the workload in
# a enters getcpu 1000 times and the one in b 3000 times: both drive the
# program watched.  Its split rows must give the two cgroups, by path, in
# the ratio 1:3 within 5%, and 4000 runs in all (a few more are allowed
# for another task entering getcpu without the vDSO), exactly the
# program's own over those windows (nothing ran before or after them);
# window by window (over the text and -x phase too, until perf stops
# counting the program, its last holder gone), the split rows' runs so
# far are at least the program's (the kernel's run count, which perf
# reads first, and a run counts in a split as it starts) and at most
# the program's at the next window (one run in flight a CPU aside),
# however long perf took between the two reads (nothing runs before the
# orders), and each split's windows add up to its totals.  A socket
# filter, whose runs no cgroup or device can be told to drive, is shown
# whole, its "split" "none".  The text screen shows the split rows under the
# program's, and a "not split" row under the socket filter's; -x gives
# the same columns as -j.  Then, for packets: the bpf_links net
# workload's cgroup_skb program split by the cgroup of the sending
# socket (1:3), its XDP program by device (lo).  Exclusive: nothing else
# may enter getcpu or send on lo.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(bpf_test_dir)
pbt_require_getcpu
pbt_top_takes --split
pbt_cgroup
cg=$(pbt_cgroup_path)
mkdir "$cg/a" "$cg/b" || bpf_test_fail "cannot make cgroups a and b in $cg"
# the cgroups' paths as perf names them: from the cgroup2 mount
root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
rel=${cg#"$root"}

# start NAME CGROUP MODE ARGS...: the bpf_links workload MODE, run in
# CGROUP, its orders from $tmp/NAME.ctl, its output in NAME.out
start() {
	local name=$1 cgroup=$2 pid

	shift 2
	mkfifo "$tmp/$name.ctl"
	sh -c 'echo $$ >"$0/cgroup.procs" && exec perf test -w bpf_links "$@"' "$cgroup" "$@" \
		<"$tmp/$name.ctl" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	bpf_test_track $pid
	echo $pid >"$tmp/$name.pid"
}

# tell FD LINE: write LINE to a workload's fifo, from a subshell: a
# workload gone makes the test fail, not die of SIGPIPE
tell() {
	(echo "$2" >&"$1") 2>/dev/null ||
		bpf_test_fail "a bpf_links workload is gone: '$2' to fd $1"
}

ready() {
	grep -qx "$2" "$tmp/$1.out" && return 0
	bpf_test_gone "$(cat "$tmp/$1.pid")" &&
		bpf_test_fail "bpf_links $1 ended before it was ready: $(cat "$tmp/$1.err")"
	return 1
}

start a "$cg/a" runs
exec 4>"$tmp/a.ctl"
start b "$cg/b" runs
exec 5>"$tmp/b.ctl"
start sf "$cg/a" many 1
exec 6>"$tmp/sf.ctl"
for w in a:ready b:ready sf:"many 1"; do
	pbt_wait 120 ready "${w%%:*}" "${w#*:}" ||
		bpf_test_fail "bpf_links ${w%%:*} not ready within 120 s:" \
			"$(cat "$tmp/${w%%:*}.err")"
done
id=$(awk '$1 == "prog" && $2 == "runs" { print $3 }' "$tmp/a.out")
[ -n "$id" ] || bpf_test_fail "no program id from bpf_links runs: $(cat "$tmp/a.out")"
sfpid=$(cat "$tmp/sf.pid")
sf=$(perf bpf list -j | python3 -c '
import json, sys
for l in sys.stdin:
    p = json.loads(l)
    if p.get("prog_name") == "pbt_many" and any(o.get("pid") == int(sys.argv[1])
                                                 for o in p.get("pids") or []):
        print(p["prog_id"])' "$sfpid")
[ -n "$sf" ] || bpf_test_fail "no socket filter of bpf_links many ($sfpid) in perf bpf list"

perf bpf top -j -I 500 --split --id "$id,$sf" -o "$tmp/top.out" 2>"$tmp/top.err" &
top=$!
bpf_test_track $top
# counting: a window shows what drives the program (its splits are read
# from then on) and the socket filter as not split
counting() {
	grep -q "\"prog_id\":$id,.*\"row\":\"prog\",\"split\":\"cgroup\"" "$tmp/top.out" &&
		grep -q "\"prog_id\":$sf,.*\"split\":\"none\"" "$tmp/top.out"
}
pbt_wait 60 counting ||
	bpf_test_fail "perf bpf top --split does not count pbt_runs within 60 s:" \
		"$(tail -n 2 "$tmp/top.out") $(cat "$tmp/top.err")"
# prog_total: the program's run count since perf bpf top started, in its
# last window
prog_total() {
	grep "\"prog_id\":$id," "$tmp/top.out" | grep '"row":"prog"' | tail -n 1 |
		grep -o '"run_cnt_total":[0-9]*' | cut -d: -f2
}
base=$(prog_total)
start_line=$(wc -l <"$tmp/top.out")
tell 4 "run 1000"
tell 5 "run 3000"
pbt_wait 120 grep -q '^ran 1000 ' "$tmp/a.out" ||
	bpf_test_fail "bpf_links runs in a did not run 1000 times: $(cat "$tmp/a.err")"
pbt_wait 120 grep -q '^ran 3000 ' "$tmp/b.out" ||
	bpf_test_fail "bpf_links runs in b did not run 3000 times: $(cat "$tmp/b.err")"
# a window that counts all 4000 (the rows of a refresh are written at once)
reached() {
	[ "$(prog_total)" -ge $((base + 4000)) ]
}
pbt_wait 120 reached ||
	bpf_test_fail "no window of perf bpf top counts the 4000 runs within 120 s:" \
		"$(tail -n 3 "$tmp/top.out")"
end_line=$(wc -l <"$tmp/top.out")

# The text screen and -x, while the workload in b runs the program: one
# order after another until both perf bpf tops end
timeout 300 perf bpf top --split --id "$id,$sf" -I 500 --interval-count 6 \
	-o "$tmp/top.txt" 2>"$tmp/txt.err" &
txt=$!
bpf_test_track $txt
timeout 300 perf bpf top -x';' --split --id "$id,$sf" -I 500 --interval-count 6 \
	-o "$tmp/top.csv" 2>"$tmp/csv.err" &
csv=$!
bpf_test_track $csv
ran_b() {
	[ "$(grep -c '^ran 500 ' "$tmp/b.out")" -ge "$1" ]
}
k=0
end=$((SECONDS + 300))
while ! bpf_test_gone $txt || ! bpf_test_gone $csv; do
	[ $SECONDS -lt $end ] || bpf_test_fail "perf bpf top --split still running after 300 s"
	k=$((k + 1))
	tell 5 "run 500"
	pbt_wait 60 ran_b $k ||
		bpf_test_fail "bpf_links runs in b did not run 500 times: $(cat "$tmp/b.err")"
done
pbt_reap $txt || bpf_test_fail "perf bpf top --split (text): exit $?: $(cat "$tmp/txt.err")"
pbt_reap $csv || bpf_test_fail "perf bpf top --split -x: exit $?: $(cat "$tmp/csv.err")"

tell 4 quit
tell 5 quit
tell 6 quit
exec 4>&- 5>&- 6>&-
for w in a b sf; do
	p=$(cat "$tmp/$w.pid")
	pbt_wait_gone "$p" 60 || bpf_test_fail "bpf_links $w still running 60 s after quit"
	pbt_reap "$p" || bpf_test_fail "bpf_links $w: exit $?: $(cat "$tmp/$w.err")"
done
kill -INT $top
pbt_wait_gone $top 60 || bpf_test_fail "perf bpf top still running 60 s after SIGINT"
pbt_reap $top || bpf_test_fail "perf bpf top: exit $?: $(cat "$tmp/top.err")"

python3 - "$tmp" "$id" "$sf" "$start_line" "$end_line" "$rel" <<'EOF' ||
import json, os, sys

tmp, cg = sys.argv[1], sys.argv[6]
pid, sf, first, last = (int(x) for x in sys.argv[2:6])
errors = []
def fail(msg):
    errors.append(msg)

# every window from the 4000 runs on, those of the text screen and -x
# included; then those of the 4000 runs alone
lines = open(f"{tmp}/top.out").read().splitlines()
rows = [json.loads(l) for l in lines[first:]]
if any(r["prog_id"] == sf and r["row"] == "split" for r in rows):
    fail("split rows for the socket filter")
if any(r["prog_id"] == sf and r.get("split") != "none" for r in rows):
    fail("the socket filter's split is not none")

# window by window: the split rows' runs so far against the program's.
# perf reads the program's count, then its splits, and a run counts in
# a split as it starts, in the kernel's count once it ended: so far
# (from the window before the orders, with no runs), the splits have at
# least the program's runs, and at most what the program's count has at
# the next window, plus a run in flight on each CPU (the tracepoint
# program runs with preemption off: it neither nests nor is missed).
# This holds while perf counts the program: once its last holder quits,
# perf lets go of it and shows a window or two without "split", then
# one "gone"; it must not count it again after.  A read that failed
# would also leave the splits behind, for good: only the first window
# found off, either way, is told.  And each split's windows add up to
# their totals.
by_time = {}
for r in rows:
    if r["prog_id"] == pid and r["row"] == "split":
        by_time.setdefault(r["time"], []).append(r)
ncpus = os.cpu_count() or 1
windows = prog_sofar = split_sofar = 0
sofar_failed = False
last_total = {}
stop = len(rows)
for i, p in enumerate(rows):
    if p["prog_id"] != pid or p["row"] != "prog":
        continue
    if p["gone"] or p.get("split") != "cgroup":
        stop = i
        break
    windows += 1
    prog_sofar += p["run_cnt"]
    if split_sofar > prog_sofar + ncpus and not sofar_failed:
        sofar_failed = True
        fail(f"window {p['time']}: the program ran {prog_sofar} times so far, its split rows"
             f" had {split_sofar} a window before: more than a run a CPU ahead")
    split_sofar += sum(r["run_cnt"] for r in by_time.get(p["time"], []))
    if split_sofar < prog_sofar and not sofar_failed:
        sofar_failed = True
        fail(f"window {p['time']}: the split rows add up to {split_sofar} runs so far, the"
             f" program ran {prog_sofar}")
    for r in by_time.get(p["time"], []):
        if r["split"] != "cgroup" or r.get("split_id", 0) <= 0:
            fail(f"split row without a cgroup: {r}")
        before = last_total.get(r.get("split_id"))
        if before is not None and r["run_cnt_total"] - before != r["run_cnt"]:
            fail(f"window {p['time']}: {r['split_name']} ran {r['run_cnt']} times,"
                 f" its total went from {before} to {r['run_cnt_total']}")
        last_total[r.get("split_id")] = r["run_cnt_total"]
again = [r for r in rows[stop + 1:] if r["prog_id"] == pid and not r.get("gone") and
         (r["row"] == "split" or r.get("split") == "cgroup")]
if again:
    fail(f"window {rows[stop]['time']}: program {pid} not counted, then counted again:"
         f" {again[0]}")
print(f"{windows} windows, {len(by_time)} with split rows")
if len(by_time) < 3:
    fail(f"only {len(by_time)} windows with split rows")

window = [json.loads(l) for l in lines[first:last]]
splits = [r for r in window if r["prog_id"] == pid and r["row"] == "split"]
own = sum(r["run_cnt"] for r in window if r["prog_id"] == pid and r["row"] == "prog")
if sum(r["run_cnt"] for r in splits) != own:
    fail(f"the split rows add up to {sum(r['run_cnt'] for r in splits)} runs,"
         f" the program ran {own}")
total = {}
for r in splits:
    total[r["split_name"]] = total.get(r["split_name"], 0) + r["run_cnt"]
a, b = total.get(f"{cg}/a", 0), total.get(f"{cg}/b", 0)
print(f"runs by cgroup: {total}")
if not a or abs(b / a - 3) > 0.15:
    fail(f"{cg}/a ran it {a} times, {cg}/b {b}: not 1:3 within 5%")
if not 4000 <= a + b <= 4010:
    fail(f"a and b ran it {a + b} times, want 4000")
if sum(total.values()) > a + b + 10:
    fail(f"other cgroups ran it: {total}")

# the text screen: the last one with runs of b, a split row under the
# program's, a "not split" row under the socket filter's
screens = open(f"{tmp}/top.txt").read().split("perf bpf top:")
text = [s for s in screens if f"{cg}/b" in s]
if not text:
    fail(f"no text screen with a split row of {cg}/b: {screens[-1]}")
else:
    lines = text[-1].splitlines()
    row = [i for i, l in enumerate(lines) if l.split()[:1] == [str(pid)]]
    sub = [l for l in lines if l.strip().startswith("cgroup") and l.rstrip().endswith(f"{cg}/b")]
    if not row or not sub or lines.index(sub[0]) <= row[0]:
        fail(f"no split row of {cg}/b under program {pid}: {text[-1]}")
    notsplit = [i for i, l in enumerate(lines) if "not split" in l]
    sfrow = [i for i, l in enumerate(lines) if l.split()[:1] == [str(sf)]]
    if not sfrow or not notsplit or notsplit[0] != sfrow[0] + 1:
        fail(f"no 'not split' row under the socket filter {sf}: {text[-1]}")
    print("text screen:\n" + text[-1].strip())

# -x: the same columns, the split rows of b
csv = [l.split(";") for l in open(f"{tmp}/top.csv").read().splitlines()]
head = csv[0]
for n, l in enumerate(csv[1:], 2):
    if len(l) != len(head):
        fail(f"-x line {n} has {len(l)} fields, the header {len(head)}: {l}")
for c in ("row", "split", "split_id", "split_name"):
    if c not in head:
        fail(f"-x has no column {c}: {head}")
if not errors:
    rows = [dict(zip(head, l)) for l in csv[1:]]
    if not any(r["row"] == "split" and r["split_name"] == f"{cg}/b" and int(r["run_cnt"]) > 0
               for r in rows):
        fail(f"-x: no split row of {cg}/b with runs")

for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf top --split: see above"

# Packets: the bpf_links net workload attaches an XDP program to lo and
# a cgroup_skb program to the egress of this test's cgroup, and binds a
# UDP socket; processes in cgroups a and b send it 300 and 900
# datagrams.  The egress program's runs split by the cgroup of the
# sending socket, 300 and 900; the XDP program's by device, lo, every
# one of its runs.
start net "$cg/a" net "$cg"
exec 4>"$tmp/net.ctl"
pbt_wait 120 ready net ready ||
	bpf_test_fail "bpf_links net not ready within 120 s: $(cat "$tmp/net.err")"
xdp=$(awk '$1 == "prog" && $2 == "xdp" { print $3 }' "$tmp/net.out")
egress=$(awk '$1 == "prog" && $2 == "egress" { print $3 }' "$tmp/net.out")
port=$(awk '$1 == "port" { print $2 }' "$tmp/net.out")
[ -n "$xdp" ] && [ -n "$egress" ] && [ -n "$port" ] ||
	bpf_test_fail "no programs or port from bpf_links net: $(cat "$tmp/net.out")"
perf bpf top -j -I 500 --split --id "$xdp,$egress" -o "$tmp/net.top" 2>"$tmp/net.top.err" &
top=$!
bpf_test_track $top
net_counting() {
	grep -q "\"prog_id\":$xdp,.*\"row\":\"prog\",\"split\":\"device\"" "$tmp/net.top" &&
		grep -q "\"prog_id\":$egress,.*\"row\":\"prog\",\"split\":\"socket_cgroup\"" \
			"$tmp/net.top"
}
pbt_wait 60 net_counting ||
	bpf_test_fail "perf bpf top --split does not count the net programs within 60 s:" \
		"$(tail -n 2 "$tmp/net.top") $(cat "$tmp/net.top.err")"
# egress_total: the egress program's runs since perf bpf top started
egress_total() {
	grep "\"prog_id\":$egress," "$tmp/net.top" | grep '"row":"prog"' | tail -n 1 |
		grep -o '"run_cnt_total":[0-9]*' | cut -d: -f2
}
base=$(egress_total)
net_first=$(wc -l <"$tmp/net.top")
for w in a:300 b:900; do
	# shellcheck disable=SC2016 # $0 and $$: the inner shell's
	sh -c 'echo $$ >"$0/cgroup.procs" && exec python3 -c "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[1])):
    s.sendto(b\"x\", (\"127.0.0.1\", int(sys.argv[2])))" "$1" "$2"' \
		"$cg/${w%%:*}" "${w#*:}" "$port" ||
		bpf_test_fail "cannot send ${w#*:} datagrams from cgroup ${w%%:*}"
done
net_reached() {
	[ "$(egress_total)" -ge $((base + 1200)) ]
}
pbt_wait 120 net_reached ||
	bpf_test_fail "no window of perf bpf top counts 1200 runs of pbt_net_egress within 120 s:" \
		"$(tail -n 3 "$tmp/net.top")"
net_last=$(wc -l <"$tmp/net.top")
tell 4 quit
exec 4>&-
p=$(cat "$tmp/net.pid")
pbt_wait_gone "$p" 60 || bpf_test_fail "bpf_links net still running 60 s after quit"
pbt_reap "$p" || bpf_test_fail "bpf_links net: exit $?: $(cat "$tmp/net.err")"
kill -INT $top
pbt_wait_gone $top 60 || bpf_test_fail "perf bpf top still running 60 s after SIGINT"
pbt_reap $top || bpf_test_fail "perf bpf top: exit $?: $(cat "$tmp/net.top.err")"

python3 - "$tmp" "$xdp" "$egress" "$net_first" "$net_last" "$rel" <<'EOF' ||
import json, sys

tmp, cg = sys.argv[1], sys.argv[6]
xdp, egress, first, last = (int(x) for x in sys.argv[2:6])
errors = []
def fail(msg):
    errors.append(msg)

rows = [json.loads(l) for l in open(f"{tmp}/net.top").read().splitlines()[first:last]]
def own(pid):
    return sum(r["run_cnt"] for r in rows if r["prog_id"] == pid and r["row"] == "prog")
def splits(pid):
    t = {}
    for r in rows:
        if r["prog_id"] == pid and r["row"] == "split":
            k = (r["split"], r.get("split_id"), r["split_name"])
            t[k] = t.get(k, 0) + r["run_cnt"]
    return t

e = splits(egress)
print(f"pbt_net_egress ({own(egress)} runs) by socket cgroup: {e}")
a = sum(n for (kind, _, name), n in e.items() if kind == "socket_cgroup" and name == f"{cg}/a")
b = sum(n for (kind, _, name), n in e.items() if kind == "socket_cgroup" and name == f"{cg}/b")
if (a, b) != (300, 900) or sum(e.values()) != own(egress):
    fail(f"pbt_net_egress: {a} runs from {cg}/a, {b} from {cg}/b, {sum(e.values())} in all,"
         f" the program ran {own(egress)} times: want 300, 900, all")
x = splits(xdp)
print(f"pbt_net_xdp ({own(xdp)} runs) by device: {x}")
if set(x) != {("device", 1, "lo")} or x[("device", 1, "lo")] != own(xdp) or own(xdp) < 1200:
    fail(f"pbt_net_xdp: want every run, at least 1200, on lo (ifindex 1): {x},"
         f" the program ran {own(xdp)} times")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf top --split on packets: see above"
pbt_end
