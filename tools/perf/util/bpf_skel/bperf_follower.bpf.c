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
#define EAGAIN	11
#define EINVAL	22

SEC("tp_btf/task_newtask")
int BPF_PROG(bperf_fork, struct task_struct *child, u64 clone_flags)
{
	struct bperf_task_key key, ckey;
	struct bperf_task *parent, *anc;
	struct bperf_ctl *ctl;
	__u32 zero = 0, ptid, nr, i;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	if (!ctl || !ctl->task_slots)
		return 0;

	/* the parent is running this, so its entries cannot go away */
	ptid = (__u32)bpf_get_current_pid_tgid();
	ckey.tid = child->pid;
	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		struct bperf_task init = {
			.hold = 1,
			.alive = 1,
		};
		__u32 slot;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		if (!(ctl->task_slots & (1ULL << slot)))
			continue;
		key.tid = ptid;
		key.slot = slot;
		parent = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!parent)
			continue;
		if (parent->iroots) {
			init.anc = ptid;
			anc = parent;
		} else if (parent->anc) {
			/* the parent's anchor outlives it: it holds a ref */
			init.anc = parent->anc;
			key.tid = parent->anc;
			anc = bpf_map_lookup_elem(&bperf_tasks, &key);
			if (!anc)
				continue;
		} else {
			continue;
		}
		ckey.slot = slot;
		if (bpf_map_update_elem(&bperf_tasks, &ckey, &init,
					BPF_NOEXIST))
			continue;
		__sync_fetch_and_add(&anc->hold, 1);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(bperf_exit, struct task_struct *task)
{
	struct bperf_task_key key;
	struct bperf_task *t;
	struct bperf_ctl *ctl;
	__u32 zero = 0, tid, nr, i;

	ctl = bpf_map_lookup_elem(&bperf_ctl, &zero);
	if (!ctl || !ctl->task_slots)
		return 0;

	tid = (__u32)bpf_get_current_pid_tgid();
	/* what it counted since it last left a CPU */
	bperf_account(tid);

	key.tid = tid;
	nr = ctl->nr_active;
	for (i = 0; i < BPERF_MAX_SLOTS; i++) {
		__u32 slot;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		if (!(ctl->task_slots & (1ULL << slot)))
			continue;
		key.slot = slot;
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!t)
			continue;
		t->exited = 1;
		if (__sync_fetch_and_and(&t->alive, 0))
			bperf_put(tid, slot);
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
	struct bperf_task_key key = { .tid = op->tid };
	struct bperf_task init = {
		.hold = 2,	/* the root and 'alive' */
		.alive = 1,
		.roots = 1,
	};
	struct bperf_task *t;

	if (!op->tid || op->slot >= BPERF_MAX_SLOTS)
		return -EINVAL;
	key.slot = op->slot;

	switch (op->op) {
	case BPERF_ROOT_ADD:
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!t) {
			init.iroots = op->inherit ? 1 : 0;
			return bpf_map_update_elem(&bperf_tasks, &key, &init,
						   BPF_NOEXIST) ? -EAGAIN : 0;
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
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!t)
			return -ESRCH;
		if (t->roots)
			t->roots--;
		if (op->inherit && t->iroots)
			t->iroots--;
		bperf_put(op->tid, op->slot);
		return 0;
	case BPERF_ROOT_GONE:
		t = bpf_map_lookup_elem(&bperf_tasks, &key);
		if (!t)
			return -ESRCH;
		if (t->exited)
			return 0;
		t->exited = 1;
		if (__sync_fetch_and_and(&t->alive, 0))
			bperf_put(op->tid, op->slot);
		return 0;
	default:
		return -EINVAL;
	}
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
