#!/bin/bash
# perf stat --bpf-counters counts CPUs as perf stat does: -a, -C (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# A bperf session and a plain perf stat count cpu-clock one after the
# other, system wide and then on the last online CPU; each must report
# as many CPUs utilized as it counts CPUs (its count over its own
# elapsed time), and nothing may stay pinned after.  A session counting
# one cgroup (-G) is refused: the sessions counting an event share it,
# so it cannot count a cgroup for one of them.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
tmp=$(bpf_test_dir)

last_cpu=$(cpus=$(cat /sys/devices/system/cpu/online); echo "${cpus##*[,-]}")
bperf_cpu_targets "$last_cpu"

cg=perf_test_bperf_$$
if [ ! -f /sys/fs/cgroup/cgroup.procs ]; then
	echo "no cgroup2 hierarchy at /sys/fs/cgroup: -G not tried"
elif ! mkdir /sys/fs/cgroup/$cg; then
	echo "cannot create cgroup $cg: -G not tried"
else
	trap 'rmdir /sys/fs/cgroup/$cg; bperf_cleanup' EXIT TERM INT
	bperf_stat cg -e cpu-clock -a -G $cg -- true
	rc=$?
	rmdir /sys/fs/cgroup/$cg
	trap bperf_cleanup EXIT TERM INT
	[ $rc != 0 ] || bpf_test_fail "-G $cg was accepted: $(cat "$tmp/cg.out")"
	grep -q "cannot count one cgroup (-G)" "$tmp/cg.err" ||
		bpf_test_fail "no clear error for -G: $(cat "$tmp/cg.err")"
	echo "-G refused: $(grep bperf: "$tmp/cg.err")"
fi

bperf_none_pinned
exit 0
