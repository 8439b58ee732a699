#!/bin/bash
# perf stat --bpf-counters counts CPUs as perf stat does: -a, -C
# SPDX-License-Identifier: GPL-2.0
#
# A bperf session and a plain perf stat count cpu-clock one after the
# other, system wide and then on the last online CPU; each must report
# as many CPUs utilized as it counts CPUs (its count over its own
# elapsed time), and nothing may stay pinned after (sessions sharing
# programs: stat_bpf_counters_shared.sh; task targets:
# stat_bperf_targets.sh).

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require

last_cpu=$(cpus=$(cat /sys/devices/system/cpu/online); echo "${cpus##*[,-]}")
bperf_cpu_targets "$last_cpu"

bperf_none_pinned
exit 0
