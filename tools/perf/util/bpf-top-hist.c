// SPDX-License-Identifier: GPL-2.0
/*
 * perf bpf top --hist: the distribution of a program's run times.
 *
 * An fentry and an fexit program (bpf_skel/bpf_top_runs.bpf.c) are
 * attached to the program, as perf stat -b's profiler attaches to it, and
 * time each of its runs on the CPU it runs on, into power of two buckets.
 * Being attached to it holds the program: bpf-top.c lets go of it when
 * nothing else does.  The window's longest run is kept apart, the window
 * being moved on by each read.
 *
 * --split: the fentry program also counts each run, and the fexit one its
 * time, under a key for what drove it (enum bpf_top_split_by), in a
 * per-CPU hash map of BPF_TOP_SPLIT_KEYS keys; runs of more keys count
 * as others.  A device's key holds its network namespace too.  The key
 * is read on entry, for every run, so that the splits add up to the
 * kernel's run count; only the runs timed have a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf-desc.h"
#include "bpf-top-hist.h"
#include "debug.h"

void bpf_top_hist__diff(const struct bpf_top_hist_sum *cur, const struct bpf_top_hist_sum *last,
			struct bpf_top_hist_sum *win)
{
	u64 from, to;
	int i, top = -1;

	for (i = 0; i < BPF_TOP_RUNS_BUCKETS; i++) {
		win->buckets[i] = cur->buckets[i] - last->buckets[i];
		if (win->buckets[i])
			top = i;
	}
	win->runs = cur->runs - last->runs;
	win->time_ns = cur->time_ns - last->time_ns;
	win->nested = cur->nested - last->nested;
	/*
	 * A run that ends as the window is read may count in one window
	 * and set the longest run of the other: keep it in the window's
	 * last bucket
	 */
	win->max_ns = cur->max_ns;
	if (top >= 0) {
		bpf_top_hist__bucket(top, &from, &to);
		win->max_ns = clamp(win->max_ns, from, to);
	} else {
		win->max_ns = 0;
	}
}

void bpf_top_hist__bucket(int i, u64 *from, u64 *to)
{
	*from = i ? 1ULL << i : 0;
	*to = i < 63 ? (1ULL << (i + 1)) - 1 : ~0ULL;
}

u64 bpf_top_hist__percentile(const struct bpf_top_hist_sum *sum, double pct)
{
	u64 seen = 0, from, to;
	int i;

	if (!sum->runs)
		return 0;
	for (i = 0; i < BPF_TOP_RUNS_BUCKETS; i++) {
		seen += sum->buckets[i];
		/* the first bucket that takes the count past pct percent */
		if (seen * 100.0 >= pct * sum->runs)
			break;
	}
	bpf_top_hist__bucket(min(i, BPF_TOP_RUNS_BUCKETS - 1), &from, &to);
	return sum->max_ns >= from && sum->max_ns < to ? sum->max_ns : to;
}

u32 bpf_top_hist__split_by(u32 prog_type)
{
	switch (prog_type) {
	/* run for the task they run in, or the one an interrupt interrupted */
	case BPF_PROG_TYPE_KPROBE:
	case BPF_PROG_TYPE_TRACEPOINT:
	case BPF_PROG_TYPE_PERF_EVENT:
	case BPF_PROG_TYPE_RAW_TRACEPOINT:
	case BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE:
	case BPF_PROG_TYPE_TRACING:
	case BPF_PROG_TYPE_LSM:
	case BPF_PROG_TYPE_SYSCALL:
	/* run for the task making the system call */
	case BPF_PROG_TYPE_CGROUP_SOCK:
	case BPF_PROG_TYPE_CGROUP_SOCK_ADDR:
	case BPF_PROG_TYPE_CGROUP_SOCKOPT:
	case BPF_PROG_TYPE_CGROUP_SYSCTL:
	case BPF_PROG_TYPE_CGROUP_DEVICE:
		return BPF_TOP_SPLIT_CGROUP;
	case BPF_PROG_TYPE_CGROUP_SKB:
		return BPF_TOP_SPLIT_SOCK_CGROUP;
	case BPF_PROG_TYPE_SCHED_CLS:
	case BPF_PROG_TYPE_SCHED_ACT:
		return BPF_TOP_SPLIT_SKB_DEV;
	case BPF_PROG_TYPE_XDP:
		return BPF_TOP_SPLIT_XDP_DEV;
	default:
		return BPF_TOP_SPLIT_NONE;
	}
}

#ifdef HAVE_BPF_SKEL
#include "bpf_skel/bpf_top_runs.skel.h"

struct bpf_top_hist {
	struct bpf_top_runs_bpf	*skel;
	int			nr_cpus;	/* possible: the per-CPU values */
	struct bpf_top_runs	*vals;
};

void bpf_top_hist__delete(struct bpf_top_hist *hist)
{
	if (hist) {
		bpf_top_runs_bpf__destroy(hist->skel);
		free(hist->vals);
		free(hist);
	}
}

/*
 * Whether the kernel allocates map elements in any context (bpf_mem_alloc,
 * Linux 6.1): the splits map then takes its keys as they come, rather
 * than all at load
 */
static bool bpf_top_hist__mem_alloc(void)
{
	static int known = -1;
	struct btf *btf;

	if (known < 0) {
		btf = btf__load_vmlinux_btf();
		known = !libbpf_get_error(btf) &&
			btf__find_by_name_kind(btf, "bpf_mem_alloc", BTF_KIND_STRUCT) > 0;
		btf__free(btf);
	}
	return known;
}

/*
 * Attach to program @prog_id; what went wrong in @why, for -v, when it
 * cannot be traced (no BTF, an extension program, one the kernel
 * refuses another trampoline).
 */
int bpf_top_hist__attach(struct bpf_top_hist **histp, u32 prog_id, u32 split_by,
			 char *why, size_t size)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_top_hist *hist;
	struct bpf_program *prog;
	char *func = NULL, msg[128];
	int fd, err;

	*histp = NULL;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0) {
		err = -errno;
		snprintf(why, size, "gone");
		return err;
	}
	hist = zalloc(sizeof(*hist));
	err = -ENOMEM;
	if (!hist)
		goto out;
	hist->nr_cpus = libbpf_num_possible_cpus();
	if (hist->nr_cpus <= 0) {
		err = hist->nr_cpus ?: -EINVAL;
		snprintf(why, size, "no possible CPUs");
		goto out;
	}
	hist->vals = calloc(hist->nr_cpus, sizeof(*hist->vals));
	if (!hist->vals)
		goto out;
	if (bpf_prog_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		snprintf(why, size, "no information");
		goto out;
	}
	if (info.type == BPF_PROG_TYPE_EXT) {
		err = -EOPNOTSUPP;
		snprintf(why, size, "an extension program cannot be traced");
		goto out;
	}
	func = perf_bpf__prog_func_name(fd, &info);
	if (!func) {
		err = -EOPNOTSUPP;
		snprintf(why, size, "no BTF");
		goto out;
	}
	hist->skel = bpf_top_runs_bpf__open();
	if (!hist->skel) {
		err = -errno;
		snprintf(why, size, "cannot open its BPF programs");
		goto out;
	}
	hist->skel->rodata->split_by = split_by;
	if (split_by == BPF_TOP_SPLIT_NONE)
		bpf_map__set_max_entries(hist->skel->maps.splits, 1);
	else if (!bpf_top_hist__mem_alloc())
		bpf_map__set_map_flags(hist->skel->maps.splits, 0);
	bpf_object__for_each_program(prog, hist->skel->obj) {
		err = bpf_program__set_attach_target(prog, fd, func);
		if (err) {
			snprintf(why, size, "cannot trace %s: %s", func,
				 str_error_r(-err, msg, sizeof(msg)));
			goto out;
		}
	}
	err = bpf_top_runs_bpf__load(hist->skel);
	/*
	 * fexit first: a run that enters before the fentry program is
	 * attached then ends untimed, instead of leaving a start behind
	 */
	if (!err) {
		hist->skel->links.fexit_XXX = bpf_program__attach(hist->skel->progs.fexit_XXX);
		err = libbpf_get_error(hist->skel->links.fexit_XXX);
		if (err)
			hist->skel->links.fexit_XXX = NULL;
	}
	if (!err) {
		hist->skel->links.fentry_XXX = bpf_program__attach(hist->skel->progs.fentry_XXX);
		err = libbpf_get_error(hist->skel->links.fentry_XXX);
		if (err)
			hist->skel->links.fentry_XXX = NULL;
	}
	if (err) {
		snprintf(why, size, "cannot trace %s: %s", func,
			 str_error_r(-err, msg, sizeof(msg)));
		goto out;
	}
	*histp = hist;
	hist = NULL;
out:
	bpf_top_hist__delete(hist);
	free(func);
	close(fd);
	return err;
}

/* Sum the CPUs' runs, then move on to the next window */
int bpf_top_hist__read(struct bpf_top_hist *hist, struct bpf_top_hist_sum *sum)
{
	__u32 zero = 0;
	u64 window = hist->skel->bss->window;
	int cpu, i;

	if (bpf_map__lookup_elem(hist->skel->maps.runs, &zero, sizeof(zero), hist->vals,
				 hist->nr_cpus * sizeof(*hist->vals), 0))
		return -errno;
	memset(sum, 0, sizeof(*sum));
	for (cpu = 0; cpu < hist->nr_cpus; cpu++) {
		const struct bpf_top_runs *v = &hist->vals[cpu];

		/* the runs timed are the buckets' sum */
		for (i = 0; i < BPF_TOP_RUNS_BUCKETS; i++) {
			sum->buckets[i] += v->buckets[i];
			sum->runs += v->buckets[i];
		}
		sum->time_ns += v->time_ns;
		sum->nested += v->nested;
		if (v->max_window == window && v->max_ns > sum->max_ns)
			sum->max_ns = v->max_ns;
	}
	hist->skel->bss->window = window + 1;
	return 0;
}

static int bpf_top_split_sum__cmp(const void *a, const void *b)
{
	const struct bpf_top_split_sum *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * --split: each key's runs and time, summed over the CPUs, in @v by key
 * (*@nr of them, BPF_TOP_SPLIT_OTHER last if any run was counted so)
 */
int bpf_top_hist__read_splits(struct bpf_top_hist *hist, struct bpf_top_split_sum **v, int *nr)
{
	struct bpf_map *map = hist->skel->maps.splits;
	/* CPUs adding keys at once may each go past max_entries by one */
	u32 max = bpf_map__max_entries(map) + hist->nr_cpus, zero = 0;
	struct bpf_top_split_val *vals;
	struct bpf_top_split_sum *sums, other = { .key = BPF_TOP_SPLIT_OTHER };
	u64 key, *prev = NULL;
	int cpu, n = 0, err = 0;

	*v = NULL;
	*nr = 0;
	vals = calloc(hist->nr_cpus, sizeof(*vals));
	sums = calloc(max + 1, sizeof(*sums));
	if (!vals || !sums) {
		err = -ENOMEM;
		goto out;
	}
	/* keys are added, never deleted: no key is missed or seen twice */
	while (n < (int)max && !bpf_map__get_next_key(map, prev, &key, sizeof(key))) {
		prev = &sums[n].key;
		sums[n].key = key;
		if (bpf_map__lookup_elem(map, &key, sizeof(key), vals,
					 hist->nr_cpus * sizeof(*vals), 0))
			continue;	/* cannot be: keys are never deleted */
		for (cpu = 0; cpu < hist->nr_cpus; cpu++) {
			sums[n].runs += vals[cpu].runs;
			sums[n].timed += vals[cpu].timed;
			sums[n].time_ns += vals[cpu].time_ns;
		}
		n++;
	}
	qsort(sums, n, sizeof(*sums), bpf_top_split_sum__cmp);
	if (bpf_map__lookup_elem(hist->skel->maps.runs, &zero, sizeof(zero), hist->vals,
				 hist->nr_cpus * sizeof(*hist->vals), 0)) {
		err = -errno;
		goto out;
	}
	for (cpu = 0; cpu < hist->nr_cpus; cpu++) {
		other.runs += hist->vals[cpu].other_runs;
		other.timed += hist->vals[cpu].other_timed;
		other.time_ns += hist->vals[cpu].other_time_ns;
	}
	if (other.runs)
		sums[n++] = other;
	*v = sums;
	*nr = n;
	sums = NULL;
out:
	free(vals);
	free(sums);
	return err;
}
#endif /* HAVE_BPF_SKEL */
