// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bperf leader: the one program that reads the perf events of every
 * bperf session, on every context switch.  Its cost grows with the number
 * of distinct events being counted, never with the number of sessions.
 * perf also runs it with BPF_PROG_TEST_RUN on each CPU before a read.
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
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_roots SEC(".maps");

/*
 * raw_tp rather than tp_btf: only raw tracepoint programs can be run on
 * a given CPU with BPF_PROG_TEST_RUN.  At the tracepoint 'current' is
 * still the task being switched out.
 */
SEC("raw_tp/sched_switch")
int bperf_switch(void *ctx)
{
	bperf_account((__u32)bpf_get_current_pid_tgid());
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
