#!/bin/bash
# perf stat --bpf-counters in a container's pid namespace counts CPUs, refuses tasks (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# perf runs in a new pid namespace (unshare -pf --mount-proc), as in a
# privileged container, while a session of the host counts cpu-clock -a.
# BPF counters of tasks name them by tid, which the BPF programs look up
# in the initial pid namespace, where the workload's pid 2 would be
# kthreadd: such sessions must be refused, saying why, with nothing
# registered or tracked.  Sessions counting CPUs must count there as
# many CPUs as there are, sharing the host session's counters.  One
# killed with SIGKILL there must be reclaimed by the next session of
# the host, while the host's first session still lives.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool unshare
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
unshare -pf --mount-proc true 2>"$tmp/unshare.err" ||
	bpf_test_skip "no pid namespaces (CONFIG_PID_NS): $(cat "$tmp/unshare.err")"

# ns_stat OUT [perf stat options]: perf stat --bpf-counters on our maps,
# in a new pid namespace, CSV to $tmp/OUT.out, errors to $tmp/OUT.err.
ns_stat() {
	local out=$1

	shift
	unshare -pf --mount-proc perf stat --bpf-counters --bpf-attr-map "$attr" \
		-x, -o "$tmp/$out.out" "$@" 2>"$tmp/$out.err"
}

# state: sessions registered, events, tasks tracked, roots.
state() {
	echo "$(bperf_entries "${attr}_dir/bperf_sessions")" \
		"$(bperf_entries "$attr")" \
		"$(bperf_entries "${attr}_dir/bperf_tasks")" \
		"$(bperf_entries "${attr}_dir/bperf_roots")"
}

bperf_lock
bperf_held host --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
bperf_held ref -e cpu-clock -a
held_started() {
	[ -s "$tmp/host.start" ] && [ -s "$tmp/ref.start" ] &&
		[ "$(bperf_entries "${attr}_dir/bperf_sessions" 2>/dev/null)" = 1 ]
}
bperf_until 60 held_started ||
	bpf_test_fail "the host's session did not start: $(cat "$tmp/host.err")"

# Tasks: a workload, and -p of a process of the namespace.
ns_stat work -e task-clock -- perf test -w noploop 1 &&
	bpf_test_fail "a workload counted in a pid namespace: $(cat "$tmp/work.out")"
echo "a workload in a pid namespace: $(grep bperf "$tmp/work.err")"
grep -q 'initial pid namespace' "$tmp/work.err" ||
	bpf_test_fail "no reason given: $(cat "$tmp/work.err")"
# shellcheck disable=SC2016 # expanded by the namespace's shell
unshare -pf --mount-proc sh -c 'perf test -w noploop 30 & busy=$!
	perf stat --bpf-counters --bpf-attr-map "$0" -x, -o "$1.out" \
		-e task-clock -p $busy --timeout 500 2>"$1.err"
	echo $? >"$1.rc"; kill $busy' "$attr" "$tmp/pid"
[ "$(cat "$tmp/pid.rc")" != 0 ] ||
	bpf_test_fail "-p counted in a pid namespace: $(cat "$tmp/pid.out")"
echo "-p in a pid namespace: $(grep bperf "$tmp/pid.err")"
grep -q 'initial pid namespace' "$tmp/pid.err" ||
	bpf_test_fail "no reason given: $(cat "$tmp/pid.err")"
s=$(state)
echo "sessions, events, tasks, roots: $s"
[ "$s" = "1 1 0 0" ] ||
	bpf_test_fail "want only the host's session and its event, no task, no root"

# CPUs: all of them, through the host session's slot.
ncpus=$(getconf _NPROCESSORS_ONLN)
ns_stat cpu -a -e cpu-clock -- sleep 2 ||
	bpf_test_fail "-a failed in a pid namespace: $(cat "$tmp/cpu.err")"
bperf_check_util "-a in a pid namespace, cpu-clock" "$ncpus" cpu cpu-clock 10

# A session of the namespace killed: reclaimed from the host.
# --kill-child: if the test ends first, the perf in it goes with unshare
unshare -pf --mount-proc --kill-child perf stat --bpf-counters --bpf-attr-map "$attr" \
	-x, -I 100 -o "$tmp/ns.out" -e context-switches -a 2>"$tmp/ns.err" 9>&- &
ns=$!
bpf_test_track $ns
counting() {
	grep -q ',context-switches,' "$tmp/ns.out" 2>/dev/null
}
bperf_until 60 counting ||
	bpf_test_fail "the namespace's session did not count: $(cat "$tmp/ns.err")"
victim=$(pgrep -P $ns -x perf) || bpf_test_fail "no perf under unshare $ns"
bpf_test_track "$victim"
s=$(state)
echo "the namespace's session counting: sessions, events, tasks, roots: $s"
[ "$s" = "2 2 0 0" ] || bpf_test_fail "want 2 sessions and 2 events"
kill -9 "$victim"
bperf_until 60 bpf_test_gone $ns ||
	bpf_test_fail "the namespace did not end with its perf"
wait $ns 2>/dev/null
bperf_stat new -e cpu-clock -a true ||
	bpf_test_fail "the next session failed: $(cat "$tmp/new.err")"
s=$(state)
echo "after the next session of the host: sessions, events, tasks, roots: $s"
[ "$s" = "1 1 0 0" ] ||
	bpf_test_fail "the killed session of the namespace was not reclaimed"

bperf_unlock
for p in $(jobs -p); do
	bperf_until 60 bpf_test_gone "$p" || bpf_test_fail "session $p did not end"
done
bperf_check_rates ref cpu-clock host
bperf_none_pinned "after the last session"
exit 0
