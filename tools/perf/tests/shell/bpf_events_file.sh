#!/bin/bash
# perf bpf events -i reads the BPF lifecycle back from a perf.data file
# SPDX-License-Identifier: GPL-2.0
#
# perf record -a (side-band only: -e dummy, enabled through its control
# fifo once it runs) and perf bpf events -j -a watch the bpf_links
# workload load five programs, attach their links (cgroup, raw_tp,
# fentry, perf_event, xdp), detach, close and unload them.  perf bpf
# events -j -i on the file must then show the same records of the
# workload's programs and links as the live one, in the same order: the
# event, the program's id, name and tag, the link's id, type and attach
# type, and the program's type where perf record saved its information
# (unknown otherwise, and most must have it).  The file holds no link's
# target: none is shown.  -x gives the same lines.
# A missing file, a file that is not perf.data, and -i with -a or a
# command fail with an error.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(bpf_test_dir)
pbt_link_records || bpf_test_skip "the kernel writes no link records"
pbt_cgroup
cgroup=$(pbt_cgroup_path)

# bad input
if perf bpf events -i "$tmp/none.data" -o /dev/null 2>"$tmp/bad.err"; then
	bpf_test_fail "perf bpf events -i of a missing file succeeded"
fi
grep -q "none.data" "$tmp/bad.err" ||
	bpf_test_fail "perf bpf events -i of a missing file does not name it: $(cat "$tmp/bad.err")"
echo "not perf.data" >"$tmp/bad.data"
if perf bpf events -i "$tmp/bad.data" -o /dev/null 2>"$tmp/bad.err"; then
	bpf_test_fail "perf bpf events -i of a file that is not perf.data succeeded"
fi
for args in "-a" "-- true"; do
	# shellcheck disable=SC2086 # $args: options, split
	perf bpf events -i "$tmp/bad.data" $args >/dev/null 2>"$tmp/bad.err"
	[ $? = 129 ] && grep -q -- "-i reads a file" "$tmp/bad.err" ||
		bpf_test_fail "perf bpf events -i with $args: no usage error: $(cat "$tmp/bad.err")"
done

# perf record, started disabled, enabled through its control fifo: once
# it says ack, it records
mkfifo "$tmp/ctl" "$tmp/ack"
perf record -q -a -e dummy -D -1 --control "fifo:$tmp/ctl,$tmp/ack" -o "$tmp/perf.data" \
	2>"$tmp/record.err" &
rec=$!
bpf_test_track $rec
# read and write ends both: no open blocks, whatever perf record does
exec 4<>"$tmp/ctl"
exec 5<>"$tmp/ack"
echo enable >&4
read -r -t 120 ack <&5 && [ "$ack" = ack ] ||
	bpf_test_fail "perf record did not enable its events within 120 s: $(cat "$tmp/record.err")"

pbt_events live -j -a
pbt_links links "$cgroup"
pbt_links_go links
# unloaded: perf bpf events has shown the unload of each of its programs
all_unloaded() {
	local p

	for p in $(awk '$1 == "prog" { print $3 }' "$tmp/links.out"); do
		grep -q "\"event\":\"prog_unload\",\"prog_id\":$p," "$tmp/live.out" || return 1
	done
}
pbt_wait 120 all_unloaded ||
	bpf_test_fail "perf bpf events did not show the workload's unloads within 120 s"
pbt_events_stop live
kill -INT $rec
pbt_wait_gone $rec 120 || bpf_test_fail "perf record still running 120 s after SIGINT"
# perf record ends as SIGINT would have it end, having written the file
pbt_reap $rec
rc=$?
[ $rc = 0 ] || [ $rc = 130 ] || bpf_test_fail "perf record: exit $rc: $(cat "$tmp/record.err")"
exec 4>&- 5>&-

if grep -q "too late" "$tmp/live.err"; then
	bpf_test_fail "perf bpf events shows records out of time order: $(cat "$tmp/live.err")"
fi
timeout 120 perf bpf events -j -i "$tmp/perf.data" -o "$tmp/file.out" 2>"$tmp/file.err" ||
	bpf_test_fail "perf bpf events -i: $(cat "$tmp/file.err")"
timeout 120 perf bpf events -x';' -i "$tmp/perf.data" -o "$tmp/file.csv" 2>/dev/null ||
	bpf_test_fail "perf bpf events -x -i failed"
if timeout 60 perf bpf events -i "$tmp/perf.data" -o "$tmp/perf.data" 2>"$tmp/bad.err"; then
	bpf_test_fail "perf bpf events -i FILE -o FILE succeeded"
fi
[ -s "$tmp/perf.data" ] || bpf_test_fail "perf bpf events -i FILE -o FILE emptied FILE"

python3 - "$tmp" <<'EOF' ||
import json, sys

tmp = sys.argv[1]
errors = []
def fail(msg):
    errors.append(msg)

progs = {int(l.split()[2]) for l in open(f"{tmp}/links.out") if l.startswith("prog ")}
KEYS = ("event", "prog_id", "prog_name", "prog_tag", "link_id", "link_type", "attach_type")

def lines(path):
    out = []
    for l in open(path):
        r = json.loads(l)
        if r.get("prog_id") in progs:
            out.append(r)
    return out

live, file = lines(f"{tmp}/live.out"), lines(f"{tmp}/file.out")
print(f"{len(live)} records of the workload live, {len(file)} from the file")
# the same records, and in the same order for each program and link; two
# objects' records written on two CPUs within microseconds of each other
# (an unload by a kworker) may come in either order in two streams, as
# the kernel takes each listener's timestamp apart
def by_object(rows):
    seq = {}
    for r in rows:
        t = tuple(r.get(k) for k in KEYS)
        seq.setdefault(("link", r["link_id"]) if "link_id" in r else ("prog", r["prog_id"]),
                       []).append(t)
    return seq
a, b = by_object(live), by_object(file)
for obj in sorted(set(a) | set(b)):
    if a.get(obj) != b.get(obj):
        fail(f"{obj[0]} {obj[1]}: live {a.get(obj)}, from the file {b.get(obj)}")
if sorted(tuple(r.get(k) for k in KEYS) for r in live) != \
   sorted(tuple(r.get(k) for k in KEYS) for r in file):
    fail("the records from the file are not those of the live stream")
if len(live) != 20 or len(a) != 10:
    fail(f"{len(live)} records of {len(a)} objects of the workload live,"
         " want 20 of 10 (5 programs, 5 links)")
typed = 0
file_by = {(r["event"], r.get("link_id"), r["prog_id"]): r for r in file}
for x in live:
    y = file_by.get((x["event"], x.get("link_id"), x["prog_id"]), {})
    # unknown: "" (-x and -j), when perf record could not save it
    if y.get("prog_type") not in ("", x.get("prog_type")):
        fail(f"program {x['prog_id']}: type {y.get('prog_type')!r} from the file, "
             f"{x.get('prog_type')!r} live")
    typed += y.get("prog_type") not in ("", None)
    if y.get("target") not in (None, "", "-"):
        fail(f"a target from the file: {y}")
if typed < len(live) // 2:
    fail(f"only {typed} of {len(file)} records from the file have their program's type")
csv = open(f"{tmp}/file.csv").read().splitlines()
head = csv[0].split(";")
rows = [dict(zip(head, l.split(";"))) for l in csv[1:]]
got = [r for r in rows if r.get("prog_id", "").isdigit() and int(r["prog_id"]) in progs]
if [(r["event"], int(r["prog_id"])) for r in got] != [(r["event"], r["prog_id"]) for r in file]:
    fail("-x -i does not give the records -j -i gives")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "perf bpf events -i and the live stream disagree: see above"
echo "from the file: $(grep -c . "$tmp/file.out") records; $(grep '^\[' "$tmp/file.err")"
pbt_end
