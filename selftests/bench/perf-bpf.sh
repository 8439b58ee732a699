#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-perf-bpf': how many records a second perf bpf events keeps
# up with, and what it costs.  In one VM run, for each rate of
# BENCH_RATES (cgroup link cycles a second, "max" for as fast as the VM
# goes), the bpf_links workload loads a program, attaches it to a cgroup
# through a link, and closes both, for BENCH_SECS seconds, while perf
# bpf events -a runs with its default ring size; each cycle is four
# records (prog_load, link_attach, link_detach, prog_unload) and two
# KSYMBOL records; a rate progs:RATE has no link, two records a cycle.
# Prints the records a second, those lost, and the CPU
# time perf bpf events took per 1000 records.  When make perf-rev has
# built the perf of PERF_BEFORE_REV, each rate runs that perf's perf bpf
# events too, next to ours (which goes first alternates), and a last
# table gives, per rate run, ours ("after") over it ("before").  A
# benchmark, not a test: it fails only if the VM run fails.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"

out=$BUILD_DIR/results/bench-perf-bpf-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
job=$out/job

# The perf from before (the VM has $BUILD_DIR at the same path), if built;
# both perfs' versions (commit ids of their applied trees) as they boot.
before='' timeout=1800
if [ -n "$PERF_BEFORE_REV" ]; then
	if sha=$(rev_sha "$PERF_BEFORE_REV") && before=$(rev_perf "$sha"); then
		timeout=3600
		versions="before: $PERF_BEFORE_REV, $("$before" version)
after:  ours, $("$BUILD_DIR/perf/perf" version)"
	else
		echo "warning: no perf of $PERF_BEFORE_REV (make perf-rev): ours alone" >&2
	fi
fi

phase "perf bpf events under a stream of link cycles (log in $out/console)"
cmd="BENCH_RATES='${BENCH_RATES:-250 500 1000 max}' BENCH_SECS=${BENCH_SECS:-10}"
cmd="$cmd BENCH_PAGES='${BENCH_PAGES:-}' BENCH_BEFORE='$before'"
cmd="$cmd $TOP/selftests/bench/perf-bpf-guest.sh"
VM_CPUS=${VM_CPUS:-2} "$TOP/selftests/vm/run-vm.sh" --timeout "${BENCH_TIMEOUT:-$timeout}" \
	--log "$out/console" --job "$job" -- "$cmd" ||
	die "the benchmark VM run failed, see $out/console"
phase_done
cp "$job/bench.csv" "$out/"
{
	column -t -s, "$out/bench.csv"
	if [ -n "$before" ]; then
		printf '\n%s\n' "$versions"
		echo "perf bpf events CPU per 1000 records shown, after/before:"
		# a line a rate run (a rate given twice has two): its two rows
		awk -F, '
			NR == 1 {
				for (i = 1; i <= NF; i++) col[$i] = i
				print "rate,before_ms_per_1000,after_ms_per_1000,after/before"
				next
			}
			{ w = $col["perf"]; ms[w] = $col["cpu_ms_per_1000"] }
			$col["rate"] == r && w != pw && pw != "" {
				b = ms["before"]; a = ms["after"]
				ok = b ~ /^[0-9.]+$/ && b > 0 && a ~ /^[0-9.]+$/
				printf "%s,%s,%s,%s\n", r, b, a, ok ? sprintf("%.3f", a / b) : "n/a"
				w = ""
			}
			{ r = $col["rate"]; pw = w }' "$out/bench.csv" | column -t -s,
	fi
} | tee "$out/summary"
echo "(results in $out)"
