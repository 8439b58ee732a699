#!/bin/bash
# perf record and perf script show BPF link records
# SPDX-License-Identifier: GPL-2.0
#
# perf record -a while links made before it started are detached and new
# ones are attached and detached: perf script --show-bpf-events must show
# a link_attach record for each link that existed at the start (perf
# record synthesizes them), and attach and detach records of the others,
# each once, with their link types by name and the attach type each kind
# of link has, the same in the records perf record synthesized and in
# those the kernel wrote; perf report -D too.  A struct_ops link made
# before the start, which holds a map of programs rather than one, shows
# with program id 0, synthesized and detached, where the kernel registers
# tcp_congestion_ops struct_ops.  Upstream perf, if there, must read the
# file (perf script and perf report -D).

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

# Links from before, released during the recording, then new ones that
# see no go: attached, detached at once.  What goes wrong in the recorded
# workload goes to workload.err.
pbt_links before "$cgroup"
before=$(cat "$tmp/before.pid")

# A struct_ops link from before, released with the others: orders on fd 4.
mkfifo "$tmp/sops.ctl"
perf test -w bpf_links struct_ops <"$tmp/sops.ctl" >"$tmp/sops.out" 2>"$tmp/sops.err" &
sops=$!
bpf_test_track $sops
exec 4>"$tmp/sops.ctl"
# shellcheck disable=SC2317 # called by pbt_wait
sops_settled() {
	grep -qx ready "$tmp/sops.out" || bpf_test_gone $sops
}
pbt_wait 120 sops_settled || bpf_test_fail "bpf_links struct_ops not ready within 120 s"
if ! grep -qx ready "$tmp/sops.out"; then
	pbt_reap $sops
	rc=$?
	[ $rc = 3 ] || bpf_test_fail "bpf_links struct_ops: exit $rc: $(cat "$tmp/sops.err")"
	echo "no tcp_congestion_ops struct_ops in this kernel: no struct_ops link checked"
	exec 4>&-
	sops=
	rm -f "$tmp/sops.out"
fi

cat >"$tmp/workload.sh" <<EOF
fail() {
	echo "\$*" >"$tmp/workload.err"
	exit 1
}
(echo go >&3) 2>/dev/null || fail "bpf_links before did not take its go"
exec 3>&-
if [ -n "$sops" ]; then
	(echo go >&4) 2>/dev/null || fail "bpf_links struct_ops did not take its go"
fi
exec 4>&-
end=\$((SECONDS + 120))
while [ -n "$sops" ] && ! grep -qx detached "$tmp/sops.out"; do
	[ \$SECONDS -lt \$end ] || fail "bpf_links struct_ops not detached 120 s after its go"
	sleep 0.1
done
end=\$((SECONDS + 120))
while kill -0 $before 2>/dev/null; do
	[ \$SECONDS -lt \$end ] || fail "bpf_links before still running 120 s after its go"
	sleep 0.1
done
perf test -w bpf_links links "$cgroup" </dev/null >"$tmp/during.out" 2>"$tmp/during.err" ||
	fail "bpf_links during: exit \$?: \$(cat "$tmp/during.err")"
EOF
bpf_test_gone "$before" && bpf_test_fail "bpf_links before ended before the recording"
timeout 300 perf record -q -a -e dummy -o "$tmp/perf.data" -- bash "$tmp/workload.sh" \
	2>"$tmp/record.err"
rc=$?
exec 3>&- 4>&-
[ ! -s "$tmp/workload.err" ] || bpf_test_fail "$(cat "$tmp/workload.err")"
[ $rc = 0 ] || bpf_test_fail "perf record: exit $rc (124: still running after 300 s):" \
	"$(cat "$tmp/record.err")"
pbt_wait_gone "$before" 60 || bpf_test_fail "bpf_links before still running after the recording"
pbt_reap "$before" || bpf_test_fail "bpf_links before: exit $?: $(cat "$tmp/before.err")"
grep -qx unloaded "$tmp/during.out" ||
	bpf_test_fail "bpf_links during did not end its work:" \
		"$(cat "$tmp/during.out" "$tmp/during.err")"
if [ -n "$sops" ]; then
	pbt_wait_gone $sops 60 ||
		bpf_test_fail "bpf_links struct_ops still running after the recording"
	pbt_reap $sops || bpf_test_fail "bpf_links struct_ops: exit $?: $(cat "$tmp/sops.err")"
fi

perf script -i "$tmp/perf.data" --show-bpf-events >"$tmp/script" 2>"$tmp/script.err" ||
	bpf_test_fail "perf script failed: $(cat "$tmp/script.err")"
perf report -i "$tmp/perf.data" -D >"$tmp/dump" 2>"$tmp/dump.err" ||
	bpf_test_fail "perf report -D failed: $(cat "$tmp/dump.err")"
grep 'PERF_RECORD_BPF_EVENT' "$tmp/script" | grep -m 4 'link_'

python3 - "$tmp" <<'EOF' ||
import os, re, sys

tmp = sys.argv[1]
kinds = {"cgroup": "cgroup", "raw_tp": "raw_tracepoint", "fentry": "tracing",
         "perf_event": "perf_event", "xdp": "xdp", "struct_ops": "struct_ops"}
# the attach type perf shows for each kind of link: the one its link type
# has (raw_tp, perf_event, xdp), whatever the program was loaded with, or
# the one the link was made with (cgroup, tracing); the same whether perf
# record synthesized the record or the kernel wrote it
ATTACH = {"cgroup": "cgroup_inet_egress", "raw_tp": "trace_raw_tp",
          "fentry": "trace_fentry", "perf_event": "perf_event", "xdp": "xdp",
          "struct_ops": "struct_ops"}
rec = re.compile(r"PERF_RECORD_BPF_EVENT type (\d), flags 0, id (\d+), (link_\w+), "
                 r"link_id (\d+), link_type (\w+), attach_type (\w+)$")
errors = []
for what in ("script", "dump"):
    seen = {}
    for line in open(f"{tmp}/{what}"):
        m = rec.search(line.rstrip())
        if m:
            typ, prog, ev, link, ltype, atype = m.groups()
            seen.setdefault((ev, int(link)), []).append((int(prog), ltype, atype, line))
    # kind: {how the record was made: attach type}
    made = {}
    # sops: the struct_ops link from before, where the kernel has them
    for name in ("before", "during", "sops"):
        if not os.path.exists(f"{tmp}/{name}.out"):
            continue
        for line in open(f"{tmp}/{name}.out"):
            f = line.split()
            if f[0] != "link":
                continue
            kind, link, prog = f[1], int(f[2]), int(f[3])
            for ev in ("link_attach", "link_detach"):
                got = seen.get((ev, link), [])
                if len(got) != 1:
                    errors.append(f"{what}: {len(got)} {ev} records of {name} link {link}, "
                                  f"want 1")
                    continue
                gprog, gtype, gatype, gline = got[0]
                if gprog != prog or gtype != kinds[kind]:
                    errors.append(f"{what}: {ev} of link {link}: {gline.strip()}, want "
                                  f"prog {prog}, link_type {kinds[kind]}")
                # a link from before the start: synthesized, at time 0
                synth = name in ("before", "sops") and ev == "link_attach"
                if what == "script" and synth and " 0.000000: " not in gline:
                    errors.append(f"attach of link {link} from before is not synthesized: "
                                  f"{gline.strip()}")
                made.setdefault(kind, {})["synthesized" if synth else f"{name} {ev}"] = gatype
    for kind, got in sorted(made.items()):
        if set(got.values()) != {ATTACH[kind]}:
            errors.append(f"{what}: {kind} links' attach types {got}, want {ATTACH[kind]}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
	bpf_test_fail "the link records are not those of the workloads (see above)"
[ -z "$sops" ] ||
	echo "the struct_ops link from before: synthesized with program id 0, and detached"

if command -v perf-base >/dev/null; then
	perf-base script -i "$tmp/perf.data" --show-bpf-events >"$tmp/base.script" \
		2>"$tmp/base.err" ||
		bpf_test_fail "upstream perf script failed: $(cat "$tmp/base.err")"
	perf-base report -i "$tmp/perf.data" -D >"$tmp/base.dump" 2>"$tmp/base.dump.err" ||
		bpf_test_fail "upstream perf report -D failed: $(cat "$tmp/base.dump.err")"
	# two workloads of five links each, and the struct_ops link if there
	# is one: at least ten attach and ten detach records
	for f in base.script base.dump; do
		for t in 3 4; do
			n=$(grep -c "PERF_RECORD_BPF_EVENT type $t," "$tmp/$f")
			[ "$n" -ge 10 ] ||
				bpf_test_fail "upstream perf ($f): $n records of type $t," \
					"want >= 10"
		done
	done
	echo "upstream perf reads the file"
else
	echo "upstream perf (perf-base) not found: compatibility not checked"
fi
pbt_end
