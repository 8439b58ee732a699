// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bperf leader: the programs that read the perf events of every bperf
 * session.  perf test-runs bperf_read on each CPU before it reads; while
 * a session counts tasks, bperf_switch also runs on every context switch
 * for the slots of such sessions.  Their cost grows with the number of
 * distinct events being counted, never with the number of sessions.
 *
 * The object also declares the maps only perf uses, so that they are
 * created and pinned with the others.  Design: util/bpf_counter.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bperf_maps.h"

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
		struct bperf_val d, *tot;
		__u32 slot, gen, k;
		__u64 bit;

		if (i >= nr)
			break;
		slot = ctl->active[i] & (BPERF_MAX_SLOTS - 1);
		gen = ctl->gen[slot];
		if (!bperf_read_value(ctl, slot, gen, cpu, &now))
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
