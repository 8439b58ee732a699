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
	__type(key, struct bperf_task_key);
	__type(value, struct bperf_task);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bperf_tasks SEC(".maps");

/*
 * perf's minimal vmlinux.h leaves out task_struct::start_time: this
 * flavour names it, and CO-RE finds it in the running kernel.
 */
struct task_struct___bperf {
	u64 start_time;
} __attribute__((preserve_access_index));

/* When the task was forked: with its tid, what tells it from others. */
static __always_inline __u64 bperf_start(struct task_struct *task)
{
	return ((struct task_struct___bperf *)task)->start_time;
}

static __always_inline void bperf_val_add(struct bperf_val *to,
					  const struct bperf_val *d)
{
	__sync_fetch_and_add(&to->counter, d->counter);
	__sync_fetch_and_add(&to->enabled, d->enabled);
	__sync_fetch_and_add(&to->running, d->running);
}

/*
 * Read active slots on this CPU and charge what each counted since its
 * previous reading here to the CPU total and, if the slot counts tasks
 * and 'task' is tracked for it, to that task.  At sched_switch and at
 * exit 'task' is the task leaving the CPU; in a BPF_PROG_TEST_RUN on
 * another CPU it is the task the IPI interrupted.
 *
 * A read (the test run before perf reads) takes every slot.  The hooks
 * that follow tasks take only the slots some task-mode session uses:
 * the other slots' previous reading and total move only when perf reads
 * them, and the differences still add up to the same total.  A read that
 * lands while the exit hook is in here on the same CPU (IRQs are on
 * there) takes only the slots the hook does not, so that no previous
 * reading is used twice: the slots no task session uses are read to the
 * instant, the others as the hook left them.
 */
static __always_inline void bperf_account(struct task_struct *task,
					  bool read)
{
	struct bperf_ctl *ctl;
	struct bperf_task_key key;
	struct bperf_cpu *pc;
	__u32 zero = 0, cpu, nr, i;
	bool nested = false;
	__u64 want;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	pc = bpf_map_lookup_elem(&bperf_cpu, &zero);
	if (!ctl || !pc)
		return;
	if (pc->busy_slots) {
		if (!read)
			return;
		nested = true;
		want = ~pc->busy_slots;
	} else {
		want = read ? ~0ULL : ctl->task_slots;
		pc->busy_slots = want;
	}

	key.tid = task->pid;
	key.start = bperf_start(task);
	cpu = bpf_get_smp_processor_id();
	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		struct bpf_perf_event_value now;
		struct bperf_prev *prev;
		struct bperf_task *t;
		struct bperf_val d, *tot;
		__u32 slot, gen;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		if (!(want & (1ULL << slot)))
			continue;
		/*
		 * perf bumps the generation before it installs the events of
		 * a reused slot: a reading from the new events never meets
		 * the old generation, and the first one only sets a base.
		 * Take the generation before reading and skip the reading if
		 * it changed meanwhile: it may come from either event.
		 */
		gen = ctl->gen[slot];
		if (bpf_perf_event_read_value(&bperf_events,
					      slot * bperf_nr_ids + cpu,
					      &now, sizeof(now)))
			continue;
		/* the verifier forgets bounds across the helper call */
		slot &= BPERF_MAX_SLOTS - 1;
		if (*(volatile __u32 *)&ctl->gen[slot] != gen)
			continue;
		prev = &pc->prev[slot];
		if (prev->gen != gen) {
			prev->gen = gen;
			prev->v.counter = now.counter;
			prev->v.enabled = now.enabled;
			prev->v.running = now.running;
			continue;
		}
		d.counter = now.counter - prev->v.counter;
		d.enabled = now.enabled - prev->v.enabled;
		d.running = now.running - prev->v.running;
		prev->v.counter = now.counter;
		prev->v.enabled = now.enabled;
		prev->v.running = now.running;

		tot = bpf_map_lookup_elem(&bperf_totals, &slot);
		if (tot) {
			tot->counter += d.counter;
			tot->enabled += d.enabled;
			tot->running += d.running;
		}

		if (!key.tid || !(ctl->task_slots & (1ULL << slot)))
			continue;
		key.slot = slot;
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (t && !t->exited)
			bperf_val_add(&t->own, &d);
	}
	/* a nested read leaves the hook it interrupted in charge */
	if (!nested)
		pc->busy_slots = 0;
}

/*
 * Drop one reference on the entry of 'key'.  The last one folds the
 * entry's counts into its anchor, deletes it and goes on to drop the
 * reference it held on the anchor.
 */
static __always_inline void bperf_put(struct bperf_task_key key)
{
	struct bperf_task *task;
	struct bperf_cpu *pc;
	struct bperf_val sum;
	__u32 anc, i, zero = 0;
	__u64 anc_start;

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
		anc_start = task->anc_start;
		sum.counter = task->own.counter + task->folded.counter;
		sum.enabled = task->own.enabled + task->folded.enabled;
		sum.running = task->own.running + task->folded.running;
		bpf_map_delete_elem(&bperf_tasks, &key);
		key.tid = anc;
		key.start = anc_start;
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
