#!/bin/bash
# perf bpf list and top show recursion misses and verified instructions
# SPDX-License-Identifier: GPL-2.0
#
# The bpf_links workload's pbt_recursion, an fentry program on
# htab_map_delete_elem, runs at each delete the workload makes.  For a
# delete from another map (pbt_other), it deletes from its own map,
# entering htab_map_delete_elem again, where the kernel does not run it
# but counts a recursion miss; for one from its own map, it does not:
# "run N" makes N runs and N misses, "own N" N runs and no miss.  Misses
# are counted whether BPF statistics are on or not.  perf bpf list (-j,
# -x and text) must show the misses bpftool shows before and after it,
# at least the N made, and the instructions the verifier went through
# as the verifier's own log said when the workload loaded the program
# (bpftool does not show them).  perf bpf top -j, watching while the
# workload makes 7 runs with a miss and 4 without, must count the runs
# and the misses apart in its windows, which add up to its totals, each
# at least what the workload made and at most what bpftool saw added
# while it ran.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
tmp=$(bpf_test_dir)
first=5
missed=7
own=4

# counts: pbt_recursion's runs and misses, as bpftool shows them
counts() {
	bpftool prog show id "$id" -j 2>"$tmp/bpftool.err" |
		python3 -c 'import json, sys; p = json.load(sys.stdin)
print(p.get("run_cnt", 0), p.get("recursion_misses", 0))' ||
		bpf_test_fail "bpftool prog show id $id: $(cat "$tmp/bpftool.err")"
}

# ran ORDER N: the workload deletes N times (ORDER: run or own), and has
# (each N is another: the reply tells which order it is to)
ran() {
	pbt_links_tell rec "$1 $2"
	pbt_wait 60 grep -qx "ran $2" "$tmp/rec.out" ||
		bpf_test_fail "bpf_links recursion did not make $2 deletes within 60 s:" \
			"$(cat "$tmp/rec.err")"
}

# started: the workload is ready, or ended; skip if its kernel cannot
started() {
	grep -qx ready "$tmp/rec.out" && return 0
	bpf_test_gone "$pid" || return 1
	pbt_reap "$pid"
	[ $? != 3 ] || bpf_test_skip "$(cat "$tmp/rec.err")"
	bpf_test_fail "bpf_links recursion ended before it was ready: $(cat "$tmp/rec.err")"
}

mkfifo "$tmp/rec.ctl"
perf test -w bpf_links recursion <"$tmp/rec.ctl" >"$tmp/rec.out" 2>"$tmp/rec.err" &
pid=$!
bpf_test_track $pid
echo $pid >"$tmp/rec.pid"
exec 3>"$tmp/rec.ctl"
pbt_wait 120 started ||
	bpf_test_fail "bpf_links recursion not ready within 120 s:" \
		"$(cat "$tmp/rec.out" "$tmp/rec.err")"
read -r id insns < <(awk '$1 == "prog" && $2 == "recursion" { print $3, $5 }' "$tmp/rec.out")
[ -n "${id:-}" ] && [ "${insns:-0}" -gt 0 ] ||
	bpf_test_fail "no program id or verifier count from bpf_links recursion:" \
		"$(cat "$tmp/rec.out" "$tmp/rec.err")"

ran run $first
bpftool prog show id "$id" -j >"$tmp/before.json" 2>"$tmp/bpftool.err" ||
	bpf_test_fail "bpftool prog show id $id: $(cat "$tmp/bpftool.err")"
perf bpf list -j >"$tmp/list.json" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list -j failed: $(cat "$tmp/list.err")"
perf bpf list -x';' >"$tmp/list.csv" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list -x failed: $(cat "$tmp/list.err")"
perf bpf list >"$tmp/list.txt" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list failed: $(cat "$tmp/list.err")"
bpftool prog show id "$id" -j >"$tmp/after.json" 2>"$tmp/bpftool.err" ||
	bpf_test_fail "bpftool prog show id $id: $(cat "$tmp/bpftool.err")"

# perf bpf top, from its first window to one that counts the deletes
# made while it ran
read -r runs0 misses0 < <(counts)
perf bpf top -j -I 300 --id "$id" -o "$tmp/top.out" 2>"$tmp/top.err" &
top=$!
bpf_test_track $top
printed() {
	[ -s "$tmp/top.out" ]
}
pbt_wait 60 printed ||
	bpf_test_fail "perf bpf top printed nothing within 60 s: $(cat "$tmp/top.err")"
ran run $missed
ran own $own
# counted RUNS MISSES: a window of perf bpf top counts that many or more in all
counted() {
	tail -n 1 "$tmp/top.out" | python3 -c 'import json, sys
try:
    w = json.loads(sys.stdin.read())
except ValueError:
    sys.exit(1)
sys.exit(not (w["run_cnt_total"] >= int(sys.argv[1]) and
              w["recursion_misses_total"] >= int(sys.argv[2])))' "$1" "$2"
}
pbt_wait 60 counted $((missed + own)) $missed ||
	bpf_test_fail "no window of perf bpf top counts $((missed + own)) runs and $missed" \
		"misses within 60 s: $(tail -n 1 "$tmp/top.out") $(cat "$tmp/top.err")"
kill -INT $top
pbt_wait_gone $top 60 || bpf_test_fail "perf bpf top still running 60 s after SIGINT"
pbt_reap $top || bpf_test_fail "perf bpf top: exit $?: $(cat "$tmp/top.err")"
read -r runs1 misses1 < <(counts)

python3 - "$tmp" "$id" "$insns" "$first" "$missed" "$own" "$runs0" "$runs1" "$misses0" \
	"$misses1" <<'EOF' ||
import json, re, sys

tmp, pid, insns, first, missed, own, r0, r1, m0, m1 = sys.argv[1], *map(int, sys.argv[2:])
errors = []
def fail(msg):
    errors.append(msg)

bt, bt2 = (json.load(open(f"{tmp}/{w}.json")) for w in ("before", "after"))
lo, hi = bt.get("recursion_misses", 0), bt2.get("recursion_misses", 0)
if lo < first:
    fail(f"bpftool shows {lo} recursion misses after {first} deletes: the workload made none")

rows = [p for p in map(json.loads, open(f"{tmp}/list.json")) if p["prog_id"] == pid]
if len(rows) != 1:
    fail(f"perf bpf list -j: {len(rows)} lines of program {pid}")
for p in rows:
    if not lo <= p.get("recursion_misses", -1) <= hi:
        fail(f"perf bpf list -j: recursion_misses {p.get('recursion_misses')}, "
             f"bpftool {lo} before and {hi} after")
    if p.get("verified_insns") != insns:
        fail(f"perf bpf list -j: verified_insns {p.get('verified_insns')}, the verifier {insns}")

csv = open(f"{tmp}/list.csv").read().splitlines()
head = csv[0].split(";")
rows = [dict(zip(head, r.split(";"))) for r in csv[1:]]
rows = [r for r in rows if r.get("prog_id") == str(pid)]
if len(rows) != 1 or not lo <= int(rows[0].get("recursion_misses") or -1) <= hi or \
   rows[0].get("verified_insns") != str(insns):
    fail(f"perf bpf list -x: {rows}, want recursion_misses in [{lo}, {hi}], "
         f"verified_insns {insns}")

line = [l for l in open(f"{tmp}/list.txt") if l.startswith(f"prog {pid} ")]
m = re.search(r" missed (\d+) runs insns (\d+) ", line[0]) if line else None
if not m or not lo <= int(m[1]) <= hi or int(m[2]) != insns:
    fail(f"perf bpf list: {line}, want 'missed N runs' with N in [{lo}, {hi}], 'insns {insns}'")

# perf bpf top: its windows add up to its totals, which hold the deletes
# made while it ran and no more than bpftool saw added
wins = [json.loads(l) for l in open(f"{tmp}/top.out")]
wins = [w for w in wins if w["prog_id"] == pid]
if not wins:
    fail(f"perf bpf top -j never showed program {pid}")
else:
    for key, lo_, hi_ in (("run_cnt", missed + own, r1 - r0),
                          ("recursion_misses", missed, m1 - m0)):
        total = wins[-1][f"{key}_total"]
        if sum(w[key] for w in wins) != total:
            fail(f"perf bpf top: windows of {[w[key] for w in wins]} {key}, total {total}")
        if not lo_ <= total <= hi_:
            fail(f"perf bpf top: {key}_total {total}, want {lo_} to {hi_} (what bpftool "
                 f"saw added while it ran)")
    # the own map's deletes run it without a miss
    if wins[-1]["recursion_misses_total"] + own > wins[-1]["run_cnt_total"] or \
       m1 - m0 >= r1 - r0:
        fail(f"perf bpf top: {wins[-1]['recursion_misses_total']} misses for "
             f"{wins[-1]['run_cnt_total']} runs, bpftool {m1 - m0} for {r1 - r0}: "
             f"the {own} deletes from its own map missed too")
    if any(w["verified_insns"] != insns for w in wins):
        fail(f"perf bpf top: verified_insns {wins[-1]['verified_insns']}, the verifier {insns}")
    print(f"perf bpf top: {wins[-1]['run_cnt_total']} runs and "
          f"{wins[-1]['recursion_misses_total']} misses in {len(wins)} windows; bpftool "
          f"{r0} -> {r1} runs, {m0} -> {m1} misses")
print(f"perf bpf list: misses in [{lo}, {hi}], verified_insns {insns}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf list or top disagree with bpftool, see above"

pbt_links_tell rec stop
exec 3>&-
pbt_wait_gone "$pid" 60 || bpf_test_fail "bpf_links recursion still running 60 s after its stop"
pbt_reap "$pid" || bpf_test_fail "bpf_links recursion: exit $?: $(cat "$tmp/rec.err")"
pbt_end
