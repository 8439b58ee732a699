#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-bpf-top': what perf bpf top costs, and what BPF run-time
# stats cost the programs it watches.  In one VM run:
#   - with BENCH_PROGS programs loaded (100, 1000 and 10000 socket
#     filters held by the bpf_links workload), the CPU time of one
#     refresh of perf bpf top -j (the task-clock of a run of 11 refreshes
#     less that of a run of 1, over 10) against one bpftool prog show,
#     which reads the same (ids, names, types, run time and count);
#   - the time of a getcpu syscall with no program on it, with a
#     tracepoint program on it and stats off, and with stats on while
#     perf bpf top runs: the program's cost, and what the stats add to it;
#     then with perf bpf top -e cpu-clock, --hist and --split attached to
#     the program, each in turn: what each adds to a run.
# One vCPU and QEMU's -icount: the guest clock counts executed guest
# instructions, so times are instruction counts, the same from run to run
# on a busy host or a quiet one; compare them as ratios.  Prints a table of
# figures and ratios.  A benchmark, not a test: it fails only if the VM
# run fails.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"

out=$BUILD_DIR/results/bench-bpf-top-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
job=$out/job

phase "perf bpf top against bpftool, and the cost of BPF stats (log in $out/console)"
cmd="BENCH_PROGS='${BENCH_PROGS:-100 1000 10000}' BENCH_RUNS=${BENCH_RUNS:-200000}"
cmd="$cmd $TOP/selftests/bench/bpf-top-guest.sh"
VM_CPUS=${VM_CPUS:-1} VM_ICOUNT=${VM_ICOUNT-1} VM_MEM=${VM_MEM:-4G} "$TOP/selftests/vm/run-vm.sh" \
	--timeout "${BENCH_TIMEOUT:-3600}" --log "$out/console" --job "$job" -- "$cmd" ||
	die "the benchmark VM run failed, see $out/console"
phase_done
for t in refresh runs; do
	cp "$job/$t.csv" "$out/"
	column -t -s, "$out/$t.csv"
	echo
done | tee "$out/summary"
echo "(results in $out)"
