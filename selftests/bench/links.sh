#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-links': what the link records cost, pristine 6.12 kernel
# against ours, in one run.  Boots each kernel BENCH_BOOTS times,
# alternating, runs link_bench in it, keeps each kernel's best figure per
# operation and prints patched/base ratios.  The VM runs with QEMU's
# -icount, so times are counts of executed guest instructions: the ratios
# do not depend on how busy the host is.  A benchmark, not a test: it
# prints numbers and fails only if a VM run fails.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/mk/common.sh"

boots=${BENCH_BOOTS:-4}
iters=${BENCH_ITERS:-400}
# One vCPU: with two, the idle CPU's kworkers and RCU callbacks interleave
# with the benchmark and move the figures by 2% from boot to boot.
cpus=${VM_CPUS:-1}
out=$BUILD_DIR/results/bench-links-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"

for b in $(seq "$boots"); do
	for k in ${BENCH_KERNELS:-base applied}; do
		phase "link_bench on the $k kernel, boot $b of $boots"
		job=$out/job.$k.$b
		VM_ICOUNT=1 VM_CPUS=$cpus "$TOP/selftests/vm/run-vm.sh" --kernel "$k" --timeout 900 --quiet \
			--log "$out/$k.$b.console" --job "$job" -- \
			"$BUILD_DIR/tools/vm/link_bench $iters >\$JOB/bench.out" ||
			die "link_bench failed on the $k kernel, see $out/$k.$b.console"
		sed "s/^/$k /" "$job/bench.out" >>"$out/all"
		phase_done
	done
done

# best (lowest) ns/op per kernel and operation, then the ratios
awk '
	{ key = $1 " " $2; if (!(key in best) || $3 < best[key]) best[key] = $3 }
	END {
		n = split("prog_load_nolistener cgroup_link_nolistener " \
			  "raw_tp_link_nolistener prog_load_listener " \
			  "cgroup_link_listener raw_tp_link_listener " \
			  "prog_load_links cgroup_link_links raw_tp_link_links", ops, " ")
		printf "%-22s %12s %12s %8s\n", "operation", "base insn/op", "ours insn/op", "ratio"
		for (i = 1; i <= n; i++) {
			b = best["base " ops[i]]; a = best["applied " ops[i]]
			printf "%-22s %12.0f %12.0f %8.3f\n", ops[i], b, a, a / b
		}
	}' "$out/all" | tee "$out/summary"
echo "(best of $boots boots x 7 rounds x $iters operations per kernel; results in $out)"
