#!/bin/bash
# perf bpf top counts the runs of a program loaded after it started (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# perf bpf top -j runs first, then is stopped (SIGSTOP) while the
# bpf_links workload loads pbt_runs, a tracepoint program on
# syscalls:sys_enter_getcpu, which only the workload enters, and enters
# getcpu 200 times.  Let go, perf bpf top must find the program through
# its load record and count those 200 runs in its first window, with its
# attach point; after 1000 more, 1200 since start (a few more are allowed
# for another task entering getcpu without the vDSO), a run time, and
# windows that add up to the totals.  A second perf bpf top started while
# the program is there counts only the runs after its start, and marks
# the program gone after its unload.  CSV, -E, the text screen (on a pipe
# and on a pseudo-terminal) and the TUI show it too.  After kill -9 of perf bpf
# top, BPF stats are off again: the program's run count stays as it was
# while it runs on.  With -e cpu-clock, the counts cover every run within
# the run time, the profiler's programs are not shown, and the program is
# still let go and unloaded.  With kernel.bpf_stats_enabled already 1, perf bpf
# top says so and leaves it.  Bad options and a user without
# CAP_SYS_ADMIN get an error.  Exclusive: it needs BPF stats off.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3 bpftool
tmp=$(bpf_test_dir)
early=200
runs=1000
ncpus=$(getconf _NPROCESSORS_ONLN)

stats=$(cat /proc/sys/kernel/bpf_stats_enabled) || bpf_test_skip "no kernel.bpf_stats_enabled"
[ "$stats" = 0 ] ||
	bpf_test_skip "kernel.bpf_stats_enabled is 1: perf bpf top's own stats cannot be told apart"
pbt_require_getcpu

stats_are() {
	[ "$(cat /proc/sys/kernel/bpf_stats_enabled)" = "$1" ]
}

for p in /proc/[0-9]*; do
	! pbt_holds_stats "${p#/proc/}" ||
		bpf_test_skip "process ${p#/proc/} holds BPF stats on (BPF_ENABLE_STATS)"
done

# run_top NAME ARGS...: perf bpf top in the background, output in NAME.out;
# returns once it holds BPF stats on, which it does after it opened the
# side-band records, so that any program loaded from then on is new to it.
run_top() {
	local name=$1 pid

	shift
	perf bpf top -o "$tmp/$name.out" "$@" 2>"$tmp/$name.err" &
	pid=$!
	bpf_test_track $pid
	echo $pid >"$tmp/$name.pid"
	pbt_wait 60 pbt_holds_stats $pid ||
		bpf_test_fail "perf bpf top $* did not turn stats on within 60 s:" \
			"$(cat "$tmp/$name.err")"
}

# has_line FILE ID [PATTERN]: FILE has a JSON line of program ID (matching PATTERN)
has_line() {
	grep "\"prog_id\":$2," "$1" 2>/dev/null | grep -q -- "${3:-}"
}

run_top main -j -I 300 --name 'pbt_*'
main=$(cat "$tmp/main.pid")

# While perf bpf top is stopped, the workload loads and attaches as soon
# as it starts (orders on fd 3), and runs the program.
kill -STOP "$main"
mkfifo "$tmp/runs.ctl"
perf test -w bpf_links runs <"$tmp/runs.ctl" >"$tmp/runs.out" 2>"$tmp/runs.err" &
pid=$!
bpf_test_track $pid
echo $pid >"$tmp/runs.pid"
exec 3>"$tmp/runs.ctl"
pbt_wait 120 pbt_links_ready runs ||
	bpf_test_fail "bpf_links runs not ready within 120 s:" \
		"$(cat "$tmp/runs.out" "$tmp/runs.err")"
id=$(awk '$1 == "prog" && $2 == "runs" { print $3 }' "$tmp/runs.out")
[ -n "$id" ] || bpf_test_fail "no program id from bpf_links runs: $(cat "$tmp/runs.out")"

pbt_links_tell runs "run $early"
pbt_wait 120 grep -q "^ran $early " "$tmp/runs.out" ||
	bpf_test_fail "bpf_links runs did not run within 120 s: $(cat "$tmp/runs.err")"
kill -CONT "$main"

pbt_wait 60 has_line "$tmp/main.out" "$id" ||
	bpf_test_fail "pbt_runs ($id), loaded after perf bpf top started, not shown within 60 s:" \
		"$(cat "$tmp/main.err")"
pbt_wait 60 has_line "$tmp/main.out" "$id" 'sys_enter_getcpu' ||
	bpf_test_fail "pbt_runs shown without its attach point:" \
		"$(grep -m1 "\"prog_id\":$id," "$tmp/main.out")"
echo "pbt_runs ($id) shown: $(grep -m1 "\"prog_id\":$id," "$tmp/main.out")"

pbt_links_tell runs "run $runs"
pbt_wait 120 grep -q "^ran $runs " "$tmp/runs.out" ||
	bpf_test_fail "bpf_links runs did not run within 120 s: $(cat "$tmp/runs.err")"
pbt_wait 60 has_line "$tmp/main.out" "$id" "\"run_cnt_total\":1[2-9][0-9][0-9]," ||
	bpf_test_fail "no window shows $((early + runs)) runs of pbt_runs within 60 s"
# the window after that one is printed complete
more_lines() {
	[ "$(wc -l <"$1")" -gt "$2" ]
}
pbt_wait 60 more_lines "$tmp/main.out" "$(wc -l <"$tmp/main.out")" ||
	bpf_test_fail "perf bpf top printed nothing more within 60 s"

python3 - "$tmp/main.out" "$id" "$early" "$runs" "$ncpus" <<'EOF' ||
import json, sys

path, pid, early, runs, ncpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
runs += early
rows = []
for line in open(path):
    try:
        rows.append(json.loads(line))
    except ValueError:
        if line.endswith("\n"):
            sys.exit("not JSON: %r" % line)
mine = [r for r in rows if r["prog_id"] == pid]
errors = []
if any(not r["prog_name"].startswith("pbt_") for r in rows):
    errors.append("--name 'pbt_*' let other programs through")
keys = {"time", "prog_id", "prog_name", "prog_type", "run_cnt", "run_time_ns", "avg_ns",
        "runs_per_sec", "cpu_pct", "cpu_pct_all", "run_cnt_total", "run_time_ns_total",
        "recursion_misses", "recursion_misses_total", "verified_insns", "gone", "attach"}
if set(mine[0]) != keys:
    errors.append("keys %s, want %s" % (sorted(mine[0]), sorted(keys)))
first = mine[0]
# pbt_runs is "r0 = 0; exit", and nothing it runs on can nest
if first["verified_insns"] != 2 or mine[-1]["recursion_misses_total"] != 0:
    errors.append("verified_insns %d, want 2; recursion_misses_total %d, want 0"
                  % (first["verified_insns"], mine[-1]["recursion_misses_total"]))
if not early <= first["run_cnt_total"] <= early + 10 or first["run_cnt"] != first["run_cnt_total"]:
    errors.append("first window: %d runs, %d since start; want the %d before it (+10 at most)"
                  % (first["run_cnt"], first["run_cnt_total"], early))
if mine[0]["prog_type"] != "tracepoint" or mine[0]["prog_name"] != "pbt_runs":
    errors.append("name and type: %s %s" % (mine[0]["prog_name"], mine[0]["prog_type"]))
last = mine[-1]
if not runs <= last["run_cnt_total"] <= runs + 10:
    errors.append("%d runs since start, want %d (+10 at most)" % (last["run_cnt_total"], runs))
if last["run_time_ns_total"] <= 0:
    errors.append("no run time")
total_cnt = sum(r["run_cnt"] for r in mine)
total_ns = sum(r["run_time_ns"] for r in mine)
if total_cnt != last["run_cnt_total"] or total_ns != last["run_time_ns_total"]:
    errors.append("windows add up to %d runs %d ns, totals %d runs %d ns" %
                  (total_cnt, total_ns, last["run_cnt_total"], last["run_time_ns_total"]))
prev = 0
for r in mine:
    if r["time"] <= prev:
        errors.append("time %s after %s" % (r["time"], prev))
    prev = r["time"]
    if r["run_cnt"] and r["avg_ns"] != r["run_time_ns"] // r["run_cnt"]:
        errors.append("avg_ns %d of %d ns / %d runs" %
                      (r["avg_ns"], r["run_time_ns"], r["run_cnt"]))
    if abs(r["cpu_pct_all"] * ncpus - r["cpu_pct"]) > 0.001 * ncpus + 0.001:
        errors.append("cpu_pct_all %s is not cpu_pct %s / %d CPUs" %
                      (r["cpu_pct_all"], r["cpu_pct"], ncpus))
    if r["gone"]:
        errors.append("gone while loaded")
busy = [r for r in mine if r["run_cnt"]]
print("%d windows, %d with runs; %d runs, %d ns since start" %
      (len(mine), len(busy), last["run_cnt_total"], last["run_time_ns_total"]))
if errors:
    sys.exit("; ".join(errors))
EOF
	bpf_test_fail "perf bpf top -j: see above; output:" \
		"$(grep "\"prog_id\":$id," "$tmp/main.out")"

# CSV: a header, then a line of pbt_runs
perf bpf top -x';' -I 200 --interval-count 1 --id "$id" >"$tmp/csv" 2>"$tmp/csv.err" ||
	bpf_test_fail "perf bpf top -x failed: $(cat "$tmp/csv.err")"
head -n 1 "$tmp/csv" | grep -q '^time;prog_id;prog_name;prog_type;run_cnt;run_time_ns;' ||
	bpf_test_fail "no CSV header: $(head -n 1 "$tmp/csv")"
[ "$(grep -c "^[0-9.]*;$id;pbt_runs;tracepoint;" "$tmp/csv")" = 1 ] ||
	bpf_test_fail "no one CSV line of pbt_runs: $(cat "$tmp/csv")"
grep -q "^[0-9.]*;$id;.*;false;perf_event tracepoint sys_enter_getcpu$" "$tmp/csv" ||
	bpf_test_fail "CSV: no gone and attach columns: $(cat "$tmp/csv")"
perf bpf top -x';' -I 200 --interval-count 1 -E 1 -s id >"$tmp/csv1" 2>"$tmp/csv.err" ||
	bpf_test_fail "perf bpf top -E 1 failed: $(cat "$tmp/csv.err")"
[ "$(wc -l <"$tmp/csv1")" = 2 ] || bpf_test_fail "-E 1: not one line: $(cat "$tmp/csv1")"

# text, on a pipe and on a pseudo-terminal
perf bpf top --stdio -d 0.2 --interval-count 1 --id "$id" >"$tmp/text" 2>"$tmp/text.err" ||
	bpf_test_fail "perf bpf top --stdio failed: $(cat "$tmp/text.err")"
grep -Eq "^ *$id pbt_runs +tracepoint " "$tmp/text" ||
	bpf_test_fail "no row of pbt_runs in the text: $(cat "$tmp/text")"
if ! command -v script >/dev/null; then
	echo "script not found: perf bpf top not run on a terminal"
elif ! perf version --build-options | grep -Eq 'libslang: +\[ on'; then
	echo "perf built without libslang: no TUI to run"
else
	# the TUI
	TERM=xterm LINES=24 COLUMNS=160 timeout 120 \
		script -qec "perf bpf top -d 1 --interval-count 2 --id $id" "$tmp/tui" \
		>/dev/null 2>&1 </dev/null ||
		bpf_test_fail "perf bpf top on a terminal failed: $(cat "$tmp/tui")"
	grep -aq "pbt_runs" "$tmp/tui" || bpf_test_fail "no pbt_runs in the TUI: $(cat "$tmp/tui")"
	# the browser takes the alternate screen, the text screen does not
	grep -aq $'\033\[?1049h' "$tmp/tui" ||
		bpf_test_fail "no TUI on the terminal: $(cat "$tmp/tui")"
	grep -aq "RUNS/s" "$tmp/tui" ||
		bpf_test_fail "no column heads in the TUI: $(cat "$tmp/tui")"
	grep -aq "1 programs, 1 shown" "$tmp/tui" ||
		bpf_test_fail "no summary line in the TUI: $(cat "$tmp/tui")"
fi
if command -v script >/dev/null; then
	# the text screen, cleared before each refresh
	TERM=xterm LINES=24 COLUMNS=160 timeout 120 \
		script -qec "perf bpf top --stdio -d 0.2 --interval-count 2 --id $id" "$tmp/tty" \
		>/dev/null 2>&1 </dev/null ||
		bpf_test_fail "perf bpf top --stdio on a terminal failed: $(cat "$tmp/tty")"
	grep -aq "pbt_runs" "$tmp/tty" ||
		bpf_test_fail "no pbt_runs on the terminal: $(cat "$tmp/tty")"
	grep -aq $'\033\[2J' "$tmp/tty" ||
		bpf_test_fail "the terminal was not cleared between screens"
	echo "on a terminal: $(grep -a -m1 pbt_runs "$tmp/tty" | tr -d '\r')"
fi

# kill -9: the kernel turns the stats off with the fd; the run count stays
kill -9 "$(cat "$tmp/main.pid")"
pbt_wait_gone "$(cat "$tmp/main.pid")" 60 || bpf_test_fail "perf bpf top outlived kill -9"
cnt() {
	bpftool prog show id "$id" -j |
		python3 -c 'import json, sys; print(json.load(sys.stdin).get("run_cnt", 0))'
}
before=$(cnt)
pbt_links_tell runs "run 100"
pbt_wait 120 grep -q "^ran 100 " "$tmp/runs.out" || bpf_test_fail "bpf_links runs did not run again"
after=$(cnt)
[ "$before" = "$after" ] && [ "$before" -ge "$runs" ] ||
	bpf_test_fail "after kill -9 of perf bpf top: run_cnt $before, then $after" \
		"after 100 more runs"
echo "after kill -9: stats off, run_cnt stays $before over 100 more runs"

# A program there at start: only the runs after count.  Unloaded, it is
# marked gone.  With -e cpu-clock, the profiler counts around each run
# (the program has BTF), its own programs are not shown, and it lets go
# of the program once nothing else holds it, for it to be unloaded.
run_top gone -j -I 300 --id "$id"
pbt_wait 60 has_line "$tmp/gone.out" "$id" || bpf_test_fail "perf bpf top --id $id shows nothing"
# -e needs perf's BPF skeletons and fentry on BPF programs (a JIT, BPF
# trampolines): perf stat -b on the program tells
if ! perf version --build-options | grep -Eq 'bpf_skeletons: +\[ on'; then
	ev="perf built without BPF skeletons"
elif ! perf stat -b "$id" -e cpu-clock --timeout 100 >"$tmp/stat-b.out" 2>&1; then
	grep -Eq "Does .* have BTF|load failed" "$tmp/stat-b.out" ||
		bpf_test_fail "perf stat -b $id failed: $(cat "$tmp/stat-b.out")"
	ev="perf stat -b cannot profile pbt_runs: $(cat "$tmp/stat-b.out")"
else
	ev=
	run_top ev -j -I 300 -e cpu-clock --prog-type tracepoint,tracing
	pbt_wait 60 has_line "$tmp/ev.out" "$id" '"cpu-clock_total":' ||
		bpf_test_fail "perf bpf top -e cpu-clock counts nothing of pbt_runs:" \
			"$(tail -n 3 "$tmp/ev.out") $(cat "$tmp/ev.err")"
	# the ids of the programs it holds: its profiler's
	own_ids() {
		grep -h '^prog_id:' "/proc/$(cat "$tmp/ev.pid")/fdinfo/"* 2>/dev/null |
			awk '{ print $2 }' | sort -u | tr '\n' ' '
	}
	own=$(own_ids)
	[ -n "$own" ] || bpf_test_fail "perf bpf top -e cpu-clock holds no profiler program"
fi
pbt_links_tell runs "run 50"
pbt_wait 120 grep -q "^ran 50 " "$tmp/runs.out" || bpf_test_fail "bpf_links runs did not run again"
pbt_wait 60 has_line "$tmp/gone.out" "$id" '"run_cnt_total":[5-9][0-9],' ||
	bpf_test_fail "perf bpf top started after $((early + runs + 100)) runs does not show 50:" \
		"$(tail -n 3 "$tmp/gone.out")"
has_line "$tmp/gone.out" "$id" '"run_cnt_total":\([6-9][0-9]\|[0-9]\{3,\}\),' &&
	bpf_test_fail "perf bpf top started when the program was there counts runs from before:" \
		"$(tail -n 3 "$tmp/gone.out")"
pbt_links_tell runs "run 500"
pbt_wait 120 grep -q "^ran 500 " "$tmp/runs.out" || bpf_test_fail "bpf_links runs did not run again"
if [ -n "$ev" ]; then
	echo "-e not tested: $ev"
else
pbt_wait 60 has_line "$tmp/ev.out" "$id" '"run_cnt_total":55[0-9],' ||
	bpf_test_fail "perf bpf top -e cpu-clock did not count 550 runs: $(tail -n 3 "$tmp/ev.out")"
pbt_wait 60 more_lines "$tmp/ev.out" "$(wc -l <"$tmp/ev.out")" ||
	bpf_test_fail "perf bpf top -e printed nothing more within 60 s"
python3 - "$tmp/ev.out" "$id" "$own" <<'EOF' ||
import json, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.endswith("\n")]
mine = [r for r in rows if r["prog_id"] == int(sys.argv[2])]
own = set(int(i) for i in sys.argv[3].split())
errors = []
shown = sorted(set(r["prog_id"] for r in rows) & own)
if shown:
    errors.append("the profiler's own programs %s shown" % shown)
whole = [r for r in mine if "cpu-clock" in r]
if len(whole) != len(mine):
    errors.append("%d of %d windows without a cpu-clock count" % (len(mine) - len(whole),
                                                                  len(mine)))
runs = sum(r["run_cnt"] for r in whole)
ns = sum(r["run_time_ns"] for r in whole)
clock = sum(r["cpu-clock"] for r in whole)
if runs < 550:
    errors.append("%d runs in whole windows, want 550" % runs)
# the profiler reads the clock inside each run the kernel times (a VM
# stall there may make the run time far longer: no bound below)
if not 0 < clock <= 1.05 * ns + 1000:
    errors.append("cpu-clock %d ns over %d runs taking %d ns" % (clock, runs, ns))
if whole and whole[-1]["cpu-clock_total"] != clock:
    errors.append("windows add up to %d ns of cpu-clock, the total is %d" %
                  (clock, whole[-1]["cpu-clock_total"]))
for r in whole:
    if r["run_cnt"] and abs(r["cpu-clock_per_run"] - r["cpu-clock"] / r["run_cnt"]) > 0.1:
        errors.append("cpu-clock_per_run %s of %d / %d" % (r["cpu-clock_per_run"],
                                                          r["cpu-clock"], r["run_cnt"]))
    if not r["run_cnt"] and "cpu-clock_per_run" in r:
        errors.append("cpu-clock_per_run without runs")
    # each window of enough runs on its own: a run's clock within its run
    # time (the stats and the counts are read a moment apart)
    if r["run_cnt"] >= 20 and not 0 <= r["cpu-clock_per_run"] <= 1.05 * r["avg_ns"] + 1000:
        errors.append("cpu-clock_per_run %s with runs of %d ns on average" %
                      (r["cpu-clock_per_run"], r["avg_ns"]))
print("-e cpu-clock: %d ns over %d runs taking %d ns (%.2f)" %
      (clock, runs, ns, clock / ns if ns else 0))
if errors:
    sys.exit("; ".join(errors))
EOF
	bpf_test_fail "perf bpf top -e cpu-clock: see above; output:" \
		"$(grep "\"prog_id\":$id," "$tmp/ev.out")"
fi
pbt_links_tell runs go
exec 3>&-
pbt_wait_gone "$pid" 120 || bpf_test_fail "bpf_links runs still running 120 s after its go"
pbt_reap "$pid" || bpf_test_fail "bpf_links runs failed: $(cat "$tmp/runs.err")"
pbt_wait 60 has_line "$tmp/gone.out" "$id" '"gone":true' ||
	bpf_test_fail "pbt_runs not marked gone after its unload: $(tail -n 3 "$tmp/gone.out")"
[ -n "$ev" ] || pbt_wait 60 has_line "$tmp/ev.out" "$id" '"gone":true' ||
	bpf_test_fail "pbt_runs not marked gone by perf bpf top -e: $(tail -n 3 "$tmp/ev.out")"
tops=gone
[ -n "$ev" ] || tops="gone ev"
for name in $tops; do
	kill -INT "$(cat "$tmp/$name.pid")"
	pbt_wait_gone "$(cat "$tmp/$name.pid")" 10 ||
		bpf_test_fail "perf bpf top still running 10 s after SIGINT"
	pbt_reap "$(cat "$tmp/$name.pid")" || bpf_test_fail "perf bpf top: exit $? after SIGINT"
done
echo "unloaded: $(grep -m1 '"gone":true' "$tmp/gone.out")"

# errors
expect_error() {
	local what=$1 pattern=$2

	shift 2
	"$@" >"$tmp/err.out" 2>&1 && bpf_test_fail "$what: succeeded"
	grep -q -- "$pattern" "$tmp/err.out" ||
		bpf_test_fail "$what: no '$pattern' in: $(cat "$tmp/err.out")"
	echo "$what: $(grep -m1 -- "$pattern" "$tmp/err.out" | sed 's/^ *//')"
}
once="--interval-count 1 -I 100"
# shellcheck disable=SC2086 # $once: options
{
expect_error "-x and -j" "mutually exclusive" perf bpf top -x, -j $once
expect_error "bad sort key" "unknown sort key 'cost'" perf bpf top -s cost $once
expect_error "no sort key" "-s takes sort keys" perf bpf top -s , $once
expect_error "bad program type" "unknown program type 'nope'" perf bpf top --prog-type nope $once
expect_error "bad -d" "-d takes a number of seconds" perf bpf top -d 0 --interval-count 1
expect_error "-d and -I" "-d and -I are mutually exclusive" perf bpf top -d 1 $once
expect_error "bad -I" "-I takes 10 ms or more" perf bpf top -I 1 --interval-count 1
expect_error "bad --id" "--id takes program ids" perf bpf top --id x $once
expect_error "bad -e" "event syntax error" perf bpf top -e nope $once
expect_error "-e duration_time" "takes events the kernel counts" \
	perf bpf top -e duration_time $once
expect_error "-e cpu-clock:u" "BPF programs run in the kernel" perf bpf top -e cpu-clock:u $once
expect_error "-e twice" "names cpu-clock twice" perf bpf top -e cpu-clock,cpu-clock $once
}
if command -v setpriv >/dev/null; then
	expect_error "unprivileged" "lacks CAP_SYS_ADMIN" \
		setpriv --reuid=65534 --regid=65534 --clear-groups perf bpf top --interval-count 1
fi
stats_are 0 || bpf_test_fail "perf bpf top wrote kernel.bpf_stats_enabled"

# stats on already: said, and left on
bpf_test_stats_on
perf bpf top -j -I 100 --interval-count 1 >/dev/null 2>"$tmp/on.err" ||
	bpf_test_fail "perf bpf top with stats on failed: $(cat "$tmp/on.err")"
grep -q "were on before and stay on" "$tmp/on.err" ||
	bpf_test_fail "perf bpf top did not say stats were on: $(cat "$tmp/on.err")"
stats_are 1 || bpf_test_fail "perf bpf top turned kernel.bpf_stats_enabled off"
echo "stats on before: $(cat "$tmp/on.err")"

pbt_end
