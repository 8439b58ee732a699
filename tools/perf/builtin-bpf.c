// SPDX-License-Identifier: GPL-2.0
/*
 * perf bpf: the life of BPF programs and links, as the kernel reports it.
 *
 * perf bpf events streams the PERF_RECORD_BPF_EVENT records: programs
 * loaded and unloaded, links attached and detached.  It opens one dummy
 * software event per CPU asking for the BPF, KSYMBOL, COMM and task
 * side-band records, with time (CLOCK_MONOTONIC), CPU and pid/tid of the
 * task that caused each record.  Each CPU has its own ring, so records
 * are read in passes over all rings, queued in ordered_events and
 * delivered in time order once they are older than the start of the
 * pass by BPF_EVENTS_SLACK: a record stamped earlier than that has been
 * in its ring for that long unless its writer stalled between taking
 * the time and publishing the record.
 *
 * What a record does not carry (names, types, attach targets) is asked
 * of the kernel with BPF_OBJ_GET_INFO_BY_FD when the pass that read the
 * record from its ring ends, unless the pass read the program's unload
 * too, and kept until it is delivered.  By then the object may
 * be gone: the program name is then taken from the KSYMBOL record the
 * kernel writes just before the program record, and everything learned
 * (from those, from the objects there at start, from earlier records) is
 * kept until the object's unload or detach record, so that those and the
 * link records carry the names too.  Comms come from COMM and FORK
 * records, or from /proc for tasks that were there before.
 *
 * Looking an object up holds a reference to it for a moment: if its
 * owner lets it go meanwhile, the unload or detach happens when this
 * process lets go, and the kernel writes the record as this process's.
 *
 * perf bpf list shows the programs loaded now, with their links and
 * attach targets, the processes holding them (found as bpftool does,
 * through the fds they hold), run time and count when BPF stats are on,
 * and the memory of their maps.
 *
 * perf bpf top shows what each program costs as it runs: its state is
 * util/bpf-top.c's, its TUI ui/browsers/bpf-top.c's.  Programs and links
 * are described by util/bpf-desc.c, printed with util/bpf-out.c, their
 * records read with util/bpf-side-band.c.
 *
 * Looking BPF objects up by id needs CAP_SYS_ADMIN.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/time64.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <subcmd/parse-options.h>
#include <api/fs/fs.h>

#include "builtin.h"
#include "util/bpf-desc.h"
#include "util/bpf-event.h"
#include "util/bpf-link-types.h"
#include "util/bpf-out.h"
#include "util/bpf-side-band.h"
#include "util/bpf-top.h"
#include "util/bpf-utils.h"
#include "util/cap.h"
#include "util/cpumap.h"
#include "util/data.h"
#include "util/debug.h"
#include "util/env.h"
#include "util/event.h"
#include "util/evlist.h"
#include "util/hashmap.h"
#include "util/intlist.h"
#include "util/machine.h"
#include "util/ordered-events.h"
#include "util/session.h"
#include "util/target.h"
#include "util/term.h"
#include "util/thread.h"
#include "util/tool.h"
#ifdef HAVE_SLANG_SUPPORT
#include "ui/browsers/bpf-top.h"
#include "ui/ui.h"
#endif

/* how long a record waits in the queue for older ones from other CPUs */
#define BPF_EVENTS_SLACK	(NSEC_PER_SEC / 2)
/* how often the rings are read, at most */
#define BPF_EVENTS_BATCH	(NSEC_PER_SEC / 20)
/* how often what is printed is flushed while records keep coming */
#define BPF_EVENTS_FLUSH	(NSEC_PER_SEC / 4)
static volatile sig_atomic_t workload_exec_errno;

/* A load, unload or attach record read in the current pass */
struct bpf_events_read {
	u32			id;		/* the program's or the link's */
	u32			prog_id;	/* a link's program */
	bool			link;
	bool			end;		/* an unload */
};

struct bpf_events {
	struct bpf_out		out;
	struct bpf_resolver	res;
	struct evlist		*evlist;
	struct ordered_events	oe;
	struct machine		machine;
	struct thread		*last_thread;	/* of the last record shown */
	struct hashmap		*progs;		/* id -> struct bpf_prog_desc * */
	struct hashmap		*links;		/* id -> struct bpf_link_desc * */
	struct hashmap		*ksyms;		/* task -> struct bpf_ksyms * */
	/* what the kernel said when load and attach records were read */
	struct hashmap		*read_progs;	/* id -> struct bpf_prog_desc *, NULL: gone */
	struct hashmap		*read_links;	/* id -> struct bpf_link_desc * */
	struct bpf_events_read	*reads;		/* the records read this pass */
	size_t			nr_reads;
	size_t			max_reads;
	struct intlist		*pids;		/* -p: these processes only */
	struct intlist		*follow;	/* a workload and its descendants */
	/* -i: the records of a file, which has the evlist */
	struct perf_session	*session;
	struct perf_tool	tool;
	struct perf_data	data;		/* the session's, as long as it lives */
	const char		*input_name;
	const char		*pid_str;
	const char		*type_str;
	const char		*name_glob;
	const char		*output_name;
	double			duration;
	unsigned int		mmap_pages;
	bool			system_wide;
	bool			json;
	bool			show_progs;
	bool			show_links;
	u64			counts[PERF_BPF_EVENT_MAX + 1];	/* + unknown */
	u64			lost;
	u64			unparsed;	/* records perf could not parse */
	int			err;
};

/* perf bpf events */

static struct bpf_prog_desc *bpf_events__prog(struct bpf_events *ev, u32 id)
{
	struct bpf_prog_desc *prog;

	if (hashmap__find(ev->progs, id, &prog))
		return prog;
	prog = zalloc(sizeof(*prog));
	if (!prog)
		return NULL;
	prog->id = id;
	if (hashmap__add(ev->progs, id, prog)) {
		free(prog);
		return NULL;
	}
	return prog;
}

static void bpf_events__forget_prog(struct bpf_events *ev, u32 id)
{
	struct bpf_prog_desc *prog = NULL;

	hashmap__delete(ev->progs, id, NULL, &prog);
	bpf_prog_desc__delete(prog);
	/* and what was learned (NULL: gone) as a record of it was read, if not delivered */
	prog = NULL;
	hashmap__delete(ev->read_progs, id, NULL, &prog);
	bpf_prog_desc__delete(prog);
}

static struct bpf_link_desc *bpf_events__link(struct bpf_events *ev, u32 id)
{
	struct bpf_link_desc *link;

	if (hashmap__find(ev->links, id, &link))
		return link;
	link = zalloc(sizeof(*link));
	if (!link)
		return NULL;
	link->id = id;
	if (hashmap__add(ev->links, id, link)) {
		free(link);
		return NULL;
	}
	return link;
}

static void bpf_events__forget_link(struct bpf_events *ev, u32 id)
{
	struct bpf_link_desc *link = NULL;

	hashmap__delete(ev->links, id, NULL, &link);
	bpf_link_desc__delete(link);
	/* and what the kernel said when its attach was read, if not delivered */
	link = NULL;
	hashmap__delete(ev->read_links, id, NULL, &link);
	bpf_link_desc__delete(link);
}

/*
 * -i: learn about a program from the bpf_prog_info perf record saved of
 * it (HEADER_BPF_PROG_INFO), the whole name from its KSYMBOL record where
 * bpf_prog_info's is cut; -ENODATA if none was saved (it went too soon)
 */
static int bpf_events__learn_saved_prog(struct bpf_events *ev, struct bpf_prog_desc *prog,
					const char *ksym_name)
{
	struct bpf_prog_info_node *node;
	const struct bpf_prog_info *info;
	char *name;

	node = perf_env__find_bpf_prog_info(&ev->session->header.env, prog->id);
	if (!node)
		return -ENODATA;
	info = &node->info_linear->info;
	/* bpf_prog_info's name cut: the whole one, from a KSYMBOL record */
	if (ksym_name && strlen(info->name) == BPF_OBJ_NAME_LEN - 1 &&
	    strstarts(ksym_name, info->name))
		name = strdup(ksym_name);
	else if (prog->name && strlen(info->name) == BPF_OBJ_NAME_LEN - 1 &&
		 strstarts(prog->name, info->name))
		name = strdup(prog->name);
	else
		name = strdup(info->name);
	if (!name)
		return -ENOMEM;
	free(prog->name);
	prog->name = name;
	prog->type = info->type;
	prog->type_known = true;
	prog->verified_insns = info->verified_insns;
	memcpy(prog->tag, info->tag, BPF_TAG_SIZE);
	return 0;
}

/*
 * Learn about a program from the kernel, if it is still there (from the
 * file with -i); 0 or -errno
 */
static int bpf_events__learn_prog(struct bpf_events *ev, struct bpf_prog_desc *prog,
				  const char *ksym_name)
{
	int fd;
	int err;

	if (ev->session)
		return bpf_events__learn_saved_prog(ev, prog, ksym_name);
	fd = bpf_prog_get_fd_by_id(prog->id);
	if (fd < 0)
		return -errno;
	err = bpf_prog_desc__fill(prog, fd, ksym_name);
	close(fd);
	if (err)
		pr_debug("perf bpf: program %u: %s\n", prog->id, strerror(-err));
	return err;
}

static int bpf_events__learn_link(struct bpf_events *ev, struct bpf_link_desc *link)
{
	int fd;
	int err;

	/* -i: a file holds no link's info: what the records say */
	if (ev->session)
		return -ENODATA;
	fd = perf_bpf__fd_by_id(bpf_link_get_fd_by_id, link->id);
	if (fd < 0)
		return -errno;
	err = bpf_link_desc__fill(link, fd, &ev->res);
	close(fd);
	if (err)
		pr_debug("perf bpf: link %u: %s\n", link->id, strerror(-err));
	return err;
}

/* What is loaded and attached at start, so that its unload and detach have names */
static void bpf_events__snapshot(struct bpf_events *ev)
{
	struct bpf_prog_desc *prog;
	struct bpf_link_desc *link;
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		prog = bpf_events__prog(ev, id);
		if (prog && bpf_events__learn_prog(ev, prog, NULL))
			bpf_events__forget_prog(ev, id);
	}
	id = 0;
	while (ev->show_links && !bpf_link_get_next_id(id, &id)) {
		link = bpf_events__link(ev, id);
		if (link && bpf_events__learn_link(ev, link))
			bpf_events__forget_link(ev, id);
	}
}

/* The comm of the task that caused a record */
static const char *bpf_events__comm(struct bpf_events *ev, struct perf_sample *sample,
				    char *buf, size_t size)
{
	struct thread *thread = ev->last_thread;

	if (sample->pid == 0 && sample->tid == 0)
		return "swapper";
	/* records come in runs from one task: look it up once a run */
	if (!thread || thread__pid(thread) != (pid_t)sample->pid ||
	    thread__tid(thread) != (pid_t)sample->tid) {
		thread__zput(ev->last_thread);
		thread = machine__findnew_thread(&ev->machine, sample->pid, sample->tid);
		if (!thread)
			return "";
		/* -i: this machine's /proc is not the file's */
		if (!thread__comm_set(thread) && !ev->session)
			thread__set_comm_from_proc(thread);
		ev->last_thread = thread;
	}
	strlcpy(buf, thread__comm_str(thread), size);
	return buf;
}

/*
 * Whether a record passes -p, or a command's filter.  The last reference
 * to a program or link is often dropped by another task than its owner's:
 * a kworker or an RCU callback, whoever removes its device or netns, or
 * this process, which holds one for a moment when it looks the object up.
 * The kernel writes the unload or detach record as that task's.  Such a
 * record (@end) passes if the object's earlier ones did.
 */
static bool bpf_events__wanted_task(struct bpf_events *ev, struct perf_sample *sample,
				    bool *wanted, bool end)
{
	bool match;

	if (ev->pids)
		match = intlist__has_entry(ev->pids, sample->pid);
	else if (ev->follow)
		match = intlist__has_entry(ev->follow, sample->pid);
	else
		return true;
	if (match)
		*wanted = true;
	return match || (end && *wanted);
}

/* As "%*d" prints it */
static void bpf_events__print_int(struct bpf_out *out, int val, int width)
{
	if (val < 0)
		bpf_out__printf(out, "%*d", width, val);
	else
		bpf_out__num(out, val, width);
}

static void bpf_events__print_start(struct bpf_events *ev, struct perf_sample *sample,
				    const char *event)
{
	struct bpf_out *out = &ev->out;
	char buf[64], text[BPF_OUT_TEXT_SIZE(64)];
	const char *comm = bpf_events__comm(ev, sample, buf, sizeof(buf));

	bpf_out__begin(out);
	if (out->format == BPF_FORMAT_TEXT) {
		/* as "%6llu.%06llu [%03u] %16s %6d/%-6d %-12s" prints it */
		bpf_out__num(out, sample->time / NSEC_PER_SEC, 6);
		bpf_out__raw(out, ".");
		bpf_out__num0(out, (sample->time % NSEC_PER_SEC) / NSEC_PER_USEC, 6);
		bpf_out__raw(out, " [");
		bpf_out__num0(out, sample->cpu, 3);
		bpf_out__raw(out, "] ");
		bpf_out__pad(out, bpf_out__escape(text, sizeof(text), comm), 16);
		bpf_out__raw(out, " ");
		bpf_events__print_int(out, sample->pid, 6);
		bpf_out__raw(out, "/");
		bpf_events__print_int(out, sample->tid, -6);
		bpf_out__raw(out, " ");
		bpf_out__pad(out, event, -12);
		return;
	}
	bpf_out__time(out, "time", sample->time);
	bpf_out__u64(out, "cpu", sample->cpu);
	bpf_out__u64(out, "pid", sample->pid);
	bpf_out__u64(out, "tid", sample->tid);
	bpf_out__str(out, "comm", comm);
	bpf_out__str(out, "event", event);
}

static const char * const bpf_events_columns[] = {
	"time", "cpu", "pid", "tid", "comm", "event",
	"prog_id", "prog_name", "prog_type", "prog_tag",
	"link_id", "link_type", "attach_type", "target",
	"run_cnt", "run_time_ns", "recursion_misses",
	"gone", "lost", NULL,
};

/*
 * The counts a prog_unload record carries on a kernel that writes them;
 * run_cnt and run_time_ns only if BPF stats were on at some time.
 */
static void bpf_events__print_stats(struct bpf_out *out,
				    const struct perf_record_bpf_stats_event *stats)
{
	bool on = stats && (stats->bpf.flags & PERF_BPF_EVENT_FLAG_STATS_ON);

	if (out->format == BPF_FORMAT_TEXT) {
		if (!stats)
			return;
		if (on)
			bpf_out__printf(out, "  run_cnt %" PRIu64 " run_time_ns %" PRIu64,
					(u64)stats->run_cnt, (u64)stats->run_time_ns);
		else
			bpf_out__raw(out, "  run_cnt - run_time_ns -");
		bpf_out__printf(out, " recursion_misses %" PRIu64, (u64)stats->recursion_misses);
		return;
	}
	if (on) {
		bpf_out__u64(out, "run_cnt", stats->run_cnt);
		bpf_out__u64(out, "run_time_ns", stats->run_time_ns);
	} else {
		bpf_out__none(out, "run_cnt");
		bpf_out__none(out, "run_time_ns");
	}
	if (stats)
		bpf_out__u64(out, "recursion_misses", stats->recursion_misses);
	else
		bpf_out__none(out, "recursion_misses");
}

static void bpf_events__print(struct bpf_events *ev, struct perf_sample *sample,
			      const char *event, const struct bpf_prog_desc *prog,
			      const struct bpf_link_desc *link, u32 attach_type,
			      const struct perf_record_bpf_stats_event *stats, bool gone)
{
	struct bpf_out *out = &ev->out;
	char tag[2 * BPF_TAG_SIZE + 1], buf[2][16];

	bpf_events__print_start(ev, sample, event);
	if (out->format == BPF_FORMAT_TEXT) {
		perf_bpf__tag_str(prog->tag, tag);
		bpf_out__raw(out, " prog ");
		bpf_out__num(out, prog->id, 0);
		bpf_out__raw(out, " ");
		bpf_out__esc(out, prog->name && *prog->name ? prog->name : "-");
		bpf_out__raw(out, " ");
		bpf_out__raw(out, prog->type_known ?
			     perf_bpf__prog_type_name(prog->type, buf[0], sizeof(buf[0])) : "-");
		bpf_out__raw(out, " tag ");
		bpf_out__raw(out, tag);
		if (link) {
			bpf_out__raw(out, "  link ");
			bpf_out__num(out, link->id, 0);
			bpf_out__raw(out, " ");
			bpf_out__raw(out, perf_bpf__link_type_name(link->type, buf[0],
								   sizeof(buf[0])));
			bpf_out__raw(out, " ");
			bpf_out__raw(out, perf_bpf__attach_type_name(attach_type, buf[1],
								     sizeof(buf[1])) ?: "-");
			bpf_out__raw(out, " ");
			bpf_out__esc(out, link->target && *link->target ? link->target : "-");
		}
		bpf_events__print_stats(out, stats);
		if (gone)
			bpf_out__raw(out, " (gone)");
		bpf_out__end(out);
		return;
	}
	bpf_out__prog_fields(out, prog);
	if (link) {
		bpf_out__link_fields(out, link, attach_type);
	} else {
		bpf_out__none(out, "link_id");
		bpf_out__none(out, "link_type");
		bpf_out__none(out, "attach_type");
		bpf_out__none(out, "target");
	}
	bpf_events__print_stats(out, stats);
	if (out->format == BPF_FORMAT_JSON) {
		bpf_out__key(out, "gone");
		bpf_out__raw(out, gone ? "true" : "false");
	} else {
		bpf_out__u64(out, "gone", gone);
		bpf_out__none(out, "lost");
	}
	bpf_out__end(out);
}

static bool bpf_events__wanted_prog(struct bpf_events *ev, const struct bpf_prog_desc *prog)
{
	return !ev->name_glob || !fnmatch(ev->name_glob, prog->name ?: "", 0);
}

/*
 * The kernel writes a PERF_RECORD_KSYMBOL named bpf_prog_<tag>[_<name>]
 * for each function of a program, the program's own first, then one per
 * subprogram (each with a tag of its own), just before its load and its
 * unload record, as the same task.  Keep the ksymbols of each task (of
 * the CPU for interrupts, where the task is 0) until its next BPF record,
 * which takes the name of the one with its tag.
 */
#define BPF_KSYMS_MAX		(64 * KSYM_NAME_LEN)

struct bpf_ksyms {
	char			*names;		/* one after another, each with its '\0' */
	size_t			len;
	size_t			size;		/* kept for the task's next ones */
};

static void bpf_ksyms__delete(struct bpf_ksyms *ks)
{
	if (ks) {
		free(ks->names);
		free(ks);
	}
}

static void bpf_events__forget_ksyms(struct bpf_events *ev)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;

	hashmap__for_each_entry_safe(ev->ksyms, cur, tmp, bkt) {
		bpf_ksyms__delete(cur->pvalue);
		hashmap__delete(ev->ksyms, cur->key, NULL, NULL);
	}
}

static long bpf_events__ksym_key(const struct perf_sample *sample)
{
	return sample->tid ? (long)sample->tid : -1L - sample->cpu;
}

/* The program name of the ksymbol with tag @tag this task wrote, if any */
static char *bpf_events__take_ksym(struct bpf_events *ev, const struct perf_sample *sample,
				   const u8 *tag)
{
	struct bpf_ksyms *ks = NULL;
	char hex[2 * BPF_TAG_SIZE + 1], *name = NULL;
	const char *prog;
	size_t off;

	if (!hashmap__find(ev->ksyms, bpf_events__ksym_key(sample), &ks) || !ks->len)
		return NULL;
	perf_bpf__tag_str(tag, hex);
	for (off = 0; off < ks->len; off += strlen(ks->names + off) + 1) {
		prog = perf_bpf__ksym_prog(ks->names + off, hex);
		if (prog) {
			name = strdup(prog);
			break;
		}
	}
	/* the task's buffer stays for its next ones, until it exits */
	ks->len = 0;
	return name;
}

static void bpf_events__ksymbol(struct bpf_events *ev, union perf_event *event,
				struct perf_sample *sample)
{
	const char *name = event->ksymbol.name;
	long key = bpf_events__ksym_key(sample);
	struct bpf_ksyms *ks;
	size_t len, size;
	char *more;

	/* bpf_prog_<tag>[_<name>]: programs, not trampolines */
	if (event->ksymbol.ksym_type != PERF_RECORD_KSYMBOL_TYPE_BPF ||
	    !perf_bpf__ksym_prog(name, NULL))
		return;
	if (!hashmap__find(ev->ksyms, key, &ks)) {
		ks = zalloc(sizeof(*ks));
		if (!ks || hashmap__add(ev->ksyms, key, ks)) {
			free(ks);
			return;
		}
	}
	len = strlen(name) + 1;
	if (ks->len + len > BPF_KSYMS_MAX)
		return;
	if (ks->len + len > ks->size) {
		size = max(2 * ks->size, ks->len + len);
		more = realloc(ks->names, size);
		if (!more)
			return;
		ks->names = more;
		ks->size = size;
	}
	memcpy(ks->names + ks->len, name, len);
	ks->len += len;
}

/*
 * Take what the kernel said of program @prog when a record of it was
 * read: false if it was not asked; *@gone, if @gone is given, whether the
 * program was gone then (ids are not reused: no need to ask again).
 */
static bool bpf_events__take_read_prog(struct bpf_events *ev, struct bpf_prog_desc *prog,
				       char **ksym, bool *gone)
{
	struct bpf_prog_desc *seen;
	char *full = NULL;

	if (!hashmap__delete(ev->read_progs, prog->id, NULL, &seen))
		return false;
	if (gone)
		*gone = !seen;
	if (!seen) {
		prog->gone = true;
		return true;
	}
	/* a name bpf_prog_info cut: the whole one, if a KSYMBOL record told it */
	if (strlen(seen->name) == BPF_OBJ_NAME_LEN - 1) {
		if (ksym && *ksym && strstarts(*ksym, seen->name)) {
			full = *ksym;
			*ksym = NULL;
		} else if (prog->name && strstarts(prog->name, seen->name)) {
			full = prog->name;
			prog->name = NULL;
		}
	}
	seen->wanted = prog->wanted;
	free(prog->name);
	*prog = *seen;
	free(seen);
	if (full) {
		free(prog->name);
		prog->name = full;
	}
	return true;
}

static void bpf_events__prog_record(struct bpf_events *ev, union perf_event *event,
				    struct perf_sample *sample, bool load)
{
	struct perf_record_bpf_event *bpf = &event->bpf;
	struct bpf_prog_desc *prog, gone_prog = { .id = bpf->id };
	char *ksym = bpf_events__take_ksym(ev, sample, bpf->tag);
	bool gone = false, task;
	int err;

	prog = bpf_events__prog(ev, bpf->id);
	if (!prog)
		prog = &gone_prog;
	task = bpf_events__wanted_task(ev, sample, &prog->wanted, !load);
	if (prog == &gone_prog) {
		/* no memory to keep it */
	} else if (load && bpf_events__take_read_prog(ev, prog, &ksym, &gone) && !gone) {
		/* what the kernel said when the record was read */
	} else if (load && (gone || !task || !ev->show_progs)) {
		/*
		 * Gone when its record was read, or not shown: no look-up,
		 * which would hold the program for a moment (see
		 * bpf_events__read_record()).  A link record that shows it
		 * later looks it up then, unless it is gone.
		 */
		prog->type_known = false;
		zfree(&prog->name);
	} else if (load) {
		err = bpf_events__learn_prog(ev, prog, ksym);
		gone = err == -ENOENT;
		prog->gone = gone;
		/* a new program behind an id we knew: forget the old one's type */
		if (err)
			prog->type_known = false;
	}
	memcpy(prog->tag, bpf->tag, BPF_TAG_SIZE);
	if (ksym && (gone || !prog->name || !*prog->name)) {
		free(prog->name);
		prog->name = ksym;
		ksym = NULL;
	}
	free(ksym);

	if (ev->show_progs && task && bpf_events__wanted_prog(ev, prog)) {
		ev->counts[bpf->type]++;
		bpf_events__print(ev, sample, perf_bpf_event__name(bpf->type), prog, NULL, 0,
				  bpf_side_band__unload_stats(ev->evlist, event), gone);
	}
	if (prog == &gone_prog)
		free(gone_prog.name);
	else if (!load)
		bpf_events__forget_prog(ev, bpf->id);
}

static void bpf_events__link_record(struct bpf_events *ev, union perf_event *event,
				    struct perf_sample *sample, bool attach)
{
	struct perf_record_bpf_link_event *bpf = &event->bpf_link;
	struct bpf_prog_desc *prog, no_prog = { .id = bpf->bpf.id };
	struct bpf_link_desc *link, *seen, no_link = { .id = bpf->link_id };
	bool known, gone = false, shown;
	u32 attach_type;
	int err;

	known = hashmap__find(ev->links, bpf->link_id, NULL);
	link = bpf_events__link(ev, bpf->link_id);
	if (!link)
		link = &no_link;
	/* whether it can be shown, as far as the record tells */
	shown = ev->show_links && bpf_events__wanted_task(ev, sample, &link->wanted, !attach);

	prog = bpf_events__prog(ev, bpf->bpf.id);
	if (!prog)
		prog = &no_prog;
	/* unless known, not to be had, not needed, or told when the record was read */
	if (prog != &no_prog && !prog->type_known && !prog->gone && prog->id && shown &&
	    !bpf_events__take_read_prog(ev, prog, NULL, NULL)) {
		err = bpf_events__learn_prog(ev, prog, NULL);
		prog->gone = err == -ENOENT;
		if (err && !prog->name)
			prog->name = strdup("");
	}
	memcpy(prog->tag, bpf->bpf.tag, BPF_TAG_SIZE);
	shown = shown && bpf_events__wanted_prog(ev, prog);

	/* a detach record shows the target the link had: learn it now only if new */
	if (attach && hashmap__delete(ev->read_links, bpf->link_id, NULL, &seen)) {
		gone = seen->gone;
		seen->wanted = link->wanted;
		free(link->target);
		*link = *seen;
		free(seen);
	} else if (!shown) {
		/* not shown: no look-up, which would hold the link for a moment */
	} else if (attach || !known) {
		err = bpf_events__learn_link(ev, link);
		gone = attach && err == -ENOENT;
		if (err) {
			free(link->target);
			link->target = NULL;
			link->info_known = false;
		}
	}
	/*
	 * The record carries the link's own attach type.  Where the link's
	 * info has none (iter, netfilter, uprobe_multi; kprobe_multi, where
	 * only the record tells a session) or the same (tracing), the
	 * record's; for the others the info's, when the kernel told it.
	 */
	attach_type = perf_bpf_link__attach_type(bpf->link_type, bpf->attach_type);
	if (link->info_known && !perf_bpf_link__record_first(bpf->link_type))
		attach_type = link->attach_type;
	/* what the record says, whatever the kernel says now */
	link->prog_id = bpf->bpf.id;
	link->type = bpf->link_type;

	if (shown) {
		ev->counts[bpf->bpf.type]++;
		bpf_events__print(ev, sample, perf_bpf_event__name(bpf->bpf.type), prog, link,
				  attach_type, NULL, gone);
	}
	if (link == &no_link)
		free(no_link.target);
	else if (!attach)
		bpf_events__forget_link(ev, bpf->link_id);
}

/* A record of a type newer than this perf, or a link record without the link fields */
static void bpf_events__unknown_record(struct bpf_events *ev, union perf_event *event,
				       struct perf_sample *sample)
{
	struct bpf_out *out = &ev->out;
	char tag[2 * BPF_TAG_SIZE + 1];

	ev->counts[PERF_BPF_EVENT_MAX]++;
	bpf_events__print_start(ev, sample, "unknown");
	perf_bpf__tag_str(event->bpf.tag, tag);
	if (out->format == BPF_FORMAT_TEXT) {
		bpf_out__printf(out, " type %u flags %#x id %u tag %s size %u", event->bpf.type,
				event->bpf.flags, event->bpf.id, tag, event->header.size);
		bpf_out__end(out);
		return;
	}
	bpf_out__u64(out, "prog_id", event->bpf.id);
	if (out->format == BPF_FORMAT_JSON) {
		bpf_out__str(out, "prog_name", "");
		bpf_out__str(out, "prog_type", "");
		bpf_out__str(out, "prog_tag", tag);
		bpf_out__u64(out, "bpf_event_type", event->bpf.type);
	} else {
		bpf_out__none(out, "prog_name");
		bpf_out__none(out, "prog_type");
		bpf_out__str(out, "prog_tag", tag);
		bpf_out__none(out, "link_id");
		bpf_out__none(out, "link_type");
		bpf_out__none(out, "attach_type");
		bpf_out__none(out, "target");
		bpf_out__none(out, "run_cnt");
		bpf_out__none(out, "run_time_ns");
		bpf_out__none(out, "recursion_misses");
		bpf_out__none(out, "gone");
		bpf_out__none(out, "lost");
	}
	bpf_out__end(out);
}

/* Whether a link record holds the link fields: its size counts the sample_id too */
static bool bpf_events__has_link_fields(struct bpf_events *ev, union perf_event *event)
{
	return event->header.size >= PERF_RECORD_BPF_LINK_SIZE +
				      evlist__id_hdr_size(ev->evlist);
}

static void bpf_events__bpf_record(struct bpf_events *ev, union perf_event *event,
				   struct perf_sample *sample)
{
	switch (event->bpf.type) {
	case PERF_BPF_EVENT_PROG_LOAD:
	case PERF_BPF_EVENT_PROG_UNLOAD:
		bpf_events__prog_record(ev, event, sample,
					event->bpf.type == PERF_BPF_EVENT_PROG_LOAD);
		break;
	case PERF_BPF_EVENT_LINK_ATTACH:
	case PERF_BPF_EVENT_LINK_DETACH:
		if (bpf_events__has_link_fields(ev, event)) {
			bpf_events__link_record(ev, event, sample,
						event->bpf.type == PERF_BPF_EVENT_LINK_ATTACH);
			break;
		}
		fallthrough;
	default:
		/* from a kernel newer than this perf */
		bpf_events__unknown_record(ev, event, sample);
		break;
	}
}

static void bpf_events__lost(struct bpf_events *ev, union perf_event *event,
			     struct perf_sample *sample)
{
	struct bpf_out *out = &ev->out;

	ev->lost += event->lost.lost;
	/* the program records of ksymbols kept may be among those lost */
	bpf_events__forget_ksyms(ev);
	if (out->format == BPF_FORMAT_TEXT) {
		fprintf(out->fp, "%6" PRIu64 ".%06" PRIu64 " [%03u] LOST %" PRIu64 " records\n",
			sample->time / NSEC_PER_SEC, (sample->time % NSEC_PER_SEC) / NSEC_PER_USEC,
			sample->cpu, (u64)event->lost.lost);
		return;
	}
	bpf_out__begin(out);
	bpf_out__time(out, "time", sample->time);
	bpf_out__u64(out, "cpu", sample->cpu);
	if (out->format == BPF_FORMAT_CSV) {
		int i;

		bpf_out__none(out, "pid");
		bpf_out__none(out, "tid");
		bpf_out__none(out, "comm");
		bpf_out__str(out, "event", "lost");
		/* prog_id to gone: empty */
		for (i = 6; bpf_events_columns[i + 1]; i++)
			bpf_out__none(out, bpf_events_columns[i]);
	} else {
		bpf_out__str(out, "event", "lost");
	}
	bpf_out__u64(out, "lost", event->lost.lost);
	bpf_out__end(out);
}

/* Follow a workload's descendants: a child of a followed process is followed */
static void bpf_events__task(struct bpf_events *ev, union perf_event *event,
			     struct perf_sample *sample)
{
	struct bpf_ksyms *ks;
	struct thread *parent;

	/* a new task or one gone: not the one looked up last, whatever its tid */
	thread__zput(ev->last_thread);

	if (event->header.type == PERF_RECORD_FORK) {
		if (ev->follow && event->fork.pid != event->fork.ppid &&
		    intlist__has_entry(ev->follow, event->fork.ppid))
			intlist__add(ev->follow, event->fork.pid);
		/* the child inherits the parent's comm: know it first */
		parent = machine__findnew_thread(&ev->machine, event->fork.ppid,
						 event->fork.ptid);
		if (parent && !thread__comm_set(parent) && !ev->session)
			thread__set_comm_from_proc(parent);
		thread__put(parent);
		machine__process_fork_event(&ev->machine, event, sample);
		return;
	}
	if (ev->follow && event->fork.pid == event->fork.tid) {
		struct int_node *node = intlist__find(ev->follow, event->fork.pid);

		if (node)
			intlist__remove(ev->follow, node);
	}
	/* the ksymbols the task kept room for */
	if (event->fork.tid && hashmap__delete(ev->ksyms, event->fork.tid, NULL, &ks))
		bpf_ksyms__delete(ks);
	machine__process_exit_event(&ev->machine, event, sample);
}

/* A record, live or from a file (-i), in time order */
static void bpf_events__dispatch(struct bpf_events *ev, union perf_event *event,
				 struct perf_sample *sample)
{
	switch (event->header.type) {
	case PERF_RECORD_BPF_EVENT:
		bpf_events__bpf_record(ev, event, sample);
		break;
	case PERF_RECORD_KSYMBOL:
		bpf_events__ksymbol(ev, event, sample);
		break;
	case PERF_RECORD_COMM:
		machine__process_comm_event(&ev->machine, event, sample);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		bpf_events__task(ev, event, sample);
		break;
	case PERF_RECORD_LOST:
		bpf_events__lost(ev, event, sample);
		break;
	default:
		break;
	}
}

static int bpf_events__deliver(struct ordered_events *oe, struct ordered_event *qe)
{
	struct bpf_events *ev = oe->data;
	union perf_event *event = qe->event;
	struct perf_sample sample;

	if (evlist__parse_sample(ev->evlist, event, &sample)) {
		pr_debug("perf bpf: cannot parse a record of type %u\n", event->header.type);
		ev->unparsed++;
		return 0;
	}
	bpf_events__dispatch(ev, event, &sample);
	return 0;
}

/* Look program @id up now, for its load or link record when it is delivered */
static void bpf_events__read_prog(struct bpf_events *ev, u32 id)
{
	struct bpf_prog_desc *prog;
	int err;

	/* asked already, for another record of it not delivered yet */
	if (hashmap__find(ev->read_progs, id, NULL))
		return;
	prog = zalloc(sizeof(*prog));
	if (!prog)
		return;
	prog->id = id;
	err = bpf_events__learn_prog(ev, prog, NULL);
	if (err) {
		bpf_prog_desc__delete(prog);
		if (err != -ENOENT)
			return;
		/* gone */
		prog = NULL;
	}
	if (hashmap__add(ev->read_progs, id, prog))
		bpf_prog_desc__delete(prog);
}

/* Program @id was unloaded in the pass that read its load: no need to ask */
static void bpf_events__read_prog_gone(struct bpf_events *ev, u32 id)
{
	if (!hashmap__find(ev->read_progs, id, NULL))
		hashmap__add(ev->read_progs, id, NULL);
}

/* Look link @id of program @prog_id up now */
static void bpf_events__read_link(struct bpf_events *ev, u32 id, u32 prog_id)
{
	struct bpf_link_desc *link, *old_link = NULL;
	struct bpf_prog_desc *prog;
	int err;

	if (!hashmap__find(ev->progs, prog_id, &prog))
		prog = NULL;
	if (prog && prog->name && !bpf_events__wanted_prog(ev, prog))
		return;
	if (prog_id && (!prog || (!prog->type_known && !prog->gone)))
		bpf_events__read_prog(ev, prog_id);
	link = zalloc(sizeof(*link));
	if (!link)
		return;
	link->id = id;
	err = bpf_events__learn_link(ev, link);
	link->gone = err == -ENOENT;
	if ((err && !link->gone) ||
	    hashmap__set(ev->read_links, link->id, link, NULL, &old_link)) {
		bpf_link_desc__delete(link);
		return;
	}
	bpf_link_desc__delete(old_link);
}

/*
 * A load or attach record is delivered half a second after it is read, in
 * time order: ask the kernel about its program or link when the pass that
 * read it ends, while it is more likely to be there still.  A program
 * whose unload the same pass read is gone: it is not asked for.  A link
 * detached may still be there (BPF_LINK_DETACH, its cgroup removed), and
 * its one detach record is written: it is asked for.
 *
 * A look-up holds the object for a moment: when its owner lets go of it
 * meanwhile, this process drops the last reference, and the kernel writes
 * the unload or detach as this process's, a little later.  So look up
 * only what can be shown: not a record of a process -p leaves out, nor a
 * program --type link would show only with a link (looked up with its
 * first link then, which holds it), nor a link of a program --name
 * leaves out, when the program is known by then.
 */
static void bpf_events__read_record(struct bpf_events *ev, union perf_event *event)
{
	struct bpf_events_read *rd;
	struct perf_sample sample;
	u32 type = event->bpf.type;
	bool end = type == PERF_BPF_EVENT_PROG_UNLOAD;
	bool link = type == PERF_BPF_EVENT_LINK_ATTACH;

	if (end || type == PERF_BPF_EVENT_PROG_LOAD ? !ev->show_progs :
	    !link || !ev->show_links || !bpf_events__has_link_fields(ev, event))
		return;
	/* an end is not left out: another task than the owner's may cause it */
	if (!end && ev->pids && !evlist__parse_sample(ev->evlist, event, &sample) &&
	    !intlist__has_entry(ev->pids, sample.pid))
		return;
	if (ev->nr_reads == ev->max_reads) {
		size_t max = ev->max_reads ? 2 * ev->max_reads : 256;

		rd = realloc(ev->reads, max * sizeof(*rd));
		/* no memory: looked up when delivered */
		if (!rd)
			return;
		ev->reads = rd;
		ev->max_reads = max;
	}
	rd = &ev->reads[ev->nr_reads++];
	rd->id = link ? event->bpf_link.link_id : event->bpf.id;
	rd->prog_id = event->bpf.id;
	rd->link = link;
	rd->end = end;
}

static int bpf_events_read__cmp(const void *a, const void *b)
{
	const struct bpf_events_read *x = a, *y = b;

	if (x->link != y->link)
		return x->link - y->link;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->end - y->end;
}

/*
 * The end of a pass: look up the programs and links whose load or attach
 * it read, programs first (a link record looks its program up if the
 * program's load was not read), programs it read the unload of marked
 * gone.
 */
static void bpf_events__read_done(struct bpf_events *ev)
{
	struct bpf_events_read *rd = ev->reads;
	size_t i, j;

	if (!ev->nr_reads)
		return;
	qsort(rd, ev->nr_reads, sizeof(*rd), bpf_events_read__cmp);
	for (i = 0; i < ev->nr_reads; i = j) {
		for (j = i + 1; j < ev->nr_reads; j++) {
			if (rd[j].link != rd[i].link || rd[j].id != rd[i].id)
				break;
		}
		/* a load sorts first and an unload last, one of each at most */
		if (rd[i].end)
			continue;
		if (rd[i].link)
			bpf_events__read_link(ev, rd[i].id, rd[i].prog_id);
		else if (rd[j - 1].end)
			bpf_events__read_prog_gone(ev, rd[i].id);
		else
			bpf_events__read_prog(ev, rd[i].id);
	}
	ev->nr_reads = 0;
}

/* The side-band callback: every record read from the rings is queued in time order */
static int bpf_events__queue(union perf_event *event, void *data)
{
	struct bpf_events *ev = data;
	u64 timestamp = 0;
	int err;

	if (event->header.type == PERF_RECORD_BPF_EVENT)
		bpf_events__read_record(ev, event);

	err = evlist__parse_sample_timestamp(ev->evlist, event, &timestamp);
	if (err && err != -1)
		return err;
	return ordered_events__queue(&ev->oe, event, timestamp, 0, NULL);
}

static int bpf_events__read(struct bpf_events *ev)
{
	int n;

	/* a pass looks its new cgroups and functions up at most once */
	bpf_resolver__next_batch(&ev->res);
	n = bpf_side_band__read(ev->evlist, &ev->err);
	bpf_events__read_done(ev);
	return n;
}

static void bpf_events__exec_failed(int signo __maybe_unused, siginfo_t *info,
				    void *ucontext __maybe_unused)
{
	workload_exec_errno = info->si_value.sival_int;
	bpf_side_band_done = 1;
}

static int bpf_events__open(struct bpf_events *ev, struct target *target)
{
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_DUMMY,
		.size		= sizeof(attr),
		.sample_type	= PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
		.sample_id_all	= 1,
		.bpf_event	= 1,
		.bpf_event_ext	= 1,
		.ksymbol	= 1,
		.comm		= 1,
		.task		= 1,
		.watermark	= 1,
		.use_clockid	= 1,
		.clockid	= CLOCK_MONOTONIC,
		.disabled	= 1,
	};

	/* wake up for every record: the poll timeout orders them */
	attr.wakeup_watermark = 1;

	return bpf_side_band__open(&ev->evlist, &attr, bpf_events__queue, ev, target,
				   ev->mmap_pages, "events");
}

static void bpf_events__summary(struct bpf_events *ev)
{
	fprintf(stderr, "[ perf bpf events: %" PRIu64 " prog_load, %" PRIu64 " prog_unload, %"
		PRIu64 " link_attach, %" PRIu64 " link_detach, %" PRIu64 " unknown, %" PRIu64
		" lost ]\n",
		ev->counts[PERF_BPF_EVENT_PROG_LOAD], ev->counts[PERF_BPF_EVENT_PROG_UNLOAD],
		ev->counts[PERF_BPF_EVENT_LINK_ATTACH], ev->counts[PERF_BPF_EVENT_LINK_DETACH],
		ev->counts[PERF_BPF_EVENT_MAX], ev->lost);
}

/*
 * The kernel counts the records a full ring had no room for, and writes a
 * PERF_RECORD_LOST with that count before the next record that fits: a
 * loss in the last burst would stay untold.  Have each CPU's ring take one
 * more record, a COMM record of this process naming itself again.
 */
static void bpf_events__flush_lost(struct bpf_events *ev)
{
	struct perf_cpu_map *cpus = ev->evlist->core.all_cpus;
	char comm[16] = "";	/* what PR_GET_NAME fills */
	cpu_set_t *set, *old;
	struct perf_cpu cpu;
	size_t size;
	int idx, max;

	max = cpu__max_cpu().cpu;
	set = CPU_ALLOC(max);
	old = CPU_ALLOC(max);
	size = CPU_ALLOC_SIZE(max);
	if (!set || !old || sched_getaffinity(0, size, old) ||
	    prctl(PR_GET_NAME, comm, 0, 0, 0))
		goto out;
	perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
		CPU_ZERO_S(size, set);
		CPU_SET_S(cpu.cpu, size, set);
		if (!sched_setaffinity(0, size, set))
			prctl(PR_SET_NAME, comm, 0, 0, 0);
	}
	sched_setaffinity(0, size, old);
out:
	CPU_FREE(set);
	CPU_FREE(old);
}

/*
 * -p: the programs and links these processes hold when perf bpf events
 * starts are theirs, and so are their unloads and detaches, whoever causes
 * them.
 */
static void bpf_events__want_held(struct bpf_events *ev)
{
	struct bpf_owner_maps held = { .progs = perf_bpf__id_map(), .links = perf_bpf__id_map(), };
	struct bpf_prog_desc *prog;
	struct bpf_link_desc *link;
	struct hashmap_entry *cur;
	struct int_node *node;
	size_t bkt;

	if (held.progs && held.links) {
		intlist__for_each_entry(node, ev->pids)
			bpf_owner_maps__scan_pid(&held, node->i);
		hashmap__for_each_entry(held.progs, cur, bkt) {
			if (hashmap__find(ev->progs, cur->key, &prog))
				prog->wanted = true;
		}
		hashmap__for_each_entry(held.links, cur, bkt) {
			if (!hashmap__find(ev->links, cur->key, &link))
				continue;
			link->wanted = true;
			if (hashmap__find(ev->progs, link->prog_id, &prog))
				prog->wanted = true;
		}
	}
	bpf_owner_map__free(held.progs);
	bpf_owner_map__free(held.links);
}

/* Until SIGINT, the workload's end or the duration: read, order, print */
static int bpf_events__loop(struct bpf_events *ev, bool workload)
{
	u64 deadline = 0, last = 0, flushed = 0, start, first, now;
	int timeout, nr_read;

	if (ev->duration > 0)
		deadline = bpf_side_band__now_ns() + (u64)(ev->duration * NSEC_PER_SEC);

	evlist__enable(ev->evlist);
	bpf_events__snapshot(ev);
	if (ev->pids)
		bpf_events__want_held(ev);
	pr_debug("perf bpf events: reading the records of %d CPUs\n",
		 perf_cpu_map__nr(ev->evlist->core.all_cpus));
	if (workload)
		evlist__start_workload(ev->evlist);

	while (!bpf_side_band_done && !ev->err) {
		/* a pass at most every BPF_EVENTS_BATCH: fewer wakeups, more records each */
		start = bpf_side_band__now_ns();
		if (start - last < BPF_EVENTS_BATCH) {
			usleep((BPF_EVENTS_BATCH - (start - last)) / NSEC_PER_USEC);
			start = bpf_side_band__now_ns();
		}
		last = start;
		nr_read = bpf_events__read(ev);
		if (start > BPF_EVENTS_SLACK)
			ordered_events__flush_time(&ev->oe, start - BPF_EVENTS_SLACK);

		now = bpf_side_band__now_ns();
		if (deadline && now >= deadline)
			break;
		/*
		 * Records are coming: the next pass when this batch ends, with
		 * no poll, which would wake at the next record only to sleep
		 * until then; what was printed goes out a few times a second
		 */
		if (nr_read > 0) {
			if (now - flushed >= BPF_EVENTS_FLUSH) {
				fflush(ev->out.fp);
				flushed = now;
			}
			continue;
		}
		fflush(ev->out.fp);
		flushed = now;
		/* sleep until a record comes, or the oldest one queued may go out */
		first = ordered_events__first_time(&ev->oe);
		if (first)
			timeout = first + BPF_EVENTS_SLACK > now ?
				  (first + BPF_EVENTS_SLACK - now) / NSEC_PER_MSEC + 1 : 0;
		else
			timeout = -1;
		if (deadline) {
			int left = (deadline - now) / NSEC_PER_MSEC + 1;

			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		/* a signal meanwhile: do not wait for the next record */
		if (bpf_side_band_done)
			break;
		/* nor wait long for one, should a signal come just now */
		if (timeout < 0 || timeout > 1000)
			timeout = 1000;
		evlist__poll(ev->evlist, timeout);
	}

	/*
	 * What is in the rings now, and all that was queued: room in the
	 * rings first, for the records that tell of a loss
	 */
	bpf_events__read(ev);
	bpf_events__flush_lost(ev);
	evlist__disable(ev->evlist);
	bpf_events__read(ev);
	ordered_events__flush(&ev->oe, OE_FLUSH__FINAL);
	fflush(ev->out.fp);
	return ev->err;
}

static int bpf_parse_duration(const struct option *opt, const char *str, int unset)
{
	struct bpf_events *ev = opt->value;
	char *end;

	if (unset || !str) {
		pr_err("perf bpf events: --duration takes a number of seconds\n");
		return -1;
	}
	errno = 0;
	ev->duration = strtod(str, &end);
	if (errno || end == str || *end || !(ev->duration > 0) ||
	    ev->duration > 1e6) {
		pr_err("perf bpf events: --duration takes a number of seconds, not '%s'\n", str);
		return -1;
	}
	return 0;
}

/* CAP_SYS_ADMIN looks BPF objects up by id; reading all CPUs needs CAP_PERFMON too */
static int bpf_check_privileges(const char *cmd, bool side_band)
{
	bool used_root, perfmon;

	if (perf_cap__capable(CAP_SYS_ADMIN, &used_root))
		return 0;
	perfmon = !side_band || perf_cap__capable(CAP_PERFMON, &used_root) ||
		  perf_event_paranoid() <= 0;
	pr_err("perf bpf %s: this process lacks CAP_SYS_ADMIN%s.\n"
	       "Only CAP_SYS_ADMIN may look BPF programs and links up by id (CAP_BPF may not)%s.\n",
	       cmd, perfmon ? "" : " and CAP_PERFMON",
	       perfmon ? "" : ", and reading the side-band records of every CPU needs CAP_PERFMON");
	return -EPERM;
}

/* -i: the records of the file, in time order, as if read from the rings */
static int bpf_events__tool_event(const struct perf_tool *tool, union perf_event *event,
				  struct perf_sample *sample,
				  struct machine *machine __maybe_unused)
{
	bpf_events__dispatch(container_of(tool, struct bpf_events, tool), event, sample);
	return 0;
}

/* -i: whether the file's events asked for link records (attr.bpf_event_ext) */
static bool bpf_events__file_has_links(struct bpf_events *ev)
{
	struct evsel *evsel;

	evlist__for_each_entry(ev->evlist, evsel) {
		if (evsel->core.attr.bpf_event_ext)
			return true;
	}
	return false;
}

/*
 * -i: open the file perf record wrote: its records are delivered as the
 * rings' are, in time order; what the kernel would be asked is what perf
 * record saved (bpf_events__learn_prog())
 */
static int bpf_events__open_file(struct bpf_events *ev)
{
	struct evsel *evsel, *bpf = NULL;

	ev->data.path = ev->input_name;
	ev->data.mode = PERF_DATA_MODE_READ;
	perf_tool__init(&ev->tool, /*ordered_events=*/true);
	ev->tool.bpf = bpf_events__tool_event;
	ev->tool.ksymbol = bpf_events__tool_event;
	ev->tool.comm = bpf_events__tool_event;
	ev->tool.fork = bpf_events__tool_event;
	ev->tool.exit = bpf_events__tool_event;
	ev->tool.lost = bpf_events__tool_event;
	ev->session = perf_session__new(&ev->data, &ev->tool);
	if (IS_ERR(ev->session)) {
		int err = PTR_ERR(ev->session);

		ev->session = NULL;
		pr_err("perf bpf events: cannot read %s\n", ev->input_name);
		return err ?: -EINVAL;
	}
	ev->evlist = ev->session->evlist;
	/* the events of a pipe come in it: this reads them from the header */
	if (perf_data__is_pipe(&ev->data)) {
		pr_err("perf bpf events: -i reads a perf.data file, not a pipe\n");
		return -EINVAL;
	}
	evlist__for_each_entry(ev->evlist, evsel) {
		if (evsel->core.attr.bpf_event)
			bpf = evsel;
	}
	if (!bpf) {
		pr_err("perf bpf events: %s holds no BPF records (recorded with --no-bpf-event?)\n",
		       ev->input_name);
		return -EINVAL;
	}
	if (!bpf->core.attr.sample_id_all || !(bpf->core.attr.sample_type & PERF_SAMPLE_TIME))
		pr_warning("perf bpf events: %s: its BPF records have no time: shown in the order of the file\n",
			   ev->input_name);
	return 0;
}

static void bpf_events__exit(struct bpf_events *ev)
{
	struct hashmap_entry *cur;
	size_t bkt;

	/* -i: the session's */
	if (ev->session) {
		ev->evlist = NULL;
		perf_session__delete(ev->session);
	}
	evlist__delete(ev->evlist);
	ordered_events__free(&ev->oe);
	thread__zput(ev->last_thread);
	machine__exit(&ev->machine);
	if (ev->progs) {
		hashmap__for_each_entry(ev->progs, cur, bkt)
			bpf_prog_desc__delete(cur->pvalue);
		hashmap__free(ev->progs);
	}
	if (ev->links) {
		hashmap__for_each_entry(ev->links, cur, bkt)
			bpf_link_desc__delete(cur->pvalue);
		hashmap__free(ev->links);
	}
	if (ev->ksyms) {
		hashmap__for_each_entry(ev->ksyms, cur, bkt)
			bpf_ksyms__delete(cur->pvalue);
		hashmap__free(ev->ksyms);
	}
	if (ev->read_progs) {
		hashmap__for_each_entry(ev->read_progs, cur, bkt)
			bpf_prog_desc__delete(cur->pvalue);
		hashmap__free(ev->read_progs);
	}
	if (ev->read_links) {
		hashmap__for_each_entry(ev->read_links, cur, bkt)
			bpf_link_desc__delete(cur->pvalue);
		hashmap__free(ev->read_links);
	}
	free(ev->reads);
	intlist__delete(ev->pids);
	intlist__delete(ev->follow);
	bpf_resolver__exit(&ev->res);
	bpf_out__exit(&ev->out);
}

static int cmd_bpf_events(int argc, const char **argv)
{
	struct bpf_events ev = {
		.mmap_pages = UINT_MAX,
		.show_progs = true,
		.show_links = true,
	};
	struct target target = { .system_wide = true, .uid = UINT_MAX, };
	const char *sep = NULL;
	const char * const usage[] = {
		"perf bpf events [<options>] [-- <command> [<args>]]",
		NULL
	};
	const struct option options[] = {
	OPT_BOOLEAN('a', "all-cpus", &ev.system_wide,
		    "records caused by any task (the default without a command or -p)"),
	OPT_STRING('p', "pid", &ev.pid_str, "pid",
		   "records caused by these processes (comma separated)"),
	OPT_STRING('i', "input", &ev.input_name, "file",
		   "the records of this perf.data file, not the kernel's as they come"),
	OPT_CALLBACK(0, "duration", &ev, "secs", "stop after this many seconds",
		     bpf_parse_duration),
	OPT_STRING(0, "type", &ev.type_str, "prog|link",
		   "only the records of programs, or only those of links"),
	OPT_STRING(0, "name", &ev.name_glob, "glob",
		   "only the records of programs whose name matches"),
	OPT_STRING('x', "field-separator", &sep, "separator",
		   "print CSV with this separator, a header line first"),
	OPT_BOOLEAN('j', "json-output", &ev.json, "print one JSON object a line"),
	OPT_STRING('o', "output", &ev.output_name, "file", "output file name"),
	OPT_CALLBACK('m', "mmap-pages", &ev.mmap_pages, "pages",
		     "number of mmap data pages per CPU", evlist__parse_mmap_pages),
	OPT_INCR('v', "verbose", &verbose, "be more verbose"),
	OPT_END()
	};
	struct sigaction act = { .sa_handler = bpf_side_band__signal };
	bool workload;
	bool has_links;
	int err;
	char msg[BUFSIZ];

	argc = parse_options(argc, argv, options, usage, PARSE_OPT_STOP_AT_NON_OPTION);
	workload = argc > 0;
	if (ev.type_str) {
		if (!strcmp(ev.type_str, "prog"))
			ev.show_links = false;
		else if (!strcmp(ev.type_str, "link"))
			ev.show_progs = false;
		else
			usage_with_options_msg(usage, options,
					       "--type takes prog or link, not '%s'", ev.type_str);
	}
	if (ev.pid_str && ev.system_wide)
		usage_with_options_msg(usage, options, "-a and -p are mutually exclusive");
	if (ev.pid_str && workload)
		usage_with_options_msg(usage, options, "-p and a command are mutually exclusive");
	if (ev.duration > 0 && workload)
		usage_with_options_msg(usage, options,
				       "--duration and a command are mutually exclusive");
	if (sep && ev.json)
		usage_with_options_msg(usage, options, "-x and -j are mutually exclusive");
	if (ev.input_name && (ev.system_wide || ev.duration > 0 || workload ||
			      ev.mmap_pages != UINT_MAX))
		usage_with_options_msg(usage, options,
				       "-i reads a file: -a, --duration, -m and a command are for live records");
	if (ev.pid_str) {
		ev.pids = intlist__new(ev.pid_str);
		if (!ev.pids)
			usage_with_options_msg(usage, options, "-p takes process ids, not '%s'",
					       ev.pid_str);
	}

	if (ev.input_name && ev.output_name) {
		struct stat in, out;

		/* before -o is opened, which truncates it */
		if (!stat(ev.input_name, &in) && !stat(ev.output_name, &out) &&
		    in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
			pr_err("perf bpf events: -o %s would overwrite the file -i reads\n",
			       ev.output_name);
			intlist__delete(ev.pids);
			return -1;
		}
	}
	if (!ev.input_name && bpf_check_privileges("events", true)) {
		intlist__delete(ev.pids);
		return -1;
	}

	/* from here on, bpf_events__exit() undoes what was done */
	ordered_events__init(&ev.oe, bpf_events__deliver, &ev);
	ordered_events__set_copy_on_queue(&ev.oe, true);
	err = machine__init(&ev.machine, "", HOST_KERNEL_ID);
	if (err)
		return -1;
	err = bpf_out__setup(&ev.out, sep, ev.json, ev.output_name, "events");
	if (err)
		goto out;

	err = -ENOMEM;
	if (bpf_resolver__init(&ev.res))
		goto out;
	ev.progs = perf_bpf__id_map();
	ev.links = perf_bpf__id_map();
	ev.ksyms = perf_bpf__id_map();
	ev.read_progs = perf_bpf__id_map();
	ev.read_links = perf_bpf__id_map();
	if (!ev.progs || !ev.links || !ev.ksyms || !ev.read_progs || !ev.read_links)
		goto out;
	if (ev.input_name) {
		err = bpf_events__open_file(&ev);
		if (err)
			goto out;
		if (!bpf_events__file_has_links(&ev) && !ev.show_progs) {
			pr_err("perf bpf events: --type link: %s holds no link records\n",
			       ev.input_name);
			err = -EOPNOTSUPP;
			goto out;
		}
		if (!bpf_events__file_has_links(&ev) && ev.show_links)
			pr_warning("perf bpf events: %s holds no link records (recorded on a kernel without them, or by a perf that did not ask): showing program records only\n",
				   ev.input_name);
		bpf_out__header(&ev.out, bpf_events_columns);
		err = perf_session__process_events(ev.session);
		bpf_events__summary(&ev);
		if (err < 0 && err != -1)
			pr_err("perf bpf events: %s: %s\n", ev.input_name,
			       str_error_r(-err, msg, sizeof(msg)));
		goto out;
	}
	err = bpf_events__open(&ev, &target);
	if (err)
		goto out;

	has_links = bpf_side_band__has_links(ev.evlist);
	if (!has_links && !ev.show_progs) {
		pr_err("perf bpf events: --type link: this kernel writes no link records\n");
		err = -EOPNOTSUPP;
		goto out;
	}
	if (!has_links && ev.show_links)
		pr_warning("perf bpf events: this kernel writes no link records (attr.bpf_event_ext): showing program records only\n");

	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	if (workload) {
		sigaction(SIGCHLD, &act, NULL);
		err = evlist__prepare_workload(ev.evlist, &target, argv, false,
					       bpf_events__exec_failed);
		if (err < 0) {
			pr_err("perf bpf events: cannot start the command: %s\n",
			       str_error_r(errno, msg, sizeof(msg)));
			goto out;
		}
		if (!ev.system_wide) {
			ev.follow = intlist__new(NULL);
			if (!ev.follow || intlist__add(ev.follow, ev.evlist->workload.pid)) {
				err = -ENOMEM;
				goto out;
			}
		}
	}

	bpf_out__header(&ev.out, bpf_events_columns);
	err = bpf_events__loop(&ev, workload);

	if (workload) {
		int status;

		/* stopped early: the command does not outlive us */
		if (waitpid(ev.evlist->workload.pid, &status, WNOHANG) == 0) {
			kill(ev.evlist->workload.pid, SIGTERM);
			waitpid(ev.evlist->workload.pid, &status, 0);
		}
		if (workload_exec_errno) {
			pr_err("perf bpf events: cannot run '%s': %s\n", argv[0],
			       str_error_r(workload_exec_errno, msg, sizeof(msg)));
			err = -1;
		}
	}
	bpf_events__summary(&ev);
	if (ev.oe.nr_unordered_events)
		pr_warning("perf bpf events: %u records were read too late to be shown in time order\n",
			   ev.oe.nr_unordered_events);
	if (ev.unparsed)
		pr_warning("perf bpf events: %" PRIu64 " records could not be parsed\n",
			   ev.unparsed);
	if (err < 0 && err != -1)
		pr_err("perf bpf events: %s\n", str_error_r(-err, msg, sizeof(msg)));
out:
	bpf_events__exit(&ev);
	return err ? -1 : 0;
}

/* perf bpf list */

struct bpf_list_prog {
	struct bpf_prog_desc	desc;
	u64			run_time_ns;
	u64			run_cnt;
	u64			recursion_misses;
	u32			nr_maps;
	u64			memlock;
};

static const char * const bpf_list_columns[] = {
	"prog_id", "prog_name", "prog_type", "prog_tag", "run_time_ns", "run_cnt",
	"recursion_misses", "verified_insns", "nr_maps", "map_memlock", "pids",
	"link_id", "link_type", "attach_type", "target", "link_pids", "found", NULL,
};

/* The memory of map @id, read once a list: programs share maps */
static u64 bpf_list__map_memlock(struct hashmap *memlocks, u32 id)
{
	u64 *memlock;

	if (hashmap__find(memlocks, id, &memlock))
		return *memlock;
	memlock = malloc(sizeof(*memlock));
	if (!memlock)
		return perf_bpf__map_memlock(id);
	*memlock = perf_bpf__map_memlock(id);
	if (hashmap__add(memlocks, id, memlock)) {
		u64 val = *memlock;

		free(memlock);
		return val;
	}
	return *memlock;
}

static int bpf_list_prog__fill(struct bpf_list_prog *prog, int fd, struct hashmap *memlocks)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), map_ids[64];
	u32 i;
	int err;

	err = bpf_prog_desc__fill(&prog->desc, fd, NULL);
	if (err)
		return err;
	info.nr_map_ids = ARRAY_SIZE(map_ids);
	info.map_ids = ptr_to_u64(map_ids);
	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		return -errno;
	prog->run_time_ns = info.run_time_ns;
	prog->run_cnt = info.run_cnt;
	prog->recursion_misses = info.recursion_misses;
	prog->nr_maps = info.nr_map_ids;
	for (i = 0; i < min_t(u32, info.nr_map_ids, ARRAY_SIZE(map_ids)); i++)
		prog->memlock += bpf_list__map_memlock(memlocks, map_ids[i]);
	return 0;
}

static void bpf_list__print_prog(struct bpf_out *out, const struct bpf_list_prog *prog,
				 const struct bpf_owners *owners, bool stats,
				 const struct bpf_link_desc *link,
				 const struct bpf_owners *link_owners)
{
	bpf_out__prog_fields(out, &prog->desc);
	if (stats) {
		bpf_out__u64(out, "run_time_ns", prog->run_time_ns);
		bpf_out__u64(out, "run_cnt", prog->run_cnt);
	} else {
		bpf_out__none(out, "run_time_ns");
		bpf_out__none(out, "run_cnt");
	}
	/* counted whether stats are on or not */
	bpf_out__u64(out, "recursion_misses", prog->recursion_misses);
	bpf_out__u64(out, "verified_insns", prog->desc.verified_insns);
	bpf_out__u64(out, "nr_maps", prog->nr_maps);
	bpf_out__u64(out, "map_memlock", prog->memlock);
	bpf_out__owners(out, owners);
	if (out->format == BPF_FORMAT_CSV) {
		if (link) {
			bpf_out__link_fields(out, link, link->attach_type);
			bpf_out__owners(out, link_owners);
		} else {
			bpf_out__none(out, "link_id");
			bpf_out__none(out, "link_type");
			bpf_out__none(out, "attach_type");
			bpf_out__none(out, "target");
			bpf_out__none(out, "link_pids");
		}
		if (link && link->found)
			bpf_out__str(out, "found", link->found);
		else
			bpf_out__none(out, "found");
	}
}

static int cmd_bpf_list(int argc, const char **argv)
{
	const char * const usage[] = {
		"perf bpf list [<options>]",
		NULL
	};
	const char *sep = NULL, *output_name = NULL;
	bool json = false;
	const struct option options[] = {
	OPT_STRING('x', "field-separator", &sep, "separator",
		   "print CSV with this separator, a header line first"),
	OPT_BOOLEAN('j', "json-output", &json, "print one JSON object a line"),
	OPT_STRING('o', "output", &output_name, "file", "output file name"),
	OPT_INCR('v', "verbose", &verbose, "be more verbose"),
	OPT_END()
	};
	struct bpf_owner_maps owners = {};
	struct bpf_link_desc **links = NULL, **more;
	struct hashmap *first_link = NULL;	/* prog id -> index of its first link */
	struct hashmap *memlocks = NULL;	/* map id -> u64 * */
	struct hashmap_entry *cur;
	struct bpf_resolver res;
	struct bpf_out out;
	int nr_links = 0, alloc_links = 0, i, n, fd, err;
	int *next_link = NULL;			/* index of the program's next link, -1 */
	size_t bkt;
	bool stats_on;
	__u32 id;

	argc = parse_options(argc, argv, options, usage, 0);
	if (argc)
		usage_with_options_msg(usage, options, "unexpected argument '%s'", argv[0]);
	if (sep && json)
		usage_with_options_msg(usage, options, "-x and -j are mutually exclusive");
	if (bpf_check_privileges("list", false))
		return -1;
	err = bpf_out__setup(&out, sep, json, output_name, "list");
	if (err)
		return -1;
	if (bpf_resolver__init(&res)) {
		err = -ENOMEM;
		goto out;
	}
	owners.progs = perf_bpf__id_map();
	owners.links = perf_bpf__id_map();
	first_link = perf_bpf__id_map();
	memlocks = perf_bpf__id_map();
	if (!owners.progs || !owners.links || !first_link || !memlocks) {
		err = -ENOMEM;
		goto out;
	}
	/* before this process holds BPF fds of its own */
	bpf_owner_maps__scan(&owners);
	stats_on = sysctl__read_int("kernel/bpf_stats_enabled", &n) == 0 && n == 1;

	/* the links first, to show them with their programs */
	id = 0;
	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_desc *link;

		fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		link = zalloc(sizeof(*link));
		if (link && nr_links == alloc_links) {
			alloc_links = alloc_links ? 2 * alloc_links : 64;
			more = realloc(links, alloc_links * sizeof(*links));
			if (!more) {
				free(link);
				link = NULL;
			} else {
				links = more;
			}
		}
		if (!link) {
			close(fd);
			err = -ENOMEM;
			goto out;
		}
		if (bpf_link_desc__fill(link, fd, &res))
			free(link);
		else
			links[nr_links++] = link;
		close(fd);
	}
	/* and what is attached without a link */
	err = bpf_attachments__scan(&links, &nr_links, &alloc_links, BPF_ATTACH_ALL, &res);
	if (err == -ENOMEM)
		goto out;
	if (err)
		pr_warning("perf bpf list: cannot look for attachments without a link: %s\n",
			   strerror(-err));
	err = 0;
	/* each program's links, in the order of their ids, as a list */
	next_link = malloc((nr_links ?: 1) * sizeof(*next_link));
	if (!next_link) {
		err = -ENOMEM;
		goto out;
	}
	for (i = nr_links - 1; i >= 0; i--) {
		long first;

		next_link[i] = hashmap__find(first_link, links[i]->prog_id, &first) ? first : -1;
		if (hashmap__set(first_link, links[i]->prog_id, i, NULL, NULL)) {
			err = -ENOMEM;
			goto out;
		}
	}

	bpf_out__header(&out, bpf_list_columns);
	id = 0;
	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_list_prog prog = {};
		const struct bpf_owners *prog_owners = bpf_owners__find(owners.progs, id);
		bool stats;
		int shown = 0;
		long first;

		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		if (!hashmap__find(first_link, id, &first))
			first = -1;
		err = bpf_list_prog__fill(&prog, fd, memlocks);
		close(fd);
		if (err) {
			/* unloaded meanwhile */
			free(prog.desc.name);
			err = 0;
			continue;
		}
		stats = stats_on || prog.run_cnt;

		if (out.format == BPF_FORMAT_TEXT) {
			char tag[2 * BPF_TAG_SIZE + 1], buf[16];

			perf_bpf__tag_str(prog.desc.tag, tag);
			fprintf(out.fp, "prog %u ", prog.desc.id);
			bpf_out__text(out.fp, *prog.desc.name ? prog.desc.name : "-");
			fprintf(out.fp, " %s tag %s",
				perf_bpf__prog_type_name(prog.desc.type, buf, sizeof(buf)), tag);
			if (stats)
				fprintf(out.fp, " run %" PRIu64 " times %" PRIu64 " ns",
					prog.run_cnt, prog.run_time_ns);
			if (prog.recursion_misses)
				fprintf(out.fp, " missed %" PRIu64 " runs", prog.recursion_misses);
			fprintf(out.fp, " insns %u maps %u %" PRIu64 " bytes\n",
				prog.desc.verified_insns, prog.nr_maps, prog.memlock);
			if (prog_owners) {
				fprintf(out.fp, "    pids ");
				bpf_out__owners(&out, prog_owners);
				fputc('\n', out.fp);
			}
			for (i = first; i >= 0; i = next_link[i]) {
				struct bpf_link_desc *link = links[i];
				const struct bpf_owners *lo = bpf_owners__find(owners.links,
									       link->id);
				const char *at = libbpf_bpf_attach_type_str(link->attach_type);

				if (link->found)
					fprintf(out.fp, "    attach ");
				else
					fprintf(out.fp, "    link %u ", link->id);
				fprintf(out.fp, "%s %s ",
					perf_bpf__link_type_name(link->type, buf, sizeof(buf)),
					at ?: "-");
				bpf_out__text(out.fp, *link->target ? link->target : "-");
				if (link->found)
					fprintf(out.fp, " (no link: %s)", link->found);
				if (lo) {
					fprintf(out.fp, " pids ");
					bpf_out__owners(&out, lo);
				}
				fputc('\n', out.fp);
			}
		} else if (out.format == BPF_FORMAT_CSV) {
			/* one line a link, one for a program without links */
			for (i = first; i >= 0; i = next_link[i]) {
				bpf_out__begin(&out);
				bpf_list__print_prog(&out, &prog, prog_owners, stats, links[i],
						     bpf_owners__find(owners.links, links[i]->id));
				bpf_out__end(&out);
				shown++;
			}
			if (!shown) {
				bpf_out__begin(&out);
				bpf_list__print_prog(&out, &prog, prog_owners, stats, NULL, NULL);
				bpf_out__end(&out);
			}
		} else {
			bpf_out__begin(&out);
			bpf_list__print_prog(&out, &prog, prog_owners, stats, NULL, NULL);
			bpf_out__key(&out, "links");
			bpf_out__raw(&out, "[");
			for (i = first; i >= 0; i = next_link[i]) {
				bpf_out__raw(&out, shown++ ? ",{" : "{");
				out.nfields = 0;
				bpf_out__link_fields(&out, links[i], links[i]->attach_type);
				bpf_out__owners(&out, bpf_owners__find(owners.links, links[i]->id));
				bpf_out__raw(&out, "}");
			}
			bpf_out__raw(&out, "]");
			bpf_out__end(&out);
		}
		free(prog.desc.name);
	}
out:
	for (i = 0; i < nr_links; i++)
		bpf_link_desc__delete(links[i]);
	free(links);
	free(next_link);
	hashmap__free(first_link);
	if (memlocks) {
		hashmap__for_each_entry(memlocks, cur, bkt)
			free(cur->pvalue);
		hashmap__free(memlocks);
	}
	bpf_owner_map__free(owners.progs);
	bpf_owner_map__free(owners.links);
	bpf_resolver__exit(&res);
	bpf_out__exit(&out);
	if (err == -ENOMEM)
		pr_err("perf bpf list: out of memory\n");
	return err ? -1 : 0;
}

/* perf bpf top */

/* Text: a screen a refresh, cut to the terminal's size when it is one */
static void bpf_top__print_screen(struct bpf_top *top, struct bpf_top_prog **v, int nr,
				  u64 window)
{
	FILE *fp = top->out.fp;
	struct winsize ws = { .ws_row = 0, .ws_col = 0 };
	int rows = INT_MAX, cols = INT_MAX, i, shown = 0;
	size_t width;
	/* the title, the lost line, a blank line and the column heads */
	int head = top->lost ? 4 : 3;
	char line[1024];

	if (top->clear) {
		get_term_dimensions(&ws);
		/* and the cursor's line after the last row */
		rows = ws.ws_row > head + 1 ? ws.ws_row - head - 1 : 0;
		cols = ws.ws_col > 1 ? ws.ws_col : 80;
		if (cols > (int)sizeof(line))
			cols = sizeof(line);
		fputs("\033[H\033[2J", fp);
	}
	width = cols < (int)sizeof(line) ? (size_t)cols + 1 : sizeof(line);
	bpf_top__title(top, v, nr, window, line, sizeof(line));
	fprintf(fp, "%.*s\n", cols, line);
	if (top->clear && ws.ws_row && ws.ws_row <= head + 1)
		return;		/* no room for more than the title */
	if (top->lost) {
		snprintf(line, sizeof(line),
			 "(%" PRIu64 " side-band records lost: programs looked up by id)",
			 top->lost);
		fprintf(fp, "%.*s\n", cols, line);
	}
	bpf_top__heads(top, line, sizeof(line));
	fprintf(fp, "\n%.*s\n", cols, line);
	if (!nr && rows)
		fprintf(fp, "%s\n", bpf_top__none(top));
	for (i = 0; i < nr && shown < rows && (!top->entries || i < top->entries); i++) {
		struct bpf_top_split **splits = NULL;
		int j, nr_splits = 0;

		/* cut by the row itself: not inside an escape or a character */
		bpf_top__row(top, v[i], window, line, width);
		fprintf(fp, "%.*s\n", cols, line);
		shown++;
		if (!top->split || v[i]->gone)
			continue;
		if (bpf_top_prog__split_by(v[i]) == BPF_TOP_SPLIT_NONE) {
			if (shown < rows) {
				bpf_top__split_row(top, v[i], NULL, window, line, width);
				fprintf(fp, "%.*s\n", cols, line);
				shown++;
			}
			continue;
		}
		splits = bpf_top_prog__splits(v[i], &nr_splits);
		for (j = 0; j < nr_splits && shown < rows; j++, shown++) {
			bpf_top__split_row(top, v[i], splits[j], window, line, width);
			fprintf(fp, "%.*s\n", cols, line);
		}
		free(splits);
	}
	if (!top->clear)
		fputc('\n', fp);
}

/* Print what the last refresh read, at @now */
static void bpf_top__print(struct bpf_top *top, u64 now)
{
	struct bpf_top_prog **v;
	int nr = 0;

	v = bpf_top__sorted(top, &nr);
	if (!v) {
		top->err = -ENOMEM;
		return;
	}
	if (top->out.format == BPF_FORMAT_TEXT)
		bpf_top__print_screen(top, v, nr, top->window);
	else
		bpf_top__print_interval(top, v, top->entries && nr > top->entries ?
					top->entries : nr, now, top->window);
	fflush(top->out.fp);
	free(v);
}

/* Text: read the records until the window ends */
static enum bpf_top_wait bpf_top_text__wait(struct bpf_top *top, void *priv __maybe_unused,
					    u64 next)
{
	int timeout;
	u64 now;

	bpf_side_band__read(top->evlist, &top->err);
	now = bpf_side_band__now_ns();
	if (now >= next)
		return BPF_TOP_WAIT_REFRESH;
	timeout = (next - now) / NSEC_PER_MSEC + 1;
	if (bpf_side_band_done)
		return BPF_TOP_WAIT_QUIT;
	evlist__poll(top->evlist, timeout > 1000 ? 1000 : timeout);
	return BPF_TOP_WAIT_AGAIN;
}

static void bpf_top_text__show(struct bpf_top *top, void *priv __maybe_unused, u64 now)
{
	bpf_top__print(top, now);
}

static const struct bpf_top_ops bpf_top_text_ops = {
	.wait	= bpf_top_text__wait,
	.show	= bpf_top_text__show,
};

static int bpf_top__parse_delay(const struct option *opt, const char *str, int unset)
{
	struct bpf_top *top = opt->value;
	double *delay = &top->delay;
	char *end;

	if (unset || !str) {
		pr_err("perf bpf top: -d takes a number of seconds\n");
		return -1;
	}
	top->delay_set = true;
	errno = 0;
	*delay = strtod(str, &end);
	if (errno || end == str || *end || !(*delay >= 0.1) || *delay > 1e6) {
		pr_err("perf bpf top: -d takes a number of seconds from 0.1, not '%s'\n", str);
		return -1;
	}
	return 0;
}

static int cmd_bpf_top(int argc, const char **argv)
{
	struct bpf_top top = {
		.delay = 2,
		.mmap_pages = UINT_MAX,
		.stats_fd = -1,
		.sort_str = "run_time,run_time_total",
	};
	struct target target = { .system_wide = true, .uid = UINT_MAX, };
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_DUMMY,
		.size		= sizeof(attr),
		.sample_id_all	= 1,
		.bpf_event	= 1,
		.bpf_event_ext	= 1,
		.ksymbol	= 1,
		.watermark	= 1,
		.wakeup_watermark = 1,
	};
	const char *sep = NULL;
	const char * const usage[] = {
		"perf bpf top [<options>]",
		NULL
	};
	const struct option options[] = {
	OPT_CALLBACK('d', "delay", &top, "secs",
		     "seconds between refreshes of the screen (default 2)", bpf_top__parse_delay),
	OPT_INTEGER('I', "interval-print", &top.interval,
		    "print the figures every this many ms (default: -d)"),
	OPT_INTEGER(0, "interval-count", &top.interval_count,
		    "stop after this many refreshes"),
	OPT_STRING('s', "sort", &top.sort_str, "key[,key...]",
		   "sort by run_time, runs, avg, run_time_total, runs_total, id, name, type"),
	OPT_INTEGER('E', "entries", &top.entries, "show this many programs at most"),
	OPT_STRING('e', "event", &top.event_str, "event[,event...]",
		   "count these around each run of the programs (perf stat -b's profiler)"),
	OPT_BOOLEAN(0, "hist", &top.hist,
		    "time each run of the programs: percentiles, longest run, histogram"),
	OPT_BOOLEAN(0, "split", &top.split,
		    "split the runs of each program by the cgroup or device that drove them"),
	OPT_STRING(0, "name", &top.name_glob, "glob", "only the programs whose name matches"),
	OPT_STRING(0, "prog-type", &top.types_str, "type[,type...]",
		   "only programs of these types (libbpf's names: tracepoint, kprobe, ...)"),
	OPT_STRING(0, "id", &top.id_str, "id[,id...]", "only these programs"),
	OPT_STRING('p', "pid", &top.pid_str, "pid[,pid...]",
		   "only the programs these processes hold, or hold links to"),
	OPT_BOOLEAN(0, "stdio", &top.stdio, "print text, a screen a refresh"),
	OPT_STRING('x', "field-separator", &sep, "separator",
		   "print CSV with this separator: a header, a line a program a refresh"),
	OPT_BOOLEAN('j', "json-output", &top.json,
		    "print one JSON object a program a refresh"),
	OPT_STRING('o', "output", &top.output_name, "file", "output file name"),
	OPT_CALLBACK('m', "mmap-pages", &top.mmap_pages, "pages",
		     "number of mmap data pages per CPU", evlist__parse_mmap_pages),
	OPT_INCR('v', "verbose", &verbose, "be more verbose"),
	OPT_END()
	};
	struct sigaction act = { .sa_handler = bpf_side_band__signal };
	char msg[BUFSIZ];
	int err, on = 0;

	argc = parse_options(argc, argv, options, usage, 0);
	if (argc)
		usage_with_options_msg(usage, options, "unexpected argument '%s'", argv[0]);
	if (sep && top.json)
		usage_with_options_msg(usage, options, "-x and -j are mutually exclusive");
	if ((sep || top.json) && top.stdio)
		usage_with_options_msg(usage, options, "--stdio goes with neither -x nor -j");
	if (!top.sort_str)
		usage_with_options_msg(usage, options, "-s takes sort keys");
	if (top.delay_set && top.interval)
		usage_with_options_msg(usage, options, "-d and -I are mutually exclusive");
	if (top.interval < 0 || (top.interval && top.interval < 10))
		usage_with_options_msg(usage, options, "-I takes 10 ms or more");
	if (top.interval_count < 0)
		usage_with_options_msg(usage, options, "--interval-count takes a positive count");
	if (top.entries < 0)
		usage_with_options_msg(usage, options, "-E takes a positive count");
	if (top.id_str) {
		top.ids = intlist__new(top.id_str);
		if (!top.ids)
			usage_with_options_msg(usage, options, "--id takes program ids, not '%s'",
					       top.id_str);
	}
	if (top.pid_str) {
		top.pids = intlist__new(top.pid_str);
		if (!top.pids)
			usage_with_options_msg(usage, options, "-p takes process ids, not '%s'",
					       top.pid_str);
	}
	if (bpf_top__parse_sort(&top) ||
	    (top.types_str && bpf_top__parse_types(&top))) {
		err = -1;
		goto out;
	}
	if (bpf_check_privileges("top", true)) {
		err = -1;
		goto out;
	}
	if (top.event_str) {
		err = bpf_top__parse_events(&top);
		if (err == -ENOMEM)
			pr_err("perf bpf top: out of memory\n");
		if (err)
			goto out;
	}
#ifndef HAVE_BPF_SKEL
	if (top.hist || top.split) {
		pr_err("perf bpf top: %s needs perf built with BPF skeletons (BUILD_BPF_SKEL=1)\n",
		       top.hist ? "--hist" : "--split");
		err = -1;
		goto out;
	}
#endif
	err = bpf_top__setup_columns(&top);
	if (err) {
		pr_err("perf bpf top: out of memory\n");
		goto out;
	}

	err = bpf_out__setup(&top.out, sep, top.json, top.output_name, "top");
	if (err)
		goto out;
	top.clear = top.out.format == BPF_FORMAT_TEXT && isatty(fileno(top.out.fp));
	top.nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (top.nr_cpus < 1)
		top.nr_cpus = 1;

	err = -ENOMEM;
	if (bpf_resolver__init(&top.res))
		goto out;
	top.progs = perf_bpf__id_map();
	top.gone = perf_bpf__id_map();
	if (!top.progs || !top.gone)
		goto out;
	/* the records first, then the programs there: none falls in between */
	err = bpf_side_band__open(&top.evlist, &attr, bpf_top__record, &top, &target,
				  top.mmap_pages, "top");
	if (err)
		goto out;
	/*
	 * Without link records, links are looked for at each refresh; and
	 * unload records carry no counts
	 */
	top.links_always = !bpf_side_band__has_links(top.evlist);
	top.unload_counts = !top.links_always;
	if (top.links_always)
		pr_warning("perf bpf top: this kernel writes no link records nor final counts (attr.bpf_event_ext): %s\n",
			   "links are read every refresh, and the window a program goes in shows nothing of it");
	while (!bpf_prog_get_next_id(top.last_id, &top.last_id))
		;

	/*
	 * Run-time stats through an fd: the kernel turns them off when the
	 * last holder closes it, killed or not.  The sysctl is never written.
	 */
	top.stats_were_on = sysctl__read_int("kernel/bpf_stats_enabled", &on) == 0 && on;
	top.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (top.stats_fd < 0) {
		err = -errno;
		pr_err("perf bpf top: cannot turn BPF run-time stats on (BPF_ENABLE_STATS): %s\n",
		       str_error_r(errno, msg, sizeof(msg)));
		goto out;
	}
	if (top.stats_were_on)
		pr_warning("perf bpf top: kernel.bpf_stats_enabled is 1: %s\n",
			   "BPF run-time stats were on before and stay on");

	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
#ifdef HAVE_SLANG_SUPPORT
	/* on a terminal, the TUI unless --stdio */
	if (top.out.format == BPF_FORMAT_TEXT && top.out.fp == stdout && !top.stdio &&
	    isatty(STDIN_FILENO)) {
		setup_browser(false);
		/* perf's main ends the TUI, after the command returns */
		if (use_browser == 1) {
			err = bpf_top__tui(&top);
			goto done;
		}
	}
#endif
	bpf_out__header(&top.out, top.columns ?: bpf_top_columns);
	err = bpf_top__loop(&top, &bpf_top_text_ops, NULL);
#ifdef HAVE_SLANG_SUPPORT
done:
#endif
	if (err < 0 && err != -1)
		pr_err("perf bpf top: %s\n", str_error_r(-err, msg, sizeof(msg)));
out:
	bpf_top__exit(&top);
	return err ? -1 : 0;
}

int cmd_bpf(int argc, const char **argv)
{
	static const char * const subcommands[] = { "events", "list", "top", NULL };
	static const char * const usage[] = {
		"perf bpf events [<options>] [-- <command> [<args>]]",
		"perf bpf list [<options>]",
		"perf bpf top [<options>]",
		NULL
	};
	const struct option options[] = {
	OPT_END()
	};

	argc = parse_options_subcommand(argc, argv, options, subcommands,
					(const char **)usage, PARSE_OPT_STOP_AT_NON_OPTION);
	if (!argc)
		usage_with_options(usage, options);
	if (!strcmp(argv[0], "events"))
		return cmd_bpf_events(argc, argv);
	if (!strcmp(argv[0], "list"))
		return cmd_bpf_list(argc, argv);
	if (!strcmp(argv[0], "top"))
		return cmd_bpf_top(argc, argv);
	usage_with_options_msg(usage, options, "unknown subcommand '%s'", argv[0]);
	return -1;
}
