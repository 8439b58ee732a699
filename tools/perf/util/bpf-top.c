// SPDX-License-Identifier: GPL-2.0
/*
 * perf bpf top: the cost of each BPF program as it runs.
 *
 * Each program's run time and count, as the kernel counts them while
 * this process holds BPF_ENABLE_STATS, are read once a window; programs
 * loaded while it runs are found through their PERF_RECORD_BPF_EVENT
 * records, and links coming or going make it read the attach points
 * again.  With -e, perf stat -b's profiler counts perf events around
 * each run.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kernel.h>
#include <linux/time64.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <perf/cpumap.h>

#include "bpf-desc.h"
#include "bpf-link-types.h"
#include "bpf-side-band.h"
#include "bpf-top.h"
#include "bpf_counter.h"
#include "counts.h"
#include "debug.h"
#include "evlist.h"
#include "evsel.h"
#include "hashmap.h"
#include "intlist.h"
#include "parse-events.h"
#include "target.h"

static const char * const bpf_top_keys[] = {
	[BPF_TOP_KEY_RUN_TIME]		= "run_time",
	[BPF_TOP_KEY_RUNS]		= "runs",
	[BPF_TOP_KEY_AVG]		= "avg",
	[BPF_TOP_KEY_RUN_TIME_TOTAL]	= "run_time_total",
	[BPF_TOP_KEY_RUNS_TOTAL]	= "runs_total",
	[BPF_TOP_KEY_ID]		= "id",
	[BPF_TOP_KEY_NAME]		= "name",
	[BPF_TOP_KEY_TYPE]		= "type",
};

static void bpf_top_prog__free_splits(struct bpf_top_prog *prog)
{
	int i;

	for (i = 0; i < prog->nr_splits; i++)
		free(prog->splits[i].name);
	zfree(&prog->splits);
	prog->nr_splits = 0;
	prog->splits_ok = false;
	prog->splits_based = false;
	prog->splits_stale = false;
}

/* Stop counting @prog: the profiler held it, the kernel may free it now */
static void bpf_top_prog__uncount(struct bpf_top *top, struct bpf_top_prog *prog)
{
	int i;

	if (prog->hist) {
		bpf_top_hist__delete(prog->hist);
		prog->hist = NULL;
		prog->hist_based = false;
		prog->hist_ok = false;
		bpf_top_prog__free_splits(prog);
	}
	if (!prog->counts)
		return;
	for (i = 0; i < top->nr_events; i++) {
		struct evsel *evsel = prog->counts[i].evsel;

		if (evsel) {
			bpf_counter__destroy(evsel);
			evsel__close(evsel);
			evsel__delete(evsel);
		}
	}
	zfree(&prog->counts);
	top->nr_counted--;
}

static void bpf_top_prog__delete(struct bpf_top *top, struct bpf_top_prog *prog)
{
	if (prog) {
		bpf_top_prog__uncount(top, prog);
		free(prog->desc.name);
		strbuf_release(&prog->attach);
		free(prog);
	}
}

static bool bpf_top__wanted(struct bpf_top *top, const struct bpf_prog_desc *desc)
{
	if (top->ids && !intlist__has_entry(top->ids, desc->id))
		return false;
	if (top->types && (desc->type >= 64 || !(top->types & (1ULL << desc->type))))
		return false;
	if (top->name_glob && fnmatch(top->name_glob, desc->name ?: "", 0))
		return false;
	return true;
}

/*
 * Start following program @id: loaded since start if its load record was
 * read (all its runs count), else there before (its runs count from the
 * first read).  -ENOENT if it is gone already.
 */
static int bpf_top__add(struct bpf_top *top, u32 id, bool loaded)
{
	struct bpf_top_prog *prog;
	int fd;

	if (hashmap__find(top->progs, id, &prog)) {
		prog->seen_load |= loaded;
		return 0;
	}
	if (top->own && intlist__has_entry(top->own, id))
		return 0;
	fd = perf_bpf__fd_by_id(bpf_prog_get_fd_by_id, id);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : 0;
	prog = zalloc(sizeof(*prog));
	if (prog)
		strbuf_init(&prog->attach, 0);
	if (!prog || bpf_prog_desc__fill(&prog->desc, fd, NULL)) {
		bpf_top_prog__delete(top, prog);
		close(fd);
		return 0;
	}
	close(fd);
	prog->seen_load = loaded;
	prog->shown = !top->pids;
	if (!bpf_top__wanted(top, &prog->desc) || hashmap__add(top->progs, id, prog)) {
		bpf_top_prog__delete(top, prog);
		return 0;
	}
	top->links_stale = true;
	return 0;
}

/* The program name in the newest ksymbol kept with @tag (hex), NULL if none */
static const char *bpf_top__ksym_name(struct bpf_top *top, const char *tag)
{
	const size_t n = ARRAY_SIZE(top->ksyms);
	const char *name = NULL;
	size_t i;

	for (i = 1; i <= n && !name; i++) {
		const char *ksym = top->ksyms[(top->ksym_next + n - i) % n];

		name = ksym ? perf_bpf__ksym_prog(ksym, tag) : NULL;
	}
	return name;
}

/* The record of the program gone of id @id, a new one if none; NULL if out of memory */
static struct bpf_top_gone *bpf_top__note_gone(struct bpf_top *top, u32 id)
{
	struct bpf_top_gone *g;

	if (hashmap__find(top->gone, id, &g))
		return g;
	g = zalloc(sizeof(*g));
	if (!g)
		return NULL;
	g->id = id;
	if (hashmap__add(top->gone, id, g)) {
		free(g);
		return NULL;
	}
	return g;
}

static void bpf_top__forget_gone(struct bpf_top *top, struct bpf_top_gone *g)
{
	hashmap__delete(top->gone, g->id, NULL, NULL);
	free(g->name);
	free(g);
}

/*
 * A BPF ksymbol read: kept, to name programs gone before their look-up,
 * and naming one whose load record came before it (from another CPU)
 */
static void bpf_top__ksymbol(struct bpf_top *top, const struct perf_record_ksymbol *ksym)
{
	char **slot = &top->ksyms[top->ksym_next], tag[2 * BPF_TAG_SIZE + 1];
	struct hashmap_entry *cur;
	const char *name;
	size_t bkt;

	if (ksym->ksym_type != PERF_RECORD_KSYMBOL_TYPE_BPF ||
	    (ksym->flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) ||
	    !perf_bpf__ksym_prog(ksym->name, NULL))
		return;
	free(*slot);
	*slot = strdup(ksym->name);
	top->ksym_next = (top->ksym_next + 1) % ARRAY_SIZE(top->ksyms);
	hashmap__for_each_entry(top->gone, cur, bkt) {
		struct bpf_top_gone *g = cur->pvalue;

		if (!g->loaded || g->name)
			continue;
		perf_bpf__tag_str(g->tag, tag);
		name = perf_bpf__ksym_prog(ksym->name, tag);
		if (name)
			g->name = strdup(name);
	}
}

/*
 * The load record of a program unloaded before it was read: noted, to
 * be followed from the next refresh on, from its records alone (named by
 * its ksymbol, of no known type) for its unload record to say what it
 * cost.  Not with -p (no process holds it) nor --prog-type (its type is
 * not known).
 */
static void bpf_top__load_gone(struct bpf_top *top, const struct perf_record_bpf_event *bpf)
{
	char tag[2 * BPF_TAG_SIZE + 1];
	struct bpf_top_gone *g;
	const char *name;

	if (!top->unload_counts || top->pids || top->types)
		return;
	g = bpf_top__note_gone(top, bpf->id);
	if (!g)
		return;
	g->loaded = true;
	memcpy(g->tag, bpf->tag, BPF_TAG_SIZE);
	perf_bpf__tag_str(bpf->tag, tag);
	name = bpf_top__ksym_name(top, tag);
	if (name && !g->name)
		g->name = strdup(name);
}

/*
 * The unload record of a program not followed, with its last counts: one
 * whose load record is read later in the same pass (from another CPU)
 * is followed with them.
 */
static void bpf_top__unload_gone(struct bpf_top *top, u32 id,
				 const struct perf_record_bpf_stats_event *stats)
{
	struct bpf_top_gone *g;

	if (!top->unload_counts || top->pids || top->types || !stats ||
	    (top->ids && !intlist__has_entry(top->ids, id)))
		return;
	g = bpf_top__note_gone(top, id);
	if (!g || g->final)
		return;
	g->final = true;
	g->cnt = stats->run_cnt;
	g->time = stats->run_time_ns;
	g->misses = stats->recursion_misses;
}

/*
 * At a refresh, follow the programs whose load records were read, gone
 * already: shown once, gone, with what their unload records said they
 * cost.  A pass over the rings reads one CPU's after another, and a
 * refresh may come between two passes: one of the two records may come
 * in the pass after the other, so a program that has only one is kept
 * for one more refresh.  The rest (unloads of programs not followed) is
 * then forgotten.
 */
static void bpf_top__follow_gone(struct bpf_top *top)
{
	char tag[2 * BPF_TAG_SIZE + 1];
	struct hashmap_entry *cur, *tmp;
	size_t bkt;

	hashmap__for_each_entry_safe(top->gone, cur, tmp, bkt) {
		struct bpf_top_gone *g = cur->pvalue;
		struct bpf_top_prog *prog;
		const char *name;

		if (!g->waited && (!g->loaded || !g->final)) {
			g->waited = true;
			continue;
		}
		if (!g->loaded || hashmap__find(top->progs, g->id, &prog))
			goto next;
		prog = zalloc(sizeof(*prog));
		if (!prog)
			goto next;
		strbuf_init(&prog->attach, 0);
		if (!g->name) {
			perf_bpf__tag_str(g->tag, tag);
			name = bpf_top__ksym_name(top, tag);
			g->name = name ? strdup(name) : NULL;
		}
		prog->desc.id = g->id;
		prog->desc.name = g->name;
		g->name = NULL;
		memcpy(prog->desc.tag, g->tag, BPF_TAG_SIZE);
		prog->seen_load = true;
		prog->shown = true;
		prog->gone = 1;
		prog->final = g->final;
		prog->final_cnt = g->cnt;
		prog->final_time = g->time;
		prog->final_misses = g->misses;
		if (!bpf_top__wanted(top, &prog->desc) ||
		    hashmap__add(top->progs, prog->desc.id, prog))
			bpf_top_prog__delete(top, prog);
next:
		bpf_top__forget_gone(top, g);
	}
}

/*
 * The unload record of @prog: it is gone, and on a kernel that says so,
 * these are its last counts.
 */
static void bpf_top_prog__unload(struct bpf_top_prog *prog,
				 const struct perf_record_bpf_stats_event *stats)
{
	if (stats && !prog->final) {
		prog->final = true;
		prog->final_cnt = stats->run_cnt;
		prog->final_time = stats->run_time_ns;
		prog->final_misses = stats->recursion_misses;
	}
	if (!prog->gone)
		prog->gone = 1;
}

/*
 * Follow every program loaded now: those with ids above the last one
 * there when the records began were loaded since (ids only grow).
 */
static void bpf_top__scan(struct bpf_top *top, bool loaded)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id))
		bpf_top__add(top, id, loaded || id > top->last_id);
}

/* The side-band callback: programs come and go, links too */
int bpf_top__record(union perf_event *event, void *data)
{
	const struct perf_record_bpf_stats_event *stats;
	struct bpf_top *top = data;
	struct bpf_top_prog *prog;

	switch (event->header.type) {
	case PERF_RECORD_KSYMBOL:
		bpf_top__ksymbol(top, &event->ksymbol);
		break;
	case PERF_RECORD_BPF_EVENT:
		switch (event->bpf.type) {
		case PERF_BPF_EVENT_PROG_LOAD:
			if (bpf_top__add(top, event->bpf.id, true) == -ENOENT)
				bpf_top__load_gone(top, &event->bpf);
			break;
		case PERF_BPF_EVENT_PROG_UNLOAD:
			stats = bpf_side_band__unload_stats(top->evlist, event);
			if (hashmap__find(top->progs, event->bpf.id, &prog))
				bpf_top_prog__unload(prog, stats);
			else
				bpf_top__unload_gone(top, event->bpf.id, stats);
			break;
		case PERF_BPF_EVENT_LINK_ATTACH:
		case PERF_BPF_EVENT_LINK_DETACH:
			top->links_stale = true;
			break;
		default:
			break;
		}
		break;
	case PERF_RECORD_LOST:
		top->lost += event->lost.lost;
		top->rescan = true;
		top->links_stale = true;
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Each program's attach points: "link_type[/attach_type] target", comma
 * separated; the attach type where the link type does not tell it.
 */
/* "type[/attach_type] target" after what @prog's attach has */
static void bpf_top_prog__add_attach(struct bpf_top_prog *prog, const struct bpf_link_desc *link,
				     const char *how)
{
	char buf[16], abuf[16];
	const char *at = NULL;

	if (!perf_bpf_link__sole_attach_type(link->type, link->attach_type))
		at = perf_bpf__attach_type_name(link->attach_type, abuf, sizeof(abuf));
	strbuf_addf(&prog->attach, "%s%s%s%s%s%s%s", prog->attach.len ? ", " : "",
		    perf_bpf__link_type_name(link->type, buf, sizeof(buf)),
		    at ? "/" : "", at ?: "",
		    link->target && *link->target ? " " : "", link->target ?: "", how);
}

/*
 * The programs followed that have no link may be attached without one
 * (bpf_attachments__scan(): perf events, XDP over netlink, the legacy
 * cgroup attach): their attach targets then, marked "(no link)".  Only
 * when there is such a program: it reads every process's fds.
 */
static void bpf_top__read_attachments(struct bpf_top *top)
{
	struct bpf_link_desc **v = NULL;
	struct bpf_top_prog *prog;
	struct hashmap_entry *cur;
	int i, nr = 0, alloc = 0;
	unsigned int kinds = 0;
	size_t bkt;

	/* only what the programs shown without a link can be attached to */
	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		prog->attach_unlinked = !prog->gone && prog->shown && !prog->attach.len &&
					prog->desc.type_known &&
					bpf_attachments__kinds(prog->desc.type);
		if (prog->attach_unlinked)
			kinds |= bpf_attachments__kinds(prog->desc.type);
	}
	if (!kinds)
		return;
	bpf_attachments__scan(&v, &nr, &alloc, kinds, &top->res);
	for (i = 0; i < nr; i++) {
		if (hashmap__find(top->progs, v[i]->prog_id, &prog) && prog->attach_unlinked)
			bpf_top_prog__add_attach(prog, v[i], " (no link)");
		bpf_link_desc__delete(v[i]);
	}
	free(v);
	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		prog->attach_unlinked = false;
	}
}

static void bpf_top__read_links(struct bpf_top *top)
{
	struct hashmap_entry *cur;
	struct bpf_top_prog *prog;
	size_t bkt;
	__u32 id = 0;

	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		strbuf_setlen(&prog->attach, 0);
	}
	/* a refresh looks its new cgroups and functions up at most once */
	bpf_resolver__next_batch(&top->res);
	top->links_stale = false;
	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_desc link = {};
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		int fd;

		/* attached, its id not published yet: EAGAIN for a moment */
		fd = perf_bpf__fd_by_id(bpf_link_get_fd_by_id, id);
		if (fd < 0) {
			if (errno == EAGAIN)
				top->links_stale = true;
			continue;
		}
		/* the target only of the programs followed: it may cost a BTF load */
		if (bpf_link_get_info_by_fd(fd, &info, &len) ||
		    !hashmap__find(top->progs, info.prog_id, &prog) ||
		    bpf_link_desc__fill(&link, fd, &top->res) ||
		    !hashmap__find(top->progs, link.prog_id, &prog)) {
			close(fd);
			free(link.target);
			continue;
		}
		close(fd);
		bpf_top_prog__add_attach(prog, &link, "");
		free(link.target);
	}
	bpf_top__read_attachments(top);
}

/*
 * -p: the programs the processes hold, themselves or through a link, as
 * their fds say at each refresh
 */
static void bpf_top__read_owners(struct bpf_top *top)
{
	struct bpf_owner_maps owners = {
		.progs = perf_bpf__id_map(),
		.links = perf_bpf__id_map(),
	};
	struct hashmap_entry *cur;
	struct int_node *node;
	struct bpf_top_prog *prog;
	size_t bkt;

	if (!owners.progs || !owners.links)
		goto out;
	intlist__for_each_entry(node, top->pids)
		bpf_owner_maps__scan_pid(&owners, node->i);
	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		prog->shown = bpf_owners__find(owners.progs, prog->desc.id);
	}
	hashmap__for_each_entry(owners.links, cur, bkt) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_link_get_fd_by_id(cur->key);

		if (fd < 0)
			continue;
		if (!bpf_link_get_info_by_fd(fd, &info, &len) &&
		    hashmap__find(top->progs, info.prog_id, &prog))
			prog->shown = true;
		close(fd);
	}
out:
	bpf_owner_map__free(owners.progs);
	bpf_owner_map__free(owners.links);
}

/*
 * Whether tracing program @id traces another BPF program: one whose
 * target is not in the kernel's BTF (attached, the kernel gives no BTF
 * object; loaded but not attached yet, that of the target program).
 * The profiler of perf stat -b or of another perf bpf top is one: two
 * of them would count each other's.
 */
static bool bpf_top__traces_prog(u32 id)
{
	struct bpf_prog_info info = {};
	struct bpf_btf_info btf = {};
	__u32 len = sizeof(info);
	bool ret = false;
	int fd;

	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return false;
	if (bpf_prog_get_info_by_fd(fd, &info, &len) || !info.attach_btf_id) {
		close(fd);
		return false;
	}
	close(fd);
	if (!info.attach_btf_obj_id)
		return true;
	fd = bpf_btf_get_fd_by_id(info.attach_btf_obj_id);
	len = sizeof(btf);
	if (fd >= 0) {
		ret = !bpf_btf_get_info_by_fd(fd, &btf, &len) && !btf.kernel_btf;
		close(fd);
	}
	return ret;
}

/*
 * -e: count the events around each run of @prog, an evsel an event with
 * perf stat -b's profiler on it.  Why a program cannot be counted (no
 * BTF, a tracing program, ...) is said with -v, not on every screen.
 */
static int bpf_top__count(struct bpf_top *top, struct bpf_top_prog *prog)
{
	struct target target = { .bpf_str = NULL, };
	struct evsel *tmpl, *evsel;
	int i = 0, err = 0, saved = verbose;
	char id[16];

	if (prog->desc.type == BPF_PROG_TYPE_TRACING && bpf_top__traces_prog(prog->desc.id)) {
		pr_debug("perf bpf top: program %u traces a BPF program: not counted\n",
			 prog->desc.id);
		return -EINVAL;
	}
	prog->counts = calloc(top->nr_events, sizeof(*prog->counts));
	if (!prog->counts)
		return -ENOMEM;
	top->nr_counted++;
	snprintf(id, sizeof(id), "%u", prog->desc.id);
	target.bpf_str = id;
	if (verbose <= 0)
		verbose = -1;
	evlist__for_each_entry(top->events, tmpl) {
		evsel = evsel__new(&tmpl->core.attr);
		if (!evsel) {
			err = -ENOMEM;
			break;
		}
		prog->counts[i++].evsel = evsel;
		evsel->core.cpus = perf_cpu_map__get(top->cpus);
		err = bpf_counter__load(evsel, &target);
		if (!err)
			err = evsel__open_per_cpu(evsel, top->cpus, -1);
		if (!err)
			err = evsel__alloc_counts(evsel);
		if (!err)
			err = bpf_counter__enable(evsel);
		if (err)
			break;
	}
	verbose = saved;
	if (err) {
		pr_debug("perf bpf top: cannot count the events of program %u (%s)\n",
			 prog->desc.id, prog->desc.name ?: "");
		bpf_top_prog__uncount(top, prog);
	}
	return err;
}

/*
 * --hist and --split: time the runs of @prog with fentry and fexit
 * programs on it, unless it traces a BPF program (another perf bpf top's,
 * say).  Why it cannot be is said with -v.
 */
static int bpf_top__hist(struct bpf_top *top, struct bpf_top_prog *prog)
{
	char why[256] = "";
	int err;

	if (prog->desc.type == BPF_PROG_TYPE_TRACING && bpf_top__traces_prog(prog->desc.id)) {
		pr_debug("perf bpf top: program %u traces a BPF program: run times not taken\n",
			 prog->desc.id);
		return -EINVAL;
	}
	prog->split_by = top->split ? bpf_top_prog__split_by(prog) : BPF_TOP_SPLIT_NONE;
	err = bpf_top_hist__attach(&prog->hist, prog->desc.id, prog->split_by, why, sizeof(why));
	if (err)
		pr_debug("perf bpf top: cannot take the run times of program %u (%s): %s\n",
			 prog->desc.id, prog->desc.name ?: "", why);
	return err;
}

/* The profiler's programs are this process's: not shown */
static void bpf_top__hide_own(struct bpf_top *top)
{
	struct bpf_owner_maps own = {
		.progs = perf_bpf__id_map(),
		.links = perf_bpf__id_map(),
	};
	struct bpf_top_prog *prog;
	struct hashmap_entry *cur;
	size_t bkt;

	if (own.progs && own.links)
		bpf_owner_maps__scan_pid(&own, getpid());
	if (own.progs) {
		hashmap__for_each_entry(own.progs, cur, bkt) {
			intlist__add(top->own, cur->key);
			if (hashmap__delete(top->progs, cur->key, NULL, &prog))
				bpf_top_prog__delete(top, prog);
		}
	}
	bpf_owner_map__free(own.progs);
	bpf_owner_map__free(own.links);
}

/*
 * Whether --hist or --split would time @prog: --split alone does not for
 * a program whose runs it cannot split
 */
static bool bpf_top__times(struct bpf_top *top, struct bpf_top_prog *prog)
{
	return top->hist || (top->split && bpf_top_prog__split_by(prog) != BPF_TOP_SPLIT_NONE);
}

/* Whether -e, --hist or --split would count or time @prog, which it could */
static bool bpf_top__profilable(struct bpf_top *top, struct bpf_top_prog *prog)
{
	return (top->nr_events && !prog->counts_failed) ||
	       (bpf_top__times(top, prog) && !prog->hist_failed);
}

/*
 * -e, --hist and --split: count and time the programs shown that a link,
 * an attachment without a link (bpf_top__read_attachments()) or a
 * process holds.  The profiler holds the program it is attached to: let
 * go of one nothing else holds, for the kernel to free it and for its
 * unload to be seen.  A program attached by tc over netlink, which is
 * not found, and held by no process is not counted.
 */
static void bpf_top__update_counts(struct bpf_top *top)
{
	struct bpf_owner_maps owners = {};
	struct hashmap_entry *cur;
	struct bpf_top_prog *prog;
	bool scan = false, added = false;
	size_t bkt;

	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		if (!prog->gone && prog->shown && !prog->attach.len &&
		    bpf_top__profilable(top, prog))
			scan = true;
	}
	if (scan) {
		owners.progs = perf_bpf__id_map();
		owners.links = perf_bpf__id_map();
		if (owners.progs && owners.links)
			bpf_owner_maps__scan(&owners);
	}
	hashmap__for_each_entry(top->progs, cur, bkt) {
		bool held;

		prog = cur->pvalue;
		held = prog->attach.len ||
		       (owners.progs && bpf_owners__find(owners.progs, prog->desc.id));
		if (prog->gone || !prog->shown || !held) {
			if (!prog->gone && prog->shown && !prog->unheld_said &&
			    bpf_top__profilable(top, prog)) {
				pr_debug("perf bpf top: nothing holds program %u: not counted or timed\n",
					 prog->desc.id);
				prog->unheld_said = true;
			}
			bpf_top_prog__uncount(top, prog);
			continue;
		}
		prog->unheld_said = false;
		if (bpf_side_band_done)
			continue;
		if (top->nr_events && !prog->counts && !prog->counts_failed) {
			if (bpf_top__count(top, prog))
				prog->counts_failed = true;
			else
				added = true;
		}
		if (bpf_top__times(top, prog) && !prog->hist && !prog->hist_failed) {
			if (bpf_top__hist(top, prog))
				prog->hist_failed = true;
			else
				added = true;
		}
	}
	bpf_owner_map__free(owners.progs);
	bpf_owner_map__free(owners.links);
	if (added)
		bpf_top__hide_own(top);
}

/* The event's count over every CPU while the program ran, raw */
static int bpf_top__count_read(struct evsel *evsel, struct perf_counts_values *sum)
{
	struct perf_counts_values *v;
	int idx;

	memset(sum, 0, sizeof(*sum));
	if (bpf_counter__read(evsel))
		return -1;
	perf_cpu_map__for_each_idx(idx, evsel__cpus(evsel)) {
		v = perf_counts(evsel->counts, idx, 0);
		sum->val += v->val;
		sum->ena += v->ena;
		sum->run += v->run;
	}
	return 0;
}

/*
 * The count between two raw reads, scaled by the enabled and running
 * times summed over the CPUs when the event was multiplexed; false when
 * it is not known: the event was enabled but never on the PMU while the
 * program ran.
 */
static bool bpf_top__count_diff(const struct perf_counts_values *now,
				const struct perf_counts_values *then, u64 *val)
{
	struct perf_counts_values d = {
		.val = now->val - then->val,
		.ena = now->ena - then->ena,
		.run = now->run - then->run,
	};
	bool known = !(d.ena && !d.run);
	__s8 scaled;

	perf_counts_values__scale(&d, true, &scaled);
	*val = d.val;
	return known;
}

/*
 * -e: the first read is the base; a window is whole from the second on.
 * After a read that failed, the next read only starts a window again.
 * The caller cleared win_ok.
 */
static void bpf_top__read_counts(struct bpf_top *top, struct bpf_top_prog *prog)
{
	int i;

	for (i = 0; i < top->nr_events; i++) {
		struct bpf_top_count *c = &prog->counts[i];
		struct perf_counts_values now;

		if (bpf_top__count_read(c->evsel, &now)) {
			c->resync = true;
			continue;
		}
		if (!c->based) {
			c->base = now;
			c->based = true;
		} else if (!c->resync) {
			c->win_ok = bpf_top__count_diff(&now, &c->last, &c->win);
		}
		c->resync = false;
		c->last = now;
		bpf_top__count_diff(&now, &c->base, &c->total);
	}
}

/* The inode number of perf's network namespace, 0 if unknown */
static u64 bpf_top__netns(void)
{
	static u64 ino;
	static bool tried;
	struct stat st;

	if (!tried) {
		tried = true;
		if (!stat("/proc/self/ns/net", &st))
			ino = st.st_ino;
	}
	return ino;
}

/*
 * --split: what to call the runs of @key: a cgroup's path, a device's
 * name, or NULL when it cannot be named yet (tried again next read)
 */
static char *bpf_top__split_name(struct bpf_top *top, u32 split_by, u64 key)
{
	char ifname[IF_NAMESIZE], *name;
	u32 ifindex = (u32)key;
	const char *path;

	if (key == BPF_TOP_SPLIT_OTHER)
		return strdup("(others)");
	switch (split_by) {
	case BPF_TOP_SPLIT_SOCK_CGROUP:
		if (!key)
			return strdup("(no socket)");
		fallthrough;
	case BPF_TOP_SPLIT_CGROUP:
		path = bpf_resolver__cgroup(&top->res, key);
		return path ? strdup(path) : NULL;
	case BPF_TOP_SPLIT_SKB_DEV:
	case BPF_TOP_SPLIT_XDP_DEV:
		if (!key)
			return strdup("(no device)");
		/* perf's namespace: by name; another's: by number */
		if (key >> 32 == bpf_top__netns() && if_indextoname(ifindex, ifname))
			return strdup(ifname);
		if (asprintf(&name, "ifindex %u netns %u", ifindex, (u32)(key >> 32)) < 0)
			return NULL;
		return name;
	default:
		return strdup("-");
	}
}

/* --split: the cgroup id or ifindex of @split, for -x and -j */
u64 bpf_top_split__id(const struct bpf_top_prog *prog, const struct bpf_top_split *split)
{
	switch (prog->split_by) {
	case BPF_TOP_SPLIT_SKB_DEV:
	case BPF_TOP_SPLIT_XDP_DEV:
		return (u32)split->key;
	default:
		return split->key;
	}
}

/*
 * --split: each key's runs and time over the window, once a whole one was
 * counted (@based: the hist read before was whole, and so was the splits'
 * read).  Keys are never taken out of the map: every key of the last read
 * is there again, and one new since has all its runs in the window.  What
 * the first read since the attach finds (the runs between the attach and
 * that read) is the base its totals start from, as a program's totals
 * start from its first read.  After a read that failed, the next one only
 * takes the figures the window after starts from.
 */
static void bpf_top__read_splits(struct bpf_top *top, struct bpf_top_prog *prog, bool based)
{
	struct bpf_top_split_sum *cur;
	struct bpf_top_split *v;
	int i, j = 0, nr;

	if (bpf_top_hist__read_splits(prog->hist, &cur, &nr)) {
		prog->splits_stale = true;
		return;
	}
	v = calloc(nr ?: 1, sizeof(*v));
	if (!v) {
		free(cur);
		prog->splits_stale = true;
		return;
	}
	for (i = 0; i < nr; i++) {
		struct bpf_top_split *last = NULL;

		/* both by key */
		while (j < prog->nr_splits && prog->splits[j].key < cur[i].key)
			j++;
		if (j < prog->nr_splits && prog->splits[j].key == cur[i].key)
			last = &prog->splits[j];
		v[i].key = cur[i].key;
		v[i].runs = cur[i].runs;
		v[i].timed = cur[i].timed;
		v[i].time_ns = cur[i].time_ns;
		v[i].win_runs = cur[i].runs - (last ? last->runs : 0);
		v[i].win_timed = cur[i].timed - (last ? last->timed : 0);
		v[i].win_time_ns = cur[i].time_ns - (last ? last->time_ns : 0);
		if (!prog->splits_based) {
			v[i].base_runs = cur[i].runs;
			v[i].base_time_ns = cur[i].time_ns;
		} else if (last) {
			v[i].base_runs = last->base_runs;
			v[i].base_time_ns = last->base_time_ns;
		}
		if (last && last->name) {
			v[i].name = last->name;
			last->name = NULL;
		} else {
			v[i].name = bpf_top__split_name(top, prog->split_by, cur[i].key);
		}
	}
	free(cur);
	for (i = 0; i < prog->nr_splits; i++)
		free(prog->splits[i].name);
	free(prog->splits);
	prog->splits = v;
	prog->nr_splits = nr;
	prog->splits_ok = based && prog->splits_based && !prog->splits_stale;
	prog->splits_based = true;
	prog->splits_stale = false;
}

/*
 * --hist: the run times of the window, once a whole one was timed; after
 * a read that failed, the next read starts over
 */
static void bpf_top__read_hist(struct bpf_top *top, struct bpf_top_prog *prog)
{
	struct bpf_top_hist_sum cur;
	bool based = prog->hist_based;

	if (bpf_top_hist__read(prog->hist, &cur)) {
		prog->hist_based = false;
		return;
	}
	if (prog->hist_based) {
		bpf_top_hist__diff(&cur, &prog->hist_last, &prog->hist_win);
		prog->hist_ok = true;
	}
	prog->hist_last = cur;
	prog->hist_based = true;
	if (prog->split_by != BPF_TOP_SPLIT_NONE)
		bpf_top__read_splits(top, prog, based);
}

/*
 * The window of @prog, gone, ends with its final counts: false if it has
 * none, or no baseline (there before, never read).
 */
static bool bpf_top_prog__final_window(struct bpf_top_prog *prog)
{
	if (!prog->final || (!prog->read && !prog->seen_load))
		return false;
	/* loaded since start: its counts begin at 0 */
	prog->read = true;
	if (prog->final_cnt < prog->cnt || prog->final_time < prog->time ||
	    prog->final_misses < prog->misses)
		return false;
	prog->win_cnt = prog->final_cnt - prog->cnt;
	prog->win_time = prog->final_time - prog->time;
	prog->win_misses = prog->final_misses - prog->misses;
	prog->cnt = prog->final_cnt;
	prog->time = prog->final_time;
	prog->misses = prog->final_misses;
	return true;
}

/*
 * Read every program's run time and count, shown or not (-p may show it
 * later): the window's figures are what they grew by since the last
 * read.  A program gone ends its last window with the counts of its
 * unload record.  One the kernel no longer has is gone even if its
 * unload record was lost (or came without counts); it keeps the figures
 * of its last window, which -x and -j do not repeat.
 */
static void bpf_top__read_stats(struct bpf_top *top)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;

	hashmap__for_each_entry_safe(top->progs, cur, tmp, bkt) {
		struct bpf_top_prog *prog = cur->pvalue;
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd, i;

		/* no window for the counts unless read with the stats below */
		for (i = 0; prog->counts && i < top->nr_events; i++)
			prog->counts[i].win_ok = false;
		prog->hist_ok = false;
		prog->splits_ok = false;
		if (prog->gone) {
			/* shown for the refresh after it went, then forgotten */
			if (prog->gone++ > 1) {
				hashmap__delete(top->progs, prog->desc.id, NULL, NULL);
				bpf_top_prog__delete(top, prog);
			} else {
				prog->exact = bpf_top_prog__final_window(prog);
			}
			continue;
		}
		/* nothing in this window unless read below */
		prog->win_time = 0;
		prog->win_cnt = 0;
		prog->win_misses = 0;
		fd = bpf_prog_get_fd_by_id(prog->desc.id);
		if (fd < 0) {
			/*
			 * Gone, its unload record not read yet: where one with
			 * its counts is to come, wait for it a refresh, for its
			 * last window to end with them
			 */
			if (errno != ENOENT)
				continue;
			if (top->unload_counts && !prog->missing)
				prog->missing = true;
			else
				prog->gone = 2;
			continue;
		}
		if (bpf_prog_get_info_by_fd(fd, &info, &len)) {
			close(fd);
			continue;
		}
		close(fd);
		if (!prog->read) {
			prog->read = true;
			if (!prog->seen_load) {
				prog->base_time = info.run_time_ns;
				prog->base_cnt = info.run_cnt;
				prog->base_misses = info.recursion_misses;
			}
			prog->time = prog->base_time;
			prog->cnt = prog->base_cnt;
			prog->misses = prog->base_misses;
		}
		prog->win_time = info.run_time_ns - prog->time;
		prog->win_cnt = info.run_cnt - prog->cnt;
		prog->win_misses = info.recursion_misses - prog->misses;
		prog->time = info.run_time_ns;
		prog->cnt = info.run_cnt;
		prog->misses = info.recursion_misses;
		if (prog->counts)
			bpf_top__read_counts(top, prog);
		if (prog->hist)
			bpf_top__read_hist(top, prog);
	}
}

static u64 bpf_top_prog__avg(const struct bpf_top_prog *prog)
{
	return prog->win_cnt ? prog->win_time / prog->win_cnt : 0;
}

static const struct bpf_top *bpf_top__sorting;

static int bpf_top__cmp(const void *pa, const void *pb)
{
	const struct bpf_top_prog *a = *(const struct bpf_top_prog * const *)pa;
	const struct bpf_top_prog *b = *(const struct bpf_top_prog * const *)pb;
	const struct bpf_top *top = bpf_top__sorting;
	u64 va = 0, vb = 0;
	int i, ret;

	for (i = 0; i < top->nr_sort; i++) {
		switch (top->sort[i]) {
		case BPF_TOP_KEY_RUN_TIME:
			va = a->win_time;
			vb = b->win_time;
			break;
		case BPF_TOP_KEY_RUNS:
			va = a->win_cnt;
			vb = b->win_cnt;
			break;
		case BPF_TOP_KEY_AVG:
			va = bpf_top_prog__avg(a);
			vb = bpf_top_prog__avg(b);
			break;
		case BPF_TOP_KEY_RUN_TIME_TOTAL:
			va = a->time - a->base_time;
			vb = b->time - b->base_time;
			break;
		case BPF_TOP_KEY_RUNS_TOTAL:
			va = a->cnt - a->base_cnt;
			vb = b->cnt - b->base_cnt;
			break;
		case BPF_TOP_KEY_ID:
			/* ascending, like names */
			va = b->desc.id;
			vb = a->desc.id;
			break;
		case BPF_TOP_KEY_NAME:
			ret = strcmp(a->desc.name ?: "", b->desc.name ?: "");
			if (ret)
				return ret;
			continue;
		case BPF_TOP_KEY_TYPE:
			ret = strcmp(libbpf_bpf_prog_type_str(a->desc.type) ?: "",
				     libbpf_bpf_prog_type_str(b->desc.type) ?: "");
			if (ret)
				return ret;
			continue;
		default:
			break;
		}
		if (va != vb)
			return va > vb ? -1 : 1;
	}
	return a->desc.id < b->desc.id ? -1 : a->desc.id > b->desc.id;
}

/* The programs to show, sorted; NULL if out of memory */
struct bpf_top_prog **bpf_top__sorted(struct bpf_top *top, int *nr)
{
	struct bpf_top_prog **v;
	struct hashmap_entry *cur;
	size_t bkt;
	int n = 0;

	v = calloc(hashmap__size(top->progs) + 1, sizeof(*v));
	if (!v)
		return NULL;
	hashmap__for_each_entry(top->progs, cur, bkt) {
		struct bpf_top_prog *prog = cur->pvalue;

		if (prog->shown && (prog->read || prog->gone))
			v[n++] = prog;
	}
	bpf_top__sorting = top;
	qsort(v, n, sizeof(*v), bpf_top__cmp);
	*nr = n;
	return v;
}

/* -x and -j: a line a program a window */
/* --split: a split's line has the first BPF_TOP_NR_SPLIT_OWN_COLUMNS, to run_time_ns_total */
const char * const bpf_top_columns[BPF_TOP_NR_COLUMNS + 1] = {
	"time", "prog_id", "prog_name", "prog_type", "run_cnt", "run_time_ns", "avg_ns",
	"runs_per_sec", "cpu_pct", "cpu_pct_all", "run_cnt_total", "run_time_ns_total",
	"recursion_misses", "recursion_misses_total", "verified_insns", "gone", "attach", NULL,
};

/* --hist: after the fixed ones */
const char * const bpf_top_hist_columns[BPF_TOP_NR_HIST_COLUMNS + 1] = {
	"hist_runs", "hist_time_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "hist", NULL,
};

/* --split: after the events' */
const char * const bpf_top_split_columns[BPF_TOP_NR_SPLIT_COLUMNS + 1] = {
	"row", "split", "split_id", "split_name", NULL,
};

/* --split: what drives the runs of @prog, by its type */
u32 bpf_top_prog__split_by(const struct bpf_top_prog *prog)
{
	return prog->desc.type_known ? bpf_top_hist__split_by(prog->desc.type) :
	       BPF_TOP_SPLIT_NONE;
}

/*
 * --split: what the runs of @prog are split by, for -x and -j ("none": it
 * cannot be told), NULL when they could be but are not counted
 */
const char *bpf_top_prog__split(const struct bpf_top_prog *prog)
{
	u32 split_by = bpf_top_prog__split_by(prog);

	if (split_by == BPF_TOP_SPLIT_NONE || prog->hist)
		return bpf_top__split_kind(split_by);
	return NULL;
}

/* --split: what a program's runs are split by, for people and -x/-j */
const char *bpf_top__split_kind(u32 split_by)
{
	switch (split_by) {
	case BPF_TOP_SPLIT_CGROUP:
		return "cgroup";
	case BPF_TOP_SPLIT_SOCK_CGROUP:
		return "socket_cgroup";
	case BPF_TOP_SPLIT_SKB_DEV:
	case BPF_TOP_SPLIT_XDP_DEV:
		return "device";
	default:
		return "none";
	}
}

static int bpf_top_split__cmp(const void *a, const void *b)
{
	const struct bpf_top_split *x = *(const struct bpf_top_split **)a;
	const struct bpf_top_split *y = *(const struct bpf_top_split **)b;

	if (x->win_time_ns != y->win_time_ns)
		return x->win_time_ns > y->win_time_ns ? -1 : 1;
	if (x->win_runs != y->win_runs)
		return x->win_runs > y->win_runs ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * --split: the splits of @prog with runs in the last window, the costliest
 * first; NULL (*@nr 0) when there are none or the window was not whole
 */
struct bpf_top_split **bpf_top_prog__splits(struct bpf_top_prog *prog, int *nr)
{
	struct bpf_top_split **v;
	int i, n = 0;

	*nr = 0;
	if (!prog->splits_ok || prog->gone || !prog->nr_splits)
		return NULL;
	v = calloc(prog->nr_splits, sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < prog->nr_splits; i++) {
		if (prog->splits[i].win_runs)
			v[n++] = &prog->splits[i];
	}
	qsort(v, n, sizeof(*v), bpf_top_split__cmp);
	*nr = n;
	return v;
}

/*
 * --split, the text screen and the TUI: a row under its program's for
 * what drove some of its runs in the window, with their rate, average
 * and share of a CPU, their runs and time since they were first counted,
 * and, in the last column, the cgroup or device; @split NULL: a row that
 * says the program's runs are not split
 */
void bpf_top__split_row(struct bpf_top *top, struct bpf_top_prog *prog,
			const struct bpf_top_split *split, u64 window, char *line, size_t size)
{
	double one = window && split ? 100.0 * split->win_time_ns / window : 0;
	char kind[17], type[32];
	int n;

	/* NULL: the program's runs cannot be split */
	if (!split) {
		scnprintf(line, size, "%8s %-16s what drives a run of a %s program cannot be told",
			  "", "  not split", prog->desc.type_known ?
			  perf_bpf__prog_type_name(prog->desc.type, type, sizeof(type)) : "-");
		return;
	}

	snprintf(kind, sizeof(kind), "  %s", bpf_top__split_kind(prog->split_by));
	n = scnprintf(line, size,
		      "%8s %-16.16s %-14s %10.1f %9" PRIu64 " %7.2f %7.2f %12" PRIu64
		      " %12.3f %8s",
		      "", kind, "",
		      window ? (double)split->win_runs * NSEC_PER_SEC / window : 0,
		      split->win_timed ? split->win_time_ns / split->win_timed : 0,
		      one, one / top->nr_cpus, split->runs - split->base_runs,
		      (double)(split->time_ns - split->base_time_ns) / NSEC_PER_MSEC, "-");
	if (top->hist)
		n += scnprintf(line + n, size - n, " %10s %10s %10s", "-", "-", "-");
	n += scnprintf(line + n, size - n, "%*s", 15 * top->nr_events, "");
	n += scnprintf(line + n, size - n, "  ");
	bpf_out__escape(line + n, size - n, split->name ?: "-");
}

/* The first line of the text screen and of the TUI: what was shown, what it cost */
void bpf_top__title(struct bpf_top *top, struct bpf_top_prog **v, int nr, u64 window,
		    char *line, size_t size)
{
	double all = 0;
	int i;

	for (i = 0; i < nr; i++) {
		if (!v[i]->gone || v[i]->exact)
			all += v[i]->win_time;
	}
	snprintf(line, size,
		 "perf bpf top: %d programs, %d shown; %.2fs; BPF %.2f%% of one CPU, %.2f%% of %d%s",
		 (int)hashmap__size(top->progs), nr, (double)window / NSEC_PER_SEC,
		 window ? 100.0 * all / window : 0,
		 window ? 100.0 * all / window / top->nr_cpus : 0,
		 top->nr_cpus, top->stats_were_on ? "; stats were on before" : "");
}

/* -e: a column an event, its count per run over the window */
static int bpf_top__count_heads(struct bpf_top *top, char *line, size_t size)
{
	struct evsel *evsel;
	int n = 0;

	if (!top->events)
		return 0;
	evlist__for_each_entry(top->events, evsel) {
		char name[16];

		snprintf(name, sizeof(name), "%.10s/run", evsel__name(evsel));
		n += scnprintf(line + n, size - n, " %14s", name);
	}
	return n;
}

void bpf_top__heads(struct bpf_top *top, char *line, size_t size)
{
	int n;

	n = scnprintf(line, size, "%8s %-16s %-14s %10s %9s %7s %7s %12s %12s %8s",
		      "ID", "NAME", "TYPE", "RUNS/s", "AVG ns", "%CPU", "%ALL", "RUNS", "TIME ms",
		      "MISSED");
	if (top->hist)
		n += scnprintf(line + n, size - n, " %10s %10s %10s", "P50 ns", "P99 ns", "MAX ns");
	n += bpf_top__count_heads(top, line + n, size - n);
	scnprintf(line + n, size - n, "  %s", "ATTACH");
}

static int bpf_top__count_row(struct bpf_top *top, struct bpf_top_prog *prog, char *line,
			      size_t size)
{
	int i, n = 0;

	for (i = 0; i < top->nr_events; i++) {
		if (prog->counts && prog->counts[i].win_ok && prog->win_cnt && !prog->gone)
			n += scnprintf(line + n, size - n, " %14.1f",
				       (double)prog->counts[i].win / prog->win_cnt);
		else
			n += scnprintf(line + n, size - n, " %14s", "-");
	}
	return n;
}

void bpf_top__row(struct bpf_top *top, struct bpf_top_prog *prog, u64 window,
		  char *line, size_t size)
{
	double one = window ? 100.0 * prog->win_time / window : 0;
	char type[16], name[17];
	int n;

	/* the name cut to its column, not within an escape */
	bpf_out__escape(name, sizeof(name),
			prog->desc.name && *prog->desc.name ? prog->desc.name : "-");
	n = scnprintf(line, size,
		      "%8u %-16.16s %-14.14s %10.1f %9" PRIu64 " %7.2f %7.2f %12" PRIu64
		      " %12.3f %8" PRIu64,
		      prog->desc.id, name,
		      prog->desc.type_known ?
		      perf_bpf__prog_type_name(prog->desc.type, type, sizeof(type)) : "-",
		      window ? (double)prog->win_cnt * NSEC_PER_SEC / window : 0,
		      bpf_top_prog__avg(prog), one, one / top->nr_cpus,
		      prog->cnt - prog->base_cnt,
		      (double)(prog->time - prog->base_time) / NSEC_PER_MSEC,
		      prog->misses - prog->base_misses);
	if (top->hist && prog->hist_ok && prog->hist_win.runs && !prog->gone)
		n += scnprintf(line + n, size - n, " %10" PRIu64 " %10" PRIu64 " %10" PRIu64,
			       bpf_top_hist__percentile(&prog->hist_win, 50),
			       bpf_top_hist__percentile(&prog->hist_win, 99),
			       prog->hist_win.max_ns);
	else if (top->hist)
		n += scnprintf(line + n, size - n, " %10s %10s %10s", "-", "-", "-");
	n += bpf_top__count_row(top, prog, line + n, size - n);
	n += scnprintf(line + n, size - n, "  %s", prog->gone ? "(gone) " : "");
	bpf_out__escape(line + n, size - n, prog->attach.len ? prog->attach.buf : "-");
}

/*
 * --hist: @prog's last window as runqlat draws its histograms, a line a
 * power of two bucket of ns from 0 to the last with runs, its count and
 * a bar of up to 40 stars, under a line of its percentiles
 */
void bpf_top__hist_text(const struct bpf_top_prog *prog, char *buf, size_t size)
{
	const struct bpf_top_hist_sum *w = &prog->hist_win;
	const char *name = prog->desc.name && *prog->desc.name ? prog->desc.name : "-";
	int i, n, last = -1;
	u64 peak = 0, from, to;
	char bar[41];

	if (!prog->hist) {
		scnprintf(buf, size, "program %u %s: its runs are not timed (-v says why)",
			  prog->desc.id, name);
		return;
	}
	if (!prog->hist_ok || !w->runs) {
		scnprintf(buf, size, "program %u %s: no runs timed in the last window",
			  prog->desc.id, name);
		return;
	}
	for (i = 0; i < BPF_TOP_RUNS_BUCKETS; i++) {
		if (w->buckets[i])
			last = i;
		peak = max(peak, w->buckets[i]);
	}
	n = scnprintf(buf, size,
		      "program %u %s: %" PRIu64 " runs timed in the last window\n"
		      "p50 %" PRIu64 " ns, p90 %" PRIu64 " ns, p99 %" PRIu64 " ns, max %" PRIu64
		      " ns\n\n%24s : %-8s %s\n", prog->desc.id, name, w->runs,
		      bpf_top_hist__percentile(w, 50), bpf_top_hist__percentile(w, 90),
		      bpf_top_hist__percentile(w, 99), w->max_ns, "nsecs", "count",
		      "distribution");
	for (i = 0; i <= last; i++) {
		int stars = w->buckets[i] * 40 / peak;

		memset(bar, '*', stars);
		bar[stars] = '\0';
		bpf_top_hist__bucket(i, &from, &to);
		n += scnprintf(buf + n, size - n, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64
			       " |%-40s|\n", from, to, w->buckets[i], bar);
	}
}

const char *bpf_top__none(struct bpf_top *top)
{
	bool filtered = top->ids || top->types || top->name_glob || top->pids;

	return filtered ? "(no BPF programs match)" : "(no BPF programs loaded)";
}

/*
 * Look for what changed, then read the figures: the window ends when
 * they are read.  Returns the time of the read; top->window is the
 * length of the window.
 */
u64 bpf_top__refresh(struct bpf_top *top)
{
	u64 now;

	if (top->rescan) {
		top->rescan = false;
		bpf_top__scan(top, true);
	}
	if (top->pids)
		bpf_top__read_owners(top);
	/*
	 * With -e, the links are what lets a program go: read them every
	 * refresh, as a link may go without a record (only its first detach
	 * writes one) or change programs (BPF_LINK_UPDATE writes none)
	 */
	if (top->links_stale || top->links_always || top->nr_events || top->hist || top->split)
		bpf_top__read_links(top);
	if (top->nr_events || top->hist || top->split)
		bpf_top__update_counts(top);
	bpf_top__follow_gone(top);
	now = bpf_side_band__now_ns();
	top->window = now - top->last;
	bpf_top__read_stats(top);
	top->last = now;
	return now;
}

/*
 * The one loop of perf bpf top, for text and for the TUI: until a
 * signal, the end of the refreshes asked for or @ops says so, wait
 * with @ops (which reads the side-band records meanwhile) and, when it
 * says it is time, read the figures for @ops to show them.  Returns
 * top->err.
 */
int bpf_top__loop(struct bpf_top *top, const struct bpf_top_ops *ops, void *priv)
{
	u64 period = top->interval ? (u64)top->interval * NSEC_PER_MSEC :
			 (u64)(top->delay * NSEC_PER_SEC);
	u64 next, now;
	int windows = 0;

	evlist__enable(top->evlist);
	bpf_top__scan(top, false);
	/* the first window starts once every program there has its baseline */
	top->start = bpf_top__refresh(top);
	next = top->start + period;
	if (ops->begin && ops->begin(top, priv))
		goto out;

	while (!bpf_side_band_done && !top->err) {
		switch (ops->wait(top, priv, next)) {
		case BPF_TOP_WAIT_AGAIN:
			continue;
		case BPF_TOP_WAIT_QUIT:
			goto out;
		case BPF_TOP_WAIT_REFRESH:
		default:
			break;
		}
		now = bpf_top__refresh(top);
		ops->show(top, priv, now);
		next += period;
		/* stalled past a window or more: the next one starts now */
		if (next <= now)
			next = now + period;
		if (top->interval_count && ++windows >= top->interval_count)
			break;
	}
out:
	if (ops->end)
		ops->end(top, priv);
	evlist__disable(top->evlist);
	return top->err;
}

int bpf_top__parse_types(struct bpf_top *top)
{
	char *s, *tok, *save = NULL;
	int t;

	s = strdup(top->types_str);
	if (!s)
		return -ENOMEM;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (t = 0; t < 64; t++) {
			const char *name = libbpf_bpf_prog_type_str(t);

			if (name && !strcmp(name, tok))
				break;
		}
		if (t == 64) {
			pr_err("perf bpf top: --prog-type: unknown program type '%s'\n"
			       "(libbpf's names: tracepoint, kprobe, xdp, ...)\n", tok);
			free(s);
			return -EINVAL;
		}
		top->types |= 1ULL << t;
	}
	free(s);
	return 0;
}

int bpf_top__parse_sort(struct bpf_top *top)
{
	char *s, *tok, *save = NULL;
	int k;

	s = strdup(top->sort_str);
	if (!s)
		return -ENOMEM;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < BPF_TOP_KEY_MAX; k++) {
			if (!strcmp(bpf_top_keys[k], tok))
				break;
		}
		if (k == BPF_TOP_KEY_MAX) {
			pr_err("perf bpf top: -s: unknown sort key '%s'\n"
			       "(run_time, runs, avg, run_time_total, runs_total, id, name, type)\n",
			       tok);
			free(s);
			return -EINVAL;
		}
		if (top->nr_sort == BPF_TOP_KEY_MAX) {
			pr_err("perf bpf top: -s: more than %d sort keys\n", BPF_TOP_KEY_MAX);
			free(s);
			return -EINVAL;
		}
		top->sort[top->nr_sort++] = k;
	}
	free(s);
	if (!top->nr_sort) {
		pr_err("perf bpf top: -s takes sort keys, not '%s'\n", top->sort_str);
		return -EINVAL;
	}
	return 0;
}

/*
 * -e: the events, each opened once on every online CPU here to say at
 * once what cannot be counted, then once a program counted; and their
 * keys for -x and -j
 */
int bpf_top__parse_events(struct bpf_top *top)
{
	struct target target = { .system_wide = true, .uid = UINT_MAX, };
	struct parse_events_error perr;
	struct evsel *evsel, *pos;
	char msg[BUFSIZ];
	int err;

	top->events = evlist__new();
	top->cpus = perf_cpu_map__new_online_cpus();
	top->own = intlist__new(NULL);
	if (!top->events || !top->cpus || !top->own)
		return -ENOMEM;
	parse_events_error__init(&perr);
	err = parse_events(top->events, top->event_str, &perr);
	if (err)
		parse_events_error__print(&perr, top->event_str);
	parse_events_error__exit(&perr);
	if (err)
		return -1;
	evlist__for_each_entry(top->events, evsel) {
		struct perf_event_attr *attr = &evsel->core.attr;

		if (evsel__is_tool(evsel) || !evsel__is_group_leader(evsel) ||
		    evsel->core.nr_members > 1) {
			pr_err("perf bpf top: -e takes events the kernel counts, not in groups: not %s\n",
			       evsel__name(evsel));
			return -1;
		}
		/* BPF programs run in the kernel */
		if (attr->exclude_kernel) {
			pr_err("perf bpf top: -e %s counts nothing: BPF programs run in the kernel\n",
			       evsel__name(evsel));
			return -1;
		}
		evlist__for_each_entry(top->events, pos) {
			if (pos == evsel)
				break;
			if (!strcmp(evsel__name(pos), evsel__name(evsel))) {
				pr_err("perf bpf top: -e names %s twice\n", evsel__name(evsel));
				return -1;
			}
		}
		/* counting from the open; BPF cannot read inherited counts */
		attr->disabled = 0;
		attr->inherit = 0;
		err = evsel__open_per_cpu(evsel, top->cpus, -1);
		if (err) {
			evsel__open_strerror(evsel, &target, -err, msg, sizeof(msg));
			pr_err("perf bpf top: cannot count %s: %s\n", evsel__name(evsel), msg);
			return -1;
		}
		evsel__close(evsel);
		top->nr_events++;
	}
#ifndef HAVE_BPF_SKEL
	pr_err("perf bpf top: -e needs perf built with BPF skeletons (BUILD_BPF_SKEL=1)\n");
	return -1;
#endif
	return 0;
}

/*
 * -e, -x and -j: for each event E, "E" over the window and "E_per_run",
 * once a whole window was counted; "E_total" since counting began.
 * Nothing for a program not counted.
 */
static void bpf_top__print_counts(struct bpf_top *top, struct bpf_top_prog *prog)
{
	struct bpf_out *out = &top->out;
	const char **key = top->columns + ARRAY_SIZE(bpf_top_columns) - 1 +
			   (top->hist ? BPF_TOP_NR_HIST_COLUMNS : 0);
	int i;

	for (i = 0; i < top->nr_events; i++, key += 3) {
		struct bpf_top_count *c = prog->counts ? &prog->counts[i] : NULL;
		bool whole = c && c->win_ok && !prog->gone;

		if (whole)
			bpf_out__u64(out, key[0], c->win);
		else
			bpf_out__none(out, key[0]);
		if (whole && prog->win_cnt) {
			bpf_out__key(out, key[1]);
			bpf_out__printf(out, "%.1f", (double)c->win / prog->win_cnt);
		} else {
			bpf_out__none(out, key[1]);
		}
		if (c && c->based)
			bpf_out__u64(out, key[2], c->total);
		else
			bpf_out__none(out, key[2]);
	}
}

/*
 * --hist, -x and -j: the window's timed runs, percentiles and longest,
 * and the histogram, as runqlat prints it: from the first bucket to the
 * last one with runs, each [from, to, count] (-j) or from-to:count (-x).
 * Empty where the window was not timed whole.
 */
static void bpf_top__print_hist(struct bpf_top *top, struct bpf_top_prog *prog)
{
	const struct bpf_top_hist_sum *w = &prog->hist_win;
	struct bpf_out *out = &top->out;
	bool whole = prog->hist_ok && !prog->gone;
	int i, last = -1;
	u64 from, to;

	if (!whole) {
		for (i = 0; i < BPF_TOP_NR_HIST_COLUMNS; i++)
			bpf_out__none(out, bpf_top_hist_columns[i]);
		return;
	}
	bpf_out__u64(out, "hist_runs", w->runs);
	bpf_out__u64(out, "hist_time_ns", w->time_ns);
	bpf_out__u64(out, "p50_ns", bpf_top_hist__percentile(w, 50));
	bpf_out__u64(out, "p90_ns", bpf_top_hist__percentile(w, 90));
	bpf_out__u64(out, "p99_ns", bpf_top_hist__percentile(w, 99));
	bpf_out__u64(out, "max_ns", w->max_ns);
	for (i = 0; i < BPF_TOP_RUNS_BUCKETS; i++) {
		if (w->buckets[i])
			last = i;
	}
	bpf_out__key(out, "hist");
	bpf_out__raw(out, out->format == BPF_FORMAT_JSON ? "[" : "");
	for (i = 0; i <= last; i++) {
		bpf_top_hist__bucket(i, &from, &to);
		if (out->format == BPF_FORMAT_JSON)
			bpf_out__printf(out, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
					i ? "," : "", from, to, w->buckets[i]);
		else
			bpf_out__printf(out, "%s%" PRIu64 "-%" PRIu64 ":%" PRIu64,
					i ? " " : "", from, to, w->buckets[i]);
	}
	bpf_out__raw(out, out->format == BPF_FORMAT_JSON ? "]" : "");
}

/* -x and -j: the columns of @prog and its window that a split row repeats */
static void bpf_top__print_prog_head(struct bpf_top *top, struct bpf_top_prog *prog, u64 since)
{
	struct bpf_out *out = &top->out;
	char buf[32];

	bpf_out__key(out, "time");
	bpf_out__printf(out, "%" PRIu64 ".%06" PRIu64, since / NSEC_PER_SEC,
			(since % NSEC_PER_SEC) / NSEC_PER_USEC);
	bpf_out__u64(out, "prog_id", prog->desc.id);
	bpf_out__str(out, "prog_name", prog->desc.name ?: "");
	bpf_out__str(out, "prog_type", !prog->desc.type_known ? "-" :
		     perf_bpf__prog_type_name(prog->desc.type, buf, sizeof(buf)));
}

/*
 * -x and -j: the columns a program's line and its splits' share, from
 * run_cnt to run_time_ns_total: @runs in @time over @window (an average
 * over @timed runs), @runs_total in @time_total since first counted
 */
static void bpf_top__print_runs(struct bpf_top *top, u64 runs, u64 time, u64 timed, u64 window,
				u64 runs_total, u64 time_total)
{
	struct bpf_out *out = &top->out;
	double one = window ? 100.0 * time / window : 0;

	bpf_out__u64(out, "run_cnt", runs);
	bpf_out__u64(out, "run_time_ns", time);
	bpf_out__u64(out, "avg_ns", timed ? time / timed : 0);
	bpf_out__key(out, "runs_per_sec");
	bpf_out__printf(out, "%.1f", window ? (double)runs * NSEC_PER_SEC / window : 0);
	bpf_out__key(out, "cpu_pct");
	bpf_out__printf(out, "%.3f", one);
	bpf_out__key(out, "cpu_pct_all");
	bpf_out__printf(out, "%.3f", one / top->nr_cpus);
	bpf_out__u64(out, "run_cnt_total", runs_total);
	bpf_out__u64(out, "run_time_ns_total", time_total);
}

/*
 * --split, -x and -j: after the line of @prog ("row": "prog", with what
 * its runs are split by, if they are counted), a line a cgroup or device
 * that drove some of its runs in the window ("row": "split"): their
 * count, time, average, rate and share of a CPU over the window, their
 * count and time since first counted, and what drove them: "split_id"
 * the cgroup id or ifindex, "split_name" its path or name
 */
static void bpf_top__print_splits(struct bpf_top *top, struct bpf_top_prog *prog, u64 since,
				  u64 window)
{
	const size_t nr_before = ARRAY_SIZE(bpf_top_columns) - 1 +
				 (top->hist ? BPF_TOP_NR_HIST_COLUMNS : 0) + 3 * top->nr_events;
	const char * const *keys = top->columns ?: bpf_top_columns;
	const char *kind = bpf_top__split_kind(prog->split_by);
	struct bpf_out *out = &top->out;
	struct bpf_top_split **v;
	size_t k;
	int i, nr;

	v = bpf_top_prog__splits(prog, &nr);
	for (i = 0; i < nr; i++) {
		const struct bpf_top_split *split = v[i];

		bpf_out__begin(out);
		bpf_top__print_prog_head(top, prog, since);
		bpf_top__print_runs(top, split->win_runs, split->win_time_ns, split->win_timed,
				    window, split->runs - split->base_runs,
				    split->time_ns - split->base_time_ns);
		/* nothing of the program's own, of --hist's or of the events' */
		for (k = BPF_TOP_NR_SPLIT_OWN_COLUMNS; k < nr_before; k++)
			bpf_out__none(out, keys[k]);
		bpf_out__str(out, "row", "split");
		bpf_out__str(out, "split", kind);
		if (split->key == BPF_TOP_SPLIT_OTHER)
			bpf_out__none(out, "split_id");
		else
			bpf_out__u64(out, "split_id", bpf_top_split__id(prog, split));
		bpf_out__str(out, "split_name", split->name ?: "-");
		bpf_out__end(out);
	}
	free(v);
}

/* -x and -j: a line a program (and with --split, its splits') of window @window ending at @now */
void bpf_top__print_interval(struct bpf_top *top, struct bpf_top_prog **v, int nr,
			     u64 now, u64 window)
{
	struct bpf_out *out = &top->out;
	u64 since = now - top->start;
	int i;

	for (i = 0; i < nr; i++) {
		struct bpf_top_prog *prog = v[i];
		/*
		 * gone without its unload record's counts: nothing read this
		 * window, totals as they were
		 */
		bool dead = prog->gone && !prog->exact;
		u64 win_cnt = dead ? 0 : prog->win_cnt;
		u64 win_time = dead ? 0 : prog->win_time;

		bpf_out__begin(out);
		bpf_top__print_prog_head(top, prog, since);
		bpf_top__print_runs(top, win_cnt, win_time, win_cnt, window,
				    prog->cnt - prog->base_cnt, prog->time - prog->base_time);
		bpf_out__u64(out, "recursion_misses", dead ? 0 : prog->win_misses);
		bpf_out__u64(out, "recursion_misses_total", prog->misses - prog->base_misses);
		bpf_out__u64(out, "verified_insns", prog->desc.verified_insns);
		bpf_out__key(out, "gone");
		bpf_out__raw(out, prog->gone ? "true" : "false");
		bpf_out__str(out, "attach", prog->attach.buf);
		if (top->hist)
			bpf_top__print_hist(top, prog);
		bpf_top__print_counts(top, prog);
		if (top->split) {
			const char *split = bpf_top_prog__split(prog);

			bpf_out__str(out, "row", "prog");
			if (split)
				bpf_out__str(out, "split", split);
			else
				bpf_out__none(out, "split");
			bpf_out__none(out, "split_id");
			bpf_out__none(out, "split_name");
		}
		bpf_out__end(out);
		if (top->split)
			bpf_top__print_splits(top, prog, since, window);
	}
}

/* -x and -j: the fixed columns, --hist's, three an event of -e, then --split's */
int bpf_top__setup_columns(struct bpf_top *top)
{
	const size_t nr_fixed = ARRAY_SIZE(bpf_top_columns) - 1;
	const size_t nr_hist = top->hist ? ARRAY_SIZE(bpf_top_hist_columns) - 1 : 0;
	const size_t nr_split = top->split ? ARRAY_SIZE(bpf_top_split_columns) - 1 : 0;
	struct evsel *evsel;
	size_t i, j;

	if ((top->hist || top->split) && !top->own) {
		top->own = intlist__new(NULL);
		if (!top->own)
			return -ENOMEM;
	}
	if (!nr_hist && !top->nr_events && !nr_split)
		return 0;
	top->columns = calloc(nr_fixed + nr_hist + 3 * top->nr_events + nr_split + 1,
			      sizeof(*top->columns));
	if (!top->columns)
		return -ENOMEM;
	memcpy(top->columns, bpf_top_columns, nr_fixed * sizeof(*top->columns));
	i = nr_fixed;
	for (j = 0; j < nr_hist; j++) {
		top->columns[i] = strdup(bpf_top_hist_columns[j]);
		if (!top->columns[i++])
			return -ENOMEM;
	}
	if (top->events) {
		evlist__for_each_entry(top->events, evsel) {
			const char *name = evsel__name(evsel);

			if (asprintf((char **)&top->columns[i++], "%s", name) < 0 ||
			    asprintf((char **)&top->columns[i++], "%s_per_run", name) < 0 ||
			    asprintf((char **)&top->columns[i++], "%s_total", name) < 0) {
				top->columns[i - 1] = NULL;
				return -ENOMEM;
			}
		}
	}
	for (j = 0; j < nr_split; j++) {
		top->columns[i] = strdup(bpf_top_split_columns[j]);
		if (!top->columns[i++])
			return -ENOMEM;
	}
	return 0;
}

void bpf_top__exit(struct bpf_top *top)
{
	const size_t nr_fixed = ARRAY_SIZE(bpf_top_columns) - 1;
	struct hashmap_entry *cur;
	size_t bkt, i;

	evlist__delete(top->evlist);
	if (top->progs) {
		hashmap__for_each_entry(top->progs, cur, bkt)
			bpf_top_prog__delete(top, cur->pvalue);
		hashmap__free(top->progs);
	}
	intlist__delete(top->ids);
	intlist__delete(top->pids);
	intlist__delete(top->own);
	for (i = 0; i < ARRAY_SIZE(top->ksyms); i++)
		free(top->ksyms[i]);
	if (top->gone) {
		hashmap__for_each_entry(top->gone, cur, bkt) {
			struct bpf_top_gone *g = cur->pvalue;

			free(g->name);
			free(g);
		}
		hashmap__free(top->gone);
	}
	evlist__delete(top->events);
	perf_cpu_map__put(top->cpus);
	if (top->columns) {
		for (i = nr_fixed; top->columns[i]; i++)
			free((char *)top->columns[i]);
		free(top->columns);
	}
	bpf_resolver__exit(&top->res);
	if (top->stats_fd >= 0)
		close(top->stats_fd);
	bpf_out__exit(&top->out);
}
