#!/bin/bash
# perf bpf list agrees with bpftool
# SPDX-License-Identifier: GPL-2.0
#
# With the bpf_links workload's programs, map and links in place and BPF
# statistics on, the raw_tp program run once: perf bpf list -j must show
# the programs bpftool prog show -j shows, with the same names, types,
# tags, owning processes, maps and map memory, and run counts, times and
# recursion misses between those bpftool gives before and after, and the
# instructions the verifier went through for the workload's programs; each with the links
# bpftool link show -j gives it, their types, the attach type each kind
# of link has, their targets and owners.  -x must give a header and a
# line per link, the text output the same links and attach types.
#
# bpftool is asked once before perf bpf list and once after: only the
# objects in both are compared, and no difference is tolerated for them.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
tmp=$(bpf_test_dir)
pbt_cgroup
cgroup=$(pbt_cgroup_path)
bpf_test_stats_on
pbt_links links "$cgroup"
# an exec: the raw_tp program on sched_process_exec runs
env true || bpf_test_fail "cannot run true"

# bpftool SUFFIX: what bpftool shows, in progs.SUFFIX, links.SUFFIX, maps.SUFFIX
snapshot() {
	local what

	for what in prog link map; do
		bpftool "$what" show -j >"$tmp/${what}s.$1" 2>"$tmp/bpftool.err" ||
			bpf_test_fail "bpftool $what show -j failed: $(cat "$tmp/bpftool.err")"
	done
}
snapshot before
perf bpf list -j >"$tmp/list.json" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list -j failed: $(cat "$tmp/list.err")"
perf bpf list -x';' >"$tmp/list.csv" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list -x failed: $(cat "$tmp/list.err")"
perf bpf list >"$tmp/list.txt" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list failed: $(cat "$tmp/list.err")"
snapshot after

python3 - "$tmp" "$(cat "$tmp/links.pid")" <<'EOF' ||
import json, os, sys

tmp, wpid = sys.argv[1], int(sys.argv[2])
cgroot = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
# the attach type perf shows for each kind of link: the one its link type
# has (raw_tp, perf_event, xdp), whatever the program was loaded with, or
# the one the link was made with (cgroup, tracing)
ATTACH = {"cgroup": "cgroup_inet_egress", "raw_tp": "trace_raw_tp",
          "fentry": "trace_fentry", "perf_event": "perf_event", "xdp": "xdp"}
errors = []
def fail(msg):
    errors.append(msg)

def load(name):
    return {o["id"]: o for o in json.load(open(f"{tmp}/{name}"))}
before = {w: load(f"{w}s.before") for w in ("prog", "link", "map")}
after = {w: load(f"{w}s.after") for w in ("prog", "link", "map")}
# what bpftool showed both times, as it was the first time, and whether
# it stayed the same
both = {w: {i: o for i, o in before[w].items() if i in after[w]} for w in before}
seen = {w: set(before[w]) | set(after[w]) for w in before}

mine = [json.loads(l) for l in open(f"{tmp}/list.json")]
ours = {p["prog_id"]: p for p in mine}
if len(ours) != len(mine):
    fail("programs shown more than once")
if set(both["prog"]) - set(ours):
    fail(f"programs bpftool shows before and after, not shown: "
         f"{sorted(set(both['prog']) - set(ours))}")
if set(ours) - seen["prog"]:
    fail(f"programs bpftool never shows: {sorted(set(ours) - seen['prog'])}")

def pids(l):
    return sorted((p["pid"], p["comm"]) for p in l)

def same(a, b, key):
    return a.get(key) == b.get(key)

want = {}
for line in open(f"{tmp}/links.out"):
    f = line.split()
    if f[0] == "link":
        want[int(f[2])] = (f[1], " ".join(f[4:]))

nr = {"prog": 0, "link": 0}
for pid, p in ours.items():
    bt, bt2 = before["prog"].get(pid), after["prog"].get(pid)
    if not bt or not bt2:
        continue
    nr["prog"] += 1
    for key, bkey in (("prog_name", "name"), ("prog_type", "type"), ("prog_tag", "tag")):
        if p[key] != bt[bkey]:
            fail(f"prog {pid}: {key} {p[key]}, bpftool {bt[bkey]}")
    if same(bt, bt2, "pids") and pids(p["pids"]) != pids(bt.get("pids", [])):
        fail(f"prog {pid}: pids {p['pids']}, bpftool {bt.get('pids')}")
    maps = bt.get("map_ids", [])
    if same(bt, bt2, "map_ids"):
        if p["nr_maps"] != len(maps):
            fail(f"prog {pid}: {p['nr_maps']} maps, bpftool {maps}")
        mem = [after["map"].get(m, {}).get("bytes_memlock") for m in maps]
        if None not in mem and p["map_memlock"] != sum(mem):
            fail(f"prog {pid}: map_memlock {p['map_memlock']}, bpftool {mem} for maps {maps}")
    if not bt.get("recursion_misses", 0) <= p.get("recursion_misses", -1) <= \
       bt2.get("recursion_misses", 0):
        fail(f"prog {pid}: recursion_misses {p.get('recursion_misses')}, bpftool "
             f"{bt.get('recursion_misses', 0)} before, {bt2.get('recursion_misses', 0)} after")
    # statistics on: both, and between what bpftool saw before and after
    for key in ("run_cnt", "run_time_ns"):
        if key not in p:
            fail(f"prog {pid}: no {key}, with statistics on")
        elif not bt.get(key, 0) <= p[key] <= bt2.get(key, 0):
            fail(f"prog {pid}: {key} {p[key]}, bpftool {bt.get(key, 0)} before, "
                 f"{bt2.get(key, 0)} after")
    wl = {l for l, bl in both["link"].items() if bl["prog_id"] == pid}
    # links, not the attachments without one (systemd's legacy cgroup ones)
    links = [l for l in p["links"] if "found" not in l]
    got = {l["link_id"] for l in links}
    if wl - got or got - seen["link"]:
        fail(f"prog {pid}: links {sorted(got)}, bpftool {sorted(wl)}")
    for l in links:
        lid = l["link_id"]
        bl, bl2 = before["link"].get(lid), after["link"].get(lid)
        if not bl or not bl2:
            continue
        nr["link"] += 1
        if l["link_type"] != bl["type"]:
            fail(f"link {lid}: type {l['link_type']}, bpftool {bl['type']}")
        if "attach_type" in bl and l["attach_type"] != bl["attach_type"]:
            fail(f"link {lid}: attach type {l['attach_type']}, bpftool {bl['attach_type']}")
        if same(bl, bl2, "pids") and pids(l["pids"]) != pids(bl.get("pids", [])):
            fail(f"link {lid}: pids {l['pids']}, bpftool {bl.get('pids')}")
        if lid not in want:
            continue
        kind, target = want[lid]
        if l["attach_type"] != ATTACH[kind]:
            fail(f"link {lid} ({kind}): attach type {l['attach_type']}, want {ATTACH[kind]}")
        t = l["target"]
        if kind == "cgroup":
            ok = (l.get("cgroup_id") == bl["cgroup_id"] and
                  os.path.join(cgroot, t.lstrip("/")) == target)
        elif kind == "raw_tp":
            ok = t == target == bl["tp_name"]
        elif kind == "fentry":
            ok = (t == target and l.get("target_btf_id") == bl["target_btf_id"] and
                  l.get("target_obj_id") == bl["target_obj_id"])
        elif kind == "xdp":
            ok = t == target and l.get("ifindex") == bl["ifindex"]
        else:
            ok = t == target
        if not ok:
            fail(f"link {lid} ({kind}): target {t!r}, {l}, bpftool {bl}, want {target!r}")

# the workload's five programs, each with its link, held by the workload;
# the raw_tp one with its map and having run
names = {"pbt_cgroup", "pbt_raw_tp", "pbt_fentry", "pbt_perf_event", "pbt_xdp"}
wl = {p["prog_name"]: p for p in mine if p["prog_name"] in names}
if set(wl) != names:
    fail(f"the workload's programs: {sorted(wl)}, want {sorted(names)}")
for name, p in wl.items():
    if len(p["links"]) != 1 or [x["pid"] for x in p["pids"]] != [wpid] or \
       [x["pid"] for x in p["links"][0]["pids"]] != [wpid]:
        fail(f"{name}: want one link, both held by the workload ({wpid}) only: {p}")
    if p["links"] and p["links"][0]["link_id"] not in want:
        fail(f"{name}: link {p['links'][0]['link_id']}, not the workload's")
    n = 1 if name == "pbt_raw_tp" else 0
    if p["nr_maps"] != n or (p["map_memlock"] > 0) != bool(n):
        fail(f"{name}: {p['nr_maps']} maps of {p['map_memlock']} bytes, want {n} map(s)")
    # straight code, each instruction verified once: r0 = RET; exit,
    # after r1 = the map (one instruction in two slots) for the one with it
    if p["verified_insns"] != 2 + n:
        fail(f"{name}: verified_insns {p['verified_insns']}, want {2 + n}")
raw = wl.get("pbt_raw_tp", {})
if raw.get("run_cnt", 0) < 1 or raw.get("run_time_ns", 0) <= 0:
    fail(f"pbt_raw_tp ran, with statistics on: run_cnt {raw.get('run_cnt')}, "
         f"run_time_ns {raw.get('run_time_ns')}, want > 0")

csv = open(f"{tmp}/list.csv").read().splitlines()
head = csv[0].split(";")
if head[:4] != ["prog_id", "prog_name", "prog_type", "prog_tag"] or "link_id" not in head:
    fail(f"CSV header: {csv[0]}")
rows = [dict(zip(head, r.split(";"))) for r in csv[1:]]
if any(len(r.split(";")) != len(head) for r in csv[1:]):
    fail("CSV lines with another number of fields than the header")
for p in mine:
    n = sum(1 for r in rows if r["prog_id"] == str(p["prog_id"]))
    if n != max(1, len(p["links"])):
        fail(f"prog {p['prog_id']}: {n} CSV lines, want {max(1, len(p['links']))}")
txt = open(f"{tmp}/list.txt").read()
for lid, (kind, target) in want.items():
    r = [r for r in rows if r.get("link_id") == str(lid)]
    if len(r) != 1 or r[0]["attach_type"] != ATTACH[kind]:
        fail(f"CSV: link {lid} ({kind}): {r}, want attach type {ATTACH[kind]}")
    if f"    link {lid} " not in txt:
        fail(f"text: no line of link {lid}")
    elif not any(l.startswith(f"    link {lid} ") and l.split()[3] == ATTACH[kind]
                 for l in txt.splitlines()):
        fail(f"text: link {lid} ({kind}) without attach type {ATTACH[kind]}")
for name in names:
    if f" {name} " not in txt:
        fail(f"{name} not in the text output")
for e in errors:
    print("FAIL:", e)
print(f"{nr['prog']} programs and {nr['link']} links compared with bpftool, "
      f"{len(errors)} differences")
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf list and bpftool disagree (see above)"
pbt_links_go links
pbt_end
