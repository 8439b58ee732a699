// SPDX-License-Identifier: GPL-2.0
/*
 * BPF counters for perf stat.
 *
 * Two features live here:
 *
 *  - perf stat -b <prog ids>: count events only while the given BPF
 *    programs run, with an fentry/fexit pair around each of them
 *    (bpf_skel/bpf_prog_profiler.bpf.c).
 *
 *  - bperf, perf stat --bpf-counters (also the :b event modifier and the
 *    stat.bpf-counter-events config): any number of perf stat sessions
 *    share one perf event per distinct event and CPU, read by BPF, instead
 *    of each opening its own.
 *
 * bperf design
 * ============
 *
 * One set of BPF programs serves every event and every session; nothing
 * is loaded per session.  Each distinct event has a "slot".  Before it
 * reads, a session runs bperf_read on each CPU it counts (a test run):
 * it reads the events of every active slot on that CPU.  Sessions that
 * count tasks also need to know who ran: while one exists, bperf_switch
 * is attached to sched_switch and reads the slots of such sessions only,
 * for the task leaving the CPU.  So CPU-wide sessions cost nothing per
 * context switch, and the cost per switch of task sessions grows with
 * the number of slots, not with the number of sessions.
 *
 *                     kernel                            |  perf stat
 *                                                       |  sessions
 *  test run on a ----> bperf_read, for each slot s:     |
 *  CPU (before a         now = bperf_events[s, cpu] <---|-- opened once per
 *  read)                 totals[s][cpu] +=              |   slot and CPU by
 *                          now - prev[cpu][s] ----------|-> -a/-C: totals
 *                        then as below for current      |   minus a snapshot
 *  sched_switch -----> bperf_switch, for each slot s    |   taken at enable
 *  (task sessions      of a task session:               |
 *  only)                 now = bperf_events[s, cpu]     |
 *                        if the task leaving is tracked:|
 *                          tasks[task, s].own +=        |
 *                            now - tprev[cpu][s] ----+  |
 *                                                    |  |
 *  task_newtask -----> bperf_fork: the child of a     v |
 *                      tracked task is tracked,   tasks |
 *                      anchored to its nearest    map --|-> -p/-t/workload:
 *                      root ancestor                  ^ |   sum over the
 *  sched_process_exit -> bperf_exit: last reading,    | |   tasks under the
 *                      fold own + folded into the ----+ |   session's roots
 *                      anchor, delete the entry         |   minus a snapshot
 *                                                       |
 *  bperf_root (syscall program) <-----------------------|-- register and
 *                                                       |   release roots
 *
 * Maps (pinned, see "Sharing" below):
 *
 *  attr map        bperf_attr_key (event attr and group position) -> slot.
 *                  Also the lock: sessions flock() it.
 *  bperf_events    perf event array, slot * nr_ids + CPU id (not the
 *                  index in a cpu map, so holes in the online CPUs are
 *                  fine); nr_ids is the highest possible CPU id + 1.
 *  bperf_ctl       the active slots (a group's slots are adjacent, read
 *                  in the same program run, so at the same instant on a
 *                  CPU), slot generations, the slots counting tasks, and
 *                  perf's bookkeeping: ids of the programs and links.
 *  bperf_cpu       per CPU: the previous reading of each slot for the
 *                  totals (prev) and for the task on the CPU (tprev),
 *                  when a task was last charged, counts of folds begun
 *                  and done, and of children left untracked.
 *  bperf_totals    per CPU and slot: all the slot counted on that CPU.
 *  bperf_tasks     (pid inode number, slot) -> own, folded, anchor,
 *                  references.
 *  bperf_slots     slot -> its attr key and how many sessions use it.
 *  bperf_sessions  session id -> pid, start time and slots of the perf
 *                  process, to tell when a session died without cleaning
 *                  up (kill -9).
 *  bperf_roots     (session, tid, slot) -> pid inode number of a
 *                  registered root, ditto.
 *
 * Per-CPU maps come to user space packed, one value for each possible
 * CPU in mask order, not indexed by CPU id: util/bperf_cpus.h.
 *
 * Task sessions.  perf registers the threads of its thread map as roots of
 * each of its slots.  A task is named by the inode number pidfs gives its
 * struct pid (pid->ino), which, unlike a tid, is never reused: an entry
 * kept after its task exited never stands for a later task that gets the
 * same tid.  A task forked by a tracked task is tracked too: its anchor is
 * the parent if the parent is a root that counts children, else the
 * parent's anchor.  An entry lives while something refers to it: the task
 * itself until it exits, each session using it as a root, each tracked
 * task anchored to it.  Whoever drops the last reference adds own + folded
 * to the anchor's folded and deletes the entry, so what exited children
 * counted stays counted.  A session's value for a root is the sum, over
 * the entries whose anchor chain reaches that root first among the
 * session's roots, of own + folded; with --no-inherit it is the root's own
 * count only.  Reads are rare, so perf computes this by walking the whole
 * map; the programs only do O(1) work per slot.
 *
 * CPU sessions (-a, -C) need no state in BPF at all: the value is the
 * slot's per-CPU total now minus the total when counting was enabled.
 * Only reads move the totals and the previous readings they start from,
 * so the differences add up to the event's count since the first
 * reading, which the enabling session's test run makes.  Task slots
 * keep a second previous reading per CPU (tprev), which every reading
 * for a task moves: at sched_switch, at exit, and in reads for the task
 * they interrupt.
 *
 * The slots of an all-software group (ctl->sw_slots) never multiplex.
 * For them the task hooks read the count alone, the cheaper read, and
 * charge a task the time since its CPU last charged one (a stretch of
 * bpf_ktime_get_ns() that every charge ends and starts) as time enabled
 * and running; reads do the same for the task they find on the CPU.  The
 * CPU totals take all three from the event.
 *
 * Sharing.  Sessions find each other through the attr map, pinned at the
 * --bpf-attr-map path, by default /sys/fs/bpf/bperf_attr_map (not
 * upstream's perf_attr_map: its layout differs, and both perfs may run on
 * one machine).  The other maps are pinned in the directory of the same
 * name plus "_dir" (bpffs allows no dots in names).  Every change to the
 * shared state happens with the attr map flock()ed.  The programs are not
 * pinned: their ids sit in bperf_ctl and every session holds fds on them; a
 * session that finds the ids stale (every earlier session is gone) loads
 * the programs again on the pinned maps.  The links of the three programs
 * that follow tasks (sched_switch, task_newtask, sched_process_exit) are
 * held by the task sessions only: the first one attaches them, before it
 * registers any root, later ones take them by the ids in bperf_ctl, and
 * they go with the last one, even if killed.  A session that died without
 * cleaning up is found by the next ones (its pid is gone, or its start time
 * changed): its roots are released, its slots dropped, a slot nobody uses
 * is freed and its events closed.  The last session to leave unpins
 * everything, unless stat.bpf-attr-map-persistent is set in perf config.
 *
 * Details.  A slot freed and used again gets a new generation in bperf_ctl,
 * which perf bumps before it installs the new events: the first reading of
 * a new generation on a CPU only sets the base.  A group's events are
 * opened per CPU as a perf group whose leader starts disabled and is
 * enabled once the group is whole (a sibling added to a running CPU group
 * would not be scheduled).  A test run that interrupts the exit program on
 * the same CPU (IRQs are on there) leaves the task readings to it, and
 * one that interrupts another read reads nothing, so a previous reading is
 * never used twice.  An exited task is folded into its anchor in two
 * steps (delete, add): perf reads the tasks map again if a fold was under
 * way or began meanwhile.
 *
 * Limits.  64 distinct events (a group counts as its events), 4096
 * sessions, 16384 tracked tasks (children beyond are not counted, and
 * perf says so).
 * Events are opened on the CPUs online when their slot is set up.  A CPU
 * taken offline during a CPU-wide session keeps the total of the last
 * read made while it was online (a test run cannot reach an offline
 * CPU): what it counted after that read is lost.  A
 * task's share of context-switches is approximate: the kernel counts a
 * switch just after the tracepoint, so it lands in the next task's
 * share.  Sessions in other pid namespaces are taken for dead only once
 * the programs are gone, which every session holds.  A thread that is
 * not the group leader and calls execve() takes the leader's struct pid
 * (de_thread()): what it counts from then on is lost, and its own entry
 * stays until its slot is freed.
 */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/build_bug.h>
#include <linux/err.h>
#include <linux/perf_event.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <api/fs/fs.h>

#include "bpf_counter.h"
#include "bpf-utils.h"
#include "config.h"
#include "counts.h"
#include "debug.h"
#include "evsel.h"
#include "evlist.h"
#include "intlist.h"
#include "target.h"
#include "cgroup.h"
#include "cpumap.h"
#include "bperf_cpus.h"
#include "thread_map.h"
#include <internal/xyarray.h>

#include "bpf_skel/bpf_prog_profiler.skel.h"
#include "bpf_skel/bperf_u.h"
#include "bpf_skel/bperf_leader.skel.h"
#include "bpf_skel/bperf_follower.skel.h"

/*
 * Per-CPU map values reach user space at multiples of 8 bytes: the
 * buffers of nr_possible elements below rely on these sizes.
 */
static_assert(sizeof(struct bperf_val) % 8 == 0, "bperf_val size");
static_assert(sizeof(struct bperf_cpu) % 8 == 0, "bperf_cpu size");
static_assert(sizeof(struct bpf_perf_event_value) % 8 == 0,
	      "bpf_perf_event_value size");

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

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

/* Whether the program behind @fd has the tag or the name @tok */
static bool profiler_prog_matches(int fd, const char *tok, bool tag)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char hex[2 * BPF_TAG_SIZE + 1], *full;
	bool match;
	int i;

	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		return false;
	if (tag) {
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
static int profiler_load_once(struct evsel *evsel, __u32 id, struct intlist *done)
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
	bool tag = profiler_is_tag(tok);
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
		match = profiler_prog_matches(fd, tok, tag);
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
		pr_err("Failed to find a bpf prog with the %s %s\n", tag ? "tag" : "name", tok);
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

/*
 * bperf
 */

#define BPERF_ATTR_MAP_DEFAULT	"bperf_attr_map"
#define BPERF_ATTR_MAP_NAME	"bperf_attr"
#define BPERF_DIR_SUFFIX	"_dir"
#define BPERF_PERSIST_CONFIG	"stat.bpf-attr-map-persistent"
/* sessions whose liveness a joining session checks */
#define BPERF_GC_BUDGET		32
/* reads of the tasks map before perf takes one that raced with exits */
#define BPERF_READ_TRIES	100
/* anchor chain length perf follows when it sums a session's tasks */
#define BPERF_MAX_CHAIN		64

/* What one perf process shares among its bperf events. */
static struct {
	int attr_fd;		/* the attr map; flock()ed as the lock */
	int ctl_fd;
	int slots_fd;
	int sessions_fd;
	int roots_fd;
	int tasks_fd;
	int totals_fd;
	int cpu_fd;
	int events_fd;
	int prog_fd[BPERF_NR_PROGS];	/* by enum bperf_prog */
	int link_fd[BPERF_NR_LINKS];	/* task mode only */
	__u32 sid;		/* our id in bperf_sessions, 0: none */
	struct bperf_cpus cpus;	/* possible CPUs: ids and positions */
	int users;		/* our evsels counting with bperf */
	/*
	 * Our evsels on each slot: an event named twice shares its slot.
	 * The pinned state holds one reference of ours a slot (a bit in
	 * self.slots) and one root registration a slot and thread, which
	 * is what a reclaim gives back for a session that died.
	 */
	int slot_refs[BPERF_MAX_SLOTS];
	struct bperf_tid *slot_tids[BPERF_MAX_SLOTS];	/* task mode: the roots registered */
	int slot_nr[BPERF_MAX_SLOTS];
	bool locked;
	bool persist;
	bool tasks;		/* we count tasks, not CPUs */
	__u64 pidns;
	struct bperf_ctl ctl;	/* valid while locked */
	struct bperf_session self;
	struct perf_cpu_map *online;
	char attr_path[PATH_MAX];
	char dir[PATH_MAX];
} bperf = {
	.attr_fd = -1, .ctl_fd = -1, .slots_fd = -1, .sessions_fd = -1,
	.roots_fd = -1, .tasks_fd = -1, .totals_fd = -1, .cpu_fd = -1,
	.events_fd = -1,
	.prog_fd = { [0 ... BPERF_NR_PROGS - 1] = -1 },
	.link_fd = { [0 ... BPERF_NR_LINKS - 1] = -1 },
};

/*
 * A root task: its tid (0: not registered) and the inode number of its
 * struct pid, which the programs name it by: unlike the tid, it is never
 * given to a later task.
 */
struct bperf_tid {
	__u32 tid;
	__u64 ino;
};

/* What one evsel counts through bperf (evsel->bpf_skel). */
struct bperf_counter {
	__u32 slot;
	bool unsupported;	/* the kernel cannot count the event */
	bool enabled;
	bool inherit;
	bool fresh;		/* a group member not loaded on its own yet */
	int nr;			/* CPU ids (highest possible + 1) or roots */
	struct bperf_tid *tids;	/* task mode: roots, thread map order */
	struct bperf_val *snap;	/* value when last enabled */
	struct bperf_val *base;	/* counted in earlier enabled periods */
};

static void bperf_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int bperf_map_get_id(int fd, __u32 *id)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return -errno;
	*id = info.id;
	return 0;
}

/* Turn an errno from bpf() into the advice a user needs. */
static void bperf_report(int err, const char *what, const char *path)
{
	err = err < 0 ? -err : err;
	if (err == EPERM || err == EACCES)
		pr_err("bperf: %s%s%s: %s; BPF counters need root (CAP_SYS_ADMIN and CAP_BPF)\n",
		       what, path ? " " : "", path ?: "", strerror(err));
	else
		pr_err("bperf: %s%s%s: %s\n", what, path ? " " : "",
		       path ?: "", strerror(err));
}

static int bperf_config_cb(const char *var, const char *value,
			   void *data __maybe_unused)
{
	if (!strcmp(var, BPERF_PERSIST_CONFIG))
		bperf.persist = perf_config_bool(var, value);
	return 0;
}

/* Work out where the attr map and the pin directory are; check bpffs. */
static int bperf_paths(struct target *target)
{
	char parent[PATH_MAX], *slash;
	struct statfs fs;

	if (target->attr_map)
		scnprintf(bperf.attr_path, sizeof(bperf.attr_path), "%s",
			  target->attr_map);
	else
		scnprintf(bperf.attr_path, sizeof(bperf.attr_path),
			  "%s/fs/bpf/%s", sysfs__mountpoint() ?: "/sys",
			  BPERF_ATTR_MAP_DEFAULT);
	if (strlen(bperf.attr_path) + strlen(BPERF_DIR_SUFFIX) +
	    BPF_OBJ_NAME_LEN + 2 >= sizeof(bperf.dir)) {
		pr_err("bperf: attr map path too long: %s\n", bperf.attr_path);
		return -1;
	}
	scnprintf(bperf.dir, sizeof(bperf.dir), "%s%s", bperf.attr_path,
		  BPERF_DIR_SUFFIX);

	scnprintf(parent, sizeof(parent), "%s", bperf.attr_path);
	slash = strrchr(parent, '/');
	if (strchr(slash ? slash + 1 : parent, '.')) {
		pr_err("bperf: %s: BPF filesystem names cannot contain '.'\n",
		       bperf.attr_path);
		return -1;
	}
	if (slash == parent)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		scnprintf(parent, sizeof(parent), ".");
	if (statfs(parent, &fs)) {
		pr_err("bperf: cannot use %s for the attr map: %s\n",
		       parent, strerror(errno));
		return -1;
	}
	if ((unsigned long)fs.f_type != BPF_FS_MAGIC) {
		pr_err("bperf: %s is not on a BPF filesystem (bpffs); mount one with\n"
		       "  mount -t bpf bpf %s\n"
		       "or name a path on one with --bpf-attr-map\n",
		       parent, target->attr_map ? parent : "/sys/fs/bpf");
		return -1;
	}
	return 0;
}

/* The name of a map's BTF value type; kernel BTF objects are cached. */
static const char *bperf_btf_value_name(const struct bpf_map_info *info,
					bool *denied)
{
	static struct btf *btf;
	static __u32 btf_id;
	const struct btf_type *t;

	*denied = false;
	if (!info->btf_id || !info->btf_value_type_id)
		return NULL;
	if (btf_id != info->btf_id) {
		btf__free(btf);
		btf = btf__load_from_kernel_by_id(info->btf_id);
		btf_id = btf ? info->btf_id : 0;
		/* BTF ids to fds, like program ids, need CAP_SYS_ADMIN */
		*denied = !btf && errno == EPERM;
	}
	t = btf ? btf__type_by_id(btf, info->btf_value_type_id) : NULL;
	return t ? btf__name_by_offset(btf, t->name_off) : NULL;
}

/*
 * Does the pinned map at fd look like what we would create?  'btf_value'
 * names the value type the map's BTF must have, if not NULL.  Says what
 * differs, so the user knows what squats on the path.
 */
static int bperf_map_compatible(int fd, const char *path, __u32 type,
				__u32 key_size, __u32 value_size,
				__u32 max_entries, __u32 flags,
				const char *name, const char *btf_value)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char why[128] = "";

	if (bpf_map_get_info_by_fd(fd, &info, &len)) {
		bperf_report(-errno, "cannot query", path);
		return -1;
	}
	if (info.type != type)
		scnprintf(why, sizeof(why), "map type %u, want %u",
			  info.type, type);
	else if (info.key_size != key_size)
		scnprintf(why, sizeof(why), "key size %u, want %u",
			  info.key_size, key_size);
	else if (info.value_size != value_size)
		scnprintf(why, sizeof(why), "value size %u, want %u",
			  info.value_size, value_size);
	else if (info.max_entries != max_entries)
		scnprintf(why, sizeof(why), "%u entries, want %u",
			  info.max_entries, max_entries);
	else if (info.map_flags != flags)
		scnprintf(why, sizeof(why), "flags %#x, want %#x",
			  info.map_flags, flags);
	else if (strncmp(info.name, name, BPF_OBJ_NAME_LEN - 1))
		scnprintf(why, sizeof(why), "name '%s', want '%s'",
			  info.name, name);
	else if (btf_value) {
		const char *tname;
		bool denied;

		tname = bperf_btf_value_name(&info, &denied);
		if (denied) {
			pr_err("bperf: cannot read the BTF of %s: sharing BPF counters needs CAP_SYS_ADMIN\n",
			       path);
			return -1;
		}
		if (!tname || strcmp(tname, btf_value))
			scnprintf(why, sizeof(why),
				  "BTF value type '%s', want '%s'",
				  tname ?: "none", btf_value);
	}
	if (!why[0])
		return 0;
	pr_err("bperf: %s is not a map of this perf's BPF counters (%s).\n"
	       "It may come from another perf version: remove it, or pick another path\n"
	       "with --bpf-attr-map.\n", path, why);
	return -1;
}

static int bperf_attr_map_compatible(int fd)
{
	return bperf_map_compatible(fd, bperf.attr_path, BPF_MAP_TYPE_HASH,
				    sizeof(struct bperf_attr_key),
				    sizeof(__u32), BPERF_MAX_SLOTS, 0,
				    BPERF_ATTR_MAP_NAME, NULL);
}

/* Open the attr map, creating and pinning it if needed. */
static int bperf_attr_map_open(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int fd, err;

	for (;;) {
		fd = bpf_obj_get(bperf.attr_path);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT) {
			bperf_report(-errno, "cannot open", bperf.attr_path);
			return -1;
		}
		fd = bpf_map_create(BPF_MAP_TYPE_HASH, BPERF_ATTR_MAP_NAME,
				    sizeof(struct bperf_attr_key),
				    sizeof(__u32), BPERF_MAX_SLOTS, &opts);
		if (fd < 0) {
			bperf_report(-errno, "cannot create the attr map",
				     NULL);
			return -1;
		}
		if (!bpf_obj_pin(fd, bperf.attr_path))
			return fd;
		err = errno;
		close(fd);
		if (err != EEXIST) {
			bperf_report(-err, "cannot pin", bperf.attr_path);
			return -1;
		}
		/* another session pinned one first: use it */
	}
}

/*
 * Take the lock: flock() on the attr map.  The last session to leave
 * unpins the map, so one we opened before we got the lock may be stale:
 * check that the path still holds the map we locked.
 */
static int bperf_lock_first(void)
{
	__u32 locked_id = 0, pinned_id = 0;
	int fd, cur, tries;

	for (tries = 0; tries < 100; tries++) {
		fd = bperf_attr_map_open();
		if (fd < 0)
			return -1;
		if (bperf_attr_map_compatible(fd))
			goto fail;
		if (flock(fd, LOCK_EX)) {
			bperf_report(-errno, "cannot lock", bperf.attr_path);
			goto fail;
		}
		cur = bpf_obj_get(bperf.attr_path);
		if (cur >= 0 && !bperf_map_get_id(fd, &locked_id) &&
		    !bperf_map_get_id(cur, &pinned_id) &&
		    locked_id == pinned_id) {
			close(cur);
			bperf.attr_fd = fd;
			bperf.locked = true;
			return 0;
		}
		if (cur >= 0)
			close(cur);
		close(fd);
	}
	pr_err("bperf: %s keeps changing under us\n", bperf.attr_path);
	return -1;
fail:
	close(fd);
	return -1;
}

static int bperf_ctl_read(void)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bperf.ctl_fd, &zero, &bperf.ctl)) {
		bperf_report(-errno, "cannot read the control map", NULL);
		return -1;
	}
	return 0;
}

static int bperf_ctl_write(void)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bperf.ctl_fd, &zero, &bperf.ctl, BPF_ANY)) {
		bperf_report(-errno, "cannot update the control map", NULL);
		return -1;
	}
	return 0;
}

static int bperf_lock(void)
{
	if (flock(bperf.attr_fd, LOCK_EX)) {
		bperf_report(-errno, "cannot lock", bperf.attr_path);
		return -1;
	}
	bperf.locked = true;
	if (bperf_ctl_read()) {
		flock(bperf.attr_fd, LOCK_UN);
		bperf.locked = false;
		return -1;
	}
	return 0;
}

static void bperf_unlock(void)
{
	if (bperf.locked)
		flock(bperf.attr_fd, LOCK_UN);
	bperf.locked = false;
}

/* Fields 3 (state) and 22 (start time) of /proc/<pid>/stat. */
static int bperf_proc_stat(pid_t pid, char *state, __u64 *start)
{
	char path[64], buf[1024], *p, *end;
	unsigned long long st;
	ssize_t n;
	int fd, i;

	scnprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* the command name may hold anything, even ") " */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	/* field 3 is the state; skip to field 22 */
	for (i = 3; i < 22 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return -1;
	errno = 0;
	st = strtoull(p, &end, 10);
	if (errno || end == p)
		return -1;
	*start = st;
	return 0;
}

static bool bperf_session_alive(const struct bperf_session *s)
{
	__u64 start;
	char state;

	/* from another pid namespace: we cannot tell, keep it */
	if (s->pidns != bperf.pidns)
		return true;
	if (kill(s->pid, 0) && errno == ESRCH)
		return false;
	if (bperf_proc_stat(s->pid, &state, &start))
		return false;
	return start == s->start_time && state != 'Z' && state != 'X';
}

/*
 * Run a root operation on task @t for @slot.  BPERF_ROOT_ADD sets the
 * pid inode number of @t.
 */
static int bperf_root_run(__u32 op, struct bperf_tid *t, __u32 slot,
			  bool inherit)
{
	struct bperf_root_op arg = {
		.op = op, .tid = t->tid, .slot = slot, .inherit = inherit,
		.ino = t->ino,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .ctx_in = &arg,
		    .ctx_size_in = sizeof(arg),
	);
	int err;

	err = bpf_prog_test_run_opts(bperf.prog_fd[BPERF_PROG_ROOT], &opts);
	if (err)
		return -errno;
	if (op == BPERF_ROOT_ADD)
		t->ino = arg.ino;
	return (int)opts.retval;
}

static void bperf_slot_zero(__u32 slot)
{
	struct bperf_slot empty = {};

	bpf_map_update_elem(bperf.slots_fd, &slot, &empty, BPF_ANY);
}

static int bperf_dump(int fd, void *keys, __u32 key_size, void *vals,
		      __u32 value_size, __u32 max);

/* Delete the tasks map entries of a slot nobody counts any more. */
static void bperf_purge_tasks(__u32 slot)
{
	__u64 *keys;
	struct bperf_task *vals;
	int n, i;

	keys = calloc(BPERF_MAX_TASKS, sizeof(*keys));
	vals = calloc(BPERF_MAX_TASKS, sizeof(*vals));
	n = keys && vals ? bperf_dump(bperf.tasks_fd, keys, sizeof(*keys),
				      vals, sizeof(*vals), BPERF_MAX_TASKS) : 0;
	for (i = 0; i < n; i++) {
		if (BPERF_KEY_SLOT(keys[i]) == slot)
			bpf_map_delete_elem(bperf.tasks_fd, &keys[i]);
	}
	free(keys);
	free(vals);
}

/* Stop reading a slot, close its events, forget it.  Locked. */
static void bperf_slot_free(__u32 slot)
{
	struct bperf_slot rec;
	__u32 i, j, key;

	for (i = j = 0; i < bperf.ctl.nr_active; i++) {
		if (bperf.ctl.active[i] != slot)
			bperf.ctl.active[j++] = bperf.ctl.active[i];
	}
	bperf.ctl.nr_active = j;
	bperf.ctl.task_slots &= ~(1ULL << slot);
	bperf_ctl_write();

	for (i = 0; i < (__u32)bperf.cpus.nr_ids; i++) {
		key = bperf_cpus__key(&bperf.cpus, slot, i);
		bpf_map_delete_elem(bperf.events_fd, &key);
	}
	bperf_purge_tasks(slot);
	if (!bpf_map_lookup_elem(bperf.slots_fd, &slot, &rec) &&
	    rec.key.attr.size)
		bpf_map_delete_elem(bperf.attr_fd, &rec.key);
	bperf_slot_zero(slot);
}

/* Drop a session's use of a slot; free it when nobody uses it.  Locked. */
static void bperf_slot_put(__u32 slot, bool tasks)
{
	struct bperf_slot rec;

	if (bpf_map_lookup_elem(bperf.slots_fd, &slot, &rec))
		return;
	if (rec.users)
		rec.users--;
	if (tasks && rec.task_users)
		rec.task_users--;
	if (!rec.users) {
		bperf_slot_free(slot);
		return;
	}
	bpf_map_update_elem(bperf.slots_fd, &slot, &rec, BPF_ANY);
	if (!rec.task_users && (bperf.ctl.task_slots & (1ULL << slot))) {
		/*
		 * No session counts tasks with it: stop tracking them, and
		 * forget the tasks still tracked, which would never be
		 * dropped now that the exit program skips the slot.
		 */
		bperf.ctl.task_slots &= ~(1ULL << slot);
		bperf_ctl_write();
		bperf_purge_tasks(slot);
	}
}

/*
 * Read a whole hash map into keys[] and vals[], which have room for
 * 'max' entries.  Returns the number of entries.
 */
static int bperf_dump(int fd, void *keys, __u32 key_size, void *vals,
		      __u32 value_size, __u32 max)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 batch, count, n = 0;
	void *in = NULL, *prev = NULL, *key;
	int err;

	for (;;) {
		count = max - n;
		if (!count)
			return n;
		err = bpf_map_lookup_batch(fd, in, &batch,
					   keys + (size_t)n * key_size,
					   vals + (size_t)n * value_size,
					   &count, &opts);
		if (err && errno != ENOENT)
			break;
		n += count;
		if (err)
			return n;
		in = &batch;
	}

	/* no batch operations: walk the keys */
	n = 0;
	while (n < max) {
		key = keys + (size_t)n * key_size;
		if (bpf_map_get_next_key(fd, prev, key))
			break;
		prev = key;
		if (!bpf_map_lookup_elem(fd, key,
					 vals + (size_t)n * value_size))
			n++;
	}
	return n;
}

/* Undo what a session that died left behind.  Locked. */
static void bperf_reap(__u32 sid, const struct bperf_session *s)
{
	struct bperf_root_key *keys;
	struct bperf_tid t;
	__u64 *vals;
	__u32 slot;
	int n, i;

	pr_debug("bperf: reclaiming session %u of pid %u\n", sid, s->pid);
	if (s->flags & BPERF_SESSION_TASKS) {
		keys = calloc(BPERF_MAX_ROOTS, sizeof(*keys));
		vals = calloc(BPERF_MAX_ROOTS, sizeof(*vals));
		n = 0;
		if (keys && vals)
			n = bperf_dump(bperf.roots_fd, keys, sizeof(*keys),
				       vals, sizeof(*vals), BPERF_MAX_ROOTS);
		for (i = 0; i < n; i++) {
			if (keys[i].sid != sid)
				continue;
			/* forget the record first: a crash now only leaks */
			bpf_map_delete_elem(bperf.roots_fd, &keys[i]);
			t.tid = keys[i].tid;
			t.ino = vals[i];
			bperf_root_run(BPERF_ROOT_DEL, &t, keys[i].slot,
				       keys[i].inherit);
		}
		free(keys);
		free(vals);
	}
	for (slot = 0; slot < BPERF_MAX_SLOTS; slot++) {
		if (s->slots & (1ULL << slot))
			bperf_slot_put(slot, s->flags & BPERF_SESSION_TASKS);
	}
	bpf_map_delete_elem(bperf.sessions_fd, &sid);
	if (bperf.ctl.nr_sessions)
		bperf.ctl.nr_sessions--;
	bperf_ctl_write();
}

struct bperf_sess_ent {
	__u32 sid;
	struct bperf_session s;
};

static int bperf_sess_cmp(const void *a, const void *b)
{
	const struct bperf_sess_ent *x = a, *y = b;

	return x->sid < y->sid ? -1 : x->sid > y->sid;
}

enum bperf_gc_flags {
	BPERF_GC_STOP_AT_LIVE	= 1 << 0,	/* stop at the first live one */
	BPERF_GC_ALL_DEAD	= 1 << 1,	/* the programs were gone */
};

/*
 * Look at up to 'budget' other sessions (all if budget <= 0), in session
 * id order from where the last look stopped, and reap the dead ones.
 * With BPERF_GC_ALL_DEAD they are all dead, whatever pid namespace they
 * ran in.  Returns the number of live sessions seen, or -1 if the
 * sessions could not be read.  Locked.
 */
static int bperf_gc(int budget, unsigned int flags)
{
	struct bperf_session *recs;
	struct bperf_sess_ent *ent;
	__u32 *sids;
	int n, i, k, start, live = -1;

	sids = calloc(BPERF_MAX_SESSIONS, sizeof(*sids));
	recs = calloc(BPERF_MAX_SESSIONS, sizeof(*recs));
	ent = calloc(BPERF_MAX_SESSIONS, sizeof(*ent));
	if (!sids || !recs || !ent)
		goto out;
	n = bperf_dump(bperf.sessions_fd, sids, sizeof(*sids), recs,
		       sizeof(*recs), BPERF_MAX_SESSIONS);
	live = 0;
	for (i = 0; i < n; i++) {
		ent[i].sid = sids[i];
		ent[i].s = recs[i];
	}
	qsort(ent, n, sizeof(*ent), bperf_sess_cmp);
	for (start = 0; start < n; start++) {
		if (ent[start].sid > bperf.ctl.gc_cursor)
			break;
	}
	if (budget <= 0 || budget > n)
		budget = n;
	for (k = 0; k < budget; k++) {
		i = (start + k) % n;
		bperf.ctl.gc_cursor = ent[i].sid;
		if (ent[i].sid == bperf.sid)
			continue;
		if (!(flags & BPERF_GC_ALL_DEAD) &&
		    bperf_session_alive(&ent[i].s)) {
			live++;
			if (flags & BPERF_GC_STOP_AT_LIVE)
				break;
			continue;
		}
		bperf_reap(ent[i].sid, &ent[i].s);
	}
	if (bperf.ctl_fd >= 0)
		bperf_ctl_write();
out:
	free(sids);
	free(recs);
	free(ent);
	return live;
}

static void bperf_close_progs(void)
{
	int i;

	for (i = 0; i < BPERF_NR_LINKS; i++)
		bperf_close_fd(&bperf.link_fd[i]);
	for (i = 0; i < BPERF_NR_PROGS; i++)
		bperf_close_fd(&bperf.prog_fd[i]);
}

/*
 * Load the programs on the maps pinned in the directory (or pin new
 * ones) and record their ids in the control map.  Nothing is attached
 * yet: see bperf_links_get().  Locked.
 */
static int bperf_load_programs(void)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = bperf.dir);
	struct bperf_follower_bpf *follower = NULL;
	struct bperf_leader_bpf *leader = NULL;
	struct bpf_program *progs[BPERF_NR_PROGS];
	__u32 len, zero = 0;
	int err = -1, i, ctl_fd = -1;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("bperf: the kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF\n");
		return -1;
	}
	if (mkdir(bperf.dir, 0700) && errno != EEXIST) {
		bperf_report(-errno, "cannot create", bperf.dir);
		return -1;
	}
	set_max_rlimit();

	leader = bperf_leader_bpf__open_opts(&opts);
	follower = bperf_follower_bpf__open_opts(&opts);
	if (!leader || !follower) {
		pr_err("bperf: cannot open the BPF skeletons\n");
		goto out;
	}
	leader->rodata->bperf_nr_ids = bperf.cpus.nr_ids;
	follower->rodata->bperf_nr_ids = bperf.cpus.nr_ids;
	bpf_map__set_max_entries(leader->maps.bperf_events,
				 BPERF_MAX_SLOTS * bperf.cpus.nr_ids);
	bpf_map__set_max_entries(follower->maps.bperf_events,
				 BPERF_MAX_SLOTS * bperf.cpus.nr_ids);
	err = bperf_leader_bpf__load(leader);
	if (!err)
		err = bperf_follower_bpf__load(follower);
	if (err) {
		if (err == -EPERM)
			bperf_report(err, "cannot load the BPF programs", NULL);
		else
			pr_err("bperf: cannot load the BPF programs: %s (-v shows the verifier log)\n",
			       strerror(-err));
		err = -1;
		goto out;
	}
	err = -1;

	/* a fresh control map is all zeroes: set it up */
	ctl_fd = bpf_map__fd(leader->maps.bperf_ctl);
	if (bpf_map_lookup_elem(ctl_fd, &zero, &bperf.ctl))
		goto out;
	if (!bperf.ctl.magic) {
		bperf.ctl.magic = BPERF_MAGIC;
		bperf.ctl.nr_ids = bperf.cpus.nr_ids;
	}

	progs[BPERF_PROG_SWITCH] = leader->progs.bperf_switch;
	progs[BPERF_PROG_FORK] = follower->progs.bperf_fork;
	progs[BPERF_PROG_EXIT] = follower->progs.bperf_exit;
	progs[BPERF_PROG_READ] = leader->progs.bperf_read;
	progs[BPERF_PROG_ROOT] = follower->progs.bperf_root;
	bperf_close_progs();
	for (i = 0; i < BPERF_NR_PROGS; i++) {
		struct bpf_prog_info info = {};

		bperf.prog_fd[i] = dup(bpf_program__fd(progs[i]));
		len = sizeof(info);
		if (bperf.prog_fd[i] < 0 ||
		    bpf_prog_get_info_by_fd(bperf.prog_fd[i], &info, &len))
			goto out;
		bperf.ctl.prog_id[i] = info.id;
	}
	/* links of earlier programs, if any, went with them */
	memset(bperf.ctl.link_id, 0, sizeof(bperf.ctl.link_id));
	if (bpf_map_update_elem(ctl_fd, &zero, &bperf.ctl, BPF_ANY)) {
		bperf_report(-errno, "cannot set up the control map", NULL);
		goto out;
	}
	err = 0;
out:
	bperf_follower_bpf__destroy(follower);
	bperf_leader_bpf__destroy(leader);
	return err;
}

/* Open a pinned map of the directory and check it against the skeleton. */
static int bperf_open_pinned(struct bpf_map *map, struct btf *btf, int *fd)
{
	char path[PATH_MAX];
	const struct btf_type *t;
	const char *vname = NULL;
	__u32 vid;

	scnprintf(path, sizeof(path), "%s/%s", bperf.dir, bpf_map__name(map));
	*fd = bpf_obj_get(path);
	if (*fd < 0) {
		bperf_report(-errno, "cannot open", path);
		return -1;
	}
	vid = bpf_map__btf_value_type_id(map);
	if (btf && vid) {
		t = btf__type_by_id(btf, vid);
		if (t)
			vname = btf__name_by_offset(btf, t->name_off);
	}
	return bperf_map_compatible(*fd, path, bpf_map__type(map),
				    bpf_map__key_size(map),
				    bpf_map__value_size(map),
				    bpf_map__max_entries(map),
				    bpf_map__map_flags(map),
				    bpf_map__name(map), vname);
}

static int bperf_open_maps(void)
{
	struct bperf_leader_bpf *skel;
	typeof(skel->maps) *maps;
	struct btf *btf;
	int err = -1;

	/* the skeleton, never loaded, says what the pinned maps must be */
	skel = bperf_leader_bpf__open();
	if (!skel) {
		pr_err("bperf: cannot open the BPF skeleton\n");
		return -1;
	}
	btf = bpf_object__btf(skel->obj);
	bpf_map__set_max_entries(skel->maps.bperf_events,
				 BPERF_MAX_SLOTS * bperf.cpus.nr_ids);
	maps = &skel->maps;
	if (bperf_open_pinned(maps->bperf_ctl, btf, &bperf.ctl_fd) ||
	    bperf_open_pinned(maps->bperf_slots, btf, &bperf.slots_fd) ||
	    bperf_open_pinned(maps->bperf_sessions, btf, &bperf.sessions_fd) ||
	    bperf_open_pinned(maps->bperf_roots, btf, &bperf.roots_fd) ||
	    bperf_open_pinned(maps->bperf_tasks, btf, &bperf.tasks_fd) ||
	    bperf_open_pinned(maps->bperf_totals, btf, &bperf.totals_fd) ||
	    bperf_open_pinned(maps->bperf_cpu, btf, &bperf.cpu_fd) ||
	    bperf_open_pinned(maps->bperf_events, btf, &bperf.events_fd))
		goto out;
	/* perf and the BPF objects must agree on the layouts */
	if (bpf_map__value_size(maps->bperf_ctl) != sizeof(struct bperf_ctl) ||
	    bpf_map__value_size(maps->bperf_slots) !=
	    sizeof(struct bperf_slot) ||
	    bpf_map__value_size(maps->bperf_sessions) !=
	    sizeof(struct bperf_session) ||
	    bpf_map__key_size(maps->bperf_roots) !=
	    sizeof(struct bperf_root_key) ||
	    bpf_map__value_size(maps->bperf_roots) != sizeof(__u64) ||
	    bpf_map__key_size(maps->bperf_tasks) !=
	    sizeof(__u64) ||
	    bpf_map__value_size(maps->bperf_tasks) !=
	    sizeof(struct bperf_task) ||
	    bpf_map__value_size(maps->bperf_totals) !=
	    sizeof(struct bperf_val) ||
	    bpf_map__value_size(maps->bperf_cpu) != sizeof(struct bperf_cpu)) {
		pr_err("bperf: perf and its BPF objects disagree on map layouts\n");
		goto out;
	}
	if (bperf_ctl_read())
		goto out;
	/*
	 * All zeroes: the session that pinned it died before it set it up.
	 * It names no programs, so bperf_join() loads them and sets it up.
	 */
	if (bperf.ctl.magic && (bperf.ctl.magic != BPERF_MAGIC ||
				bperf.ctl.nr_ids != (__u32)bperf.cpus.nr_ids)) {
		pr_err("bperf: %s/bperf_ctl has layout %#x for %u CPU ids, want %#x for %d:\n"
		       "remove %s and %s\n", bperf.dir, bperf.ctl.magic,
		       bperf.ctl.nr_ids, BPERF_MAGIC, bperf.cpus.nr_ids,
		       bperf.dir, bperf.attr_path);
		goto out;
	}
	err = 0;
out:
	bperf_leader_bpf__destroy(skel);
	return err;
}

/* Close *fd, if open, and keep 'new' there instead. */
static void bperf_swap_fd(int *fd, int new)
{
	bperf_close_fd(fd);
	*fd = new;
}

/*
 * An fd for an object the control map names by id: -ENOENT if it is
 * gone.  Only CAP_SYS_ADMIN may turn ids into fds: without it, sharing
 * the programs other sessions loaded cannot work, so say so.
 */
static int bperf_fd_by_id(int (*get)(__u32 id), __u32 id, const char *what)
{
	int fd = id ? get(id) : -1;

	if (fd >= 0)
		return fd;
	if (id && errno == EPERM) {
		pr_err("bperf: cannot open the %s other sessions loaded (id %u): sharing BPF counters needs CAP_SYS_ADMIN\n",
		       what, id);
		return -EPERM;
	}
	pr_debug("bperf: %s %u is gone\n", what, id);
	return -ENOENT;
}

/*
 * Hold the programs the control map names: 0 if we do, -ENOENT if any
 * is gone, another negative errno if we may not.
 */
static int bperf_get_programs(void)
{
	int i, fd;

	for (i = 0; i < BPERF_NR_PROGS; i++) {
		fd = bperf_fd_by_id(bpf_prog_get_fd_by_id, bperf.ctl.prog_id[i],
				    "program");
		if (fd < 0)
			return fd;
		bperf_swap_fd(&bperf.prog_fd[i], fd);
	}
	return 0;
}

/*
 * Task mode: hold the links of the programs that follow tasks, attaching
 * them if no other task-mode session holds them.  CPU-wide sessions hold
 * no link, so that while only they run, nothing of bperf runs on context
 * switches.  Link ids are reused: a link is ours only if it still runs
 * our program.  Locked; the caller writes the control map.
 */
static int bperf_links_get(void)
{
	int i, fd;

	for (i = 0; i < BPERF_NR_LINKS; i++) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);

		fd = bperf.ctl.link_id[i] ?
		     bpf_link_get_fd_by_id(bperf.ctl.link_id[i]) : -ENOENT;
		if (fd < 0 && fd != -ENOENT) {
			bperf_report(fd, "cannot open the links other sessions attached",
				     NULL);
			return -1;
		}
		if (fd >= 0 && (bpf_link_get_info_by_fd(fd, &info, &len) ||
				info.prog_id != bperf.ctl.prog_id[i])) {
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			/* tp_btf programs know their tracepoint */
			fd = bpf_raw_tracepoint_open(NULL, bperf.prog_fd[i]);
			if (fd < 0) {
				bperf_report(-errno, "cannot attach a BPF program",
					     NULL);
				return -1;
			}
			memset(&info, 0, sizeof(info));
			len = sizeof(info);
			if (bpf_link_get_info_by_fd(fd, &info, &len)) {
				bperf_report(-errno, "cannot get the info of a BPF link",
					     NULL);
				close(fd);
				return -1;
			}
			bperf.ctl.link_id[i] = info.id;
		}
		bperf_swap_fd(&bperf.link_fd[i], fd);
	}
	return 0;
}

static void bperf_drop_fds(void)
{
	bperf_close_progs();
	bperf_close_fd(&bperf.ctl_fd);
	bperf_close_fd(&bperf.slots_fd);
	bperf_close_fd(&bperf.sessions_fd);
	bperf_close_fd(&bperf.roots_fd);
	bperf_close_fd(&bperf.tasks_fd);
	bperf_close_fd(&bperf.totals_fd);
	bperf_close_fd(&bperf.cpu_fd);
	bperf_close_fd(&bperf.events_fd);
	bperf_close_fd(&bperf.attr_fd);
}

static int bperf_register(void)
{
	__u32 sid, n;
	int round;

	for (round = 0; round < 2; round++) {
		for (n = 0; n < BPERF_MAX_SESSIONS; n++) {
			sid = (bperf.ctl.next_sid + n) % BPERF_MAX_SESSIONS + 1;
			if (!bpf_map_update_elem(bperf.sessions_fd, &sid,
						 &bperf.self, BPF_NOEXIST))
				goto registered;
			if (errno == E2BIG)
				break;
			if (errno != EEXIST) {
				bperf_report(-errno,
					     "cannot register the session",
					     NULL);
				return -1;
			}
		}
		/* every id is taken: reap the dead, then look again */
		if (!round)
			bperf_gc(0, 0);
	}
	pr_err("bperf: too many sessions: all %d are in use\n",
	       BPERF_MAX_SESSIONS);
	return -1;

registered:
	bperf.sid = sid;
	bperf.ctl.next_sid = sid;
	bperf.ctl.nr_sessions++;
	if (bperf_ctl_write())
		return -1;
	/* a little housekeeping for the sessions that died */
	bperf_gc(BPERF_GC_BUDGET, 0);
	return 0;
}

/* Remove what we pinned, unless the user wants the maps kept. */
static void bperf_teardown(void)
{
	struct dirent *d;
	char path[PATH_MAX];
	__u32 slot;
	DIR *dir;

	/* slots a crashed session may have left half set up */
	for (slot = 0; bperf.slots_fd >= 0 && bperf.ctl_fd >= 0 &&
	     slot < BPERF_MAX_SLOTS; slot++) {
		struct bperf_slot rec;

		if (!bpf_map_lookup_elem(bperf.slots_fd, &slot, &rec) &&
		    rec.key.attr.size)
			bperf_slot_free(slot);
	}
	if (bperf.persist)
		return;
	dir = opendir(bperf.dir);
	if (dir) {
		while ((d = readdir(dir)) != NULL) {
			if (d->d_name[0] == '.')
				continue;
			scnprintf(path, sizeof(path), "%s/%s", bperf.dir,
				  d->d_name);
			unlink(path);
		}
		closedir(dir);
	}
	rmdir(bperf.dir);
	unlink(bperf.attr_path);
}

/*
 * Join the sessions sharing the attr map, or set up the sharing if we
 * are the first.  Returns locked on success.
 */
static int bperf_join(struct target *target)
{
	char ctl_path[PATH_MAX];
	bool fresh = false;
	struct stat st;
	char state;
	int err;

	if (bperf_paths(target))
		return -1;
	perf_config(bperf_config_cb, NULL);
	if (bperf_cpus__init(&bperf.cpus, NULL)) {
		pr_err("bperf: cannot read the possible CPUs\n");
		return -1;
	}
	bperf.online = perf_cpu_map__new_online_cpus();
	if (!bperf.online) {
		bperf_cpus__exit(&bperf.cpus);
		return -1;
	}
	if (!stat("/proc/self/ns/pid", &st))
		bperf.pidns = st.st_ino;
	bperf.self.pid = getpid();
	bperf.self.pidns = bperf.pidns;
	if (bperf_proc_stat(bperf.self.pid, &state, &bperf.self.start_time)) {
		pr_err("bperf: cannot read /proc/self/stat\n");
		goto fail;
	}
	if (bperf.tasks)
		bperf.self.flags |= BPERF_SESSION_TASKS;

	if (bperf_lock_first())
		goto fail;

	scnprintf(ctl_path, sizeof(ctl_path), "%s/bperf_ctl", bperf.dir);
	if (access(ctl_path, F_OK)) {
		fresh = true;
		if (bperf_load_programs())
			goto fail;
	}
	if (bperf_open_maps())
		goto fail;
	err = bperf_get_programs();
	if (err == -ENOENT) {
		/*
		 * Every session holds the programs: if they are gone, so
		 * are all the sessions.  Load them again on the pinned maps,
		 * then reap every session still registered, wherever it ran.
		 */
		pr_debug("bperf: the programs are gone, loading them again\n");
		if (bperf_load_programs() || bperf_ctl_read() ||
		    bperf_get_programs()) {
			pr_err("bperf: cannot set up the BPF programs\n");
			goto fail;
		}
		bperf_gc(0, BPERF_GC_ALL_DEAD);
	} else if (err) {
		goto fail;
	}
	/* before any root: a fork in between would go untracked */
	if (bperf.tasks && bperf_links_get())
		goto fail;
	if (bperf_register())
		goto fail;
	return 0;
fail:
	/* do not leave behind what we set up for nobody */
	if (bperf.locked && fresh)
		bperf_teardown();
	bperf_unlock();
	bperf_drop_fds();
	perf_cpu_map__put(bperf.online);
	bperf.online = NULL;
	bperf_cpus__exit(&bperf.cpus);
	return -1;
}

/* Our last bperf evsel is gone: deregister, maybe turn off the lights. */
static void bperf_leave(void)
{
	__u32 slot;

	for (slot = 0; slot < BPERF_MAX_SLOTS; slot++) {
		if (bperf.slot_refs[slot] || bperf.slot_tids[slot])
			pr_debug("bperf: slot %u: %d references of ours left\n", slot,
				 bperf.slot_refs[slot]);
		bperf.slot_refs[slot] = 0;
		zfree(&bperf.slot_tids[slot]);
		bperf.slot_nr[slot] = 0;
	}
	if (bperf.sid) {
		bpf_map_delete_elem(bperf.sessions_fd, &bperf.sid);
		if (bperf.ctl.nr_sessions)
			bperf.ctl.nr_sessions--;
		bperf_ctl_write();
		bperf.sid = 0;
		/* not if the sessions could not be read: some may live */
		if (bperf_gc(0, BPERF_GC_STOP_AT_LIVE) == 0)
			bperf_teardown();
	}
	bperf_unlock();
	bperf_drop_fds();
	perf_cpu_map__put(bperf.online);
	bperf.online = NULL;
	bperf_cpus__exit(&bperf.cpus);
}

static bool bperf_wanted(struct evsel *evsel, struct target *target)
{
	return target->use_bpf || evsel->bpf_counter ||
	       evsel__match_bpf_counter_events(evsel->name);
}

/* FNV-1a, to tell the groups an event may belong to apart */
static __u64 bperf_hash(__u64 h, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The attr as a key: without what perf stat sets per target. */
static void bperf_attr_norm(struct perf_event_attr *attr)
{
	attr->disabled = 0;
	attr->inherit = 0;
	attr->enable_on_exec = 0;
	attr->inherit_stat = 0;
	attr->read_format = 0;
}

static void bperf_make_keys(struct evsel *leader, struct bperf_attr_key *keys,
			    int n)
{
	struct evsel *pos;
	__u64 sig = 0xcbf29ce484222325ULL;
	int i = 0;

	memset(keys, 0, n * sizeof(*keys));
	for_each_group_evsel(pos, leader) {
		if (i == n)
			break;
		keys[i].attr = pos->core.attr;
		bperf_attr_norm(&keys[i].attr);
		sig = bperf_hash(sig, &keys[i].attr, sizeof(keys[i].attr));
		i++;
	}
	for (i = 0; i < n; i++) {
		keys[i].group_sig = n > 1 ? sig : 0;
		keys[i].group_pos = i;
		keys[i].group_len = n;
	}
}

/* Errors perf stat shows as "<not supported>" rather than fail on */
static bool bperf_unsupported(int err)
{
	return err == -ENOENT || err == -EOPNOTSUPP || err == -ENXIO ||
	       err == -EINVAL || err == -ENODEV;
}

/*
 * Open the events of a group (or a lone event) on the online CPUs of its
 * PMU, as a real perf group, and put them in the events array at their
 * slots.
 * Our fds are closed after: the array keeps the events.  Locked.
 */
static int bperf_open_events(struct evsel *leader, __u32 *slots, int n,
			     struct target *target)
{
	struct perf_event_attr saved[n];
	struct evsel *pos, *failed = leader;
	struct perf_cpu_map *cpus;
	struct perf_cpu cpu;
	int i, idx, err = 0, fd;
	__u32 key;

	/* the PMU of a hybrid system's CPU type counts on those CPUs only */
	if (perf_cpu_map__has_any_cpu_or_is_empty(leader->core.own_cpus))
		cpus = perf_cpu_map__get(bperf.online);
	else
		cpus = perf_cpu_map__intersect(bperf.online,
					       leader->core.own_cpus);
	if (perf_cpu_map__is_empty(cpus)) {
		perf_cpu_map__put(cpus);
		pr_err("bperf: %s: none of its CPUs is online\n",
		       evsel__name(leader));
		return -1;
	}

	i = 0;
	for_each_group_evsel(pos, leader) {
		saved[i] = pos->core.attr;
		bperf_attr_norm(&pos->core.attr);
		i++;
	}
	/*
	 * A sibling added to a group that is already counting would not be
	 * scheduled until the group is, which for a CPU event may be never:
	 * open the leader disabled and enable it when the group is whole.
	 */
	leader->core.attr.disabled = 1;
	i = 0;
	for_each_group_evsel(pos, leader) {
		failed = pos;
		err = evsel__open_per_cpu(pos, cpus, -1);
		if (err)
			break;
		perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
			fd = *(int *)xyarray__entry(pos->core.fd, idx, 0);
			key = bperf_cpus__key(&bperf.cpus, slots[i], cpu.cpu);
			if (bpf_map_update_elem(bperf.events_fd, &key, &fd,
						BPF_ANY)) {
				err = -errno;
				break;
			}
		}
		if (err)
			break;
		i++;
	}
	if (!err) {
		failed = leader;
		perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
			fd = *(int *)xyarray__entry(leader->core.fd, idx, 0);
			if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
				err = -errno;
				break;
			}
		}
	}
	if (err) {
		char msg[BUFSIZ];

		if (bperf_unsupported(err)) {
			pr_debug("bperf: %s is not supported\n",
				 evsel__name(failed));
		} else {
			errno = -err;
			evsel__open_strerror(failed, target, -err, msg,
					     sizeof(msg));
			pr_err("bperf: cannot open %s: %s\n",
			       evsel__name(failed), msg);
		}
		for (i = 0; i < n; i++) {
			perf_cpu_map__for_each_cpu(cpu, idx, bperf.online) {
				key = bperf_cpus__key(&bperf.cpus, slots[i],
						      cpu.cpu);
				bpf_map_delete_elem(bperf.events_fd, &key);
			}
		}
	}
	i = 0;
	for_each_group_evsel(pos, leader) {
		evsel__close(pos);
		pos->core.attr = saved[i++];
	}
	perf_cpu_map__put(cpus);
	return err;
}

/*
 * Drop a reference of one of our evsels to @slot; with the last, forget
 * our use of it, then give its reference back.  Locked.
 */
static void bperf_slot_unref(__u32 slot)
{
	if (bperf.slot_refs[slot] <= 0) {
		pr_debug("bperf: slot %u: no reference of ours to drop\n", slot);
		return;
	}
	if (--bperf.slot_refs[slot] > 0)
		return;
	/* forget the use first: a crash now only leaks */
	bperf.self.slots &= ~(1ULL << slot);
	bpf_map_update_elem(bperf.sessions_fd, &bperf.sid, &bperf.self, BPF_EXIST);
	bperf_slot_put(slot, bperf.tasks);
}

/*
 * Find the slots of the group led by 'leader', setting them up if no
 * session counts it yet, and take our reference on them.  Locked.
 * Returns 1 if the kernel cannot count the group.
 */
static int bperf_slots_get(struct evsel *leader, __u32 *slots, int n,
			   struct target *target)
{
	struct bperf_attr_key keys[n];
	struct bperf_slot rec;
	struct bperf_val *zeroes;
	int i, found = 0, taken = 0, err;
	bool sw = true;
	__u32 s;

	bperf_make_keys(leader, keys, n);
	for (i = 0; i < n; i++) {
		if (!bpf_map_lookup_elem(bperf.attr_fd, &keys[i], &slots[i]) &&
		    slots[i] < BPERF_MAX_SLOTS)
			found++;
	}
	if (found && found != n) {
		pr_err("bperf: %s: the attr map holds part of this group only\n",
		       bperf.attr_path);
		return -1;
	}

	if (!found) {
		/* new events: pick free slots */
		i = 0;
		for (s = 0; s < BPERF_MAX_SLOTS && i < n; s++) {
			if (bpf_map_lookup_elem(bperf.slots_fd, &s, &rec) ||
			    rec.users || rec.key.attr.size)
				continue;
			slots[i++] = s;
		}
		if (i < n) {
			pr_err("bperf: no room for %s: all %d event slots are in use\n",
			       evsel__name(leader), BPERF_MAX_SLOTS);
			return -1;
		}
		/* reserve them; a new generation makes BPF start afresh */
		for (i = 0; i < n; i++)
			sw &= keys[i].attr.type == PERF_TYPE_SOFTWARE;
		for (i = 0; i < n; i++) {
			memset(&rec, 0, sizeof(rec));
			rec.key = keys[i];
			if (bpf_map_update_elem(bperf.slots_fd, &slots[i], &rec,
						BPF_ANY)) {
				bperf_report(-errno, "cannot reserve a slot",
					     NULL);
				goto undo;
			}
			bperf.ctl.gen[slots[i]]++;
			if (sw)
				bperf.ctl.sw_slots |= 1ULL << slots[i];
			else
				bperf.ctl.sw_slots &= ~(1ULL << slots[i]);
		}
		if (bperf_ctl_write())
			goto undo;

		err = bperf_open_events(leader, slots, n, target);
		if (err) {
			for (i = 0; i < n; i++)
				bperf_slot_zero(slots[i]);
			return bperf_unsupported(err) ? 1 : -1;
		}

		/* a per-CPU value: one element for each possible CPU */
		zeroes = calloc(bperf.cpus.nr_possible, sizeof(*zeroes));
		if (!zeroes)
			goto undo;
		for (i = 0; i < n; i++) {
			bpf_map_update_elem(bperf.totals_fd, &slots[i], zeroes,
					    BPF_ANY);
			if (bpf_map_update_elem(bperf.attr_fd, &keys[i],
						&slots[i], BPF_ANY)) {
				bperf_report(-errno, "cannot update",
					     bperf.attr_path);
				free(zeroes);
				goto undo;
			}
			bperf.ctl.active[bperf.ctl.nr_active++] = slots[i];
		}
		free(zeroes);
		if (bperf_ctl_write())
			goto undo;
	}

	/* take our references before we note them: a crash only leaks */
	for (taken = 0; taken < n; taken++) {
		s = slots[taken];
		/* one reference a session: an event named twice has it */
		if (bperf.slot_refs[s]++)
			continue;
		if (bpf_map_lookup_elem(bperf.slots_fd, &s, &rec)) {
			bperf.slot_refs[s]--;
			goto undo;
		}
		rec.users++;
		if (bperf.tasks) {
			rec.task_users++;
			bperf.ctl.task_slots |= 1ULL << s;
		}
		if (bpf_map_update_elem(bperf.slots_fd, &s, &rec, BPF_ANY)) {
			bperf.slot_refs[s]--;
			goto undo;
		}
		bperf.self.slots |= 1ULL << s;
	}
	if (bperf.tasks && bperf_ctl_write())
		goto undo;
	if (bpf_map_update_elem(bperf.sessions_fd, &bperf.sid, &bperf.self,
				BPF_EXIST)) {
		bperf_report(-errno, "cannot update the session", NULL);
		goto undo;
	}
	return 0;

undo:
	/* give back what we took, free the slots we set up */
	for (i = 0; i < n; i++) {
		if (i < taken)
			bperf_slot_unref(slots[i]);
		else if (!found)
			bperf_slot_free(slots[i]);
	}
	return -1;
}

static int bperf_roots_register(struct evsel *evsel, struct bperf_counter *c);
static void bperf_roots_drop(__u32 slot, bool inherit);

/* Whether the roots registered for @slot are the threads of @evsel */
static bool bperf_roots_same(struct evsel *evsel, __u32 slot)
{
	int i;

	if (bperf.slot_nr[slot] != perf_thread_map__nr(evsel->core.threads))
		return false;
	for (i = 0; i < bperf.slot_nr[slot]; i++) {
		/* 0: a thread gone before it was registered */
		if (bperf.slot_tids[slot][i].tid &&
		    (int)bperf.slot_tids[slot][i].tid !=
		    perf_thread_map__pid(evsel->core.threads, i))
			return false;
	}
	return true;
}

/*
 * Register the threads of the thread map as roots of a slot, once a
 * slot: a second evsel on it (the same event named twice) reads the
 * roots the first registered.  Another run of perf stat -r has other
 * threads: register those instead.  Locked.
 */
static int bperf_roots_add(struct evsel *evsel, struct bperf_counter *c)
{
	struct bperf_tid *tids;
	__u32 slot = c->slot;
	int err;

	if (bperf.slot_tids[slot]) {
		if (bperf_roots_same(evsel, slot)) {
			memcpy(c->tids, bperf.slot_tids[slot], c->nr * sizeof(*c->tids));
			return 0;
		}
		bperf_roots_drop(slot, c->inherit);
	}
	tids = malloc(c->nr * sizeof(*tids));
	if (!tids)
		return -ENOMEM;
	err = bperf_roots_register(evsel, c);
	/* what was registered, failed or not, for the last user to delete */
	memcpy(tids, c->tids, c->nr * sizeof(*tids));
	bperf.slot_tids[slot] = tids;
	bperf.slot_nr[slot] = c->nr;
	return err;
}

static int bperf_roots_register(struct evsel *evsel, struct bperf_counter *c)
{
	struct bperf_root_key key = {
		.sid = bperf.sid, .slot = c->slot, .inherit = c->inherit,
	};
	int i, err, tries, pid;

	/* 0: not registered, whatever an earlier run left there */
	memset(c->tids, 0, c->nr * sizeof(*c->tids));
	for (i = 0; i < c->nr; i++) {
		pid = perf_thread_map__pid(evsel->core.threads, i);
		if (pid <= 0)
			continue;
		c->tids[i].tid = pid;
		for (tries = 0; tries < 100; tries++) {
			err = bperf_root_run(BPERF_ROOT_ADD, &c->tids[i],
					     c->slot, c->inherit);
			if (err != -EAGAIN)
				break;
			usleep(1000);
		}
		if (err == -ESRCH) {
			/* gone already: it counts nothing */
			pr_debug("bperf: thread %u is gone\n", c->tids[i].tid);
			c->tids[i].tid = 0;
			continue;
		}
		if (err == -E2BIG) {
			pr_err("bperf: too many tracked tasks: all %d entries are in use\n",
			       BPERF_MAX_TASKS);
			c->tids[i].tid = 0;
			return -1;
		}
		if (err) {
			bperf_report(err, "cannot register a thread", NULL);
			c->tids[i].tid = 0;
			return -1;
		}
		key.tid = c->tids[i].tid;
		if (bpf_map_update_elem(bperf.roots_fd, &key, &c->tids[i].ino,
					BPF_ANY)) {
			if (errno == E2BIG)
				pr_err("bperf: too many root threads: all %d entries are in use\n",
				       BPERF_MAX_ROOTS);
			else
				bperf_report(-errno, "cannot note a root thread",
					     NULL);
			return -1;
		}
	}
	return 0;
}

/* Delete the roots registered for @slot.  Locked. */
static void bperf_roots_drop(__u32 slot, bool inherit)
{
	struct bperf_root_key key = {
		.sid = bperf.sid, .slot = slot, .inherit = inherit,
	};
	struct bperf_tid *tids = bperf.slot_tids[slot];
	int i;

	if (!tids)
		return;
	for (i = 0; i < bperf.slot_nr[slot]; i++) {
		if (!tids[i].tid)
			continue;
		key.tid = tids[i].tid;
		bpf_map_delete_elem(bperf.roots_fd, &key);
		bperf_root_run(BPERF_ROOT_DEL, &tids[i], slot, inherit);
	}
	zfree(&bperf.slot_tids[slot]);
	bperf.slot_nr[slot] = 0;
}

/* Delete the roots of the slot of @c unless another evsel of ours reads them */
static void bperf_roots_del(struct bperf_counter *c)
{
	if (bperf.slot_refs[c->slot] <= 1)
		bperf_roots_drop(c->slot, c->inherit);
}

static void bperf_counter_free(struct bperf_counter *c)
{
	if (!c)
		return;
	free(c->snap);
	free(c->base);
	free(c->tids);
	free(c);
}

static struct bperf_counter *bperf_counter_new(struct evsel *evsel, __u32 slot)
{
	struct bperf_counter *c = zalloc(sizeof(*c));

	if (!c)
		return NULL;
	c->slot = slot;
	c->nr = bperf.tasks ? perf_thread_map__nr(evsel->core.threads) :
			      bperf.cpus.nr_ids;
	c->snap = calloc(c->nr, sizeof(*c->snap));
	c->base = calloc(c->nr, sizeof(*c->base));
	c->tids = calloc(c->nr, sizeof(*c->tids));
	if (!c->snap || !c->base || !c->tids) {
		bperf_counter_free(c);
		return NULL;
	}
	return c;
}

/*
 * Another run of perf stat -r: start from zero and, as each run forks its
 * own workload, register the threads of this run as the roots.
 */
static int bperf_reload(struct evsel *evsel, struct bperf_counter *c)
{
	int nr, err;

	c->enabled = false;
	memset(c->base, 0, c->nr * sizeof(*c->base));
	if (!bperf.tasks || c->unsupported)
		return 0;

	if (bperf_lock())
		return -1;
	bperf_roots_del(c);
	nr = perf_thread_map__nr(evsel->core.threads);
	if (nr != c->nr) {
		struct bperf_counter *fresh = bperf_counter_new(evsel, c->slot);

		if (!fresh) {
			bperf_unlock();
			return -ENOMEM;
		}
		free(c->snap);
		free(c->base);
		free(c->tids);
		c->snap = fresh->snap;
		c->base = fresh->base;
		c->tids = fresh->tids;
		c->nr = fresh->nr;
		free(fresh);
	}
	err = bperf_roots_add(evsel, c);
	bperf_unlock();
	return err;
}

static int bperf_check_target(struct evsel *evsel, struct target *target,
			      bool *tasks)
{
	if (target->system_wide || target->cpu_list) {
		*tasks = false;
	} else if (target->tid || target->pid ||
		   evsel->evlist->workload.pid != -1) {
		*tasks = true;
	} else {
		pr_err("bpf managed perf events do not yet support these targets.\n");
		return -1;
	}
	return 0;
}

static int bperf__load(struct evsel *evsel, struct target *target)
{
	struct evsel *leader = evsel__leader(evsel), *pos, *bad;
	int n = leader->core.nr_members ?: 1, i, err;
	__u32 slots[BPERF_MAX_SLOTS];
	bool tasks, unsupported;

	/*
	 * perf stat -r loads again for each run: count afresh.  The members
	 * of a group got their counters when the leader was loaded.
	 */
	if (evsel->bpf_skel) {
		struct bperf_counter *c = evsel->bpf_skel;

		if (c->fresh) {
			c->fresh = false;
			return 0;
		}
		return bperf_reload(evsel, c);
	}
	if (bperf_check_target(evsel, target, &tasks))
		return -1;
	/* loading the leader sets up the whole group */
	bad = leader != evsel ? evsel : NULL;
	for_each_group_member(pos, leader) {
		if (!bad && !bperf_wanted(pos, target))
			bad = pos;
	}
	if (bad) {
		pr_err("bperf: %s: every event of a group must use BPF counters\n",
		       evsel__name(bad));
		return -1;
	}
	if (n > BPERF_MAX_SLOTS) {
		pr_err("bperf: group of %s too large\n", evsel__name(leader));
		return -1;
	}

	if (!bperf.users) {
		bperf.tasks = tasks;
		if (bperf_join(target))
			return -1;
	} else if (bperf_lock()) {
		return -1;
	}

	err = bperf_slots_get(leader, slots, n, target);
	if (err < 0)
		goto out;
	/* the kernel cannot count the group: no reference was taken */
	unsupported = err > 0;

	i = 0;
	for_each_group_evsel(pos, leader) {
		struct bperf_counter *c = bperf_counter_new(pos, slots[i]);

		if (!c) {
			err = -1;
			goto undo;
		}
		i++;
		c->unsupported = unsupported;
		c->inherit = target->inherit;
		/* a member's own load comes next: nothing to do then */
		c->fresh = pos != leader;
		pos->bpf_skel = c;
		if (pos != leader)
			pos->bpf_counter_ops = leader->bpf_counter_ops;
		bperf.users++;
		if (tasks && !c->unsupported && bperf_roots_add(pos, c)) {
			err = -1;
			goto undo;
		}
	}
	err = 0;
	goto out;
undo:
	/* the members left without a counter give their slots back */
	for (; i < n && !unsupported; i++)
		bperf_slot_unref(slots[i]);
out:
	if (err && !bperf.users)
		bperf_leave();
	else
		bperf_unlock();
	return err;
}

static int bperf__install_pe(struct evsel *evsel __maybe_unused,
			     int cpu_map_idx __maybe_unused,
			     int fd __maybe_unused)
{
	/* bperf_open_events() puts the events where they belong */
	return 0;
}

/*
 * Run bperf_read on CPU, again while it finds another read under way
 * there (it returns 1), which may not have reached every slot yet.
 */
static void bperf_read_cpu(int cpu)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .flags = BPF_F_TEST_RUN_ON_CPU,
		    .cpu = cpu,
	);
	int tries;

	for (tries = 0; tries < BPERF_READ_TRIES; tries++) {
		if (bpf_prog_test_run_opts(bperf.prog_fd[BPERF_PROG_READ],
					   &opts) || opts.retval != 1)
			return;
	}
	pr_debug("bperf: CPU %d was being read all along\n", cpu);
}

/* Run bperf_read on the CPUs of CPUS not DONE yet (all if DONE is NULL). */
static void bperf_sync_cpus(struct perf_cpu_map *cpus, bool *done)
{
	struct perf_cpu cpu;
	int idx;

	perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
		if (cpu.cpu < 0 || cpu.cpu >= bperf.cpus.nr_ids ||
		    (done && done[cpu.cpu]))
			continue;
		if (done)
			done[cpu.cpu] = true;
		bperf_read_cpu(cpu.cpu);
	}
}

/*
 * Bring the maps up to date for a read of LEADER's group: bperf_read
 * once on each CPU its members count, or, in task mode, on each online
 * CPU.
 */
static void bperf_sync(struct evsel *leader)
{
	struct evsel *pos;
	bool *done;

	if (bperf.tasks) {
		bperf_sync_cpus(bperf.online, NULL);
		return;
	}
	done = calloc(bperf.cpus.nr_ids, sizeof(*done));
	for_each_group_evsel(pos, leader)
		bperf_sync_cpus(evsel__cpus(pos), done);
	free(done);
}

/* What a slot counted on each CPU, into vals[CPU id]. */
static int bperf_read_totals(__u32 slot, struct bperf_val *vals)
{
	struct bperf_val *packed;
	int err = 0;

	packed = calloc(bperf.cpus.nr_possible, sizeof(*packed));
	if (!packed)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bperf.totals_fd, &slot, packed))
		err = -errno;
	else
		bperf_cpus__unpack(&bperf.cpus, packed, vals, sizeof(*vals));
	free(packed);
	return err;
}

static void bperf_val_acc(struct bperf_val *to, const struct bperf_val *v)
{
	to->counter += v->counter;
	to->enabled += v->enabled;
	to->running += v->running;
}

/* A tracked task of one slot and its anchor, by pid inode number */
struct bperf_entry {
	__u64 ino;
	__u64 anc;
	struct bperf_val own;
	struct bperf_val sum;	/* own + folded */
};

static int bperf_ino_cmp(__u64 x, __u64 y)
{
	return x < y ? -1 : x > y;
}

static int bperf_entry_cmp(const void *a, const void *b)
{
	const struct bperf_entry *x = a, *y = b;

	return bperf_ino_cmp(x->ino, y->ino);
}

static struct bperf_entry *bperf_entry_find(struct bperf_entry *e, int n,
					    __u64 ino)
{
	struct bperf_entry key = { .ino = ino };

	return bsearch(&key, e, n, sizeof(*e), bperf_entry_cmp);
}

/* What the programs' per-CPU state says about folds, over all CPUs. */
struct bperf_folds {
	__u64 begun;
	__u64 untracked;	/* children the full tasks map missed */
	bool busy;		/* a fold is under way somewhere */
};

static int bperf_folds_read(struct bperf_folds *f)
{
	struct bperf_cpu *pc;
	__u32 zero = 0, i;

	memset(f, 0, sizeof(*f));
	pc = calloc(bperf.cpus.nr_possible, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bperf.cpu_fd, &zero, pc)) {
		free(pc);
		return -errno;
	}
	for (i = 0; i < (__u32)bperf.cpus.nr_possible; i++) {
		f->begun += pc[i].folds_begun;
		f->untracked += pc[i].untracked;
		if (pc[i].folds_begun != pc[i].folds_done)
			f->busy = true;
	}
	free(pc);
	return 0;
}

/*
 * Read the tasks map while no exited task is being folded into its
 * anchor, which would show its counts twice or not at all: read again
 * if a fold was under way or began meanwhile.
 */
static int bperf_tasks_read(__u64 *keys, struct bperf_task *vals)
{
	static bool warned;
	struct bperf_folds before, after;
	int n = 0, tries;

	for (tries = 0; tries < BPERF_READ_TRIES; tries++) {
		if (bperf_folds_read(&before))
			break;
		if (before.busy) {
			usleep(100);
			continue;
		}
		n = bperf_dump(bperf.tasks_fd, keys, sizeof(*keys), vals,
			       sizeof(*vals), BPERF_MAX_TASKS);
		if (bperf_folds_read(&after) || after.begun == before.begun) {
			if (after.untracked && !warned) {
				pr_warning("bperf: %llu new tasks were not counted: all %d tracked task entries were in use\n",
					   (unsigned long long)after.untracked,
					   BPERF_MAX_TASKS);
				warned = true;
			}
			return n;
		}
	}
	pr_debug("bperf: tasks kept exiting while read: counts may be off\n");
	return bperf_dump(bperf.tasks_fd, keys, sizeof(*keys), vals,
			  sizeof(*vals), BPERF_MAX_TASKS);
}

/* The tracked tasks of one slot, sorted by pid inode number. */
static int bperf_tasks_of(__u32 slot, struct bperf_entry **out)
{
	__u64 *keys;
	struct bperf_task *vals;
	struct bperf_entry *e;
	int n, i, count = 0;

	keys = calloc(BPERF_MAX_TASKS, sizeof(*keys));
	vals = calloc(BPERF_MAX_TASKS, sizeof(*vals));
	e = calloc(BPERF_MAX_TASKS, sizeof(*e));
	if (!keys || !vals || !e) {
		free(e);
		count = -ENOMEM;
		goto out;
	}
	n = bperf_tasks_read(keys, vals);
	for (i = 0; i < n; i++) {
		if (BPERF_KEY_SLOT(keys[i]) != slot)
			continue;
		e[count].ino = BPERF_KEY_INO(keys[i]);
		e[count].anc = vals[i].anc;
		e[count].own = vals[i].own;
		e[count].sum = vals[i].own;
		bperf_val_acc(&e[count].sum, &vals[i].folded);
		count++;
	}
	qsort(e, count, sizeof(*e), bperf_entry_cmp);
	*out = e;
out:
	free(keys);
	free(vals);
	return count;
}

struct bperf_root_idx {
	__u64 ino;
	int idx;
};

static int bperf_root_cmp(const void *a, const void *b)
{
	const struct bperf_root_idx *x = a, *y = b;

	return bperf_ino_cmp(x->ino, y->ino);
}

/* What each root of a task counter counted in all, into vals[]. */
static int bperf_task_values(struct bperf_counter *c, struct bperf_val *vals)
{
	struct bperf_root_idx *roots, key, *r;
	struct bperf_entry *e = NULL, *t;
	int n, i, nr = 0, depth;

	memset(vals, 0, c->nr * sizeof(*vals));
	n = bperf_tasks_of(c->slot, &e);
	if (n < 0)
		return n;

	if (!c->inherit) {
		for (i = 0; i < c->nr; i++) {
			if (!c->tids[i].tid)
				continue;
			t = bperf_entry_find(e, n, c->tids[i].ino);
			if (t)
				vals[i] = t->own;
		}
		free(e);
		return 0;
	}

	roots = calloc(c->nr, sizeof(*roots));
	if (!roots) {
		free(e);
		return -ENOMEM;
	}
	for (i = 0; i < c->nr; i++) {
		if (!c->tids[i].tid)
			continue;
		roots[nr].ino = c->tids[i].ino;
		roots[nr++].idx = i;
	}
	qsort(roots, nr, sizeof(*roots), bperf_root_cmp);

	/* each entry goes to the first of our roots up its anchor chain */
	for (i = 0; i < n; i++) {
		t = &e[i];
		for (depth = 0; t && depth < BPERF_MAX_CHAIN; depth++) {
			key.ino = t->ino;
			r = bsearch(&key, roots, nr, sizeof(*roots),
				    bperf_root_cmp);
			if (r) {
				bperf_val_acc(&vals[r->idx], &e[i].sum);
				break;
			}
			t = t->anc ? bperf_entry_find(e, n, t->anc) : NULL;
		}
	}
	free(roots);
	free(e);
	return 0;
}

/*
 * Current values: per CPU id, or per root.  perf stat goes through
 * a group leader right before its members: the members use the readings
 * the leader's test runs brought, so that a group is read at once.
 */
static int bperf_values(struct evsel *evsel, struct bperf_counter *c,
			struct bperf_val *vals)
{
	if (evsel__is_group_leader(evsel))
		bperf_sync(evsel);
	if (bperf.tasks)
		return bperf_task_values(c, vals);
	return bperf_read_totals(c->slot, vals);
}

static void bperf_val_delta(struct bperf_val *to, const struct bperf_val *now,
			    const struct bperf_val *then)
{
	to->counter += now->counter - then->counter;
	to->enabled += now->enabled - then->enabled;
	to->running += now->running - then->running;
}

/*
 * Enabling takes a snapshot, disabling adds what was counted since to
 * the base.  The members of a group share the read its leader does.
 */
static int bperf_toggle(struct evsel *evsel, bool enable)
{
	struct bperf_counter *c = evsel->bpf_skel;
	struct bperf_val *now;
	int i, err;

	if (!c || c->unsupported || c->enabled == enable)
		return 0;
	now = calloc(c->nr, sizeof(*now));
	if (!now)
		return -ENOMEM;
	err = bperf_values(evsel, c, now);
	if (!err) {
		for (i = 0; i < c->nr; i++) {
			if (enable)
				c->snap[i] = now[i];
			else
				bperf_val_delta(&c->base[i], &now[i],
						&c->snap[i]);
		}
		c->enabled = enable;
	}
	free(now);
	return err;
}

static int bperf__enable(struct evsel *evsel)
{
	return bperf_toggle(evsel, true);
}

static int bperf__disable(struct evsel *evsel)
{
	return bperf_toggle(evsel, false);
}

static void bperf_counts_set(struct perf_counts_values *counts,
			     const struct bperf_val *v)
{
	counts->val = v->counter;
	counts->ena = v->enabled;
	counts->run = v->running;
}

static int bperf__read(struct evsel *evsel)
{
	struct bperf_counter *c = evsel->bpf_skel;
	struct perf_cpu_map *cpus = evsel__cpus(evsel);
	struct bperf_val *now, v;
	struct perf_cpu cpu;
	int i, idx, err = 0;

	if (!c)
		return -EAGAIN;
	now = calloc(c->nr, sizeof(*now));
	if (!now)
		return -ENOMEM;
	if (c->enabled && !c->unsupported)
		err = bperf_values(evsel, c, now);
	if (err)
		goto out;

	if (bperf.tasks) {
		for (i = 0; i < c->nr; i++) {
			v = c->base[i];
			if (c->enabled && !c->unsupported)
				bperf_val_delta(&v, &now[i], &c->snap[i]);
			bperf_counts_set(perf_counts(evsel->counts, 0, i), &v);
		}
		goto out;
	}
	perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
		memset(&v, 0, sizeof(v));
		if (cpu.cpu >= 0 && cpu.cpu < c->nr) {
			v = c->base[cpu.cpu];
			if (c->enabled && !c->unsupported)
				bperf_val_delta(&v, &now[cpu.cpu],
						&c->snap[cpu.cpu]);
		}
		bperf_counts_set(perf_counts(evsel->counts, idx, 0), &v);
	}
out:
	free(now);
	return err;
}

static int bperf__destroy(struct evsel *evsel)
{
	struct bperf_counter *c = evsel->bpf_skel;

	if (!c)
		return 0;
	if (bperf.attr_fd >= 0 && !bperf_lock()) {
		if (!c->unsupported) {
			if (bperf.tasks)
				bperf_roots_del(c);
			bperf_slot_unref(c->slot);
		}
		if (--bperf.users == 0)
			bperf_leave();
		else
			bperf_unlock();
	}
	bperf_counter_free(c);
	evsel->bpf_skel = NULL;
	return 0;
}

struct bpf_counter_ops bperf_ops = {
	.load       = bperf__load,
	.enable     = bperf__enable,
	.disable    = bperf__disable,
	.read       = bperf__read,
	.install_pe = bperf__install_pe,
	.destroy    = bperf__destroy,
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
