#!/bin/bash
# perf bpf list and top show programs attached without a link (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# The bpf_links nolink workload attaches three programs as older tools
# do, without a link: a tracepoint program through
# PERF_EVENT_IOC_SET_BPF (bpftrace, BCC), an XDP program to lo over
# netlink, a cgroup_skb program to this test's cgroup with
# BPF_PROG_ATTACH, and through a link as well.  perf bpf list (-j, -x,
# text) must show each attachment with its type, attach type, target
# (and in -j its ifindex or cgroup id) and how it was found
# (task_fd_query, netlink, prog_query), the cgroup program's link as a
# link and its other attachment apart, the processes that hold the
# tracepoint's perf event agreeing with bpftool perf; perf bpf top -j
# must show them in its attach column, marked "(no link)".  Exclusive:
# it attaches XDP to lo (skipped if something else has).

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3 bpftool
tmp=$(bpf_test_dir)
pbt_require_getcpu
bpftool -j net show dev lo >"$tmp/net.json" 2>&1 ||
	bpf_test_fail "bpftool net show dev lo: $(cat "$tmp/net.json")"
grep -q '"xdp":\[{' "$tmp/net.json" && bpf_test_skip "lo has an XDP program already"
pbt_cgroup
cg=$(pbt_cgroup_path)
root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
# should the workload die before it detaches: no XDP of it left on lo
# shellcheck disable=SC2034 # pbt_cleanup runs it
pbt_on_cleanup='bpftool net show dev lo 2>/dev/null | grep -q pbt_nolink_xdp &&
	bpftool net detach xdpgeneric dev lo'

mkfifo "$tmp/nolink.ctl"
perf test -w bpf_links nolink "$cg" <"$tmp/nolink.ctl" >"$tmp/nolink.out" 2>"$tmp/nolink.err" &
pid=$!
bpf_test_track $pid
echo $pid >"$tmp/nolink.pid"
exec 3>"$tmp/nolink.ctl"
pbt_wait 120 pbt_links_ready nolink ||
	bpf_test_fail "bpf_links nolink not ready within 120 s: $(cat "$tmp/nolink.err")"

timeout 120 perf bpf list -j -o "$tmp/list.json" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list -j: $(cat "$tmp/list.err")"
timeout 120 perf bpf list -x';' -o "$tmp/list.csv" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list -x: $(cat "$tmp/list.err")"
timeout 120 perf bpf list -o "$tmp/list.txt" 2>"$tmp/list.err" ||
	bpf_test_fail "perf bpf list: $(cat "$tmp/list.err")"
bpftool -j perf >"$tmp/bpftool.json" 2>"$tmp/bpftool.err" ||
	bpf_test_fail "bpftool perf: $(cat "$tmp/bpftool.err")"
ids=$(awk '$1 == "prog" { print $3 }' "$tmp/nolink.out" | paste -sd,)
timeout 120 perf bpf top -j --id "$ids" -I 300 --interval-count 1 -o "$tmp/top.json" \
	2>"$tmp/top.err" || bpf_test_fail "perf bpf top -j: $(cat "$tmp/top.err")"

python3 - "$tmp" "$pid" "${cg#"$root"}" "$cg" <<'EOF' ||
import json, sys

tmp, pid, cg = sys.argv[1], int(sys.argv[2]), sys.argv[3]
errors = []
def fail(msg):
    errors.append(msg)

ids = {l.split()[1]: int(l.split()[2]) for l in open(f"{tmp}/nolink.out")
       if l.startswith("prog ")}
cg_link = [int(l.split()[2]) for l in open(f"{tmp}/nolink.out") if l.startswith("link ")][0]
cg_id = __import__("os").stat(f"{sys.argv[4]}").st_ino
want = {
    "tp": ("perf_event", "perf_event", "tracepoint sys_enter_getcpu", "task_fd_query"),
    "xdp": ("xdp", "xdp", "lo ifindex 1", "netlink"),
    "cgroup": ("cgroup", "cgroup_inet_egress", cg, "prog_query"),
}
numbers = {"tp": {}, "xdp": {"ifindex": 1}, "cgroup": {"cgroup_id": cg_id}}
progs = {p["prog_id"]: p for p in map(json.loads, open(f"{tmp}/list.json"))}
for kind, (ltype, atype, target, found) in want.items():
    p = progs.get(ids[kind])
    if not p:
        fail(f"program {ids[kind]} ({kind}) not in perf bpf list")
        continue
    got = [(l.get("link_id"), l.get("link_type"), l.get("attach_type"), l.get("target"),
            l.get("found")) for l in p.get("links", [])]
    # the cgroup program: its link first, then the attachment without one
    exp = [(None, ltype, atype, target, found)]
    if kind == "cgroup":
        exp.insert(0, (cg_link, ltype, atype, target, None))
    if got != exp:
        fail(f"program {ids[kind]} ({kind}): attachments {got}, want {exp}")
    for l in p.get("links", []):
        for k, v in numbers[kind].items():
            if l.get(k) != v:
                fail(f"program {ids[kind]} ({kind}): {k} {l.get(k)}, want {v}")

csv = [l.split(";") for l in open(f"{tmp}/list.csv").read().splitlines()]
head = csv[0]
rows = [dict(zip(head, l)) for l in csv[1:]]
for kind, (ltype, atype, target, found) in want.items():
    r = [r for r in rows if r["prog_id"] == str(ids[kind])]
    got = [(x["link_id"], x["link_type"], x["attach_type"], x["target"], x["found"])
           for x in r]
    exp = [("", ltype, atype, target, found)]
    if kind == "cgroup":
        exp.insert(0, (str(cg_link), ltype, atype, target, ""))
    if got != exp:
        fail(f"-x: program {ids[kind]} ({kind}): {got}, want {exp}")

text = open(f"{tmp}/list.txt").read()
for kind, (ltype, atype, target, found) in want.items():
    line = f"    attach {ltype} {atype} {target} (no link: {found})"
    if line not in text.splitlines():
        fail(f"text: no line {line!r}")

# perf bpf top: the same, in its attach column, for the programs without
# a link
tops = {r["prog_id"]: r for r in map(json.loads, open(f"{tmp}/top.json"))}
for kind, (ltype, atype, target, found) in want.items():
    if kind == "cgroup":
        continue
    at = ltype if atype in ("perf_event", "xdp") else f"{ltype}/{atype}"
    a = f"{at} {target} (no link)"
    if tops.get(ids[kind], {}).get("attach") != a:
        fail(f"perf bpf top: program {ids[kind]} ({kind}) attach"
             f" {tops.get(ids[kind], {}).get('attach')!r}, want {a!r}")

tps = [e for e in json.load(open(f"{tmp}/bpftool.json"))
       if e.get("pid") == pid and e.get("prog_id") == ids["tp"]]
if not tps or tps[0].get("tracepoint") != "sys_enter_getcpu":
    fail(f"bpftool perf does not show the tracepoint of program {ids['tp']}: {tps}")
for e in errors:
    print("FAIL:", e)
if not errors:
    print("perf bpf list:")
    print("\n".join(l for l in text.splitlines() if "(no link:" in l))
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf list and the attachments without a link disagree: see above"

pbt_links_tell nolink quit
exec 3>&-
pbt_wait_gone "$pid" 60 || bpf_test_fail "bpf_links nolink still running 60 s after quit"
pbt_reap "$pid" || bpf_test_fail "bpf_links nolink: exit $?: $(cat "$tmp/nolink.err")"
pbt_end
