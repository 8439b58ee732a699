// SPDX-License-Identifier: GPL-2.0
/*
 * bperf, perf stat --bpf-counters (also the :b event modifier and the
 * stat.bpf-counter-events config): any number of perf stat sessions
 * share one perf event per distinct event and CPU, read by BPF, instead
 * of each opening its own.  This file has the bpf_counter_ops and what
 * each evsel counts; bperf.h lists the other files.
 *
 * Design
 * ======
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
 *  bperf_sessions  session id -> pid (in the initial pid namespace), pid
 *                  inode number and slots of the perf process, to tell
 *                  when a session died without cleaning up (kill -9).
 *  bperf_roots     (session, tid, slot) -> pid inode number of a
 *                  registered root, ditto.
 *  bperf_hotplug   per CPU id, and in all: how many times a CPU's perf
 *                  context went down or came up (bperf_cpuhp counts).
 *  bperf_opened    per slot and CPU id, as bperf_events: 1 + the CPU's
 *                  hotplug count when perf opened the event there.
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
 * cleaning up is found by the next ones (bperf_root finds no process of
 * its pid with its pid inode number, or finds it exiting, from any pid
 * namespace) and its record deleted.  A session may die between any two
 * steps: the session records are the truth.  A session notes a slot in
 * its record after it takes its reference and forgets it before it gives
 * the reference back, and bperf_root notes and forgets roots in the run
 * that takes and drops their references.  Each look at the sessions then
 * releases the roots of sessions without a record, sets every slot's use
 * counts to what the records say, and frees the slots no record names,
 * closing their events.  The last session to leave unpins everything,
 * unless stat.bpf-attr-map-persistent is set in perf config.  Tests stop
 * perf at named steps with PERF_BPERF_STOP (bperf_step()).
 *
 * Hotplug.  Taking a CPU offline takes the perf events out of its
 * context for good, and a CPU onlined after a slot was set up has no
 * event of it, yet slots outlive sessions.  bperf_cpuhp, whose link is
 * pinned with the maps, counts the passes of each CPU's perf context
 * down or up.  A session joining, or about to read after the total
 * moved (unless another session holds the lock: then at its next read),
 * opens again the events whose bperf_opened note is not their CPU's
 * count, on the CPUs online (bperf_slots_revive()).  A CPU counts again
 * from its new event's first reading; what it did with no event is not
 * counted.
 *
 * Details.  A slot freed and used again gets a new generation in bperf_ctl,
 * which perf bumps before it installs the new events: the first reading of
 * a new generation on a CPU only sets the base.  An event opened again
 * after a hotplug changes the generation of its slot on its CPU only: the
 * programs read it from bperf_opened, which perf changes between taking
 * the old event out of the array and putting the new one in, and again
 * once it is in.  A group's events are
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
 * perf says so).  A CPU taken offline during a CPU-wide session keeps the
 * total of the last read made while it was online (a test run cannot
 * reach an offline CPU): what it counted after that read is lost, and
 * once it is back, what it counts before the next session joins or reads.
 * The events of a PMU with CPUs of its own (uncore, a hybrid system's CPU
 * types) are opened again only on CPUs that had them.  A task's share
 * of context-switches is approximate: the kernel counts a switch just
 * after the tracepoint, so it lands in the next task's share.  Task
 * sessions name their roots by tid, which bpf_task_from_pid() looks up
 * in the initial pid namespace: they are refused in any other (CPU
 * sessions work there).  A thread that is not the group
 * leader and calls execve() takes the leader's struct pid (de_thread()):
 * what it counts from then on is lost, and its own entry
 * stays until its slot is freed.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/build_bug.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>

#include "bpf_counter.h"
#include "bperf.h"
#include "counts.h"
#include "debug.h"
#include "evsel.h"
#include "evlist.h"
#include "target.h"
#include "cpumap.h"
#include "thread_map.h"

/*
 * Per-CPU map values reach user space at multiples of 8 bytes: perf's
 * buffers of nr_possible elements of these types (bperf_read_totals(),
 * bperf_folds_read()) rely on these sizes.
 */
static_assert(sizeof(struct bperf_val) % 8 == 0, "bperf_val size");
static_assert(sizeof(struct bperf_cpu) % 8 == 0, "bperf_cpu size");

bool bperf_wanted(struct evsel *evsel, struct target *target)
{
	return target->use_bpf || evsel->bpf_counter ||
	       evsel__match_bpf_counter_events(evsel->name);
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

	err = bperf_lock();
	if (err)
		return err;
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
		return -EINVAL;
	}
	return 0;
}

static int bperf_evsel_load(struct evsel *evsel, struct target *target)
{
	struct evsel *leader = evsel__leader(evsel), *pos, *bad;
	int n = leader->core.nr_members ?: 1, i, err;
	__u32 slots[BPERF_MAX_SLOTS];
	bool tasks, unsupported;

	/*
	 * perf stat -r loads again for each run: count afresh.  The members
	 * of a group got their counters when the leader was loaded.
	 */
	if (evsel->bperf_counter) {
		struct bperf_counter *c = evsel->bperf_counter;

		if (c->fresh) {
			c->fresh = false;
			return 0;
		}
		return bperf_reload(evsel, c);
	}
	err = bperf_check_target(evsel, target, &tasks);
	if (err)
		return err;
	/* loading the leader sets up the whole group */
	bad = leader != evsel ? evsel : NULL;
	for_each_group_member(pos, leader) {
		if (!bad && !bperf_wanted(pos, target))
			bad = pos;
	}
	if (bad) {
		pr_err("bperf: %s: every event of a group must use BPF counters\n",
		       evsel__name(bad));
		return -EINVAL;
	}
	/* the sessions counting an event share it: it has no cgroup */
	for_each_group_evsel(pos, leader) {
		if (pos->cgrp) {
			pr_err("bperf: %s: BPF counters cannot count one cgroup (-G); --for-each-cgroup with --bpf-counters can\n",
			       evsel__name(pos));
			return -EOPNOTSUPP;
		}
	}
	if (n > BPERF_MAX_SLOTS) {
		pr_err("bperf: group of %s too large\n", evsel__name(leader));
		return -E2BIG;
	}

	if (!bperf.users) {
		bperf.tasks = tasks;
		err = bperf_join(target);
	} else {
		err = bperf_lock();
	}
	if (err)
		return err;

	err = bperf_slots_get(leader, slots, n, target);
	/* the kernel cannot count the group: no reference was taken */
	unsupported = err == -EOPNOTSUPP;
	if (err && !unsupported)
		goto out;

	i = 0;
	for_each_group_evsel(pos, leader) {
		struct bperf_counter *c = bperf_counter_new(pos, slots[i]);

		if (!c) {
			err = -ENOMEM;
			goto undo;
		}
		i++;
		c->unsupported = unsupported;
		c->inherit = target->inherit;
		/* a member's own load comes next: nothing to do then */
		c->fresh = pos != leader;
		pos->bperf_counter = c;
		if (pos != leader)
			pos->bpf_counter_ops = leader->bpf_counter_ops;
		bperf.users++;
		if (tasks && !c->unsupported) {
			err = bperf_roots_add(pos, c);
			if (err)
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

static int bperf_evsel_install_pe(struct evsel *evsel __maybe_unused,
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

	bperf_slots_hotplug();
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
	if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_TOTALS], &slot, packed))
		err = -errno;
	else
		bperf_cpus_unpack(&bperf.cpus, packed, vals, sizeof(*vals));
	free(packed);
	return err;
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
static int bperf_evsel_enable(struct evsel *evsel)
{
	struct bperf_counter *c = evsel->bperf_counter;
	int err;

	if (!c || c->unsupported || c->enabled)
		return 0;
	memset(c->snap, 0, c->nr * sizeof(*c->snap));
	err = bperf_values(evsel, c, c->snap);
	if (!err)
		c->enabled = true;
	return err;
}

static int bperf_evsel_disable(struct evsel *evsel)
{
	struct bperf_counter *c = evsel->bperf_counter;
	struct bperf_val *now;
	int i, err;

	if (!c || c->unsupported || !c->enabled)
		return 0;
	now = calloc(c->nr, sizeof(*now));
	if (!now)
		return -ENOMEM;
	err = bperf_values(evsel, c, now);
	if (!err) {
		for (i = 0; i < c->nr; i++)
			bperf_val_delta(&c->base[i], &now[i], &c->snap[i]);
		c->enabled = false;
	}
	free(now);
	return err;
}

static void bperf_counts_set(struct perf_counts_values *counts,
			     const struct bperf_val *v)
{
	counts->val = v->counter;
	counts->ena = v->enabled;
	counts->run = v->running;
}

static int bperf_evsel_read(struct evsel *evsel)
{
	struct bperf_counter *c = evsel->bperf_counter;
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
	if (err) {
		/* perf stat shows no counts then: say why, once */
		pr_warning_once("bperf: cannot read %s: %s\n",
				evsel__name(evsel), strerror(-err));
		goto out;
	}

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

static int bperf_evsel_destroy(struct evsel *evsel)
{
	struct bperf_counter *c = evsel->bperf_counter;

	if (!c)
		return 0;
	if (bperf.attr_fd >= 0) {
		/*
		 * Without the lock the pinned state cannot change: what we
		 * hold there stays, under our registration, to be reclaimed
		 * as a dead session's once we exit.  Our fds, and with them
		 * the task hooks' links, go with the last evsel all the same.
		 */
		if (bperf_lock()) {
			bperf.lost = true;
		} else if (!c->unsupported) {
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
	evsel->bperf_counter = NULL;
	return 0;
}

struct bpf_counter_ops bperf_ops = {
	.load       = bperf_evsel_load,
	.enable     = bperf_evsel_enable,
	.disable    = bperf_evsel_disable,
	.read       = bperf_evsel_read,
	.install_pe = bperf_evsel_install_pe,
	.destroy    = bperf_evsel_destroy,
};
