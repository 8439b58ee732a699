#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-perf-bpf' (selftests/bench/perf-bpf.sh runs it
# in the VM).  For each rate of $BENCH_RATES: start perf bpf events -a,
# wait until it shows records, run
#     perf test -w bpf_links churn CGROUP $BENCH_SECS RATE
# wait until perf bpf events has shown the workload's records (or stops
# showing more), stop it with SIGINT and take its summary and CPU time.
# Writes a CSV table to $JOB/bench.csv; a run that went wrong has n/a in
# the columns it could not measure, and a line saying why on stdout.
#
# by_perf counts the workload's unloads and detaches that the kernel wrote
# as perf bpf events' own: those where its look-up of the program or link
# held the last reference when the workload let go (the observer effect
# perf-bpf.txt describes).

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"

secs=${BENCH_SECS:-10}
rates=${BENCH_RATES:-250 500 1000 max}
csv=$JOB/bench.csv
cg=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/perf_bench_bpf
pages=${BENCH_PAGES:+-m $BENCH_PAGES}
pid=

cleanup() {
	if [ -n "$pid" ]; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rmdir "$cg" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$cg" || exit 1
cd /tmp || exit 1

# cpu_ticks PID: user + system time of PID, in clock ticks
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

shown() {
	grep -c ',pbt_churn,' /tmp/ev.csv
}

# by_perf PID: the churn's unloads and detaches written as PID's
by_perf() {
	awk -F, -v pid="$1" '$3 == pid && $8 == "pbt_churn" &&
		($6 == "prog_unload" || $6 == "link_detach") { n++ } END { print n + 0 }' /tmp/ev.csv
}

# perf bpf events shows a short-lived program loaded now, within 5 s
probe() {
	if gone "$pid"; then
		echo "rate $rate: perf bpf events ended: $(cat /tmp/ev.err)"
		exit 1
	fi
	perf test -w bpf_links short 1 >/dev/null || exit 1
	wait_for 5 grep -q pbt_short /tmp/ev.csv
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
echo "rate,cycles_per_s,records_per_s,records,shown,lost,perf_cpu_ms,cpu_ms_per_1000,by_perf" \
	>"$csv"
for rate in $rates; do
	# shellcheck disable=SC2086 # $pages is an option and its value, or nothing
	perf bpf events -a -x, $pages -o /tmp/ev.csv 2>/tmp/ev.err &
	pid=$!
	if ! wait_for 120 probe; then
		echo "rate $rate: perf bpf events showed nothing within 120 s: $(cat /tmp/ev.err)"
		exit 1
	fi
	t0=$(cpu_ticks "$pid")
	r=$rate
	[ "$r" = max ] && r=0
	out=$(perf test -w bpf_links churn "$cg" "$secs" "$r" 2>/tmp/churn.err)
	rc=$?
	read -r what cycles took <<<"$out"
	if [ $rc != 0 ] || [ "$what" != churn ] || ! [ "${cycles:-0}" -gt 0 ] 2>/dev/null; then
		echo "rate $rate: the churn failed or made no cycle: exit $rc, output '$out'," \
			"errors '$(cat /tmp/churn.err)'"
		cycles=
	fi
	last='' since=$SECONDS
	[ -z "$cycles" ] || wait_for 300 settled $((4 * cycles)) ||
		echo "rate $rate: the count of records shown still grew after 300 s"
	t1=$(cpu_ticks "$pid")
	kill -INT "$pid"
	if ! wait_for 120 gone "$pid"; then
		echo "rate $rate: perf bpf events still running 120 s after SIGINT: killed"
		kill -9 "$pid"
	fi
	wait "$pid"
	rc=$?
	mine=$(by_perf "$pid")
	pid=
	lost=$(sed -n 's/^\[ perf bpf events: .* \([0-9]*\) lost \]$/\1/p' /tmp/ev.err)
	if [ $rc != 0 ] || [ -z "$lost" ]; then
		echo "rate $rate: perf bpf events: exit $rc, summary '$lost': $(cat /tmp/ev.err)"
		lost=n/a
	fi
	n=$(shown)
	if [ -z "$cycles" ]; then
		echo "$rate,n/a,n/a,n/a,$n,$lost,n/a,n/a,$mine" | tee -a "$csv"
	else
		awk -v rate="$rate" -v c="$cycles" -v s="$took" -v n="$n" -v lost="$lost" \
		    -v t=$((t1 - t0)) -v hz="$hz" -v mine="$mine" 'BEGIN {
			ms = t * 1000 / hz
			printf "%s,%.0f,%.0f,%d,%d,%s,%.0f,%.1f,%d\n", rate, c / s, 4 * c / s,
				4 * c, n, lost, ms, n ? ms * 1000 / n : 0, mine
		}' | tee -a "$csv"
	fi
	grep -E '^\[' /tmp/ev.err
done
