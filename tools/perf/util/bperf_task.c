// SPDX-License-Identifier: GPL-2.0
/*
 * bperf task sessions (-p, -t, a workload): the root tasks a session
 * registers, and its value summed from the tasks map.  Design:
 * util/bperf.c.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>

#include "bperf.h"
#include "debug.h"
#include "evsel.h"
#include "thread_map.h"

/* anchor chain length perf follows when it sums a session's tasks */
#define BPERF_MAX_CHAIN		64

/*
 * Run a root operation in bperf_root.  The program writes @op back:
 * BPERF_ROOT_ADD sets the pid inode number of the root.  Returns what
 * the program returns, 0 or -errno.
 */
int bperf_root_run(struct bperf_root_op *op)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .ctx_in = op,
		    .ctx_size_in = sizeof(*op),
	);

	if (bpf_prog_test_run_opts(bperf.prog_fd[BPERF_PROG_ROOT], &opts))
		return -errno;
	return (int)opts.retval;
}

/* Delete the tasks map entries of a slot nobody counts any more. */
void bperf_purge_tasks(__u32 slot)
{
	__u64 *keys;
	struct bperf_task *vals;
	int n, i;

	keys = calloc(BPERF_MAX_TASKS, sizeof(*keys));
	vals = calloc(BPERF_MAX_TASKS, sizeof(*vals));
	n = keys && vals ? bperf_dump(bperf.map_fd[BPERF_MAP_TASKS], keys,
				      sizeof(*keys), vals, sizeof(*vals),
				      BPERF_MAX_TASKS) : 0;
	for (i = 0; i < n; i++) {
		if (BPERF_KEY_SLOT(keys[i]) == slot)
			bpf_map_delete_elem(bperf.map_fd[BPERF_MAP_TASKS],
					    &keys[i]);
	}
	free(keys);
	free(vals);
}

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

static int bperf_roots_register(struct evsel *evsel, struct bperf_counter *c)
{
	struct bperf_root_op op = {
		.op = BPERF_ROOT_ADD, .slot = c->slot, .inherit = c->inherit,
		.sid = bperf.sid,
	};
	int i, err, tries, pid;

	/* 0: not registered, whatever an earlier run left there */
	memset(c->tids, 0, c->nr * sizeof(*c->tids));
	for (i = 0; i < c->nr; i++) {
		pid = perf_thread_map__pid(evsel->core.threads, i);
		if (pid <= 0)
			continue;
		c->tids[i].tid = pid;
		op.tid = pid;
		op.ino = 0;
		for (tries = 0; tries < 100; tries++) {
			err = bperf_root_run(&op);
			if (err != -EAGAIN)
				break;
			usleep(1000);
		}
		c->tids[i].ino = op.ino;
		if (err == -ESRCH) {
			/* gone already: it counts nothing */
			pr_debug("bperf: thread %u is gone\n", c->tids[i].tid);
			c->tids[i].tid = 0;
			continue;
		}
		if (err == -EEXIST) {
			/* named twice in the thread map: counted once */
			pr_debug("bperf: thread %u is a root already\n",
				 c->tids[i].tid);
			c->tids[i].tid = 0;
			continue;
		}
		if (err == -E2BIG) {
			pr_err("bperf: too many tracked tasks: all %d entries are in use\n",
			       BPERF_MAX_TASKS);
			c->tids[i].tid = 0;
			return err;
		}
		if (err == -ENOSPC) {
			pr_err("bperf: too many root threads: all %d entries are in use\n",
			       BPERF_MAX_ROOTS);
			c->tids[i].tid = 0;
			return err;
		}
		if (err) {
			bperf_report(err, "cannot register a thread", NULL);
			c->tids[i].tid = 0;
			return err;
		}
		bperf_step("root");
	}
	return 0;
}

/* Delete the roots registered for the slot of @c.  Locked. */
static void bperf_roots_drop(struct bperf_counter *c)
{
	struct bperf_root_op op = {
		.op = BPERF_ROOT_DEL, .slot = c->slot, .inherit = c->inherit,
		.sid = bperf.sid,
	};
	struct bperf_tid *tids = bperf.slot_tids[c->slot];
	int i;

	if (!tids)
		return;
	for (i = 0; i < bperf.slot_nr[c->slot]; i++) {
		if (!tids[i].tid)
			continue;
		/* bperf_root finds the rest in the record */
		op.tid = tids[i].tid;
		bperf_root_run(&op);
	}
	zfree(&bperf.slot_tids[c->slot]);
	bperf.slot_nr[c->slot] = 0;
}

/*
 * Register the threads of the thread map as roots of a slot, once a
 * slot: a second evsel on it (the same event named twice) reads the
 * roots the first registered.  Another run of perf stat -r has other
 * threads: register those instead.  Locked.
 */
int bperf_roots_add(struct evsel *evsel, struct bperf_counter *c)
{
	struct bperf_tid *tids;
	__u32 slot = c->slot;
	int err;

	if (bperf.slot_tids[slot]) {
		if (bperf_roots_same(evsel, slot)) {
			memcpy(c->tids, bperf.slot_tids[slot],
			       c->nr * sizeof(*c->tids));
			return 0;
		}
		bperf_roots_drop(c);
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

/* Delete the roots of the slot of @c unless another evsel of ours reads them */
void bperf_roots_del(struct bperf_counter *c)
{
	if (bperf.slot_refs[c->slot] <= 1)
		bperf_roots_drop(c);
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
	int err;

	memset(f, 0, sizeof(*f));
	pc = calloc(bperf.cpus.nr_possible, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_CPU], &zero, pc)) {
		err = -errno;
		free(pc);
		return err;
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
		n = bperf_dump(bperf.map_fd[BPERF_MAP_TASKS], keys,
			       sizeof(*keys), vals, sizeof(*vals),
			       BPERF_MAX_TASKS);
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
	return bperf_dump(bperf.map_fd[BPERF_MAP_TASKS], keys, sizeof(*keys),
			  vals, sizeof(*vals), BPERF_MAX_TASKS);
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
	if (n < 0) {
		free(e);
		count = n;
		goto out;
	}
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
int bperf_task_values(struct bperf_counter *c, struct bperf_val *vals)
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

static int bperf_sid_cmp(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Release the roots of the sessions not registered (any more): @sids,
 * sorted, are the @n that are.  A session that died is forgotten first,
 * its roots then: a reclaim cut short by a kill leaves them for the
 * next one.  Locked.
 */
void bperf_roots_sweep(const __u32 *sids, int n)
{
	struct bperf_root_key *keys;
	__u64 *vals;
	int nr, i;

	keys = calloc(BPERF_MAX_ROOTS, sizeof(*keys));
	vals = calloc(BPERF_MAX_ROOTS, sizeof(*vals));
	nr = keys && vals ? bperf_dump(bperf.map_fd[BPERF_MAP_ROOTS], keys,
				       sizeof(*keys), vals, sizeof(*vals),
				       BPERF_MAX_ROOTS) : 0;
	for (i = 0; i < nr; i++) {
		if (bsearch(&keys[i].sid, sids, n, sizeof(*sids),
			    bperf_sid_cmp))
			continue;
		pr_debug("bperf: releasing root %u of session %u\n",
			 keys[i].tid, keys[i].sid);
		bperf_root_run(&(struct bperf_root_op){
			.op = BPERF_ROOT_DEL,
			.tid = keys[i].tid,
			.slot = keys[i].slot,
			.inherit = keys[i].inherit,
			.sid = keys[i].sid,
		});
	}
	free(keys);
	free(vals);
}
