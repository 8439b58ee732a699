#!/bin/bash
# perf record and perf script show BPF link records
# SPDX-License-Identifier: GPL-2.0
#
# perf record -a while links made before it started are detached and new
# ones are attached and detached: perf script --show-bpf-events must show
# a link_attach record for each link that existed at the start (perf
# record synthesizes them), and attach and detach records of the others,
# each once, with their link types by name; perf report -D too.  Upstream
# perf, if there, must read the file.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require python3
tmp=$(pbt_dir)
cgroup=$(pbt_cgroup)

# Links from before, released during the recording, then new ones that
# see no go: attached, detached at once.
pbt_links before "$cgroup"
before=$(cat "$tmp/before.pid")
cat >"$tmp/workload.sh" <<EOF
echo go >&3
exec 3>&-
while kill -0 $before 2>/dev/null; do sleep 0.1; done
perf test -w bpf_links links "$cgroup" </dev/null >"$tmp/during.out"
EOF
timeout 300 perf record -q -a -e dummy -o "$tmp/perf.data" -- sh "$tmp/workload.sh" \
	2>"$tmp/record.err" || pbt_fail "perf record failed: $(cat "$tmp/record.err")"
exec 3>&-
pbt_wait_gone "$before" 60 || pbt_fail "bpf_links did not end"
grep -qx unloaded "$tmp/during.out" || pbt_fail "the second bpf_links failed"

perf script -i "$tmp/perf.data" --show-bpf-events >"$tmp/script" 2>"$tmp/script.err" ||
	pbt_fail "perf script failed: $(cat "$tmp/script.err")"
perf report -i "$tmp/perf.data" -D >"$tmp/dump" 2>"$tmp/dump.err" ||
	pbt_fail "perf report -D failed: $(cat "$tmp/dump.err")"
grep 'PERF_RECORD_BPF_EVENT' "$tmp/script" | grep 'link_' | head -4

python3 - "$tmp" <<'EOF' || pbt_fail "the link records do not match"
import re, sys

tmp = sys.argv[1]
kinds = {"cgroup": "cgroup", "raw_tp": "raw_tracepoint", "fentry": "tracing",
         "perf_event": "perf_event", "xdp": "xdp"}
rec = re.compile(r"PERF_RECORD_BPF_EVENT type (\d), flags 0, id (\d+), (link_\w+), "
                 r"link_id (\d+), link_type (\w+), attach_type (\w+)$")
errors = []
for what in ("script", "dump"):
    seen = {}
    for line in open(f"{tmp}/{what}"):
        m = rec.search(line.rstrip())
        if m:
            typ, prog, ev, link, ltype, atype = m.groups()
            seen.setdefault((ev, int(link)), []).append((int(prog), ltype, line))
    for name in ("before", "during"):
        for line in open(f"{tmp}/{name}.out"):
            f = line.split()
            if f[0] != "link":
                continue
            link, prog = int(f[2]), int(f[3])
            for ev in ("link_attach", "link_detach"):
                got = seen.get((ev, link), [])
                if len(got) != 1:
                    errors.append(f"{what}: {len(got)} {ev} records of {name} link {link}")
                    continue
                if got[0][0] != prog or got[0][1] != kinds[f[1]]:
                    errors.append(f"{what}: {ev} of link {link}: {got[0][2].strip()}")
                # a link from before the start: synthesized, at time 0
                if what == "script" and name == "before" and ev == "link_attach" and \
                   " 0.000000: " not in got[0][2]:
                    errors.append(f"attach of link {link} from before is not synthesized")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF

if command -v perf-base >/dev/null; then
	perf-base script -i "$tmp/perf.data" --show-bpf-events >"$tmp/base" 2>"$tmp/base.err" ||
		pbt_fail "upstream perf script failed: $(cat "$tmp/base.err")"
	[ "$(grep -c 'PERF_RECORD_BPF_EVENT type 3,' "$tmp/base")" -ge 10 ] ||
		pbt_fail "upstream perf script lacks link records"
	echo "upstream perf reads the file"
fi
exit 0
