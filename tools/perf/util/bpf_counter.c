// SPDX-License-Identifier: GPL-2.0
/*
 * BPF counters for perf stat: the dispatch to an evsel's bpf_counter_ops,
 * and perf stat -b <prog ids>, which counts events only while the given
 * BPF programs run, with an fentry/fexit pair around each of them
 * (bpf_skel/bpf_prog_profiler.bpf.c).  bperf, the counters perf stat
 * sessions share (--bpf-counters), is in util/bperf.c; cgroup mode is in
 * util/bpf_counter_cgroup.c.
 */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <linux/err.h>
#include <linux/perf_event.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_counter.h"
#include "bpf-utils.h"
#include "bperf.h"
#include "counts.h"
#include "debug.h"
#include "evsel.h"
#include "intlist.h"
#include "target.h"
#include "cgroup.h"
#include "cpumap.h"

#include "bpf_skel/bpf_prog_profiler.skel.h"

static struct bpf_counter *bpf_counter_alloc(void)
{
	struct bpf_counter *counter = zalloc(sizeof(*counter));

	if (counter)
		INIT_LIST_HEAD(&counter->list);
	return counter;
}

/*
 * perf stat -b: one bpf_prog_profiler skeleton per profiled program, on
 * the evsel's bpf_counter_list.  Its fentry program reads the event on
 * the current CPU when the profiled program starts, its fexit program
 * reads it again and adds the difference to a per-CPU sum.
 */

static void profiler_free(struct bpf_counter *counter)
{
	list_del_init(&counter->list);
	bpf_prog_profiler_bpf__destroy(counter->skel);
	free(counter);
}

static int bpf_program_profiler__destroy(struct evsel *evsel)
{
	struct bpf_counter *counter, *next;

	list_for_each_entry_safe(counter, next, &evsel->bpf_counter_list, list)
		profiler_free(counter);
	return 0;
}

/* The name of a program's main function, from its BTF; NULL if none. */
static char *profiler_prog_func_name(int prog_fd)
{
	struct perf_bpil *info;
	struct bpf_func_info *funcs;
	const struct btf_type *type;
	struct btf *btf;
	char *name = NULL;

	info = get_bpf_prog_info_linear(prog_fd, 1UL << PERF_BPIL_FUNC_INFO);
	if (IS_ERR_OR_NULL(info)) {
		pr_debug("cannot get the info of BPF program fd %d\n", prog_fd);
		return NULL;
	}
	if (!info->info.btf_id || !info->info.nr_func_info) {
		pr_debug("BPF program fd %d has no BTF\n", prog_fd);
		goto out;
	}
	btf = btf__load_from_kernel_by_id(info->info.btf_id);
	if (!btf) {
		pr_debug("cannot load BTF %u\n", info->info.btf_id);
		goto out;
	}
	funcs = (struct bpf_func_info *)(unsigned long)info->info.func_info;
	type = btf__type_by_id(btf, funcs[0].type_id);
	if (type)
		name = strdup(btf__name_by_offset(btf, type->name_off));
	else
		pr_debug("BTF %u has no type %u\n", info->info.btf_id,
			 funcs[0].type_id);
	btf__free(btf);
out:
	free(info);
	return name;
}

/* The possible CPUs, for the profiler's per-CPU maps. */
static struct bperf_cpus profiler_cpus;

/* Per-CPU map values reach user space at multiples of 8 bytes. */
static_assert(sizeof(struct bpf_perf_event_value) % 8 == 0,
	      "bpf_perf_event_value size");

static int profiler_load_one(struct evsel *evsel, __u32 prog_id)
{
	struct bpf_prog_profiler_bpf *skel = NULL;
	struct bpf_counter *counter = NULL;
	struct bpf_program *prog;
	char *func = NULL;
	int prog_fd, err = -1;

	prog_fd = bpf_prog_get_fd_by_id(prog_id);
	if (prog_fd < 0) {
		pr_err("Failed to open fd for bpf prog %u\n", prog_id);
		return -1;
	}
	counter = bpf_counter_alloc();
	if (!counter)
		goto out;

	skel = bpf_prog_profiler_bpf__open();
	if (!skel) {
		pr_err("Failed to open bpf skeleton\n");
		goto out;
	}
	/*
	 * The programs index the events by CPU id, so size the array for
	 * the highest possible CPU, not for the number of CPUs counted.
	 */
	skel->rodata->num_cpu = profiler_cpus.nr_ids;
	bpf_map__set_max_entries(skel->maps.events, profiler_cpus.nr_ids);
	bpf_map__set_max_entries(skel->maps.fentry_readings, 1);
	bpf_map__set_max_entries(skel->maps.accum_readings, 1);

	func = profiler_prog_func_name(prog_fd);
	if (!func) {
		pr_err("Failed to get program name for bpf prog %u. Does it have BTF?\n",
		       prog_id);
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		if (bpf_program__set_attach_target(prog, prog_fd, func)) {
			pr_err("bpf_program__set_attach_target failed.\n"
			       "Does bpf prog %u have BTF?\n", prog_id);
			goto out;
		}
	}
	set_max_rlimit();
	if (bpf_prog_profiler_bpf__load(skel)) {
		pr_err("bpf_prog_profiler_bpf__load failed\n");
		goto out;
	}
	counter->skel = skel;
	list_add(&counter->list, &evsel->bpf_counter_list);
	skel = NULL;
	counter = NULL;
	err = 0;
out:
	bpf_prog_profiler_bpf__destroy(skel);
	free(counter);
	free(func);
	close(prog_fd);
	return err;
}

/*
 * Whether @tok is a program tag: 2 * BPF_TAG_SIZE hex digits (an id has
 * 10 digits at most)
 */
static bool profiler_is_tag(const char *tok)
{
	return strlen(tok) == 2 * BPF_TAG_SIZE &&
	       strspn(tok, "0123456789abcdefABCDEF") == 2 * BPF_TAG_SIZE;
}

/* How -b names a program that is not an id */
enum profiler_match {
	PROFILER_BY_NAME,
	PROFILER_BY_TAG,
};

/* Whether the program behind @fd has the tag or the name @tok */
static bool profiler_prog_matches(int fd, const char *tok,
				  enum profiler_match by)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char hex[2 * BPF_TAG_SIZE + 1], *full;
	bool match;
	int i;

	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		return false;
	if (by == PROFILER_BY_TAG) {
		for (i = 0; i < BPF_TAG_SIZE; i++)
			sprintf(hex + 2 * i, "%02x", info.tag[i]);
		return !strcasecmp(hex, tok);
	}
	if (strlen(info.name) < BPF_OBJ_NAME_LEN - 1)
		return !strcmp(info.name, tok);
	/* a name cut to fit bpf_prog_info: the whole one is in BTF, if any */
	if (!strstarts(tok, info.name))
		return false;
	full = profiler_prog_func_name(fd);
	match = !strcmp(full ?: info.name, tok);
	free(full);
	return match;
}

/*
 * Profile program @id, unless an earlier id, name or tag of -b stood for
 * it already (@done): a program profiled twice would count twice.
 */
static int profiler_load_once(struct evsel *evsel, __u32 id,
			      struct intlist *done)
{
	if (intlist__has_entry(done, id))
		return 0;
	if (intlist__add(done, id))
		return -ENOMEM;
	return profiler_load_one(evsel, id);
}

/* Profile every program loaded now with the tag or the name @tok */
static int profiler_load_matching(struct evsel *evsel, const char *tok,
				  struct intlist *done)
{
	enum profiler_match by = profiler_is_tag(tok) ? PROFILER_BY_TAG :
							 PROFILER_BY_NAME;
	__u32 id = 0, last = 0;
	int n = 0, fd, err;

	/* the profilers loaded meanwhile have higher ids: stop before them */
	while (!bpf_prog_get_next_id(last, &last))
		;
	while (!bpf_prog_get_next_id(id, &id) && id <= last) {
		bool match;

		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		match = profiler_prog_matches(fd, tok, by);
		close(fd);
		if (!match)
			continue;
		n++;
		pr_debug("bpf prog %s: id %u\n", tok, id);
		err = profiler_load_once(evsel, id, done);
		if (err)
			return err;
	}
	if (!n) {
		pr_err("Failed to find a bpf prog with the %s %s\n",
		       by == PROFILER_BY_TAG ? "tag" : "name", tok);
		return -1;
	}
	return 0;
}

/*
 * -b takes program ids, tags and names, comma separated: a tag or a name
 * stands for every program loaded with it.
 */
static int bpf_program_profiler__load(struct evsel *evsel,
				      struct target *target)
{
	char *ids, *tok, *end, *save = NULL;
	struct intlist *done;
	unsigned long id;
	int err = 0;

	if (!profiler_cpus.nr_ids && bperf_cpus__init(&profiler_cpus, NULL)) {
		pr_err("Failed to read the possible CPUs\n");
		return -1;
	}
	ids = strdup(target->bpf_str);
	done = intlist__new(NULL);
	if (!ids || !done) {
		free(ids);
		intlist__delete(done);
		return -1;
	}

	for (tok = strtok_r(ids, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!isdigit((unsigned char)*tok) || profiler_is_tag(tok)) {
			err = profiler_load_matching(evsel, tok, done);
			if (err)
				break;
			continue;
		}
		errno = 0;
		id = strtoul(tok, &end, 10);
		if (errno || *end || id == 0 || id >= UINT_MAX) {
			pr_err("Failed to parse bpf prog ids %s\n",
			       target->bpf_str);
			err = -1;
			break;
		}
		err = profiler_load_once(evsel, id, done);
		if (err)
			break;
	}
	if (err)
		bpf_program_profiler__destroy(evsel);
	intlist__delete(done);
	free(ids);
	return err;
}

static int bpf_program_profiler__enable(struct evsel *evsel)
{
	struct bpf_counter *counter;
	int err;

	list_for_each_entry(counter, &evsel->bpf_counter_list, list) {
		err = bpf_prog_profiler_bpf__attach(counter->skel);
		if (err) {
			bpf_program_profiler__destroy(evsel);
			return err;
		}
	}
	return 0;
}

static int bpf_program_profiler__disable(struct evsel *evsel)
{
	struct bpf_counter *counter;

	/*
	 * fexit first: a detach rebuilds and patches the trampoline, which
	 * takes a while, and the runs in between must not be counted without
	 * their fentry reading.
	 */
	list_for_each_entry(counter, &evsel->bpf_counter_list, list) {
		struct bpf_prog_profiler_bpf *skel = counter->skel;

		bpf_link__destroy(skel->links.fexit_XXX);
		skel->links.fexit_XXX = NULL;
		bpf_prog_profiler_bpf__detach(skel);
	}
	return 0;
}

static int bpf_program_profiler__read(struct evsel *evsel)
{
	struct perf_cpu_map *cpus = evsel__cpus(evsel);
	struct bpf_perf_event_value *packed, *values;
	struct perf_counts_values *counts;
	struct bpf_counter *counter;
	struct perf_cpu cpu;
	__u32 zero = 0;
	int idx, err = 0;

	if (list_empty(&evsel->bpf_counter_list))
		return -EAGAIN;
	/* accum_readings is per-CPU: one value for each possible CPU */
	packed = calloc(profiler_cpus.nr_possible, sizeof(*packed));
	values = calloc(profiler_cpus.nr_ids, sizeof(*values));
	if (!packed || !values) {
		err = -ENOMEM;
		goto out;
	}

	perf_cpu_map__for_each_idx(idx, cpus) {
		counts = perf_counts(evsel->counts, idx, 0);
		memset(counts, 0, sizeof(*counts));
	}
	list_for_each_entry(counter, &evsel->bpf_counter_list, list) {
		struct bpf_prog_profiler_bpf *skel = counter->skel;
		int fd = bpf_map__fd(skel->maps.accum_readings);

		err = bpf_map_lookup_elem(fd, &zero, packed);
		if (err) {
			pr_err("failed to read value\n");
			break;
		}
		bperf_cpus__unpack(&profiler_cpus, packed, values,
				   sizeof(*values));
		perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
			if (cpu.cpu < 0 || cpu.cpu >= profiler_cpus.nr_ids)
				continue;
			counts = perf_counts(evsel->counts, idx, 0);
			counts->val += values[cpu.cpu].counter;
			counts->ena += values[cpu.cpu].enabled;
			counts->run += values[cpu.cpu].running;
		}
	}
out:
	free(packed);
	free(values);
	return err;
}

static int bpf_program_profiler__install_pe(struct evsel *evsel,
					    int cpu_map_idx, int fd)
{
	struct perf_cpu_map *cpus = evsel__cpus(evsel);
	__u32 key = perf_cpu_map__cpu(cpus, cpu_map_idx).cpu;
	struct bpf_counter *counter;
	int err;

	list_for_each_entry(counter, &evsel->bpf_counter_list, list) {
		struct bpf_prog_profiler_bpf *skel = counter->skel;

		err = bpf_map_update_elem(bpf_map__fd(skel->maps.events),
					  &key, &fd, BPF_ANY);
		if (err)
			return err;
	}
	return 0;
}

struct bpf_counter_ops bpf_program_profiler_ops = {
	.load       = bpf_program_profiler__load,
	.enable	    = bpf_program_profiler__enable,
	.disable    = bpf_program_profiler__disable,
	.read       = bpf_program_profiler__read,
	.destroy    = bpf_program_profiler__destroy,
	.install_pe = bpf_program_profiler__install_pe,
};

extern struct bpf_counter_ops bperf_cgrp_ops;

static inline bool bpf_counter_skip(struct evsel *evsel)
{
	return !evsel->bpf_counter_ops;
}

int bpf_counter__install_pe(struct evsel *evsel, int cpu_map_idx, int fd)
{
	if (bpf_counter_skip(evsel))
		return 0;
	return evsel->bpf_counter_ops->install_pe(evsel, cpu_map_idx, fd);
}

int bpf_counter__load(struct evsel *evsel, struct target *target)
{
	if (target->bpf_str)
		evsel->bpf_counter_ops = &bpf_program_profiler_ops;
	else if (cgrp_event_expanded && target->use_bpf)
		evsel->bpf_counter_ops = &bperf_cgrp_ops;
	else if (bperf_wanted(evsel, target))
		evsel->bpf_counter_ops = &bperf_ops;

	if (evsel->bpf_counter_ops)
		return evsel->bpf_counter_ops->load(evsel, target);
	return 0;
}

int bpf_counter__enable(struct evsel *evsel)
{
	if (bpf_counter_skip(evsel))
		return 0;
	return evsel->bpf_counter_ops->enable(evsel);
}

int bpf_counter__disable(struct evsel *evsel)
{
	if (bpf_counter_skip(evsel))
		return 0;
	return evsel->bpf_counter_ops->disable(evsel);
}

int bpf_counter__read(struct evsel *evsel)
{
	if (bpf_counter_skip(evsel))
		return -EAGAIN;
	return evsel->bpf_counter_ops->read(evsel);
}

void bpf_counter__destroy(struct evsel *evsel)
{
	if (bpf_counter_skip(evsel))
		return;
	evsel->bpf_counter_ops->destroy(evsel);
	evsel->bpf_counter_ops = NULL;
	evsel->bpf_skel = NULL;
}
