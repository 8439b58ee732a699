#!/bin/bash
# perf bpf events names programs that live for less than a millisecond
# SPDX-License-Identifier: GPL-2.0
#
# perf bpf events -- COMMAND: the bpf_links workload loads and closes
# twenty programs named pbt_short, each gone long before perf bpf events
# reads its records.  Each must show, load and unload, with its name
# (from the KSYMBOL record), marked as gone; at least one must have lived
# less than a millisecond by the records' times.  Only the workload's own
# records show, and perf bpf events ends with it, with a summary.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(pbt_dir)

perf bpf events -j -o "$tmp/events.out" -- perf test -w bpf_links short 20 \
	>"$tmp/short.out" 2>"$tmp/events.err" &
self=$!
pbt_track $self
pbt_wait_gone $self 300 || pbt_fail "perf bpf events did not end with its command"
wait $self || pbt_fail "perf bpf events failed: $(cat "$tmp/events.err")"
pbt_summary events

python3 - "$tmp" "$self" <<'EOF' || pbt_fail "the records do not match"
import json, sys

tmp, self = sys.argv[1], int(sys.argv[2])
events = [json.loads(l) for l in open(f"{tmp}/events.out")]
errors = []
short = [e for e in events if e["event"] in ("prog_load", "prog_unload") and
         e["prog_name"] == "pbt_short"]
loads = {e["prog_id"]: e for e in short if e["event"] == "prog_load"}
unloads = {e["prog_id"]: e for e in short if e["event"] == "prog_unload"}
if len(loads) != 20 or len(unloads) != 20 or len(short) != 40:
    errors.append(f"{len(loads)} loads, {len(unloads)} unloads of pbt_short, want 20 each")
if set(loads) != set(unloads):
    errors.append("load and unload records of different programs")
# the workload's records only; an unload may be perf bpf events' own, when
# its look-up held the last reference
pids = {e["pid"] for e in events if e["event"] == "prog_load"}
if len(pids) != 1 or not {e["pid"] for e in events} <= pids | {self}:
    errors.append(f"records of other tasks than the workload: {pids}")
for e in loads.values():
    if not e["gone"]:
        errors.append(f"program {e['prog_id']} not marked gone")
lives = sorted(unloads[i]["time"] - loads[i]["time"] for i in loads if i in unloads)
if not lives or lives[0] >= 0.001:
    errors.append(f"no program lived less than 1 ms: {lives[:3]}")
else:
    print(f"shortest life {lives[0] * 1e6:.0f} us, {sum(l < 0.001 for l in lives)} under 1 ms")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
exit 0
