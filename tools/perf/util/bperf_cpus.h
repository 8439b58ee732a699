/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPERF_CPUS_H
#define __PERF_BPERF_CPUS_H

#include <stddef.h>
#include <linux/types.h>

struct perf_cpu_map;

/*
 * The possible CPUs as BPF maps see them.  Two numbers, never mixed:
 * programs index their arrays by CPU id (bpf_get_smp_processor_id()),
 * so an array with an entry for every CPU needs nr_ids of them, while
 * a per-CPU map hands user space one value for each possible CPU,
 * packed in the order of the possible mask: nr_possible values, the
 * i-th for the i-th possible CPU.  The two differ when the possible
 * mask has holes.
 */
struct bperf_cpus {
	struct perf_cpu_map *possible;
	int nr_ids;		/* highest possible CPU id + 1 */
	int nr_possible;	/* CPUs in the possible mask */
};

/* From a CPU list ("0-3,8"); NULL reads the system's possible mask. */
int bperf_cpus_init(struct bperf_cpus *cpus, const char *list);
void bperf_cpus_exit(struct bperf_cpus *cpus);

/* Key of CPU id 'cpu' in an array of nr_ids entries for each slot. */
static inline __u32 bperf_cpus_key(const struct bperf_cpus *cpus,
				   __u32 slot, int cpu)
{
	return slot * cpus->nr_ids + cpu;
}

/* Where CPU id 'cpu' is in a per-CPU map's value, -1 if not possible. */
int bperf_cpus_pos(const struct bperf_cpus *cpus, int cpu);

/*
 * Spread a per-CPU map's value (nr_possible packed elements of 'size'
 * bytes, each at a multiple of 8 bytes as the kernel copies them) into
 * an array indexed by CPU id (nr_ids elements of 'size' bytes).
 * Impossible CPUs are zeroed.
 */
void bperf_cpus_unpack(const struct bperf_cpus *cpus, const void *packed,
		       void *by_id, size_t size);

#endif /* __PERF_BPERF_CPUS_H */
