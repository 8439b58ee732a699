// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bperf leader: the programs that read the perf events of every bperf
 * session.  perf test-runs bperf_read on each CPU before it reads; while
 * a session counts tasks, bperf_switch also runs on every context switch
 * for the slots of such sessions.  Their cost grows with the number of
 * distinct events being counted, never with the number of sessions.
 *
 * The object also declares the maps only perf uses, so that they are
 * created and pinned with the others.  Design: util/bpf_counter.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bperf_maps.h"

/* slot -> what it counts and who uses it */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BPERF_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct bperf_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_slots SEC(".maps");

/* session id -> the process behind it, to find sessions that died */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPERF_MAX_SESSIONS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bperf_session);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_sessions SEC(".maps");

/* the root tasks each session registered, to release them after it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPERF_MAX_ROOTS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bperf_root_key);
	__type(value, __u64);		/* the root's start time */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_roots SEC(".maps");

/*
 * Run by perf with BPF_PROG_TEST_RUN on each CPU it is about to read,
 * never attached: this is all a CPU-wide session (-a, -C) costs.  Only
 * raw tracepoint programs can be test-run on a given CPU.
 */
SEC("raw_tp")
int bperf_read(void *ctx)
{
	bperf_account(bpf_get_current_task_btf(), true);
	return 0;
}

/*
 * Attached only while a session counts tasks (-p, -t, a workload): the
 * task leaving the CPU gets what its slots counted since the last
 * reading.  At the tracepoint 'current' is still that task.
 */
SEC("raw_tp/sched_switch")
int bperf_switch(void *ctx)
{
	bperf_account(bpf_get_current_task_btf(), false);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
