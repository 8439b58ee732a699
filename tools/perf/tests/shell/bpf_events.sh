#!/bin/bash
# perf bpf events shows BPF programs and links come and go
# SPDX-License-Identifier: GPL-2.0
#
# While perf bpf events -j runs, the bpf_links workload loads five
# programs, attaches each through a link (cgroup, raw_tp, fentry,
# perf_event, xdp), detaches two with BPF_LINK_DETACH, closes the links
# and unloads the programs.  Every one of these must show exactly once,
# in order, with the ids, names, types, tags and targets bpftool gives
# for the same objects while they exist, the attach type each kind of
# link has, and nothing may be lost; the summary must count what was
# printed.  Then two workloads make and destroy cgroup links on two CPUs
# at once: their records must come out in time order.
#
# On a kernel without link records (no PERF_BPF_EVENT_LINK_ATTACH, e.g.
# the pristine 6.12 one), perf bpf events must say so once, show the
# program records the same way, and no link records.
#
# Records of a type unknown to perf (from a newer kernel) cannot be made
# here: the kernel writes none.  How they print is tested by the C test
# "BPF side-band records", through perf script's decoder only.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
tmp=$(bpf_test_dir)
pbt_cgroup
cgroup=$(pbt_cgroup_path)
if pbt_link_records; then
	links=1
else
	links=0
	echo "the kernel writes no link records: checking that perf bpf events says so" \
		"and shows the program records"
fi

pbt_events events -j
pbt_links links "$cgroup"
bpftool prog show -j >"$tmp/progs.json" || bpf_test_fail "bpftool prog show failed"
bpftool link show -j >"$tmp/links.json" || bpf_test_fail "bpftool link show failed"
pbt_links_go links

# Programs and links made and destroyed on two CPUs at once for two
# seconds, at a rate perf bpf events keeps up with on a busy host (make
# bench-perf-bpf): their records must come out in time order too.
churns=
if ! command -v taskset >/dev/null; then
	echo "two-CPU order check skipped: taskset not found"
elif [ "$(nproc)" -lt 2 ]; then
	echo "two-CPU order check skipped: $(nproc) CPU"
else
	for cpu in 0 1; do
		taskset -c $cpu perf test -w bpf_links churn "$cgroup" 2 500 \
			>"$tmp/churn.$cpu" 2>"$tmp/churn.$cpu.err" &
		churns="$churns $!"
		bpf_test_track $!
		echo $! >"$tmp/churn.$cpu.pid"
	done
	for cpu in 0 1; do
		p=$(cat "$tmp/churn.$cpu.pid")
		pbt_wait_gone "$p" 120 ||
			bpf_test_fail "bpf_links churn on CPU $cpu still running after 120 s"
		pbt_reap "$p" || bpf_test_fail "bpf_links churn on CPU $cpu: exit $?:" \
			"$(cat "$tmp/churn.$cpu.err")"
		awk '$1 == "churn" && $2 > 0 { ok = 1 } END { exit !ok }' "$tmp/churn.$cpu" ||
			bpf_test_fail "bpf_links churn on CPU $cpu did nothing:" \
				"$(cat "$tmp/churn.$cpu")"
	done
fi

# What is still to show: an unload of each of the workload's programs, a
# detach of each of its links (an unload may come late: the raw_tp link
# drops its program in an RCU callback), and as many unloads of pbt_churn
# as the churns made.
missing() {
	local what id n want

	while read -r what _ id _; do
		case $what in
		prog)	grep -q "\"event\":\"prog_unload\",\"prog_id\":$id," \
				"$tmp/events.out" || echo "prog_unload of $id"
			;;
		link)	[ $links = 0 ] ||
			grep -q "\"event\":\"link_detach\",.*\"link_id\":$id," "$tmp/events.out" ||
				echo "link_detach of $id"
			;;
		esac
	done <"$tmp/links.out"
	[ -n "$churns" ] || return 0
	n=$(grep -c '"event":"prog_unload".*"prog_name":"pbt_churn"' "$tmp/events.out")
	want=$(cat "$tmp"/churn.[01] | awk '{ n += $2 } END { print n }')
	[ "$n" -ge "$want" ] || echo "$n prog_unload of pbt_churn, want $want"
}
# shellcheck disable=SC2317 # called by pbt_wait
none_missing() {
	[ -z "$(missing)" ]
}
if ! pbt_wait 60 none_missing; then
	pbt_events_stop events
	bpf_test_fail "60 s after the workloads ended, perf bpf events has not shown:" \
		"$(missing | tr '\n' ';') $(cat "$tmp/events.err")"
fi
pbt_events_stop events
pbt_summary events
grep -q ' 0 lost \]$' "$tmp/events.err" ||
	bpf_test_fail "records lost, want none: $(cat "$tmp/events.err")"
n=$(grep -c 'this kernel writes no link records' "$tmp/events.err")
if [ $links = 1 ]; then
	[ "$n" = 0 ] || bpf_test_fail "says there are no link records: $(cat "$tmp/events.err")"
else
	[ "$n" = 1 ] || bpf_test_fail "$n lines saying there are no link records, want 1:" \
		"$(cat "$tmp/events.err")"
fi

python3 - "$tmp" "$(cat "$tmp/links.pid")" "$links" "$churns" <<'EOF' ||
import json, os, sys

tmp, pid, has_links = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
cgroot = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
# the attach type perf shows for each kind of link: the one its link type
# has (raw_tp, perf_event, xdp), whatever the program was loaded with, or
# the one the link was made with (cgroup, tracing)
ATTACH = {"cgroup": "cgroup_inet_egress", "raw_tp": "trace_raw_tp",
          "fentry": "trace_fentry", "perf_event": "perf_event", "xdp": "xdp"}
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
                "prog_type", "prog_tag", "gone"):
        if key not in e:
            fail(f"no {key} in {e}")
    if e.get("event", "").startswith("link_"):
        for key in ("link_id", "link_type", "attach_type", "target"):
            if key not in e:
                fail(f"no {key} in {e}")
times = [e["time"] for e in events if "time" in e]
if times != sorted(times):
    fail("records out of time order")
churns = [int(p) for p in sys.argv[4].split()]
cpus = {e.get("cpu") for e in events if e.get("pid") in churns}
if churns and len(cpus) < 2:
    fail(f"the records of the two churns came from CPUs {cpus} only, want 0 and 1")
if any(e.get("event") == "lost" for e in events):
    fail("lost records shown, want none")
if not has_links:
    got = [e for e in events if e.get("event", "").startswith("link_")]
    if got:
        fail(f"{len(got)} link records on a kernel that writes none: {got[:2]}")

progs = {p["id"]: p for p in json.load(open(f"{tmp}/progs.json"))}
links = {l["id"]: l for l in json.load(open(f"{tmp}/links.json"))}
want_progs, want_links = {}, {}
for line in open(f"{tmp}/links.out"):
    f = line.split()
    if f[0] == "prog":
        want_progs[int(f[2])] = f[3]
    elif f[0] == "link":
        want_links[int(f[2])] = (f[1], int(f[3]), " ".join(f[4:]))

# Exactly one record of each: among all records, whoever caused them.  A
# load or an attach is the workload's; an unload or a detach may be a
# kworker's when the kernel defers it, or perf bpf events' own when its
# look-up held the last reference.
def one(event, key, val):
    got = [e for e in events if e.get("event") == event and e.get(key) == val]
    if len(got) != 1:
        fail(f"{len(got)} {event} records of {key} {val}, want 1: {got}")
        return None
    if event in ("prog_load", "link_attach") and got[0]["pid"] != pid:
        fail(f"{event} of {key} {val} by pid {got[0]['pid']}, want the workload's, {pid}")
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
            fail(f"{ev} {pid_}: name {e['prog_name']}, want {name} (bpftool {bt['name']})")
        if e["prog_type"] != bt["type"]:
            fail(f"{ev} {pid_}: type {e['prog_type']}, want bpftool's {bt['type']}")
        if e["prog_tag"] != bt["tag"]:
            fail(f"{ev} {pid_}: tag {e['prog_tag']}, want bpftool's {bt['tag']}")
        if e.get("gone") is not False:
            fail(f"{ev} {pid_}: gone {e.get('gone')!r}, want false")

for lid, (kind, prog, target) in want_links.items() if has_links else ():
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
            fail(f"{ev} {lid}: prog {e['prog_id']}, want {prog} (bpftool {bt['prog_id']})")
        if e["prog_name"] != want_progs.get(prog):
            fail(f"{ev} {lid}: prog name {e['prog_name']}, want {want_progs.get(prog)}")
        if e["link_type"] != bt["type"]:
            fail(f"{ev} {lid}: link type {e['link_type']}, want bpftool's {bt['type']}")
        if e["attach_type"] != ATTACH[kind]:
            fail(f"{ev} {lid} ({kind}): attach type {e['attach_type']}, want {ATTACH[kind]}")
        if "attach_type" in bt and e["attach_type"] != bt["attach_type"]:
            fail(f"{ev} {lid}: attach type {e['attach_type']}, "
                 f"want bpftool's {bt['attach_type']}")
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
            ok = t == target
        if not ok:
            fail(f"{ev} {lid} ({kind}): target {t!r}, record {e}, bpftool {bt}, "
                 f"want {target!r}")
        if e.get("gone") is not False:
            fail(f"{ev} {lid}: gone {e.get('gone')!r}, want false")

for lid, (kind, prog, target) in want_links.items():
    seq = [order.get(k) for k in (("prog_load", prog), ("link_attach", lid),
                                  ("link_detach", lid), ("prog_unload", prog))]
    seq = [t for t in seq if t is not None]
    if seq != sorted(seq):
        fail(f"link {lid}: load, attach, detach, unload out of order: {seq}")

for e in errors:
    print("FAIL:", e)
n = sum(1 for e in events if e.get("prog_name", "").startswith("pbt_")
        and e.get("prog_name") not in ("pbt_churn", "pbt_short"))
print(f"{n} records of the workload's {len(want_progs)} programs and "
      f"{len(want_links) if has_links else 0} links checked, {len(errors)} errors")
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "the records are not those of the workload (see above)"
pbt_end
