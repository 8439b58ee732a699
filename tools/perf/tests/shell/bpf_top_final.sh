#!/bin/bash
# perf bpf top counts a program up to its unload, short-lived ones too
# SPDX-License-Identifier: GPL-2.0
#
# A kernel with the extended BPF records writes a program's last counts
# in its unload record, which perf bpf events -j shows as run_cnt.  With
# perf bpf top -j watching the bpf_links workload's pbt_runs programs
# (tracepoint programs on syscalls:sys_enter_getcpu, which only the
# workload enters):
# - B, loaded after perf bpf top started, runs 200 times and is seen;
#   then, while perf bpf top is stopped (so within one window), it runs
#   400 times more (A's 300 and 100 of its own) and is unloaded: its
#   windows must add up to the run_cnt of its unload record, the last
#   one (marked gone, the only one) holding those 400 runs;
# - A is loaded, run 300 times and unloaded while perf bpf top is stopped,
#   so within one window and before perf bpf top could look it up: it
#   must be shown once, gone, named from its ksymbol, of no known type,
#   with the run_cnt of its unload record (300, and at most 10 more for
#   another task entering getcpu without the vDSO) in that window.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3 bpftool
tmp=$(bpf_test_dir)
pbt_link_records || bpf_test_skip "this kernel writes no extended BPF records"
pbt_require_getcpu

# runs NAME FD: the workload's runs mode, taking orders from FD; once it
# is ready, its program's id is in $id
runs() {
	mkfifo "$tmp/$1.ctl"
	perf test -w bpf_links runs <"$tmp/$1.ctl" >"$tmp/$1.out" 2>"$tmp/$1.err" &
	echo $! >"$tmp/$1.pid"
	bpf_test_track $!
	eval "exec $2>\"\$tmp/\$1.ctl\""
	pbt_wait 120 pbt_links_ready "$1" ||
		bpf_test_fail "bpf_links runs ($1) not ready within 120 s:" \
			"$(cat "$tmp/$1.out" "$tmp/$1.err")"
	id=$(awk '$1 == "prog" && $2 == "runs" { print $3 }' "$tmp/$1.out")
	[ -n "$id" ] || bpf_test_fail "bpf_links runs ($1) gave no program id: $(cat "$tmp/$1.out")"
}

# tell NAME FD ORDER [REPLY]: an order to the workload, and its reply
tell() {
	(echo "$3" >&"$2") 2>/dev/null || bpf_test_fail "bpf_links runs ($1) took no '$3'"
	[ -z "${4:-}" ] || pbt_wait 60 grep -q "^$4" "$tmp/$1.out" ||
		bpf_test_fail "bpf_links runs ($1) did not say '$4' within 60 s:" \
			"$(cat "$tmp/$1.err")"
}

# quit NAME FD: the workload unloads its program and ends
quit() {
	local pid

	pid=$(cat "$tmp/$1.pid")
	tell "$1" "$2" quit
	eval "exec $2>&-"
	pbt_wait_gone "$pid" 60 || bpf_test_fail "bpf_links runs ($1) still running after quit"
	pbt_reap "$pid" || bpf_test_fail "bpf_links runs ($1): exit $?: $(cat "$tmp/$1.err")"
}

# unloaded ID: perf bpf events showed program ID's unload
unloaded() {
	grep -q "\"event\":\"prog_unload\",\"prog_id\":$1," "$tmp/events.out"
}

# top_has ID [PATTERN]: a line of perf bpf top for program ID (matching PATTERN)
top_has() {
	grep "\"prog_id\":$1," "$tmp/top.out" 2>/dev/null | grep -q -- "${2:-}"
}

pbt_events events -j -a
perf bpf top -j -I 300 --name 'pbt_*' -o "$tmp/top.out" 2>"$tmp/top.err" &
top=$!
bpf_test_track $top
# a test that ends while it is stopped lets it go on, to end
trap 'kill -CONT $top 2>/dev/null; pbt_cleanup' EXIT
pbt_wait 60 pbt_holds_stats $top ||
	bpf_test_fail "perf bpf top did not turn stats on within 60 s: $(cat "$tmp/top.err")"

runs b 5
b=$id
tell b 5 "run 200" "ran 200 "
pbt_wait 60 top_has "$b" '"run_cnt_total":2[0-9][0-9],' ||
	bpf_test_fail "perf bpf top does not show B ($b) with its 200 runs within 60 s"

# stopped: its state is T
stopped() {
	[ "$(awk '{ print $3 }' "/proc/$top/stat" 2>/dev/null)" = T ]
}

# A, and B's end, between two reads of perf bpf top
kill -STOP $top
pbt_wait 60 stopped || bpf_test_fail "perf bpf top not stopped within 60 s"
runs a 4
a=$id
tell a 4 "run 300" "ran 300 "
quit a 4
tell b 5 "run 100" "ran 100 "
quit b 5
pbt_wait 60 unloaded "$a" || bpf_test_fail "perf bpf events did not show A's ($a) unload"
pbt_wait 60 unloaded "$b" || bpf_test_fail "perf bpf events did not show B's ($b) unload"
kill -CONT $top
pbt_wait 60 top_has "$a" || bpf_test_fail "perf bpf top never shows A ($a)"
pbt_wait 60 top_has "$b" '"gone":true' || bpf_test_fail "perf bpf top never shows B ($b) gone"
# a window more, that must not show A or B again: C's
runs c 6
c=$id
pbt_wait 60 top_has "$c" || bpf_test_fail "perf bpf top never shows C ($c)"
quit c 6
kill -INT $top
pbt_wait_gone $top 60 || bpf_test_fail "perf bpf top still running 60 s after SIGINT"
pbt_reap $top || bpf_test_fail "perf bpf top: exit $?: $(cat "$tmp/top.err")"
pbt_events_stop events

python3 - "$tmp" "$a" "$b" <<'EOF' ||
import json, sys

tmp, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
errors = []
def fail(msg):
    errors.append(msg)

final, last = {}, {}
for line in open(f"{tmp}/events.out"):
    e = json.loads(line)
    if e.get("event") == "prog_unload" and e.get("prog_id") in (a, b):
        final[e["prog_id"]] = e.get("run_cnt")
        last[e["prog_id"]] = e
rows = [json.loads(l) for l in open(f"{tmp}/top.out")]

ra = [r for r in rows if r["prog_id"] == a]
if final.get(a) is None or not 300 <= final[a] <= 310:
    fail(f"A ({a}): unload record run_cnt {final.get(a)}, want 300 (+10 at most)")
if len(ra) != 1:
    fail(f"A ({a}): {len(ra)} lines of perf bpf top, want one: {ra}")
elif (ra[0]["run_cnt"], ra[0]["run_cnt_total"], ra[0]["gone"], ra[0]["prog_name"],
      ra[0]["prog_type"]) != (final.get(a), final.get(a), True, "pbt_runs", "-"):
    fail(f"A ({a}): {ra[0]}, want run_cnt and run_cnt_total {final.get(a)}, gone, "
         f"named pbt_runs, type -")
else:
    print(f"A ({a}): {ra[0]['run_cnt']} runs in its one window, gone, as its unload record says")

# run time and recursion misses too, windows and totals, for both
for p, mine in ((a, ra), (b, [r for r in rows if r["prog_id"] == b])):
    e = last.get(p, {})
    for key in ("run_time_ns", "recursion_misses"):
        if not mine or e.get(key) is None:
            continue
        if sum(r[key] for r in mine) != e[key] or mine[-1][f"{key}_total"] != e[key]:
            fail(f"prog {p}: windows {[r[key] for r in mine]}, {key}_total "
                 f"{mine[-1][f'{key}_total']}, want both {e[key]} (its unload record)")

rb = [r for r in rows if r["prog_id"] == b]
gone = [r for r in rb if r["gone"]]
if final.get(b) is None or final[b] < 600:
    fail(f"B ({b}): unload record run_cnt {final.get(b)}, want 600 or more")
if len(gone) != 1 or rb[-1] is not gone[0]:
    fail(f"B ({b}): {len(gone)} windows marked gone, want its last one only")
elif gone[0]["run_cnt"] < 400:
    fail(f"B ({b}): {gone[0]['run_cnt']} runs in the window it went in, want the 400 "
         f"it ran then")
if rb and (sum(r["run_cnt"] for r in rb) != final.get(b) or
           rb[-1]["run_cnt_total"] != final.get(b)):
    fail(f"B ({b}): windows {[r['run_cnt'] for r in rb]}, total {rb[-1]['run_cnt_total']}, "
         f"want both {final.get(b)} (its unload record)")
elif rb:
    print(f"B ({b}): {len(rb)} windows of {[r['run_cnt'] for r in rb]} runs, "
          f"adding up to its unload record's {final.get(b)}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf top's last windows disagree with the unload records, see above"
pbt_end
