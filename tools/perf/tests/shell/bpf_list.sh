#!/bin/bash
# perf bpf list agrees with bpftool
# SPDX-License-Identifier: GPL-2.0
#
# With the bpf_links workload's programs and links in place, perf bpf
# list -j must show the programs bpftool prog show -j shows, with the
# same names, types, tags and owning processes, each with the links
# bpftool link show -j gives it, their types and owners; -x must give a
# header and a line per link.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
tmp=$(pbt_dir)
cgroup=$(pbt_cgroup)
pbt_links links "$cgroup"

# Nothing else should come or go meanwhile; if it does, look again.
for try in 1 2 3 4 5; do
	perf bpf list -j >"$tmp/list.json" 2>"$tmp/list.err" ||
		pbt_fail "perf bpf list failed: $(cat "$tmp/list.err")"
	bpftool prog show -j >"$tmp/progs.json" || pbt_fail "bpftool prog show failed"
	bpftool link show -j >"$tmp/links.json" || pbt_fail "bpftool link show failed"
	perf bpf list -x';' >"$tmp/list.csv" 2>"$tmp/list.err" ||
		pbt_fail "perf bpf list -x failed: $(cat "$tmp/list.err")"
	perf bpf list >"$tmp/list.txt" 2>"$tmp/list.err" ||
		pbt_fail "perf bpf list failed: $(cat "$tmp/list.err")"
	python3 - "$tmp" "$(cat "$tmp/links.pid")" <<'EOF' && break
import json, sys

tmp, wpid = sys.argv[1], int(sys.argv[2])
errors = []
mine = [json.loads(l) for l in open(f"{tmp}/list.json")]
progs = {p["id"]: p for p in json.load(open(f"{tmp}/progs.json"))}
links = {l["id"]: l for l in json.load(open(f"{tmp}/links.json"))}
ours = {p["prog_id"]: p for p in mine}

if set(ours) != set(progs):
    errors.append(f"programs {sorted(ours)}, bpftool {sorted(progs)}")
def pids(l):
    return sorted((p["pid"], p["comm"]) for p in l)
for pid, p in ours.items():
    bt = progs.get(pid)
    if not bt:
        continue
    for key, bkey in (("prog_name", "name"), ("prog_type", "type"), ("prog_tag", "tag")):
        if p[key] != bt[bkey]:
            errors.append(f"prog {pid}: {key} {p[key]}, bpftool {bt[bkey]}")
    if pids(p["pids"]) != pids(bt.get("pids", [])):
        errors.append(f"prog {pid}: pids {p['pids']}, bpftool {bt.get('pids')}")
    if p["nr_maps"] != len(bt.get("map_ids", [])):
        errors.append(f"prog {pid}: {p['nr_maps']} maps, bpftool {bt.get('map_ids')}")
    want = {l for l, bl in links.items() if bl["prog_id"] == pid}
    got = {l["link_id"] for l in p["links"]}
    if got != want:
        errors.append(f"prog {pid}: links {sorted(got)}, bpftool {sorted(want)}")
    for l in p["links"]:
        bl = links.get(l["link_id"])
        if not bl:
            continue
        if l["link_type"] != bl["type"]:
            errors.append(f"link {l['link_id']}: type {l['link_type']}, bpftool {bl['type']}")
        if "attach_type" in bl and l["attach_type"] != bl["attach_type"]:
            errors.append(f"link {l['link_id']}: attach type {l['attach_type']}, "
                          f"bpftool {bl['attach_type']}")
        if pids(l["pids"]) != pids(bl.get("pids", [])):
            errors.append(f"link {l['link_id']}: pids {l['pids']}, bpftool {bl.get('pids')}")

# the workload's five programs, each with its link, held by the workload
names = {"pbt_cgroup", "pbt_raw_tp", "pbt_fentry", "pbt_perf_event", "pbt_xdp"}
wl = [p for p in mine if p["prog_name"] in names]
if len(wl) != 5 or any(len(p["links"]) != 1 or [x["pid"] for x in p["pids"]] != [wpid]
                       for p in wl):
    errors.append(f"the workload's programs: {wl}")

csv = open(f"{tmp}/list.csv").read().splitlines()
head = csv[0].split(";")
if head[:4] != ["prog_id", "prog_name", "prog_type", "prog_tag"] or "link_id" not in head:
    errors.append(f"CSV header: {csv[0]}")
rows = [dict(zip(head, r.split(";"))) for r in csv[1:]]
for p in mine:
    n = sum(1 for r in rows if r["prog_id"] == str(p["prog_id"]))
    if n != max(1, len(p["links"])):
        errors.append(f"prog {p['prog_id']}: {n} CSV lines")
txt = open(f"{tmp}/list.txt").read()
for name in names:
    if f" {name} " not in txt:
        errors.append(f"{name} not in the text output")
for e in errors:
    print("FAIL:", e)
print(f"{len(mine)} programs, {len(links)} links compared, {len(errors)} differences")
sys.exit(1 if errors else 0)
EOF
	[ $try = 5 ] && pbt_fail "perf bpf list and bpftool disagree"
	echo "try $try: they disagree, maybe something came or went: again"
done
pbt_links_go links
exit 0
