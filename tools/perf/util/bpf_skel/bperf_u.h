/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Layouts shared by perf (util/bperf*.c) and the bperf BPF programs
 * (bperf.bpf.c).  Every map bperf pins holds one of the types below;
 * changing any of them changes what a pinned map must look like, so bump
 * BPERF_MAGIC with it.
 */
#ifndef __BPERF_U_H
#define __BPERF_U_H

/* Layout version, stored in the control map by whoever created it. */
#define BPERF_MAGIC		0x62706639	/* "bpf9" */

/* Distinct events counted at once, by all sessions together. */
#define BPERF_MAX_SLOTS		64
/* Concurrent perf stat sessions sharing one set of maps. */
#define BPERF_MAX_SESSIONS	4096
/* Tasks tracked for task-mode sessions, summed over all event slots. */
#define BPERF_MAX_TASKS		16384
/* Root tasks registered by all task-mode sessions. */
#define BPERF_MAX_ROOTS		65536
/* How far one exit may cascade up a chain of anchors. */
#define BPERF_MAX_DEPTH		8

/* A counter triple, laid out like struct bpf_perf_event_value. */
struct bperf_val {
	__u64 counter;
	__u64 enabled;
	__u64 running;
};

/*
 * Last reading of one slot on one CPU, and the generation it is for: the
 * slot's (bperf_ctl) and its event's on the CPU (bperf_opened).
 */
struct bperf_prev {
	struct bperf_val v;
	__u64 gen;
};

/* Per-CPU state of the accounting programs (one element, per-CPU map). */
struct bperf_cpu {
	__u32 reading;			/* bperf_read() runs here */
	__u32 exiting;			/* the exit hook charges a task here */
	/*
	 * Folds of an exited task into its anchor begun and done here: a
	 * reader of the tasks map that saw them differ, or change, may
	 * have seen a task twice or not at all, and reads again.
	 */
	__u64 folds_begun;
	__u64 folds_done;
	__u64 untracked;		/* children the full tasks map missed */
	/*
	 * bpf_ktime_get_ns() when this CPU last charged a task: software
	 * slots charge the time since then as time enabled and running.
	 */
	__u64 seg_start;
	/* last reading of each slot here: for the CPU totals, by reads */
	struct bperf_prev prev[BPERF_MAX_SLOTS];
	/* ... for the task on the CPU, by reads and the task hooks */
	struct bperf_prev tprev[BPERF_MAX_SLOTS];
};

/* The programs perf loads, and which of them it attaches. */
enum bperf_prog {
	BPERF_PROG_SWITCH,		/* sched_switch */
	BPERF_PROG_FORK,		/* task_newtask */
	BPERF_PROG_EXIT,		/* sched_process_exit */
	BPERF_NR_LINKS,			/* the ones above are attached */
	BPERF_PROG_READ = BPERF_NR_LINKS,	/* test-run before a read */
	BPERF_PROG_ROOT,		/* test-run to register roots */
	BPERF_PROG_CPUHP,		/* cpuhp_enter, its link pinned */
	BPERF_NR_PROGS,
};

/*
 * The control block (one element).  The programs read the first part;
 * only perf writes it, with the attr map locked.
 */
struct bperf_ctl {
	__u32 magic;
	__u32 nr_ids;			/* stride of the events array */
	__u32 nr_active;
	__u32 hotplug;			/* bperf_hotplug's total when perf last
					 * opened what hotplugs had killed
					 */
	__u64 task_slots;		/* slots some task-mode session uses */
	/*
	 * Slots whose group is all software events.  Those never
	 * multiplex, so on context switches the programs read their count
	 * alone, the cheaper read, and take the time a task ran from the
	 * scheduler.
	 */
	__u64 sw_slots;
	__u32 active[BPERF_MAX_SLOTS];	/* slots to read, groups adjacent */
	__u32 gen[BPERF_MAX_SLOTS];	/* bumped each time a slot is reused */
	/*
	 * perf's bookkeeping; the programs never look at it.  Every
	 * session holds the programs, only task-mode sessions the links.
	 */
	__u32 prog_id[BPERF_NR_PROGS];	/* by enum bperf_prog */
	__u32 link_id[BPERF_NR_LINKS];	/* by enum bperf_prog */
	__u32 nr_sessions;
	__u32 next_sid;
	__u32 gc_cursor;
};

/*
 * Key of the tasks map (a __u64): one entry per tracked task and event
 * slot.  A task is named by the inode number pidfs gives its struct pid
 * (pid->ino), which is never reused while the system runs: a task that
 * gets the tid of one whose entry is still kept is another task, with an
 * entry of its own.
 */
#define BPERF_TASK_KEY(ino, slot)	((ino) * BPERF_MAX_SLOTS + (slot))
#define BPERF_KEY_INO(key)		((key) / BPERF_MAX_SLOTS)
#define BPERF_KEY_SLOT(key)		((__u32)((key) % BPERF_MAX_SLOTS))

/*
 * A tracked task.  'hold' counts the references that keep the entry:
 * one while the task lives ('alive'), one per session that registered
 * it as a root, one per tracked task anchored to it.  Whoever drops the
 * last one folds own + folded into the anchor and deletes the entry.
 */
struct bperf_task {
	struct bperf_val own;		/* counted while this task ran */
	struct bperf_val folded;	/* from exited tasks anchored here */
	__u64 hold;
	__u64 alive;
	__u64 anc;			/* nearest root above (ino), 0: none */
	__u32 roots;			/* sessions using it as a root */
	__u32 iroots;			/* ... of which count its children */
	__u32 exited;
	__u32 unused;
};

/*
 * Argument of the root-registration program (BPF_PROG_TEST_RUN ctx,
 * copied back): BPERF_ROOT_ADD finds the task by tid and returns its
 * pid inode number, which names the task.  The program notes the root
 * in bperf_roots under session sid, or forgets it, in the same run as
 * it takes or drops the reference of the root to the task's entry: a
 * session killed at any moment leaves the two in agreement.
 * BPERF_ROOT_DEL releases only a root noted there, by the record.
 */
struct bperf_root_op {
	__u32 op;
	__u32 tid;	/* in the initial pid namespace (ADD refuses others) */
	__u32 slot;
	__u32 inherit;
	__u64 ino;
	__u32 sid;
	__u32 level;	/* SELF: level of perf's pid namespace, 0: initial */
};

enum bperf_root_ops {
	BPERF_ROOT_ADD = 1,	/* register tid as a root */
	BPERF_ROOT_DEL,		/* drop one registration */
	BPERF_ROOT_SELF,	/* perf's pid and pid inode number, its level */
	BPERF_ROOT_ALIVE,	/* 1 if process tid, of pid inode number ino,
				 * is there and not exiting
				 */
};

/*
 * The rest is perf's bookkeeping, kept in pinned maps so that a later
 * session can clean up after one that died.  No program reads it.
 */

/* Key of the attr map: an event and where it sits in its group. */
struct bperf_attr_key {
	struct perf_event_attr attr;
	__u64 group_sig;		/* hash of the group's attrs, 0: none */
	__u32 group_pos;
	__u32 group_len;
};

/* What a slot counts and who uses it (array indexed by slot). */
struct bperf_slot {
	struct bperf_attr_key key;
	/* the attr its events were opened with, perf's fallbacks applied */
	struct perf_event_attr opened;
	__u32 users;			/* sessions counting this slot */
	__u32 task_users;		/* ... of which count tasks */
	__u32 flags;			/* BPERF_SLOT_* */
	__u32 unused;
};

/*
 * The slot's events are opened on every online CPU, not on the CPUs of
 * their PMU only (uncore, a hybrid system's CPU types): a CPU onlined
 * after they were opened gets its own.
 */
#define BPERF_SLOT_ALL_CPUS	1

/*
 * In bperf_opened: perf is putting a new event in, or failed to.  The
 * programs read nothing then.  Not a hotplug count, so the event is
 * opened again on the next look, and not 0, which would say the CPU
 * never had one.
 */
#define BPERF_OPENED_PENDING	0xffffffffU

/* A registered session (hash keyed by session id). */
struct bperf_session {
	__u64 ino;			/* pid inode number of the perf process */
	__u64 pidns;			/* inode of its pid namespace: for
					 * people reading the map
					 */
	__u64 slots;			/* slots it uses */
	__u32 pid;			/* in the initial pid namespace */
	__u32 flags;			/* BPERF_SESSION_* */
};

/* The session counts tasks: look for its roots when it is gone. */
#define BPERF_SESSION_TASKS	1

/*
 * Key of the roots map: a session's registration of a root task; the
 * value is the task's pid inode number.
 */
struct bperf_root_key {
	__u32 sid;
	__u32 tid;
	__u32 slot;
	__u32 inherit;
};

#endif /* __BPERF_U_H */
