#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of 'make bench-bpf-top' (selftests/bench/bpf-top.sh runs it
# in the VM).  Writes $JOB/refresh.csv and $JOB/runs.csv; a figure that
# could not be measured is n/a, with a line saying why on stdout.

# shellcheck source=selftests/bench/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"

progs=${BENCH_PROGS:-100 1000 10000}
runs=${BENCH_RUNS:-200000}
pids=

cleanup() {
	local p

	exec 3>&- 4>&-
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# a workload gone: its fifo says EPIPE, not a signal that skips cleanup
trap '' PIPE
: "${JOB:?the VM job directory}"
cd /tmp || exit 1

# holds PID INODE: process PID has an fd of that anon_inode: bpf-stats
# (BPF_ENABLE_STATS), bpf_link, ...
holds() {
	local fd

	for fd in "/proc/$1/fd"/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = "anon_inode:$2" ] && return 0
	done
	return 1
}

# settled N PID: the workload PID has loaded its N programs, or ended
settled() {
	grep -qx "many $1" /tmp/many.out || gone "$2"
}

# Refresh cost
echo "programs,top ms/refresh,bpftool ms/show,top ns/prog,bpftool ns/prog,top/bpftool" \
	>"$JOB/refresh.csv"
for n in $progs; do
	rm -f /tmp/many.ctl
	mkfifo /tmp/many.ctl
	perf test -w bpf_links many "$n" </tmp/many.ctl >/tmp/many.out 2>/tmp/many.err &
	p=$!
	pids="$pids $p"
	exec 3>/tmp/many.ctl
	if ! wait_for 1200 settled "$n" "$p" || ! grep -qx "many $n" /tmp/many.out; then
		echo "$n programs: not loaded: $(cat /tmp/many.err)"
		echo "$n,n/a,n/a,n/a,n/a,n/a" >>"$JOB/refresh.csv"
		exec 3>&-
		kill -9 "$p" 2>/dev/null
		wait "$p"
		continue
	fi
	one=$(min3 perf bpf top -j -I 100 --interval-count 1 -o /dev/null)
	more=$(min3 perf bpf top -j -I 100 --interval-count 11 -o /dev/null)
	show=$(min3 bpftool prog show)
	if [ -z "$one" ] || [ -z "$more" ] || [ -z "$show" ]; then
		echo "$n programs: a run failed: $(cat /tmp/cmd.err)"
		echo "$n,n/a,n/a,n/a,n/a,n/a" >>"$JOB/refresh.csv"
	else
		awk -v n="$n" -v one="$one" -v more="$more" -v show="$show" 'BEGIN {
			r = (more - one) / 10
			if (r < 0)
				r = 0
			printf "%d,%.2f,%.2f,%.0f,%.0f,%.3f\n", n, r, show,
				r * 1e6 / n, show * 1e6 / n, (show > 0 ? r / show : 0)
		}' >>"$JOB/refresh.csv"
	fi
	echo go >&3
	exec 3>&-
	wait "$p"
done

# Cost to the program: ns per getcpu, no program / program / program + stats
echo "getcpu,ns/call,program ns/run,program ns/run / stats off" >"$JOB/runs.csv"
rm -f /tmp/runs.ctl
mkfifo /tmp/runs.ctl
perf test -w bpf_links runs </tmp/runs.ctl >/tmp/runs.out 2>/tmp/runs.err &
p=$!
pids="$pids $p"
exec 4>/tmp/runs.ctl
wait_for 120 grep -qx ready /tmp/runs.out || { echo "runs: $(cat /tmp/runs.err)"; exit 0; }

nr_ran() {
	grep -c '^ran ' /tmp/runs.out
}

more_ran() {
	[ "$(nr_ran)" -gt "$1" ]
}

# timed: the least ns per call of three "run $runs"
timed() {
	local n ns best=

	for _ in 1 2 3; do
		n=$(nr_ran)
		echo "run $runs" >&4
		wait_for 600 more_ran "$n" || return 1
		ns=$(awk -v n="$runs" '$1 == "ran" { t = $3 } END { printf "%.1f", t / n }' \
			/tmp/runs.out)
		best=$(awk -v a="${best:-$ns}" -v b="$ns" 'BEGIN { print (b < a ? b : a) }')
	done
	echo "$best"
}
off=$(timed) || off=n/a
# stats on, and perf bpf top asleep while the workload runs
perf bpf top -j -I 1000000 -o /dev/null 2>/dev/null &
t=$!
pids="$pids $t"
wait_for 60 holds $t bpf-stats || { echo "perf bpf top did not turn stats on"; on=n/a; }
[ "${on:-}" = n/a ] || on=$(timed) || on=n/a
kill -INT $t
wait $t
# with_top NAME ARGS...: $ns, timed with perf bpf top ARGS watching the
# program, once its fentry and fexit programs are attached
with_top() {
	local name=$1 t

	shift
	perf bpf top -j -I 1000000 --id "$id" -o /dev/null "$@" 2>"/tmp/$name.err" &
	t=$!
	pids="$pids $t"
	if wait_for 60 holds $t bpf_link; then
		ns=$(timed) || ns=n/a
	else
		echo "perf bpf top $* did not attach: $(cat "/tmp/$name.err")"
		ns=n/a
	fi
	kill -INT $t
	wait $t
}
# and with perf bpf top -e cpu-clock counting around each run (no PMU
# under TCG: a software event), --hist timing each run, --split
# counting and timing each run by cgroup
id=$(awk '$1 == "prog" && $2 == "runs" { print $3 }' /tmp/runs.out)
with_top ev -e cpu-clock
ev=$ns
with_top hist --hist
hist=$ns
with_top split --split
split=$ns
echo detach >&4
wait_for 60 grep -qx detached /tmp/runs.out
none=$(timed) || none=n/a
awk -v none="$none" -v off="$off" -v on="$on" -v ev="$ev" -v hist="$hist" -v spl="$split" '
function ok(x) { return x ~ /^[0-9.]+$/ }
function diff(a, b) { return ok(a) && ok(b) ? sprintf("%.1f", a - b) : "n/a" }
BEGIN {
	printf "no program,%s,,\n", none
	printf "program stats off,%s,%s,\n", off, diff(off, none)
	r = ok(on) && ok(off) && ok(none) && off > none ? \
		sprintf("%.3f", (on - none) / (off - none)) : "n/a"
	printf "program stats on (perf bpf top),%s,%s,%s\n", on, diff(on, none), r
	r = ok(ev) && ok(off) && ok(none) && off > none ? \
		sprintf("%.3f", (ev - none) / (off - none)) : "n/a"
	printf "program stats on and -e cpu-clock,%s,%s,%s\n", ev, diff(ev, none), r
	r = ok(hist) && ok(off) && ok(none) && off > none ? \
		sprintf("%.3f", (hist - none) / (off - none)) : "n/a"
	printf "program stats on and --hist,%s,%s,%s\n", hist, diff(hist, none), r
	r = ok(spl) && ok(off) && ok(none) && off > none ? \
		sprintf("%.3f", (spl - none) / (off - none)) : "n/a"
	printf "program stats on and --split,%s,%s,%s\n", spl, diff(spl, none), r
}' >>"$JOB/runs.csv"
echo go >&4
exit 0
