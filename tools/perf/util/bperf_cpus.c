// SPDX-License-Identifier: GPL-2.0
/*
 * CPU ids and positions for BPF maps shared with perf's BPF counters.
 * See util/bperf_cpus.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <api/fs/fs.h>
#include <perf/cpumap.h>
#include <internal/cpumap.h>
#include "bperf_cpus.h"

int bperf_cpus_init(struct bperf_cpus *cpus, const char *list)
{
	char *buf = NULL;
	size_t len;

	memset(cpus, 0, sizeof(*cpus));
	if (!list) {
		if (sysfs__read_str("devices/system/cpu/possible", &buf, &len))
			return -ENOENT;
		/* the map parser wants the list alone, no newline */
		buf[strcspn(buf, "\n")] = '\0';
		list = buf;
	}
	/*
	 * An empty or malformed list is an error, not "any CPU": the map
	 * parser takes "" for that, and stops quietly at a character it
	 * does not expect after a comma.
	 */
	len = strlen(list);
	if (len && strspn(list, "0123456789,-") == len &&
	    isdigit((unsigned char)list[len - 1]) && !strstr(list, ",,") &&
	    !strstr(list, ",-"))
		cpus->possible = perf_cpu_map__new(list);
	free(buf);
	if (!cpus->possible ||
	    perf_cpu_map__has_any_cpu_or_is_empty(cpus->possible)) {
		perf_cpu_map__put(cpus->possible);
		cpus->possible = NULL;
		return -EINVAL;
	}
	cpus->nr_possible = perf_cpu_map__nr(cpus->possible);
	cpus->nr_ids = perf_cpu_map__max(cpus->possible).cpu + 1;
	return 0;
}

void bperf_cpus_exit(struct bperf_cpus *cpus)
{
	perf_cpu_map__put(cpus->possible);
	memset(cpus, 0, sizeof(*cpus));
}

int bperf_cpus_pos(const struct bperf_cpus *cpus, int cpu)
{
	struct perf_cpu c = { .cpu = cpu };

	return perf_cpu_map__idx(cpus->possible, c);
}

void bperf_cpus_unpack(const struct bperf_cpus *cpus, const void *packed,
		       void *by_id, size_t size)
{
	/* the kernel copies each CPU's value at a multiple of 8 bytes */
	size_t stride = (size + 7) & ~(size_t)7;
	struct perf_cpu cpu;
	int pos;

	memset(by_id, 0, size * cpus->nr_ids);
	perf_cpu_map__for_each_cpu(cpu, pos, cpus->possible)
		memcpy((char *)by_id + cpu.cpu * size,
		       (const char *)packed + pos * stride, size);
}
