# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the perf bpf tests: BPF programs and links made by the
# bpf_links workload (perf test -w bpf_links), watched by perf bpf events
# and perf record, listed by perf bpf list and checked against bpftool.
#
# Every wait is for a condition, with a bound generous enough for a slow
# VM: nothing sleeps for a fixed time.

pbt_tmp=$(mktemp -d /tmp/perf-test-bpf.XXXXXX)
pbt_cgroup_dir=
pbt_pids=

pbt_cleanup() {
	local p

	exec 3>&- 2>/dev/null
	for p in $pbt_pids; do
		kill -INT "$p" 2>/dev/null
	done
	for p in $pbt_pids; do
		pbt_wait_gone "$p" 30 || kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -z "$pbt_cgroup_dir" ] || rmdir "$pbt_cgroup_dir" 2>/dev/null
	rm -rf "$pbt_tmp"
	trap - EXIT TERM INT
}
trap pbt_cleanup EXIT TERM INT

pbt_dir() {
	echo "$pbt_tmp"
}

pbt_skip() {
	echo "Skip: $*"
	exit 2
}

pbt_fail() {
	echo "FAIL: $*"
	exit 1
}

# pbt_track PID: stop PID, if still there, when the test ends.
pbt_track() {
	pbt_pids="$pbt_pids $1"
}

# pbt_wait SECONDS COMMAND...: until COMMAND succeeds; 1 if it never does.
pbt_wait() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

pbt_gone() {
	! kill -0 "$1" 2>/dev/null
}

# pbt_wait_gone PID SECONDS: until process PID has ended.
pbt_wait_gone() {
	pbt_wait "$2" pbt_gone "$1"
}

# pbt_require [COMMAND...]: what every perf bpf test needs, and the
# commands this one runs besides perf.
pbt_require() {
	local c

	[ "$(id -u)" = 0 ] || pbt_skip "needs root"
	for c in "$@"; do
		command -v "$c" >/dev/null || pbt_skip "$c not found"
	done
	perf version --build-options | grep -Eq '^ *bpf: +\[ on' ||
		pbt_skip "perf built without libbpf"
	perf test -w bpf_links >/dev/null 2>&1
	[ $? = 1 ] || pbt_skip "perf test -w bpf_links does not work"
}

# pbt_cgroup: a cgroup of this test, on cgroup2, removed at the end.
pbt_cgroup() {
	local root

	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] || pbt_skip "cgroup2 not mounted"
	pbt_cgroup_dir=$root/perf_test_bpf_$$
	mkdir "$pbt_cgroup_dir" || pbt_fail "cannot make $pbt_cgroup_dir"
	echo "$pbt_cgroup_dir"
}

# pbt_links NAME CGROUP: start the bpf_links workload's links, taking
# its go from fd 3; its output in $pbt_tmp/NAME.out, its pid in
# $pbt_tmp/NAME.pid.  Returns once they are all attached.
pbt_links() {
	local name=$1 cgroup=$2 pid

	mkfifo "$pbt_tmp/$name.ctl"
	perf test -w bpf_links links "$cgroup" <"$pbt_tmp/$name.ctl" \
		>"$pbt_tmp/$name.out" 2>"$pbt_tmp/$name.err" &
	pid=$!
	pbt_track $pid
	echo $pid >"$pbt_tmp/$name.pid"
	exec 3>"$pbt_tmp/$name.ctl"
	pbt_wait 120 grep -qx ready "$pbt_tmp/$name.out" ||
		pbt_fail "bpf_links did not attach: $(cat "$pbt_tmp/$name.err")"
}

# pbt_links_go NAME: let the workload detach and unload, and wait for it.
pbt_links_go() {
	local pid

	pid=$(cat "$pbt_tmp/$1.pid")
	echo go >&3
	exec 3>&-
	pbt_wait_gone "$pid" 120 || pbt_fail "bpf_links did not end"
	wait "$pid" || pbt_fail "bpf_links failed: $(cat "$pbt_tmp/$1.err")"
}

# pbt_events NAME [perf bpf events options]: start perf bpf events, its
# output in $pbt_tmp/NAME.out, errors in NAME.err, its pid in NAME.pid.
# Returns once it shows records: a short-lived program, pbt_short, is
# loaded until one shows up.
pbt_events() {
	local name=$1 out=$pbt_tmp/$1.out pid

	shift
	perf bpf events -o "$out" "$@" 2>"$pbt_tmp/$name.err" &
	pid=$!
	pbt_track $pid
	echo $pid >"$pbt_tmp/$name.pid"
	pbt_wait 120 pbt_events_probe "$out" "$pid" ||
		pbt_fail "perf bpf events shows nothing: $(cat "$pbt_tmp/$name.err")"
}

pbt_events_probe() {
	pbt_gone "$2" && pbt_fail "perf bpf events ended: $(cat "${1%.out}.err")"
	perf test -w bpf_links short 1 >/dev/null
	pbt_wait 5 grep -qs pbt_short "$1"
}

# pbt_events_stop NAME: SIGINT, as Ctrl-C; fails unless it ends cleanly.
pbt_events_stop() {
	local pid

	pid=$(cat "$pbt_tmp/$1.pid")
	kill -INT "$pid"
	pbt_wait_gone "$pid" 60 || pbt_fail "perf bpf events did not stop on SIGINT"
	wait "$pid" || pbt_fail "perf bpf events failed: $(cat "$pbt_tmp/$1.err")"
}

# pbt_summary NAME: perf bpf events' summary line; fails without one.
pbt_summary() {
	grep -E '^\[ perf bpf events: .* lost \]$' "$pbt_tmp/$1.err" ||
		pbt_fail "no summary line: $(cat "$pbt_tmp/$1.err")"
}
