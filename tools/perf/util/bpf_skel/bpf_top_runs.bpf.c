// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * perf bpf top --hist: the time of each run of one BPF program, measured
 * from an fentry to an fexit program attached to it (as perf stat -b's
 * profiler attaches), kept by power of two on each CPU.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf_top_runs.h"

/* A run this long is one whose exit was missed */
#define BPF_TOP_RUNS_STALE_NS	(10ULL * 1000 * 1000 * 1000)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_top_runs);
} runs SEC(".maps");

/*
 * The window perf reads, moved on after each read (through the mmapped
 * .bss): max_ns is that window's.  A run reads it once.
 */
__u64 window;

/* floor(log2(v)), 0 for 0 */
static __always_inline __u32 log2_32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xffff) << 4;
	v >>= r;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	return r | (v >> 1);
}

static __always_inline __u32 log2_64(__u64 v)
{
	__u32 hi = v >> 32;

	return hi ? log2_32(hi) + 32 : log2_32(v);
}

SEC("fentry/XXX")
int BPF_PROG(fentry_XXX)
{
	__u32 zero = 0;
	struct bpf_top_runs *r = bpf_map_lookup_elem(&runs, &zero);
	__u64 now = bpf_ktime_get_ns(), task = bpf_get_current_task();

	if (!r)
		return 0;
	/*
	 * A run on this CPU already: one it interrupted (an interrupt runs
	 * in the task it interrupts: inner counts those, for their exits
	 * not to end the run below) or, for a program that may be
	 * preempted, one of another task.  This one is not timed.  A start
	 * older than BPF_TOP_RUNS_STALE_NS is one whose exit was missed (an
	 * exit interrupted as it began): timing starts again.
	 */
	if (r->start_ns && now - r->start_ns < BPF_TOP_RUNS_STALE_NS) {
		if (r->task == task)
			r->inner++;
		r->nested++;
		return 0;
	}
	r->task = task;
	r->inner = 0;
	r->start_ns = now;
	return 0;
}

SEC("fexit/XXX")
int BPF_PROG(fexit_XXX)
{
	__u32 zero = 0;
	struct bpf_top_runs *r = bpf_map_lookup_elem(&runs, &zero);
	__u64 t, w = window;

	/*
	 * No start: the run was not timed (see above); another task: one
	 * that ran while the timed one was preempted.  perf attaches this
	 * program before the fentry one, so a run is timed whole or not.
	 */
	if (!r || !r->start_ns || r->task != bpf_get_current_task())
		return 0;
	if (r->inner) {
		r->inner--;
		return 0;
	}
	t = bpf_ktime_get_ns() - r->start_ns;
	r->start_ns = 0;
	r->buckets[log2_64(t) & (BPF_TOP_RUNS_BUCKETS - 1)]++;
	r->time_ns += t;
	if (r->max_window != w || t > r->max_ns) {
		r->max_ns = t;
		r->max_window = w;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
