#!/bin/bash
# perf bpf events filters by process, type and name, and prints CSV
# SPDX-License-Identifier: GPL-2.0
#
# Four perf bpf events at once while the bpf_links workload loads,
# attaches, detaches and unloads, and another process loads and unloads
# short-lived programs.  -p, given the workload's pid before it loads
# anything, must show the workload's twenty records and nothing else: its
# loads and attaches, and the detaches and unloads of its objects whoever
# caused them (the kernel may defer an unload to another task, as it does
# for the raw_tp link's program, or it may be perf bpf events' own
# look-up that dropped the last reference).  --type link must show the
# ten link records only; --name 'pbt_[cx]*' the eight records of
# pbt_cgroup and pbt_xdp only; -x';' everything, as CSV with a header
# line and as many fields on every line.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool python3
pbt_link_records ||
	bpf_test_skip "the kernel writes no link records" \
		"(its BTF has no PERF_BPF_EVENT_LINK_ATTACH)"
tmp=$(bpf_test_dir)
pbt_cgroup
cgroup=$(pbt_cgroup_path)

pbt_links_start links "$cgroup"
wl=$(cat "$tmp/links.pid")

# reading NAME: whether perf bpf events NAME reads the records (-v says
# so); fails as soon as it has ended
# shellcheck disable=SC2317 # called by pbt_wait
reading() {
	local rc

	grep -q 'reading the records of' "$tmp/$1.err" && return 0
	bpf_test_gone "$(cat "$tmp/$1.pid")" || return 1
	pbt_reap "$(cat "$tmp/$1.pid")"
	rc=$?
	bpf_test_fail "perf bpf events ($1) exited ($rc) before reading: $(cat "$tmp/$1.err")"
}
# start NAME OPTIONS...: perf bpf events, until it reads the records
start() {
	local name=$1

	shift
	perf bpf events -v -o "$tmp/$name.out" "$@" 2>"$tmp/$name.err" &
	echo $! >"$tmp/$name.pid"
	bpf_test_track $!
	pbt_wait 120 reading "$name" ||
		bpf_test_fail "perf bpf events $* not reading within 120 s: $(cat "$tmp/$name.err")"
}
start pid -j -p "$wl"
start type -j --type link
start name -j --name 'pbt_[cx]*'
start csv -x';'

pbt_links_load links
perf test -w bpf_links short 3 >/dev/null 2>"$tmp/short.err" ||
	bpf_test_fail "perf test -w bpf_links short 3 failed: $(cat "$tmp/short.err")"
pbt_links_go links

# shown NAME PATTERN N: whether N lines of NAME's output match PATTERN
# shellcheck disable=SC2317 # called by pbt_wait
shown() {
	[ "$(grep -c -- "$2" "$tmp/$1.out")" -ge "$3" ]
}
# await NAME PATTERN N: until N lines of NAME's output match PATTERN
await() {
	pbt_wait 60 shown "$@" ||
		bpf_test_fail "perf bpf events ($1): $(grep -c -- "$2" "$tmp/$1.out") lines" \
			"matching '$2' 60 s after the workload ended, want $3: $(cat "$tmp/$1.out")"
}
await pid '"event":"prog_unload"' 5
await pid '"event":"link_detach"' 5
await type '"event":"link_detach"' 5
await name '"event":"prog_unload"' 2
while read -r what _ id _; do
	[ "$what" != prog ] || await csv ";prog_unload;$id;" 1
done <"$tmp/links.out"
for name in pid type name csv; do
	pbt_events_stop $name
done

python3 - "$tmp" "$wl" <<'EOF' ||
import json, sys

tmp, wl = sys.argv[1], int(sys.argv[2])
errors = []
progs, links = {}, {}
for line in open(f"{tmp}/links.out"):
    f = line.split()
    if f[0] == "prog":
        progs[int(f[2])] = f[3]
    elif f[0] == "link":
        links[int(f[2])] = int(f[3])

def key(e):
    return (e["event"], e["link_id"] if e["event"].startswith("link_") else e["prog_id"])

def check(what, records, want):
    got = sorted(key(e) for e in records)
    if got != sorted(want):
        errors.append(f"{what}: records {got}, want {sorted(want)}")

PROG_EVENTS, LINK_EVENTS = ("prog_load", "prog_unload"), ("link_attach", "link_detach")
all_prog = [(ev, p) for p in progs for ev in PROG_EVENTS]
all_link = [(ev, l) for l in links for ev in LINK_EVENTS]

pid = [json.loads(l) for l in open(f"{tmp}/pid.out")]
# libbpf probes what the kernel supports with programs of its own, a
# nameless one and libbpf_nametest: the programs the workload loaded
# besides its five.  Their unloads are whoever dropped the last
# reference: the workload, or perf bpf events while it looked one up.
ids = {e["prog_id"] for e in pid
       if e["event"] == "prog_load" and e["pid"] == wl and e["prog_id"] not in progs}
def probe(e):
    return e["event"] in PROG_EVENTS and e["prog_id"] in ids

probes = [e for e in pid if probe(e)]
bad = [e["prog_name"] for e in probes
       if e["prog_name"] != "" and not e["prog_name"].startswith("libbpf_")]
if bad:
    errors.append(f"-p {wl}: programs loaded besides its own that are not libbpf's probes: {bad}")
if sorted(key(e) for e in probes) != sorted((ev, i) for i in ids for ev in PROG_EVENTS):
    errors.append(f"-p {wl}: libbpf's probes not loaded and unloaded once each: {probes}")
print(f"-p {wl}: libbpf's probes: {[(e['event'], e['prog_name']) for e in probes]}")
check(f"-p {wl}", [e for e in pid if not probe(e)], all_prog + all_link)
# the loads and attaches are the workload's; unloads and detaches anyone's
for e in pid:
    if e["event"] in ("prog_load", "link_attach") and e["pid"] != wl:
        errors.append(f"-p {wl}: {e['event']} by {e['pid']} ({e['comm']})")
others = [(e["event"], e["pid"], e["comm"]) for e in pid if e["pid"] != wl]
if others:
    print(f"-p {wl}: records caused by other tasks: {others}")

check("--type link", [json.loads(l) for l in open(f"{tmp}/type.out")], all_link)

cx = {p for p, n in progs.items() if n in ("pbt_cgroup", "pbt_xdp")}
name = [json.loads(l) for l in open(f"{tmp}/name.out")]
check("--name 'pbt_[cx]*'", name,
      [(ev, p) for p in cx for ev in PROG_EVENTS] +
      [(ev, l) for l, p in links.items() if p in cx for ev in LINK_EVENTS])
bad = [(e["event"], e["prog_name"]) for e in name
       if e["prog_name"] not in ("pbt_cgroup", "pbt_xdp")]
if bad:
    errors.append(f"--name 'pbt_[cx]*': records of other programs: {bad}")

lines = open(f"{tmp}/csv.out").read().splitlines()
head = lines[0].split(";")
want = ["time", "cpu", "pid", "tid", "comm", "event", "prog_id", "prog_name", "prog_type",
        "prog_tag", "link_id", "link_type", "attach_type", "target", "run_cnt", "run_time_ns",
        "recursion_misses", "gone", "lost"]
if head != want:
    errors.append(f"CSV header: {lines[0]}, want {';'.join(want)}")
rows = [l.split(";") for l in lines[1:]]
bad = [r for r in rows if len(r) != len(head)]
if not rows or bad:
    errors.append(f"CSV: {len(rows)} lines, {len(bad)} with another number of fields than "
                  f"the header: {bad[:3]}")
n = sum(1 for r in rows if r[5] == "prog_load" and r[7] == "pbt_short")
if n != 3:
    errors.append(f"CSV: {n} loads of pbt_short, want 3")
csv = [{"event": r[5], "prog_id": int(r[6]), "link_id": int(r[10] or 0)}
       for r in rows if len(r) == len(head) and r[6].isdigit() and
       (int(r[6]) in progs or (r[10].isdigit() and int(r[10]) in links))]
check("CSV, the workload's records", csv, all_prog + all_link)
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "the filters let the wrong records through (see above)"
pbt_end
