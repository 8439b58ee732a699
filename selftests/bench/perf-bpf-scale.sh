#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-perf-bpf-scale': how perf bpf scales with what is loaded.
# In one VM run, for each size of BENCH_N (1000, 10000), with that many
# cgroup_skb programs held by the bpf_links workload, each attached
# through its own cgroup link (32 a cgroup) and sharing one map:
#   - the CPU time of perf bpf list -j against bpftool prog show and
#     bpftool link show together (perf stat's task-clock, least of
#     three), which show the same programs and links;
#   - unless BENCH_EVENTS=0, the CPU time perf bpf events takes per 1000
#     records at the highest rate the VM makes (perf-bpf-guest.sh at
#     BENCH_RATES=max for BENCH_SECS seconds), with those programs and
#     links loaded, and once with none (held 0).
# One vCPU and QEMU's -icount, as bench-bpf-top: times are guest
# instruction counts, to compare as ratios.  Prints two tables.  A
# benchmark, not a test: it fails only if the VM run fails.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"

out=$BUILD_DIR/results/bench-perf-bpf-scale-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
job=$out/job

phase "perf bpf list and events with many programs and links (log in $out/console)"
cmd="BENCH_N='${BENCH_N:-1000 10000}' BENCH_SECS=${BENCH_SECS:-10} BENCH_EVENTS=${BENCH_EVENTS:-1}"
cmd="$cmd $TOP/selftests/bench/perf-bpf-scale-guest.sh"
VM_CPUS=${VM_CPUS:-1} VM_ICOUNT=${VM_ICOUNT-1} VM_MEM=${VM_MEM:-4G} "$TOP/selftests/vm/run-vm.sh" \
	--timeout "${BENCH_TIMEOUT:-5400}" --log "$out/console" --job "$job" -- "$cmd" ||
	die "the benchmark VM run failed, see $out/console"
phase_done
for t in list events; do
	[ -f "$job/$t.csv" ] || continue
	cp "$job/$t.csv" "$out/"
	column -t -s, "$out/$t.csv"
	echo
done | tee "$out/summary"
echo "(results in $out)"
