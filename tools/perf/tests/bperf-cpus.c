// SPDX-License-Identifier: GPL-2.0
/*
 * How perf's shared BPF counters (bperf) number CPUs in their maps, for
 * possible-CPU masks with and without holes: an event array has a key
 * for every slot and possible CPU id, all distinct, and a per-CPU map's
 * packed values land on the CPU ids they belong to.  x86 has no holes
 * in its possible mask, so this is where the holes get tested.
 */
#include <stdlib.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <perf/cpumap.h>
#include "debug.h"
#include "tests.h"
#include "util/bperf_cpus.h"

#define SLOTS 64	/* BPERF_MAX_SLOTS */

static int check_mask(const char *list, int nr_ids, int nr_possible)
{
	struct bperf_cpus cpus;
	struct perf_cpu cpu;
	unsigned long *seen = NULL;
	__u64 *packed = NULL, *by_id = NULL;
	int idx, ret = TEST_FAIL;
	__u32 slot, key;

	if (bperf_cpus__init(&cpus, list)) {
		pr_debug("%s: not parsed\n", list);
		return TEST_FAIL;
	}
	if (cpus.nr_ids != nr_ids || cpus.nr_possible != nr_possible) {
		pr_debug("%s: %d ids and %d possible, want %d and %d\n", list,
			 cpus.nr_ids, cpus.nr_possible, nr_ids, nr_possible);
		goto out;
	}
	/* every (slot, possible CPU) has its own key, inside the array */
	seen = calloc(SLOTS * nr_ids, sizeof(*seen));
	if (!seen)
		goto out;
	for (slot = 0; slot < SLOTS; slot++) {
		perf_cpu_map__for_each_cpu(cpu, idx, cpus.possible) {
			key = bperf_cpus__key(&cpus, slot, cpu.cpu);
			if (key >= (__u32)(SLOTS * nr_ids) || seen[key]) {
				pr_debug("%s: slot %u CPU %d: key %u %s\n", list,
					 slot, cpu.cpu, key,
					 key >= (__u32)(SLOTS * nr_ids) ?
					 "past the array" : "taken twice");
				goto out;
			}
			seen[key] = 1;
		}
	}
	/* per-CPU values come packed: position i is the i-th possible CPU */
	packed = calloc(nr_possible, sizeof(*packed));
	by_id = calloc(nr_ids, sizeof(*by_id));
	if (!packed || !by_id)
		goto out;
	perf_cpu_map__for_each_cpu(cpu, idx, cpus.possible) {
		if (bperf_cpus__pos(&cpus, cpu.cpu) != idx) {
			pr_debug("%s: CPU %d at %d, want %d\n", list, cpu.cpu,
				 bperf_cpus__pos(&cpus, cpu.cpu), idx);
			goto out;
		}
		packed[idx] = 1000 + cpu.cpu;
	}
	for (idx = 0; idx < nr_ids; idx++)
		by_id[idx] = 1;
	bperf_cpus__unpack(&cpus, packed, by_id, sizeof(*by_id));
	for (idx = 0; idx < nr_ids; idx++) {
		bool possible = bperf_cpus__pos(&cpus, idx) >= 0;
		__u64 want = possible ? 1000 + idx : 0;

		if (by_id[idx] != want) {
			pr_debug("%s: CPU %d holds %llu, want %llu\n", list, idx,
				 (unsigned long long)by_id[idx],
				 (unsigned long long)want);
			goto out;
		}
	}
	ret = TEST_OK;
out:
	free(seen);
	free(packed);
	free(by_id);
	bperf_cpus__exit(&cpus);
	return ret;
}

static int test__bperf_cpus(struct test_suite *test __maybe_unused,
			    int subtest __maybe_unused)
{
	struct bperf_cpus cpus;

	if (check_mask("0-3", 4, 4) ||
	    check_mask("0,2-3", 4, 3) ||
	    check_mask("0-1,4-5", 6, 4) ||
	    check_mask("1,3", 4, 2) ||
	    check_mask("5", 6, 1))
		return TEST_FAIL;
	/* nothing or garbage is an error, not "any CPU" */
	if (!bperf_cpus__init(&cpus, "") || !bperf_cpus__init(&cpus, "x"))
		return TEST_FAIL;
	/* and this machine's own mask reads */
	if (bperf_cpus__init(&cpus, NULL))
		return TEST_FAIL;
	bperf_cpus__exit(&cpus);
	return TEST_OK;
}

DEFINE_SUITE("perf stat --bpf-counters: CPU ids and per-CPU positions in BPF maps",
	     bperf_cpus);
