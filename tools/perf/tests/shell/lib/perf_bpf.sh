# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the perf bpf tests: BPF programs and links made by the
# bpf_links workload (perf test -w bpf_links), watched by perf bpf events
# and perf record, listed by perf bpf list and checked against bpftool.
#
# Every wait is for a condition, with a bound generous enough for a slow
# VM: nothing sleeps for a fixed time.  Whatever way a test ends (pass,
# fail, skip, Ctrl-C, SIGTERM), pbt_cleanup stops what it started and
# removes what it made; pbt_end, the way a test passes, also checks that
# nothing is left behind.

# shellcheck source=lib/bpf_test.sh
. "$(dirname "$0")"/lib/bpf_test.sh bpf

pbt_cgroup_dir=
# shell code the cleanup runs, for what a test must undo itself
pbt_on_cleanup=

pbt_cleanup() {
	local p

	trap - EXIT INT TERM
	exec 3>&-
	# TERM, not INT: background jobs of a script ignore SIGINT
	for p in $bpf_test_pids; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $bpf_test_pids; do
		pbt_wait_gone "$p" 30 || kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	bpf_test_pids=
	# what a test must undo that its processes may not have
	[ -z "${pbt_on_cleanup:-}" ] || eval "$pbt_on_cleanup"
	bpf_test_stats_restore
	# the test's cgroup, and any it made in it
	[ -z "$pbt_cgroup_dir" ] || [ ! -d "$pbt_cgroup_dir" ] ||
		find "$pbt_cgroup_dir" -depth -type d -exec rmdir {} +
	# PBT_KEEP=DIR: keep the test's files in DIR, to look at after
	if [ -n "${PBT_KEEP:-}" ] && mkdir -p "$PBT_KEEP/${bpf_test_tmp##*/}"; then
		find "$bpf_test_tmp" -maxdepth 1 -type f \
			-exec cp -t "$PBT_KEEP/${bpf_test_tmp##*/}" {} +
	fi
	rm -rf "$bpf_test_tmp"
}
trap pbt_cleanup EXIT
trap 'pbt_cleanup; exit 130' INT
trap 'pbt_cleanup; exit 143' TERM

# pbt_reap PID: wait for PID, a child that has ended, and forget it; its
# exit status.
pbt_reap() {
	local p rest='' rc

	wait "$1"
	rc=$?
	for p in $bpf_test_pids; do
		[ "$p" = "$1" ] || rest="$rest $p"
	done
	bpf_test_pids=$rest
	return $rc
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

# pbt_wait_gone PID SECONDS: until process PID has ended.
pbt_wait_gone() {
	pbt_wait "$2" bpf_test_gone "$1"
}

# pbt_require [COMMAND...]: what every perf bpf test needs, and the
# commands this one runs besides perf.
pbt_require() {
	local rc

	bpf_test_require "$@"
	perf version --build-options | grep -Eq '^ *bpf: +\[ on' ||
		bpf_test_skip "perf built without libbpf"
	# with no arguments, the workload prints its usage and exits 1
	perf test -w bpf_links >"$bpf_test_tmp/require.out" 2>&1
	rc=$?
	[ $rc != 2 ] || bpf_test_skip "the bpf_links workload was built without libbpf"
	[ $rc = 1 ] || bpf_test_fail "perf test -w bpf_links: exit $rc, want 1 and its usage:" \
		"$(cat "$bpf_test_tmp/require.out")"
}

# pbt_link_records: whether the kernel writes link records: its BTF knows
# PERF_BPF_EVENT_LINK_ATTACH, which comes with attr.bpf_event_ext.  perf
# finds out otherwise (the kernel refuses the bit where there are none):
# this tells the tests what to expect of it.  Needs bpftool.
pbt_link_records() {
	[ -r /sys/kernel/btf/vmlinux ] ||
		bpf_test_skip "no kernel BTF: cannot tell if it writes link records"
	bpftool btf dump file /sys/kernel/btf/vmlinux >"$bpf_test_tmp/vmlinux.btf" 2>&1 ||
		bpf_test_fail "bpftool btf dump file /sys/kernel/btf/vmlinux failed:" \
			"$(tail -n 3 "$bpf_test_tmp/vmlinux.btf")"
	grep -q "'PERF_BPF_EVENT_LINK_ATTACH'" "$bpf_test_tmp/vmlinux.btf"
}

# pbt_require_getcpu: the tracepoint the runs and loop workloads attach
# their programs to, syscalls:sys_enter_getcpu.
pbt_require_getcpu() {
	[ -e /sys/kernel/tracing/events/syscalls/sys_enter_getcpu ] ||
		[ -e /sys/kernel/debug/tracing/events/syscalls/sys_enter_getcpu ] ||
		bpf_test_skip "no tracepoint syscalls:sys_enter_getcpu" \
			"(CONFIG_FTRACE_SYSCALLS, tracefs)"
}

# pbt_top_takes OPTION: perf bpf top runs with OPTION, one that needs BPF
# skeletons (--hist, --split); skips without them, fails on another error.
pbt_top_takes() {
	local err=$bpf_test_tmp/probe.err

	timeout 60 perf bpf top "$1" -j --interval-count 1 -I 10 --id 1 -o /dev/null \
		2>"$err" && return 0
	grep -q 'needs perf built with BPF skeletons' "$err" && bpf_test_skip "$(cat "$err")"
	bpf_test_fail "perf bpf top $1: $(cat "$err")"
}

# pbt_cgroup [SUFFIX]: make a cgroup of this test, on cgroup2, named
# perf_test_bpf_PID and SUFFIX, removed at the end; pbt_cgroup_path gives
# its path.  Call it in the test's shell, not in $(...): it must set
# pbt_cgroup_dir there, and its skip or fail must end the test.
pbt_cgroup() {
	local root dir

	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] || bpf_test_skip "cgroup2 not mounted"
	dir=$root/perf_test_bpf_$$${1:-}
	mkdir "$dir" || bpf_test_fail "cannot make $dir"
	pbt_cgroup_dir=$dir
}

pbt_cgroup_path() {
	echo "$pbt_cgroup_dir"
}

# pbt_links_start NAME CGROUP [PERF]: start the bpf_links workload, held:
# it loads nothing until pbt_links_load NAME (so that its pid is known
# before it makes its first record).  It takes its orders from fd 3; its
# output goes to $bpf_test_tmp/NAME.out, its errors to NAME.err, its pid
# to NAME.pid.  PERF, perf by default, is what runs it: a link to perf
# under another name gives the workload that name as its comm.
pbt_links_start() {
	local name=$1 cgroup=$2 perf=${3:-perf} pid

	mkfifo "$bpf_test_tmp/$name.ctl"
	# the same process, once it has read its first order
	(read -r _ && exec "$perf" test -w bpf_links links "$cgroup") <"$bpf_test_tmp/$name.ctl" \
		>"$bpf_test_tmp/$name.out" 2>"$bpf_test_tmp/$name.err" &
	pid=$!
	bpf_test_track $pid
	echo $pid >"$bpf_test_tmp/$name.pid"
	exec 3>"$bpf_test_tmp/$name.ctl"
}

# pbt_links_tell NAME ORDER: write ORDER to the workload NAME; fails if
# it has ended (no SIGPIPE for the test: the write is in a subshell).
pbt_links_tell() {
	local pid

	pid=$(cat "$bpf_test_tmp/$1.pid")
	bpf_test_gone "$pid" && bpf_test_fail "bpf_links $1 ended before its order '$2':" \
		"$(cat "$bpf_test_tmp/$1.err")"
	(echo "$2" >&3) 2>/dev/null ||
		bpf_test_fail "bpf_links $1 did not take its order '$2':" \
			"$(cat "$bpf_test_tmp/$1.err")"
}

# pbt_links_ready NAME: whether the workload NAME has attached everything;
# fails as soon as it has ended without.
pbt_links_ready() {
	local pid rc

	grep -qx ready "$bpf_test_tmp/$1.out" && return 0
	pid=$(cat "$bpf_test_tmp/$1.pid")
	bpf_test_gone "$pid" || return 1
	pbt_reap "$pid"
	rc=$?
	bpf_test_fail "bpf_links $1 exited ($rc) before it was ready: $(cat "$bpf_test_tmp/$1.err")"
}

# pbt_links_load NAME: let the workload load and attach; returns once it
# has.
pbt_links_load() {
	pbt_links_tell "$1" load
	pbt_wait 120 pbt_links_ready "$1" ||
		bpf_test_fail "bpf_links $1 not ready within 120 s:" \
			"$(cat "$bpf_test_tmp/$1.out" "$bpf_test_tmp/$1.err")"
}

# pbt_links NAME CGROUP [PERF]: start the workload and let it load and attach.
pbt_links() {
	pbt_links_start "$@"
	pbt_links_load "$1"
}

# pbt_links_go NAME: let the workload detach and unload, and wait for it.
pbt_links_go() {
	local pid rc

	pid=$(cat "$bpf_test_tmp/$1.pid")
	pbt_links_tell "$1" go
	exec 3>&-
	pbt_wait_gone "$pid" 120 || bpf_test_fail "bpf_links $1 still running 120 s after its go"
	pbt_reap "$pid"
	rc=$?
	[ $rc = 0 ] || bpf_test_fail "bpf_links $1: exit $rc, want 0: $(cat "$bpf_test_tmp/$1.err")"
}

# pbt_holds_stats PID: PID holds the fd of BPF_ENABLE_STATS (the sysctl
# does not show what such fds turn on)
pbt_holds_stats() {
	local fd

	for fd in "/proc/$1/fd"/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = anon_inode:bpf-stats ] && return 0
	done
	return 1
}

# pbt_events NAME [perf bpf events options]: start perf bpf events, its
# output in $bpf_test_tmp/NAME.out, errors in NAME.err, its pid in NAME.pid.
# Returns once it shows records: a short-lived program, pbt_short, is
# loaded until one shows up.  pbt_events_start and pbt_events_wait do
# the two halves, to start several before any record.
pbt_events() {
	pbt_events_start "$@"
	pbt_events_wait "$1"
}

pbt_events_start() {
	local name=$1 pid

	shift
	perf bpf events -o "$bpf_test_tmp/$name.out" "$@" 2>"$bpf_test_tmp/$name.err" &
	pid=$!
	bpf_test_track $pid
	echo $pid >"$bpf_test_tmp/$name.pid"
}

pbt_events_wait() {
	pbt_wait 120 pbt_events_probe "$bpf_test_tmp/$1.out" "$(cat "$bpf_test_tmp/$1.pid")" ||
		bpf_test_fail "perf bpf events ($1) shows no pbt_short within 120 s:" \
			"$(cat "$bpf_test_tmp/$1.err")"
}

pbt_events_probe() {
	bpf_test_gone "$2" && bpf_test_fail "perf bpf events ended: $(cat "${1%.out}.err")"
	perf test -w bpf_links short 1 >/dev/null 2>"$bpf_test_tmp/probe.err" ||
		bpf_test_fail "perf test -w bpf_links short 1 failed:" \
			"$(cat "$bpf_test_tmp/probe.err")"
	pbt_wait 5 grep -qs pbt_short "$1"
}

# pbt_events_stop NAME: SIGINT, as Ctrl-C; fails unless it ends cleanly.
pbt_events_stop() {
	local pid rc

	pid=$(cat "$bpf_test_tmp/$1.pid")
	kill -INT "$pid"
	pbt_wait_gone "$pid" 60 ||
		bpf_test_fail "perf bpf events ($1) still running 60 s after SIGINT"
	pbt_reap "$pid"
	rc=$?
	[ $rc = 0 ] || bpf_test_fail "perf bpf events ($1): exit $rc, want 0:" \
		"$(cat "$bpf_test_tmp/$1.err")"
}

# pbt_summary NAME: perf bpf events' summary line; fails without one.  With
# -j, its counts must be those of the lines of each event it printed.
pbt_summary() {
	local line out=$bpf_test_tmp/$1.out bad

	line=$(grep -E '^\[ perf bpf events: .* lost \]$' "$bpf_test_tmp/$1.err") ||
		bpf_test_fail "no summary line in: $(cat "$bpf_test_tmp/$1.err")"
	echo "$line"
	head -c 1 "$out" | grep -q '{' || return 0
	bad=$(echo "$line" | awk -v out="$out" '
	{
		for (i = 5; i < NF; i += 2) {
			ev = $(i + 1); sub(/,$/, "", ev)
			want[ev] = $i
		}
	}
	END {
		while ((getline l < out) > 0) {
			if (!match(l, /"event":"[a-z_]+"/))
				continue
			ev = substr(l, RSTART + 9, RLENGTH - 10)
			if (ev == "lost") {
				match(l, /"lost":[0-9]+/)
				got[ev] += substr(l, RSTART + 7, RLENGTH - 7)
			} else {
				got[ev]++
			}
		}
		for (ev in want)
			if (want[ev] != got[ev] + 0)
				printf "%s: %d in the summary, %d printed; ", ev, want[ev], got[ev]
		for (ev in got)
			if (!(ev in want))
				printf "%s: %d printed, not in the summary; ", ev, got[ev]
	}')
	[ -z "$bad" ] || bpf_test_fail "the summary does not count what was printed: $bad"
}

# pbt_end: the test passed; stop and remove what it made, check that
# nothing of it is left (processes, the cgroup, the workload's programs),
# exit 0.
pbt_end() {
	local p cg=$pbt_cgroup_dir

	for p in $bpf_test_pids; do
		bpf_test_gone "$p" ||
			bpf_test_fail "still running at the end: $p" \
				"$(tr '\0' ' ' <"/proc/$p/cmdline")"
	done
	pbt_cleanup
	if [ -n "$cg" ] && [ -d "$cg" ]; then
		echo "FAIL: cgroup $cg left behind"
		exit 1
	fi
	if ! pbt_wait 60 pbt_no_programs; then
		echo "FAIL: 60 s after the end, the workload's programs are still loaded:"
		perf bpf list | grep -A1 ' pbt_'
		exit 1
	fi
	exit 0
}

# whether no program of the workload (named pbt_*) is loaded
pbt_no_programs() {
	local list

	list=$(perf bpf list -j) || return 1
	! echo "$list" | grep -q '"prog_name":"pbt_'
}
