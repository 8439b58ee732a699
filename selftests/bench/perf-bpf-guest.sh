#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-perf-bpf' (selftests/bench/perf-bpf.sh runs it
# in the VM).  For each rate of $BENCH_RATES: start perf bpf events -a,
# wait until it shows records, run
#     perf test -w bpf_links churn CGROUP $BENCH_SECS RATE
# wait until perf bpf events has shown the workload's records (or stops
# showing more), stop it with SIGINT and take its summary and CPU time.
# A rate progs:RATE runs "churn - $BENCH_SECS RATE" instead: programs
# only, two records a cycle.
# With $BENCH_BEFORE, the path of another perf (make perf-rev's), each
# rate runs its perf bpf events and ours (perf on PATH, which runs the
# workload for both), one after the other, the first one alternating:
# before first at the first rate, ours first at the second, and so on (a
# rate may be given more than once).  Writes a CSV table to
# $JOB/bench.csv, a row a run, its last column, perf, saying whose
# ("before" or "after"); a run that went wrong has n/a in the columns it
# could not measure, and a line saying why on stdout.
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
before=${BENCH_BEFORE:-}
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
		echo "$run: perf bpf events ended: $(cat /tmp/ev.err)"
		exit 1
	fi
	perf test -w bpf_links short 1 >/dev/null || exit 1
	wait_for 5 grep -qs pbt_short /tmp/ev.csv
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

# bench WHICH PERF: one run at $rate of PERF's perf bpf events, a row of
# the table
bench() {
	local which=$1 perf=$2 run="rate $rate" out rc what cycles took t0 t1 mine lost n r
	local target=$cg per=4

	[ -z "$before" ] || run="rate $rate, $which"
	# not the last run's output, which probe would take for this one's
	rm -f /tmp/ev.csv
	# shellcheck disable=SC2086 # $pages is an option and its value, or nothing
	"$perf" bpf events -a -x, $pages -o /tmp/ev.csv 2>/tmp/ev.err &
	pid=$!
	if ! wait_for 120 probe; then
		echo "$run: perf bpf events showed nothing within 120 s: $(cat /tmp/ev.err)"
		exit 1
	fi
	t0=$(cpu_ticks "$pid")
	r=$rate
	# progs:RATE: program cycles, no link (two records each)
	case $r in
	progs:*) r=${r#progs:} target=- per=2 ;;
	esac
	[ "$r" = max ] && r=0
	out=$(perf test -w bpf_links churn "$target" "$secs" "$r" 2>/tmp/churn.err)
	rc=$?
	read -r what cycles took <<<"$out"
	if [ $rc != 0 ] || [ "$what" != churn ] || ! [ "${cycles:-0}" -gt 0 ] 2>/dev/null; then
		echo "$run: the churn failed or made no cycle: exit $rc, output '$out'," \
			"errors '$(cat /tmp/churn.err)'"
		cycles=
	fi
	last='' since=$SECONDS
	[ -z "$cycles" ] || wait_for 300 settled $((per * cycles)) ||
		echo "$run: the count of records shown still grew after 300 s"
	t1=$(cpu_ticks "$pid")
	kill -INT "$pid"
	if ! wait_for 120 gone "$pid"; then
		echo "$run: perf bpf events still running 120 s after SIGINT: killed"
		kill -9 "$pid"
	fi
	wait "$pid"
	rc=$?
	mine=$(by_perf "$pid")
	pid=
	lost=$(sed -n 's/^\[ perf bpf events: .* \([0-9]*\) lost \]$/\1/p' /tmp/ev.err)
	if [ $rc != 0 ] || [ -z "$lost" ]; then
		echo "$run: perf bpf events: exit $rc, summary '$lost': $(cat /tmp/ev.err)"
		lost=n/a
	fi
	n=$(shown)
	if [ -z "$cycles" ]; then
		echo "$rate,n/a,n/a,n/a,$n,$lost,n/a,n/a,$mine,$which" | tee -a "$csv"
	else
		awk -v rate="$rate" -v c="$cycles" -v s="$took" -v n="$n" -v lost="$lost" \
		    -v t=$((t1 - t0)) -v hz="$hz" -v mine="$mine" -v which="$which" \
		    -v per="$per" 'BEGIN {
			ms = t * 1000 / hz
			printf "%s,%.0f,%.0f,%d,%d,%s,%.0f,%.1f,%d,%s\n", rate, c / s, per * c / s,
				per * c, n, lost, ms, n ? ms * 1000 / n : 0, mine, which
		}' | tee -a "$csv"
	fi
	grep -E '^\[' /tmp/ev.err
}

hz=$(getconf CLK_TCK)
echo "rate,cycles_per_s,records_per_s,records,shown,lost,perf_cpu_ms,cpu_ms_per_1000,by_perf,perf" \
	>"$csv"
# with both perfs, which goes first alternates from one rate to the next
first=before
for rate in $rates; do
	if [ -z "$before" ]; then
		bench after perf
	elif [ $first = before ]; then
		bench before "$before"
		bench after perf
		first=after
	else
		bench after perf
		bench before "$before"
		first=before
	fi
done
