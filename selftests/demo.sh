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

step "1. two concurrent 'perf stat --bpf-counters -e cpu-clock -a' sessions"
for s in 1 2; do
	perf stat --bpf-counters -e cpu-clock -a -o "$work/stat$s" -- \
		sh -c "touch $work/started$s; sleep 4" &
done
for _ in $(seq 100); do
	[ -e "$work/started1" ] && [ -e "$work/started2" ] && break
	sleep 0.1
done
echo "--- while both run: the attr map, one entry per event attr"
bpftool map dump pinned "$map" | tail -n 1
echo "--- BPF programs loaded now: one leader (on the sched_switch raw"
echo "    tracepoint) for the event, shared by both sessions"
bpftool prog show | grep -E '^[0-9]+: '
echo "--- BPF links"
bpftool link show | grep -E '^[0-9]+: '
wait
for s in 1 2; do
	echo "--- session $s"
	grep -E 'cpu-clock|elapsed' "$work/stat$s"
done

step "2. perf record -a while a BPF program is loaded and unloaded"
pin=/sys/fs/bpf/perf_demo
perf record -q -a -e cpu-clock -o "$work/perf.data" -- sh -c "
	sleep 0.5
	bpftool prog load $demo_obj $pin &&
	bpftool prog show pinned $pin | head -n 1 | tee $work/prog
	sleep 0.5
	rm $pin && echo 'removed $pin: last reference gone, program unloaded'
	sleep 0.5"
id=$(cut -d: -f1 "$work/prog")
echo "--- perf script --show-bpf-events: the records of program $id"
perf script -i "$work/perf.data" --show-bpf-events 2>/dev/null |
	grep -E "PERF_RECORD_BPF_EVENT .*id $id\$|PERF_RECORD_KSYMBOL .*_demo_nanosleep\$" |
	sed -E 's/^ +//'
echo "(type 1 = PROG_LOAD, 2 = PROG_UNLOAD; KSYMBOL flags 0x1 = unregister)"
echo "--- perf report --stdio --sort comm (samples taken meanwhile)"
perf report -i "$work/perf.data" --stdio --sort comm 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 8
rm -rf "$work"
step "done"
