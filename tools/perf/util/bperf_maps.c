// SPDX-License-Identifier: GPL-2.0
/*
 * bperf's pinned maps, the primitives the other files build on: where
 * the maps are, whether one found pinned is fit to share, the lock, the
 * control map, reading a whole map, and what perf says when bpf()
 * fails; and a test hook that stops perf at a named step.  The bottom
 * of bperf: this file calls none of the others.  Design: util/bperf.c.
 */

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <linux/kernel.h>
#include <api/fs/fs.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bperf.h"
#include "debug.h"
#include "target.h"

#define BPERF_ATTR_MAP_DEFAULT	"bperf_attr_map"
#define BPERF_ATTR_MAP_NAME	"bperf_attr"
#define BPERF_DIR_SUFFIX	"_dir"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

struct bperf_ctx bperf = {
	.attr_fd = -1,
	.map_fd = { [0 ... BPERF_NR_MAPS - 1] = -1 },
	.prog_fd = { [0 ... BPERF_NR_PROGS - 1] = -1 },
	.link_fd = { [0 ... BPERF_NR_LINKS - 1] = -1 },
};

void bperf_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int bperf_map_get_id(int fd, __u32 *id)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return -errno;
	*id = info.id;
	return 0;
}

/*
 * Turn an errno from bpf() into the advice a user needs.  Returns the
 * error as -errno, for the caller to return (-EIO if there was none).
 */
int bperf_report(int err, const char *what, const char *path)
{
	err = err < 0 ? -err : err;
	if (!err)
		err = EIO;
	if (err == EPERM || err == EACCES)
		pr_err("bperf: %s%s%s: %s; BPF counters need root (CAP_SYS_ADMIN and CAP_BPF)\n",
		       what, path ? " " : "", path ?: "", strerror(err));
	else
		pr_err("bperf: %s%s%s: %s\n", what, path ? " " : "",
		       path ?: "", strerror(err));
	return -err;
}

/*
 * A test hook: with PERF_BPERF_STOP=STEP in its environment, perf stops
 * itself (SIGSTOP) when it reaches STEP, for a test to kill it there
 * with SIGKILL.  The steps are the places where a killed session leaves
 * the pinned state half changed (stat_bperf_kill_steps.sh; the step
 * "reopen", which a read can reach too: stat_bperf_hotplug.sh).
 */
void bperf_step(const char *step)
{
	static const char *stop;
	static bool looked;

	if (!looked) {
		stop = getenv("PERF_BPERF_STOP");
		looked = true;
	}
	if (stop && !strcmp(stop, step))
		raise(SIGSTOP);
}

/* Work out where the attr map and the pin directory are; check bpffs. */
int bperf_paths(struct target *target)
{
	char parent[PATH_MAX], *slash;
	struct statfs fs;
	int err;

	if (target->attr_map)
		scnprintf(bperf.attr_path, sizeof(bperf.attr_path), "%s",
			  target->attr_map);
	else
		scnprintf(bperf.attr_path, sizeof(bperf.attr_path),
			  "%s/fs/bpf/%s", sysfs__mountpoint() ?: "/sys",
			  BPERF_ATTR_MAP_DEFAULT);
	if (strlen(bperf.attr_path) + strlen(BPERF_DIR_SUFFIX) +
	    BPF_OBJ_NAME_LEN + 2 >= sizeof(bperf.dir)) {
		pr_err("bperf: attr map path too long: %s\n", bperf.attr_path);
		return -ENAMETOOLONG;
	}
	scnprintf(bperf.dir, sizeof(bperf.dir), "%s%s", bperf.attr_path,
		  BPERF_DIR_SUFFIX);

	scnprintf(parent, sizeof(parent), "%s", bperf.attr_path);
	slash = strrchr(parent, '/');
	if (strchr(slash ? slash + 1 : parent, '.')) {
		pr_err("bperf: %s: BPF filesystem names cannot contain '.'\n",
		       bperf.attr_path);
		return -EINVAL;
	}
	if (slash == parent)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		scnprintf(parent, sizeof(parent), ".");
	if (statfs(parent, &fs)) {
		err = -errno;
		pr_err("bperf: cannot use %s for the attr map: %s\n",
		       parent, strerror(-err));
		return err;
	}
	if ((unsigned long)fs.f_type != BPF_FS_MAGIC) {
		pr_err("bperf: %s is not on a BPF filesystem (bpffs); mount one with\n"
		       "  mount -t bpf bpf %s\n"
		       "or name a path on one with --bpf-attr-map\n",
		       parent, target->attr_map ? parent : "/sys/fs/bpf");
		return -ENODEV;
	}
	return 0;
}

/* The name of a map's BTF value type; kernel BTF objects are cached. */
static const char *bperf_btf_value_name(const struct bpf_map_info *info,
					bool *denied)
{
	static struct btf *btf;
	static __u32 btf_id;
	const struct btf_type *t;

	*denied = false;
	if (!info->btf_id || !info->btf_value_type_id)
		return NULL;
	if (btf_id != info->btf_id) {
		btf__free(btf);
		btf = btf__load_from_kernel_by_id(info->btf_id);
		btf_id = btf ? info->btf_id : 0;
		/* BTF ids to fds, like program ids, need CAP_SYS_ADMIN */
		*denied = !btf && errno == EPERM;
	}
	t = btf ? btf__type_by_id(btf, info->btf_value_type_id) : NULL;
	return t ? btf__name_by_offset(btf, t->name_off) : NULL;
}

/*
 * Does the pinned map at fd look like what we would create?  'btf_value'
 * names the value type the map's BTF must have, if not NULL.  Says what
 * differs, so the user knows what squats on the path.
 */
static int bperf_map_compatible(int fd, const char *path, __u32 type,
				__u32 key_size, __u32 value_size,
				__u32 max_entries, __u32 flags,
				const char *name, const char *btf_value)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char why[128] = "";

	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return bperf_report(-errno, "cannot query", path);
	if (info.type != type)
		scnprintf(why, sizeof(why), "map type %u, want %u",
			  info.type, type);
	else if (info.key_size != key_size)
		scnprintf(why, sizeof(why), "key size %u, want %u",
			  info.key_size, key_size);
	else if (info.value_size != value_size)
		scnprintf(why, sizeof(why), "value size %u, want %u",
			  info.value_size, value_size);
	else if (info.max_entries != max_entries)
		scnprintf(why, sizeof(why), "%u entries, want %u",
			  info.max_entries, max_entries);
	else if (info.map_flags != flags)
		scnprintf(why, sizeof(why), "flags %#x, want %#x",
			  info.map_flags, flags);
	else if (strncmp(info.name, name, BPF_OBJ_NAME_LEN - 1))
		scnprintf(why, sizeof(why), "name '%s', want '%s'",
			  info.name, name);
	else if (btf_value) {
		const char *tname;
		bool denied;

		tname = bperf_btf_value_name(&info, &denied);
		if (denied) {
			pr_err("bperf: cannot read the BTF of %s: sharing BPF counters needs CAP_SYS_ADMIN\n",
			       path);
			return -EPERM;
		}
		if (!tname || strcmp(tname, btf_value))
			scnprintf(why, sizeof(why),
				  "BTF value type '%s', want '%s'",
				  tname ?: "none", btf_value);
	}
	if (!why[0])
		return 0;
	pr_err("bperf: %s is not a map of this perf's BPF counters (%s).\n"
	       "It may come from another perf version: remove it, or pick another path\n"
	       "with --bpf-attr-map.\n", path, why);
	return -EINVAL;
}

static int bperf_attr_map_compatible(int fd)
{
	return bperf_map_compatible(fd, bperf.attr_path, BPF_MAP_TYPE_HASH,
				    sizeof(struct bperf_attr_key),
				    sizeof(__u32), BPERF_MAX_SLOTS, 0,
				    BPERF_ATTR_MAP_NAME, NULL);
}

/* Open the attr map, creating and pinning it if needed. */
static int bperf_attr_map_open(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int fd, err;

	for (;;) {
		fd = bpf_obj_get(bperf.attr_path);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT)
			return bperf_report(-errno, "cannot open", bperf.attr_path);
		fd = bpf_map_create(BPF_MAP_TYPE_HASH, BPERF_ATTR_MAP_NAME,
				    sizeof(struct bperf_attr_key),
				    sizeof(__u32), BPERF_MAX_SLOTS, &opts);
		if (fd < 0)
			return bperf_report(-errno, "cannot create the attr map",
					    NULL);
		if (!bpf_obj_pin(fd, bperf.attr_path))
			return fd;
		err = errno;
		close(fd);
		if (err != EEXIST)
			return bperf_report(-err, "cannot pin", bperf.attr_path);
		/* another session pinned one first: use it */
	}
}

/*
 * Take the lock: flock() on the attr map.  The last session to leave
 * unpins the map, so one we opened before we got the lock may be stale:
 * check that the path still holds the map we locked.
 */
int bperf_lock_first(void)
{
	__u32 locked_id = 0, pinned_id = 0;
	int fd, cur, tries, err;

	for (tries = 0; tries < 100; tries++) {
		fd = bperf_attr_map_open();
		if (fd < 0)
			return fd;
		err = bperf_attr_map_compatible(fd);
		if (err)
			goto fail;
		if (flock(fd, LOCK_EX)) {
			err = bperf_report(-errno, "cannot lock",
					   bperf.attr_path);
			goto fail;
		}
		cur = bpf_obj_get(bperf.attr_path);
		if (cur >= 0 && !bperf_map_get_id(fd, &locked_id) &&
		    !bperf_map_get_id(cur, &pinned_id) &&
		    locked_id == pinned_id) {
			close(cur);
			bperf.attr_fd = fd;
			bperf.locked = true;
			return 0;
		}
		if (cur >= 0)
			close(cur);
		close(fd);
	}
	pr_err("bperf: %s keeps changing under us\n", bperf.attr_path);
	return -EAGAIN;
fail:
	close(fd);
	return err;
}

int bperf_ctl_read(void)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bperf.map_fd[BPERF_MAP_CTL], &zero, &bperf.ctl))
		return bperf_report(-errno, "cannot read the control map", NULL);
	return 0;
}

int bperf_ctl_write(void)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bperf.map_fd[BPERF_MAP_CTL], &zero, &bperf.ctl,
				BPF_ANY))
		return bperf_report(-errno, "cannot update the control map", NULL);
	return 0;
}

/* flock() the attr map with @how, then read the control map. */
static int bperf_flock(int how)
{
	int err;

	if (flock(bperf.attr_fd, how)) {
		/* only with LOCK_NB: another session holds it */
		if (errno == EWOULDBLOCK)
			return -EWOULDBLOCK;
		return bperf_report(-errno, "cannot lock", bperf.attr_path);
	}
	bperf.locked = true;
	err = bperf_ctl_read();
	if (err) {
		flock(bperf.attr_fd, LOCK_UN);
		bperf.locked = false;
	}
	return err;
}

int bperf_lock(void)
{
	return bperf_flock(LOCK_EX);
}

/* bperf_lock(), or -EWOULDBLOCK at once if another session holds it. */
int bperf_trylock(void)
{
	return bperf_flock(LOCK_EX | LOCK_NB);
}

void bperf_unlock(void)
{
	if (bperf.locked)
		flock(bperf.attr_fd, LOCK_UN);
	bperf.locked = false;
}

/*
 * Read a whole hash map into keys[] and vals[], which have room for
 * 'max' entries.  Returns the number of entries, or -errno.
 */
int bperf_dump(int fd, void *keys, __u32 key_size, void *vals,
	       __u32 value_size, __u32 max)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 batch, count, n = 0;
	void *in = NULL, *prev = NULL, *key;
	int err;

	for (;;) {
		count = max - n;
		if (!count)
			return n;
		err = bpf_map_lookup_batch(fd, in, &batch,
					   keys + (size_t)n * key_size,
					   vals + (size_t)n * value_size,
					   &count, &opts);
		if (err && errno != ENOENT)
			break;
		n += count;
		if (err)
			return n;
		in = &batch;
	}

	/* no batch operations: walk the keys */
	n = 0;
	while (n < max) {
		key = keys + (size_t)n * key_size;
		if (bpf_map_get_next_key(fd, prev, key)) {
			if (errno != ENOENT)
				return -errno;
			break;
		}
		prev = key;
		if (!bpf_map_lookup_elem(fd, key,
					 vals + (size_t)n * value_size))
			n++;
	}
	return n;
}

/*
 * Remember the id of a map we pinned, or found pinned and fit to share:
 * the teardown removes those only, never a map that took their place.
 */
void bperf_note_map(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int i;

	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return;
	for (i = 0; i < bperf.nr_map_ids; i++) {
		if (bperf.map_ids[i] == info.id)
			return;
	}
	if (bperf.nr_map_ids < (int)ARRAY_SIZE(bperf.map_ids))
		bperf.map_ids[bperf.nr_map_ids++] = info.id;
}

/* Open a pinned map of the directory and check it against the skeleton. */
int bperf_open_pinned(struct bpf_map *map, struct btf *btf, int *fd)
{
	char path[PATH_MAX];
	const struct btf_type *t;
	const char *vname = NULL;
	__u32 vid;
	int err;

	scnprintf(path, sizeof(path), "%s/%s", bperf.dir, bpf_map__name(map));
	*fd = bpf_obj_get(path);
	if (*fd < 0)
		return bperf_report(-errno, "cannot open", path);
	vid = bpf_map__btf_value_type_id(map);
	if (btf && vid) {
		t = btf__type_by_id(btf, vid);
		if (t)
			vname = btf__name_by_offset(btf, t->name_off);
	}
	err = bperf_map_compatible(*fd, path, bpf_map__type(map),
				   bpf_map__key_size(map),
				   bpf_map__value_size(map),
				   bpf_map__max_entries(map),
				   bpf_map__map_flags(map),
				   bpf_map__name(map), vname);
	if (!err)
		bperf_note_map(*fd);
	return err;
}
