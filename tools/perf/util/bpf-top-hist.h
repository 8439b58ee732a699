/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPF_TOP_HIST_H
#define __PERF_BPF_TOP_HIST_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/compiler.h>
#include <linux/types.h>
#include "bpf_skel/bpf_top_runs.h"

/*
 * perf bpf top --hist: the run times of one program, by power of two,
 * from fentry and fexit programs attached to it (bpf_skel/bpf_top_runs.bpf.c)
 */
struct bpf_top_hist;

/* Summed over the CPUs: since the attach, or over a window */
struct bpf_top_hist_sum {
	u64			buckets[BPF_TOP_RUNS_BUCKETS];
	u64			runs;
	u64			time_ns;
	u64			nested;
	u64			max_ns;		/* of the window read */
};

/*
 * --split: the runs of one key (enum bpf_top_split_by) since the attach,
 * every run counted, the time of those timed
 */
struct bpf_top_split_sum {
	u64			key;
	u64			runs;
	u64			timed;
	u64			time_ns;
};

/* The key of the runs whose key the map had no room for */
#define BPF_TOP_SPLIT_OTHER	(~0ULL)

#ifdef HAVE_BPF_SKEL
int bpf_top_hist__attach(struct bpf_top_hist **histp, u32 prog_id, u32 split_by,
			 char *why, size_t size);
int bpf_top_hist__read(struct bpf_top_hist *hist, struct bpf_top_hist_sum *sum);
int bpf_top_hist__read_splits(struct bpf_top_hist *hist, struct bpf_top_split_sum **v, int *nr);
void bpf_top_hist__delete(struct bpf_top_hist *hist);
#else
static inline int bpf_top_hist__attach(struct bpf_top_hist **histp __maybe_unused,
				       u32 prog_id __maybe_unused, u32 split_by __maybe_unused,
				       char *why, size_t size)
{
	snprintf(why, size, "perf was built without BPF skeletons");
	return -EOPNOTSUPP;
}

static inline int bpf_top_hist__read(struct bpf_top_hist *hist __maybe_unused,
				     struct bpf_top_hist_sum *sum __maybe_unused)
{
	return -EOPNOTSUPP;
}

static inline int bpf_top_hist__read_splits(struct bpf_top_hist *hist __maybe_unused,
					    struct bpf_top_split_sum **v __maybe_unused,
					    int *nr __maybe_unused)
{
	return -EOPNOTSUPP;
}

static inline void bpf_top_hist__delete(struct bpf_top_hist *hist __maybe_unused)
{
}
#endif

/* What a window's runs were: @cur less @last, with @cur's max */
void bpf_top_hist__diff(const struct bpf_top_hist_sum *cur, const struct bpf_top_hist_sum *last,
			struct bpf_top_hist_sum *win);
/* The time below which @pct percent of the runs of @sum took, at its bucket's end */
u64 bpf_top_hist__percentile(const struct bpf_top_hist_sum *sum, double pct);
/* The range of bucket @i, in ns: [*from, *to] */
void bpf_top_hist__bucket(int i, u64 *from, u64 *to);
/* --split: what drives the runs of a program of type @prog_type */
u32 bpf_top_hist__split_by(u32 prog_type);

#endif /* __PERF_BPF_TOP_HIST_H */
