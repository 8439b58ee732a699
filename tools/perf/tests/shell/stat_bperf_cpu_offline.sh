#!/bin/bash
# perf stat --bpf-counters with an offline CPU between online ones (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# bperf finds the event of a CPU by the CPU's id, not by its place in
# the list of online CPUs (upstream's bperf mixes the two up): take CPU 1
# offline, with CPUs on both sides of it online, and check that system
# wide, per-CPU and task counts are still right: CPUs utilized as perf
# stat reports them, every online CPU counted, and a workload's count
# what it ran, as /proc tells it.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
bperf_cpu1_hotplug 3 "to offline one in the middle"
present=$(getconf _NPROCESSORS_CONF)

bperf_cpu1 0 || bpf_test_skip "cannot take CPU 1 offline"
online=$(cat /sys/devices/system/cpu/online)
echo "online CPUs: $online"
last=${online##*[,-]}

bperf_cpu_targets "$last"

# every online CPU, one by one
bperf_stat percpu -e cpu-clock -a -A -- sleep 1
for c in $(seq 0 $((present - 1))); do
	[ "$(cat /sys/devices/system/cpu/cpu$c/online 2>/dev/null || echo 1)" = 1 ] || continue
	v=$(awk -F, -v c="CPU$c" '$1 == c && $2 ~ /^[0-9.]+$/ { print $2 }' \
		"$(bpf_test_dir)/percpu.out")
	echo "CPU $c: $v msec"
	awk -v v="${v:-0}" 'BEGIN { exit !(v > 500) }' ||
		bpf_test_fail "CPU $c counted ${v:-nothing} over 1 s"
done

# a workload counts what it ran, as /proc tells it
bperf_spin_script "$(bpf_test_dir)/spin.sh"
bperf_stat work -e task-clock -- \
	bash "$(bpf_test_dir)/spin.sh" "$(bpf_test_dir)/work.cpu" "$(getconf CLK_TCK)"
bperf_check_spin "task-clock workload" work task-clock

bperf_none_pinned
exit 0
