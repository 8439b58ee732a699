#!/bin/bash
# perf bpf events filters by process, type and name, and prints CSV
# SPDX-License-Identifier: GPL-2.0
#
# Four perf bpf events at once while the bpf_links workload detaches
# its links and unloads its programs and another one loads and unloads
# short-lived programs: -p must show the five detaches and five unloads
# of the first workload and nothing else; --type link the five detaches
# only; --name 'pbt_[cx]*' the records of pbt_cgroup and pbt_xdp only;
# -x';' everything, as CSV with a header line and as many fields on
# every line.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(pbt_dir)
cgroup=$(pbt_cgroup)

pbt_links links "$cgroup"
wl=$(cat "$tmp/links.pid")

# start NAME OPTIONS...: perf bpf events, until it reads the records (-v says so)
start() {
	local name=$1

	shift
	perf bpf events -v -o "$tmp/$name.out" "$@" 2>"$tmp/$name.err" &
	echo $! >"$tmp/$name.pid"
	pbt_track $!
	pbt_wait 120 grep -q 'reading the records of' "$tmp/$name.err" ||
		pbt_fail "perf bpf events $* did not start: $(cat "$tmp/$name.err")"
}
start pid -j -p "$wl"
start type -j --type link
start name -j --name 'pbt_[cx]*'
start csv -x';'

perf test -w bpf_links short 3 >/dev/null || pbt_fail "bpf_links short failed"
pbt_links_go links
last=$(awk '$1 == "prog" { id = $3 } END { print id }' "$tmp/links.out")
# shown NAME PATTERN N: at least N lines of NAME's output match PATTERN
shown() {
	[ "$(grep -c -- "$2" "$tmp/$1.out")" -ge "$3" ]
}
pbt_wait 60 shown pid '"event":"prog_unload"' 5 &&
pbt_wait 60 shown type '"event":"link_detach"' 5 &&
pbt_wait 60 shown name '"event":"prog_unload"' 2 &&
pbt_wait 60 shown csv ";prog_unload;$last;" 1 ||
	pbt_fail "perf bpf events: not the records awaited"
for name in pid type name csv; do
	pbt_events_stop $name
done

python3 - "$tmp" "$wl" "$(cat "$tmp/pid.pid")" <<'EOF' ||
import json, sys

tmp, wl, self = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
errors = []
pid = [json.loads(l) for l in open(f"{tmp}/pid.out")]
# an unload or detach may be perf bpf events' own: its look-up held the
# last reference
if sorted(e["event"] for e in pid) != ["link_detach"] * 5 + ["prog_unload"] * 5 or \
   not {e["pid"] for e in pid} <= {wl, self}:
    errors.append(f"-p {wl}: {[(e['event'], e['pid']) for e in pid]}")
typ = [json.loads(l) for l in open(f"{tmp}/type.out")]
if sorted(e["event"] for e in typ) != ["link_detach"] * 5:
    errors.append(f"--type link: {[e['event'] for e in typ]}")
name = [json.loads(l) for l in open(f"{tmp}/name.out")]
got = sorted((e["event"], e["prog_name"]) for e in name)
want = sorted([("link_detach", "pbt_cgroup"), ("link_detach", "pbt_xdp"),
               ("prog_unload", "pbt_cgroup"), ("prog_unload", "pbt_xdp")])
if got != want:
    errors.append(f"--name 'pbt_[cx]*': {got}")
lines = open(f"{tmp}/csv.out").read().splitlines()
head = lines[0].split(";")
if head != ["time", "cpu", "pid", "tid", "comm", "event", "prog_id", "prog_name", "prog_type",
            "prog_tag", "link_id", "link_type", "attach_type", "target", "gone", "lost"]:
    errors.append(f"CSV header: {lines[0]}")
rows = [l.split(";") for l in lines[1:]]
if not rows or any(len(r) != len(head) for r in rows):
    errors.append("CSV lines with another number of fields than the header")
if sum(1 for r in rows if r[5] == "prog_load" and r[7] == "pbt_short") != 3:
    errors.append("CSV: not the three loads of pbt_short")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	pbt_fail "the filters let the wrong records through"
exit 0
