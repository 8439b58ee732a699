#!/bin/bash
# perf bpf events shows BPF programs and links come and go
# SPDX-License-Identifier: GPL-2.0
#
# While perf bpf events -j runs, the bpf_links workload loads five
# programs, attaches each through a link (cgroup, raw_tp, fentry,
# perf_event, xdp), detaches two with BPF_LINK_DETACH, closes the links
# and unloads the programs.  Every one of these must show exactly once,
# in order, with the ids, names, types, tags and targets bpftool gives
# for the same objects while they exist, and nothing may be lost.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
tmp=$(pbt_dir)
cgroup=$(pbt_cgroup)

pbt_events events -j
pbt_links links "$cgroup"
bpftool prog show -j >"$tmp/progs.json" || pbt_fail "bpftool prog show failed"
bpftool link show -j >"$tmp/links.json" || pbt_fail "bpftool link show failed"
pbt_links_go links

# Programs and links made and destroyed on two CPUs at once for two
# seconds: their records must come out in time order too.
shorts=
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	for cpu in 0 1; do
		taskset -c $cpu perf test -w bpf_links churn "$cgroup" 2 >"$tmp/churn.$cpu" &
		shorts="$shorts $!"
		pbt_track $!
	done
	for p in $shorts; do
		pbt_wait_gone "$p" 120 || pbt_fail "bpf_links churn did not end"
	done
fi

# Until the last unload records show, then stop as Ctrl-C does.
last=$(awk '$1 == "prog" { id = $3 } END { print id }' "$tmp/links.out")
unloaded() {
	grep -q "\"event\":\"prog_unload\",\"prog_id\":$last," "$tmp/events.out" ||
		return 1
	[ -z "$shorts" ] ||
	[ "$(grep -c '"event":"prog_unload".*"prog_name":"pbt_churn"' "$tmp/events.out")" \
	  -ge "$(cat "$tmp"/churn.* | awk '{ n += $2 } END { print n }')" ]
}
pbt_wait 60 unloaded || pbt_fail "unload records missing"
pbt_events_stop events
pbt_summary events
grep -q ' 0 lost \]$' "$tmp/events.err" || pbt_fail "records lost: $(cat "$tmp/events.err")"

python3 - "$tmp" "$(cat "$tmp/links.pid")" $shorts <<'EOF' ||
import json, os, sys

tmp, pid = sys.argv[1], int(sys.argv[2])
cgroot = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
errors = []
def fail(msg):
    errors.append(msg)

events = []
for n, line in enumerate(open(f"{tmp}/events.out"), 1):
    try:
        events.append(json.loads(line))
    except ValueError:
        fail(f"line {n} is not JSON: {line!r}")
for e in events:
    for key in ("time", "cpu", "pid", "comm", "event", "prog_id", "prog_name",
                "prog_type", "prog_tag"):
        if key not in e:
            fail(f"no {key} in {e}")
times = [e["time"] for e in events]
if times != sorted(times):
    fail("records out of time order")
shorts = [int(p) for p in sys.argv[3:]]
cpus = {e["cpu"] for e in events if e["pid"] in shorts}
if shorts and len(cpus) < 2:
    fail(f"the records of the two CPUs came from CPUs {cpus} only")
if any(e["event"] == "lost" for e in events):
    fail("lost records shown")

progs = {p["id"]: p for p in json.load(open(f"{tmp}/progs.json"))}
links = {l["id"]: l for l in json.load(open(f"{tmp}/links.json"))}
want_progs, want_links = {}, {}
for line in open(f"{tmp}/links.out"):
    f = line.split()
    if f[0] == "prog":
        want_progs[int(f[2])] = f[3]
    elif f[0] == "link":
        want_links[int(f[2])] = (f[1], int(f[3]), " ".join(f[4:]))
mine = [e for e in events if e["pid"] == pid]

# Unloads and detaches are the workload's, or a kworker's when the kernel
# defers them, or perf bpf events' own when its look-up held the last
# reference: look for those among all records.
def one(event, key, val):
    pool = mine if event in ("prog_load", "link_attach") else events
    got = [e for e in pool if e["event"] == event and e.get(key) == val]
    if len(got) != 1:
        fail(f"{len(got)} {event} records of {key} {val}, want 1")
        return None
    return got[0]

order = {}
for pid_, name in want_progs.items():
    bt = progs.get(pid_)
    if not bt:
        fail(f"bpftool does not show program {pid_}")
        continue
    for ev in ("prog_load", "prog_unload"):
        e = one(ev, "prog_id", pid_)
        if not e:
            continue
        order[(ev, pid_)] = e["time"]
        if e["prog_name"] != name or e["prog_name"] != bt["name"]:
            fail(f"{ev} {pid_}: name {e['prog_name']}, want {name} ({bt['name']})")
        if e["prog_type"] != bt["type"]:
            fail(f"{ev} {pid_}: type {e['prog_type']}, bpftool {bt['type']}")
        if e["prog_tag"] != bt["tag"]:
            fail(f"{ev} {pid_}: tag {e['prog_tag']}, bpftool {bt['tag']}")
        if e["gone"]:
            fail(f"{ev} {pid_}: marked gone")

for lid, (kind, prog, target) in want_links.items():
    bt = links.get(lid)
    if not bt:
        fail(f"bpftool does not show link {lid}")
        continue
    for ev in ("link_attach", "link_detach"):
        e = one(ev, "link_id", lid)
        if not e:
            continue
        order[(ev, lid)] = e["time"]
        if e["prog_id"] != prog or e["prog_id"] != bt["prog_id"]:
            fail(f"{ev} {lid}: prog {e['prog_id']}, want {prog}")
        if e["prog_name"] != want_progs.get(prog):
            fail(f"{ev} {lid}: prog name {e['prog_name']}")
        if e["link_type"] != bt["type"]:
            fail(f"{ev} {lid}: link type {e['link_type']}, bpftool {bt['type']}")
        # the attach type the record carries; bpftool has it for some links
        if "attach_type" in bt and e["attach_type"] != bt["attach_type"]:
            fail(f"{ev} {lid}: attach type {e['attach_type']}, bpftool {bt['attach_type']}")
        if not e["attach_type"]:
            fail(f"{ev} {lid}: no attach type")
        t = e["target"]
        if kind == "cgroup":
            ok = (e.get("cgroup_id") == bt["cgroup_id"] and
                  os.path.join(cgroot, t.lstrip("/")) == target)
        elif kind == "raw_tp":
            ok = t == target == bt["tp_name"]
        elif kind == "fentry":
            ok = (t == target and e.get("target_btf_id") == bt["target_btf_id"] and
                  e.get("target_obj_id") == bt["target_obj_id"])
        elif kind == "xdp":
            ok = t == target and e.get("ifindex") == bt["ifindex"]
        else:
            ok = t.startswith("event ")
        if not ok:
            fail(f"{ev} {lid} ({kind}): target {t!r} {e}, bpftool {bt}, want {target!r}")
        if e["gone"]:
            fail(f"{ev} {lid}: marked gone")

for lid, (kind, prog, target) in want_links.items():
    seq = [order.get(k) for k in (("prog_load", prog), ("link_attach", lid),
                                  ("link_detach", lid), ("prog_unload", prog))]
    if None not in seq and seq != sorted(seq):
        fail(f"link {lid}: load, attach, detach, unload out of order: {seq}")

for e in errors:
    print("FAIL:", e)
print(f"{len(mine)} records of the workload checked, {len(errors)} errors")
sys.exit(1 if errors else 0)
EOF
	pbt_fail "the records do not match"
exit 0
