#!/bin/bash
# perf bpf escapes comms and cgroup paths in its output
# SPDX-License-Identifier: GPL-2.0
#
# Two workloads run under comms perf did not choose: one with a newline
# (the many workload, holding a program), one with an ESC sequence and a
# byte that is not UTF-8 (the links workload, its cgroup link on a cgroup
# whose name has the same).  A comm is the name of what was executed: a
# link to perf under that name gives it.  perf bpf events, list and top,
# in text, CSV and JSON, show them: every JSON line must be valid UTF-8
# and parse, with the comms and the path as they are, the ill-formed byte
# as U+FFFD; the text and CSV must hold no control character but newline
# and tab (nor C1, nor ill-formed UTF-8), no line split by the newline,
# and the escaped forms, such as \x1b[31m and \xff.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require
tmp=$(bpf_test_dir)
if command -v python3 >/dev/null; then
	py=1
else
	py=0
	echo "the JSON and UTF-8 checks skipped: python3 not found"
fi

comm_esc=$'pbt\e[31m\xff'
comm_nl=$'pbt\nnl'
# and as text and CSV show them
text_esc='pbt\x1b[31m\xff'
text_nl='pbt\x0anl'
text_cg="perf_test_bpf_$$"'\x1b[32m\xff'

pbt_cgroup $'\e[32m\xff'
cgroup=$(pbt_cgroup_path)
perf=$(readlink -f "$(command -v perf)")
ln -s "$perf" "$tmp/$comm_esc" && ln -s "$perf" "$tmp/$comm_nl" ||
	bpf_test_fail "cannot make links to $perf in $tmp"

# has_comm PID COMM: PID has the comm COMM
has_comm() {
	printf '%s\n' "$2" | cmp -s - "/proc/$1/comm"
}

# shown FILE FORMAT PROG LINK: perf bpf events printed the load of
# program PROG and, if LINK is not empty, the attach of link LINK
shown() {
	case $2 in
	json)	grep -q "\"event\":\"prog_load\",\"prog_id\":$3," "$1" &&
		{ [ -z "$4" ] || grep -q "\"event\":\"link_attach\",.*\"link_id\":$4," "$1"; } ;;
	csv)	grep -q ";prog_load;$3;" "$1" &&
		{ [ -z "$4" ] || grep -q ";link_attach;.*;$4;cgroup;" "$1"; } ;;
	*)	grep -Eq " prog_load +prog $3 " "$1" &&
		{ [ -z "$4" ] || grep -q " link_attach .* link $4 cgroup " "$1"; } ;;
	esac
}

# the three started together, then each waited for
pbt_events_start ev_json -j
pbt_events_start ev_csv -x';'
pbt_events_start ev_text
for f in json csv text; do
	pbt_events_wait ev_$f
done

# the many workload, under the comm with a newline, holds pbt_many
mkfifo "$tmp/many.ctl"
"$tmp/$comm_nl" test -w bpf_links many 1 <"$tmp/many.ctl" >"$tmp/many.out" \
	2>"$tmp/many.err" &
many=$!
bpf_test_track $many
exec 4>"$tmp/many.ctl"
# many_ready: the workload holds its program, or has ended (gone, or a
# zombie until reaped), which fails the test at once.  Its comm holds a
# newline: the state is what follows the comm's ")" in /proc/PID/stat.
many_ready() {
	local st

	grep -qx 'many 1' "$tmp/many.out" && return 0
	st=$(tr '\n' ' ' 2>/dev/null <"/proc/$many/stat" | sed 's/.*) \([A-Z]\) .*/\1/')
	[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}
pbt_wait 120 many_ready && grep -qx 'many 1' "$tmp/many.out" ||
	bpf_test_fail "bpf_links many ended, or was not ready within 120 s:" \
		"$(cat "$tmp/many.err")"
has_comm $many "$comm_nl" ||
	bpf_test_skip "perf runs under the name it was run as, not $perf (a wrapper?)"

# then the links workload, under the comm with ESC and \xff
pbt_links links "$cgroup" "$tmp/$comm_esc"
has_comm "$(cat "$tmp/links.pid")" "$comm_esc" ||
	bpf_test_fail "the links workload's comm is not that of $tmp/$comm_esc"
lid=$(awk '$1 == "link" && $2 == "cgroup" { print $3 }' "$tmp/links.out")
cgprog=$(awk '$1 == "link" && $2 == "cgroup" { print $4 }' "$tmp/links.out")
[ -n "$lid" ] || bpf_test_fail "no cgroup link id from bpf_links: $(cat "$tmp/links.out")"
# without link records, no link target in perf bpf events
if grep -q 'this kernel writes no link records' "$tmp/ev_json.err"; then
	echo "the kernel writes no link records: no link target in perf bpf events"
	links=0
	wait_lid=
else
	links=1
	wait_lid=$lid
fi

# the records come in time order: the load of the cgroup program, and
# the attach of its link, come after the load of pbt_many
for f in json csv text; do
	pbt_wait 60 shown "$tmp/ev_$f.out" $f "$cgprog" "$wait_lid" ||
		bpf_test_fail "perf bpf events ($f) did not show program $cgprog and link $lid" \
			"within 60 s: $(cat "$tmp/ev_$f.err")"
done

for f in json csv text; do
	pbt_events_stop ev_$f
done

# with the workloads still there
for f in json csv text; do
	case $f in
	json)	opt=-j ;;
	csv)	opt=-x';' ;;
	*)	opt= ;;
	esac
	# shellcheck disable=SC2086 # no option for text
	timeout -k 10 120 perf bpf list $opt >"$tmp/list_$f.out" 2>"$tmp/list_$f.err" ||
		bpf_test_fail "perf bpf list $opt failed: $(cat "$tmp/list_$f.err")"
	[ $f = text ] && opt=--stdio
	# shellcheck disable=SC2086
	timeout -k 10 120 perf bpf top $opt -I 100 --interval-count 2 --name 'pbt_*' \
		-o "$tmp/top_$f.out" \
		2>"$tmp/top_$f.err" ||
		bpf_test_fail "perf bpf top $opt failed: $(cat "$tmp/top_$f.err")"
done

# must FILE STRING...: FILE has each STRING, on a line
must() {
	local f=$1 s

	shift
	for s in "$@"; do
		grep -qF -- "$s" "$f" || bpf_test_fail "${f##*/}: no $s:" "$(head -c 2000 "$f")"
	done
}

# lines FILE ERE: every line of FILE matches ERE: none was split
lines() {
	local bad

	bad=$(LC_ALL=C grep -a -v -n -E -- "$2" "$1" | head -n 3)
	[ -z "$bad" ] || bpf_test_fail "${1##*/}: lines split or not as they should be: $bad"
}

for f in csv text; do
	for cmd in ev list top; do
		out=$tmp/${cmd}_$f.out
		[ -s "$out" ] || bpf_test_fail "${out##*/} is empty"
		n=$(tr -cd '\000' <"$out" | wc -c)
		[ "$n" = 0 ] || bpf_test_fail "${out##*/}: $n NUL bytes"
		# C0 but tab and newline, DEL, C1 as UTF-8 encodes it
		bad=$(LC_ALL=C grep -a -n -E $'[\x01-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$out" |
		      head -n 3)
		[ -z "$bad" ] || bpf_test_fail "${out##*/}: raw control characters:" \
			"$(echo "$bad" | od -c | head -n 20)"
		[ $cmd = top ] || must "$out" "$text_esc" "$text_nl"
		[ $cmd = ev ] && [ $links = 0 ] || must "$out" "$text_cg"
	done
done
lines "$tmp/ev_text.out" '^ *[0-9]+\.[0-9]{6} \[[0-9]+\] '
lines "$tmp/ev_csv.out" '^([0-9]+\.[0-9]{9};|time;cpu;pid;)'
lines "$tmp/list_text.out" '^(prog [0-9]+ |    pids |    link [0-9]+ )'
lines "$tmp/list_csv.out" '^([0-9]+;|prog_id;prog_name;)'
lines "$tmp/top_text.out" '^(perf bpf top: |\(|$| +ID NAME | *[0-9]+ )'
lines "$tmp/top_csv.out" '^([0-9]+\.[0-9]{6};|time;prog_id;)'
# the pids of list, pid/comm in CSV, comm(pid) in text
must "$tmp/list_csv.out" "$many/$text_nl" "$(cat "$tmp/links.pid")/$text_esc"
must "$tmp/list_text.out" "$text_nl($many)" "$text_esc($(cat "$tmp/links.pid"))"

if [ $py = 1 ]; then
	python3 - "$tmp" "$many" "$(cat "$tmp/links.pid")" "$comm_esc" "$comm_nl" "$cgroup" \
		"$lid" "$links" <<'EOF' ||
import json, os, sys

tmp, many, links = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# as JSON shows them: the byte that is not UTF-8 as U+FFFD
comm_esc, comm_nl, cgroup = (os.fsencode(a).decode(errors="replace") for a in sys.argv[4:7])
lid, has_links = int(sys.argv[7]), sys.argv[8] == "1"
cgname = "/" + cgroup.rsplit("/", 1)[1]
errors = []

def load(name):
    rows = []
    for n, line in enumerate(open(f"{tmp}/{name}", "rb"), 1):
        try:
            rows.append(json.loads(line.decode("utf-8")))
        except ValueError as e:
            errors.append(f"{name}:{n}: {e}: {line[:200]!r}")
    return rows

ev, lst, top = load("ev_json.out"), load("list_json.out"), load("top_json.out")
for name in ("ev_text.out", "ev_csv.out", "list_text.out", "list_csv.out",
             "top_text.out", "top_csv.out"):
    try:
        open(f"{tmp}/{name}", "rb").read().decode("utf-8")
    except ValueError as e:
        errors.append(f"{name}: not UTF-8: {e}")

if not any(e.get("pid") == links and e.get("comm") == comm_esc for e in ev):
    errors.append(f"perf bpf events -j: no record of {links} with comm {comm_esc!r}")
if not any(e.get("pid") == many and e.get("comm") == comm_nl for e in ev):
    errors.append(f"perf bpf events -j: no record of {many} with comm {comm_nl!r}")
if has_links and not any(e.get("link_id") == lid and e.get("target") == cgname for e in ev):
    errors.append(f"perf bpf events -j: link {lid} without target {cgname!r}")
owners = {(o["pid"], o["comm"]) for p in lst for o in p.get("pids", [])}
if (links, comm_esc) not in owners or (many, comm_nl) not in owners:
    errors.append(f"perf bpf list -j: owners {sorted(owners)}")
if not any(l.get("link_id") == lid and l.get("target") == cgname
           for p in lst for l in p.get("links", [])):
    errors.append(f"perf bpf list -j: link {lid} without target {cgname!r}")
if not any(r.get("attach", "").endswith(" " + cgname) for r in top):
    errors.append(f"perf bpf top -j: no attach to {cgname!r}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
		bpf_test_fail "perf bpf -j: see above"
fi

(echo >&4) 2>/dev/null
exec 4>&-
pbt_wait_gone $many 120 || bpf_test_fail "bpf_links many still running 120 s after its end"
pbt_reap $many || bpf_test_fail "bpf_links many: exit $?: $(cat "$tmp/many.err")"
pbt_links_go links
pbt_end
