// SPDX-License-Identifier: GPL-2.0
/*
 * Descriptions of BPF programs and links for perf bpf: what the kernel
 * says of them (BPF_OBJ_GET_INFO_BY_FD), their attach targets in words
 * (kernel functions by BTF, cgroup paths, net devices, probes, perf
 * events), the processes holding them and the memory of their maps.
 *
 * Looking BPF objects up by id needs CAP_SYS_ADMIN.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <symbol/kallsyms.h>
#include <api/fs/fs.h>

#include "bpf-desc.h"
#include "bpf-link-types.h"
#include "bpf-utils.h"
#include "debug.h"
#include "evsel.h"
#include "hashmap.h"
#include "pmu.h"
#include "pmus.h"

/* how long a link id may be allocated but not yet published, at most */
#define BPF_EAGAIN_TRIES	100

static size_t id_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool id_equal(long a, long b, void *ctx __maybe_unused)
{
	return a == b;
}

/* A map keyed by id (or pid, tid), NULL if there is no memory */
struct hashmap *perf_bpf__id_map(void)
{
	struct hashmap *map = hashmap__new(id_hash, id_equal, NULL);

	return IS_ERR(map) ? NULL : map;
}

/* A libbpf enum name, as bpftool prints it, or the number */
static const char *enum_name(const char *name, u32 val, char *buf, size_t size)
{
	if (name)
		return name;
	snprintf(buf, size, "%u", val);
	return buf;
}

/* An attach type's name, NULL if unknown (PERF_BPF_ATTACH_TYPE_UNKNOWN) */
const char *perf_bpf__attach_type_name(u32 attach_type, char *buf, size_t size)
{
	if (attach_type == PERF_BPF_ATTACH_TYPE_UNKNOWN)
		return NULL;
	return enum_name(libbpf_bpf_attach_type_str(attach_type), attach_type, buf, size);
}

const char *perf_bpf__prog_type_name(u32 prog_type, char *buf, size_t size)
{
	return enum_name(libbpf_bpf_prog_type_str(prog_type), prog_type, buf, size);
}

const char *perf_bpf__link_type_name(u32 link_type, char *buf, size_t size)
{
	return enum_name(libbpf_bpf_link_type_str(link_type), link_type, buf, size);
}

void perf_bpf__tag_str(const u8 *tag, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < BPF_TAG_SIZE; i++) {
		buf[2 * i] = hex[tag[i] >> 4];
		buf[2 * i + 1] = hex[tag[i] & 0xf];
	}
	buf[2 * BPF_TAG_SIZE] = '\0';
}

/* Program descriptions */

void bpf_prog_desc__delete(struct bpf_prog_desc *prog)
{
	if (prog) {
		free(prog->name);
		free(prog);
	}
}

/*
 * The program's name as bpftool shows it: bpf_prog_info cuts names at
 * BPF_OBJ_NAME_LEN - 1 characters, the BTF of the program's first
 * function has it whole.
 */
/*
 * The name of the main function of the program behind @fd, from its BTF
 * (what fentry programs attach to); NULL if it has none
 */
char *perf_bpf__prog_func_name(int fd, const struct bpf_prog_info *info)
{
	struct bpf_prog_info finfo = {};
	struct bpf_func_info func = {};
	__u32 len = sizeof(finfo);
	const struct btf_type *t;
	char *name = NULL;
	struct btf *btf;

	if (!info->btf_id || !info->nr_func_info)
		return NULL;
	finfo.nr_func_info = 1;
	finfo.func_info_rec_size = sizeof(func);
	finfo.func_info = ptr_to_u64(&func);
	if (bpf_prog_get_info_by_fd(fd, &finfo, &len))
		return NULL;

	btf = btf__load_from_kernel_by_id(info->btf_id);
	if (!btf)
		return NULL;
	t = btf__type_by_id(btf, func.type_id);
	if (t)
		name = strdup(btf__name_by_offset(btf, t->name_off));
	btf__free(btf);
	return name;
}

static char *bpf_prog_full_name(int fd, const struct bpf_prog_info *info)
{
	char *name = NULL;

	if (strlen(info->name) == BPF_OBJ_NAME_LEN - 1)
		name = perf_bpf__prog_func_name(fd, info);
	return name ?: strdup(info->name);
}

/*
 * Fill @prog from the program behind @fd.  @ksym_name, if known, is the
 * name of the program's KSYMBOL record: the whole name, which saves
 * reading BTF when bpf_prog_info's is cut.
 */
int bpf_prog_desc__fill(struct bpf_prog_desc *prog, int fd, const char *ksym_name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char *name;

	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		return -errno;

	if (ksym_name && strlen(info.name) == BPF_OBJ_NAME_LEN - 1 &&
	    strstarts(ksym_name, info.name))
		name = strdup(ksym_name);
	else
		name = bpf_prog_full_name(fd, &info);
	if (!name)
		return -ENOMEM;

	free(prog->name);
	prog->name = name;
	prog->id = info.id;
	prog->type = info.type;
	prog->type_known = true;
	prog->verified_insns = info.verified_insns;
	memcpy(prog->tag, info.tag, BPF_TAG_SIZE);
	return 0;
}

/*
 * A program's PERF_RECORD_KSYMBOL is named bpf_prog_<tag>[_<name>]: the
 * name in @ksym, "" if none, if it is that of the function with @tag
 * (hex, as perf_bpf__tag_str() writes it); else NULL.
 */
const char *perf_bpf__ksym_prog(const char *ksym, const char *tag)
{
	const size_t off = sizeof("bpf_prog_") - 1, len = 2 * BPF_TAG_SIZE;

	if (!strstarts(ksym, "bpf_prog_") || strlen(ksym) < off + len ||
	    (tag && strncmp(ksym + off, tag, len)))
		return NULL;
	ksym += off + len;
	return *ksym == '_' ? ksym + 1 : ksym;
}

/* A BPF object's fd by id; a link id allocated but not published yet gives EAGAIN */
int perf_bpf__fd_by_id(int (*get_fd)(__u32 id), u32 id)
{
	int i, fd = -1;

	for (i = 0; i < BPF_EAGAIN_TRIES; i++) {
		fd = get_fd(id);
		if (fd >= 0 || errno != EAGAIN)
			break;
		usleep(1000);
	}
	return fd;
}

/* Resolver: BTF objects, cgroup paths */

struct bpf_kernel_btf {
	struct btf		*btf;		/* NULL: not a kernel BTF */
	bool			own;		/* a module's, on top of vmlinux */
	char			name[64];
};

static struct btf *bpf_resolver__vmlinux(struct bpf_resolver *res)
{
	if (!res->vmlinux_tried) {
		res->vmlinux_tried = true;
		res->vmlinux = btf__load_vmlinux_btf();
		if (!res->vmlinux)
			pr_debug("perf bpf: cannot read the kernel's BTF: %s\n", strerror(errno));
	}
	return res->vmlinux;
}

/* The kernel (vmlinux or module) BTF object @id, or NULL if it is not one */
static struct bpf_kernel_btf *bpf_resolver__kernel_btf(struct bpf_resolver *res, u32 id)
{
	struct bpf_kernel_btf *kbtf;
	struct bpf_btf_info info = {};
	__u32 len = sizeof(info);
	int fd;

	if (hashmap__find(res->btfs, id, &kbtf))
		return kbtf;

	kbtf = zalloc(sizeof(*kbtf));
	if (!kbtf)
		return NULL;
	fd = bpf_btf_get_fd_by_id(id);
	if (fd >= 0) {
		info.name = ptr_to_u64(kbtf->name);
		info.name_len = sizeof(kbtf->name);
		if (!bpf_btf_get_info_by_fd(fd, &info, &len) && info.kernel_btf) {
			if (!strcmp(kbtf->name, "vmlinux")) {
				kbtf->btf = bpf_resolver__vmlinux(res);
			} else if (bpf_resolver__vmlinux(res)) {
				kbtf->btf = btf__load_from_kernel_by_id_split(id, res->vmlinux);
				kbtf->own = true;
			}
		}
		close(fd);
	}
	if (hashmap__add(res->btfs, id, kbtf)) {
		if (kbtf->own)
			btf__free(kbtf->btf);
		free(kbtf);
		return NULL;
	}
	return kbtf;
}

static const char *btf_type_name(const struct btf *btf, u32 type_id)
{
	const struct btf_type *t = btf ? btf__type_by_id(btf, type_id) : NULL;

	return t ? btf__name_by_offset(btf, t->name_off) : NULL;
}

/*
 * What a tracing link traces: a kernel function, named by its BTF, or a
 * function of another BPF program.  The link's info has an object id and
 * a BTF type id; the object is a kernel BTF object when the program was
 * loaded for one (attach_btf_obj_id), else the target program.
 */
static char *bpf_resolver__tracing_target(struct bpf_resolver *res, u32 prog_id,
					  u32 obj_id, u32 btf_id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_kernel_btf *kbtf;
	struct btf *btf = NULL;
	const char *name;
	char *target;
	int fd, ret;

	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd >= 0) {
		if (bpf_prog_get_info_by_fd(fd, &info, &len))
			info.attach_btf_obj_id = 0;
		close(fd);
	}

	if (info.attach_btf_obj_id == obj_id) {
		kbtf = bpf_resolver__kernel_btf(res, obj_id);
		name = kbtf ? btf_type_name(kbtf->btf, btf_id) : NULL;
		if (!name)
			ret = asprintf(&target, "btf %u type %u", obj_id, btf_id);
		else if (kbtf->own)
			ret = asprintf(&target, "%s [%s]", name, kbtf->name);
		else
			ret = asprintf(&target, "%s", name);
		return ret < 0 ? NULL : target;
	}

	/* the target is program obj_id: its function btf_id */
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	fd = bpf_prog_get_fd_by_id(obj_id);
	if (fd >= 0) {
		if (!bpf_prog_get_info_by_fd(fd, &info, &len) && info.btf_id)
			btf = btf__load_from_kernel_by_id(info.btf_id);
		close(fd);
	}
	name = btf_type_name(btf, btf_id);
	if (asprintf(&target, "prog %u %s", obj_id, name ?: "?") < 0)
		target = NULL;
	btf__free(btf);
	return target;
}

static const char *bpf_resolver__cgroot(struct bpf_resolver *res)
{
	char line[PATH_MAX + 128], dir[PATH_MAX], type[64];
	FILE *fp;

	if (res->cgroot_tried)
		return res->cgroot[0] ? res->cgroot : NULL;
	res->cgroot_tried = true;
	fp = fopen("/proc/self/mounts", "r");
	if (!fp)
		return NULL;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%*s %4095s %63s", dir, type) == 2 && !strcmp(type, "cgroup2")) {
			snprintf(res->cgroot, sizeof(res->cgroot), "%s", dir);
			break;
		}
	}
	fclose(fp);
	return res->cgroot[0] ? res->cgroot : NULL;
}

/* A cgroup2 file handle is the cgroup's id (FILEID_KERNFS, linux/exportfs.h) */
#define BPF_FILEID_KERNFS	0xfe

static int bpf_resolver__add_cgroup(struct bpf_resolver *res, u64 id, const char *rel)
{
	char *copy, *old = NULL;

	copy = strdup(*rel ? rel : "/");
	if (!copy)
		return -ENOMEM;
	if (hashmap__set(res->cgroups, id, copy, NULL, &old)) {
		free(copy);
		return -ENOMEM;
	}
	free(old);
	return 0;
}

/*
 * The cgroups in directory @dfd, @path (@len characters, @skip of them
 * the mount's), on device @dev, as nftw(FTW_PHYS | FTW_MOUNT) finds them:
 * directories it can open, not below another mount; but stat() only
 * the directories, not the files of every cgroup.  Closes @dfd.
 */
static int cgroup_walk(struct bpf_resolver *res, int dfd, char *path, size_t len,
		       size_t skip, dev_t dev)
{
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int err;

	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return 0;
	}
	/* on cgroup2 a cgroup's id is its directory's inode number */
	err = fstat(dfd, &st) ? 0 : bpf_resolver__add_cgroup(res, st.st_ino, path + skip);
	while (!err && (de = readdir(dir)) != NULL) {
		size_t n = strlen(de->d_name);
		int fd;

		if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) ||
		    !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    len + 1 + n >= PATH_MAX)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || st.st_dev != dev)
			continue;
		fd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, n + 1);
		err = cgroup_walk(res, fd, path, len + 1 + n, skip, dev);
		path[len] = '\0';
	}
	closedir(dir);
	return err;
}

/* Every cgroup under the mount, once a batch at most */
static void bpf_resolver__cgroup_walk(struct bpf_resolver *res)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len;
	int fd;

	res->cg_walked = res->batch;
	len = strlen(res->cgroot);
	memcpy(path, res->cgroot, len + 1);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	cgroup_walk(res, fd, path, len, len, st.st_dev);
}

/*
 * The directory of cgroup @id, opened by its handle: 0 and its path,
 * -ESTALE if there is no such cgroup, or none the walk from the mount
 * would find there, else -errno
 */
static int cgroup_by_handle(struct bpf_resolver *res, u64 id, char **path)
{
	u64 buf[(sizeof(struct file_handle) + sizeof(u64) + 7) / 8];
	struct file_handle *fh = (struct file_handle *)buf;
	char proc[32], dir[PATH_MAX];
	size_t rootlen = strlen(res->cgroot);
	struct stat st, root;
	ssize_t n;
	int fd;

	fh->handle_bytes = sizeof(id);
	fh->handle_type = BPF_FILEID_KERNFS;
	memcpy(fh->f_handle, &id, sizeof(id));
	fd = open_by_handle_at(res->cgroot_fd, fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, dir, sizeof(dir) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	dir[n] = '\0';
	/* under the mount and that very directory by its path: what the walk finds */
	/* a mount at / (rootlen 1): every path is under it */
	if (rootlen == 1)
		rootlen = 0;
	if (strncmp(dir, res->cgroot, rootlen) || (dir[rootlen] && dir[rootlen] != '/') ||
	    fstat(res->cgroot_fd, &root) || lstat(dir, &st) ||
	    (u64)st.st_ino != id || st.st_dev != root.st_dev)
		return -ESTALE;
	*path = strdup(dir[rootlen] ? dir + rootlen : "/");
	return *path ? 0 : -ENOMEM;
}

/* Can cgroups be opened by id: try the mount's root cgroup */
static bool bpf_resolver__cgroup_handles(struct bpf_resolver *res)
{
	struct stat st;
	char *path = NULL;

	if (res->cg_handles)
		return res->cg_handles > 0;
	res->cg_handles = -1;
	res->cgroot_fd = open(res->cgroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (res->cgroot_fd < 0 || fstat(res->cgroot_fd, &st))
		return false;
	if (!cgroup_by_handle(res, st.st_ino, &path) && !strcmp(path, "/"))
		res->cg_handles = 1;
	else
		pr_debug("perf bpf: cgroups cannot be opened by id, walking the tree for new ones\n");
	free(path);
	return res->cg_handles > 0;
}

/*
 * The path of cgroup @id under the cgroup2 mount, NULL if none.  The
 * first unknown id walks the tree, for all the cgroups there are; a
 * cgroup made later is opened by its id (one open_by_handle_at() and a
 * readlink() of a path as long as the tree is deep), or, where that does
 * not work, found by another walk, at most one a batch.
 */
const char *bpf_resolver__cgroup(struct bpf_resolver *res, u64 id)
{
	const char *root = bpf_resolver__cgroot(res);
	char *path = NULL;
	int err;

	if (!root || id != (unsigned long)id)
		return NULL;
	if (hashmap__find(res->cgroups, id, &path))
		return path;

	if (res->cg_walked && bpf_resolver__cgroup_handles(res)) {
		err = cgroup_by_handle(res, id, &path);
		if (!err) {
			if (!hashmap__add(res->cgroups, id, path))
				return path;
			free(path);
			return NULL;
		}
		/* ids are never reused: remember that this one is gone */
		if (err == -ESTALE) {
			hashmap__add(res->cgroups, id, NULL);
			return NULL;
		}
	}
	/* walked since the id was learned, maybe not since the cgroup was made */
	if (res->cg_walked == res->batch)
		return NULL;
	bpf_resolver__cgroup_walk(res);
	if (hashmap__find(res->cgroups, id, &path))
		return path;
	/* walked after the id was learned: gone */
	hashmap__add(res->cgroups, id, NULL);
	return NULL;
}

/*
 * Kernel symbols by address, as /proc/kallsyms lists them (module
 * symbols with their "\t[module]"), sorted by address, in the file's
 * order at an address: the first one there is the one shown.
 */
struct bpf_kallsym {
	u64			addr;
	size_t			name;		/* offset in names */
};

struct bpf_kallsyms {
	struct bpf_kallsym	*v;
	size_t			nr, alloc;
	char			*names;
	size_t			names_len, names_alloc;
};

static void bpf_kallsyms__delete(struct bpf_kallsyms *ks)
{
	if (ks) {
		free(ks->v);
		free(ks->names);
		free(ks);
	}
}

static int bpf_kallsyms__add(void *arg, const char *name, char type __maybe_unused, u64 start)
{
	struct bpf_kallsyms *ks = arg;
	size_t n = strlen(name) + 1;

	if (ks->nr == ks->alloc) {
		size_t alloc = ks->alloc ? 2 * ks->alloc : 4096;
		struct bpf_kallsym *v = realloc(ks->v, alloc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ks->v = v;
		ks->alloc = alloc;
	}
	if (ks->names_len + n > ks->names_alloc) {
		size_t alloc = ks->names_alloc ? 2 * ks->names_alloc : 65536;
		char *names;

		while (ks->names_len + n > alloc)
			alloc *= 2;
		names = realloc(ks->names, alloc);
		if (!names)
			return -ENOMEM;
		ks->names = names;
		ks->names_alloc = alloc;
	}
	ks->v[ks->nr].addr = start;
	ks->v[ks->nr].name = ks->names_len;
	ks->nr++;
	memcpy(ks->names + ks->names_len, name, n);
	ks->names_len += n;
	return 0;
}

static int bpf_kallsym__cmp(const void *a, const void *b)
{
	const struct bpf_kallsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* names are stored in the file's order */
	return x->name < y->name ? -1 : x->name > y->name;
}

static struct bpf_kallsyms *bpf_kallsyms__read(void)
{
	struct bpf_kallsyms *ks = zalloc(sizeof(*ks));

	if (!ks)
		return NULL;
	if (kallsyms__parse("/proc/kallsyms", ks, bpf_kallsyms__add))
		ks->nr = 0;
	qsort(ks->v, ks->nr, sizeof(*ks->v), bpf_kallsym__cmp);
	return ks;
}

static const char *bpf_kallsyms__find(const struct bpf_kallsyms *ks, u64 addr)
{
	size_t lo = 0, hi = ks ? ks->nr : 0;

	/* the first at @addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return ks && lo < ks->nr && ks->v[lo].addr == addr ? ks->names + ks->v[lo].name : NULL;
}

/*
 * The name of the kernel symbol at @addr, NULL if none: /proc/kallsyms
 * is read at the first, and again, at most once a batch, for an address
 * it did not have (a module loaded since)
 */
static const char *bpf_resolver__ksym(struct bpf_resolver *res, u64 addr)
{
	const char *name = bpf_kallsyms__find(res->kallsyms, addr);

	if (name || res->kallsyms_read == res->batch)
		return name;
	bpf_kallsyms__delete(res->kallsyms);
	res->kallsyms = bpf_kallsyms__read();
	res->kallsyms_read = res->batch;
	return bpf_kallsyms__find(res->kallsyms, addr);
}

int bpf_resolver__init(struct bpf_resolver *res)
{
	memset(res, 0, sizeof(*res));
	res->cgroot_fd = -1;
	res->batch = 1;
	res->btfs = perf_bpf__id_map();
	res->cgroups = perf_bpf__id_map();
	return res->btfs && res->cgroups ? 0 : -ENOMEM;
}

void bpf_resolver__exit(struct bpf_resolver *res)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (res->btfs) {
		hashmap__for_each_entry(res->btfs, cur, bkt) {
			struct bpf_kernel_btf *kbtf = cur->pvalue;

			if (kbtf->own)
				btf__free(kbtf->btf);
			free(kbtf);
		}
		hashmap__free(res->btfs);
	}
	if (res->cgroups) {
		hashmap__for_each_entry(res->cgroups, cur, bkt)
			free(cur->pvalue);
		hashmap__free(res->cgroups);
	}
	btf__free(res->vmlinux);
	bpf_kallsyms__delete(res->kallsyms);
	if (res->cgroot_fd >= 0)
		close(res->cgroot_fd);
}

/*
 * A new batch of look-ups: of ids learned after what the last batch
 * read of the cgroup tree and of /proc/kallsyms
 */
void bpf_resolver__next_batch(struct bpf_resolver *res)
{
	res->batch++;
}

/* Link descriptions */

void bpf_link_desc__delete(struct bpf_link_desc *link)
{
	if (link) {
		free(link->target);
		free(link);
	}
}

/*
 * Attachments without a link, found as bpftool finds them (bpftool perf,
 * net, cgroup): a program on a perf event (a kprobe, uprobe or
 * tracepoint attached with PERF_EVENT_IOC_SET_BPF, as bpftrace and BCC
 * attach them) through BPF_TASK_FD_QUERY on the perf event fds of every
 * process; an XDP program attached over netlink through bpf_xdp_query()
 * on every interface; a cgroup program attached with BPF_PROG_ATTACH
 * through BPF_PROG_QUERY on every cgroup.  Each is added to *@v (*@nr of
 * *@alloc) as a bpf_link_desc of id 0, unless a link in *@v makes it:
 * the kernel shows a link's program on its device, perf event or cgroup
 * too.  A perf event's attachment and a perf_event link of the same
 * program to the same event cannot be told apart: shown as the link.
 * Not found: tc filters attached over netlink (cls_bpf), which only a
 * netlink dump of every qdisc's filters would show, and lsm_cgroup
 * programs.
 */

/*
 * The entries in @v of program @prog_id, attach type @attach_type, to
 * @target: its links, or (@found) the attachments found without one
 */
static int bpf_attachments__count(struct bpf_link_desc **v, int nr, bool found, u32 prog_id,
				  u32 attach_type, const char *target)
{
	int i, n = 0;

	for (i = 0; i < nr; i++) {
		if (!!v[i]->found == found && v[i]->prog_id == prog_id && v[i]->target &&
		    v[i]->attach_type == attach_type && !strcmp(v[i]->target, target))
			n++;
	}
	return n;
}

static struct bpf_link_desc *bpf_attachments__add(struct bpf_link_desc ***v, int *nr,
						  int *alloc, u32 prog_id, u32 type,
						  u32 attach_type, char *target,
						  const char *found)
{
	struct bpf_link_desc *link, **more;

	if (!target)
		return NULL;
	if (*nr == *alloc) {
		more = realloc(*v, (*alloc ? 2 * *alloc : 64) * sizeof(**v));
		if (!more) {
			free(target);
			return NULL;
		}
		*v = more;
		*alloc = *alloc ? 2 * *alloc : 64;
	}
	link = zalloc(sizeof(*link));
	if (!link) {
		free(target);
		return NULL;
	}
	link->prog_id = prog_id;
	link->type = type;
	link->attach_type = attach_type;
	link->target = target;
	link->found = found;
	(*v)[(*nr)++] = link;
	return link;
}

/* "kind name+offset", or "kind address" without a name, as perf_event links show them */
static char *probe_target(const char *kind, const char *name, u64 offset, u64 addr)
{
	char *target;
	int ret;

	if (*name)
		ret = asprintf(&target, "%s %s+%#" PRIx64, kind, name, offset);
	else
		ret = asprintf(&target, "%s %#" PRIx64, kind, addr);
	return ret < 0 ? NULL : target;
}

/*
 * Whether fd @name of directory @fds (a /proc/PID/fd) is a link to @what
 * (any, if NULL), read into @buf
 */
static bool fd_is(DIR *fds, const char *name, const char *what, char *buf, size_t size)
{
	ssize_t n = readlinkat(dirfd(fds), name, buf, size - 1);

	if (n < 0)
		return false;
	buf[n] = '\0';
	return !what || !strcmp(buf, what);
}

/* The perf event fds of process @pid with a BPF program */
static int bpf_attachments__perf_events(struct bpf_link_desc ***v, int *nr, int *alloc,
					pid_t pid)
{
	char path[64], link[64], name[PATH_MAX], *target;
	struct dirent *de;
	DIR *fds;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	fds = opendir(path);
	if (!fds)
		return 0;
	while (!err && (de = readdir(fds)) != NULL) {
		__u64 offset = 0, addr = 0;
		__u32 len = sizeof(name), prog_id = 0, fd_type = 0;

		if (!fd_is(fds, de->d_name, "anon_inode:[perf_event]", link, sizeof(link)))
			continue;
		name[0] = '\0';
		if (bpf_task_fd_query(pid, atoi(de->d_name), 0, name, &len, &prog_id, &fd_type,
				      &offset, &addr) || !prog_id)
			continue;
		switch (fd_type) {
		case BPF_FD_TYPE_TRACEPOINT:
		case BPF_FD_TYPE_RAW_TRACEPOINT:
			if (asprintf(&target, "tracepoint %s", name) < 0)
				target = NULL;
			break;
		case BPF_FD_TYPE_KPROBE:
			target = probe_target("kprobe", name, offset, addr);
			break;
		case BPF_FD_TYPE_KRETPROBE:
			target = probe_target("kretprobe", name, offset, addr);
			break;
		case BPF_FD_TYPE_UPROBE:
			target = probe_target("uprobe", name, offset, 0);
			break;
		case BPF_FD_TYPE_URETPROBE:
			target = probe_target("uretprobe", name, offset, 0);
			break;
		default:
			if (asprintf(&target, "perf event kind %u", fd_type) < 0)
				target = NULL;
			break;
		}
		/*
		 * made by a link, or found already: the same event in another
		 * fd (dup, fork) or another CPU's event of the same target
		 */
		if (!target) {
			err = -ENOMEM;
		} else if (bpf_attachments__count(*v, *nr, false, prog_id, BPF_PERF_EVENT,
						  target) ||
			   bpf_attachments__count(*v, *nr, true, prog_id, BPF_PERF_EVENT,
						  target)) {
			free(target);
		} else if (!bpf_attachments__add(v, nr, alloc, prog_id, BPF_LINK_TYPE_PERF_EVENT,
						 BPF_PERF_EVENT, target, "task_fd_query")) {
			err = -ENOMEM;
		}
	}
	closedir(fds);
	return err;
}

/* XDP programs of every interface, in each mode */
static int bpf_attachments__xdp(struct bpf_link_desc ***v, int *nr, int *alloc)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	struct bpf_link_desc *link;
	char *target;
	int err = 0;

	for (i = ifs; !err && i && i->if_index; i++) {
		LIBBPF_OPTS(bpf_xdp_query_opts, opts);
		u32 ids[3], m;

		/* up to the attach mode: not the features, a generic netlink look-up */
		opts.sz = offsetof(struct bpf_xdp_query_opts, attach_mode) +
			  sizeof(opts.attach_mode);

		if (bpf_xdp_query(i->if_index, 0, &opts))
			continue;
		ids[0] = opts.skb_prog_id;
		ids[1] = opts.drv_prog_id;
		ids[2] = opts.hw_prog_id;
		for (m = 0; !err && m < ARRAY_SIZE(ids); m++) {
			if (!ids[m])
				continue;
			if (asprintf(&target, "%s ifindex %u", i->if_name, i->if_index) < 0) {
				err = -ENOMEM;
				break;
			}
			if (bpf_attachments__count(*v, *nr, false, ids[m], BPF_XDP, target)) {
				free(target);
				continue;
			}
			link = bpf_attachments__add(v, nr, alloc, ids[m], BPF_LINK_TYPE_XDP,
						    BPF_XDP, target, "netlink");
			if (!link)
				err = -ENOMEM;
			else
				link->ifindex = i->if_index;
		}
	}
	if (ifs)
		if_freenameindex(ifs);
	return err;
}

/* The cgroup attach types BPF_PROG_QUERY is asked for */
static const enum bpf_attach_type cgroup_attach_types[] = {
	BPF_CGROUP_INET_INGRESS, BPF_CGROUP_INET_EGRESS, BPF_CGROUP_INET_SOCK_CREATE,
	BPF_CGROUP_INET_SOCK_RELEASE, BPF_CGROUP_SOCK_OPS, BPF_CGROUP_DEVICE,
	BPF_CGROUP_INET4_BIND, BPF_CGROUP_INET6_BIND, BPF_CGROUP_INET4_CONNECT,
	BPF_CGROUP_INET6_CONNECT, BPF_CGROUP_INET4_POST_BIND, BPF_CGROUP_INET6_POST_BIND,
	BPF_CGROUP_UDP4_SENDMSG, BPF_CGROUP_UDP6_SENDMSG, BPF_CGROUP_UDP4_RECVMSG,
	BPF_CGROUP_UDP6_RECVMSG, BPF_CGROUP_SYSCTL, BPF_CGROUP_GETSOCKOPT,
	BPF_CGROUP_SETSOCKOPT, BPF_CGROUP_INET4_GETPEERNAME, BPF_CGROUP_INET6_GETPEERNAME,
	BPF_CGROUP_INET4_GETSOCKNAME, BPF_CGROUP_INET6_GETSOCKNAME,
	BPF_CGROUP_UNIX_CONNECT, BPF_CGROUP_UNIX_SENDMSG, BPF_CGROUP_UNIX_RECVMSG,
	BPF_CGROUP_UNIX_GETPEERNAME, BPF_CGROUP_UNIX_GETSOCKNAME,
};

/*
 * The programs of cgroup @fd (@rel, @id) of attach type @type: those the
 * query gives beyond the links, as a program may be attached both ways
 * (once through BPF_PROG_ATTACH with BPF_F_ALLOW_MULTI, once more per link)
 */
static int bpf_attachments__cgroup(struct bpf_link_desc ***v, int *nr, int *alloc, int fd,
				   const char *rel, u64 id, enum bpf_attach_type type)
{
	u32 ids[64], count = ARRAY_SIZE(ids), k, j;
	struct bpf_link_desc *link;
	int n;

	if (bpf_prog_query(fd, type, 0, NULL, ids, &count))
		return 0;
	count = min_t(u32, count, ARRAY_SIZE(ids));
	for (k = 0; k < count; k++) {
		/* each program once, as many times as the query gives it */
		for (j = 0; j < k && ids[j] != ids[k]; j++)
			;
		if (j < k)
			continue;
		for (j = k, n = 0; j < count; j++)
			n += ids[j] == ids[k];
		n -= bpf_attachments__count(*v, *nr, false, ids[k], type, rel);
		while (n-- > 0) {
			link = bpf_attachments__add(v, nr, alloc, ids[k], BPF_LINK_TYPE_CGROUP,
						    type, strdup(rel), "prog_query");
			if (!link)
				return -ENOMEM;
			link->cgroup_id = id;
		}
	}
	return 0;
}

/* The programs attached to each cgroup itself, not inherited */
static int bpf_attachments__cgroups(struct bpf_link_desc ***v, int *nr, int *alloc,
				    struct bpf_resolver *res)
{
	const char *root = bpf_resolver__cgroot(res);
	struct hashmap_entry *cur;
	char path[PATH_MAX];
	size_t bkt, t;
	int err = 0;

	if (!root)
		return 0;
	/* the cgroups made since the last walk too: once a batch */
	if (res->cg_walked != res->batch)
		bpf_resolver__cgroup_walk(res);
	hashmap__for_each_entry(res->cgroups, cur, bkt) {
		const char *rel = cur->pvalue;
		int fd;

		if (!rel)
			continue;
		snprintf(path, sizeof(path), "%s%s", root, rel);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		for (t = 0; !err && t < ARRAY_SIZE(cgroup_attach_types); t++)
			err = bpf_attachments__cgroup(v, nr, alloc, fd, *rel ? rel : "/", cur->key,
						      cgroup_attach_types[t]);
		close(fd);
		if (err)
			break;
	}
	return err;
}

int bpf_attachments__scan(struct bpf_link_desc ***v, int *nr, int *alloc, unsigned int kinds,
			  struct bpf_resolver *res)
{
	struct dirent *pd;
	DIR *proc;
	pid_t pid;
	int err = 0;

	if (kinds & BPF_ATTACH_PERF_EVENT) {
		proc = opendir("/proc");
		if (!proc)
			return -errno;
		while (!err && (pd = readdir(proc)) != NULL) {
			pid = strtol(pd->d_name, NULL, 10);
			if (pid > 0)
				err = bpf_attachments__perf_events(v, nr, alloc, pid);
		}
		closedir(proc);
	}
	if (!err && (kinds & BPF_ATTACH_XDP))
		err = bpf_attachments__xdp(v, nr, alloc);
	if (!err && (kinds & BPF_ATTACH_CGROUP))
		err = bpf_attachments__cgroups(v, nr, alloc, res);
	return err;
}

/* What bpf_attachments__scan() looks for, for programs of type @prog_type */
unsigned int bpf_attachments__kinds(u32 prog_type)
{
	switch (prog_type) {
	case BPF_PROG_TYPE_KPROBE:
	case BPF_PROG_TYPE_TRACEPOINT:
	case BPF_PROG_TYPE_RAW_TRACEPOINT:
		return BPF_ATTACH_PERF_EVENT;
	case BPF_PROG_TYPE_XDP:
		return BPF_ATTACH_XDP;
	case BPF_PROG_TYPE_CGROUP_SKB:
	case BPF_PROG_TYPE_CGROUP_SOCK:
	case BPF_PROG_TYPE_CGROUP_SOCK_ADDR:
	case BPF_PROG_TYPE_CGROUP_SOCKOPT:
	case BPF_PROG_TYPE_CGROUP_SYSCTL:
	case BPF_PROG_TYPE_CGROUP_DEVICE:
	case BPF_PROG_TYPE_SOCK_OPS:
		return BPF_ATTACH_CGROUP;
	default:
		return 0;
	}
}

/* "f1,f2,..." for the first functions of a kprobe_multi link */
static char *kprobe_multi_target(int fd, u32 count, struct bpf_resolver *res)
{
	u64 addrs[8] = {};
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char buf[512] = "";
	size_t pos = 0;
	u32 i, nr;

	nr = min_t(u32, count, ARRAY_SIZE(addrs));
	info.kprobe_multi.addrs = ptr_to_u64(addrs);
	info.kprobe_multi.count = nr;
	/* ENOSPC: more functions than asked for, the first ones are there */
	if (bpf_link_get_info_by_fd(fd, &info, &len) && errno != ENOSPC)
		return NULL;
	for (i = 0; i < nr; i++) {
		const char *sep = i ? "," : "";
		/* 0: kallsyms hides addresses from this reader, names too */
		const char *name = addrs[i] ? bpf_resolver__ksym(res, addrs[i]) : NULL;

		if (name)
			pos += scnprintf(buf + pos, sizeof(buf) - pos, "%s%s", sep, name);
		else
			pos += scnprintf(buf + pos, sizeof(buf) - pos, "%s%#" PRIx64,
					 sep, addrs[i]);
	}
	if (count > nr)
		scnprintf(buf + pos, sizeof(buf) - pos, ",... (%u functions)", count);
	return strdup(buf);
}

/*
 * The event a perf_event link's program runs on, named as perf names it
 * (evsel__name()), from the type and config the link's info gives: those
 * the event has in the kernel.  The kernel moves a software cpu-clock or
 * task-clock event to a PMU of its own (cpu_clock, task_clock) with a
 * type it allocates at boot and shows nowhere, as these two PMUs have no
 * sysfs device; each takes one config only, the software event's.  So a
 * type above the fixed ones that no PMU in sysfs has is one of them when
 * its config is one of these two.
 */
static char *perf_event_event(u32 type, u64 config)
{
	struct perf_event_attr attr = {
		.type = type,
		.config = config,
		.size = sizeof(attr),
		/* no modifiers: the link's info has no exclude bits */
		.exclude_guest = 1,
	};
	struct perf_pmu *pmu = perf_pmus__find_by_type(type);
	struct evsel *evsel;
	char *target;
	int ret;

	if (!pmu && type >= PERF_TYPE_MAX &&
	    (config == PERF_COUNT_SW_CPU_CLOCK || config == PERF_COUNT_SW_TASK_CLOCK))
		attr.type = PERF_TYPE_SOFTWARE;
	switch (attr.type) {
	case PERF_TYPE_HARDWARE:
	case PERF_TYPE_SOFTWARE:
	case PERF_TYPE_HW_CACHE:
	case PERF_TYPE_RAW:
		evsel = evsel__new(&attr);
		if (!evsel)
			return NULL;
		ret = asprintf(&target, "event %s", evsel__name(evsel));
		evsel__delete(evsel);
		break;
	default:
		if (pmu)	/* as perf stat -e takes it */
			ret = asprintf(&target, "event %s/config=%#" PRIx64 "/", pmu->name,
				       config);
		else
			ret = asprintf(&target, "event type %u config %#" PRIx64, type,
				       config);
		break;
	}
	return ret < 0 ? NULL : target;
}

static char *perf_event_target(const struct bpf_link_info *info, const char *name)
{
	const char *kind;
	char *target;
	int ret;

	switch (info->perf_event.type) {
	case BPF_PERF_EVENT_UPROBE:
	case BPF_PERF_EVENT_URETPROBE:
		kind = info->perf_event.type == BPF_PERF_EVENT_UPROBE ? "uprobe" : "uretprobe";
		ret = asprintf(&target, "%s %s+%#x", kind, name, info->perf_event.uprobe.offset);
		break;
	case BPF_PERF_EVENT_KPROBE:
	case BPF_PERF_EVENT_KRETPROBE:
		kind = info->perf_event.type == BPF_PERF_EVENT_KPROBE ? "kprobe" : "kretprobe";
		if (*name)
			ret = asprintf(&target, "%s %s+%#x", kind, name,
				       info->perf_event.kprobe.offset);
		else
			ret = asprintf(&target, "%s %#" PRIx64, kind,
				       (u64)info->perf_event.kprobe.addr);
		break;
	case BPF_PERF_EVENT_TRACEPOINT:
		ret = asprintf(&target, "tracepoint %s", name);
		break;
	case BPF_PERF_EVENT_EVENT:
		return perf_event_event(info->perf_event.event.type,
					info->perf_event.event.config);
	default:
		ret = asprintf(&target, "perf event kind %u", info->perf_event.type);
		break;
	}
	return ret < 0 ? NULL : target;
}

/*
 * Ask for the link's info again with a buffer for the name its kind of
 * link has (tracepoint, function, file); "" if it has none.
 */
static int bpf_link_info_name(int fd, struct bpf_link_info *info, char *name, u32 size)
{
	__u32 len = sizeof(*info);
	u32 type = info->type, perf_type = info->perf_event.type;

	memset(&info->raw_tracepoint, 0, sizeof(*info) - offsetof(struct bpf_link_info,
								  raw_tracepoint));
	name[0] = '\0';
	switch (type) {
	case BPF_LINK_TYPE_RAW_TRACEPOINT:
		info->raw_tracepoint.tp_name = ptr_to_u64(name);
		info->raw_tracepoint.tp_name_len = size;
		break;
	case BPF_LINK_TYPE_ITER:
		info->iter.target_name = ptr_to_u64(name);
		info->iter.target_name_len = size;
		break;
	case BPF_LINK_TYPE_UPROBE_MULTI:
		info->uprobe_multi.path = ptr_to_u64(name);
		info->uprobe_multi.path_size = size;
		break;
	case BPF_LINK_TYPE_PERF_EVENT:
		switch (perf_type) {
		case BPF_PERF_EVENT_UPROBE:
		case BPF_PERF_EVENT_URETPROBE:
			info->perf_event.uprobe.file_name = ptr_to_u64(name);
			info->perf_event.uprobe.name_len = size;
			break;
		case BPF_PERF_EVENT_KPROBE:
		case BPF_PERF_EVENT_KRETPROBE:
			info->perf_event.kprobe.func_name = ptr_to_u64(name);
			info->perf_event.kprobe.name_len = size;
			break;
		case BPF_PERF_EVENT_TRACEPOINT:
			info->perf_event.tracepoint.tp_name = ptr_to_u64(name);
			info->perf_event.tracepoint.name_len = size;
			break;
		default:
			break;
		}
		break;
	default:
		break;
	}
	return bpf_link_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

/* Fill @link from the link behind @fd, its attach target resolved */
int bpf_link_desc__fill(struct bpf_link_desc *link, int fd, struct bpf_resolver *res)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char name[PATH_MAX], ifname[IF_NAMESIZE];
	char *target = NULL;
	const char *path;
	int ret = 0;

	if (bpf_link_get_info_by_fd(fd, &info, &len))
		return -errno;

	link->info_known = true;
	link->id = info.id;
	link->prog_id = info.prog_id;
	link->type = info.type;
	link->attach_type = perf_bpf_link__attach_type(info.type,
						       perf_bpf_link_info__attach_type(&info));
	link->cgroup_id = 0;
	link->ifindex = 0;
	link->netns_ino = 0;
	link->target_obj_id = 0;
	link->target_btf_id = 0;
	link->map_id = 0;

	switch (info.type) {
	case BPF_LINK_TYPE_RAW_TRACEPOINT:
	case BPF_LINK_TYPE_ITER:
		if (bpf_link_info_name(fd, &info, name, sizeof(name)))
			name[0] = '\0';
		target = strdup(name);
		break;
	case BPF_LINK_TYPE_UPROBE_MULTI:
		if (bpf_link_info_name(fd, &info, name, sizeof(name)))
			name[0] = '\0';
		ret = asprintf(&target, "%s, %u probes", name, info.uprobe_multi.count);
		break;
	case BPF_LINK_TYPE_PERF_EVENT:
		if (bpf_link_info_name(fd, &info, name, sizeof(name)))
			name[0] = '\0';
		target = perf_event_target(&info, name);
		break;
	case BPF_LINK_TYPE_TRACING:
		link->target_obj_id = info.tracing.target_obj_id;
		link->target_btf_id = info.tracing.target_btf_id;
		target = bpf_resolver__tracing_target(res, info.prog_id,
						      info.tracing.target_obj_id,
						      info.tracing.target_btf_id);
		break;
	case BPF_LINK_TYPE_CGROUP:
		link->cgroup_id = info.cgroup.cgroup_id;
		path = bpf_resolver__cgroup(res, info.cgroup.cgroup_id);
		if (path)
			target = strdup(path);
		else
			ret = asprintf(&target, "cgroup id %" PRIu64, (u64)info.cgroup.cgroup_id);
		break;
	case BPF_LINK_TYPE_NETNS:
		link->netns_ino = info.netns.netns_ino;
		ret = asprintf(&target, "netns %u", info.netns.netns_ino);
		break;
	case BPF_LINK_TYPE_XDP:
	case BPF_LINK_TYPE_TCX:
	case BPF_LINK_TYPE_NETKIT:
		/* the three keep ifindex first */
		link->ifindex = info.xdp.ifindex;
		if (!link->ifindex)
			target = strdup("detached");
		else if (if_indextoname(link->ifindex, ifname))
			ret = asprintf(&target, "%s ifindex %u", ifname, link->ifindex);
		else
			ret = asprintf(&target, "ifindex %u", link->ifindex);
		break;
	case BPF_LINK_TYPE_KPROBE_MULTI:
		target = kprobe_multi_target(fd, info.kprobe_multi.count, res);
		break;
	case BPF_LINK_TYPE_STRUCT_OPS:
		link->map_id = info.struct_ops.map_id;
		ret = asprintf(&target, "map %u", link->map_id);
		break;
	case BPF_LINK_TYPE_SOCKMAP:
		link->map_id = info.sockmap.map_id;
		ret = asprintf(&target, "map %u", link->map_id);
		break;
	case BPF_LINK_TYPE_NETFILTER:
		ret = asprintf(&target, "pf %u hook %u priority %d", info.netfilter.pf,
			       info.netfilter.hooknum, info.netfilter.priority);
		break;
	default:
		target = strdup("");
		break;
	}
	if (ret < 0)
		target = NULL;
	free(link->target);
	link->target = target ?: strdup("");
	return link->target ? 0 : -ENOMEM;
}

/* Owners: the processes holding programs and links */

static void bpf_owners__add(struct hashmap *map, u32 id, pid_t pid, const char *comm)
{
	struct bpf_owners *owners;
	struct bpf_owner *v;

	if (!hashmap__find(map, id, &owners)) {
		owners = zalloc(sizeof(*owners));
		if (!owners || hashmap__add(map, id, owners)) {
			free(owners);
			return;
		}
	}
	if (owners->nr && owners->v[owners->nr - 1].pid == pid)
		return;
	v = realloc(owners->v, (owners->nr + 1) * sizeof(*v));
	if (!v)
		return;
	owners->v = v;
	v[owners->nr].pid = pid;
	snprintf(v[owners->nr].comm, sizeof(v->comm), "%s", comm);
	owners->nr++;
}

/* The number an fdinfo file gives after @key, 0 if none */
static u64 fdinfo_u64(int dirfd, const char *fd, const char *key)
{
	char line[256];
	u64 val = 0;
	FILE *fp;
	int ffd;

	ffd = openat(dirfd, fd, O_RDONLY);
	if (ffd < 0)
		return 0;
	fp = fdopen(ffd, "r");
	if (!fp) {
		close(ffd);
		return 0;
	}
	while (fgets(line, sizeof(line), fp)) {
		if (strstarts(line, key)) {
			val = strtoull(line + strlen(key), NULL, 10);
			break;
		}
	}
	fclose(fp);
	return val;
}

/* Process @pid, through the BPF fds /proc shows it holds */
void bpf_owner_maps__scan_pid(struct bpf_owner_maps *maps, pid_t pid)
{
	char path[64], link[64], comm[32];
	struct dirent *fd;
	DIR *fds;
	int info;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	fds = opendir(path);
	if (!fds)
		return;
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
	info = open(path, O_RDONLY | O_DIRECTORY);
	comm[0] = '\0';
	while (info >= 0 && (fd = readdir(fds)) != NULL) {
		struct hashmap *map;
		const char *key;
		u32 id;

		if (!fd_is(fds, fd->d_name, NULL, link, sizeof(link)))
			continue;
		if (!strcmp(link, "anon_inode:bpf-prog")) {
			map = maps->progs;
			key = "prog_id:";
		} else if (!strcmp(link, "anon_inode:bpf_link")) {
			map = maps->links;
			key = "link_id:";
		} else {
			continue;
		}
		id = fdinfo_u64(info, fd->d_name, key);
		if (!id)
			continue;
		if (!comm[0]) {
			char *s = NULL;
			size_t size;

			snprintf(path, sizeof(path), "%d/comm", pid);
			if (!procfs__read_str(path, &s, &size) && size)
				s[size - 1] = '\0';
			snprintf(comm, sizeof(comm), "%s", s ?: "");
			free(s);
		}
		bpf_owners__add(map, id, pid, comm);
	}
	if (info >= 0)
		close(info);
	closedir(fds);
}

/* Every process but this one */
void bpf_owner_maps__scan(struct bpf_owner_maps *maps)
{
	struct dirent *pd;
	DIR *proc;
	pid_t pid;

	proc = opendir("/proc");
	if (!proc)
		return;
	while ((pd = readdir(proc)) != NULL) {
		pid = strtol(pd->d_name, NULL, 10);
		if (pid > 0 && pid != getpid())
			bpf_owner_maps__scan_pid(maps, pid);
	}
	closedir(proc);
}

void bpf_owner_map__free(struct hashmap *map)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!map)
		return;
	hashmap__for_each_entry(map, cur, bkt) {
		struct bpf_owners *owners = cur->pvalue;

		free(owners->v);
		free(owners);
	}
	hashmap__free(map);
}

struct bpf_owners *bpf_owners__find(struct hashmap *map, u32 id)
{
	struct bpf_owners *owners = NULL;

	hashmap__find(map, id, &owners);
	return owners;
}

/* The memory of a map, as its fdinfo gives it (what bpftool shows as bytes_memlock) */
u64 perf_bpf__map_memlock(u32 id)
{
	char name[32];
	u64 memlock = 0;
	int fd, proc;

	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return 0;
	proc = open("/proc/self/fdinfo", O_RDONLY | O_DIRECTORY);
	if (proc >= 0) {
		snprintf(name, sizeof(name), "%d", fd);
		memlock = fdinfo_u64(proc, name, "memlock:");
		close(proc);
	}
	close(fd);
	return memlock;
}
