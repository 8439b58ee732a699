// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bperf follower: keeps the tasks map in step with the task tree for the
 * sessions that count tasks (-p, -t, a workload).  A task forked by a
 * tracked task is tracked too, anchored to the nearest root above it; a
 * task that exits gets its last reading and, once nothing refers to it,
 * folds what it counted into its anchor.  perf registers and releases
 * root tasks through bperf_root, run with BPF_PROG_TEST_RUN, so that the
 * reference counts only ever change atomically.  Design: util/bpf_counter.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bperf_maps.h"

#define ESRCH	3
#define E2BIG	7
#define EAGAIN	11
#define EEXIST	17
#define EINVAL	22

#define PF_EXITING	0x00000004

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern void __ksym bpf_rcu_read_lock(void);
extern void __ksym bpf_rcu_read_unlock(void);

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

/*
 * Run by perf, with the attr map locked, so that two runs never race;
 * the programs above may run at the same time on other CPUs.
 */
SEC("syscall")
int bperf_root(struct bperf_root_op *op)
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

	if (!op->tid || op->slot >= BPERF_MAX_SLOTS)
		return -EINVAL;

	switch (op->op) {
	case BPERF_ROOT_ADD:
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
			 * If the task is exiting or gone, its exit hook may
			 * have run before the entry existed: do what the hook
			 * does.  perf drops the root's reference as usual.
			 * The fetching atomic is a full barrier between the
			 * insert and the look at the task; the exit path has
			 * one between setting PF_EXITING and the hook, so
			 * one side at least sees the other.
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
	case BPERF_ROOT_DEL:
		key = BPERF_TASK_KEY(op->ino, op->slot);
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!t)
			return -ESRCH;
		if (t->roots)
			t->roots--;
		if (op->inherit && t->iroots)
			t->iroots--;
		bperf_put(key);
		return 0;
	default:
		return -EINVAL;
	}
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
