// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * perf bpf top --hist: the time of each run of one BPF program, measured
 * from an fentry to an fexit program attached to it (as perf stat -b's
 * profiler attaches), kept by power of two on each CPU.  --split: its
 * runs and their time by what drove them (enum bpf_top_split_by).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf_top_runs.h"

#define E2BIG	7

/* A run this long is one whose exit was missed */
#define BPF_TOP_RUNS_STALE_NS	(10ULL * 1000 * 1000 * 1000)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_top_runs);
} runs SEC(".maps");

/*
 * Each key has a value on every possible CPU.  perf allocates them as keys
 * come where the kernel can in any context (bpf_mem_alloc, Linux 6.1),
 * else all at load: an allocation with kmalloc could deadlock in NMI.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, BPF_TOP_SPLIT_KEYS);	/* 1 without --split */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct bpf_top_split_val);
} splits SEC(".maps");

/* --split: enum bpf_top_split_by, for the type of the program traced */
const volatile __u32 split_by = BPF_TOP_SPLIT_NONE;

/* --split: the map was full once: no more keys are tried */
__u32 splits_full;

/* What the kernel's sk_buff, sock and xdp_buff have that --split reads */
struct ns_common___perf {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net___perf {
	struct ns_common___perf ns;
} __attribute__((preserve_access_index));

struct possible_net_t___perf {
	struct net___perf *net;
} __attribute__((preserve_access_index));

struct net_device___perf {
	int ifindex;
	struct possible_net_t___perf nd_net;
} __attribute__((preserve_access_index));

struct sock_cgroup_data___perf {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct sock___perf {
	struct sock_cgroup_data___perf sk_cgrp_data;
} __attribute__((preserve_access_index));

struct sk_buff___perf {
	struct sock___perf *sk;
	struct net_device___perf *dev;
} __attribute__((preserve_access_index));

struct xdp_rxq_info___perf {
	struct net_device___perf *dev;
} __attribute__((preserve_access_index));

struct xdp_buff___perf {
	struct xdp_rxq_info___perf *rxq;
} __attribute__((preserve_access_index));

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

/*
 * --split: the key of this run.  The context of the program traced, its
 * first argument, is read as a plain address: the kernel types it by the
 * program traced, which this one does not know.  A pointer on the way
 * that is NULL (no socket, no device) reads as 0.
 */
static __always_inline __u64 split_key(__u64 *ctx)
{
	struct net_device___perf *dev = NULL;
	struct sk_buff___perf *skb = NULL;
	unsigned int netns = 0;
	struct xdp_buff___perf *xdp = NULL;

	switch (split_by) {
	case BPF_TOP_SPLIT_CGROUP:
		return bpf_get_current_cgroup_id();
	case BPF_TOP_SPLIT_SOCK_CGROUP:
		bpf_probe_read_kernel(&skb, sizeof(skb), ctx);
		return BPF_CORE_READ(skb, sk, sk_cgrp_data.cgroup, kn, id);
	case BPF_TOP_SPLIT_SKB_DEV:
		bpf_probe_read_kernel(&skb, sizeof(skb), ctx);
		dev = BPF_CORE_READ(skb, dev);
		break;
	case BPF_TOP_SPLIT_XDP_DEV:
		bpf_probe_read_kernel(&xdp, sizeof(xdp), ctx);
		dev = BPF_CORE_READ(xdp, rxq, dev);
		break;
	default:
		return 0;
	}
	/*
	 * an ifindex is a namespace's: every container has its eth0; a
	 * kernel without network namespaces has no nd_net.net, and one
	 * namespace (0, as perf finds no /proc/self/ns/net there)
	 */
	if (!dev)
		return 0;
	if (bpf_core_field_exists(dev->nd_net.net))
		netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	return BPF_TOP_SPLIT_DEV_KEY(netns, BPF_CORE_READ(dev, ifindex));
}

/*
 * --split: count a run under its key, on this CPU, or as one of others
 * when the map has no room for the key.  Atomic: a run of the program in
 * an interrupt may count under the same key meanwhile.
 */
static __always_inline void split_run(struct bpf_top_runs *r, __u64 key)
{
	struct bpf_top_split_val *v = bpf_map_lookup_elem(&splits, &key);
	struct bpf_top_split_val zero = {};

	if (!v && !splits_full) {
		/* another CPU may add it first: look it up again */
		if (bpf_map_update_elem(&splits, &key, &zero, BPF_NOEXIST) == -E2BIG)
			splits_full = 1;
		v = bpf_map_lookup_elem(&splits, &key);
	}
	if (v)
		__sync_fetch_and_add(&v->runs, 1);
	else
		__sync_fetch_and_add(&r->other_runs, 1);
}

SEC("fentry/XXX")
int BPF_PROG(fentry_XXX)
{
	__u32 zero = 0;
	struct bpf_top_runs *r = bpf_map_lookup_elem(&runs, &zero);
	__u64 now = bpf_ktime_get_ns(), task = bpf_get_current_task(), key = 0;

	if (!r)
		return 0;
	/* every run counts, timed or not, for the splits to add up to all */
	if (split_by != BPF_TOP_SPLIT_NONE) {
		key = split_key(ctx);
		split_run(r, key);
	}
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
	r->key = key;
	/* the run is on once the rest is set: for the compiler too */
	barrier();
	r->start_ns = now;
	return 0;
}

SEC("fexit/XXX")
int BPF_PROG(fexit_XXX)
{
	__u32 zero = 0;
	struct bpf_top_runs *r = bpf_map_lookup_elem(&runs, &zero);
	__u64 t, key, w = window;

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
	key = r->key;
	r->buckets[log2_64(t) & (BPF_TOP_RUNS_BUCKETS - 1)]++;
	r->time_ns += t;
	if (r->max_window != w || t > r->max_ns) {
		r->max_ns = t;
		r->max_window = w;
	}
	if (split_by != BPF_TOP_SPLIT_NONE) {
		struct bpf_top_split_val *v = bpf_map_lookup_elem(&splits, &key);

		/* counted by fentry on this CPU, or had no room */
		if (v) {
			__sync_fetch_and_add(&v->timed, 1);
			__sync_fetch_and_add(&v->time_ns, t);
		} else {
			__sync_fetch_and_add(&r->other_timed, 1);
			__sync_fetch_and_add(&r->other_time_ns, t);
		}
	}
	/*
	 * The run ends last: a run of the program in an interrupt before
	 * this is not timed (a run is on), counted inner, and cannot take
	 * the key or the start of this one, as it would once this is 0
	 * (its own fexit would then not run: this program is running)
	 */
	barrier();
	r->start_ns = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
