/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The layout shared by perf bpf top --hist and --split
 * (util/bpf-top-hist.c) and its BPF programs (bpf_top_runs.bpf.c): what
 * the programs keep of the runs of the program they trace, one per CPU.
 */
#ifndef __BPF_TOP_RUNS_H
#define __BPF_TOP_RUNS_H

/* Run times by power of two, in ns: bucket i holds [2^i, 2^(i+1)), 0 and 1 in 0 */
#define BPF_TOP_RUNS_BUCKETS	64

struct bpf_top_runs {
	__u64	buckets[BPF_TOP_RUNS_BUCKETS];	/* their sum: the runs timed */
	__u64	time_ns;	/* their time */
	__u64	nested;		/* begun while a run was on this CPU: not timed */
	__u64	max_ns;		/* the longest run of window max_window */
	__u64	max_window;
	__u64	start_ns;	/* of the run on this CPU, 0 if none */
	__u64	task;		/* the task it runs in */
	__u64	inner;		/* runs on top of it in its task (interrupts) */
	__u64	key;		/* --split: its key in splits */
	__u64	other_runs;	/* --split: runs whose key splits had no room for */
	__u64	other_timed;
	__u64	other_time_ns;
};

/*
 * --split: what drove a run, the key of its runs and time in the splits
 * map: the cgroup id of the task it runs in (programs run for a task),
 * of the socket of its sk_buff (cgroup_skb), the network device of its
 * sk_buff (tc) or of its xdp_buff (xdp), as BPF_TOP_SPLIT_DEV_KEY(); 0
 * when there is none
 */
enum bpf_top_split_by {
	BPF_TOP_SPLIT_NONE,
	BPF_TOP_SPLIT_CGROUP,
	BPF_TOP_SPLIT_SOCK_CGROUP,
	BPF_TOP_SPLIT_SKB_DEV,
	BPF_TOP_SPLIT_XDP_DEV,
};

/* A device: its network namespace's inode number and its ifindex */
#define BPF_TOP_SPLIT_DEV_KEY(netns, ifindex)	(((__u64)(netns) << 32) | (__u32)(ifindex))

/* Keys a program's splits map holds: runs of others count as other_runs */
#define BPF_TOP_SPLIT_KEYS	1024

struct bpf_top_split_val {
	__u64	runs;		/* every run, timed or not */
	__u64	timed;		/* the runs timed */
	__u64	time_ns;	/* their time */
};

#endif /* __BPF_TOP_RUNS_H */
