#!/bin/bash
# perf bpf top --hist times each run of a program
# SPDX-License-Identifier: GPL-2.0
#
# The bpf_links workload's pbt_loop, a tracepoint program on
# syscalls:sys_enter_getcpu (which only the workload enters), calls
# bpf_loop() as many times as the workload sets before each run.  With
# perf bpf top -j --hist watching it, the workload runs it 100 times
# short (1000 loops), then 40 times long (50000), then 200 times in a
# mix, every tenth long, then short and mix twice more (101 and 201
# runs, 102 and 202).  Over the windows of each phase:
# - the runs timed (hist_runs) are the kernel's run_cnt, give or take a
#   run in flight at a window's edge, and the buckets add up to them;
# - the long runs' p50 bucket lies at least 8 times above the first
#   short ones'; the first mix's p50 falls in the short runs' p50 bucket
#   (or one of its neighbours: the machine is noisy), its p99 among the
#   long runs' buckets (from the one below their p50 to the one above
#   their slowest), as its slowest 1% are its slowest tenth of long runs;
# - each mix's mean run time (hist_time_ns / hist_runs) is within 10% of
#   the kernel's (run_time_ns / run_cnt) less what timing adds to a run
#   (the trampoline and the programs, which the kernel's time includes:
#   the least excess a run of the three short phases).  The host may
#   stop the VM for milliseconds between the kernel's clock read and the
#   timing's: that adds to the kernel's time only (3 ms over 100 runs of
#   10 us is 30 us a run), so the least excess is the cost unless all
#   three short phases stalled, and one mix below the kernel's is let
#   pass; one above it, or two below, fail;
# - the short phases' median excess is not below -max(1 us, 5% of a
#   short run): the timing takes in no more than the run (the median:
#   with such a timing every phase is below, and one stall may raise one
#   of them).
# In every window, p50_ns, p90_ns and p99_ns are the ends of the buckets
# the histogram puts them in (or max_ns, when smaller), and max_ns lies in
# its last bucket.  -x gives the same fields, the histogram as
# from-to:count pairs; in the TUI, ENTER draws the selected program's
# histogram of the last window, as runqlat draws one; and the program is
# let go of once the workload ends: perf bpf top shows it gone.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(bpf_test_dir)
pbt_require_getcpu
pbt_top_takes --hist

n=1000
mkfifo "$tmp/loop.ctl"
perf test -w bpf_links loop <"$tmp/loop.ctl" >"$tmp/loop.out" 2>"$tmp/loop.err" &
pid=$!
bpf_test_track $pid
echo $pid >"$tmp/loop.pid"
exec 3>"$tmp/loop.ctl"
pbt_wait 120 pbt_links_ready loop ||
	bpf_test_fail "bpf_links loop not ready within 120 s:" \
		"$(cat "$tmp/loop.out" "$tmp/loop.err")"
id=$(awk '$1 == "prog" && $2 == "loop" { print $3 }' "$tmp/loop.out")
[ -n "$id" ] || bpf_test_fail "no program id from bpf_links loop: $(cat "$tmp/loop.out")"

perf bpf top -j -I 500 --hist --id "$id" -o "$tmp/top.out" 2>"$tmp/top.err" &
top=$!
bpf_test_track $top

# timed: a window of perf bpf top has its runs timed
timed() {
	grep -q '"hist_runs":' "$tmp/top.out" 2>/dev/null
}
pbt_wait 60 timed ||
	bpf_test_fail "perf bpf top --hist timed no window within 60 s: $(cat "$tmp/top.err")"

# phase ORDER TOTAL: the workload runs ORDER (each with another K: the
# reply "ran K" is its own); then a window of perf bpf top counts TOTAL
# runs since its start, and its line number ends the phase in $tmp/phases
phase() {
	local total=$2 k=${1#* }

	k=${k%% *}
	pbt_links_tell loop "$1"
	pbt_wait 120 grep -qx "ran $k" "$tmp/loop.out" ||
		bpf_test_fail "bpf_links loop did not '$1' within 120 s: $(cat "$tmp/loop.err")"
	pbt_wait 120 reached "$total" ||
		bpf_test_fail "no window of perf bpf top counts $total runs within 120 s:" \
			"$(tail -n 1 "$tmp/top.out")"
	grep -n . "$tmp/top.out" | awk -F: -v t="$total" '
		match($0, /"run_cnt_total":[0-9]+/) &&
		substr($0, RSTART + 16, RLENGTH - 16) + 0 >= t { print $1; exit }' >>"$tmp/phases"
}
reached() {
	grep -o '"run_cnt_total":[0-9]*' "$tmp/top.out" |
		awk -F: -v t="$1" '$2 >= t { found = 1 } END { exit !found }'
}
phase "run 100 $n" 100
phase "run 40 $((50 * n))" 140
phase "mix 200 $n" 340
phase "run 101 $n" 441
phase "mix 201 $n" 642
phase "run 102 $n" 744
phase "mix 202 $n" 946

# While the program runs without a pause (spin): -x gives the same
# fields, the histogram as from-to:count pairs, and in the TUI, ENTER
# draws the selected program's histogram of the last window, refreshed
# until a key.  A perf bpf top that attaches while the program runs must
# time its runs all the same (within 10% of the kernel's count in each
# window, as runs go on while the two are read).
pbt_links_tell loop "spin $n"
timeout 120 perf bpf top -x';' -I 300 --interval-count 4 --hist --id "$id" -o "$tmp/top.csv" \
	2>"$tmp/csv.err" || bpf_test_fail "perf bpf top -x --hist: $(cat "$tmp/csv.err")"
if ! command -v script >/dev/null; then
	echo "script not found: perf bpf top not run on a terminal"
elif ! perf version --build-options | grep -Eq 'libslang: +\[ on'; then
	echo "perf built without libslang: no TUI to run"
else
	mkfifo "$tmp/keys"
	# -f: what the TUI draws is in $tmp/tui as it draws it
	TERM=xterm LINES=40 COLUMNS=160 timeout 300 \
		script -qfec "perf bpf top -d 1 --hist --id $id" "$tmp/tui" \
		<"$tmp/keys" >/dev/null 2>&1 &
	tui=$!
	bpf_test_track $tui
	exec 5>"$tmp/keys"
	pbt_wait 60 grep -aq 'RUNS/s' "$tmp/tui" ||
		bpf_test_fail "no TUI within 60 s: $(cat "$tmp/tui")"
	printf '\r' >&5
	# the screen, drawn again from what was written to the terminal,
	# until the window shows runs (at most 60 s)
	python3 - "$tmp/tui" <<'EOF' >"$tmp/screen" ||
import re, sys, time

path, rows, cols = sys.argv[1], 40, 160
# line drawing characters, in the terminal's alternate set
acs = {"q": "-", "x": "|", "l": "+", "k": "+", "m": "+", "j": "+"}
esc = re.compile(r"\x1b(?:\[([0-9;?]*)([A-Za-z])|\(([0B])|.)")

def screen(data):
    grid = [[" "] * cols for _ in range(rows)]
    r = c = 0
    alt = False
    i = 0
    while i < len(data):
        m = esc.match(data, i) if data[i] == "\x1b" else None
        if m:
            i = m.end()
            if m.group(2) == "H":
                args = (m.group(1) or "").split(";")
                r = int(args[0] or 1) - 1
                c = int(args[1] or 1) - 1 if len(args) > 1 else 0
            elif m.group(2) == "J":
                grid = [[" "] * cols for _ in range(rows)]
            elif m.group(3):
                alt = m.group(3) == "0"
            continue
        ch = data[i]
        i += 1
        if ch == "\r":
            c = 0
        elif ch == "\n":
            r += 1
        elif ch >= " ":
            if 0 <= r < rows and 0 <= c < cols:
                grid[r][c] = acs.get(ch, ch) if alt else ch
            c += 1
    return "\n".join("".join(x).rstrip() for x in grid)

end = time.time() + 60
while True:
    text = screen(open(path, "rb").read().decode("latin-1"))
    if re.search(r"[1-9][0-9]* runs timed", text) and "|*" in text:
        print(text)
        sys.exit(0)
    if time.time() > end:
        print(text)
        sys.exit(1)
    time.sleep(0.2)
EOF
		bpf_test_fail "no histogram with runs in the TUI within 60 s: $(cat "$tmp/screen")"
	for what in "p50 " "nsecs" "distribution" " -> "; do
		grep -qF -- "$what" "$tmp/screen" ||
			bpf_test_fail "no '$what' in the TUI's histogram: $(cat "$tmp/screen")"
	done
	printf ' ' >&5
	printf 'q' >&5
	exec 5>&-
	pbt_wait_gone $tui 60 || bpf_test_fail "perf bpf top's TUI did not quit within 60 s"
	pbt_reap $tui || bpf_test_fail "perf bpf top's TUI: exit $?"
	echo "TUI: the histogram of the selected program drawn:"
	grep -E 'runs timed|p50|nsecs|\|\*' "$tmp/screen"
fi
pbt_links_tell loop stop
pbt_wait 60 grep -q '^spun ' "$tmp/loop.out" ||
	bpf_test_fail "bpf_links loop did not stop spinning within 60 s"

# the program is let go of: unloaded once the workload ends
pbt_links_tell loop quit
exec 3>&-
pbt_wait_gone "$pid" 60 || bpf_test_fail "bpf_links loop still running 60 s after quit"
pbt_reap "$pid" || bpf_test_fail "bpf_links loop: exit $?: $(cat "$tmp/loop.err")"
pbt_wait 60 grep -q "\"prog_id\":$id,.*\"gone\":true" "$tmp/top.out" ||
	bpf_test_fail "perf bpf top --hist never shows pbt_loop ($id) gone: it holds it still?"
kill -INT $top
pbt_wait_gone $top 60 || bpf_test_fail "perf bpf top still running 60 s after SIGINT"
pbt_reap $top || bpf_test_fail "perf bpf top: exit $?: $(cat "$tmp/top.err")"

python3 - "$tmp" "$id" <<'EOF' ||
import json, sys

tmp, pid = sys.argv[1], int(sys.argv[2])
errors = []
def fail(msg):
    errors.append(msg)

lines = open(f"{tmp}/top.out").read().splitlines()
ends = [int(x) for x in open(f"{tmp}/phases").read().split()]
starts = [0] + ends[:-1]
names = ["short", "long", "mix", "short2", "mix2", "short3", "mix3"]

def bucket(v):
    return max(v, 1).bit_length() - 1

# perf's percentiles and longest run of window R, against its histogram
def window(r):
    hist = [(lo, hi, c) for lo, hi, c in r["hist"] if c]
    if not hist:
        return
    for p in (50, 90, 99):
        seen = 0
        for lo, hi, c in hist:
            seen += c
            if seen * 100 >= p * r["hist_runs"]:
                break
        if r[f"p{p}_ns"] != min(hi, r["max_ns"]):
            fail(f"p{p}_ns {r[f'p{p}_ns']}, want {min(hi, r['max_ns'])}: {r}")
    if not hist[-1][0] <= r["max_ns"] <= hist[-1][1]:
        fail(f"max_ns {r['max_ns']} out of the last bucket {hist[-1]}")

def sums(rows):
    s = {"buckets": {}, "hist_runs": 0, "hist_time_ns": 0, "run_cnt": 0, "run_time_ns": 0,
         "windows": []}
    for r in rows:
        if "hist_runs" not in r:
            if r["run_cnt"]:
                fail(f"a window of {r['run_cnt']} runs not timed: {r}")
            continue
        window(r)
        if sum(b[2] for b in r["hist"]) != r["hist_runs"]:
            fail(f"buckets adding up to {sum(b[2] for b in r['hist'])}, not {r['hist_runs']}")
        for lo, hi, c in r["hist"]:
            if (lo, hi) != ((1 << bucket(lo)) if lo else 0, (1 << (bucket(lo) + 1)) - 1):
                fail(f"bucket {lo}-{hi}: not a power of two range")
            s["buckets"][bucket(lo)] = s["buckets"].get(bucket(lo), 0) + c
        for k in ("hist_runs", "hist_time_ns", "run_cnt", "run_time_ns"):
            s[k] += r[k]
        s["windows"].append(tuple(r[k] for k in ("hist_runs", "hist_time_ns", "run_cnt",
                                                 "run_time_ns")))
    return s

def pct(s, p):
    seen, total = 0, sum(s["buckets"].values())
    for b in sorted(s["buckets"]):
        seen += s["buckets"][b]
        if seen * 100 >= p * total:
            return b
    return -1

phases = {}
for name, a, b in zip(names, starts, ends):
    rows = [json.loads(l) for l in lines[a:b]]
    rows = [r for r in rows if r["prog_id"] == pid]
    s = phases[name] = sums(rows)
    if abs(s["hist_runs"] - s["run_cnt"]) > 2 or not s["run_cnt"]:
        fail(f"{name}: {s['hist_runs']} runs timed, the kernel counted {s['run_cnt']}")
    print(f"{name}: {s['run_cnt']} runs, timed {s['hist_runs']}, p50 bucket {pct(s, 50)}, "
          f"p99 bucket {pct(s, 99)}, buckets {dict(sorted(s['buckets'].items()))}")

short, long_, mix = (phases[x] for x in names[:3])
sb, lb = pct(short, 50), pct(long_, 50)
if lb < sb + 3:
    fail(f"long runs' p50 bucket {lb}, short ones' {sb}: 50 times the loops, want 8 times apart")
if abs(pct(mix, 50) - sb) > 1:
    fail(f"mix: p50 bucket {pct(mix, 50)}, want the short runs' {sb} (+-1)")
top = max(b for b, c in long_["buckets"].items() if c)
if not lb - 1 <= pct(mix, 99) <= top + 1:
    fail(f"mix: p99 bucket {pct(mix, 99)}, want one of the long runs': {lb - 1} to {top + 1}")
# The kernel's run time of a run includes what timing adds to it (the
# trampoline, the fentry and fexit programs), which perf bpf top does not
# time: a cost a run, which a debug kernel makes tens of us.  A phase's
# excess (the kernel's time beyond the time timed, a run, over the
# phase's whole: its last window holds all its runs on both sides) is
# that cost plus any stall of the VM outside the timed part, which only
# adds: the least of three is the cost.  A timing that took in more than
# the run (a stale start) makes the excess negative; one that lost a
# share of each run loses more of the mix's longer runs, in every mix,
# whereas a stall makes one mix look short.
# The kernel times a run with sched_clock(), perf bpf top with
# bpf_ktime_get_ns(): a failure says which clocksource the latter read.
cs = open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()
def excess(s):
    return (s["run_time_ns"] - s["hist_time_ns"]) / s["run_cnt"] if s["run_cnt"] else 0

shorts = sorted(excess(phases[x]) for x in ("short", "short2", "short3"))
cost = max(shorts[0], 0)
print(f"timing's cost a run: {cost:.0f} ns (short phases' excess: "
      f"{', '.join(f'{x:.0f}' for x in shorts)} ns)")
smean = short["hist_time_ns"] / max(short["hist_runs"], 1)
if shorts[1] < -max(1000, 0.05 * smean):
    fail(f"short phases: runs timed {-shorts[1]:.0f} ns longer than the kernel's own"
         f" (excess a run {[round(x) for x in shorts]} ns): the timing takes in more"
         f" than the run")
low = []
for name in ("mix", "mix2", "mix3"):
    mixw = [w for w in phases[name]["windows"] if w[0] and w[2]]
    if not mixw:
        fail(f"{name}: no window timed")
        continue
    mean = sum(w[1] for w in mixw) / sum(w[0] for w in mixw)
    kmean = sum(w[3] for w in mixw) / sum(w[2] for w in mixw) - cost
    print(f"{name}: mean run {mean:.0f} ns timed, {kmean:.0f} ns by the kernel less"
          f" the cost ({len(mixw)} windows)")
    if abs(mean - kmean) <= 0.1 * kmean:
        continue
    what = (f"{name}: mean run {mean:.0f} ns, the kernel's {kmean:.0f} ns: more than 10%"
            f" apart (clocksource {cs}; hist_runs, hist_time_ns, run_cnt, run_time_ns a"
            f" window: {phases[name]['windows']})")
    if mean > kmean:
        fail(what)
    else:
        low.append(what)
if len(low) > 1:
    fail(f"{len(low)} of 3 mixes short of the kernel's: {'; '.join(low)}")
elif low:
    print(f"one mix short of the kernel's, taken as a stall of the VM: {low[0]}")

csv = open(f"{tmp}/top.csv").read().splitlines()
head = csv[0].split(";")
want = ["hist_runs", "hist_time_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "hist"]
if [h for h in head if h in want] != want:
    fail(f"-x header: {csv[0]}")
timed = 0
for row in csv[1:]:
    r = dict(zip(head, row.split(";")))
    if r.get("hist"):
        pairs = [p.replace("-", ":").split(":") for p in r["hist"].split(" ")]
        if sum(int(p[2]) for p in pairs) != int(r["hist_runs"]):
            fail(f"-x: histogram {r['hist']} of {r['hist_runs']} runs")
        # runs go on as the kernel's counts and the histogram are read
        # one after the other: a window's edges may differ by a few
        if abs(int(r["hist_runs"]) - int(r["run_cnt"])) > 2 + int(r["run_cnt"]) // 10:
            fail(f"-x: {r['hist_runs']} runs timed, the kernel counted {r['run_cnt']}")
        timed += int(r["hist_runs"])
if not timed:
    fail(f"-x: no runs timed while the program ran: {csv}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf top --hist: see above"
pbt_end
