/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Maps and helpers the two bperf objects share.  Both objects declare the
 * same maps with LIBBPF_PIN_BY_NAME: perf loads them with one pin
 * directory, so the second object reuses what the first one pinned.
 * See the comment at the top of util/bpf_counter.c for the design.
 * Makefile.perf names this header as a prerequisite of both objects.
 */
#ifndef __BPERF_MAPS_H
#define __BPERF_MAPS_H

#include "bperf_u.h"

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
 * perf's minimal vmlinux.h leaves out what names a task for good: these
 * flavours name it, and CO-RE finds it in the running kernel.
 */
struct pid___bperf {
	u64 ino;
} __attribute__((preserve_access_index));

struct task_struct___bperf {
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
static __always_inline bool bperf_diff(struct bperf_prev *prev, __u32 gen,
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
 * Read the count and times of 'slot' on this CPU.  perf bumps the
 * generation before it installs the events of a reused slot: a reading
 * from the new events never meets the old generation, and the first one
 * only sets a base.  'gen' is the generation taken before the read: if
 * it changed meanwhile, the reading may come from either event and is
 * dropped (false).
 */
static __always_inline bool bperf_read_value(struct bperf_ctl *ctl,
					     __u32 slot, __u32 gen, __u32 cpu,
					     struct bpf_perf_event_value *now)
{
	if (bpf_perf_event_read_value(&bperf_events,
				      slot * bperf_nr_ids + cpu,
				      now, sizeof(*now)))
		return false;
	slot &= BPERF_MAX_SLOTS - 1;
	return *(volatile __u32 *)&ctl->gen[slot] == gen;
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
		struct bperf_val d;
		__u32 slot, gen;
		__u64 bit;
		long c;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		bit = 1ULL << slot;
		if (!(ctl->task_slots & bit))
			continue;
		/* see bperf_read_value() for the generation check */
		gen = ctl->gen[slot];
		if (ctl->sw_slots & bit) {
			struct bperf_prev *tp;

			c = bpf_perf_event_read(&bperf_events,
						slot * bperf_nr_ids + cpu);
			/* an error is a small negative number */
			if ((unsigned long)c >= -4095UL)
				continue;
			slot &= BPERF_MAX_SLOTS - 1;
			if (*(volatile __u32 *)&ctl->gen[slot] != gen)
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
			if (!bperf_read_value(ctl, slot, gen, cpu, &now))
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

#endif /* __BPERF_MAPS_H */
