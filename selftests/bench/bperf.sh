#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-bperf': what bperf sessions cost the rest of the system.
# One VM run times pipe round trips between two threads (context
# switches, where bperf's BPF programs may run) while N idle 'perf stat
# --bpf-counters' sessions exist, for upstream 6.12 perf and ours, in
# three modes: -a sessions, -p sessions on the threads timed, and -p
# sessions on other processes (selftests/bench/bperf-guest.sh).  Prints
# usecs/op, the overhead against N = 0 of the same perf and mode, and
# BPF ns per context switch.  Writes an SVG plot.  A benchmark, not a
# test: it fails only if the VM run fails.
#
# BENCH_MODES (cpu task1 taskN), BENCH_N_BASE, BENCH_N_OURS (lists of N),
# BENCH_TASK_MAX (the largest N of the task modes, 100), BENCH_LOOPS,
# BENCH_RUNS, BENCH_HOLD (how long sessions sleep: 1000 take 20 minutes
# to start) and BENCH_VM_MEM (1000 sessions of perf need about 11 GB)
# tune it.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/mk/common.sh"

out=$BUILD_DIR/results/bench-bperf-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
job=$out/job

[ -x "$BUILD_DIR/tools/vm/pingpong" ] || die "no $BUILD_DIR/tools/vm/pingpong: make build"
phase "bperf sessions vs pipe round trips, in one VM run (log in $out/console)"
# the guest sees only the command line: pass the settings on it
cmd="BENCH_N_BASE='${BENCH_N_BASE:-}' BENCH_N_OURS='${BENCH_N_OURS:-}'"
cmd="$cmd BENCH_LOOPS=${BENCH_LOOPS:-20000} BENCH_RUNS=${BENCH_RUNS:-3}"
cmd="$cmd BENCH_HOLD=${BENCH_HOLD:-1000000}"
cmd="$cmd BENCH_MODES='${BENCH_MODES:-}' BENCH_TASK_MAX=${BENCH_TASK_MAX:-100}"
cmd="$cmd BENCH_PINGPONG=$BUILD_DIR/tools/vm/pingpong"
cmd="$cmd $TOP/selftests/bench/bperf-guest.sh"
# One vCPU and QEMU's -icount: the guest clock then counts instructions,
# so usecs/op measure what a context switch costs, not how busy the host
# is (in plain TCG they moved by 30% from run to run), and the same
# figures come back run after run.
VM_CPUS=${VM_CPUS:-1} VM_ICOUNT=${VM_ICOUNT-1} VM_MEM=${BENCH_VM_MEM:-14G} "$TOP/selftests/vm/run-vm.sh" \
	--timeout "${BENCH_TIMEOUT:-5400}" --log "$out/console" --job "$job" \
	-- "$cmd" || die "the benchmark VM run failed, see $out/console"
phase_done
cp "$job/bench.csv" "$job/bpf.csv" "$out/"
python3 "$TOP/selftests/bench/bperf-plot.py" "$out/bench.csv" "$out/bperf.svg" |
	tee "$out/summary"
echo "(results in $out; plot $out/bperf.svg)"
