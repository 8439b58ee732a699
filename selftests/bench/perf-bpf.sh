#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-perf-bpf': how many records a second perf bpf events keeps
# up with, and what it costs.  In one VM run, for each rate of
# BENCH_RATES (cgroup link cycles a second, "max" for as fast as the VM
# goes), the bpf_links workload loads a program, attaches it to a cgroup
# through a link, and closes both, for BENCH_SECS seconds, while perf
# bpf events -a runs with its default ring size; each cycle is four
# records (prog_load, link_attach, link_detach, prog_unload) and two
# KSYMBOL records.  Prints the records a second, those lost, and the CPU
# time perf bpf events took per 1000 records.  A benchmark, not a test:
# it fails only if the VM run fails.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"

out=$BUILD_DIR/results/bench-perf-bpf-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
job=$out/job

phase "perf bpf events under a stream of link cycles (log in $out/console)"
cmd="BENCH_RATES='${BENCH_RATES:-250 500 1000 max}' BENCH_SECS=${BENCH_SECS:-10}"
cmd="$cmd BENCH_PAGES='${BENCH_PAGES:-}' $TOP/selftests/bench/perf-bpf-guest.sh"
VM_CPUS=${VM_CPUS:-2} "$TOP/selftests/vm/run-vm.sh" --timeout "${BENCH_TIMEOUT:-1800}" \
	--log "$out/console" --job "$job" -- "$cmd" ||
	die "the benchmark VM run failed, see $out/console"
phase_done
cp "$job/bench.csv" "$out/"
column -t -s, "$out/bench.csv" | tee "$out/summary"
echo "(results in $out)"
