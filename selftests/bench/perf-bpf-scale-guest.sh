#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-perf-bpf-scale' (selftests/bench/perf-bpf-scale.sh
# runs it in the VM).  Writes $JOB/list.csv and, unless BENCH_EVENTS=0,
# $JOB/events.csv; a figure that could not be measured is n/a, with a
# line saying why on stdout.

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
sizes=${BENCH_N:-1000 10000}
cg=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/perf_bench_scale
pids=

cleanup() {
	local p

	exec 3>&-
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# the workload's cgroups, should it have been killed
	[ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# a workload gone: its fifo says EPIPE, not a signal that skips cleanup
trap '' PIPE
: "${JOB:?the VM job directory}"
mkdir -p "$cg" || exit 1
cd /tmp || exit 1

# settled N PID: the workload PID has loaded and attached its N programs, or ended
settled() {
	grep -qx "many $1" /tmp/scale.out || gone "$2"
}

# events HELD: perf bpf events at the highest rate, a line of events.csv
events() {
	local dir=/tmp/events-$1 line

	[ "${BENCH_EVENTS:-1}" = 0 ] && return
	mkdir -p "$dir"
	JOB=$dir BENCH_RATES=max BENCH_SECS=${BENCH_SECS:-10} "$here/perf-bpf-guest.sh" ||
		echo "held $1: perf-bpf-guest.sh failed"
	# rate,cycles_per_s,records_per_s,records,shown,lost,perf_cpu_ms,cpu_ms_per_1000,by_perf,perf
	line=$(sed -n 2p "$dir/bench.csv" 2>/dev/null | cut -d, -f3-8)
	echo "$1,${line:-n/a,n/a,n/a,n/a,n/a,n/a}" >>"$JOB/events.csv"
}

[ "${BENCH_EVENTS:-1}" = 0 ] ||
	echo "held,records/s,records,shown,lost,perf CPU ms,ms per 1000 records" >"$JOB/events.csv"
events 0

echo "programs+links,list ms,bpftool prog+link ms,list us/program,bpftool us/program,list/bpftool" \
	>"$JOB/list.csv"
for n in $sizes; do
	rm -f /tmp/scale.ctl
	mkfifo /tmp/scale.ctl
	perf test -w bpf_links many "$n" "$cg" </tmp/scale.ctl >/tmp/scale.out 2>/tmp/scale.err &
	p=$!
	pids="$pids $p"
	exec 3>/tmp/scale.ctl
	if ! wait_for 3600 settled "$n" "$p" || ! grep -qx "many $n" /tmp/scale.out; then
		echo "$n programs and links: not loaded: $(cat /tmp/scale.err)"
		echo "$n,n/a,n/a,n/a,n/a,n/a" >>"$JOB/list.csv"
		exec 3>&-
		kill -9 "$p" 2>/dev/null
		wait "$p"
		continue
	fi
	# what is timed shows what it should: each program with its link and cgroup
	shown=$(perf bpf list -j 2>/dev/null |
		grep -c '"prog_name":"pbt_many",.*"links":\[{"link_id":[0-9]*,"link_type":"cgroup",.*"target":"/perf_bench_scale/pbt_many_')
	[ "$shown" = "$n" ] || echo "$n: perf bpf list -j showed $shown programs with their link"
	list=$(min3 perf bpf list -j)
	tool=$(min3 sh -c 'bpftool prog show >/dev/null && bpftool link show >/dev/null')
	if [ -z "$list" ] || [ -z "$tool" ]; then
		echo "$n programs and links: a run failed: $(cat /tmp/cmd.err)"
		echo "$n,n/a,n/a,n/a,n/a,n/a" >>"$JOB/list.csv"
	else
		awk -v n="$n" -v l="$list" -v t="$tool" 'BEGIN {
			printf "%d,%.1f,%.1f,%.1f,%.1f,%.3f\n", n, l, t, l * 1e3 / n, t * 1e3 / n,
				(t > 0 ? l / t : 0)
		}' >>"$JOB/list.csv"
	fi
	events "$n"
	echo go >&3
	exec 3>&-
	wait "$p"
done
exit 0
