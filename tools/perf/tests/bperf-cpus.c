// SPDX-License-Identifier: GPL-2.0
/*
 * How perf's shared BPF counters (bperf) and perf stat -b number CPUs in
 * their maps, for possible-CPU masks with and without holes: an event
 * array has a key for every slot and possible CPU id, all distinct, and
 * a per-CPU map's packed values land on the CPU ids they belong to.  x86
 * has no holes in its possible mask, so this is where the holes get
 * tested.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/perf_event.h>
#ifdef HAVE_LIBBPF_SUPPORT
#include <bpf/libbpf.h>
#endif
#include "cpumap.h"
#include "debug.h"
#include "tests.h"
#include "util/bperf_cpus.h"
#include "util/bpf_skel/bperf_u.h"

#define SLOTS BPERF_MAX_SLOTS
#define MAX_IDS 8

struct mask {
	const char *list;
	int ids[MAX_IDS];	/* the possible CPUs, in order */
	int nr;
};

/* A per-CPU value whose size is not a multiple of 8. */
struct odd {
	char c[12];
};

static int check_mask(const struct mask *m)
{
	int nr_ids = m->ids[m->nr - 1] + 1, i, ret = TEST_FAIL;
	struct odd *odd_by_id = NULL;
	char *odd_packed = NULL;
	__u64 *packed = NULL, *by_id = NULL;
	struct bperf_cpus cpus;
	bool *seen = NULL;
	__u32 slot, key;

	if (bperf_cpus_init(&cpus, m->list)) {
		pr_debug("%s: not parsed\n", m->list);
		return TEST_FAIL;
	}
	if (cpus.nr_ids != nr_ids || cpus.nr_possible != m->nr) {
		pr_debug("%s: %d ids and %d possible, want %d and %d\n", m->list,
			 cpus.nr_ids, cpus.nr_possible, nr_ids, m->nr);
		goto out;
	}
	/* a per-CPU value's position is the CPU's rank in the mask */
	for (i = 0; i < nr_ids; i++) {
		int want = -1, j;

		for (j = 0; j < m->nr; j++) {
			if (m->ids[j] == i)
				want = j;
		}
		if (bperf_cpus_pos(&cpus, i) != want) {
			pr_debug("%s: CPU %d at %d, want %d\n", m->list, i,
				 bperf_cpus_pos(&cpus, i), want);
			goto out;
		}
	}
	/*
	 * Every (slot, possible CPU) has its own key, inside the array, and
	 * it is the one the BPF programs compute: slot * nr_ids + CPU id.
	 */
	seen = calloc(SLOTS * nr_ids, sizeof(*seen));
	if (!seen)
		goto out;
	for (slot = 0; slot < SLOTS; slot++) {
		for (i = 0; i < m->nr; i++) {
			key = bperf_cpus_key(&cpus, slot, m->ids[i]);
			if (key != slot * nr_ids + m->ids[i]) {
				pr_debug("%s: slot %u CPU %d: key %u\n", m->list,
					 slot, m->ids[i], key);
				goto out;
			}
			if (key >= (__u32)(SLOTS * nr_ids) || seen[key]) {
				pr_debug("%s: slot %u CPU %d: key %u %s\n",
					 m->list, slot, m->ids[i], key,
					 key >= (__u32)(SLOTS * nr_ids) ?
					 "past the array" : "taken twice");
				goto out;
			}
			seen[key] = true;
		}
	}
	/* packed values, the i-th for the i-th possible CPU, spread by id */
	packed = calloc(m->nr, sizeof(*packed));
	by_id = calloc(nr_ids, sizeof(*by_id));
	odd_packed = calloc(m->nr, 16);
	odd_by_id = calloc(nr_ids, sizeof(*odd_by_id));
	if (!packed || !by_id || !odd_packed || !odd_by_id)
		goto out;
	for (i = 0; i < m->nr; i++) {
		packed[i] = 1000 + m->ids[i];
		/* the kernel puts each value at a multiple of 8 bytes */
		odd_packed[i * 16] = (char)(100 + m->ids[i]);
		odd_packed[i * 16 + 11] = (char)(50 + m->ids[i]);
	}
	for (i = 0; i < nr_ids; i++) {
		by_id[i] = 1;
		odd_by_id[i].c[0] = 1;
		odd_by_id[i].c[11] = 1;
	}
	bperf_cpus_unpack(&cpus, packed, by_id, sizeof(*by_id));
	bperf_cpus_unpack(&cpus, odd_packed, odd_by_id, sizeof(*odd_by_id));
	for (i = 0; i < nr_ids; i++) {
		bool possible = false;
		int j;

		for (j = 0; j < m->nr; j++)
			possible |= m->ids[j] == i;
		if (by_id[i] != (possible ? 1000u + i : 0) ||
		    odd_by_id[i].c[0] != (possible ? 100 + i : 0) ||
		    odd_by_id[i].c[11] != (possible ? 50 + i : 0)) {
			pr_debug("%s: CPU %d holds %llu and %d, want %d and %d\n",
				 m->list, i, (unsigned long long)by_id[i],
				 odd_by_id[i].c[0], possible ? 1000 + i : 0,
				 possible ? 100 + i : 0);
			goto out;
		}
	}
	ret = TEST_OK;
out:
	free(seen);
	free(packed);
	free(by_id);
	free(odd_packed);
	free(odd_by_id);
	bperf_cpus_exit(&cpus);
	return ret;
}

static int test__bperf_cpus(struct test_suite *test __maybe_unused,
			    int subtest __maybe_unused)
{
	static const struct mask masks[] = {
		{ "0-3", { 0, 1, 2, 3 }, 4 },
		{ "0,2-3", { 0, 2, 3 }, 3 },
		{ "0-1,4-5", { 0, 1, 4, 5 }, 4 },
		{ "1,3", { 1, 3 }, 2 },
		{ "5", { 5 }, 1 },
	};
	static const char * const bad[] = {
		"", "x", "0-3,x", "0-3,x5", "0-3,", "0,,2", "0,-1", "3-1",
	};
	struct bperf_cpus cpus;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(masks); i++) {
		if (check_mask(&masks[i]))
			return TEST_FAIL;
	}
	/* nothing or garbage is an error, not "any CPU" nor a part of it */
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		if (!bperf_cpus_init(&cpus, bad[i])) {
			pr_debug("'%s' taken for %d CPUs\n", bad[i],
				 cpus.nr_possible);
			bperf_cpus_exit(&cpus);
			return TEST_FAIL;
		}
	}
	/* this machine's own mask, as perf and libbpf see it */
	if (bperf_cpus_init(&cpus, NULL)) {
		pr_debug("cannot read the possible CPUs\n");
		return TEST_FAIL;
	}
	if (cpus.nr_ids != cpu__max_cpu().cpu) {
		pr_debug("%d CPU ids, perf says %d\n", cpus.nr_ids,
			 cpu__max_cpu().cpu);
		bperf_cpus_exit(&cpus);
		return TEST_FAIL;
	}
#ifdef HAVE_LIBBPF_SUPPORT
	if (cpus.nr_possible != libbpf_num_possible_cpus()) {
		pr_debug("%d possible CPUs, libbpf says %d\n", cpus.nr_possible,
			 libbpf_num_possible_cpus());
		bperf_cpus_exit(&cpus);
		return TEST_FAIL;
	}
#endif
	bperf_cpus_exit(&cpus);
	return TEST_OK;
}

DEFINE_SUITE("perf stat --bpf-counters and -b: CPU ids and per-CPU positions in BPF maps",
	     bperf_cpus);
