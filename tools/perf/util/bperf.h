/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bperf: what its files share.  Design: util/bperf.c.
 *
 *  bpf_counter.c  (not bperf's) picks bperf_ops for an evsel
 *  bperf.c        the bpf_counter_ops: what each evsel counts, and reads
 *  bperf_share.c  the sessions: programs, links, opening and unpinning
 *                 the maps, joining and leaving, the session registry,
 *                 reclaim
 *  bperf_slots.c  slots: the distinct events, groups, their perf events
 *  bperf_task.c   task sessions: root tasks, values from the tasks map
 *  bperf_maps.c   the pinned maps' primitives: paths, checks, the lock,
 *                 the control map, whole-map reads, error messages, the
 *                 test hook
 *  bperf_cpus.c   possible CPU ids and positions (also used by -b)
 *  bpf_skel/bperf.bpf.c  the programs and maps; bpf_skel/bperf_u.h their
 *                 types, shared with perf
 *
 * Each file calls only those below it in this list.  They share one
 * struct bperf_ctx, declared here.
 */
#ifndef __PERF_BPERF_H
#define __PERF_BPERF_H

#include <limits.h>
#include <stdbool.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include "bperf_cpus.h"
#include "bpf_skel/bperf_u.h"

struct bpf_map;
struct btf;
struct evsel;
struct perf_cpu_map;
struct target;

/*
 * Tries of a read that can race with the programs: a test run of
 * bperf_read that lands in another one, a read of the tasks map
 * during exits.
 */
#define BPERF_READ_TRIES	100

/* The pinned maps perf opens, in the order it opens them. */
enum bperf_map {
	BPERF_MAP_CTL,		/* layout version checked once all are open */
	BPERF_MAP_SLOTS,
	BPERF_MAP_SESSIONS,
	BPERF_MAP_ROOTS,
	BPERF_MAP_TASKS,
	BPERF_MAP_TOTALS,
	BPERF_MAP_CPU,
	BPERF_MAP_HOTPLUG,
	BPERF_MAP_OPENED,
	BPERF_MAP_EVENTS,
	BPERF_NR_MAPS,
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

/*
 * What one perf process shares among its bperf events, each file its
 * part; the one instance is in bperf_maps.c.
 */
struct bperf_ctx {
	int attr_fd;		/* the attr map; flock()ed as the lock */
	int map_fd[BPERF_NR_MAPS];	/* by enum bperf_map */
	/* the maps we pinned or found fit to share: the teardown's only */
	__u32 map_ids[2 * BPERF_NR_MAPS];
	int nr_map_ids;
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
	/* task mode: the roots registered */
	struct bperf_tid *slot_tids[BPERF_MAX_SLOTS];
	int slot_nr[BPERF_MAX_SLOTS];
	__u32 hotplug_seen;	/* bperf_hotplug's total at our last look */
	bool locked;
	bool lost;		/* an evsel could not give back its slot */
	bool persist;
	bool tasks;		/* we count tasks, not CPUs */
	struct bperf_ctl ctl;	/* valid while locked */
	struct bperf_session self;
	struct perf_cpu_map *online;
	char attr_path[PATH_MAX];
	char dir[PATH_MAX];
};

extern struct bperf_ctx bperf;

/* What one evsel counts through bperf (evsel->bperf_counter). */
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

/* bperf_share.c */
int bperf_join(struct target *target);
void bperf_leave(void);

/* bperf_slots.c */
void bperf_slot_free(__u32 slot);
void bperf_slot_put(__u32 slot, __u32 flags);
void bperf_slot_unref(__u32 slot);
int bperf_slots_get(struct evsel *leader, __u32 *slots, int n,
		    struct target *target);
void bperf_slots_sweep(const __u32 *users, const __u32 *task_users);
void bperf_slots_revive(void);
void bperf_slots_hotplug(void);

/* bperf_task.c */
int bperf_root_run(struct bperf_root_op *op);
void bperf_purge_tasks(__u32 slot);
int bperf_roots_add(struct evsel *evsel, struct bperf_counter *c);
void bperf_roots_del(struct bperf_counter *c);
void bperf_roots_sweep(const __u32 *sids, int n);
int bperf_task_values(struct bperf_counter *c, struct bperf_val *vals);

/* bperf_maps.c */
void bperf_close_fd(int *fd);
int bperf_map_get_id(int fd, __u32 *id);
int bperf_report(int err, const char *what, const char *path);
void bperf_step(const char *step);
int bperf_paths(struct target *target);
int bperf_lock_first(void);
int bperf_ctl_read(void);
int bperf_ctl_write(void);
int bperf_lock(void);
int bperf_trylock(void);
void bperf_unlock(void);
int bperf_dump(int fd, void *keys, __u32 key_size, void *vals,
	       __u32 value_size, __u32 max);
void bperf_note_map(int fd);
int bperf_open_pinned(struct bpf_map *map, struct btf *btf, int *fd);

#endif /* __PERF_BPERF_H */
