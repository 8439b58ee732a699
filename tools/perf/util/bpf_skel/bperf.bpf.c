// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The bperf programs and maps, one object for every perf stat session
 * that counts with --bpf-counters.  Design: util/bperf.c.
 *
 *  bperf_read    test-run by perf on each CPU before it reads: the CPU
 *                totals of every active slot, and the share of the task
 *                on the CPU for slots that count tasks.
 *  bperf_switch  sched_switch: the task leaving the CPU gets what its
 *                task slots counted since the last reading.
 *  bperf_fork    task_newtask: a child of a tracked task is tracked,
 *                anchored to the nearest root above it.
 *  bperf_exit    sched_process_exit: the last reading of the task; once
 *                nothing refers to it, what it counted goes to its anchor.
 *  bperf_root    test-run by perf to register and release root tasks, so
 *                that reference counts only ever change atomically.
 *  bperf_cpuhp   cpuhp_enter: counts the times each CPU's perf context
 *                went down or came up, for perf to tell which events a
 *                hotplug killed.
 *
 * perf attaches the three task hooks only while a session counts tasks
 * (-p, -t, a workload): CPU-wide sessions cost nothing per switch.
 * bperf_cpuhp runs only when a CPU goes offline or online; its link is
 * pinned with the maps, as the events it watches over outlive sessions.
 * Every map is pinned (LIBBPF_PIN_BY_NAME) in one directory that all
 * sessions load the object with.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bperf_u.h"

#define ENOENT	2
#define ESRCH	3
#define E2BIG	7
#define EAGAIN	11
#define EEXIST	17
#define EXDEV	18
#define EINVAL	22
#define ENOSPC	28

#define PF_EXITING	0x00000004

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern void __ksym bpf_rcu_read_lock(void);
extern void __ksym bpf_rcu_read_unlock(void);

/* Highest possible CPU id + 1: the stride of bperf_events.  Set by perf. */
const volatile __u32 bperf_nr_ids = 1;

/* perf events, at slot * bperf_nr_ids + cpu id; sized by perf */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(int));
	__uint(map_flags, BPF_F_PRESERVE_ELEMS);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bperf_ctl);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bperf_cpu);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_cpu SEC(".maps");

/* what each slot counted on each CPU since the slot was set up */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPERF_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct bperf_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPERF_MAX_TASKS);
	__type(key, __u64);		/* BPERF_TASK_KEY() */
	__type(value, struct bperf_task);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_tasks SEC(".maps");

/*
 * Per CPU id, then one more for all CPUs: how many times the CPU's perf
 * context went down or came up (bperf_cpuhp).  Sized by perf: ids + 1.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_hotplug SEC(".maps");

/*
 * Per slot and CPU id, keyed as bperf_events: 1 + the CPU's count in
 * bperf_hotplug when perf opened the event there, 0 if it did not.
 * Written by perf; part of the generation of the event's readings.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_opened SEC(".maps");

/* The maps below are perf's bookkeeping: no program uses them. */

/* slot -> what it counts and who uses it */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BPERF_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct bperf_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_slots SEC(".maps");

/* session id -> the process behind it, to find sessions that died */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPERF_MAX_SESSIONS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bperf_session);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_sessions SEC(".maps");

/* the root tasks each session registered, to release them after it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPERF_MAX_ROOTS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bperf_root_key);
	__type(value, __u64);		/* the root's pid inode number */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_roots SEC(".maps");

/*
 * perf's minimal vmlinux.h leaves out what names a task for good: these
 * flavours name it, and CO-RE finds it in the running kernel.
 */
struct pid___bperf {
	unsigned int level;
	u64 ino;
} __attribute__((preserve_access_index));

struct task_struct___bperf {
	struct task_struct___bperf *group_leader;
	struct pid___bperf *thread_pid;
} __attribute__((preserve_access_index));

/*
 * The task's pid inode number: unlike its tid, never reused.  0 for the
 * idle tasks, which share init_struct_pid, and for a task already
 * reaped (its thread_pid is NULL): neither is ever tracked.
 */
static __always_inline __u64 bperf_ino(struct task_struct *task)
{
	return ((struct task_struct___bperf *)task)->thread_pid->ino;
}

/*
 * Set a per-CPU flag that a read, arriving by IPI on this CPU, looks
 * at: the compiler must not move the accesses it guards across it.
 */
static __always_inline void bperf_flag(__u32 *flag, __u32 val)
{
	asm volatile("" ::: "memory");
	*(volatile __u32 *)flag = val;
	asm volatile("" ::: "memory");
}

static __always_inline void bperf_val_add(struct bperf_val *to,
					  const struct bperf_val *d)
{
	__sync_fetch_and_add(&to->counter, d->counter);
	__sync_fetch_and_add(&to->enabled, d->enabled);
	__sync_fetch_and_add(&to->running, d->running);
}

/*
 * 'now' minus the previous reading, in 'd', and 'now' becomes the
 * previous reading.  The first reading of a slot generation only sets
 * the base: false.
 */
static __always_inline bool bperf_diff(struct bperf_prev *prev, __u64 gen,
				       const struct bperf_val *now,
				       struct bperf_val *d)
{
	if (prev->gen != gen) {
		prev->gen = gen;
		prev->v = *now;
		return false;
	}
	d->counter = now->counter - prev->v.counter;
	d->enabled = now->enabled - prev->v.enabled;
	d->running = now->running - prev->v.running;
	prev->v = *now;
	return true;
}

/*
 * The generation of the readings of a slot on a CPU: the slot's, which
 * perf bumps when it sets the slot up again ('sgen', in the control
 * map), and the event's, which it changes when it opens the event on
 * the CPU anew after a hotplug ('opened', in bperf_opened).  The
 * callers look both up once and read them before and after a reading.
 */
static __always_inline __u64 bperf_gen(const __u32 *sgen, const __u32 *opened)
{
	return (__u64)*(const volatile __u32 *)sgen << 32 |
	       *(const volatile __u32 *)opened;
}

/*
 * The note of the event of 'slot' on 'cpu' in bperf_opened, and its key
 * there and in bperf_events, in *key.  The array has every key the
 * events array has: NULL only to please the verifier.
 */
static __always_inline __u32 *bperf_opened_at(__u32 slot, __u32 cpu,
					      __u32 *key)
{
	*key = slot * bperf_nr_ids + cpu;
	return bpf_map_lookup_elem(&bperf_opened, key);
}

/*
 * Read the count and times of 'slot' on this CPU.  perf changes the
 * generation after it takes an event out of the array and before it
 * puts the new one in: a reading from the new event never meets the old
 * generation, and the first one only sets a base.  While it puts a new
 * event in, the event's note is BPERF_OPENED_PENDING: nothing is read.
 * 'gen' is the generation taken before the read: if it changed
 * meanwhile, the reading may come from either event and is dropped
 * (false).
 */
static __always_inline bool bperf_read_value(__u32 key, const __u32 *sgen,
					     const __u32 *opened, __u64 gen,
					     struct bpf_perf_event_value *now)
{
	if ((__u32)gen == BPERF_OPENED_PENDING)
		return false;
	if (bpf_perf_event_read_value(&bperf_events, key, now, sizeof(*now)))
		return false;
	return bperf_gen(sgen, opened) == gen;
}

/*
 * How long the task on this CPU ran since the CPU last charged a task:
 * every charge, at sched_switch, at exit or in a read, ends one stretch
 * and starts the next.
 */
static __always_inline __u64 bperf_ran(struct bperf_cpu *pc)
{
	__u64 now = bpf_ktime_get_ns(), ran = now - pc->seg_start;

	pc->seg_start = now;
	return ran;
}

/*
 * Give 'd' of 'slot' to the task of pid inode number 'ino' if it is
 * tracked for the slot.
 */
static __always_inline void bperf_charge(__u64 ino, __u32 slot,
					 const struct bperf_val *d)
{
	__u64 key = BPERF_TASK_KEY(ino, slot);
	struct bperf_task *t;

	if (!ino)
		return;
	t = bpf_map_lookup_elem(&bperf_tasks, &key);
	if (t && !t->exited)
		bperf_val_add(&t->own, d);
}

/*
 * The task hooks: give 'task', leaving the CPU (sched_switch) or exiting,
 * what the slots of task-mode sessions counted since their previous
 * reading for the task on this CPU.  The slots of an all-software group
 * (ctl->sw_slots) never multiplex: their count is read alone, and the
 * task gets the time it ran as time enabled and running.  The CPU
 * totals are left to reads (bperf_read).
 */
static __always_inline void bperf_task_hook(struct task_struct *task)
{
	struct bpf_perf_event_value now;
	struct bperf_ctl *ctl;
	struct bperf_cpu *pc;
	__u32 zero = 0, cpu, nr, i;
	__u64 ran, ino;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	pc = bpf_map_lookup_elem(&bperf_cpu, &zero);
	if (!ctl || !pc)
		return;

	ino = bperf_ino(task);
	ran = bperf_ran(pc);
	cpu = bpf_get_smp_processor_id();
	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		__u32 slot, key, *sgen, *opened;
		struct bperf_val d;
		__u64 bit, gen;
		long c;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		bit = 1ULL << slot;
		if (!(ctl->task_slots & bit))
			continue;
		/* see bperf_read_value() for the generation check */
		sgen = &ctl->gen[slot];
		opened = bperf_opened_at(slot, cpu, &key);
		if (!opened)
			continue;
		gen = bperf_gen(sgen, opened);
		if (ctl->sw_slots & bit) {
			struct bperf_prev *tp;

			if ((__u32)gen == BPERF_OPENED_PENDING)
				continue;
			c = bpf_perf_event_read(&bperf_events, key);
			/* an error is a small negative number */
			if ((unsigned long)c >= -4095UL)
				continue;
			slot &= BPERF_MAX_SLOTS - 1;
			if (bperf_gen(sgen, opened) != gen)
				continue;
			tp = &pc->tprev[slot];
			if (tp->gen != gen) {
				tp->gen = gen;
				tp->v.counter = c;
				continue;
			}
			d.counter = c - tp->v.counter;
			d.enabled = ran;
			d.running = ran;
			tp->v.counter = c;
		} else {
			if (!bperf_read_value(key, sgen, opened, gen, &now))
				continue;
			slot &= BPERF_MAX_SLOTS - 1;
			if (!bperf_diff(&pc->tprev[slot], gen,
					(struct bperf_val *)&now, &d))
				continue;
		}
		bperf_charge(ino, slot, &d);
	}
}

/*
 * Drop one reference on the entry of 'key'.  The last one folds the
 * entry's counts into its anchor, deletes it and goes on to drop the
 * reference it held on the anchor.
 */
static __always_inline void bperf_put(__u64 key)
{
	struct bperf_task *task;
	struct bperf_cpu *pc;
	struct bperf_val sum;
	__u32 i, zero = 0;
	__u64 anc;

	for (i = 0; i < BPERF_MAX_DEPTH; i++) {
		task = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!task)
			return;
		if (__sync_fetch_and_add(&task->hold, -1) != 1)
			return;

		/* perf reads the tasks map again if it overlapped a fold */
		pc = bpf_map_lookup_elem(&bperf_cpu, &zero);
		if (pc)
			__sync_fetch_and_add(&pc->folds_begun, 1);
		anc = task->anc;
		sum.counter = task->own.counter + task->folded.counter;
		sum.enabled = task->own.enabled + task->folded.enabled;
		sum.running = task->own.running + task->folded.running;
		bpf_map_delete_elem(&bperf_tasks, &key);
		key = BPERF_TASK_KEY(anc, BPERF_KEY_SLOT(key));
		task = anc ? bpf_map_lookup_elem(&bperf_tasks, &key) : NULL;
		if (task)
			bperf_val_add(&task->folded, &sum);
		if (pc)
			__sync_fetch_and_add(&pc->folds_done, 1);
		if (!task)
			return;
	}
}

/*
 * Is the task of 'tid' and 'ino' gone (reaped, its tid maybe reused
 * since), or past the point where its exit hook may run?
 */
static __always_inline bool bperf_exiting(__u32 tid, __u64 ino)
{
	struct task_struct *p = bpf_task_from_pid(tid);
	bool exiting;

	if (!p)
		return true;
	exiting = bperf_ino(p) != ino || (p->flags & PF_EXITING);
	bpf_task_release(p);
	return exiting;
}

/* The task of a tracked entry has exited: drop the 'alive' reference. */
static __always_inline void bperf_gone(struct bperf_task *t,
				       __u64 key)
{
	t->exited = 1;
	if (__sync_fetch_and_and(&t->alive, 0))
		bperf_put(key);
}

/* the slot at position I of the active list, if it counts tasks, or -1 */
static __always_inline int bperf_task_slot(struct bperf_ctl *ctl, __u32 i)
{
	__u32 slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);

	return ctl->task_slots & (1ULL << slot) ? (int)slot : -1;
}

/*
 * Run by perf with BPF_PROG_TEST_RUN on each CPU it is about to read,
 * never attached: this is all a CPU-wide session (-a, -C) costs.  Only
 * raw tracepoint programs can be test-run on a given CPU.
 *
 * It reads every active slot on this CPU and adds what each counted
 * since the previous read here to the CPU total.  The slots of task-mode
 * sessions also go to the task on the CPU, as in bperf_task_hook(),
 * unless the read interrupts the exit hook (IRQs are on there): then the
 * hook, which has the task's previous readings in hand, gives the task
 * its last stretch.  A read can interrupt another one too: perf's test
 * run on the CPU it runs on happens in place, with IRQs on, and another
 * session's IPI may land in it.  The nested read then reads nothing and
 * returns 1, and its session runs it again: the read it interrupted,
 * with preemption off, is done within microseconds.  Otherwise 0.
 */
SEC("raw_tp")
int bperf_read(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct bpf_perf_event_value now;
	struct bperf_ctl *ctl;
	struct bperf_cpu *pc;
	__u32 zero = 0, cpu, nr, i;
	__u64 ran = 0, ino;
	bool tasks;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	pc = bpf_map_lookup_elem(&bperf_cpu, &zero);
	if (!ctl || !pc)
		return 0;

	/* a read interrupting one here leaves it to finish: try again */
	if (pc->reading)
		return 1;
	bperf_flag(&pc->reading, 1);

	ino = bperf_ino(task);
	tasks = !pc->exiting;
	if (tasks)
		ran = bperf_ran(pc);
	cpu = bpf_get_smp_processor_id();
	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		__u32 slot, k, key, *sgen, *opened;
		struct bperf_val d, *tot;
		__u64 bit, gen;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		sgen = &ctl->gen[slot];
		opened = bperf_opened_at(slot, cpu, &key);
		if (!opened)
			continue;
		gen = bperf_gen(sgen, opened);
		if (!bperf_read_value(key, sgen, opened, gen, &now))
			continue;
		/* the verifier forgets bounds across the helper call */
		slot &= BPERF_MAX_SLOTS - 1;
		bit = 1ULL << slot;

		/* a copy: 'slot' itself on the stack would lose its bounds */
		k = slot;
		tot = bpf_map_lookup_elem(&bperf_totals, &k);
		if (tot && bperf_diff(&pc->prev[slot], gen,
				      (struct bperf_val *)&now, &d)) {
			tot->counter += d.counter;
			tot->enabled += d.enabled;
			tot->running += d.running;
		}

		if (!tasks || !(ctl->task_slots & bit))
			continue;
		if (!bperf_diff(&pc->tprev[slot], gen,
				(struct bperf_val *)&now, &d))
			continue;
		if (ctl->sw_slots & bit) {
			d.enabled = ran;
			d.running = ran;
		}
		bperf_charge(ino, slot, &d);
	}
	bperf_flag(&pc->reading, 0);
	return 0;
}

/*
 * Attached only while a session counts tasks (-p, -t, a workload): the
 * task leaving the CPU gets what its slots counted since the last
 * reading.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(bperf_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	bperf_task_hook(prev);
	return 0;
}

SEC("tp_btf/task_newtask")
int BPF_PROG(bperf_fork, struct task_struct *child, u64 clone_flags)
{
	__u64 ino = bperf_ino(bpf_get_current_task_btf());
	__u64 cino = bperf_ino(child);
	struct bperf_task *parent, *anc;
	__u64 key, ckey;
	struct bperf_ctl *ctl;
	struct bperf_cpu *pc;
	__u32 zero = 0, nr, i;
	long err;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	if (!ctl || !ctl->task_slots)
		return 0;

	/* the parent is running this, so its entries cannot go away */
	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		struct bperf_task init = {
			.hold = 1,
			.alive = 1,
		};
		int slot;

		if (i >= nr)
			break;
		slot = bperf_task_slot(ctl, i);
		if (slot < 0)
			continue;
		key = BPERF_TASK_KEY(ino, slot);
		parent = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!parent)
			continue;
		if (parent->iroots) {
			init.anc = ino;
			anc = parent;
		} else if (parent->anc) {
			/* the parent's anchor outlives it: it holds a ref */
			init.anc = parent->anc;
			key = BPERF_TASK_KEY(init.anc, slot);
			anc = bpf_map_lookup_elem(&bperf_tasks, &key);
			if (!anc)
				continue;
		} else {
			continue;
		}
		ckey = BPERF_TASK_KEY(cino, slot);
		err = bpf_map_update_elem(&bperf_tasks, &ckey, &init,
					  BPF_NOEXIST);
		if (err) {
			if (err == -E2BIG) {
				pc = bpf_map_lookup_elem(&bperf_cpu, &zero);
				if (pc)
					__sync_fetch_and_add(&pc->untracked, 1);
			}
			continue;
		}
		__sync_fetch_and_add(&anc->hold, 1);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(bperf_exit, struct task_struct *task)
{
	__u64 ino = bperf_ino(task), key;
	struct bperf_task *t;
	struct bperf_ctl *ctl;
	struct bperf_cpu *pc;
	__u32 zero = 0, nr, i;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	if (!ctl || !ctl->task_slots)
		return 0;

	/* what it counted since its last reading on this CPU */
	pc = bpf_map_lookup_elem(&bperf_cpu, &zero);
	if (pc)
		bperf_flag(&pc->exiting, 1);
	bperf_task_hook(task);
	if (pc)
		bperf_flag(&pc->exiting, 0);

	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		int slot;

		if (i >= nr)
			break;
		slot = bperf_task_slot(ctl, i);
		if (slot < 0)
			continue;
		key = BPERF_TASK_KEY(ino, slot);
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!t)
			continue;
		bperf_gone(t, key);
	}
	return 0;
}

/* perf's minimal vmlinux.h has no hotplug states: CO-RE finds this one */
enum cpuhp_state___bperf {
	CPUHP_AP_PERF_ONLINE___bperf = 1,
};

/*
 * Taking a CPU offline takes the perf events out of the CPU's context
 * for good (perf_event_exit_cpu(), the teardown of CPUHP_AP_PERF_ONLINE);
 * bringing it up again puts none back.  Count each pass of the CPU
 * through that state, down or up: perf opens the events there again when
 * the count moved since it opened them (see bperf_opened).
 */
SEC("raw_tp/cpuhp_enter")
int BPF_PROG(bperf_cpuhp, unsigned int cpu, int target, int state)
{
	__u32 key;
	__u32 *n;

	if (bpf_core_enum_value_exists(enum cpuhp_state___bperf,
				       CPUHP_AP_PERF_ONLINE___bperf) &&
	    state != bpf_core_enum_value(enum cpuhp_state___bperf,
					 CPUHP_AP_PERF_ONLINE___bperf))
		return 0;
	key = cpu;
	n = bpf_map_lookup_elem(&bperf_hotplug, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	key = bperf_nr_ids;
	n = bpf_map_lookup_elem(&bperf_hotplug, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

/* Add a root's reference to the entry of its task, making it if needed. */
static __always_inline long bperf_root_hold(struct bperf_root_op *op)
{
	struct bperf_task init = {
		.hold = 2,	/* the root and 'alive' */
		.alive = 1,
		.roots = 1,
	};
	struct task_struct *p;
	struct bperf_task *t;
	__u64 key;
	long err;

	p = bpf_task_from_pid(op->tid);
	if (!p)
		return -ESRCH;
	/* the task may be reaped meanwhile: RCU keeps its pid */
	bpf_rcu_read_lock();
	op->ino = bperf_ino(p);
	bpf_rcu_read_unlock();
	bpf_task_release(p);
	if (!op->ino)
		return -ESRCH;
	key = BPERF_TASK_KEY(op->ino, op->slot);
	t = bpf_map_lookup_elem(&bperf_tasks, &key);
	if (!t) {
		init.iroots = op->inherit ? 1 : 0;
		err = bpf_map_update_elem(&bperf_tasks, &key, &init,
					  BPF_NOEXIST);
		/* -EEXIST: a fork just added it, look again */
		if (err)
			return err == -EEXIST ? -EAGAIN : err;
		/*
		 * If the task is exiting or gone, its exit hook may have run
		 * before the entry existed: do what the hook does.  perf
		 * drops the root's reference as usual.  The fetching atomic
		 * is a full barrier between the insert and the look at the
		 * task; the exit path has one between setting PF_EXITING and
		 * the hook, so one side at least sees the other.
		 */
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (t && __sync_fetch_and_add(&t->alive, 0) &&
		    bperf_exiting(op->tid, op->ino))
			bperf_gone(t, key);
		return 0;
	}
	if (t->exited)
		return -ESRCH;
	/* a dying entry: let its last holder finish, then retry */
	if (__sync_fetch_and_add(&t->hold, 1) == 0) {
		__sync_fetch_and_add(&t->hold, -1);
		return -EAGAIN;
	}
	t->roots++;
	if (op->inherit)
		t->iroots++;
	return 0;
}

/* Drop a root's reference to the entry of its task. */
static __always_inline long bperf_root_release(struct bperf_root_op *op)
{
	__u64 key = BPERF_TASK_KEY(op->ino, op->slot);
	struct bperf_task *t;

	t = bpf_map_lookup_elem(&bperf_tasks, &key);
	if (!t)
		return -ESRCH;
	if (t->roots)
		t->roots--;
	if (op->inherit && t->iroots)
		t->iroots--;
	bperf_put(key);
	return 0;
}

/*
 * Run by perf, with the attr map locked, so that two runs never race;
 * the programs above may run at the same time on other CPUs.  The root
 * is noted in bperf_roots, or forgotten, in the run that takes or drops
 * its reference: a signal, even SIGKILL, cannot stop perf in between,
 * so what a killed session leaves there is what it holds.
 */
SEC("syscall")
int bperf_root(struct bperf_root_op *op)
{
	struct bperf_root_key rkey = {
		.sid = op->sid,
		.tid = op->tid,
		.slot = op->slot,
		.inherit = op->inherit,
	};
	struct task_struct___bperf *cur;
	__u64 ino, *rino;
	long err;

	cur = (struct task_struct___bperf *)bpf_get_current_task_btf();
	switch (op->op) {
	case BPERF_ROOT_SELF:
		op->tid = bpf_get_current_pid_tgid() >> 32;
		bpf_rcu_read_lock();
		op->ino = cur->group_leader->thread_pid->ino;
		op->level = cur->thread_pid->level;
		bpf_rcu_read_unlock();
		return 0;
	case BPERF_ROOT_ALIVE:
		/* a session: its perf process, named from any namespace */
		return !bperf_exiting(op->tid, op->ino);
	}

	if (!op->tid || op->slot >= BPERF_MAX_SLOTS)
		return -EINVAL;
	switch (op->op) {
	case BPERF_ROOT_ADD:
		/* tids name tasks here as in the initial pid namespace only */
		bpf_rcu_read_lock();
		err = cur->thread_pid->level;
		bpf_rcu_read_unlock();
		if (err)
			return -EXDEV;
		/* registered already (a tid named twice): take nothing */
		if (bpf_map_lookup_elem(&bperf_roots, &rkey))
			return -EEXIST;
		err = bperf_root_hold(op);
		if (err)
			return err;
		/* from the stack: the helper takes no ctx pointer */
		ino = op->ino;
		err = bpf_map_update_elem(&bperf_roots, &rkey, &ino,
					  BPF_NOEXIST);
		if (!err)
			return 0;
		bperf_root_release(op);
		/* perf tells a full roots map from a full tasks map */
		return err == -E2BIG ? -ENOSPC : err;
	case BPERF_ROOT_DEL:
		/* the record says what to release: only what was taken */
		rino = bpf_map_lookup_elem(&bperf_roots, &rkey);
		if (!rino)
			return -ENOENT;
		op->ino = *rino;
		if (bpf_map_delete_elem(&bperf_roots, &rkey))
			return -ENOENT;
		return bperf_root_release(op);
	default:
		return -EINVAL;
	}
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
