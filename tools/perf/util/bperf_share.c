// SPDX-License-Identifier: GPL-2.0
/*
 * bperf's sessions: the programs, the links of the task hooks and of
 * the hotplug hook, opening the pinned maps as the skeleton describes
 * them, joining and leaving, the session registry, the reclaim of what
 * a session that died left behind, and the teardown.  bperf_maps.c has
 * the primitives of the pinned maps.  Design: util/bperf.c.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/kernel.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_counter.h"
#include "bperf.h"
#include "config.h"
#include "debug.h"
#include "cpumap.h"

#include "bpf_skel/bperf.skel.h"

#define BPERF_PERSIST_CONFIG	"stat.bpf-attr-map-persistent"
/* sessions whose liveness a joining session checks */
#define BPERF_GC_BUDGET		32

static int bperf_config_cb(const char *var, const char *value,
			   void *data __maybe_unused)
{
	if (!strcmp(var, BPERF_PERSIST_CONFIG))
		bperf.persist = perf_config_bool(var, value);
	return 0;
}

/*
 * Is the perf process of a session still there?  The BPF program looks
 * for the process of its pid in the initial pid namespace with its pid
 * inode number, which no later process gets, and not exiting (a zombie
 * is dead), so this works from any pid namespace.  A session we cannot
 * check is alive.
 */
static bool bperf_session_alive(const struct bperf_session *s)
{
	struct bperf_root_op op = {
		.op = BPERF_ROOT_ALIVE, .tid = s->pid, .ino = s->ino,
	};

	return bperf_root_run(&op) != 0;
}

/*
 * Forget a session that died.  What it held, its roots and its use of
 * slots, the sweeps that follow in bperf_gc() give back, as they do
 * whatever a session killed half way left; a reclaim cut short by a
 * kill leaves it all for the next one.  Locked.
 */
static void bperf_reap(__u32 sid, const struct bperf_session *s)
{
	pr_debug("bperf: reclaiming session %u of pid %u\n", sid, s->pid);
	bpf_map_delete_elem(bperf.map_fd[BPERF_MAP_SESSIONS], &sid);
	if (bperf.ctl.nr_sessions)
		bperf.ctl.nr_sessions--;
}

struct bperf_sess_ent {
	__u32 sid;
	struct bperf_session s;
};

static int bperf_sess_cmp(const void *a, const void *b)
{
	const struct bperf_sess_ent *x = a, *y = b;

	return x->sid < y->sid ? -1 : x->sid > y->sid;
}

/*
 * Give back what no registered session holds: the roots of sessions
 * not registered, and the slots no session record notes; set the use
 * counts of the others to what the records say.  @n entries of @ent,
 * sorted by sid: the registered sessions have one.  Locked.
 */
static void bperf_sweep(const struct bperf_sess_ent *ent, int n)
{
	__u32 users[BPERF_MAX_SLOTS] = {}, task_users[BPERF_MAX_SLOTS] = {};
	__u32 slot, *sids;
	int i, nr = 0;

	sids = calloc(n ?: 1, sizeof(*sids));
	if (!sids)
		return;
	for (i = 0; i < n; i++) {
		if (!ent[i].sid)
			continue;
		sids[nr++] = ent[i].sid;
		for (slot = 0; slot < BPERF_MAX_SLOTS; slot++) {
			if (!(ent[i].s.slots & (1ULL << slot)))
				continue;
			users[slot]++;
			if (ent[i].s.flags & BPERF_SESSION_TASKS)
				task_users[slot]++;
		}
	}
	bperf_roots_sweep(sids, nr);
	bperf_slots_sweep(users, task_users);
	free(sids);
}

enum bperf_gc_flags {
	BPERF_GC_STOP_AT_LIVE	= 1 << 0,	/* stop at the first live one */
	BPERF_GC_ALL_DEAD	= 1 << 1,	/* the programs were gone */
};

/*
 * Look at up to 'budget' other sessions (all if budget <= 0), in session
 * id order from where the last look stopped, and reap the dead ones.
 * With BPERF_GC_ALL_DEAD they are all dead, whatever pid namespace they
 * ran in.  Then give back what no session left registered, looked at
 * or not, holds.  Returns the number of live sessions seen, or -errno
 * if the sessions could not be read.  Locked.
 */
static int bperf_gc(int budget, unsigned int flags)
{
	struct bperf_session *recs;
	struct bperf_sess_ent *ent;
	__u32 *sids;
	int n, i, k, start, live = -ENOMEM;

	sids = calloc(BPERF_MAX_SESSIONS, sizeof(*sids));
	recs = calloc(BPERF_MAX_SESSIONS, sizeof(*recs));
	ent = calloc(BPERF_MAX_SESSIONS, sizeof(*ent));
	if (!sids || !recs || !ent)
		goto out;
	n = bperf_dump(bperf.map_fd[BPERF_MAP_SESSIONS], sids, sizeof(*sids),
		       recs, sizeof(*recs), BPERF_MAX_SESSIONS);
	if (n < 0) {
		live = n;
		goto out;
	}
	live = 0;
	for (i = 0; i < n; i++) {
		ent[i].sid = sids[i];
		ent[i].s = recs[i];
	}
	qsort(ent, n, sizeof(*ent), bperf_sess_cmp);
	for (start = 0; start < n; start++) {
		if (ent[start].sid > bperf.ctl.gc_cursor)
			break;
	}
	if (budget <= 0 || budget > n)
		budget = n;
	for (k = 0; k < budget; k++) {
		i = (start + k) % n;
		bperf.ctl.gc_cursor = ent[i].sid;
		if (ent[i].sid == bperf.sid)
			continue;
		if (!(flags & BPERF_GC_ALL_DEAD) &&
		    bperf_session_alive(&ent[i].s)) {
			live++;
			if (flags & BPERF_GC_STOP_AT_LIVE)
				break;
			continue;
		}
		bperf_reap(ent[i].sid, &ent[i].s);
		ent[i].sid = 0;
	}
	if (bperf.map_fd[BPERF_MAP_CTL] >= 0) {
		bperf_sweep(ent, n);
		bperf_ctl_write();
	}
out:
	free(sids);
	free(recs);
	free(ent);
	return live;
}

static void bperf_close_progs(void)
{
	int i;

	for (i = 0; i < BPERF_NR_LINKS; i++)
		bperf_close_fd(&bperf.link_fd[i]);
	for (i = 0; i < BPERF_NR_PROGS; i++)
		bperf_close_fd(&bperf.prog_fd[i]);
}

/*
 * libbpf reuses the maps pinned in the directory (a session that died
 * setting up may have left some) and says no more than "parameter
 * mismatch" of one of another layout: check those first, naming what
 * differs, and leave them alone.
 */
static int bperf_check_pinned(struct bperf_bpf *skel)
{
	struct btf *btf = bpf_object__btf(skel->obj);
	struct bpf_map *map;
	const char *path;
	int fd, err;

	bpf_object__for_each_map(map, skel->obj) {
		path = bpf_map__pin_path(map);
		if (!path || access(path, F_OK))
			continue;
		err = bperf_open_pinned(map, btf, &fd);
		bperf_close_fd(&fd);
		if (err)
			return err;
	}
	return 0;
}

/* The maps sized by the number of CPU ids. */
static void bperf_size_maps(struct bperf_bpf *skel)
{
	__u32 nr_ids = bperf.cpus.nr_ids;

	bpf_map__set_max_entries(skel->maps.bperf_events,
				 BPERF_MAX_SLOTS * nr_ids);
	bpf_map__set_max_entries(skel->maps.bperf_opened,
				 BPERF_MAX_SLOTS * nr_ids);
	bpf_map__set_max_entries(skel->maps.bperf_hotplug, nr_ids + 1);
}

/*
 * Load the programs on the maps pinned in the directory (or pin new
 * ones) and record their ids in the control map.  Nothing is attached
 * yet: see bperf_links_get().  Locked.
 */
static int bperf_load_programs(void)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = bperf.dir);
	struct bpf_program *progs[BPERF_NR_PROGS];
	struct bperf_bpf *skel;
	struct bpf_map *map;
	__u32 len, zero = 0;
	int err, i, ctl_fd;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("bperf: the kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF\n");
		return -EOPNOTSUPP;
	}
	if (mkdir(bperf.dir, 0700) && errno != EEXIST)
		return bperf_report(-errno, "cannot create", bperf.dir);
	set_max_rlimit();

	skel = bperf_bpf__open_opts(&opts);
	if (!skel)
		return bperf_report(-errno, "cannot open the BPF skeleton",
				    NULL);
	skel->rodata->bperf_nr_ids = bperf.cpus.nr_ids;
	bperf_size_maps(skel);
	err = bperf_check_pinned(skel);
	if (err)
		goto out;
	err = bperf_bpf__load(skel);
	if (err) {
		if (err == -EPERM)
			bperf_report(err, "cannot load the BPF programs", NULL);
		else
			pr_err("bperf: cannot load the BPF programs: %s (-v shows the verifier log)\n",
			       strerror(-err));
		goto out;
	}

	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_pinned(map))
			bperf_note_map(bpf_map__fd(map));
	}

	/* a fresh control map is all zeroes: set it up */
	ctl_fd = bpf_map__fd(skel->maps.bperf_ctl);
	if (bpf_map_lookup_elem(ctl_fd, &zero, &bperf.ctl)) {
		err = bperf_report(-errno, "cannot read the control map",
				   NULL);
		goto out;
	}
	if (!bperf.ctl.magic) {
		bperf.ctl.magic = BPERF_MAGIC;
		bperf.ctl.nr_ids = bperf.cpus.nr_ids;
	}

	progs[BPERF_PROG_SWITCH] = skel->progs.bperf_switch;
	progs[BPERF_PROG_FORK] = skel->progs.bperf_fork;
	progs[BPERF_PROG_EXIT] = skel->progs.bperf_exit;
	progs[BPERF_PROG_READ] = skel->progs.bperf_read;
	progs[BPERF_PROG_ROOT] = skel->progs.bperf_root;
	progs[BPERF_PROG_CPUHP] = skel->progs.bperf_cpuhp;
	bperf_close_progs();
	for (i = 0; i < BPERF_NR_PROGS; i++) {
		struct bpf_prog_info info = {};

		/* not for a workload to inherit: it would keep them */
		bperf.prog_fd[i] = fcntl(bpf_program__fd(progs[i]),
					 F_DUPFD_CLOEXEC, 0);
		len = sizeof(info);
		if (bperf.prog_fd[i] < 0 ||
		    bpf_prog_get_info_by_fd(bperf.prog_fd[i], &info, &len)) {
			err = bperf_report(-errno,
					   "cannot get the id of a BPF program",
					   NULL);
			goto out;
		}
		bperf.ctl.prog_id[i] = info.id;
	}
	/* links of earlier programs, if any, went with them */
	memset(bperf.ctl.link_id, 0, sizeof(bperf.ctl.link_id));
	if (bpf_map_update_elem(ctl_fd, &zero, &bperf.ctl, BPF_ANY))
		err = bperf_report(-errno, "cannot set up the control map",
				   NULL);
out:
	bperf_bpf__destroy(skel);
	return err;
}

/* What perf expects of each pinned map, by enum bperf_map. */
static const struct bperf_map_def {
	const char *name;
	__u32 key_size;
	__u32 value_size;
} bperf_map_defs[BPERF_NR_MAPS] = {
	[BPERF_MAP_CTL] = { "bperf_ctl", sizeof(__u32),
			    sizeof(struct bperf_ctl) },
	[BPERF_MAP_SLOTS] = { "bperf_slots", sizeof(__u32),
			      sizeof(struct bperf_slot) },
	[BPERF_MAP_SESSIONS] = { "bperf_sessions", sizeof(__u32),
				 sizeof(struct bperf_session) },
	[BPERF_MAP_ROOTS] = { "bperf_roots", sizeof(struct bperf_root_key),
			      sizeof(__u64) },
	[BPERF_MAP_TASKS] = { "bperf_tasks", sizeof(__u64),
			      sizeof(struct bperf_task) },
	[BPERF_MAP_TOTALS] = { "bperf_totals", sizeof(__u32),
			       sizeof(struct bperf_val) },
	[BPERF_MAP_CPU] = { "bperf_cpu", sizeof(__u32),
			    sizeof(struct bperf_cpu) },
	[BPERF_MAP_HOTPLUG] = { "bperf_hotplug", sizeof(__u32), sizeof(__u32) },
	[BPERF_MAP_OPENED] = { "bperf_opened", sizeof(__u32), sizeof(__u32) },
	[BPERF_MAP_EVENTS] = { "bperf_events", sizeof(__u32), sizeof(int) },
};

static int bperf_open_maps(void)
{
	const struct bperf_map_def *def;
	struct bperf_bpf *skel;
	struct bpf_map *map;
	struct btf *btf;
	int err = 0, i;

	/* the skeleton, never loaded, says what the pinned maps must be */
	skel = bperf_bpf__open();
	if (!skel)
		return bperf_report(-errno, "cannot open the BPF skeleton",
				    NULL);
	btf = bpf_object__btf(skel->obj);
	bperf_size_maps(skel);
	for (i = 0; i < BPERF_NR_MAPS; i++) {
		def = &bperf_map_defs[i];
		map = bpf_object__find_map_by_name(skel->obj, def->name);
		/* perf and the BPF object must agree on the layouts */
		if (!map || bpf_map__key_size(map) != def->key_size ||
		    bpf_map__value_size(map) != def->value_size) {
			pr_err("bperf: perf and its BPF object disagree on %s\n",
			       def->name);
			err = -EINVAL;
			goto out;
		}
		err = bperf_open_pinned(map, btf, &bperf.map_fd[i]);
		if (err)
			goto out;
	}
	err = bperf_ctl_read();
	if (err)
		goto out;
	/*
	 * All zeroes: the session that pinned it died before it set it up.
	 * It names no programs, so bperf_join() loads them and sets it up.
	 */
	if (bperf.ctl.magic && (bperf.ctl.magic != BPERF_MAGIC ||
				bperf.ctl.nr_ids != (__u32)bperf.cpus.nr_ids)) {
		pr_err("bperf: %s/bperf_ctl has layout %#x for %u CPU ids, want %#x for %d:\n"
		       "remove %s and %s\n", bperf.dir, bperf.ctl.magic,
		       bperf.ctl.nr_ids, BPERF_MAGIC, bperf.cpus.nr_ids,
		       bperf.dir, bperf.attr_path);
		err = -EINVAL;
	}
out:
	bperf_bpf__destroy(skel);
	return err;
}

/* Close *fd, if open, and keep 'new' there instead. */
static void bperf_swap_fd(int *fd, int new)
{
	bperf_close_fd(fd);
	*fd = new;
}

/*
 * An fd for an object the control map names by id: -ENOENT if it is
 * gone.  Only CAP_SYS_ADMIN may turn ids into fds: without it, sharing
 * the programs other sessions loaded cannot work, so say so.
 */
static int bperf_fd_by_id(int (*get)(__u32 id), __u32 id, const char *what)
{
	int fd = id ? get(id) : -1;

	if (fd >= 0)
		return fd;
	if (id && errno == EPERM) {
		pr_err("bperf: cannot open the %s other sessions loaded (id %u): sharing BPF counters needs CAP_SYS_ADMIN\n",
		       what, id);
		return -EPERM;
	}
	pr_debug("bperf: %s %u is gone\n", what, id);
	return -ENOENT;
}

/*
 * Hold the programs the control map names: 0 if we do, -ENOENT if any
 * is gone, another negative errno if we may not.
 */
static int bperf_get_programs(void)
{
	int i, fd;

	for (i = 0; i < BPERF_NR_PROGS; i++) {
		fd = bperf_fd_by_id(bpf_prog_get_fd_by_id, bperf.ctl.prog_id[i],
				    "program");
		if (fd < 0)
			return fd;
		bperf_swap_fd(&bperf.prog_fd[i], fd);
	}
	return 0;
}

/*
 * Task mode: hold the links of the programs that follow tasks, attaching
 * them if no other task-mode session holds them.  CPU-wide sessions hold
 * no link, so that while only they run, nothing of bperf runs on context
 * switches.  Link ids are reused: a link is ours only if it still runs
 * our program.  Locked; the caller writes the control map.
 */
static int bperf_links_get(void)
{
	int i, fd, err;

	for (i = 0; i < BPERF_NR_LINKS; i++) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);

		fd = bperf.ctl.link_id[i] ?
		     bpf_link_get_fd_by_id(bperf.ctl.link_id[i]) : -ENOENT;
		if (fd < 0 && fd != -ENOENT)
			return bperf_report(fd, "cannot open the links other sessions attached",
					    NULL);
		if (fd >= 0 && (bpf_link_get_info_by_fd(fd, &info, &len) ||
				info.prog_id != bperf.ctl.prog_id[i])) {
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			/* tp_btf programs know their tracepoint */
			fd = bpf_raw_tracepoint_open(NULL, bperf.prog_fd[i]);
			if (fd < 0)
				return bperf_report(-errno, "cannot attach a BPF program",
						    NULL);
			memset(&info, 0, sizeof(info));
			len = sizeof(info);
			if (bpf_link_get_info_by_fd(fd, &info, &len)) {
				err = bperf_report(-errno,
						   "cannot get the info of a BPF link",
						   NULL);
				close(fd);
				return err;
			}
			bperf.ctl.link_id[i] = info.id;
		}
		bperf_swap_fd(&bperf.link_fd[i], fd);
	}
	return 0;
}

/*
 * Is @fd a link of a program that counts into our bperf_hotplug?  One
 * left by sessions on maps since replaced would count into the old map.
 */
static bool bperf_cpuhp_ours(int fd)
{
	struct bpf_link_info link = {};
	struct bpf_prog_info prog = {};
	__u32 len = sizeof(link), ids[16], id = 0, i;
	bool ours = false;
	int prog_fd;

	if (bpf_link_get_info_by_fd(fd, &link, &len) ||
	    bperf_map_get_id(bperf.map_fd[BPERF_MAP_HOTPLUG], &id))
		return false;
	prog_fd = bpf_prog_get_fd_by_id(link.prog_id);
	if (prog_fd < 0)
		return false;
	prog.nr_map_ids = ARRAY_SIZE(ids);
	prog.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(prog);
	if (!bpf_prog_get_info_by_fd(prog_fd, &prog, &len)) {
		for (i = 0; i < prog.nr_map_ids && i < ARRAY_SIZE(ids); i++)
			ours |= ids[i] == id;
	}
	close(prog_fd);
	return ours;
}

/* Where the link of bperf_cpuhp is pinned: next to the maps. */
static void bperf_cpuhp_path(char *path, size_t size)
{
	scnprintf(path, size, "%s/bperf_cpuhp", bperf.dir);
}

/*
 * Keep bperf_cpuhp attached while the maps are pinned: the events it
 * watches over stay in the array after the last session was killed, so
 * its link is pinned, by the first session or by one that finds it gone.
 * Without it (no such tracepoint), an event a hotplug killed stays dead,
 * as it does for perf stat without BPF counters.  Locked.
 */
static void bperf_cpuhp_get(void)
{
	char path[PATH_MAX];
	int fd;

	bperf_cpuhp_path(path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		bool ours = bperf_cpuhp_ours(fd);

		close(fd);
		if (ours)
			return;
	}
	fd = bpf_raw_tracepoint_open("cpuhp_enter",
				     bperf.prog_fd[BPERF_PROG_CPUHP]);
	if (fd < 0) {
		pr_debug("bperf: cannot follow CPU hotplug: %s\n",
			 strerror(errno));
		return;
	}
	/* ours in the place of what is there, not a link of ours */
	unlink(path);
	if (bpf_obj_pin(fd, path))
		pr_debug("bperf: cannot pin %s: %s\n", path, strerror(errno));
	close(fd);
}

/*
 * Who we are, for the others to tell whether we live: our pid in the
 * initial pid namespace and our pid inode number.  Task sessions name
 * their tasks by tid, which the programs look up in the initial pid
 * namespace: refuse them elsewhere.
 */
static int bperf_self(void)
{
	struct bperf_root_op op = { .op = BPERF_ROOT_SELF };
	int err;

	err = bperf_root_run(&op);
	if (err)
		return bperf_report(err, "cannot run a BPF program", NULL);
	if (bperf.tasks && op.level) {
		pr_err("bperf: BPF counters count tasks (-p, -t, a workload) only from the initial pid namespace, not from a container's; they count CPUs (-a, -C) from any\n");
		return -EXDEV;
	}
	bperf.self.pid = op.tid;
	bperf.self.ino = op.ino;
	return 0;
}

static void bperf_drop_fds(void)
{
	int i;

	bperf_close_progs();
	for (i = 0; i < BPERF_NR_MAPS; i++)
		bperf_close_fd(&bperf.map_fd[i]);
	bperf_close_fd(&bperf.attr_fd);
	bperf.nr_map_ids = 0;
}

static int bperf_register(void)
{
	int fd = bperf.map_fd[BPERF_MAP_SESSIONS];
	__u32 sid, n;
	int round, err;

	for (round = 0; round < 2; round++) {
		for (n = 0; n < BPERF_MAX_SESSIONS; n++) {
			sid = (bperf.ctl.next_sid + n) % BPERF_MAX_SESSIONS + 1;
			if (!bpf_map_update_elem(fd, &sid, &bperf.self,
						 BPF_NOEXIST))
				goto registered;
			if (errno == E2BIG)
				break;
			if (errno != EEXIST)
				return bperf_report(-errno,
						    "cannot register the session",
						    NULL);
		}
		/* every id is taken: reap the dead, then look again */
		if (!round)
			bperf_gc(0, 0);
	}
	pr_err("bperf: too many sessions: all %d are in use\n",
	       BPERF_MAX_SESSIONS);
	return -E2BIG;

registered:
	bperf.sid = sid;
	bperf.ctl.next_sid = sid;
	bperf.ctl.nr_sessions++;
	err = bperf_ctl_write();
	if (err)
		return err;
	/* a little housekeeping for the sessions that died */
	bperf_gc(BPERF_GC_BUDGET, 0);
	return 0;
}

/*
 * Is what is pinned at 'path' a map this session pinned or opened?  The
 * teardown leaves anything else where it found it, for its owner; the
 * lock keeps other sessions from pinning in between.
 */
static bool bperf_pinned_ours(const char *path)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	bool ours = false;
	int fd, i;

	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	if (!bpf_map_get_info_by_fd(fd, &info, &len)) {
		for (i = 0; i < bperf.nr_map_ids; i++)
			ours |= bperf.map_ids[i] == info.id;
	}
	close(fd);
	return ours;
}

/* Remove what we pinned, unless the user wants the maps kept. */
static void bperf_teardown(void)
{
	int slots_fd = bperf.map_fd[BPERF_MAP_SLOTS];
	char path[PATH_MAX];
	__u32 slot;
	int i;

	/* slots a crashed session may have left half set up */
	for (slot = 0; slots_fd >= 0 && bperf.map_fd[BPERF_MAP_CTL] >= 0 &&
	     slot < BPERF_MAX_SLOTS; slot++) {
		struct bperf_slot rec;

		if (!bpf_map_lookup_elem(slots_fd, &slot, &rec) &&
		    rec.key.attr.size)
			bperf_slot_free(slot);
	}
	/* nothing left to watch over */
	bperf_cpuhp_path(path, sizeof(path));
	unlink(path);
	if (bperf.persist)
		return;
	/* our maps only: the directory stays if anything else is in it */
	for (i = 0; i < BPERF_NR_MAPS; i++) {
		scnprintf(path, sizeof(path), "%s/%s", bperf.dir,
			  bperf_map_defs[i].name);
		if (bperf_pinned_ours(path))
			unlink(path);
	}
	rmdir(bperf.dir);
	unlink(bperf.attr_path);
}

/*
 * Join the sessions sharing the attr map, or set up the sharing if we
 * are the first.  Returns locked on success.
 */
int bperf_join(struct target *target)
{
	char ctl_path[PATH_MAX];
	bool fresh = false;
	struct stat st;
	int err;

	err = bperf_paths(target);
	if (err)
		return err;
	perf_config(bperf_config_cb, NULL);
	err = bperf_cpus_init(&bperf.cpus, NULL);
	if (err) {
		pr_err("bperf: cannot read the possible CPUs\n");
		return err < 0 ? err : -EINVAL;
	}
	bperf.online = perf_cpu_map__new_online_cpus();
	if (!bperf.online) {
		bperf_cpus_exit(&bperf.cpus);
		return -ENOMEM;
	}
	if (!stat("/proc/self/ns/pid", &st))
		bperf.self.pidns = st.st_ino;
	if (bperf.tasks)
		bperf.self.flags = BPERF_SESSION_TASKS;
	else
		bperf.self.flags = 0;

	err = bperf_lock_first();
	if (err)
		goto fail;

	scnprintf(ctl_path, sizeof(ctl_path), "%s/bperf_ctl", bperf.dir);
	if (access(ctl_path, F_OK)) {
		fresh = true;
		err = bperf_load_programs();
		if (err)
			goto fail;
	}
	err = bperf_open_maps();
	if (err)
		goto fail;
	err = bperf_get_programs();
	if (err == -ENOENT) {
		/*
		 * Every session holds the programs: if they are gone, so
		 * are all the sessions.  Load them again on the pinned maps,
		 * then reap every session still registered, wherever it ran.
		 */
		pr_debug("bperf: the programs are gone, loading them again\n");
		err = bperf_load_programs();
		if (!err)
			err = bperf_ctl_read();
		if (!err)
			err = bperf_get_programs();
		if (err) {
			pr_err("bperf: cannot set up the BPF programs\n");
			goto fail;
		}
		bperf_gc(0, BPERF_GC_ALL_DEAD);
	} else if (err) {
		goto fail;
	}
	bperf_cpuhp_get();
	err = bperf_self();
	if (err)
		goto fail;
	/* before any root: a fork in between would go untracked */
	if (bperf.tasks) {
		err = bperf_links_get();
		if (err)
			goto fail;
	}
	err = bperf_register();
	if (err)
		goto fail;
	bperf_step("register");
	/* events a hotplug killed, or CPUs onlined since the slots were set up */
	bperf_slots_revive();
	return 0;
fail:
	/* do not leave behind what we set up for nobody */
	if (bperf.locked && fresh)
		bperf_teardown();
	bperf_unlock();
	bperf_drop_fds();
	perf_cpu_map__put(bperf.online);
	bperf.online = NULL;
	bperf_cpus_exit(&bperf.cpus);
	return err;
}

/*
 * Our last bperf evsel is gone: deregister, maybe turn off the lights.
 * Without the lock, or if an evsel could not give back what it held
 * (bperf.lost), only let go of what this process holds: we stay
 * registered, and a later session reclaims the rest once we are gone.
 */
void bperf_leave(void)
{
	__u32 slot;

	for (slot = 0; slot < BPERF_MAX_SLOTS; slot++) {
		if (bperf.slot_refs[slot] || bperf.slot_tids[slot])
			pr_debug("bperf: slot %u: %d references of ours left\n", slot,
				 bperf.slot_refs[slot]);
		bperf.slot_refs[slot] = 0;
		zfree(&bperf.slot_tids[slot]);
		bperf.slot_nr[slot] = 0;
	}
	if (bperf.sid && bperf.locked && !bperf.lost) {
		bpf_map_delete_elem(bperf.map_fd[BPERF_MAP_SESSIONS],
				    &bperf.sid);
		if (bperf.ctl.nr_sessions)
			bperf.ctl.nr_sessions--;
		bperf_ctl_write();
		bperf_step("leave");
		/* not if the sessions could not be read: some may live */
		if (bperf_gc(0, BPERF_GC_STOP_AT_LIVE) == 0)
			bperf_teardown();
	}
	bperf.sid = 0;
	bperf.self.slots = 0;
	bperf.lost = false;
	bperf_unlock();
	bperf_drop_fds();
	perf_cpu_map__put(bperf.online);
	bperf.online = NULL;
	bperf_cpus_exit(&bperf.cpus);
}
