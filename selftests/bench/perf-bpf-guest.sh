#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-perf-bpf' (selftests/bench/perf-bpf.sh runs it
# in the VM).  For each rate of $BENCH_RATES: start perf bpf events -a,
# wait until it shows records, run
#     perf test -w bpf_links churn CGROUP $BENCH_SECS RATE
# wait until perf bpf events has shown the workload's records (or stops
# showing more), stop it with SIGINT and take its summary and CPU time.
# Writes a CSV table to $JOB/bench.csv.

secs=${BENCH_SECS:-10}
rates=${BENCH_RATES:-250 500 1000 max}
csv=$JOB/bench.csv
cg=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/perf_bench_bpf
mkdir -p "$cg"
cd /tmp || exit 1
pages=${BENCH_PAGES:+-m $BENCH_PAGES}

# cpu_ticks PID: user + system time of PID, in clock ticks
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS
wait_for() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

shown() {
	grep -c ',pbt_churn,' /tmp/ev.csv
}

# until the count of churn records stops growing for 2 s, or reaches $1
settled() {
	local n

	n=$(shown)
	[ "$n" -ge "$1" ] && return 0
	[ "$n" = "${last:-}" ] && [ $((SECONDS - since)) -ge 2 ] && return 0
	[ "$n" != "${last:-}" ] && last=$n since=$SECONDS
	return 1
}

hz=$(getconf CLK_TCK)
echo "rate,cycles_per_s,records_per_s,records,shown,lost,perf_cpu_ms,cpu_ms_per_1000" >"$csv"
for rate in $rates; do
	# shellcheck disable=SC2086 # $pages is an option and its value, or nothing
	perf bpf events -a -x, $pages -o /tmp/ev.csv 2>/tmp/ev.err &
	pid=$!
	wait_for 120 sh -c 'perf test -w bpf_links short 1 >/dev/null; sleep 1;
			    grep -q pbt_short /tmp/ev.csv' ||
		{ echo "perf bpf events does not start"; cat /tmp/ev.err; exit 1; }
	t0=$(cpu_ticks $pid)
	r=$rate
	[ "$r" = max ] && r=0
	set -- $(perf test -w bpf_links churn "$cg" "$secs" "$r")
	cycles=$2 took=$3
	last='' since=$SECONDS
	wait_for 300 settled $((4 * cycles))
	t1=$(cpu_ticks $pid)
	kill -INT $pid
	wait $pid
	lost=$(sed -n 's/.* \([0-9]*\) lost \]$/\1/p' /tmp/ev.err)
	n=$(shown)
	awk -v rate="$rate" -v c="$cycles" -v s="$took" -v n="$n" -v lost="$lost" \
	    -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN {
		ms = t * 1000 / hz
		printf "%s,%.0f,%.0f,%d,%d,%d,%.0f,%.1f\n", rate, c / s, 4 * c / s, 4 * c,
			n, lost, ms, n ? ms * 1000 / n : 0
	}' | tee -a "$csv"
	grep -E '^\[' /tmp/ev.err
done
rmdir "$cg"
