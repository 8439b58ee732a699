// SPDX-License-Identifier: GPL-2.0
/*
 * A small BPF program for the demo: loaded and unloaded with bpftool while
 * perf record runs, so its PERF_RECORD_BPF_EVENT and KSYMBOL records show up
 * in perf script.  Counts calls to nanosleep while it is attached.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} demo_calls SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_nanosleep")
int demo_nanosleep(void *ctx)
{
	__u32 key = 0;
	__u64 *val = bpf_map_lookup_elem(&demo_calls, &key);

	if (val)
		__sync_fetch_and_add(val, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
