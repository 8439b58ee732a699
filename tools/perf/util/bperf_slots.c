// SPDX-License-Identifier: GPL-2.0
/*
 * bperf slots: one per distinct event (a group takes adjacent ones), found
 * by the attr map, with one perf event per CPU that all sessions share.
 * Design: util/bperf.c.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>

#include "bperf.h"
#include "debug.h"
#include "evsel.h"
#include "evlist.h"
#include "cpumap.h"
#include "pmu.h"
#include "pmus.h"
#include <internal/xyarray.h>
#include "../perf-sys.h"

static void bperf_slot_zero(__u32 slot)
{
	struct bperf_slot empty = {};

	bpf_map_update_elem(bperf.map_fd[BPERF_MAP_SLOTS], &slot, &empty,
			    BPF_ANY);
}

/* The key of the event of @slot on CPU id @cpu (bperf_events, bperf_opened) */
static __u32 bperf_event_key(__u32 slot, int cpu)
{
	return bperf_cpus_key(&bperf.cpus, slot, cpu);
}

/* Note that the events of @slot on @cpu were opened at @stamp (0: none). */
static void bperf_opened_set(__u32 slot, int cpu, __u32 stamp)
{
	__u32 key = bperf_event_key(slot, cpu);

	bpf_map_update_elem(bperf.map_fd[BPERF_MAP_OPENED], &key, &stamp,
			    BPF_ANY);
}

/*
 * The hotplug counts (bperf_hotplug) of every CPU id, and their total
 * at [nr_ids]; then the CPUs online, into bperf.online.  In that order:
 * a CPU's perf context counts its pass up once the CPU is online, so a
 * count that saw the pass comes with a map that has the CPU.  Returns
 * NULL on error.
 */
static __u32 *bperf_hotplug_read(void)
{
	__u32 i, *counts = calloc(bperf.cpus.nr_ids + 1, sizeof(*counts));
	struct perf_cpu_map *online;

	for (i = 0; counts && i <= (__u32)bperf.cpus.nr_ids; i++) {
		if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_HOTPLUG], &i,
					&counts[i]))
			zfree(&counts);
	}
	online = counts ? perf_cpu_map__new_online_cpus() : NULL;
	if (!online) {
		zfree(&counts);
		return NULL;
	}
	perf_cpu_map__put(bperf.online);
	bperf.online = online;
	return counts;
}

/*
 * Are the events of the group led by @leader to be opened on every CPU
 * online, rather than on its PMU's own CPUs (uncore, a hybrid system's
 * CPU types)?  A core PMU that has no CPU list of its own lists the CPUs
 * online when perf started.
 */
static bool bperf_all_cpus(struct evsel *leader)
{
	struct perf_pmu *pmu;

	if (perf_cpu_map__has_any_cpu_or_is_empty(leader->core.own_cpus))
		return true;
	pmu = evsel__find_pmu(leader);
	return pmu && pmu->is_core && perf_pmus__num_core_pmus() == 1;
}

/* Note in @slot's record the attr its events were opened with. */
static void bperf_slot_opened(__u32 slot, const struct perf_event_attr *attr)
{
	int slots_fd = bperf.map_fd[BPERF_MAP_SLOTS];
	struct bperf_slot rec;

	if (bpf_map_lookup_elem(slots_fd, &slot, &rec))
		return;
	rec.opened = *attr;
	bpf_map_update_elem(slots_fd, &slot, &rec, BPF_EXIST);
}

/* Stop reading a slot, close its events, forget it.  Locked. */
void bperf_slot_free(__u32 slot)
{
	struct bperf_slot rec;
	__u32 i, j, key;

	for (i = j = 0; i < bperf.ctl.nr_active; i++) {
		if (bperf.ctl.active[i] != slot)
			bperf.ctl.active[j++] = bperf.ctl.active[i];
	}
	bperf.ctl.nr_active = j;
	bperf.ctl.task_slots &= ~(1ULL << slot);
	bperf_ctl_write();

	for (i = 0; i < (__u32)bperf.cpus.nr_ids; i++) {
		key = bperf_event_key(slot, i);
		bpf_map_delete_elem(bperf.map_fd[BPERF_MAP_EVENTS], &key);
		bperf_opened_set(slot, i, 0);
	}
	bperf_purge_tasks(slot);
	if (!bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS], &slot, &rec) &&
	    rec.key.attr.size)
		bpf_map_delete_elem(bperf.attr_fd, &rec.key);
	bperf_slot_zero(slot);
}

/*
 * No session counts tasks with @slot any more: stop tracking them, and
 * forget the tasks still tracked, which would never be dropped now that
 * the exit program skips the slot.  Locked.
 */
static void bperf_slot_untrack(__u32 slot)
{
	if (!(bperf.ctl.task_slots & (1ULL << slot)))
		return;
	bperf.ctl.task_slots &= ~(1ULL << slot);
	bperf_ctl_write();
	bperf_purge_tasks(slot);
}

/*
 * Drop the use of a slot by a session with @flags (BPERF_SESSION_*);
 * free the slot when nobody uses it.  Locked.
 */
void bperf_slot_put(__u32 slot, __u32 flags)
{
	struct bperf_slot rec;

	if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS], &slot, &rec))
		return;
	if (rec.users)
		rec.users--;
	if ((flags & BPERF_SESSION_TASKS) && rec.task_users)
		rec.task_users--;
	if (!rec.users) {
		bperf_slot_free(slot);
		return;
	}
	bpf_map_update_elem(bperf.map_fd[BPERF_MAP_SLOTS], &slot, &rec,
			    BPF_ANY);
	if (!rec.task_users)
		bperf_slot_untrack(slot);
}

/*
 * Make the slots agree with the session registry: @users[s] and
 * @task_users[s] are how many registered sessions, and task sessions,
 * note slot s.  A session that died still counts in them until it is
 * reaped; one killed between changing a slot and noting the change in
 * its record (setting the slot up, taking or dropping its reference)
 * left a slot set up for nobody, or a count too high.  The records win:
 * a slot that no session notes is freed, its events closed.  Locked.
 */
void bperf_slots_sweep(const __u32 *users, const __u32 *task_users)
{
	int slots_fd = bperf.map_fd[BPERF_MAP_SLOTS];
	struct bperf_slot rec;
	__u32 s;

	for (s = 0; s < BPERF_MAX_SLOTS; s++) {
		if (bpf_map_lookup_elem(slots_fd, &s, &rec) ||
		    (!rec.key.attr.size && !rec.users))
			continue;
		if (!users[s]) {
			pr_debug("bperf: slot %u: no session uses it, freeing it\n",
				 s);
			bperf_slot_free(s);
			continue;
		}
		if (rec.users != users[s] || rec.task_users != task_users[s]) {
			pr_debug("bperf: slot %u: %u users, %u counting tasks, not %u and %u\n",
				 s, users[s], task_users[s], rec.users,
				 rec.task_users);
			rec.users = users[s];
			rec.task_users = task_users[s];
			bpf_map_update_elem(slots_fd, &s, &rec, BPF_EXIST);
		}
		if (!task_users[s])
			bperf_slot_untrack(s);
	}
}

/* FNV-1a, to tell the groups an event may belong to apart */
static __u64 bperf_hash(__u64 h, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The attr as a key: without what perf stat sets per target. */
static void bperf_attr_norm(struct perf_event_attr *attr)
{
	attr->disabled = 0;
	attr->inherit = 0;
	attr->enable_on_exec = 0;
	attr->inherit_stat = 0;
	attr->read_format = 0;
}

static void bperf_make_keys(struct evsel *leader, struct bperf_attr_key *keys,
			    int n)
{
	struct evsel *pos;
	__u64 sig = 0xcbf29ce484222325ULL;
	int i = 0;

	memset(keys, 0, n * sizeof(*keys));
	for_each_group_evsel(pos, leader) {
		if (i == n)
			break;
		keys[i].attr = pos->core.attr;
		bperf_attr_norm(&keys[i].attr);
		sig = bperf_hash(sig, &keys[i].attr, sizeof(keys[i].attr));
		i++;
	}
	for (i = 0; i < n; i++) {
		keys[i].group_sig = n > 1 ? sig : 0;
		keys[i].group_pos = i;
		keys[i].group_len = n;
	}
}

/* Errors perf stat shows as "<not supported>" rather than fail on */
static bool bperf_unsupported(int err)
{
	return err == -ENOENT || err == -EOPNOTSUPP || err == -ENXIO ||
	       err == -EINVAL || err == -ENODEV;
}

/*
 * Open the events of a group (or a lone event) on the online CPUs of its
 * PMU, as a real perf group, and put them in the events array at their
 * slots.
 * Our fds are closed after: the array keeps the events.  Locked.
 * Returns -EOPNOTSUPP, and says nothing, if the kernel cannot count the
 * group.
 */
static int bperf_open_events(struct evsel *leader, __u32 *slots, int n,
			     struct target *target)
{
	int events_fd = bperf.map_fd[BPERF_MAP_EVENTS];
	struct perf_event_attr saved[n];
	struct evsel *pos, *failed = leader;
	struct perf_cpu_map *cpus;
	struct perf_cpu cpu;
	int i, idx, err = 0, fd;
	__u32 key, *hotplug;

	/* before the open: a hotplug after it must show (bperf_opened) */
	hotplug = bperf_hotplug_read();
	if (!hotplug)
		return bperf_report(-errno ?: -ENOMEM,
				    "cannot read the hotplug counts", NULL);
	/* an uncore PMU, a hybrid system's CPU type: on its CPUs only */
	if (bperf_all_cpus(leader))
		cpus = perf_cpu_map__get(bperf.online);
	else
		cpus = perf_cpu_map__intersect(bperf.online,
					       leader->core.own_cpus);
	if (perf_cpu_map__is_empty(cpus)) {
		perf_cpu_map__put(cpus);
		free(hotplug);
		pr_err("bperf: %s: none of its CPUs is online\n",
		       evsel__name(leader));
		return -ENODEV;
	}

	i = 0;
	for_each_group_evsel(pos, leader) {
		saved[i] = pos->core.attr;
		bperf_attr_norm(&pos->core.attr);
		i++;
	}
	/*
	 * A sibling added to a group that is already counting would not be
	 * scheduled until the group is, which for a CPU event may be never:
	 * open the leader disabled and enable it when the group is whole.
	 */
	leader->core.attr.disabled = 1;
	i = 0;
	for_each_group_evsel(pos, leader) {
		failed = pos;
		err = evsel__open_per_cpu(pos, cpus, -1);
		if (err)
			break;
		perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
			fd = *(int *)xyarray__entry(pos->core.fd, idx, 0);
			key = bperf_event_key(slots[i], cpu.cpu);
			if (bpf_map_update_elem(events_fd, &key, &fd, BPF_ANY)) {
				err = -errno;
				break;
			}
			/* not read yet: the slot is not active */
			bperf_opened_set(slots[i], cpu.cpu,
					 hotplug[cpu.cpu] + 1);
		}
		if (err)
			break;
		i++;
	}
	if (!err) {
		failed = leader;
		perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
			fd = *(int *)xyarray__entry(leader->core.fd, idx, 0);
			if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
				err = -errno;
				break;
			}
		}
	}
	if (!err) {
		/* for bperf_reopen(): what the kernel took, fallbacks and all */
		i = 0;
		for_each_group_evsel(pos, leader)
			bperf_slot_opened(slots[i++], &pos->core.attr);
	}
	if (err) {
		char msg[BUFSIZ];

		if (bperf_unsupported(err)) {
			pr_debug("bperf: %s is not supported\n",
				 evsel__name(failed));
			err = -EOPNOTSUPP;
		} else {
			errno = -err;
			evsel__open_strerror(failed, target, -err, msg,
					     sizeof(msg));
			pr_err("bperf: cannot open %s: %s\n",
			       evsel__name(failed), msg);
		}
		for (i = 0; i < n; i++) {
			perf_cpu_map__for_each_cpu(cpu, idx, bperf.online) {
				key = bperf_event_key(slots[i], cpu.cpu);
				bpf_map_delete_elem(events_fd, &key);
				bperf_opened_set(slots[i], cpu.cpu, 0);
			}
		}
	}
	i = 0;
	for_each_group_evsel(pos, leader) {
		evsel__close(pos);
		pos->core.attr = saved[i++];
	}
	perf_cpu_map__put(cpus);
	free(hotplug);
	return err;
}

/*
 * Drop a reference of one of our evsels to @slot; with the last, forget
 * our use of it, then give its reference back.  Locked.
 */
void bperf_slot_unref(__u32 slot)
{
	if (bperf.slot_refs[slot] <= 0) {
		pr_debug("bperf: slot %u: no reference of ours to drop\n", slot);
		return;
	}
	if (--bperf.slot_refs[slot] > 0)
		return;
	/* forget the use first: a crash now only leaks */
	bperf.self.slots &= ~(1ULL << slot);
	bpf_map_update_elem(bperf.map_fd[BPERF_MAP_SESSIONS], &bperf.sid,
			    &bperf.self, BPF_EXIST);
	bperf_step("unref");
	bperf_slot_put(slot, bperf.self.flags);
}

/*
 * Find the slots of the group led by 'leader', setting them up if no
 * session counts it yet, and take our reference on them.  Locked.
 * Returns -EOPNOTSUPP, with no reference taken, if the kernel cannot
 * count the group.
 */
int bperf_slots_get(struct evsel *leader, __u32 *slots, int n,
		    struct target *target)
{
	struct bperf_attr_key keys[n];
	struct bperf_slot rec;
	struct bperf_val *zeroes;
	int i, found = 0, taken = 0, err;
	bool sw = true, all_cpus;
	__u32 s;

	bperf_make_keys(leader, keys, n);
	for (i = 0; i < n; i++) {
		if (!bpf_map_lookup_elem(bperf.attr_fd, &keys[i], &slots[i]) &&
		    slots[i] < BPERF_MAX_SLOTS)
			found++;
	}
	if (found && found != n) {
		pr_err("bperf: %s: the attr map holds part of this group only\n",
		       bperf.attr_path);
		return -EINVAL;
	}

	if (!found) {
		/* new events: pick free slots */
		i = 0;
		for (s = 0; s < BPERF_MAX_SLOTS && i < n; s++) {
			if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS],
						&s, &rec) ||
			    rec.users || rec.key.attr.size)
				continue;
			slots[i++] = s;
		}
		if (i < n) {
			pr_err("bperf: no room for %s: all %d event slots are in use\n",
			       evsel__name(leader), BPERF_MAX_SLOTS);
			return -ENOSPC;
		}
		/* reserve them; a new generation makes BPF start afresh */
		for (i = 0; i < n; i++)
			sw &= keys[i].attr.type == PERF_TYPE_SOFTWARE;
		all_cpus = bperf_all_cpus(leader);
		for (i = 0; i < n; i++) {
			memset(&rec, 0, sizeof(rec));
			rec.key = keys[i];
			if (all_cpus)
				rec.flags = BPERF_SLOT_ALL_CPUS;
			if (bpf_map_update_elem(bperf.map_fd[BPERF_MAP_SLOTS],
						&slots[i], &rec, BPF_ANY)) {
				err = bperf_report(-errno,
						   "cannot reserve a slot",
						   NULL);
				goto undo;
			}
			bperf.ctl.gen[slots[i]]++;
			if (sw)
				bperf.ctl.sw_slots |= 1ULL << slots[i];
			else
				bperf.ctl.sw_slots &= ~(1ULL << slots[i]);
		}
		err = bperf_ctl_write();
		if (err)
			goto undo;
		bperf_step("reserve");

		err = bperf_open_events(leader, slots, n, target);
		if (err) {
			for (i = 0; i < n; i++)
				bperf_slot_zero(slots[i]);
			return err;
		}

		/* a per-CPU value: one element for each possible CPU */
		zeroes = calloc(bperf.cpus.nr_possible, sizeof(*zeroes));
		if (!zeroes) {
			err = -ENOMEM;
			goto undo;
		}
		for (i = 0; i < n; i++) {
			bpf_map_update_elem(bperf.map_fd[BPERF_MAP_TOTALS],
					    &slots[i], zeroes, BPF_ANY);
			if (bpf_map_update_elem(bperf.attr_fd, &keys[i],
						&slots[i], BPF_ANY)) {
				err = bperf_report(-errno, "cannot update",
						   bperf.attr_path);
				free(zeroes);
				goto undo;
			}
			bperf.ctl.active[bperf.ctl.nr_active++] = slots[i];
		}
		free(zeroes);
		err = bperf_ctl_write();
		if (err)
			goto undo;
		bperf_step("open");
	}

	/* take our references before we note them: a crash only leaks */
	for (taken = 0; taken < n; taken++) {
		s = slots[taken];
		/* one reference a session: an event named twice has it */
		if (bperf.slot_refs[s]++)
			continue;
		if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS], &s,
					&rec)) {
			err = bperf_report(-errno, "cannot read a slot", NULL);
			bperf.slot_refs[s]--;
			goto undo;
		}
		rec.users++;
		if (bperf.tasks) {
			rec.task_users++;
			bperf.ctl.task_slots |= 1ULL << s;
		}
		if (bpf_map_update_elem(bperf.map_fd[BPERF_MAP_SLOTS], &s, &rec,
					BPF_ANY)) {
			err = bperf_report(-errno, "cannot update a slot", NULL);
			bperf.slot_refs[s]--;
			goto undo;
		}
		bperf.self.slots |= 1ULL << s;
		bperf_step("ref");
	}
	if (bperf.tasks) {
		err = bperf_ctl_write();
		if (err)
			goto undo;
	}
	if (bpf_map_update_elem(bperf.map_fd[BPERF_MAP_SESSIONS], &bperf.sid,
				&bperf.self, BPF_EXIST)) {
		err = bperf_report(-errno, "cannot update the session", NULL);
		goto undo;
	}
	return 0;

undo:
	/* give back what we took, free the slots we set up */
	for (i = 0; i < n; i++) {
		if (i < taken)
			bperf_slot_unref(slots[i]);
		else if (!found)
			bperf_slot_free(slots[i]);
	}
	return err;
}

/*
 * Take the events of @slots[0..@n - 1] on @cpu out of the array, their
 * notes BPERF_OPENED_PENDING: the programs read nothing there, and the
 * next look opens them again.  Locked.
 */
static void bperf_events_pend(const __u32 *slots, int n, int cpu)
{
	__u32 key;
	int i;

	for (i = 0; i < n; i++) {
		key = bperf_event_key(slots[i], cpu);
		bpf_map_delete_elem(bperf.map_fd[BPERF_MAP_EVENTS], &key);
		bperf_opened_set(slots[i], cpu, BPERF_OPENED_PENDING);
	}
}

/*
 * Open the events of the group at @slots[0..@n - 1] on @cpu anew, in place
 * of the ones a hotplug killed or of none, and note @stamp for them.  The
 * readings of the old events end when they leave the array, those of the
 * new ones start from a base: the note changes their generation in
 * between (bperf_gen() in bperf.bpf.c): BPERF_OPENED_PENDING while the
 * new events go in and are enabled, when the programs read nothing, and
 * which a session killed then leaves for the next look to open again.
 * Locked.
 */
static int bperf_reopen(const __u32 *slots, int n, int cpu, __u32 stamp)
{
	int events_fd = bperf.map_fd[BPERF_MAP_EVENTS];
	struct perf_event_attr attr;
	struct bperf_slot rec;
	int fds[n], i, err = 0;
	__u32 key;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	for (i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS],
					&slots[i], &rec)) {
			err = -errno;
			goto out;
		}
		attr = rec.opened.size ? rec.opened : rec.key.attr;
		/* as bperf_open_events(): enabled once the group is whole */
		attr.disabled = !i;
		fds[i] = sys_perf_event_open(&attr, -1, cpu, i ? fds[0] : -1,
					     PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0) {
			err = -errno;
			goto out;
		}
	}
	bperf_events_pend(slots, n, cpu);
	bperf_step("reopen");
	for (i = 0; i < n && !err; i++) {
		key = bperf_event_key(slots[i], cpu);
		if (bpf_map_update_elem(events_fd, &key, &fds[i], BPF_ANY))
			err = -errno;
	}
	if (!err && ioctl(fds[0], PERF_EVENT_IOC_ENABLE, 0))
		err = -errno;
	for (i = 0; i < n && !err; i++)
		bperf_opened_set(slots[i], cpu, stamp);
	/* none of the group, to be opened again on the next look */
	if (err)
		bperf_events_pend(slots, n, cpu);
out:
	for (i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return err;
}

/*
 * Is a failure of bperf_reopen() worth another try at the next look?
 * Yes if it may pass: a CPU on its way up whose perf context is not
 * online yet (-ENODEV; once the CPU is offline, no look tries it), a
 * PMU busy or short of memory.  Not if this PMU does not count there.
 */
static bool bperf_reopen_again(int err)
{
	return err == -ENODEV || err == -EBUSY || err == -EAGAIN ||
	       err == -EINTR || err == -ENOMEM;
}

/*
 * How many slots of ctl.active, from @i on, make the group that @rec,
 * the record of the slot at @i, leads: 1 for an event of its own, 0 if
 * the group is not whole there (its members leave the list one by one).
 */
static __u32 bperf_group_at(__u32 i, const struct bperf_slot *rec)
{
	__u32 j, n = rec->key.group_len ?: 1;
	struct bperf_slot m;

	if (n == 1)
		return 1;
	if (rec->key.group_pos || n > bperf.ctl.nr_active - i)
		return 0;
	for (j = 1; j < n; j++) {
		if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS],
					&bperf.ctl.active[i + j], &m) ||
		    m.key.group_sig != rec->key.group_sig ||
		    m.key.group_len != n || m.key.group_pos != j)
			return 0;
	}
	return n;
}

/*
 * CPU hotplug.  Taking a CPU offline takes the perf events out of its
 * context for good, and a CPU onlined after a slot was set up has no
 * event of the slot: every session sharing the slot would read a frozen
 * count there, or none.  bperf_cpuhp counts how many times each CPU's
 * perf context went down or came up, and bperf_opened says, per slot
 * and CPU, what that count was when perf opened the event there (plus
 * one; 0: no event).  An event whose note is not its CPU's count is dead
 * or missing: open it again on each online CPU, but on CPUs that never
 * had one only for slots counting on every CPU (not an uncore or hybrid
 * PMU's own CPUs).  What a CPU counts from its new event's first reading
 * on is counted; what it did before is not.  The control map notes the
 * total count this was done for, so that it is done once per hotplug,
 * unless an open failed for a reason that may pass.  Locked.
 */
void bperf_slots_revive(void)
{
	int opened_fd = bperf.map_fd[BPERF_MAP_OPENED];
	__u32 i, j, n, key, stamp, *hotplug, total;
	struct bperf_slot rec;
	struct perf_cpu cpu;
	bool again = false;
	int idx, err;

	hotplug = bperf_hotplug_read();
	if (!hotplug)
		return;
	total = hotplug[bperf.cpus.nr_ids];
	if (total == bperf.ctl.hotplug)
		goto out;
	/* a group's slots are adjacent in the active list, leader first */
	for (i = 0; i < bperf.ctl.nr_active; i += n ?: 1) {
		__u32 *slots = &bperf.ctl.active[i];

		n = 0;
		if (!bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_SLOTS], slots,
					 &rec))
			n = bperf_group_at(i, &rec);
		if (!n)
			continue;
		perf_cpu_map__for_each_cpu(cpu, idx, bperf.online) {
			bool stale = false, none = true;

			if (cpu.cpu < 0 || cpu.cpu >= bperf.cpus.nr_ids)
				continue;
			stamp = hotplug[cpu.cpu] + 1;
			for (j = 0; j < n; j++) {
				__u32 seen = 0;

				key = bperf_event_key(slots[j], cpu.cpu);
				bpf_map_lookup_elem(opened_fd, &key, &seen);
				stale |= seen != stamp;
				none &= !seen;
			}
			if (!stale || (none && !(rec.flags & BPERF_SLOT_ALL_CPUS)))
				continue;
			err = bperf_reopen(slots, n, cpu.cpu, stamp);
			pr_debug("bperf: slot %u: events on CPU %d opened again: %s\n",
				 slots[0], cpu.cpu, err ? strerror(-err) : "done");
			again |= bperf_reopen_again(err);
		}
	}
	if (!again) {
		bperf.ctl.hotplug = total;
		bperf_ctl_write();
	}
out:
	if (!again)
		bperf.hotplug_seen = total;
	free(hotplug);
}

/*
 * Before a read: if a CPU's perf context went down or came up since we
 * last looked, open again what that killed, so that this read, and every
 * session's from now on, count the CPU again.  Reads never wait for
 * another session's lock: the next read looks again.  Not locked.
 */
void bperf_slots_hotplug(void)
{
	__u32 key = bperf.cpus.nr_ids, total;

	if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_HOTPLUG], &key,
				&total) || total == bperf.hotplug_seen)
		return;
	if (bperf_trylock())
		return;
	bperf_slots_revive();
	bperf_unlock();
}
