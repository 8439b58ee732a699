# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the perf stat --bpf-counters (bperf) tests.
#
# Each test counts software events only (cpu-clock, task-clock): they
# exist everywhere, even in a VM without a PMU.  Each test pins its maps
# at its own path, so that tests cannot see each other's sessions.

# shellcheck source=lib/bpf_test.sh
. "$(dirname "$0")"/lib/bpf_test.sh bperf

bperf_attr=/sys/fs/bpf/perf_test_bperf_$$
bperf_cpu1=/sys/devices/system/cpu/cpu1/online

bperf_cleanup() {
	local p

	bperf_unlock
	for p in $bpf_test_pids; do
		kill "$p" 2>/dev/null
		# a process a test stopped ends only once continued
		kill -CONT "$p" 2>/dev/null
	done
	wait 2>/dev/null
	bpf_test_stats_restore
	rm -rf "$bpf_test_tmp" "${bperf_attr}_dir"
	rm -f "$bperf_attr"
	trap - EXIT TERM INT
}
trap bperf_cleanup EXIT TERM INT

# Tests use this rather than the variable: shellcheck does not follow
# this file from perf's build.
bperf_attr_map() {
	echo "$bperf_attr"
}

# bperf_require [COMMAND...]: what every bperf test needs, and the
# commands this one runs besides perf.
bperf_require() {
	bpf_test_require "$@"
	perf version --build-options | grep -Eq 'bpf_skeletons: +\[ on' ||
		bpf_test_skip "perf built without BPF skeletons"
	mountpoint -q /sys/fs/bpf || bpf_test_skip "bpffs not mounted at /sys/fs/bpf"
	[ -r /sys/kernel/btf/vmlinux ] || bpf_test_skip "kernel without BTF"
}

# bperf_stat OUT [perf stat options]: perf stat with BPF counters on our
# maps, CSV output to $bpf_test_tmp/OUT.out, errors to $bpf_test_tmp/OUT.err.
bperf_stat() {
	local out=$1

	shift
	perf stat --bpf-counters --bpf-attr-map "$bperf_attr" -x, \
		-o "$bpf_test_tmp/$out.out" "$@" 2>"$bpf_test_tmp/$out.err"
}

# plain_stat OUT [perf stat options]: the same without BPF counters.
plain_stat() {
	local out=$1

	shift
	perf stat -x, -o "$bpf_test_tmp/$out.out" "$@" 2>"$bpf_test_tmp/$out.err"
}

# bperf_count OUT EVENT: the count of EVENT in $bpf_test_tmp/OUT.out, summed
# over its lines; fails if it was not counted.
bperf_count() {
	awk -F, -v e="$2" '
		$3 == e && $1 ~ /^[0-9.]+$/ { s += $1; n++ }
		END { if (!n) exit 1; printf "%.2f\n", s }' "$bpf_test_tmp/$1.out"
}

# bperf_get OUT EVENT: bperf_count, or fail the test saying why.
bperf_get() {
	bperf_count "$1" "$2" ||
		bpf_test_fail "$1: no $2 count:" \
			"$(cat "$bpf_test_tmp/$1.out" "$bpf_test_tmp/$1.err")"
}

# bperf_within REF VALUE PCT: VALUE is within PCT percent of REF.
bperf_within() {
	awk -v r="$1" -v v="$2" -v p="$3" \
		'BEGIN { exit !(r > 0 && v >= r * (1 - p / 100) && v <= r * (1 + p / 100)) }'
}

# bperf_check NAME REF VALUE PCT: say how VALUE compares, fail if off.
bperf_check() {
	echo "$1: $3 (reference $2, tolerance $4%)"
	bperf_within "$2" "$3" "$4" || bpf_test_fail "$1: $3 is not within $4% of $2"
}

# bperf_util OUT EVENT: the "CPUs utilized" perf stat printed for EVENT
# (cpu-clock, task-clock) in $bpf_test_tmp/OUT.out: its count over the
# session's own elapsed time.  Unlike the count, it does not depend on
# how long the session and its workload took to start and end, which
# varies by 100s of ms in a TCG VM.
bperf_util() {
	awk -F, -v e="$2" '
		$3 == e && $NF == "CPUs utilized" && $(NF - 1) ~ /^[0-9.]+$/ {
			print $(NF - 1); n++; exit
		}
		END { exit !n }' "$bpf_test_tmp/$1.out"
}

# bperf_check_util NAME REF OUT EVENT PCT: the CPUs utilized of EVENT in
# OUT are within PCT percent of REF, a number of CPUs or the name of
# another output to take them from.
bperf_check_util() {
	local ref=$2 u

	case $ref in
	*[!0-9.]*)
		ref=$(bperf_util "$2" "$4") ||
			bpf_test_fail "$1: $2 has no $4: $(cat "$bpf_test_tmp/$2".{out,err})" ;;
	esac
	u=$(bperf_util "$3" "$4") ||
		bpf_test_fail "$1: $3 has no $4: $(cat "$bpf_test_tmp/$3".{out,err})"
	bperf_check "$1, CPUs utilized" "$ref" "$u" "$5"
}

# bperf_check_running NAME OUT EVENT PCT: the time running of EVENT, a
# clock (task-clock, cpu-clock), in OUT (CSV field 4, ns; not with -r,
# which adds a field before it) is within PCT percent of its count
# (msec): a task session's events run only while its tasks do.
bperf_check_running() {
	local line val run

	line=$(awk -F, -v e="$3" '$3 == e' "$bpf_test_tmp/$2.out")
	IFS=, read -r val _ _ run _ <<<"$line"
	echo "$1: $val msec, running $run ns"
	bperf_within "$val" "$(awk -v r="$run" 'BEGIN { print r / 1e6 }')" \
		"$4" || bpf_test_fail "$1: running is not within $4% of the count"
}

# bperf_spin_script FILE: write to FILE a workload, run as "bash FILE
# OUT HZ", of one process spinning for 1 s of wall time, which appends
# to OUT the msec of CPU it had run when it began and when it ended
# (utime + stime from /proc, in clock ticks of 1000 / HZ msec).
bperf_spin_script() {
	cat >"$1" <<'SPIN'
cputime() {
	local st

	read -ra st </proc/$BASHPID/stat
	echo $(((st[13] + st[14]) * 1000 / $2)) >>"$1"
}
cputime "$@"
end=$((${EPOCHREALTIME//[!0-9]/} + 1000000))
while ((${EPOCHREALTIME//[!0-9]/} < end)); do :; done
cputime "$@"
SPIN
}

# bperf_check_ran NAME N LOOP ALL [PCT]: N msec, what a session counted
# of a workload, is not 0, at least LOOP, what the workload ran in its
# own code, and at most ALL, what it ran since perf forked it (perf's
# code before the exec included), plus its exit, which comes after its
# last reading (200 ms at most, even on a debug kernel); with PCT percent
# (5 if not given) and two clock ticks of slack, the workload's figures
# being from /proc, in clock ticks.
bperf_check_ran() {
	local t=$((2000 / $(getconf CLK_TCK)))

	awk -v n="$2" -v q="$3" -v p="$4" -v r="${5:-5}" -v t="$t" 'BEGIN {
		exit !(n > 0 && n >= q * (1 - r / 100) - t &&
		       n <= p * (1 + r / 100) + t + 200)
	}' || bpf_test_fail "$1: counted $2 msec, not within ${5:-5}% of what ran:" \
		"at least $3 msec (its own code), at most $4 (all of it)"
}

# bperf_check_spin NAME OUT EVENT: the count of EVENT in
# $(bpf_test_dir)/OUT.out, a session of the bperf_spin_script workload
# that wrote to $(bpf_test_dir)/OUT.cpu, is what the workload ran
# (bperf_check_ran).
bperf_check_spin() {
	local began ended n

	{ read -r began && read -r ended; } 2>/dev/null <"$bpf_test_tmp/$2.cpu" ||
		bpf_test_fail "$1: the workload did not run: $(cat "$bpf_test_tmp/$2.err")"
	n=$(bperf_count "$2" "$3") ||
		bpf_test_fail "$1: no $3 count:" \
			"$(cat "$bpf_test_tmp/$2.out" "$bpf_test_tmp/$2.err")"
	echo "$1: $n msec of $3, the workload ran $ended msec, $((ended - began)) in its loop"
	bperf_check_ran "$1, $3" "$n" $((ended - began)) "$ended"
}

# bperf_stopped PID: PID is stopped (state T); its comm, perf, has no
# space.
bperf_stopped() {
	[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = T ]
}

# bperf_until SECS CMD...: poll CMD every 0.1 s, SECS at most.
bperf_until() {
	local _

	for _ in $(seq $(($1 * 10))); do
		"${@:2}" && return 0
		sleep 0.1
	done
	"${@:2}"
}

# bperf_has_fd PID LINK: PID holds an fd whose link matches the pattern
# LINK.
bperf_has_fd() {
	local fd

	for fd in "/proc/$1/fd/"*; do
		# shellcheck disable=SC2254 # $2 is a pattern
		case $(readlink "$fd" 2>/dev/null) in
		*$2*) return 0 ;;
		esac
	done
	return 1
}

# bperf_wait_fd PID LINK: wait (up to 60 s) for PID, or a child of it
# (PID may be a subshell), to hold an fd whose link matches LINK, e.g.
# perf_event, bpf-prog (any bperf session) or "bpf?link" (a task session:
# an fd of a link made is a bpf_link, one of a link got by id a bpf-link);
# then give it a moment to enable its counters.
bperf_wait_fd() {
	local i p

	for i in $(seq 600); do
		for p in "$1" $(pgrep -P "$1"); do
			if bperf_has_fd "$p" "$2"; then
				sleep 0.5
				return 0
			fi
		done
		kill -0 "$1" 2>/dev/null || return 1
		[ "$i" -lt 600 ] && sleep 0.1
	done
	return 1
}

# bperf_target NAME SECS [CHILDREN]: start a process that sleeps until
# bperf_go, then burns a CPU for SECS seconds, itself or, if CHILDREN is
# given, in that many children.  Its pid is in $(bpf_test_dir)/NAME.pid.
bperf_target() {
	local run="exec perf test -w noploop $2" n=${3:-0}

	if [ "$n" -gt 0 ]; then
		run=
		while [ "$n" -gt 0 ]; do
			run="$run perf test -w noploop $2 &"
			n=$((n - 1))
		done
		run="$run wait"
	fi
	[ -p "$bpf_test_tmp/go" ] || mkfifo "$bpf_test_tmp/go"
	sh -c "read -r _ <$bpf_test_tmp/go; $run" &
	echo $! >"$bpf_test_tmp/$1.pid"
	bpf_test_pids="$bpf_test_pids $!"
}

# bperf_go: start the processes bperf_target made.
bperf_go() {
	echo go >"$bpf_test_tmp/go"
	rm -f "$bpf_test_tmp/go"
}

# bperf_both OUT [perf stat options]: count the bperf_target processes
# with bperf (to OUT) and with plain perf stat (to OUT_ref), both with
# the options given; start them once both sessions are set up, and wait
# until both sessions end.
bperf_both() {
	local out=$1 b p

	shift
	bperf_stat "$out" "$@" &
	b=$!
	plain_stat "${out}_ref" "$@" &
	p=$!
	bperf_wait_fd $b "bpf?link" ||
		bpf_test_fail "bperf session did not start: $(cat "$bpf_test_tmp/$out.err")"
	bperf_wait_fd $p perf_event ||
		bpf_test_fail "perf stat did not start: $(cat "$bpf_test_tmp/${out}_ref.err")"
	bperf_go
	wait $b $p
}

# bperf_cpu_targets CPU: -a, then -C CPU, each counting a 2 s sleep with
# bperf and with plain perf stat: cpu-clock counts every CPU it is opened
# on all the time, so both must report as many CPUs utilized as they
# count CPUs, within 10%.
bperf_cpu_targets() {
	local target ncpus

	ncpus=$(getconf _NPROCESSORS_ONLN)
	for target in "-a:$ncpus" "-C $1:1"; do
		ncpus=${target##*:}
		target=${target%:*}
		# shellcheck disable=SC2086 # $target is two words on purpose
		bperf_stat cpu -e cpu-clock $target -- sleep 2
		# shellcheck disable=SC2086
		plain_stat cpu_ref -e cpu-clock $target -- sleep 2
		bperf_check_util "perf stat cpu-clock $target" "$ncpus" cpu_ref cpu-clock 10
		bperf_check_util "bperf cpu-clock $target" "$ncpus" cpu cpu-clock 10
	done
}

# bperf_held OUT [perf stat options]: in the background, count with
# perf stat (options first: --bpf-counters and the attr map for bperf) a
# workload that stamps its start (ns) in $bpf_test_tmp/OUT.start, so that
# the test can tell that it is counted, and runs until the test lets go of the lock it holds on fd 9
# (bperf_lock); output to $bpf_test_tmp/OUT.out.
bperf_held() {
	local out=$1

	shift
	# shellcheck disable=SC2016 # expanded by the workload's shell
	perf stat "$@" -x, -o "$bpf_test_tmp/$out.out" -- sh -c \
		'date +%s%N >"$0.start"; flock -s "$1" true' \
		"$bpf_test_tmp/$out" "$bpf_test_tmp/lock" 2>"$bpf_test_tmp/$out.err" 9>&- &
	bpf_test_pids="$bpf_test_pids $!"
}

# bperf_lock: take the lock bperf_held workloads wait for, on fd 9;
# bperf_unlock lets them go.
bperf_lock() {
	exec 9>"$bpf_test_tmp/lock"
	flock -x 9
}

bperf_unlock() {
	exec 9>&-
}

# bperf_cpu1_hotplug NEED [WHY]: this test takes CPU 1 offline, which
# needs NEED CPUs (WHY: what for): skip unless it can, and bring CPU 1
# back online when the test ends.
bperf_cpu1_hotplug() {
	local present

	present=$(getconf _NPROCESSORS_CONF)
	[ "$present" -ge "$1" ] ||
		bpf_test_skip "needs $1 CPUs or more${2:+ $2}, has $present"
	[ -w "$bperf_cpu1" ] || bpf_test_skip "CPU 1 cannot be taken offline"
	[ "$(cat "$bperf_cpu1")" = 1 ] || bpf_test_skip "CPU 1 is offline already"
	trap 'echo 1 >"$bperf_cpu1"; bperf_cleanup' EXIT TERM INT
}

# bperf_cpu1 0|1: take CPU 1 offline, or bring it online.
bperf_cpu1() {
	echo "$1" >"$bperf_cpu1"
}

# bperf_entries PATH: how many entries the pinned map at PATH holds.
# (In bpftool's JSON each entry has its key as an array of bytes.)
bperf_entries() {
	bpftool -j map dump pinned "$1" | grep -o '"key":\[' | wc -l
}

# bperf_slots_state: the slots set up in this test's maps, and the
# sessions and the task sessions using them: "SLOTS USERS TASK_USERS".
bperf_slots_state() {
	bpftool -j map dump pinned "${bperf_attr}_dir/bperf_slots" | python3 -c '
import json, sys
n = users = task_users = 0
for e in json.load(sys.stdin):
	v = e["formatted"]["value"]
	if v["key"]["attr"]["size"] or v["users"]:
		n += 1
		users += v["users"]
		task_users += v["task_users"]
print(n, users, task_users)'
}

# bperf_sum MAP FIELD: the sum of FIELD over the values of this test's
# pinned map MAP (in the maps' directory), by their BTF.
bperf_sum() {
	bpftool -j map dump pinned "${bperf_attr}_dir/$1" | python3 -c '
import json, sys
print(sum(e["formatted"]["value"][sys.argv[1]] for e in json.load(sys.stdin)))' "$2"
}

# bperf_objects: the ids and names of the bperf programs and maps loaded
# now, one per line.
bperf_objects() {
	bpftool prog show | awk '$3 == "name" && $4 ~ /^bperf_/ { print "prog " $1 " " $4 }'
	bpftool map show | awk '$3 == "name" && $4 ~ /^bperf_/ { print "map " $1 " " $4 }'
}

# bperf_none_pinned [WHEN]: fail if this test's sessions left anything
# pinned under /sys/fs/bpf (WHEN: "after the last session").
bperf_none_pinned() {
	local left

	left=$(ls -d "$bperf_attr" "${bperf_attr}_dir" 2>/dev/null)
	[ -z "$left" ] ||
		bpf_test_fail "left pinned ${1:-after the last session}: $left"
}

# bperf_check_rates REF EVENT OUT...: each bperf_held session OUT
# counted EVENT, a clock, at the rate REF did, within 10%: as CPUs
# utilized, its count over the session's own elapsed time.  The sessions
# start at different moments and count their workload's start and exit
# too, which take 100s of ms more under load: only perf's own elapsed
# time covers what each one counted.
bperf_check_rates() {
	local ref=$1 event=$2 s

	shift 2
	for s in "$@"; do
		bperf_check_util "session $s, $event" "$ref" "$s" "$event" 10
	done
}
