#!/bin/bash
# perf bpf events says what a program cost over its life (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# On a kernel that writes link records, and so the counts of unload
# records: with BPF stats on, the bpf_links workload runs pbt_runs a known
# number of times and unloads it; its prog_unload line must say that many
# runs, some run time and no recursion miss.  With stats off, it must have
# no run count or run time, and still its misses.  Exclusive: it switches
# kernel.bpf_stats_enabled, which other tests read.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
pbt_link_records ||
	bpf_test_skip "the kernel writes no link records" \
		"(its BTF has no PERF_BPF_EVENT_LINK_ATTACH)," \
		"nor the counts of unload records"
tmp=$(bpf_test_dir)

# cost NAME RUNS: perf bpf events -j -- the runs workload, which enters
# getcpu RUNS times, then closes its link and its program.
cost() {
	local name=$1 runs=$2 pid

	rm -f "$tmp/runs.ctl"
	mkfifo "$tmp/runs.ctl"
	perf bpf events -j -o "$tmp/$name.json" -- perf test -w bpf_links runs \
		<"$tmp/runs.ctl" >"$tmp/runs.out" 2>"$tmp/$name.err" &
	pid=$!
	bpf_test_track $pid
	echo $pid >"$tmp/runs.pid"
	exec 3>"$tmp/runs.ctl"
	pbt_wait 120 pbt_links_ready runs ||
		bpf_test_fail "bpf_links runs not ready within 120 s: $(cat "$tmp/$name.err")"
	pbt_links_tell runs "run $runs"
	pbt_wait 120 grep -q "^ran $runs " "$tmp/runs.out" ||
		bpf_test_fail "bpf_links runs did not run within 120 s: $(cat "$tmp/$name.err")"
	pbt_links_tell runs detach
	pbt_wait 120 grep -qx detached "$tmp/runs.out" ||
		bpf_test_fail "bpf_links runs did not detach within 120 s: $(cat "$tmp/$name.err")"
	exec 3>&-
	pbt_wait_gone $pid 120 || bpf_test_fail "perf bpf events ($name) still running 120 s" \
		"after its command's end"
	pbt_reap $pid || bpf_test_fail "perf bpf events ($name): exit $?, want 0:" \
		"$(cat "$tmp/$name.err")"
}

bpf_test_stats_on
cost on 300
echo 0 >/proc/sys/kernel/bpf_stats_enabled ||
	bpf_test_fail "cannot set kernel.bpf_stats_enabled to 0"
cost off 50
python3 - "$tmp" <<'EOF' || bpf_test_fail "prog_unload does not say what pbt_runs cost"
import json, sys

tmp = sys.argv[1]
errors = []
for name, runs in (("on", 300), ("off", None)):
    events = [json.loads(l) for l in open(f"{tmp}/{name}.json")]
    gone = [e for e in events if e["event"] == "prog_unload" and e["prog_name"] == "pbt_runs"]
    if len(gone) != 1:
        errors.append(f"stats {name}: {len(gone)} prog_unload of pbt_runs, want 1")
        continue
    e = gone[0]
    print(f"stats {name}: {e}")
    if runs is None:
        if "run_cnt" in e or "run_time_ns" in e:
            errors.append(f"stats off: run_cnt or run_time_ns shown: {e}")
    elif e.get("run_cnt") != runs or not e.get("run_time_ns"):
        errors.append(f"stats on: run_cnt {e.get('run_cnt')}, run_time_ns "
                      f"{e.get('run_time_ns')}, want {runs} and more than 0")
    if e.get("recursion_misses") != 0:
        errors.append(f"stats {name}: recursion_misses {e.get('recursion_misses')}, want 0")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
echo "prog_unload: the runs of pbt_runs counted while stats were on, none while off"
pbt_end
