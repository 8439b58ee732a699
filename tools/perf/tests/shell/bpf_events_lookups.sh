#!/bin/bash
# perf bpf events looks up only the programs and links it can show
# SPDX-License-Identifier: GPL-2.0
#
# A look-up of a program or link by id holds it for a moment: when its
# owner lets go of it meanwhile, the kernel writes its unload or detach
# as perf bpf events' own.  So perf bpf events asks the kernel only about
# what it may show.  perf stat counts its BPF_PROG_GET_FD_BY_ID (13) and
# BPF_LINK_GET_FD_BY_ID (30) calls from when it reads the records until
# it has shown those it waits for, while the bpf_links workload loads
# and attaches five programs, then detaches and unloads them, twenty
# short-lived programs come and go, and then a process P loads three
# and holds them until perf bpf events -p P has shown them:
#  - perf bpf events -a: at most one look-up of each program and each
#    link it shows, at the end of the pass that read its load or attach
#    record, none of a program whose unload the pass read too (not again
#    for a program's link, nor when the record is shown, even if the
#    object was gone by then), and one more of the program of a tracing
#    link (fentry), whose target is read from the program's info;
#  - perf bpf events -p P: one look-up of each program P holds, at most
#    one per load of P's it shows (libbpf's probes are short-lived), none
#    of a link;
#  - perf bpf events --type prog: no look-up of a link, and some of
#    programs (so that the count is known to count).

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(bpf_test_dir)
perf list tracepoint 2>/dev/null | grep -q 'syscalls:sys_enter_bpf' ||
	bpf_test_skip "no syscalls:sys_enter_bpf tracepoint (CONFIG_FTRACE_SYSCALLS)"
pbt_cgroup
cgroup=$(pbt_cgroup_path)

# P: loads three programs once it reads a line, closes them at the next
mkfifo "$tmp/p.ctl"
(read -r _ && exec perf test -w bpf_links many 3) <"$tmp/p.ctl" >/dev/null 2>"$tmp/p.err" &
p=$!
bpf_test_track $p
exec 4>"$tmp/p.ctl"

# reading NAME: whether perf bpf events NAME reads the records; fails as
# soon as it has ended
# shellcheck disable=SC2317 # called by pbt_wait
reading() {
	grep -q 'reading the records of' "$tmp/$1.err" && return 0
	bpf_test_gone "$(cat "$tmp/$1.pid")" &&
		bpf_test_fail "perf bpf events ($1) ended before reading: $(cat "$tmp/$1.err")"
	return 1
}
# start NAME OPTIONS...: perf bpf events, until it reads the records, and
# perf stat counting its look-ups, disabled until 'count NAME enable'
start() {
	local name=$1 pid

	shift
	perf bpf events -v -j -o "$tmp/$name.out" "$@" 2>"$tmp/$name.err" &
	pid=$!
	echo $pid >"$tmp/$name.pid"
	bpf_test_track $pid
	pbt_wait 120 reading "$name" ||
		bpf_test_fail "perf bpf events $* not reading within 120 s: $(cat "$tmp/$name.err")"
	mkfifo "$tmp/$name.stat-ctl" "$tmp/$name.stat-ack"
	perf stat -D -1 --control "fifo:$tmp/$name.stat-ctl,$tmp/$name.stat-ack" -x, \
		-o "$tmp/$name.stat" -p "$pid" \
		-e syscalls:sys_enter_bpf --filter 'cmd == 13' \
		-e syscalls:sys_enter_bpf --filter 'cmd == 30' 2>"$tmp/$name.stat-err" &
	echo $! >"$tmp/$name.stat-pid"
	bpf_test_track $!
}
# count NAME enable|disable: perf stat of NAME counts from now, or no more
count() {
	local ack

	# opening the fifo waits for perf stat to open it: bounded
	# shellcheck disable=SC2016 # the inner shell expands them
	timeout 60 bash -c 'echo "$1" >"$2"' _ "$2" "$tmp/$1.stat-ctl" 2>/dev/null ||
		bpf_test_fail "perf stat ($1) did not take '$2': $(cat "$tmp/$1.stat-err")"
	ack=$(timeout 60 head -n 1 "$tmp/$1.stat-ack") ||
		bpf_test_fail "perf stat ($1) did not acknowledge '$2' within 60 s"
	[ "$ack" = ack ] || bpf_test_fail "perf stat ($1) answered '$ack' to '$2'"
}
# shown NAME PATTERN N: whether N lines of NAME's output match PATTERN
# shellcheck disable=SC2317 # called by pbt_wait
shown() {
	[ "$(grep -c -- "$2" "$tmp/$1.out")" -ge "$3" ]
}
await() {
	pbt_wait 120 shown "$@" ||
		bpf_test_fail "perf bpf events ($1): $(grep -c -- "$2" "$tmp/$1.out") lines" \
			"matching '$2' 120 s after the workload ended, want $3:" \
			"$(cat "$tmp/$1.out")"
}

start all -a
start pid -p "$p"
start prog --type prog
for name in all pid prog; do
	count $name enable
done

pbt_links_start links "$cgroup"
pbt_links_load links
perf test -w bpf_links short 20 >/dev/null 2>"$tmp/short.err" ||
	bpf_test_fail "perf test -w bpf_links short 20 failed: $(cat "$tmp/short.err")"
pbt_links_go links
echo go >&4
# held until shown: looked up by then
await pid '"event":"prog_load","prog_id":[0-9]*,"prog_name":"pbt_many"' 3
echo close >&4
exec 4>&-
pbt_wait_gone $p 120 || bpf_test_fail "P still running 120 s after its close"
pbt_reap $p || bpf_test_fail "P (perf test -w bpf_links many 3) failed: $(cat "$tmp/p.err")"

await pid '"event":"prog_unload","prog_id":[0-9]*,"prog_name":"pbt_many"' 3
await all '"event":"prog_unload","prog_id":[0-9]*,"prog_name":"pbt_many"' 3
await all '"event":"prog_unload","prog_id":[0-9]*,"prog_name":"pbt_short"' 20
while read -r what _ id _; do
	[ "$what" != prog ] || await prog "\"event\":\"prog_unload\",\"prog_id\":$id," 1
	[ "$what" != prog ] || await all "\"event\":\"prog_unload\",\"prog_id\":$id," 1
done <"$tmp/links.out"
for name in all pid prog; do
	count $name disable
	kill -INT "$(cat "$tmp/$name.stat-pid")"
	pbt_wait_gone "$(cat "$tmp/$name.stat-pid")" 60 ||
		bpf_test_fail "perf stat ($name) still running 60 s after SIGINT"
	pbt_events_stop $name
done

python3 - "$tmp" <<'PYEOF' ||
import json, sys

tmp = sys.argv[1]
errors = []

def lookups(name):
    """the counts of perf stat -x, for the two events: programs, links"""
    rows = [l.split(",") for l in open(f"{tmp}/{name}.stat")
            if l.strip() and not l.startswith("#")]
    counts = [int(r[0]) if r[0].isdigit() else None for r in rows]
    if len(counts) != 2 or None in counts:
        sys.exit(f"FAIL: perf stat ({name}) did not count both: {rows}")
    return counts

def shown(name, event, link_type=None, prog_name=None):
    return sum(1 for e in map(json.loads, open(f"{tmp}/{name}.out"))
               if e["event"] == event and link_type in (None, e.get("link_type"))
               and prog_name in (None, e.get("prog_name")))

progs, links = lookups("all")
loads, attaches = shown("all", "prog_load"), shown("all", "link_attach")
tracing = shown("all", "link_attach", "tracing")
print(f"-a: {loads} loads and {attaches} attaches ({tracing} tracing) shown, {progs} program "
      f"and {links} link look-ups")
if not 0 < progs <= loads + tracing or not 0 < links <= attaches:
    errors.append(f"-a: {progs} program look-ups for {loads} loads and {tracing} tracing "
                  f"links shown, {links} link look-ups for {attaches} attaches, want one at "
                  "most each, and some")

progs, links = lookups("pid")
loads = shown("pid", "prog_load")
held = shown("pid", "prog_load", None, "pbt_many")
print(f"-p P: {loads} loads shown ({held} held), {progs} program and {links} link look-ups")
if not held <= progs <= loads or held != 3 or links:
    errors.append(f"-p P: {progs} program look-ups for {loads} loads shown, {held} of "
                  f"programs P holds, want one of each held (3) and at most one a load; "
                  f"{links} link look-ups, want 0")

progs, links = lookups("prog")
print(f"--type prog: {progs} program and {links} link look-ups")
if links or not progs:
    errors.append(f"--type prog: {links} link look-ups, want 0; {progs} program look-ups, "
                  "want some")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
PYEOF
	bpf_test_fail "perf bpf events looked up what it does not show (see above)"
pbt_end
