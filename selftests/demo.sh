#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make run': runs inside the VM and shows the series at work.
#  1. two perf stat --bpf-counters sessions sharing one leader program;
#  2. the PERF_RECORD_BPF_EVENT and PERF_RECORD_KSYMBOL records of a BPF
#     program loaded and unloaded while perf record -a runs.
set -eu

work=$(mktemp -d /tmp/demo.XXXXXX)
demo_obj=$BUILD_DIR/tools/vm/demo.bpf.o
map=/sys/fs/bpf/perf_attr_map

step() {
	printf '\n=== %s\n' "$*"
}

step "perf under test: $(perf version), upstream: $(perf-base version)"

step "1. two concurrent 'perf stat --bpf-counters -a' sessions"
for s in 1 2; do
	perf stat --bpf-counters -e cpu-clock,context-switches -a -o "$work/stat$s" -- \
		sh -c "touch $work/started$s; sleep 4" &
done
for i in $(seq 100); do
	[ -e "$work/started1" ] && [ -e "$work/started2" ] && break
	sleep 0.1
done
echo "--- while both run: the attr map (one entry per event, shared)"
bpftool map dump pinned "$map" | tail -n 1
echo "--- the leader and per-session programs loaded now"
bpftool prog show | grep -E '^[0-9]+: ' | grep -v 'name (fentry|fexit)_bpf_' || true
echo "--- BPF links"
bpftool link show | grep -E '^[0-9]+: '
wait
for s in 1 2; do
	echo "--- session $s"
	grep -E 'cpu-clock|context-switches|elapsed' "$work/stat$s"
done

step "2. perf record -a while a BPF program is loaded and unloaded"
perf record -q -a -e cpu-clock -o "$work/perf.data" -- sh -c "
	sleep 0.5
	bpftool prog load $demo_obj /sys/fs/bpf/perf_demo
	echo 'loaded:   \$(bpftool prog show pinned /sys/fs/bpf/perf_demo | head -n 1)'
	sleep 0.5
	rm /sys/fs/bpf/perf_demo
	echo 'unloaded: /sys/fs/bpf/perf_demo removed, last reference gone'
	sleep 0.5"
echo "--- perf script --show-bpf-events (records of demo_nanosleep)"
perf script -i "$work/perf.data" --show-bpf-events 2>/dev/null |
	grep -E 'PERF_RECORD_(BPF_EVENT|KSYMBOL)' | grep -B1 -A1 -E 'demo_nanosl|type [12],' |
	sed -E 's/^ +//' | head -n 20
echo "--- perf report --stdio --sort comm (samples taken meanwhile)"
perf report -i "$work/perf.data" --stdio --sort comm 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 8
rm -rf "$work"
step "done"
