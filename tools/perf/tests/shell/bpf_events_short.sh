#!/bin/bash
# perf bpf events names programs that live for less than a millisecond; -a and --duration
# SPDX-License-Identifier: GPL-2.0
#
# perf bpf events -- COMMAND: the bpf_links workload loads and closes
# twenty programs named pbt_short.  Each must show, load and unload, with
# its name (from the KSYMBOL record when it is gone by the time perf bpf
# events reads its records, as at least one must be); at least one must
# have lived less than a millisecond by the records' times.  Only the
# workload's own records show, and perf bpf events ends with it, with a
# summary that counts what it printed.
#
# perf bpf events -a -- COMMAND: a program loaded by another process while
# the command runs shows too.
#
# perf bpf events --duration SECS: a program loaded meanwhile shows, and
# it ends by itself after SECS seconds, cleanly, with a summary.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(bpf_test_dir)

perf bpf events -j -o "$tmp/events.out" -- perf test -w bpf_links short 20 \
	>"$tmp/short.out" 2>"$tmp/events.err" &
self=$!
bpf_test_track $self
pbt_wait_gone $self 300 || bpf_test_fail "perf bpf events still running 300 s after its start"
pbt_reap $self || bpf_test_fail "perf bpf events: exit $?, want 0: $(cat "$tmp/events.err")"
pbt_summary events

python3 - "$tmp" "$self" <<'EOF' || bpf_test_fail "the records are not those of the workload"
import json, sys

tmp, self = sys.argv[1], int(sys.argv[2])
events = [json.loads(l) for l in open(f"{tmp}/events.out")]
errors = []
short = [e for e in events if e["event"] in ("prog_load", "prog_unload") and
         e["prog_name"] == "pbt_short"]
loads = {e["prog_id"]: e for e in short if e["event"] == "prog_load"}
unloads = {e["prog_id"]: e for e in short if e["event"] == "prog_unload"}
if len(loads) != 20 or len(unloads) != 20 or len(short) != 40:
    errors.append(f"{len(loads)} loads, {len(unloads)} unloads of pbt_short, "
                  f"{len(short)} records, want 20 each, 40 records")
if set(loads) != set(unloads):
    errors.append(f"load and unload records of different programs: {sorted(loads)}, "
                  f"{sorted(unloads)}")
# besides, libbpf probes what the kernel supports with programs of its
# own: a nameless one and libbpf_nametest
others = [e for e in events if e not in short and
          (e["prog_name"] != "" and not e["prog_name"].startswith("libbpf_"))]
if others:
    errors.append(f"records of other programs than pbt_short and libbpf's probes: {others}")
# the workload's records only; an unload may be perf bpf events' own, when
# its look-up held the last reference
pids = {e["pid"] for e in events if e["event"] == "prog_load"}
if len(pids) != 1 or not {e["pid"] for e in events} <= pids | {self}:
    errors.append(f"records of other tasks than the workload: {pids}")
# perf bpf events asks for a program when it reads its load record: the
# first one may still be there, not the others
gone = sum(1 for e in loads.values() if e["gone"])
print(f"{gone} of {len(loads)} loads marked gone")
if not gone:
    errors.append("no load marked gone, want at least one")
lives = sorted(unloads[i]["time"] - loads[i]["time"] for i in loads if i in unloads)
if not lives or lives[0] >= 0.001:
    errors.append(f"no program lived less than 1 ms: {lives[:3]}")
else:
    print(f"shortest life {lives[0] * 1e6:.0f} us, {sum(l < 0.001 for l in lives)} under 1 ms")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF

# -a with a command: the command waits for a line on all.ctl; meanwhile a
# process that is not its descendant loads pbt_short.
mkfifo "$tmp/all.ctl"
perf bpf events -a -j -o "$tmp/all.out" -- bash -c 'echo up; read -r _' \
	<"$tmp/all.ctl" >"$tmp/all.cmd" 2>"$tmp/all.err" &
all=$!
bpf_test_track $all
exec 3>"$tmp/all.ctl"
# shellcheck disable=SC2317 # called by pbt_wait
up() {
	grep -qx up "$tmp/all.cmd" && return 0
	bpf_test_gone "$all" &&
		bpf_test_fail "perf bpf events -a -- COMMAND ended before its command ran:" \
			"$(cat "$tmp/all.err")"
	return 1
}
pbt_wait 120 up || bpf_test_fail "the command of perf bpf events -a did not run within 120 s"
perf test -w bpf_links short 1 >/dev/null 2>"$tmp/other.err" &
other=$!
bpf_test_track $other
pbt_wait_gone $other 120 || bpf_test_fail "perf test -w bpf_links short 1 still running after 120 s"
pbt_reap $other || bpf_test_fail "perf test -w bpf_links short 1: exit $?: $(cat "$tmp/other.err")"
(echo end >&3) 2>/dev/null || bpf_test_fail "the command of perf bpf events -a ended early"
exec 3>&-
pbt_wait_gone $all 120 ||
	bpf_test_fail "perf bpf events -a still running 120 s after its command ended"
pbt_reap $all || bpf_test_fail "perf bpf events -a: exit $?, want 0: $(cat "$tmp/all.err")"
pbt_summary all
n=$(grep -c "\"pid\":$other,.*\"event\":\"prog_load\",.*\"prog_name\":\"pbt_short\"" \
	"$tmp/all.out")
[ "$n" = 1 ] || bpf_test_fail "perf bpf events -a -- COMMAND: $n loads of pbt_short by $other," \
	"not a descendant of the command, want 1: $(cat "$tmp/all.out")"
echo "-a -- COMMAND: the load of pbt_short by another process shows"

# --duration 5: it must have been reading, and still be running, when
# pbt_short is loaded, for that load to show: if it is not, the host is
# too slow for this run of it, and it runs again (for at most 120 s).
secs=5
# shellcheck disable=SC2317 # called by pbt_wait
reading() {
	grep -q 'reading the records of' "$tmp/dur.err" && return 0
	bpf_test_gone "$dur" && bpf_test_fail "perf bpf events --duration ended before reading:" \
		"$(cat "$tmp/dur.err")"
	return 1
}
end=$((SECONDS + 120))
while :; do
	[ "$SECONDS" -lt "$end" ] ||
		bpf_test_fail "perf bpf events --duration $secs never still running after a load" \
			"within 120 s"
	start=$SECONDS
	perf bpf events -j -v --duration $secs -o "$tmp/dur.out" 2>"$tmp/dur.err" &
	dur=$!
	bpf_test_track $dur
	pbt_wait 120 reading ||
		bpf_test_fail "perf bpf events --duration $secs not reading after 120 s"
	perf test -w bpf_links short 1 >/dev/null 2>"$tmp/other.err" ||
		bpf_test_fail "perf test -w bpf_links short 1 failed: $(cat "$tmp/other.err")"
	bpf_test_gone $dur || break
	pbt_reap $dur
	echo "perf bpf events --duration $secs had ended when pbt_short was loaded: again"
done
pbt_wait_gone "$dur" $((secs + 60)) ||
	bpf_test_fail "perf bpf events --duration $secs still running" \
		"$((SECONDS - start)) s after its start"
took=$((SECONDS - start))
pbt_reap "$dur" ||
	bpf_test_fail "perf bpf events --duration $secs: exit $?, want 0: $(cat "$tmp/dur.err")"
# $SECONDS counts whole seconds: one less than $secs may be $secs
[ $took -ge $((secs - 1)) ] ||
	bpf_test_fail "perf bpf events --duration $secs ended after $took s, want $secs"
pbt_summary dur
grep -q '"event":"prog_load",.*"prog_name":"pbt_short"' "$tmp/dur.out" ||
	bpf_test_fail "perf bpf events --duration $secs: pbt_short, loaded meanwhile, not shown:" \
		"$(cat "$tmp/dur.out")"
echo "--duration $secs: ended by itself after about $took s, showing pbt_short"
pbt_end
