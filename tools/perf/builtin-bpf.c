// SPDX-License-Identifier: GPL-2.0
/*
 * perf bpf: the life of BPF programs and links, as the kernel reports it.
 *
 * perf bpf events streams the PERF_RECORD_BPF_EVENT records: programs
 * loaded and unloaded, links attached and detached.  It opens one dummy
 * software event per CPU asking for the BPF, KSYMBOL, COMM and task
 * side-band records, with time (CLOCK_MONOTONIC), CPU and pid/tid of the
 * task that caused each record.  Each CPU has its own ring, so records
 * are read in passes over all rings, queued in ordered_events and
 * delivered in time order once they are older than the start of the
 * pass by BPF_EVENTS_SLACK: a record stamped earlier than that has been
 * in its ring for that long unless its writer stalled between taking
 * the time and publishing the record.
 *
 * What a record does not carry (names, types, attach targets) is asked
 * of the kernel with BPF_OBJ_GET_INFO_BY_FD as soon as the record is read
 * from its ring, and kept until it is delivered.  By then the object may
 * be gone: the program name is then taken from the KSYMBOL record the
 * kernel writes just before the program record, and everything learned
 * (from those, from the objects there at start, from earlier records) is
 * kept until the object's unload or detach record, so that those and the
 * link records carry the names too.  Comms come from COMM and FORK
 * records, or from /proc for tasks that were there before.
 *
 * Looking an object up holds a reference to it for a moment: if its
 * owner lets it go meanwhile, the unload or detach happens when this
 * process lets go, and the kernel writes the record as this process's.
 *
 * perf bpf list shows the programs loaded now, with their links and
 * attach targets, the processes holding them (found as bpftool does,
 * through the fds they hold), run time and count when BPF stats are on,
 * and the memory of their maps.
 *
 * Looking BPF objects up by id needs CAP_SYS_ADMIN.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sched.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/time64.h>
#include <linux/zalloc.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <perf/mmap.h>
#include <subcmd/parse-options.h>
#include <symbol/kallsyms.h>
#include <api/fs/fs.h>

#include "builtin.h"
#include "util/bpf-event.h"
#include "util/bpf_counter.h"
#include "util/counts.h"
#include "util/cpumap.h"
#include "util/cap.h"
#include "util/debug.h"
#include "util/event.h"
#include "util/evlist.h"
#include "util/evsel.h"
#include "util/hashmap.h"
#include "util/intlist.h"
#include "util/machine.h"
#include "util/mmap.h"
#include "util/ordered-events.h"
#include "util/parse-events.h"
#include "util/pmu.h"
#include "util/pmus.h"
#include "util/strbuf.h"
#include "util/string2.h"
#include "util/target.h"
#include "util/term.h"
#ifdef HAVE_SLANG_SUPPORT
#include "ui/browser.h"
#include "ui/helpline.h"
#include "ui/keysyms.h"
#include "ui/ui.h"
#include <sys/ttydefaults.h>
#endif
#include "util/thread.h"

/* how long a record waits in the queue for older ones from other CPUs */
#define BPF_EVENTS_SLACK	(NSEC_PER_SEC / 2)
/* how often the rings are read, at most */
#define BPF_EVENTS_BATCH	(NSEC_PER_SEC / 20)
/* how long a link id may be allocated but not yet published, at most */
#define BPF_EAGAIN_TRIES	100

static volatile sig_atomic_t done;
static volatile sig_atomic_t workload_exec_errno;

/* Output: plain text, CSV (-x) or one JSON object a line (-j) */
enum bpf_format {
	BPF_FORMAT_TEXT,
	BPF_FORMAT_CSV,
	BPF_FORMAT_JSON,
};

struct bpf_out {
	FILE			*fp;
	enum bpf_format		format;
	const char		*sep;
	int			nfields;	/* on the current line */
};

struct bpf_prog_desc {
	u32			id;
	u32			type;		/* enum bpf_prog_type */
	bool			type_known;
	u8			tag[BPF_TAG_SIZE];
	char			*name;
	bool			wanted;		/* a record of it passed -p or a command's */
	bool			gone;		/* found gone: not to be asked for again */
};

struct bpf_link_desc {
	u32			id;
	u32			prog_id;
	u32			type;		/* enum bpf_link_type */
	u32			attach_type;	/* enum bpf_attach_type */
	char			*target;	/* what it is attached to, for people */
	bool			wanted;		/* a record of it passed -p or a command's */
	bool			gone;		/* read_links: gone when its record was read */
	bool			info_known;	/* the fields below are the kernel's */
	/* the numbers behind the target, for -j, by link type */
	u64			cgroup_id;
	u32			ifindex;
	u32			netns_ino;
	u32			target_obj_id;
	u32			target_btf_id;
	u32			map_id;
};

/* What turns ids into names: BTF objects, cgroup paths */
struct bpf_resolver {
	struct btf		*vmlinux;
	bool			vmlinux_tried;
	struct hashmap		*btfs;		/* object id -> struct bpf_kernel_btf * */
	struct hashmap		*cgroups;	/* cgroup id -> path, or NULL if none */
	char			cgroot[PATH_MAX];
	bool			cgroot_tried;
};

struct bpf_kernel_btf {
	struct btf		*btf;		/* NULL: not a kernel BTF */
	bool			own;		/* a module's, on top of vmlinux */
	char			name[64];
};

struct bpf_events {
	struct bpf_out		out;
	struct bpf_resolver	res;
	struct evlist		*evlist;
	struct ordered_events	oe;
	struct machine		machine;
	struct hashmap		*progs;		/* id -> struct bpf_prog_desc * */
	struct hashmap		*links;		/* id -> struct bpf_link_desc * */
	struct hashmap		*ksyms;		/* task -> struct bpf_ksyms * */
	/* what the kernel said when load and attach records were read */
	struct hashmap		*read_progs;	/* id -> struct bpf_prog_desc * */
	struct hashmap		*read_links;	/* id -> struct bpf_link_desc * */
	struct intlist		*pids;		/* -p: these processes only */
	struct intlist		*follow;	/* a workload and its descendants */
	const char		*pid_str;
	const char		*type_str;
	const char		*name_glob;
	const char		*output_name;
	double			duration;
	unsigned int		mmap_pages;
	bool			system_wide;
	bool			json;
	bool			show_progs;
	bool			show_links;
	u64			counts[PERF_BPF_EVENT_MAX + 1];	/* + unknown */
	u64			lost;
	u64			unparsed;	/* records perf could not parse */
	int			err;
};

static size_t id_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool id_equal(long a, long b, void *ctx __maybe_unused)
{
	return a == b;
}

/* A map keyed by id (or pid, tid), NULL if there is no memory */
static struct hashmap *id_map(void)
{
	struct hashmap *map = hashmap__new(id_hash, id_equal, NULL);

	return IS_ERR(map) ? NULL : map;
}

static u64 ptr_to_u64(const void *ptr)
{
	return (u64)(unsigned long)ptr;
}

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
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
static const char *attach_type_name(u32 attach_type, char *buf, size_t size)
{
	if (attach_type == PERF_BPF_ATTACH_TYPE_UNKNOWN)
		return NULL;
	return enum_name(libbpf_bpf_attach_type_str(attach_type), attach_type, buf, size);
}

static void tag_str(const u8 *tag, char *buf)
{
	int i;

	for (i = 0; i < BPF_TAG_SIZE; i++)
		sprintf(buf + 2 * i, "%02x", tag[i]);
}

/*
 * Output helpers.  A line is out_begin(), fields, out_end().  Text lines
 * are printed by their callers; CSV fields are quoted when they hold the
 * separator or a quote, JSON strings are escaped.
 */
static void out_begin(struct bpf_out *out)
{
	out->nfields = 0;
	if (out->format == BPF_FORMAT_JSON)
		fputc('{', out->fp);
}

static void out_end(struct bpf_out *out)
{
	if (out->format == BPF_FORMAT_JSON)
		fputc('}', out->fp);
	fputc('\n', out->fp);
}

static void out_key(struct bpf_out *out, const char *key)
{
	if (out->nfields++)
		fputs(out->format == BPF_FORMAT_JSON ? "," : out->sep, out->fp);
	if (out->format == BPF_FORMAT_JSON)
		fprintf(out->fp, "\"%s\":", key);
}

static void json_quote(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static void csv_quote(FILE *fp, const char *sep, const char *s)
{
	if (!strstr(s, sep) && !strpbrk(s, "\"\n")) {
		fputs(s, fp);
		return;
	}
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

static void out_str(struct bpf_out *out, const char *key, const char *val)
{
	out_key(out, key);
	if (out->format == BPF_FORMAT_JSON)
		json_quote(out->fp, val);
	else
		csv_quote(out->fp, out->sep, val);
}

static void out_u64(struct bpf_out *out, const char *key, u64 val)
{
	out_key(out, key);
	fprintf(out->fp, "%" PRIu64, val);
}

/* A field only some lines have: left out of JSON, empty in CSV */
static void out_none(struct bpf_out *out, const char *key)
{
	if (out->format == BPF_FORMAT_CSV)
		out_key(out, key);
}

static void out_header(struct bpf_out *out, const char * const *keys)
{
	if (out->format != BPF_FORMAT_CSV)
		return;
	out_begin(out);
	for (; *keys; keys++)
		out_str(out, *keys, *keys);
	out_end(out);
}

/* Program descriptions */

static void bpf_prog_desc__delete(struct bpf_prog_desc *prog)
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
static char *bpf_prog_full_name(int fd, const struct bpf_prog_info *info)
{
	struct bpf_prog_info finfo = {};
	struct bpf_func_info func = {};
	__u32 len = sizeof(finfo);
	const struct btf_type *t;
	char *name = NULL;
	struct btf *btf;

	if (strlen(info->name) < BPF_OBJ_NAME_LEN - 1 || !info->btf_id || !info->nr_func_info)
		return strdup(info->name);

	finfo.nr_func_info = 1;
	finfo.func_info_rec_size = sizeof(func);
	finfo.func_info = ptr_to_u64(&func);
	if (bpf_prog_get_info_by_fd(fd, &finfo, &len))
		return strdup(info->name);

	btf = btf__load_from_kernel_by_id(info->btf_id);
	if (!btf)
		return strdup(info->name);
	t = btf__type_by_id(btf, func.type_id);
	if (t)
		name = strdup(btf__name_by_offset(btf, t->name_off));
	btf__free(btf);
	return name ?: strdup(info->name);
}

/*
 * Fill @prog from the program behind @fd.  @ksym_name, if known, is the
 * name of the program's KSYMBOL record: the whole name, which saves
 * reading BTF when bpf_prog_info's is cut.
 */
static int bpf_prog_desc__fill(struct bpf_prog_desc *prog, int fd, const char *ksym_name)
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
	memcpy(prog->tag, info.tag, BPF_TAG_SIZE);
	return 0;
}

/* A BPF object's fd by id; a link id allocated but not published yet gives EAGAIN */
static int bpf_fd_by_id(int (*get_fd)(__u32 id), u32 id)
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

/* nftw() takes no argument for its callback: the walk in progress */
static struct bpf_resolver *cgroup_walk_res;
static size_t cgroup_walk_skip;

static int cgroup_walk_one(const char *path, const struct stat *st, int flag,
			   struct FTW *ftw __maybe_unused)
{
	const char *rel = path + cgroup_walk_skip;
	char *copy, *old = NULL;

	if (flag != FTW_D)
		return 0;
	copy = strdup(*rel ? rel : "/");
	if (!copy)
		return -1;
	/* on cgroup2 a cgroup's id is its directory's inode number */
	if (hashmap__set(cgroup_walk_res->cgroups, st->st_ino, copy, NULL, &old)) {
		free(copy);
		return -1;
	}
	free(old);
	return 0;
}

/* The path of cgroup @id under the cgroup2 mount, NULL if none */
static const char *bpf_resolver__cgroup(struct bpf_resolver *res, u64 id)
{
	const char *root = bpf_resolver__cgroot(res);
	char *path = NULL;

	if (!root || id != (unsigned long)id)
		return NULL;
	if (hashmap__find(res->cgroups, id, &path))
		return path;

	cgroup_walk_res = res;
	cgroup_walk_skip = strlen(root);
	nftw(root, cgroup_walk_one, 16, FTW_PHYS | FTW_MOUNT);
	if (hashmap__find(res->cgroups, id, &path))
		return path;
	/* ids are never reused: remember that this one is gone */
	hashmap__add(res->cgroups, id, NULL);
	return NULL;
}

static int bpf_resolver__init(struct bpf_resolver *res)
{
	memset(res, 0, sizeof(*res));
	res->btfs = id_map();
	res->cgroups = id_map();
	return res->btfs && res->cgroups ? 0 : -ENOMEM;
}

static void bpf_resolver__exit(struct bpf_resolver *res)
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
}

/* Link descriptions */

static void bpf_link_desc__delete(struct bpf_link_desc *link)
{
	if (link) {
		free(link->target);
		free(link);
	}
}

struct ksym_lookup {
	const u64	*addrs;
	char		**names;
	u32		nr;
};

static int ksym_lookup_one(void *arg, const char *name, char type __maybe_unused, u64 start)
{
	struct ksym_lookup *look = arg;
	u32 i;

	for (i = 0; i < look->nr; i++) {
		if (look->addrs[i] == start && !look->names[i])
			look->names[i] = strdup(name);
	}
	return 0;
}

/* "f1,f2,..." for the first functions of a kprobe_multi link */
static char *kprobe_multi_target(int fd, u32 count)
{
	u64 addrs[8] = {};
	char *names[8] = {};
	struct ksym_lookup look = { .addrs = addrs, .names = names };
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char buf[512] = "";
	size_t pos = 0;
	u32 i;

	look.nr = min_t(u32, count, ARRAY_SIZE(addrs));
	info.kprobe_multi.addrs = ptr_to_u64(addrs);
	info.kprobe_multi.count = look.nr;
	/* ENOSPC: more functions than asked for, the first ones are there */
	if (bpf_link_get_info_by_fd(fd, &info, &len) && errno != ENOSPC)
		return NULL;
	kallsyms__parse("/proc/kallsyms", &look, ksym_lookup_one);
	for (i = 0; i < look.nr; i++) {
		const char *sep = i ? "," : "";

		if (names[i])
			pos += scnprintf(buf + pos, sizeof(buf) - pos, "%s%s", sep, names[i]);
		else
			pos += scnprintf(buf + pos, sizeof(buf) - pos, "%s%#" PRIx64,
					 sep, addrs[i]);
		free(names[i]);
	}
	if (count > look.nr)
		scnprintf(buf + pos, sizeof(buf) - pos, ",... (%u functions)", count);
	return strdup(buf);
}

static char *perf_event_target(const struct bpf_link_info *info, const char *name)
{
	const char *kind, *event = NULL;
	struct perf_pmu *pmu;
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
		if (info->perf_event.event.type == PERF_TYPE_SOFTWARE &&
		    info->perf_event.event.config < PERF_COUNT_SW_MAX)
			event = evsel__sw_names[info->perf_event.event.config];
		else if (info->perf_event.event.type == PERF_TYPE_HARDWARE &&
			 info->perf_event.event.config < PERF_COUNT_HW_MAX)
			event = evsel__hw_names[info->perf_event.event.config];
		pmu = perf_pmus__find_by_type(info->perf_event.event.type);
		if (event)
			ret = asprintf(&target, "event %s", event);
		else if (pmu)
			/* as perf stat -e takes it */
			ret = asprintf(&target, "event %s/config=%#" PRIx64 "/", pmu->name,
				       (u64)info->perf_event.event.config);
		else
			ret = asprintf(&target, "event type %u config %#" PRIx64,
				       info->perf_event.event.type,
				       (u64)info->perf_event.event.config);
		break;
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
static int bpf_link_desc__fill(struct bpf_link_desc *link, int fd, struct bpf_resolver *res)
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
						       bpf_link_info__attach_type(&info));
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
		target = kprobe_multi_target(fd, info.kprobe_multi.count);
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

/* The link's fields, shared by perf bpf events and perf bpf list */
static void out_link_fields(struct bpf_out *out, const struct bpf_link_desc *link,
			    u32 attach_type)
{
	char buf[16];

	out_u64(out, "link_id", link->id);
	out_str(out, "link_type", enum_name(libbpf_bpf_link_type_str(link->type),
					    link->type, buf, sizeof(buf)));
	out_str(out, "attach_type", attach_type_name(attach_type, buf, sizeof(buf)) ?: "");
	out_str(out, "target", link->target ?: "");
	/* the numbers behind a target, when it is known */
	if (out->format != BPF_FORMAT_JSON || !link->target)
		return;
	switch (link->type) {
	case BPF_LINK_TYPE_CGROUP:
		out_u64(out, "cgroup_id", link->cgroup_id);
		break;
	case BPF_LINK_TYPE_XDP:
	case BPF_LINK_TYPE_TCX:
	case BPF_LINK_TYPE_NETKIT:
		out_u64(out, "ifindex", link->ifindex);
		break;
	case BPF_LINK_TYPE_NETNS:
		out_u64(out, "netns_ino", link->netns_ino);
		break;
	case BPF_LINK_TYPE_TRACING:
		out_u64(out, "target_obj_id", link->target_obj_id);
		out_u64(out, "target_btf_id", link->target_btf_id);
		break;
	case BPF_LINK_TYPE_STRUCT_OPS:
	case BPF_LINK_TYPE_SOCKMAP:
		out_u64(out, "map_id", link->map_id);
		break;
	default:
		break;
	}
}

static void out_prog_fields(struct bpf_out *out, const struct bpf_prog_desc *prog)
{
	char tag[2 * BPF_TAG_SIZE + 1], buf[16];

	out_u64(out, "prog_id", prog->id);
	out_str(out, "prog_name", prog->name ?: "");
	if (prog->type_known)
		out_str(out, "prog_type", enum_name(libbpf_bpf_prog_type_str(prog->type),
						    prog->type, buf, sizeof(buf)));
	else
		out_str(out, "prog_type", "");
	tag_str(prog->tag, tag);
	out_str(out, "prog_tag", tag);
}

/* perf bpf events */

static struct bpf_prog_desc *bpf_events__prog(struct bpf_events *ev, u32 id)
{
	struct bpf_prog_desc *prog;

	if (hashmap__find(ev->progs, id, &prog))
		return prog;
	prog = zalloc(sizeof(*prog));
	if (!prog)
		return NULL;
	prog->id = id;
	if (hashmap__add(ev->progs, id, prog)) {
		free(prog);
		return NULL;
	}
	return prog;
}

static void bpf_events__forget_prog(struct bpf_events *ev, u32 id)
{
	struct bpf_prog_desc *prog = NULL;

	hashmap__delete(ev->progs, id, NULL, &prog);
	bpf_prog_desc__delete(prog);
	/* and what a link record read of it, if it was not delivered */
	prog = NULL;
	hashmap__delete(ev->read_progs, id, NULL, &prog);
	bpf_prog_desc__delete(prog);
}

static struct bpf_link_desc *bpf_events__link(struct bpf_events *ev, u32 id)
{
	struct bpf_link_desc *link;

	if (hashmap__find(ev->links, id, &link))
		return link;
	link = zalloc(sizeof(*link));
	if (!link)
		return NULL;
	link->id = id;
	if (hashmap__add(ev->links, id, link)) {
		free(link);
		return NULL;
	}
	return link;
}

static void bpf_events__forget_link(struct bpf_events *ev, u32 id)
{
	struct bpf_link_desc *link = NULL;

	hashmap__delete(ev->links, id, NULL, &link);
	bpf_link_desc__delete(link);
}

/* Learn about a program from the kernel, if it is still there; 0 or -errno */
static int bpf_events__learn_prog(struct bpf_prog_desc *prog, const char *ksym_name)
{
	int fd = bpf_prog_get_fd_by_id(prog->id);
	int err;

	if (fd < 0)
		return -errno;
	err = bpf_prog_desc__fill(prog, fd, ksym_name);
	close(fd);
	if (err)
		pr_debug("perf bpf: program %u: %s\n", prog->id, strerror(-err));
	return err;
}

static int bpf_events__learn_link(struct bpf_events *ev, struct bpf_link_desc *link)
{
	int fd = bpf_fd_by_id(bpf_link_get_fd_by_id, link->id);
	int err;

	if (fd < 0)
		return -errno;
	err = bpf_link_desc__fill(link, fd, &ev->res);
	close(fd);
	if (err)
		pr_debug("perf bpf: link %u: %s\n", link->id, strerror(-err));
	return err;
}

/* What is loaded and attached at start, so that its unload and detach have names */
static void bpf_events__snapshot(struct bpf_events *ev)
{
	struct bpf_prog_desc *prog;
	struct bpf_link_desc *link;
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		prog = bpf_events__prog(ev, id);
		if (prog && bpf_events__learn_prog(prog, NULL))
			bpf_events__forget_prog(ev, id);
	}
	id = 0;
	while (ev->show_links && !bpf_link_get_next_id(id, &id)) {
		link = bpf_events__link(ev, id);
		if (link && bpf_events__learn_link(ev, link))
			bpf_events__forget_link(ev, id);
	}
}

/* The comm of the task that caused a record */
static const char *bpf_events__comm(struct bpf_events *ev, struct perf_sample *sample,
				    char *buf, size_t size)
{
	struct thread *thread;

	if (sample->pid == 0 && sample->tid == 0)
		return "swapper";
	thread = machine__findnew_thread(&ev->machine, sample->pid, sample->tid);
	if (!thread)
		return "";
	if (!thread__comm_set(thread))
		thread__set_comm_from_proc(thread);
	snprintf(buf, size, "%s", thread__comm_str(thread));
	thread__put(thread);
	return buf;
}

/*
 * Whether a record passes -p, or a command's filter.  The last reference
 * to a program or link is often dropped by another task than its owner's:
 * a kworker or an RCU callback, whoever removes its device or netns, or
 * this process, which holds one for a moment when it looks the object up.
 * The kernel writes the unload or detach record as that task's.  Such a
 * record (@end) passes if the object's earlier ones did.
 */
static bool bpf_events__wanted_task(struct bpf_events *ev, struct perf_sample *sample,
				    bool *wanted, bool end)
{
	bool match;

	if (ev->pids)
		match = intlist__has_entry(ev->pids, sample->pid);
	else if (ev->follow)
		match = intlist__has_entry(ev->follow, sample->pid);
	else
		return true;
	if (match)
		*wanted = true;
	return match || (end && *wanted);
}

static void bpf_events__print_start(struct bpf_events *ev, struct perf_sample *sample,
				    const char *event)
{
	struct bpf_out *out = &ev->out;
	char comm[64];

	bpf_events__comm(ev, sample, comm, sizeof(comm));
	if (out->format == BPF_FORMAT_TEXT) {
		fprintf(out->fp, "%6" PRIu64 ".%06" PRIu64 " [%03u] %16s %6d/%-6d %-12s",
			sample->time / NSEC_PER_SEC, (sample->time % NSEC_PER_SEC) / NSEC_PER_USEC,
			sample->cpu, comm, sample->pid, sample->tid, event);
		return;
	}
	out_begin(out);
	out_key(out, "time");
	fprintf(out->fp, "%" PRIu64 ".%09" PRIu64, sample->time / NSEC_PER_SEC,
		sample->time % NSEC_PER_SEC);
	out_u64(out, "cpu", sample->cpu);
	out_u64(out, "pid", sample->pid);
	out_u64(out, "tid", sample->tid);
	out_str(out, "comm", comm);
	out_str(out, "event", event);
}

static const char * const bpf_events_columns[] = {
	"time", "cpu", "pid", "tid", "comm", "event",
	"prog_id", "prog_name", "prog_type", "prog_tag",
	"link_id", "link_type", "attach_type", "target",
	"run_cnt", "run_time_ns", "recursion_misses",
	"gone", "lost", NULL,
};

/*
 * The counts a prog_unload record carries on a kernel that writes them;
 * run_cnt and run_time_ns only if BPF stats were on at some time.
 */
static void bpf_events__print_stats(struct bpf_out *out,
				    const struct perf_record_bpf_stats_event *stats)
{
	bool on = stats && (stats->bpf.flags & PERF_BPF_EVENT_FLAG_STATS_ON);

	if (out->format == BPF_FORMAT_TEXT) {
		if (!stats)
			return;
		if (on)
			fprintf(out->fp, "  run_cnt %" PRIu64 " run_time_ns %" PRIu64,
				(u64)stats->run_cnt, (u64)stats->run_time_ns);
		else
			fprintf(out->fp, "  run_cnt - run_time_ns -");
		fprintf(out->fp, " recursion_misses %" PRIu64, (u64)stats->recursion_misses);
		return;
	}
	if (on) {
		out_u64(out, "run_cnt", stats->run_cnt);
		out_u64(out, "run_time_ns", stats->run_time_ns);
	} else {
		out_none(out, "run_cnt");
		out_none(out, "run_time_ns");
	}
	if (stats)
		out_u64(out, "recursion_misses", stats->recursion_misses);
	else
		out_none(out, "recursion_misses");
}

static void bpf_events__print(struct bpf_events *ev, struct perf_sample *sample,
			      const char *event, const struct bpf_prog_desc *prog,
			      const struct bpf_link_desc *link, u32 attach_type,
			      const struct perf_record_bpf_stats_event *stats, bool gone)
{
	struct bpf_out *out = &ev->out;
	char tag[2 * BPF_TAG_SIZE + 1], buf[2][16];

	bpf_events__print_start(ev, sample, event);
	if (out->format == BPF_FORMAT_TEXT) {
		tag_str(prog->tag, tag);
		fprintf(out->fp, " prog %u %s %s tag %s", prog->id,
			prog->name && *prog->name ? prog->name : "-",
			prog->type_known ? enum_name(libbpf_bpf_prog_type_str(prog->type),
						     prog->type, buf[0], sizeof(buf[0])) : "-",
			tag);
		if (link) {
			fprintf(out->fp, "  link %u %s %s %s", link->id,
				enum_name(libbpf_bpf_link_type_str(link->type), link->type,
					  buf[0], sizeof(buf[0])),
				attach_type_name(attach_type, buf[1], sizeof(buf[1])) ?: "-",
				link->target && *link->target ? link->target : "-");
		}
		bpf_events__print_stats(out, stats);
		fprintf(out->fp, "%s\n", gone ? " (gone)" : "");
		return;
	}
	out_prog_fields(out, prog);
	if (link) {
		out_link_fields(out, link, attach_type);
	} else {
		out_none(out, "link_id");
		out_none(out, "link_type");
		out_none(out, "attach_type");
		out_none(out, "target");
	}
	bpf_events__print_stats(out, stats);
	if (out->format == BPF_FORMAT_JSON) {
		out_key(out, "gone");
		fputs(gone ? "true" : "false", out->fp);
	} else {
		out_u64(out, "gone", gone);
		out_none(out, "lost");
	}
	out_end(out);
}

static bool bpf_events__wanted_prog(struct bpf_events *ev, const struct bpf_prog_desc *prog)
{
	return !ev->name_glob || !fnmatch(ev->name_glob, prog->name ?: "", 0);
}

/*
 * The kernel writes a PERF_RECORD_KSYMBOL named bpf_prog_<tag>[_<name>]
 * for each function of a program, the program's own first, then one per
 * subprogram (each with a tag of its own), just before its load and its
 * unload record, as the same task.  Keep the ksymbols of each task (of
 * the CPU for interrupts, where the task is 0) until its next BPF record,
 * which takes the name of the one with its tag.
 */
#define BPF_KSYM_TAG_OFF	(sizeof("bpf_prog_") - 1)
#define BPF_KSYM_PREFIX_LEN	(BPF_KSYM_TAG_OFF + 2 * BPF_TAG_SIZE)
#define BPF_KSYMS_MAX		(64 * KSYM_NAME_LEN)

struct bpf_ksyms {
	char			*names;		/* one after another, each with its '\0' */
	size_t			len;
};

static void bpf_ksyms__delete(struct bpf_ksyms *ks)
{
	if (ks) {
		free(ks->names);
		free(ks);
	}
}

static void bpf_events__forget_ksyms(struct bpf_events *ev)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;

	hashmap__for_each_entry_safe(ev->ksyms, cur, tmp, bkt) {
		bpf_ksyms__delete(cur->pvalue);
		hashmap__delete(ev->ksyms, cur->key, NULL, NULL);
	}
}

static long bpf_events__ksym_key(const struct perf_sample *sample)
{
	return sample->tid ? (long)sample->tid : -1L - sample->cpu;
}

/* The program name of the ksymbol with tag @tag this task wrote, if any */
static char *bpf_events__take_ksym(struct bpf_events *ev, const struct perf_sample *sample,
				   const u8 *tag)
{
	struct bpf_ksyms *ks = NULL;
	char hex[2 * BPF_TAG_SIZE + 1], *name = NULL;
	const char *ksym;
	size_t off;

	if (!hashmap__delete(ev->ksyms, bpf_events__ksym_key(sample), NULL, &ks))
		return NULL;
	tag_str(tag, hex);
	for (off = 0; off < ks->len; off += strlen(ksym) + 1) {
		ksym = ks->names + off;
		if (strncmp(ksym + BPF_KSYM_TAG_OFF, hex, 2 * BPF_TAG_SIZE))
			continue;
		ksym += BPF_KSYM_PREFIX_LEN;
		name = strdup(*ksym == '_' ? ksym + 1 : ksym);
		break;
	}
	bpf_ksyms__delete(ks);
	return name;
}

static void bpf_events__ksymbol(struct bpf_events *ev, union perf_event *event,
				struct perf_sample *sample)
{
	const char *name = event->ksymbol.name;
	long key = bpf_events__ksym_key(sample);
	struct bpf_ksyms *ks;
	size_t len;
	char *more;

	/* bpf_prog_<tag>[_<name>]: programs, not trampolines */
	if (event->ksymbol.ksym_type != PERF_RECORD_KSYMBOL_TYPE_BPF ||
	    !strstarts(name, "bpf_prog_") || strlen(name) < BPF_KSYM_PREFIX_LEN)
		return;
	if (!hashmap__find(ev->ksyms, key, &ks)) {
		ks = zalloc(sizeof(*ks));
		if (!ks || hashmap__add(ev->ksyms, key, ks)) {
			free(ks);
			return;
		}
	}
	len = strlen(name) + 1;
	if (ks->len + len > BPF_KSYMS_MAX)
		return;
	more = realloc(ks->names, ks->len + len);
	if (!more)
		return;
	memcpy(more + ks->len, name, len);
	ks->names = more;
	ks->len += len;
}

/*
 * Take what the kernel said of program @prog when a record of it was
 * read: false if it was not asked; *@gone, if @gone is given, whether the
 * program was gone then (ids are not reused: no need to ask again).
 */
static bool bpf_events__take_read_prog(struct bpf_events *ev, struct bpf_prog_desc *prog,
				       char **ksym, bool *gone)
{
	struct bpf_prog_desc *seen;
	char *full = NULL;

	if (!hashmap__delete(ev->read_progs, prog->id, NULL, &seen))
		return false;
	if (gone)
		*gone = seen->gone;
	if (seen->gone) {
		prog->gone = true;
		bpf_prog_desc__delete(seen);
		return true;
	}
	/* a name bpf_prog_info cut: the whole one, if a KSYMBOL record told it */
	if (strlen(seen->name) == BPF_OBJ_NAME_LEN - 1) {
		if (ksym && *ksym && strstarts(*ksym, seen->name)) {
			full = *ksym;
			*ksym = NULL;
		} else if (prog->name && strstarts(prog->name, seen->name)) {
			full = prog->name;
			prog->name = NULL;
		}
	}
	seen->wanted = prog->wanted;
	free(prog->name);
	*prog = *seen;
	free(seen);
	if (full) {
		free(prog->name);
		prog->name = full;
	}
	return true;
}

/*
 * The counts of a prog_unload record from a kernel that adds them (to
 * listeners with attr.bpf_event_ext); NULL for other records.  The size
 * counts the sample_id too.
 */
static const struct perf_record_bpf_stats_event *
bpf_events__stats(struct bpf_events *ev, union perf_event *event)
{
	if (event->bpf.type != PERF_BPF_EVENT_PROG_UNLOAD ||
	    !(event->bpf.flags & PERF_BPF_EVENT_FLAG_RUN_STATS) ||
	    event->header.size < PERF_RECORD_BPF_STATS_SIZE + evlist__id_hdr_size(ev->evlist))
		return NULL;
	return &event->bpf_stats;
}

static void bpf_events__prog_record(struct bpf_events *ev, union perf_event *event,
				    struct perf_sample *sample, bool load)
{
	struct perf_record_bpf_event *bpf = &event->bpf;
	struct bpf_prog_desc *prog, gone_prog = { .id = bpf->id };
	char *ksym = bpf_events__take_ksym(ev, sample, bpf->tag);
	bool gone = false, task;
	int err;

	prog = bpf_events__prog(ev, bpf->id);
	if (!prog)
		prog = &gone_prog;
	task = bpf_events__wanted_task(ev, sample, &prog->wanted, !load);
	if (prog == &gone_prog) {
		/* no memory to keep it */
	} else if (load && bpf_events__take_read_prog(ev, prog, &ksym, &gone) && !gone) {
		/* what the kernel said when the record was read */
	} else if (load && (gone || !task || !ev->show_progs)) {
		/*
		 * Gone when its record was read, or not shown: no look-up,
		 * which would hold the program for a moment (see
		 * bpf_events__read_record()).  A link record that shows it
		 * later looks it up then, unless it is gone.
		 */
		prog->type_known = false;
		zfree(&prog->name);
	} else if (load) {
		err = bpf_events__learn_prog(prog, ksym);
		gone = err == -ENOENT;
		prog->gone = gone;
		/* a new program behind an id we knew: forget the old one's type */
		if (err)
			prog->type_known = false;
	}
	memcpy(prog->tag, bpf->tag, BPF_TAG_SIZE);
	if (ksym && (gone || !prog->name || !*prog->name)) {
		free(prog->name);
		prog->name = ksym;
		ksym = NULL;
	}
	free(ksym);

	if (ev->show_progs && task && bpf_events__wanted_prog(ev, prog)) {
		ev->counts[bpf->type]++;
		bpf_events__print(ev, sample, perf_bpf_event__name(bpf->type), prog, NULL, 0,
				  bpf_events__stats(ev, event), gone);
	}
	if (prog == &gone_prog)
		free(gone_prog.name);
	else if (!load)
		bpf_events__forget_prog(ev, bpf->id);
}

/* The kinds of link whose records carry their own attach type */
static bool bpf_link__record_exact(u32 link_type)
{
	switch (link_type) {
	case BPF_LINK_TYPE_TRACING:
	case BPF_LINK_TYPE_ITER:
	case BPF_LINK_TYPE_KPROBE_MULTI:
	case BPF_LINK_TYPE_UPROBE_MULTI:
	case BPF_LINK_TYPE_NETFILTER:
		return true;
	default:
		return false;
	}
}

static void bpf_events__link_record(struct bpf_events *ev, union perf_event *event,
				    struct perf_sample *sample, bool attach)
{
	struct perf_record_bpf_link_event *bpf = &event->bpf_link;
	struct bpf_prog_desc *prog, no_prog = { .id = bpf->bpf.id };
	struct bpf_link_desc *link, *seen, no_link = { .id = bpf->link_id };
	bool known, gone = false, shown;
	u32 attach_type;
	int err;

	known = hashmap__find(ev->links, bpf->link_id, NULL);
	link = bpf_events__link(ev, bpf->link_id);
	if (!link)
		link = &no_link;
	/* whether it can be shown, as far as the record tells */
	shown = ev->show_links && bpf_events__wanted_task(ev, sample, &link->wanted, !attach);

	prog = bpf_events__prog(ev, bpf->bpf.id);
	if (!prog)
		prog = &no_prog;
	/* unless known, not to be had, not needed, or told when the record was read */
	if (prog != &no_prog && !prog->type_known && !prog->gone && prog->id && shown &&
	    !bpf_events__take_read_prog(ev, prog, NULL, NULL)) {
		err = bpf_events__learn_prog(prog, NULL);
		prog->gone = err == -ENOENT;
		if (err && !prog->name)
			prog->name = strdup("");
	}
	memcpy(prog->tag, bpf->bpf.tag, BPF_TAG_SIZE);
	shown = shown && bpf_events__wanted_prog(ev, prog);

	/* a detach record shows the target the link had: learn it now only if new */
	if (attach && hashmap__delete(ev->read_links, bpf->link_id, NULL, &seen)) {
		gone = seen->gone;
		seen->wanted = link->wanted;
		free(link->target);
		*link = *seen;
		free(seen);
	} else if (!shown) {
		/* not shown: no look-up, which would hold the link for a moment */
	} else if (attach || !known) {
		err = bpf_events__learn_link(ev, link);
		gone = attach && err == -ENOENT;
		if (err) {
			free(link->target);
			link->target = NULL;
			link->info_known = false;
		}
	}
	/*
	 * The record's attach type is the link's where the kernel makes it
	 * the program's; for the others, the link's own when the kernel told
	 * it.  kprobe_multi links: only the record tells a session.
	 */
	attach_type = perf_bpf_link__attach_type(bpf->link_type, bpf->attach_type);
	if (link->info_known && !bpf_link__record_exact(bpf->link_type))
		attach_type = link->attach_type;
	/* what the record says, whatever the kernel says now */
	link->prog_id = bpf->bpf.id;
	link->type = bpf->link_type;

	if (shown) {
		ev->counts[bpf->bpf.type]++;
		bpf_events__print(ev, sample, perf_bpf_event__name(bpf->bpf.type), prog, link,
				  attach_type, NULL, gone);
	}
	if (link == &no_link)
		free(no_link.target);
	else if (!attach)
		bpf_events__forget_link(ev, bpf->link_id);
}

/* A record of a type newer than this perf, or a link record without the link fields */
static void bpf_events__unknown_record(struct bpf_events *ev, union perf_event *event,
				       struct perf_sample *sample)
{
	struct bpf_out *out = &ev->out;
	char tag[2 * BPF_TAG_SIZE + 1];

	ev->counts[PERF_BPF_EVENT_MAX]++;
	bpf_events__print_start(ev, sample, "unknown");
	tag_str(event->bpf.tag, tag);
	if (out->format == BPF_FORMAT_TEXT) {
		fprintf(out->fp, " type %u flags %#x id %u tag %s size %u\n", event->bpf.type,
			event->bpf.flags, event->bpf.id, tag, event->header.size);
		return;
	}
	out_u64(out, "prog_id", event->bpf.id);
	if (out->format == BPF_FORMAT_JSON) {
		out_str(out, "prog_name", "");
		out_str(out, "prog_type", "");
		out_str(out, "prog_tag", tag);
		out_u64(out, "bpf_event_type", event->bpf.type);
	} else {
		out_none(out, "prog_name");
		out_none(out, "prog_type");
		out_str(out, "prog_tag", tag);
		out_none(out, "link_id");
		out_none(out, "link_type");
		out_none(out, "attach_type");
		out_none(out, "target");
		out_none(out, "run_cnt");
		out_none(out, "run_time_ns");
		out_none(out, "recursion_misses");
		out_none(out, "gone");
		out_none(out, "lost");
	}
	out_end(out);
}

/* Whether a link record holds the link fields: its size counts the sample_id too */
static bool bpf_events__has_link_fields(struct bpf_events *ev, union perf_event *event)
{
	return event->header.size >= PERF_RECORD_BPF_LINK_SIZE +
				      evlist__id_hdr_size(ev->evlist);
}

static void bpf_events__bpf_record(struct bpf_events *ev, union perf_event *event,
				   struct perf_sample *sample)
{
	switch (event->bpf.type) {
	case PERF_BPF_EVENT_PROG_LOAD:
	case PERF_BPF_EVENT_PROG_UNLOAD:
		bpf_events__prog_record(ev, event, sample,
					event->bpf.type == PERF_BPF_EVENT_PROG_LOAD);
		break;
	case PERF_BPF_EVENT_LINK_ATTACH:
	case PERF_BPF_EVENT_LINK_DETACH:
		if (bpf_events__has_link_fields(ev, event)) {
			bpf_events__link_record(ev, event, sample,
						event->bpf.type == PERF_BPF_EVENT_LINK_ATTACH);
			break;
		}
		fallthrough;
	default:
		/* from a kernel newer than this perf */
		bpf_events__unknown_record(ev, event, sample);
		break;
	}
}

static void bpf_events__lost(struct bpf_events *ev, union perf_event *event,
			     struct perf_sample *sample)
{
	struct bpf_out *out = &ev->out;

	ev->lost += event->lost.lost;
	/* the program records of ksymbols kept may be among those lost */
	bpf_events__forget_ksyms(ev);
	if (out->format == BPF_FORMAT_TEXT) {
		fprintf(out->fp, "%6" PRIu64 ".%06" PRIu64 " [%03u] LOST %" PRIu64 " records\n",
			sample->time / NSEC_PER_SEC, (sample->time % NSEC_PER_SEC) / NSEC_PER_USEC,
			sample->cpu, (u64)event->lost.lost);
		return;
	}
	out_begin(out);
	out_key(out, "time");
	fprintf(out->fp, "%" PRIu64 ".%09" PRIu64, sample->time / NSEC_PER_SEC,
		sample->time % NSEC_PER_SEC);
	out_u64(out, "cpu", sample->cpu);
	if (out->format == BPF_FORMAT_CSV) {
		int i;

		out_none(out, "pid");
		out_none(out, "tid");
		out_none(out, "comm");
		out_str(out, "event", "lost");
		/* prog_id to gone: empty */
		for (i = 6; bpf_events_columns[i + 1]; i++)
			out_none(out, bpf_events_columns[i]);
	} else {
		out_str(out, "event", "lost");
	}
	out_u64(out, "lost", event->lost.lost);
	out_end(out);
}

/* Follow a workload's descendants: a child of a followed process is followed */
static void bpf_events__task(struct bpf_events *ev, union perf_event *event,
			     struct perf_sample *sample)
{
	struct thread *parent;

	if (event->header.type == PERF_RECORD_FORK) {
		if (ev->follow && event->fork.pid != event->fork.ppid &&
		    intlist__has_entry(ev->follow, event->fork.ppid))
			intlist__add(ev->follow, event->fork.pid);
		/* the child inherits the parent's comm: know it first */
		parent = machine__findnew_thread(&ev->machine, event->fork.ppid,
						 event->fork.ptid);
		if (parent && !thread__comm_set(parent))
			thread__set_comm_from_proc(parent);
		thread__put(parent);
		machine__process_fork_event(&ev->machine, event, sample);
		return;
	}
	if (ev->follow && event->fork.pid == event->fork.tid) {
		struct int_node *node = intlist__find(ev->follow, event->fork.pid);

		if (node)
			intlist__remove(ev->follow, node);
	}
	machine__process_exit_event(&ev->machine, event, sample);
}

static int bpf_events__deliver(struct ordered_events *oe, struct ordered_event *qe)
{
	struct bpf_events *ev = oe->data;
	union perf_event *event = qe->event;
	struct perf_sample sample;

	if (evlist__parse_sample(ev->evlist, event, &sample)) {
		pr_debug("perf bpf: cannot parse a record of type %u\n", event->header.type);
		ev->unparsed++;
		return 0;
	}
	switch (event->header.type) {
	case PERF_RECORD_BPF_EVENT:
		bpf_events__bpf_record(ev, event, &sample);
		break;
	case PERF_RECORD_KSYMBOL:
		bpf_events__ksymbol(ev, event, &sample);
		break;
	case PERF_RECORD_COMM:
		machine__process_comm_event(&ev->machine, event, &sample);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		bpf_events__task(ev, event, &sample);
		break;
	case PERF_RECORD_LOST:
		bpf_events__lost(ev, event, &sample);
		break;
	default:
		break;
	}
	return 0;
}

/* Look program @id up now, for its load or link record when it is delivered */
static void bpf_events__read_prog(struct bpf_events *ev, u32 id)
{
	struct bpf_prog_desc *prog;
	int err;

	/* asked already, for another record of it not delivered yet */
	if (hashmap__find(ev->read_progs, id, NULL))
		return;
	prog = zalloc(sizeof(*prog));
	if (!prog)
		return;
	prog->id = id;
	err = bpf_events__learn_prog(prog, NULL);
	prog->gone = err == -ENOENT;
	if ((err && !prog->gone) || hashmap__add(ev->read_progs, prog->id, prog))
		bpf_prog_desc__delete(prog);
}

/*
 * A load or attach record is delivered half a second after it is read, in
 * time order: ask the kernel about its program or link as soon as it is
 * read, while it is more likely to be there still.
 *
 * A look-up holds the object for a moment: when its owner lets go of it
 * meanwhile, this process drops the last reference, and the kernel writes
 * the unload or detach as this process's, a little later.  So look up
 * only what can be shown: not a record of a process -p leaves out, nor a
 * program --type link would show only with a link (looked up with its
 * first link then, which holds it), nor a link of a program --name
 * leaves out, when the program is known by then.
 */
static void bpf_events__read_record(struct bpf_events *ev, union perf_event *event)
{
	struct bpf_link_desc *link, *old_link = NULL;
	struct bpf_prog_desc *prog;
	struct perf_sample sample;
	u32 prog_id = event->bpf.id;
	int err;

	if (ev->pids && !evlist__parse_sample(ev->evlist, event, &sample) &&
	    !intlist__has_entry(ev->pids, sample.pid))
		return;

	if (event->bpf.type == PERF_BPF_EVENT_PROG_LOAD) {
		if (ev->show_progs)
			bpf_events__read_prog(ev, prog_id);
	} else if (event->bpf.type == PERF_BPF_EVENT_LINK_ATTACH &&
		   bpf_events__has_link_fields(ev, event) && ev->show_links) {
		if (!hashmap__find(ev->progs, prog_id, &prog))
			prog = NULL;
		if (prog && prog->name && !bpf_events__wanted_prog(ev, prog))
			return;
		if (prog_id && (!prog || (!prog->type_known && !prog->gone)))
			bpf_events__read_prog(ev, prog_id);
		link = zalloc(sizeof(*link));
		if (!link)
			return;
		link->id = event->bpf_link.link_id;
		err = bpf_events__learn_link(ev, link);
		link->gone = err == -ENOENT;
		if ((err && !link->gone) ||
		    hashmap__set(ev->read_links, link->id, link, NULL, &old_link)) {
			bpf_link_desc__delete(link);
			return;
		}
		bpf_link_desc__delete(old_link);
	}
}

/* The side-band callback: every record read from the rings is queued in time order */
static int bpf_events__queue(union perf_event *event, void *data)
{
	struct bpf_events *ev = data;
	u64 timestamp = 0;
	int err;

	if (event->header.type == PERF_RECORD_BPF_EVENT)
		bpf_events__read_record(ev, event);

	err = evlist__parse_sample_timestamp(ev->evlist, event, &timestamp);
	if (err && err != -1)
		return err;
	return ordered_events__queue(&ev->oe, event, timestamp, 0, NULL);
}

/*
 * One pass over every CPU's ring, each record to its event's side-band
 * callback; the number of records read.  The first error a callback
 * returns is kept in *@err.
 */
static int bpf_side_band__read(struct evlist *evlist, int *err)
{
	union perf_event *event;
	int i, n = 0;

	for (i = 0; i < evlist->core.nr_mmaps; i++) {
		struct mmap *map = &evlist->mmap[i];

		if (perf_mmap__read_init(&map->core) < 0)
			continue;
		while ((event = perf_mmap__read_event(&map->core)) != NULL) {
			struct evsel *evsel = evlist__event2evsel(evlist, event);

			if (evsel && evsel->side_band.cb) {
				int ret = evsel->side_band.cb(event, evsel->side_band.data);

				if (ret && !*err)
					*err = ret;
			}
			perf_mmap__consume(&map->core);
			n++;
		}
		/*
		 * No perf_mmap__read_done(): it is for rings read backwards.  On
		 * this forward ring it would move the read position to the head
		 * as it is now, past the records written since the last read,
		 * which nobody would ever read, nor count as lost.
		 */
	}
	return n;
}

/*
 * Whether the side-band event gets link records: the kernel took
 * attr.bpf_event_ext, which perf's fallback drops where it is unknown.
 */
static bool bpf_side_band__has_links(struct evlist *evlist)
{
	return evlist__first(evlist)->core.attr.bpf_event_ext;
}

static int bpf_events__read(struct bpf_events *ev)
{
	return bpf_side_band__read(ev->evlist, &ev->err);
}

static void bpf_events__signal(int sig __maybe_unused)
{
	done = 1;
}

static void bpf_events__exec_failed(int signo __maybe_unused, siginfo_t *info,
				    void *ucontext __maybe_unused)
{
	workload_exec_errno = info->si_value.sival_int;
	done = 1;
}

/*
 * Open @attr, a dummy event asking for side-band records, on the CPUs of
 * @target, with @cb called for each record bpf_side_band__read() reads.
 */
static int bpf_side_band__open(struct evlist **evlistp, struct perf_event_attr *attr,
			       evsel__sb_cb_t *cb, void *data, struct target *target,
			       unsigned int mmap_pages, const char *cmd)
{
	struct evlist *evlist;
	char msg[BUFSIZ];
	int err;

	evlist = evlist__new();
	*evlistp = evlist;
	if (!evlist)
		return -ENOMEM;
	if (evlist__add_sb_event(evlist, attr, cb, data) ||
	    evlist__create_maps(evlist, target))
		return -ENOMEM;

	err = evlist__open(evlist);
	if (err < 0) {
		evlist__strerror_open(evlist, errno, msg, sizeof(msg));
		pr_err("perf bpf %s: cannot open the side-band events: %s\n", cmd, msg);
		return err;
	}
	if (evlist__mmap(evlist, mmap_pages) < 0) {
		pr_err("perf bpf %s: cannot mmap the side-band rings: %s\n"
		       "(try fewer pages with -m, or raise /proc/sys/kernel/perf_event_mlock_kb)\n",
		       cmd, str_error_r(errno, msg, sizeof(msg)));
		return errno ? -errno : -EINVAL;
	}
	return 0;
}

static int bpf_events__open(struct bpf_events *ev, struct target *target)
{
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_DUMMY,
		.size		= sizeof(attr),
		.sample_type	= PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
		.sample_id_all	= 1,
		.bpf_event	= 1,
		.bpf_event_ext	= 1,
		.ksymbol	= 1,
		.comm		= 1,
		.task		= 1,
		.watermark	= 1,
		.use_clockid	= 1,
		.clockid	= CLOCK_MONOTONIC,
		.disabled	= 1,
	};

	/* wake up for every record: the poll timeout orders them */
	attr.wakeup_watermark = 1;

	return bpf_side_band__open(&ev->evlist, &attr, bpf_events__queue, ev, target,
				   ev->mmap_pages, "events");
}

static void bpf_events__summary(struct bpf_events *ev)
{
	fprintf(stderr, "[ perf bpf events: %" PRIu64 " prog_load, %" PRIu64 " prog_unload, %"
		PRIu64 " link_attach, %" PRIu64 " link_detach, %" PRIu64 " unknown, %" PRIu64
		" lost ]\n",
		ev->counts[PERF_BPF_EVENT_PROG_LOAD], ev->counts[PERF_BPF_EVENT_PROG_UNLOAD],
		ev->counts[PERF_BPF_EVENT_LINK_ATTACH], ev->counts[PERF_BPF_EVENT_LINK_DETACH],
		ev->counts[PERF_BPF_EVENT_MAX], ev->lost);
}

/*
 * The kernel counts the records a full ring had no room for, and writes a
 * PERF_RECORD_LOST with that count before the next record that fits: a
 * loss in the last burst would stay untold.  Have each CPU's ring take one
 * more record, a COMM record of this process naming itself again.
 */
static void bpf_events__flush_lost(struct bpf_events *ev)
{
	struct perf_cpu_map *cpus = ev->evlist->core.all_cpus;
	char comm[16] = "";	/* what PR_GET_NAME fills */
	cpu_set_t *set, *old;
	struct perf_cpu cpu;
	size_t size;
	int idx, max;

	max = cpu__max_cpu().cpu;
	set = CPU_ALLOC(max);
	old = CPU_ALLOC(max);
	size = CPU_ALLOC_SIZE(max);
	if (!set || !old || sched_getaffinity(0, size, old) ||
	    prctl(PR_GET_NAME, comm, 0, 0, 0))
		goto out;
	perf_cpu_map__for_each_cpu(cpu, idx, cpus) {
		CPU_ZERO_S(size, set);
		CPU_SET_S(cpu.cpu, size, set);
		if (!sched_setaffinity(0, size, set))
			prctl(PR_SET_NAME, comm, 0, 0, 0);
	}
	sched_setaffinity(0, size, old);
out:
	CPU_FREE(set);
	CPU_FREE(old);
}

static void bpf_events__want_held(struct bpf_events *ev);

/* Until SIGINT, the workload's end or the duration: read, order, print */
static int bpf_events__loop(struct bpf_events *ev, bool workload)
{
	u64 deadline = 0, last = 0, start, first, now;
	int timeout;

	if (ev->duration > 0)
		deadline = now_ns() + (u64)(ev->duration * NSEC_PER_SEC);

	evlist__enable(ev->evlist);
	bpf_events__snapshot(ev);
	if (ev->pids)
		bpf_events__want_held(ev);
	pr_debug("perf bpf events: reading the records of %d CPUs\n",
		 perf_cpu_map__nr(ev->evlist->core.all_cpus));
	if (workload)
		evlist__start_workload(ev->evlist);

	while (!done && !ev->err) {
		/* a pass at most every BPF_EVENTS_BATCH: fewer wakeups, more records each */
		start = now_ns();
		if (start - last < BPF_EVENTS_BATCH) {
			usleep((BPF_EVENTS_BATCH - (start - last)) / NSEC_PER_USEC);
			start = now_ns();
		}
		last = start;
		bpf_events__read(ev);
		if (start > BPF_EVENTS_SLACK)
			ordered_events__flush_time(&ev->oe, start - BPF_EVENTS_SLACK);
		fflush(ev->out.fp);

		now = now_ns();
		if (deadline && now >= deadline)
			break;
		/* sleep until a record comes, or the oldest one queued may go out */
		first = ordered_events__first_time(&ev->oe);
		if (first)
			timeout = first + BPF_EVENTS_SLACK > now ?
				  (first + BPF_EVENTS_SLACK - now) / NSEC_PER_MSEC + 1 : 0;
		else
			timeout = -1;
		if (deadline) {
			int left = (deadline - now) / NSEC_PER_MSEC + 1;

			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		/* a signal meanwhile: do not wait for the next record */
		if (done)
			break;
		/* nor wait long for one, should a signal come just now */
		if (timeout < 0 || timeout > 1000)
			timeout = 1000;
		evlist__poll(ev->evlist, timeout);
	}

	/*
	 * What is in the rings now, and all that was queued: room in the
	 * rings first, for the records that tell of a loss
	 */
	bpf_events__read(ev);
	bpf_events__flush_lost(ev);
	evlist__disable(ev->evlist);
	bpf_events__read(ev);
	ordered_events__flush(&ev->oe, OE_FLUSH__FINAL);
	fflush(ev->out.fp);
	return ev->err;
}

static int bpf_parse_duration(const struct option *opt, const char *str, int unset)
{
	struct bpf_events *ev = opt->value;
	char *end;

	if (unset || !str) {
		pr_err("perf bpf events: --duration takes a number of seconds\n");
		return -1;
	}
	errno = 0;
	ev->duration = strtod(str, &end);
	if (errno || end == str || *end || !(ev->duration > 0) ||
	    ev->duration > 1e6) {
		pr_err("perf bpf events: --duration takes a number of seconds, not '%s'\n", str);
		return -1;
	}
	return 0;
}

/* CAP_SYS_ADMIN looks BPF objects up by id; reading all CPUs needs CAP_PERFMON too */
static int bpf_check_privileges(const char *cmd, bool side_band)
{
	bool used_root, perfmon;

	if (perf_cap__capable(CAP_SYS_ADMIN, &used_root))
		return 0;
	perfmon = !side_band || perf_cap__capable(CAP_PERFMON, &used_root) ||
		  perf_event_paranoid() <= 0;
	pr_err("perf bpf %s: this process lacks CAP_SYS_ADMIN%s.\n"
	       "Only CAP_SYS_ADMIN may look BPF programs and links up by id (CAP_BPF may not)%s.\n",
	       cmd, perfmon ? "" : " and CAP_PERFMON",
	       perfmon ? "" : ", and reading the side-band records of every CPU needs CAP_PERFMON");
	return -EPERM;
}

static void bpf_events__exit(struct bpf_events *ev)
{
	struct hashmap_entry *cur;
	size_t bkt;

	evlist__delete(ev->evlist);
	ordered_events__free(&ev->oe);
	machine__exit(&ev->machine);
	if (ev->progs) {
		hashmap__for_each_entry(ev->progs, cur, bkt)
			bpf_prog_desc__delete(cur->pvalue);
		hashmap__free(ev->progs);
	}
	if (ev->links) {
		hashmap__for_each_entry(ev->links, cur, bkt)
			bpf_link_desc__delete(cur->pvalue);
		hashmap__free(ev->links);
	}
	if (ev->ksyms) {
		hashmap__for_each_entry(ev->ksyms, cur, bkt)
			bpf_ksyms__delete(cur->pvalue);
		hashmap__free(ev->ksyms);
	}
	if (ev->read_progs) {
		hashmap__for_each_entry(ev->read_progs, cur, bkt)
			bpf_prog_desc__delete(cur->pvalue);
		hashmap__free(ev->read_progs);
	}
	if (ev->read_links) {
		hashmap__for_each_entry(ev->read_links, cur, bkt)
			bpf_link_desc__delete(cur->pvalue);
		hashmap__free(ev->read_links);
	}
	intlist__delete(ev->pids);
	intlist__delete(ev->follow);
	bpf_resolver__exit(&ev->res);
	if (ev->out.fp && ev->out.fp != stdout)
		fclose(ev->out.fp);
}

static int bpf_out__setup(struct bpf_out *out, const char *sep, bool json,
			  const char *output_name, const char *cmd)
{
	out->fp = stdout;
	out->format = BPF_FORMAT_TEXT;
	if (sep && json) {
		pr_err("perf bpf %s: -x and -j are mutually exclusive\n", cmd);
		return -EINVAL;
	}
	if (sep) {
		out->format = BPF_FORMAT_CSV;
		out->sep = strcmp(sep, "\\t") ? sep : "\t";
		if (!*out->sep) {
			pr_err("perf bpf %s: -x takes a separator, not an empty string\n", cmd);
			return -EINVAL;
		}
	} else if (json) {
		out->format = BPF_FORMAT_JSON;
	}
	if (output_name) {
		out->fp = fopen(output_name, "w");
		if (!out->fp) {
			pr_err("perf bpf %s: cannot open %s: %s\n", cmd, output_name,
			       strerror(errno));
			out->fp = NULL;
			return -errno;
		}
	}
	return 0;
}

static int cmd_bpf_events(int argc, const char **argv)
{
	struct bpf_events ev = {
		.mmap_pages = UINT_MAX,
		.show_progs = true,
		.show_links = true,
	};
	struct target target = { .system_wide = true, .uid = UINT_MAX, };
	const char *sep = NULL;
	const char * const usage[] = {
		"perf bpf events [<options>] [-- <command> [<args>]]",
		NULL
	};
	const struct option options[] = {
	OPT_BOOLEAN('a', "all-cpus", &ev.system_wide,
		    "records caused by any task (the default without a command or -p)"),
	OPT_STRING('p', "pid", &ev.pid_str, "pid",
		   "records caused by these processes (comma separated)"),
	OPT_CALLBACK(0, "duration", &ev, "secs", "stop after this many seconds",
		     bpf_parse_duration),
	OPT_STRING(0, "type", &ev.type_str, "prog|link",
		   "only the records of programs, or only those of links"),
	OPT_STRING(0, "name", &ev.name_glob, "glob",
		   "only the records of programs whose name matches"),
	OPT_STRING('x', "field-separator", &sep, "separator",
		   "print CSV with this separator, a header line first"),
	OPT_BOOLEAN('j', "json-output", &ev.json, "print one JSON object a line"),
	OPT_STRING('o', "output", &ev.output_name, "file", "output file name"),
	OPT_CALLBACK('m', "mmap-pages", &ev.mmap_pages, "pages",
		     "number of mmap data pages per CPU", evlist__parse_mmap_pages),
	OPT_INCR('v', "verbose", &verbose, "be more verbose"),
	OPT_END()
	};
	struct sigaction act = { .sa_handler = bpf_events__signal };
	bool workload;
	bool has_links;
	int err;
	char msg[BUFSIZ];

	argc = parse_options(argc, argv, options, usage, PARSE_OPT_STOP_AT_NON_OPTION);
	workload = argc > 0;
	if (ev.type_str) {
		if (!strcmp(ev.type_str, "prog"))
			ev.show_links = false;
		else if (!strcmp(ev.type_str, "link"))
			ev.show_progs = false;
		else
			usage_with_options_msg(usage, options,
					       "--type takes prog or link, not '%s'", ev.type_str);
	}
	if (ev.pid_str && ev.system_wide)
		usage_with_options_msg(usage, options, "-a and -p are mutually exclusive");
	if (ev.pid_str && workload)
		usage_with_options_msg(usage, options, "-p and a command are mutually exclusive");
	if (ev.duration > 0 && workload)
		usage_with_options_msg(usage, options,
				       "--duration and a command are mutually exclusive");
	if (sep && ev.json)
		usage_with_options_msg(usage, options, "-x and -j are mutually exclusive");
	if (ev.pid_str) {
		ev.pids = intlist__new(ev.pid_str);
		if (!ev.pids)
			usage_with_options_msg(usage, options, "-p takes process ids, not '%s'",
					       ev.pid_str);
	}

	if (bpf_check_privileges("events", true)) {
		intlist__delete(ev.pids);
		return -1;
	}

	/* from here on, bpf_events__exit() undoes what was done */
	ordered_events__init(&ev.oe, bpf_events__deliver, &ev);
	ordered_events__set_copy_on_queue(&ev.oe, true);
	err = machine__init(&ev.machine, "", HOST_KERNEL_ID);
	if (err)
		return -1;
	err = bpf_out__setup(&ev.out, sep, ev.json, ev.output_name, "events");
	if (err)
		goto out;

	err = -ENOMEM;
	if (bpf_resolver__init(&ev.res))
		goto out;
	ev.progs = id_map();
	ev.links = id_map();
	ev.ksyms = id_map();
	ev.read_progs = id_map();
	ev.read_links = id_map();
	if (!ev.progs || !ev.links || !ev.ksyms || !ev.read_progs || !ev.read_links)
		goto out;
	err = bpf_events__open(&ev, &target);
	if (err)
		goto out;

	has_links = bpf_side_band__has_links(ev.evlist);
	if (!has_links && !ev.show_progs) {
		pr_err("perf bpf events: --type link: this kernel writes no link records\n");
		err = -EOPNOTSUPP;
		goto out;
	}
	if (!has_links && ev.show_links)
		pr_warning("perf bpf events: this kernel writes no link records (attr.bpf_event_ext): showing program records only\n");

	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	if (workload) {
		sigaction(SIGCHLD, &act, NULL);
		err = evlist__prepare_workload(ev.evlist, &target, argv, false,
					       bpf_events__exec_failed);
		if (err < 0) {
			pr_err("perf bpf events: cannot start the command: %s\n",
			       str_error_r(errno, msg, sizeof(msg)));
			goto out;
		}
		if (!ev.system_wide) {
			ev.follow = intlist__new(NULL);
			if (!ev.follow || intlist__add(ev.follow, ev.evlist->workload.pid)) {
				err = -ENOMEM;
				goto out;
			}
		}
	}

	out_header(&ev.out, bpf_events_columns);
	err = bpf_events__loop(&ev, workload);

	if (workload) {
		int status;

		/* stopped early: the command does not outlive us */
		if (waitpid(ev.evlist->workload.pid, &status, WNOHANG) == 0) {
			kill(ev.evlist->workload.pid, SIGTERM);
			waitpid(ev.evlist->workload.pid, &status, 0);
		}
		if (workload_exec_errno) {
			pr_err("perf bpf events: cannot run '%s': %s\n", argv[0],
			       str_error_r(workload_exec_errno, msg, sizeof(msg)));
			err = -1;
		}
	}
	bpf_events__summary(&ev);
	if (ev.oe.nr_unordered_events)
		pr_warning("perf bpf events: %u records were read too late to be shown in time order\n",
			   ev.oe.nr_unordered_events);
	if (ev.unparsed)
		pr_warning("perf bpf events: %" PRIu64 " records could not be parsed\n",
			   ev.unparsed);
	if (err < 0 && err != -1)
		pr_err("perf bpf events: %s\n", str_error_r(-err, msg, sizeof(msg)));
out:
	bpf_events__exit(&ev);
	return err ? -1 : 0;
}

/* perf bpf list */

/* The processes holding fds of each program and link */
struct bpf_owner {
	pid_t			pid;
	char			comm[32];
};

struct bpf_owners {
	int			nr;
	struct bpf_owner	*v;
};

struct bpf_owner_maps {
	struct hashmap		*progs;		/* id -> struct bpf_owners * */
	struct hashmap		*links;
};

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
static void bpf_owner_maps__scan_pid(struct bpf_owner_maps *maps, pid_t pid)
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
		ssize_t n;
		u32 id;

		n = readlinkat(dirfd(fds), fd->d_name, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
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
static void bpf_owner_maps__scan(struct bpf_owner_maps *maps)
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

static void bpf_owner_map__free(struct hashmap *map)
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

/*
 * -p: the programs and links these processes hold when perf bpf events
 * starts are theirs, and so are their unloads and detaches, whoever causes
 * them.
 */
static void bpf_events__want_held(struct bpf_events *ev)
{
	struct bpf_owner_maps held = { .progs = id_map(), .links = id_map(), };
	struct bpf_prog_desc *prog;
	struct bpf_link_desc *link;
	struct hashmap_entry *cur;
	struct int_node *node;
	size_t bkt;

	if (held.progs && held.links) {
		intlist__for_each_entry(node, ev->pids)
			bpf_owner_maps__scan_pid(&held, node->i);
		hashmap__for_each_entry(held.progs, cur, bkt) {
			if (hashmap__find(ev->progs, cur->key, &prog))
				prog->wanted = true;
		}
		hashmap__for_each_entry(held.links, cur, bkt) {
			if (!hashmap__find(ev->links, cur->key, &link))
				continue;
			link->wanted = true;
			if (hashmap__find(ev->progs, link->prog_id, &prog))
				prog->wanted = true;
		}
	}
	bpf_owner_map__free(held.progs);
	bpf_owner_map__free(held.links);
}

static struct bpf_owners *bpf_owners__find(struct hashmap *map, u32 id)
{
	struct bpf_owners *owners = NULL;

	hashmap__find(map, id, &owners);
	return owners;
}

static void out_owners(struct bpf_out *out, const struct bpf_owners *owners)
{
	char buf[64];
	int i;

	if (out->format == BPF_FORMAT_JSON) {
		out_key(out, "pids");
		fputc('[', out->fp);
		for (i = 0; owners && i < owners->nr; i++) {
			fprintf(out->fp, "%s{\"pid\":%d,\"comm\":", i ? "," : "", owners->v[i].pid);
			json_quote(out->fp, owners->v[i].comm);
			fputc('}', out->fp);
		}
		fputc(']', out->fp);
		return;
	}
	if (out->format == BPF_FORMAT_CSV) {
		/* pid/comm, space separated */
		char *all = NULL;
		size_t size = 0;
		FILE *mem = open_memstream(&all, &size);

		for (i = 0; mem && owners && i < owners->nr; i++)
			fprintf(mem, "%s%d/%s", i ? " " : "", owners->v[i].pid, owners->v[i].comm);
		if (mem)
			fclose(mem);
		out_str(out, "pids", all ?: "");
		free(all);
		return;
	}
	for (i = 0; owners && i < owners->nr; i++) {
		snprintf(buf, sizeof(buf), "%s(%d)", owners->v[i].comm, owners->v[i].pid);
		fprintf(out->fp, "%s%s", i ? ", " : "", buf);
	}
}

/* The memory of a map, as its fdinfo gives it (what bpftool shows as bytes_memlock) */
static u64 bpf_map_memlock(u32 id)
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

struct bpf_list_prog {
	struct bpf_prog_desc	desc;
	u64			run_time_ns;
	u64			run_cnt;
	u32			nr_maps;
	u64			memlock;
};

static const char * const bpf_list_columns[] = {
	"prog_id", "prog_name", "prog_type", "prog_tag", "run_time_ns", "run_cnt",
	"nr_maps", "map_memlock", "pids", "link_id", "link_type", "attach_type", "target",
	"link_pids", NULL,
};

static int bpf_list_prog__fill(struct bpf_list_prog *prog, int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), map_ids[64];
	u32 i;
	int err;

	err = bpf_prog_desc__fill(&prog->desc, fd, NULL);
	if (err)
		return err;
	info.nr_map_ids = ARRAY_SIZE(map_ids);
	info.map_ids = ptr_to_u64(map_ids);
	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		return -errno;
	prog->run_time_ns = info.run_time_ns;
	prog->run_cnt = info.run_cnt;
	prog->nr_maps = info.nr_map_ids;
	for (i = 0; i < min_t(u32, info.nr_map_ids, ARRAY_SIZE(map_ids)); i++)
		prog->memlock += bpf_map_memlock(map_ids[i]);
	return 0;
}

static void bpf_list__print_prog(struct bpf_out *out, const struct bpf_list_prog *prog,
				 const struct bpf_owners *owners, bool stats,
				 const struct bpf_link_desc *link,
				 const struct bpf_owners *link_owners)
{
	out_prog_fields(out, &prog->desc);
	if (stats) {
		out_u64(out, "run_time_ns", prog->run_time_ns);
		out_u64(out, "run_cnt", prog->run_cnt);
	} else {
		out_none(out, "run_time_ns");
		out_none(out, "run_cnt");
	}
	out_u64(out, "nr_maps", prog->nr_maps);
	out_u64(out, "map_memlock", prog->memlock);
	out_owners(out, owners);
	if (out->format == BPF_FORMAT_CSV) {
		if (link) {
			out_link_fields(out, link, link->attach_type);
			out_owners(out, link_owners);
		} else {
			out_none(out, "link_id");
			out_none(out, "link_type");
			out_none(out, "attach_type");
			out_none(out, "target");
			out_none(out, "link_pids");
		}
	}
}

static int cmd_bpf_list(int argc, const char **argv)
{
	const char * const usage[] = {
		"perf bpf list [<options>]",
		NULL
	};
	const char *sep = NULL, *output_name = NULL;
	bool json = false;
	const struct option options[] = {
	OPT_STRING('x', "field-separator", &sep, "separator",
		   "print CSV with this separator, a header line first"),
	OPT_BOOLEAN('j', "json-output", &json, "print one JSON object a line"),
	OPT_STRING('o', "output", &output_name, "file", "output file name"),
	OPT_INCR('v', "verbose", &verbose, "be more verbose"),
	OPT_END()
	};
	struct bpf_owner_maps owners = {};
	struct bpf_link_desc **links = NULL, **more;
	struct bpf_resolver res;
	struct bpf_out out;
	int nr_links = 0, i, n, fd, err;
	bool stats_on;
	__u32 id;

	argc = parse_options(argc, argv, options, usage, 0);
	if (argc)
		usage_with_options_msg(usage, options, "unexpected argument '%s'", argv[0]);
	if (sep && json)
		usage_with_options_msg(usage, options, "-x and -j are mutually exclusive");
	if (bpf_check_privileges("list", false))
		return -1;
	err = bpf_out__setup(&out, sep, json, output_name, "list");
	if (err)
		return -1;
	if (bpf_resolver__init(&res)) {
		err = -ENOMEM;
		goto out;
	}
	owners.progs = id_map();
	owners.links = id_map();
	if (!owners.progs || !owners.links) {
		err = -ENOMEM;
		goto out;
	}
	/* before this process holds BPF fds of its own */
	bpf_owner_maps__scan(&owners);
	stats_on = sysctl__read_int("kernel/bpf_stats_enabled", &n) == 0 && n == 1;

	/* the links first, to show them with their programs */
	id = 0;
	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_desc *link;

		fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		link = zalloc(sizeof(*link));
		more = realloc(links, (nr_links + 1) * sizeof(*links));
		if (!link || !more) {
			free(link);
			close(fd);
			err = -ENOMEM;
			goto out;
		}
		links = more;
		if (bpf_link_desc__fill(link, fd, &res))
			free(link);
		else
			links[nr_links++] = link;
		close(fd);
	}

	out_header(&out, bpf_list_columns);
	id = 0;
	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_list_prog prog = {};
		const struct bpf_owners *prog_owners = bpf_owners__find(owners.progs, id);
		bool stats;
		int shown = 0;

		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		err = bpf_list_prog__fill(&prog, fd);
		close(fd);
		if (err) {
			/* unloaded meanwhile */
			free(prog.desc.name);
			err = 0;
			continue;
		}
		stats = stats_on || prog.run_cnt;

		if (out.format == BPF_FORMAT_TEXT) {
			char tag[2 * BPF_TAG_SIZE + 1], buf[16];

			tag_str(prog.desc.tag, tag);
			fprintf(out.fp, "prog %u %s %s tag %s", prog.desc.id,
				*prog.desc.name ? prog.desc.name : "-",
				enum_name(libbpf_bpf_prog_type_str(prog.desc.type),
					  prog.desc.type, buf, sizeof(buf)), tag);
			if (stats)
				fprintf(out.fp, " run %" PRIu64 " times %" PRIu64 " ns",
					prog.run_cnt, prog.run_time_ns);
			fprintf(out.fp, " maps %u %" PRIu64 " bytes\n", prog.nr_maps, prog.memlock);
			if (prog_owners) {
				fprintf(out.fp, "    pids ");
				out_owners(&out, prog_owners);
				fputc('\n', out.fp);
			}
			for (i = 0; i < nr_links; i++) {
				struct bpf_link_desc *link = links[i];
				const struct bpf_owners *lo = bpf_owners__find(owners.links,
									       link->id);

				if (link->prog_id != id)
					continue;
				fprintf(out.fp, "    link %u %s %s %s", link->id,
					enum_name(libbpf_bpf_link_type_str(link->type), link->type,
						  buf, sizeof(buf)),
					libbpf_bpf_attach_type_str(link->attach_type) ?: "-",
					*link->target ? link->target : "-");
				if (lo) {
					fprintf(out.fp, " pids ");
					out_owners(&out, lo);
				}
				fputc('\n', out.fp);
			}
		} else if (out.format == BPF_FORMAT_CSV) {
			/* one line a link, one for a program without links */
			for (i = 0; i < nr_links; i++) {
				if (links[i]->prog_id != id)
					continue;
				out_begin(&out);
				bpf_list__print_prog(&out, &prog, prog_owners, stats, links[i],
						     bpf_owners__find(owners.links, links[i]->id));
				out_end(&out);
				shown++;
			}
			if (!shown) {
				out_begin(&out);
				bpf_list__print_prog(&out, &prog, prog_owners, stats, NULL, NULL);
				out_end(&out);
			}
		} else {
			out_begin(&out);
			bpf_list__print_prog(&out, &prog, prog_owners, stats, NULL, NULL);
			out_key(&out, "links");
			fputc('[', out.fp);
			for (i = 0; i < nr_links; i++) {
				if (links[i]->prog_id != id)
					continue;
				fputs(shown++ ? ",{" : "{", out.fp);
				out.nfields = 0;
				out_link_fields(&out, links[i], links[i]->attach_type);
				out_owners(&out, bpf_owners__find(owners.links, links[i]->id));
				fputc('}', out.fp);
			}
			fputc(']', out.fp);
			out_end(&out);
		}
		free(prog.desc.name);
	}
out:
	for (i = 0; i < nr_links; i++)
		bpf_link_desc__delete(links[i]);
	free(links);
	bpf_owner_map__free(owners.progs);
	bpf_owner_map__free(owners.links);
	bpf_resolver__exit(&res);
	if (out.fp && out.fp != stdout)
		fclose(out.fp);
	if (err == -ENOMEM)
		pr_err("perf bpf list: out of memory\n");
	return err ? -1 : 0;
}

/* perf bpf top */

/*
 * -e: an event counted around each run of a program by perf stat -b's
 * profiler (fentry and fexit programs attached to it, reading the event
 * on the CPU it runs on)
 */
struct bpf_top_count {
	struct evsel		*evsel;
	struct perf_counts_values base;		/* raw, at the first read */
	struct perf_counts_values last;		/* raw, at the last read */
	u64			win;		/* over the last window, scaled */
	u64			total;		/* since the first read, scaled */
	bool			based;		/* read once */
	bool			win_ok;		/* win is a whole window's */
	bool			resync;		/* a read failed: no window next */
};

/*
 * A program's run time and count, as the kernel counts them while
 * BPF_ENABLE_STATS is held (kernel.bpf_stats_enabled): read once a window,
 * the figures of the window are the differences between two reads.
 */
struct bpf_top_prog {
	struct bpf_prog_desc	desc;
	struct strbuf		attach;		/* its links' types and targets */
	u64			base_time;	/* at the first read; 0 if loaded since start */
	u64			base_cnt;
	u64			time;		/* at the last read */
	u64			cnt;
	u64			win_time;	/* over the last window */
	u64			win_cnt;
	bool			read;		/* read at least once */
	bool			seen_load;	/* its load record was read */
	bool			shown;		/* passes -p */
	int			gone;		/* refreshes since it was unloaded */
	struct bpf_top_count	*counts;	/* -e: one an event, NULL if not counted */
	bool			counts_failed;	/* the profiler cannot attach to it */
	bool			unheld_said;	/* -v said it is not counted, held by nothing */
};

enum bpf_top_key {
	BPF_TOP_KEY_RUN_TIME,
	BPF_TOP_KEY_RUNS,
	BPF_TOP_KEY_AVG,
	BPF_TOP_KEY_RUN_TIME_TOTAL,
	BPF_TOP_KEY_RUNS_TOTAL,
	BPF_TOP_KEY_ID,
	BPF_TOP_KEY_NAME,
	BPF_TOP_KEY_TYPE,
	BPF_TOP_KEY_MAX,
};

static const char * const bpf_top_keys[] = {
	[BPF_TOP_KEY_RUN_TIME]		= "run_time",
	[BPF_TOP_KEY_RUNS]		= "runs",
	[BPF_TOP_KEY_AVG]		= "avg",
	[BPF_TOP_KEY_RUN_TIME_TOTAL]	= "run_time_total",
	[BPF_TOP_KEY_RUNS_TOTAL]	= "runs_total",
	[BPF_TOP_KEY_ID]		= "id",
	[BPF_TOP_KEY_NAME]		= "name",
	[BPF_TOP_KEY_TYPE]		= "type",
};

struct bpf_top {
	struct bpf_out		out;
	struct bpf_resolver	res;
	struct evlist		*evlist;
	struct hashmap		*progs;		/* id -> struct bpf_top_prog * */
	struct intlist		*ids;		/* --id */
	struct intlist		*pids;		/* -p: programs these hold */
	struct intlist		*own;		/* -e: the profiler's programs, not shown */
	struct evlist		*events;	/* -e: the events, opened per program */
	struct perf_cpu_map	*cpus;		/* -e: where they are opened */
	const char		**columns;	/* -x, -j: with the events' */
	const char		*event_str;
	int			nr_events;
	int			nr_counted;	/* programs -e counts */
	const char		*name_glob;
	const char		*id_str;
	const char		*pid_str;
	const char		*types_str;
	const char		*sort_str;
	const char		*output_name;
	u64			types;		/* --prog-type: bit per enum bpf_prog_type */
	int			sort[BPF_TOP_KEY_MAX];
	int			nr_sort;
	int			entries;	/* -E */
	double			delay;		/* -d, seconds */
	int			interval;	/* -I, ms */
	int			interval_count;
	unsigned int		mmap_pages;
	int			nr_cpus;
	int			stats_fd;
	bool			stats_were_on;
	bool			delay_set;	/* -d given */
	bool			links_always;	/* no link records: read links each refresh */
	bool			stdio;
	bool			json;
	u32			last_id;	/* the highest program id when records began */
	bool			rescan;		/* records were lost: look programs up by id */
	bool			links_stale;	/* a link came or went */
	bool			clear;		/* text on a terminal: one screen a window */
	u64			start;		/* CLOCK_MONOTONIC, ns */
	u64			last;		/* the last read */
	u64			window;		/* from the read before it */
	u64			lost;
	int			err;
};

/* Stop counting @prog: the profiler held it, the kernel may free it now */
static void bpf_top_prog__uncount(struct bpf_top *top, struct bpf_top_prog *prog)
{
	int i;

	if (!prog->counts)
		return;
	for (i = 0; i < top->nr_events; i++) {
		struct evsel *evsel = prog->counts[i].evsel;

		if (evsel) {
			bpf_counter__destroy(evsel);
			evsel__close(evsel);
			evsel__delete(evsel);
		}
	}
	zfree(&prog->counts);
	top->nr_counted--;
}

static void bpf_top_prog__delete(struct bpf_top *top, struct bpf_top_prog *prog)
{
	if (prog) {
		bpf_top_prog__uncount(top, prog);
		free(prog->desc.name);
		strbuf_release(&prog->attach);
		free(prog);
	}
}

static bool bpf_top__wanted(struct bpf_top *top, const struct bpf_prog_desc *desc)
{
	if (top->ids && !intlist__has_entry(top->ids, desc->id))
		return false;
	if (top->types && (desc->type >= 64 || !(top->types & (1ULL << desc->type))))
		return false;
	if (top->name_glob && fnmatch(top->name_glob, desc->name ?: "", 0))
		return false;
	return true;
}

/*
 * Start following program @id: loaded since start if its load record was
 * read (all its runs count), else there before (its runs count from the
 * first read).
 */
static void bpf_top__add(struct bpf_top *top, u32 id, bool loaded)
{
	struct bpf_top_prog *prog;
	int fd;

	if (hashmap__find(top->progs, id, &prog)) {
		prog->seen_load |= loaded;
		return;
	}
	if (top->own && intlist__has_entry(top->own, id))
		return;
	fd = bpf_fd_by_id(bpf_prog_get_fd_by_id, id);
	if (fd < 0)
		return;		/* gone already */
	prog = zalloc(sizeof(*prog));
	if (prog)
		strbuf_init(&prog->attach, 0);
	if (!prog || bpf_prog_desc__fill(&prog->desc, fd, NULL)) {
		bpf_top_prog__delete(top, prog);
		close(fd);
		return;
	}
	close(fd);
	prog->seen_load = loaded;
	prog->shown = !top->pids;
	if (!bpf_top__wanted(top, &prog->desc) || hashmap__add(top->progs, id, prog)) {
		bpf_top_prog__delete(top, prog);
		return;
	}
	top->links_stale = true;
}

/*
 * Follow every program loaded now: those with ids above the last one
 * there when the records began were loaded since (ids only grow).
 */
static void bpf_top__scan(struct bpf_top *top, bool loaded)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id))
		bpf_top__add(top, id, loaded || id > top->last_id);
}

/* The side-band callback: programs come and go, links too */
static int bpf_top__record(union perf_event *event, void *data)
{
	struct bpf_top *top = data;
	struct bpf_top_prog *prog;

	switch (event->header.type) {
	case PERF_RECORD_BPF_EVENT:
		switch (event->bpf.type) {
		case PERF_BPF_EVENT_PROG_LOAD:
			bpf_top__add(top, event->bpf.id, true);
			break;
		case PERF_BPF_EVENT_PROG_UNLOAD:
			if (hashmap__find(top->progs, event->bpf.id, &prog) && !prog->gone)
				prog->gone = 1;
			break;
		case PERF_BPF_EVENT_LINK_ATTACH:
		case PERF_BPF_EVENT_LINK_DETACH:
			top->links_stale = true;
			break;
		default:
			break;
		}
		break;
	case PERF_RECORD_LOST:
		top->lost += event->lost.lost;
		top->rescan = true;
		top->links_stale = true;
		break;
	default:
		break;
	}
	return 0;
}

/* Whether a link of @type always has @attach_type, saying nothing more */
static bool bpf_link__sole_attach_type(u32 type, u32 attach_type)
{
	switch (type) {
	case BPF_LINK_TYPE_RAW_TRACEPOINT:
		return attach_type == BPF_TRACE_RAW_TP;
	case BPF_LINK_TYPE_PERF_EVENT:
		return attach_type == BPF_PERF_EVENT;
	case BPF_LINK_TYPE_XDP:
		return attach_type == BPF_XDP;
	case BPF_LINK_TYPE_ITER:
		return attach_type == BPF_TRACE_ITER;
	case BPF_LINK_TYPE_NETFILTER:
		return attach_type == BPF_NETFILTER;
	case BPF_LINK_TYPE_STRUCT_OPS:
		return attach_type == BPF_STRUCT_OPS;
	case BPF_LINK_TYPE_UPROBE_MULTI:
		return attach_type == BPF_TRACE_UPROBE_MULTI;
	default:
		return false;
	}
}

/*
 * Each program's attach points: "link_type[/attach_type] target", comma
 * separated; the attach type where the link type does not tell it.
 */
static void bpf_top__read_links(struct bpf_top *top)
{
	struct hashmap_entry *cur;
	struct bpf_top_prog *prog;
	size_t bkt;
	__u32 id = 0;

	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		strbuf_setlen(&prog->attach, 0);
	}
	top->links_stale = false;
	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_desc link = {};
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		char buf[16], abuf[16];
		const char *at;
		int fd;

		/* attached, its id not published yet: EAGAIN for a moment */
		fd = bpf_fd_by_id(bpf_link_get_fd_by_id, id);
		if (fd < 0) {
			if (errno == EAGAIN)
				top->links_stale = true;
			continue;
		}
		/* the target only of the programs followed: it may cost a BTF load */
		if (bpf_link_get_info_by_fd(fd, &info, &len) ||
		    !hashmap__find(top->progs, info.prog_id, &prog) ||
		    bpf_link_desc__fill(&link, fd, &top->res) ||
		    !hashmap__find(top->progs, link.prog_id, &prog)) {
			close(fd);
			free(link.target);
			continue;
		}
		close(fd);
		at = NULL;
		if (!bpf_link__sole_attach_type(link.type, link.attach_type))
			at = attach_type_name(link.attach_type, abuf, sizeof(abuf));
		strbuf_addf(&prog->attach, "%s%s%s%s%s%s", prog->attach.len ? ", " : "",
			    enum_name(libbpf_bpf_link_type_str(link.type), link.type,
				      buf, sizeof(buf)),
			    at ? "/" : "", at ?: "",
			    link.target && *link.target ? " " : "", link.target ?: "");
		free(link.target);
	}
}

/*
 * -p: the programs the processes hold, themselves or through a link, as
 * their fds say at each refresh
 */
static void bpf_top__read_owners(struct bpf_top *top)
{
	struct bpf_owner_maps owners = {
		.progs = id_map(),
		.links = id_map(),
	};
	struct hashmap_entry *cur;
	struct int_node *node;
	struct bpf_top_prog *prog;
	size_t bkt;

	if (!owners.progs || !owners.links)
		goto out;
	intlist__for_each_entry(node, top->pids)
		bpf_owner_maps__scan_pid(&owners, node->i);
	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		prog->shown = bpf_owners__find(owners.progs, prog->desc.id);
	}
	hashmap__for_each_entry(owners.links, cur, bkt) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_link_get_fd_by_id(cur->key);

		if (fd < 0)
			continue;
		if (!bpf_link_get_info_by_fd(fd, &info, &len) &&
		    hashmap__find(top->progs, info.prog_id, &prog))
			prog->shown = true;
		close(fd);
	}
out:
	bpf_owner_map__free(owners.progs);
	bpf_owner_map__free(owners.links);
}

/*
 * Whether tracing program @id traces another BPF program: one whose
 * target is not in the kernel's BTF (attached, the kernel gives no BTF
 * object; loaded but not attached yet, that of the target program).
 * The profiler of perf stat -b or of another perf bpf top is one: two
 * of them would count each other's.
 */
static bool bpf_top__traces_prog(u32 id)
{
	struct bpf_prog_info info = {};
	struct bpf_btf_info btf = {};
	__u32 len = sizeof(info);
	bool ret = false;
	int fd;

	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return false;
	if (bpf_prog_get_info_by_fd(fd, &info, &len) || !info.attach_btf_id) {
		close(fd);
		return false;
	}
	close(fd);
	if (!info.attach_btf_obj_id)
		return true;
	fd = bpf_btf_get_fd_by_id(info.attach_btf_obj_id);
	len = sizeof(btf);
	if (fd >= 0) {
		ret = !bpf_btf_get_info_by_fd(fd, &btf, &len) && !btf.kernel_btf;
		close(fd);
	}
	return ret;
}

/*
 * -e: count the events around each run of @prog, an evsel an event with
 * perf stat -b's profiler on it.  Why a program cannot be counted (no
 * BTF, a tracing program, ...) is said with -v, not on every screen.
 */
static int bpf_top__count(struct bpf_top *top, struct bpf_top_prog *prog)
{
	struct target target = { .bpf_str = NULL, };
	struct evsel *tmpl, *evsel;
	int i = 0, err = 0, saved = verbose;
	char id[16];

	if (prog->desc.type == BPF_PROG_TYPE_TRACING && bpf_top__traces_prog(prog->desc.id)) {
		pr_debug("perf bpf top: program %u traces a BPF program: not counted\n",
			 prog->desc.id);
		return -EINVAL;
	}
	prog->counts = calloc(top->nr_events, sizeof(*prog->counts));
	if (!prog->counts)
		return -ENOMEM;
	top->nr_counted++;
	snprintf(id, sizeof(id), "%u", prog->desc.id);
	target.bpf_str = id;
	if (verbose <= 0)
		verbose = -1;
	evlist__for_each_entry(top->events, tmpl) {
		evsel = evsel__new(&tmpl->core.attr);
		if (!evsel) {
			err = -ENOMEM;
			break;
		}
		prog->counts[i++].evsel = evsel;
		evsel->core.cpus = perf_cpu_map__get(top->cpus);
		err = bpf_counter__load(evsel, &target);
		if (!err)
			err = evsel__open_per_cpu(evsel, top->cpus, -1);
		if (!err)
			err = evsel__alloc_counts(evsel);
		if (!err)
			err = bpf_counter__enable(evsel);
		if (err)
			break;
	}
	verbose = saved;
	if (err) {
		pr_debug("perf bpf top: cannot count the events of program %u (%s)\n",
			 prog->desc.id, prog->desc.name ?: "");
		bpf_top_prog__uncount(top, prog);
	}
	return err;
}

/* The profiler's programs are this process's: not shown */
static void bpf_top__hide_own(struct bpf_top *top)
{
	struct bpf_owner_maps own = {
		.progs = id_map(),
		.links = id_map(),
	};
	struct bpf_top_prog *prog;
	struct hashmap_entry *cur;
	size_t bkt;

	if (own.progs && own.links)
		bpf_owner_maps__scan_pid(&own, getpid());
	if (own.progs) {
		hashmap__for_each_entry(own.progs, cur, bkt) {
			intlist__add(top->own, cur->key);
			if (hashmap__delete(top->progs, cur->key, NULL, &prog))
				bpf_top_prog__delete(top, prog);
		}
	}
	bpf_owner_map__free(own.progs);
	bpf_owner_map__free(own.links);
}

/*
 * -e: count the programs shown that a link or a process holds.  The
 * profiler holds the program it is attached to: let go of one nothing
 * else holds, for the kernel to free it and for its unload to be seen.
 * A program attached without a link (netlink, tc, legacy cgroup) and
 * held by no process is not counted.
 */
static void bpf_top__update_counts(struct bpf_top *top)
{
	struct bpf_owner_maps owners = {};
	struct hashmap_entry *cur;
	struct bpf_top_prog *prog;
	bool scan = false, added = false;
	size_t bkt;

	hashmap__for_each_entry(top->progs, cur, bkt) {
		prog = cur->pvalue;
		if (!prog->gone && prog->shown && !prog->attach.len && !prog->counts_failed)
			scan = true;
	}
	if (scan) {
		owners.progs = id_map();
		owners.links = id_map();
		if (owners.progs && owners.links)
			bpf_owner_maps__scan(&owners);
	}
	hashmap__for_each_entry(top->progs, cur, bkt) {
		bool held;

		prog = cur->pvalue;
		held = prog->attach.len ||
		       (owners.progs && bpf_owners__find(owners.progs, prog->desc.id));
		if (prog->gone || !prog->shown || !held) {
			if (!prog->gone && prog->shown && !prog->counts_failed &&
			    !prog->unheld_said) {
				pr_debug("perf bpf top: nothing holds program %u: not counted\n",
					 prog->desc.id);
				prog->unheld_said = true;
			}
			bpf_top_prog__uncount(top, prog);
			continue;
		}
		prog->unheld_said = false;
		if (prog->counts || prog->counts_failed || done)
			continue;
		if (bpf_top__count(top, prog))
			prog->counts_failed = true;
		else
			added = true;
	}
	bpf_owner_map__free(owners.progs);
	bpf_owner_map__free(owners.links);
	if (added)
		bpf_top__hide_own(top);
}

/* The event's count over every CPU while the program ran, raw */
static int bpf_top__count_read(struct evsel *evsel, struct perf_counts_values *sum)
{
	struct perf_counts_values *v;
	int idx;

	memset(sum, 0, sizeof(*sum));
	if (bpf_counter__read(evsel))
		return -1;
	perf_cpu_map__for_each_idx(idx, evsel__cpus(evsel)) {
		v = perf_counts(evsel->counts, idx, 0);
		sum->val += v->val;
		sum->ena += v->ena;
		sum->run += v->run;
	}
	return 0;
}

/*
 * The count between two raw reads, scaled by the enabled and running
 * times summed over the CPUs when the event was multiplexed; false when
 * it is not known: the event was enabled but never on the PMU while the
 * program ran.
 */
static bool bpf_top__count_diff(const struct perf_counts_values *now,
				const struct perf_counts_values *then, u64 *val)
{
	struct perf_counts_values d = {
		.val = now->val - then->val,
		.ena = now->ena - then->ena,
		.run = now->run - then->run,
	};
	bool known = !(d.ena && !d.run);
	__s8 scaled;

	perf_counts_values__scale(&d, true, &scaled);
	*val = d.val;
	return known;
}

/*
 * -e: the first read is the base; a window is whole from the second on.
 * After a read that failed, the next read only starts a window again.
 * The caller cleared win_ok.
 */
static void bpf_top__read_counts(struct bpf_top *top, struct bpf_top_prog *prog)
{
	int i;

	for (i = 0; i < top->nr_events; i++) {
		struct bpf_top_count *c = &prog->counts[i];
		struct perf_counts_values now;

		if (bpf_top__count_read(c->evsel, &now)) {
			c->resync = true;
			continue;
		}
		if (!c->based) {
			c->base = now;
			c->based = true;
		} else if (!c->resync) {
			c->win_ok = bpf_top__count_diff(&now, &c->last, &c->win);
		}
		c->resync = false;
		c->last = now;
		bpf_top__count_diff(&now, &c->base, &c->total);
	}
}

/*
 * Read every program's run time and count, shown or not (-p may show it
 * later): the window's figures are what they grew by since the last
 * read.  A program the kernel no longer has is gone even if its unload
 * record was lost; it keeps the figures of its last window.
 */
static void bpf_top__read_stats(struct bpf_top *top)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;

	hashmap__for_each_entry_safe(top->progs, cur, tmp, bkt) {
		struct bpf_top_prog *prog = cur->pvalue;
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd, i;

		/* no window for the counts unless read with the stats below */
		for (i = 0; prog->counts && i < top->nr_events; i++)
			prog->counts[i].win_ok = false;
		if (prog->gone) {
			/* shown for the refresh after it went, then forgotten */
			if (prog->gone++ > 1) {
				hashmap__delete(top->progs, prog->desc.id, NULL, NULL);
				bpf_top_prog__delete(top, prog);
			}
			continue;
		}
		fd = bpf_prog_get_fd_by_id(prog->desc.id);
		if (fd < 0) {
			if (errno == ENOENT)
				prog->gone = 2;
			continue;
		}
		if (bpf_prog_get_info_by_fd(fd, &info, &len)) {
			close(fd);
			continue;
		}
		close(fd);
		if (!prog->read) {
			prog->read = true;
			if (!prog->seen_load) {
				prog->base_time = info.run_time_ns;
				prog->base_cnt = info.run_cnt;
			}
			prog->time = prog->base_time;
			prog->cnt = prog->base_cnt;
		}
		prog->win_time = info.run_time_ns - prog->time;
		prog->win_cnt = info.run_cnt - prog->cnt;
		prog->time = info.run_time_ns;
		prog->cnt = info.run_cnt;
		if (prog->counts)
			bpf_top__read_counts(top, prog);
	}
}

static u64 bpf_top_prog__avg(const struct bpf_top_prog *prog)
{
	return prog->win_cnt ? prog->win_time / prog->win_cnt : 0;
}

static const struct bpf_top *bpf_top__sorting;

static int bpf_top__cmp(const void *pa, const void *pb)
{
	const struct bpf_top_prog *a = *(const struct bpf_top_prog * const *)pa;
	const struct bpf_top_prog *b = *(const struct bpf_top_prog * const *)pb;
	const struct bpf_top *top = bpf_top__sorting;
	u64 va = 0, vb = 0;
	int i, ret;

	for (i = 0; i < top->nr_sort; i++) {
		switch (top->sort[i]) {
		case BPF_TOP_KEY_RUN_TIME:
			va = a->win_time;
			vb = b->win_time;
			break;
		case BPF_TOP_KEY_RUNS:
			va = a->win_cnt;
			vb = b->win_cnt;
			break;
		case BPF_TOP_KEY_AVG:
			va = bpf_top_prog__avg(a);
			vb = bpf_top_prog__avg(b);
			break;
		case BPF_TOP_KEY_RUN_TIME_TOTAL:
			va = a->time - a->base_time;
			vb = b->time - b->base_time;
			break;
		case BPF_TOP_KEY_RUNS_TOTAL:
			va = a->cnt - a->base_cnt;
			vb = b->cnt - b->base_cnt;
			break;
		case BPF_TOP_KEY_ID:
			/* ascending, like names */
			va = b->desc.id;
			vb = a->desc.id;
			break;
		case BPF_TOP_KEY_NAME:
			ret = strcmp(a->desc.name ?: "", b->desc.name ?: "");
			if (ret)
				return ret;
			continue;
		case BPF_TOP_KEY_TYPE:
			ret = strcmp(libbpf_bpf_prog_type_str(a->desc.type) ?: "",
				     libbpf_bpf_prog_type_str(b->desc.type) ?: "");
			if (ret)
				return ret;
			continue;
		default:
			break;
		}
		if (va != vb)
			return va > vb ? -1 : 1;
	}
	return a->desc.id < b->desc.id ? -1 : a->desc.id > b->desc.id;
}

/* The programs to show, sorted; NULL if out of memory */
static struct bpf_top_prog **bpf_top__sorted(struct bpf_top *top, int *nr)
{
	struct bpf_top_prog **v;
	struct hashmap_entry *cur;
	size_t bkt;
	int n = 0;

	v = calloc(hashmap__size(top->progs) + 1, sizeof(*v));
	if (!v)
		return NULL;
	hashmap__for_each_entry(top->progs, cur, bkt) {
		struct bpf_top_prog *prog = cur->pvalue;

		if (prog->shown && (prog->read || prog->gone))
			v[n++] = prog;
	}
	bpf_top__sorting = top;
	qsort(v, n, sizeof(*v), bpf_top__cmp);
	*nr = n;
	return v;
}

/* -x and -j: a line a program a window */
static const char * const bpf_top_columns[] = {
	"time", "prog_id", "prog_name", "prog_type", "run_cnt", "run_time_ns", "avg_ns",
	"runs_per_sec", "cpu_pct", "cpu_pct_all", "run_cnt_total", "run_time_ns_total",
	"gone", "attach", NULL,
};

/*
 * -e, -x and -j: for each event E, "E" over the window and "E_per_run",
 * once a whole window was counted; "E_total" since counting began.
 * Nothing for a program not counted.
 */
static void bpf_top__print_counts(struct bpf_top *top, struct bpf_top_prog *prog)
{
	struct bpf_out *out = &top->out;
	const char **key = top->columns + ARRAY_SIZE(bpf_top_columns) - 1;
	int i;

	for (i = 0; i < top->nr_events; i++, key += 3) {
		struct bpf_top_count *c = prog->counts ? &prog->counts[i] : NULL;
		bool whole = c && c->win_ok && !prog->gone;

		if (whole)
			out_u64(out, key[0], c->win);
		else
			out_none(out, key[0]);
		if (whole && prog->win_cnt) {
			out_key(out, key[1]);
			fprintf(out->fp, "%.1f", (double)c->win / prog->win_cnt);
		} else {
			out_none(out, key[1]);
		}
		if (c && c->based)
			out_u64(out, key[2], c->total);
		else
			out_none(out, key[2]);
	}
}

static void bpf_top__print_interval(struct bpf_top *top, struct bpf_top_prog **v, int nr,
				    u64 now, u64 window)
{
	struct bpf_out *out = &top->out;
	u64 since = now - top->start;
	char buf[32];
	int i;

	for (i = 0; i < nr; i++) {
		struct bpf_top_prog *prog = v[i];
		/* gone: nothing read this window, totals as they were */
		u64 win_cnt = prog->gone ? 0 : prog->win_cnt;
		u64 win_time = prog->gone ? 0 : prog->win_time;
		double one = window ? 100.0 * win_time / window : 0;

		out_begin(out);
		out_key(out, "time");
		fprintf(out->fp, "%" PRIu64 ".%06" PRIu64, since / NSEC_PER_SEC,
			(since % NSEC_PER_SEC) / NSEC_PER_USEC);
		out_u64(out, "prog_id", prog->desc.id);
		out_str(out, "prog_name", prog->desc.name ?: "");
		out_str(out, "prog_type", enum_name(libbpf_bpf_prog_type_str(prog->desc.type),
						    prog->desc.type, buf, sizeof(buf)));
		out_u64(out, "run_cnt", win_cnt);
		out_u64(out, "run_time_ns", win_time);
		out_u64(out, "avg_ns", win_cnt ? win_time / win_cnt : 0);
		out_key(out, "runs_per_sec");
		fprintf(out->fp, "%.1f", window ? (double)win_cnt * NSEC_PER_SEC / window : 0);
		out_key(out, "cpu_pct");
		fprintf(out->fp, "%.3f", one);
		out_key(out, "cpu_pct_all");
		fprintf(out->fp, "%.3f", one / top->nr_cpus);
		out_u64(out, "run_cnt_total", prog->cnt - prog->base_cnt);
		out_u64(out, "run_time_ns_total", prog->time - prog->base_time);
		out_key(out, "gone");
		fputs(prog->gone ? "true" : "false", out->fp);
		out_str(out, "attach", prog->attach.buf);
		bpf_top__print_counts(top, prog);
		out_end(out);
	}
}

/* The first line of the text screen and of the TUI: what was shown, what it cost */
static void bpf_top__title(struct bpf_top *top, struct bpf_top_prog **v, int nr, u64 window,
			   char *line, size_t size)
{
	double all = 0;
	int i;

	for (i = 0; i < nr; i++) {
		if (!v[i]->gone)
			all += v[i]->win_time;
	}
	snprintf(line, size,
		 "perf bpf top: %d programs, %d shown; %.2fs; BPF %.2f%% of one CPU, %.2f%% of %d%s",
		 (int)hashmap__size(top->progs), nr, (double)window / NSEC_PER_SEC,
		 window ? 100.0 * all / window : 0,
		 window ? 100.0 * all / window / top->nr_cpus : 0,
		 top->nr_cpus, top->stats_were_on ? "; stats were on before" : "");
}

/* -e: a column an event, its count per run over the window */
static int bpf_top__count_heads(struct bpf_top *top, char *line, size_t size)
{
	struct evsel *evsel;
	int n = 0;

	if (!top->events)
		return 0;
	evlist__for_each_entry(top->events, evsel) {
		char name[16];

		snprintf(name, sizeof(name), "%.10s/run", evsel__name(evsel));
		n += scnprintf(line + n, size - n, " %14s", name);
	}
	return n;
}

static void bpf_top__heads(struct bpf_top *top, char *line, size_t size)
{
	int n;

	n = scnprintf(line, size, "%8s %-16s %-14s %10s %9s %7s %7s %12s %12s",
		      "ID", "NAME", "TYPE", "RUNS/s", "AVG ns", "%CPU", "%ALL", "RUNS", "TIME ms");
	n += bpf_top__count_heads(top, line + n, size - n);
	scnprintf(line + n, size - n, "  %s", "ATTACH");
}

static int bpf_top__count_row(struct bpf_top *top, struct bpf_top_prog *prog, char *line,
			      size_t size)
{
	int i, n = 0;

	for (i = 0; i < top->nr_events; i++) {
		if (prog->counts && prog->counts[i].win_ok && prog->win_cnt && !prog->gone)
			n += scnprintf(line + n, size - n, " %14.1f",
				       (double)prog->counts[i].win / prog->win_cnt);
		else
			n += scnprintf(line + n, size - n, " %14s", "-");
	}
	return n;
}

static void bpf_top__row(struct bpf_top *top, struct bpf_top_prog *prog, u64 window,
			 char *line, size_t size)
{
	double one = window ? 100.0 * prog->win_time / window : 0;
	char type[16];
	int n;

	n = scnprintf(line, size,
		      "%8u %-16.16s %-14.14s %10.1f %9" PRIu64 " %7.2f %7.2f %12" PRIu64
		      " %12.3f",
		      prog->desc.id, prog->desc.name && *prog->desc.name ? prog->desc.name : "-",
		      enum_name(libbpf_bpf_prog_type_str(prog->desc.type), prog->desc.type,
				type, sizeof(type)),
		      window ? (double)prog->win_cnt * NSEC_PER_SEC / window : 0,
		      bpf_top_prog__avg(prog), one, one / top->nr_cpus,
		      prog->cnt - prog->base_cnt,
		      (double)(prog->time - prog->base_time) / NSEC_PER_MSEC);
	n += bpf_top__count_row(top, prog, line + n, size - n);
	scnprintf(line + n, size - n, "  %s%s", prog->gone ? "(gone) " : "",
		  prog->attach.len ? prog->attach.buf : "-");
}

static const char *bpf_top__none(struct bpf_top *top)
{
	bool filtered = top->ids || top->types || top->name_glob || top->pids;

	return filtered ? "(no BPF programs match)" : "(no BPF programs loaded)";
}

/* Text: a screen a refresh, cut to the terminal's size when it is one */
static void bpf_top__print_screen(struct bpf_top *top, struct bpf_top_prog **v, int nr,
				  u64 window)
{
	FILE *fp = top->out.fp;
	struct winsize ws = { .ws_row = 0, .ws_col = 0 };
	int rows = INT_MAX, cols = INT_MAX, i;
	/* the title, the lost line, a blank line and the column heads */
	int head = top->lost ? 4 : 3;
	char line[1024];

	if (top->clear) {
		get_term_dimensions(&ws);
		/* and the cursor's line after the last row */
		rows = ws.ws_row > head + 1 ? ws.ws_row - head - 1 : 0;
		cols = ws.ws_col > 1 ? ws.ws_col : 80;
		if (cols > (int)sizeof(line))
			cols = sizeof(line);
		fputs("\033[H\033[2J", fp);
	}
	bpf_top__title(top, v, nr, window, line, sizeof(line));
	fprintf(fp, "%.*s\n", cols, line);
	if (top->clear && ws.ws_row && ws.ws_row <= head + 1)
		return;		/* no room for more than the title */
	if (top->lost) {
		snprintf(line, sizeof(line),
			 "(%" PRIu64 " side-band records lost: programs looked up by id)",
			 top->lost);
		fprintf(fp, "%.*s\n", cols, line);
	}
	bpf_top__heads(top, line, sizeof(line));
	fprintf(fp, "\n%.*s\n", cols, line);
	if (!nr && rows)
		fprintf(fp, "%s\n", bpf_top__none(top));
	for (i = 0; i < nr && i < rows && (!top->entries || i < top->entries); i++) {
		bpf_top__row(top, v[i], window, line, sizeof(line));
		fprintf(fp, "%.*s\n", cols, line);
	}
	if (!top->clear)
		fputc('\n', fp);
}

/*
 * Look for what changed, then read the figures: the window ends when
 * they are read.  Returns the time of the read; top->window is the
 * length of the window.
 */
static u64 bpf_top__refresh(struct bpf_top *top)
{
	u64 now;

	if (top->rescan) {
		top->rescan = false;
		bpf_top__scan(top, true);
	}
	if (top->pids)
		bpf_top__read_owners(top);
	/*
	 * With -e, the links are what lets a program go: read them every
	 * refresh, as a link may go without a record (only its first detach
	 * writes one) or change programs (BPF_LINK_UPDATE writes none)
	 */
	if (top->links_stale || top->links_always || top->nr_events)
		bpf_top__read_links(top);
	if (top->nr_events)
		bpf_top__update_counts(top);
	now = now_ns();
	top->window = now - top->last;
	bpf_top__read_stats(top);
	top->last = now;
	return now;
}

/* Print what the last refresh read, at @now */
static void bpf_top__print(struct bpf_top *top, u64 now)
{
	struct bpf_top_prog **v;
	int nr = 0;

	v = bpf_top__sorted(top, &nr);
	if (!v) {
		top->err = -ENOMEM;
		return;
	}
	if (top->out.format == BPF_FORMAT_TEXT)
		bpf_top__print_screen(top, v, nr, top->window);
	else
		bpf_top__print_interval(top, v, top->entries && nr > top->entries ?
					top->entries : nr, now, top->window);
	fflush(top->out.fp);
	free(v);
}

static int bpf_top__loop(struct bpf_top *top)
{
	u64 period = top->interval ? (u64)top->interval * NSEC_PER_MSEC :
			 (u64)(top->delay * NSEC_PER_SEC);
	u64 next, now;
	int windows = 0;

	evlist__enable(top->evlist);
	bpf_top__scan(top, false);
	/* the first window starts once every program there has its baseline */
	top->start = bpf_top__refresh(top);
	next = top->start + period;

	while (!done && !top->err) {
		int timeout;

		bpf_side_band__read(top->evlist, &top->err);
		now = now_ns();
		if (now >= next) {
			now = bpf_top__refresh(top);
			bpf_top__print(top, now);
			next += period;
			/* stalled past a window or more: the next one starts now */
			if (next <= now)
				next = now + period;
			if (top->interval_count && ++windows >= top->interval_count)
				break;
			continue;
		}
		timeout = (next - now) / NSEC_PER_MSEC + 1;
		if (done)
			break;
		evlist__poll(top->evlist, timeout > 1000 ? 1000 : timeout);
	}
	evlist__disable(top->evlist);
	return top->err;
}

#ifdef HAVE_SLANG_SUPPORT
/* The TUI: perf's browser, a row a program, the column heads on top */
struct bpf_top_tui {
	struct ui_browser	b;
	char			**rows;
	int			nr_rows;
};

static void bpf_top_tui__write(struct ui_browser *b, void *entry, int row)
{
	char **line = entry;

	ui_browser__set_color(b, ui_browser__is_current_entry(b, row) ?
			      HE_COLORSET_SELECTED : HE_COLORSET_NORMAL);
	ui_browser__write_nstring(b, *line, b->width);
}

static void bpf_top_tui__seek(struct ui_browser *b, off_t offset, int whence)
{
	char **rows = b->entries;

	switch (whence) {
	case SEEK_SET:
		b->top = rows + offset;
		break;
	case SEEK_CUR:
		b->top = (char **)b->top + offset;
		break;
	case SEEK_END:
		b->top = rows + b->nr_entries - 1 + offset;
		break;
	default:
		break;
	}
}

static void bpf_top_tui__free(struct bpf_top_tui *tui)
{
	int i;

	for (i = 0; i < tui->nr_rows; i++)
		free(tui->rows[i]);
	zfree(&tui->rows);
	tui->nr_rows = 0;
}

/* The rows of what the last refresh read, and the summary for the helpline */
static int bpf_top_tui__fill(struct bpf_top_tui *tui, struct bpf_top *top, char *title,
			     size_t size)
{
	struct bpf_top_prog **v;
	char line[1024];
	int i, nr = 0;

	v = bpf_top__sorted(top, &nr);
	if (!v)
		return -ENOMEM;
	bpf_top__title(top, v, nr, top->window, title, size);
	if (top->entries && nr > top->entries)
		nr = top->entries;
	bpf_top_tui__free(tui);
	tui->rows = calloc(nr ?: 1, sizeof(*tui->rows));
	if (!tui->rows) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		bpf_top__row(top, v[i], top->window, line, sizeof(line));
		tui->rows[tui->nr_rows] = strdup(line);
		if (tui->rows[tui->nr_rows])
			tui->nr_rows++;
	}
	if (!nr) {
		tui->rows[0] = strdup(bpf_top__none(top));
		tui->nr_rows = tui->rows[0] ? 1 : 0;
	}
	free(v);
	tui->b.entries = tui->rows;
	ui_browser__update_nr_entries(&tui->b, tui->nr_rows);
	/* fewer rows than before: the cursor on the last */
	if (tui->b.index >= (u64)tui->nr_rows)
		tui->b.index = tui->nr_rows - 1;
	if (tui->b.top_idx > tui->b.index) {
		tui->b.top_idx = tui->b.index;
		tui->b.seek(&tui->b, tui->b.top_idx, SEEK_SET);
	}
	return 0;
}

static int bpf_top__tui(struct bpf_top *top)
{
	struct bpf_top_tui tui = {
		.b = {
			.refresh	= ui_browser__argv_refresh,
			.seek		= bpf_top_tui__seek,
			.write		= bpf_top_tui__write,
		},
	};
	/* whole seconds: the browser waits for keys that long */
	int secs = top->interval ? (top->interval + 999) / 1000 : (int)(top->delay + 0.5);
	char heads[512], title[256] = "";
	int key, windows = 0;

	if (secs < 1)
		secs = 1;
	evlist__enable(top->evlist);
	bpf_top__scan(top, false);
	top->start = bpf_top__refresh(top);
	bpf_top__heads(top, heads, sizeof(heads));
	/* the programs there, without figures until the first refresh */
	top->err = bpf_top_tui__fill(&tui, top, title, sizeof(title));
	if (top->err ||
	    ui_browser__show(&tui.b, heads, "perf bpf top: figures every %d s; q quits", secs) < 0)
		goto out;
	while (!done && !top->err) {
		key = ui_browser__run(&tui.b, secs);
		if (key == K_TIMER) {
			bpf_side_band__read(top->evlist, &top->err);
			bpf_top__refresh(top);
			top->err = top->err ?: bpf_top_tui__fill(&tui, top, title, sizeof(title));
			if (!top->err)
				ui_helpline__puts(title);
			if (top->interval_count && ++windows >= top->interval_count)
				break;
			continue;
		}
		if (key == 'q' || key == K_ESC || key == CTRL('c') || key == K_ERROR)
			break;
	}
out:
	ui_browser__hide(&tui.b);
	bpf_top_tui__free(&tui);
	evlist__disable(top->evlist);
	return top->err;
}
#endif

static int bpf_top__parse_types(struct bpf_top *top)
{
	char *s, *tok, *save = NULL;
	int t;

	s = strdup(top->types_str);
	if (!s)
		return -ENOMEM;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (t = 0; t < 64; t++) {
			const char *name = libbpf_bpf_prog_type_str(t);

			if (name && !strcmp(name, tok))
				break;
		}
		if (t == 64) {
			pr_err("perf bpf top: --prog-type: unknown program type '%s'\n"
			       "(libbpf's names: tracepoint, kprobe, xdp, ...)\n", tok);
			free(s);
			return -EINVAL;
		}
		top->types |= 1ULL << t;
	}
	free(s);
	return 0;
}

static int bpf_top__parse_sort(struct bpf_top *top)
{
	char *s, *tok, *save = NULL;
	int k;

	s = strdup(top->sort_str);
	if (!s)
		return -ENOMEM;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < BPF_TOP_KEY_MAX; k++) {
			if (!strcmp(bpf_top_keys[k], tok))
				break;
		}
		if (k == BPF_TOP_KEY_MAX) {
			pr_err("perf bpf top: -s: unknown sort key '%s'\n"
			       "(run_time, runs, avg, run_time_total, runs_total, id, name, type)\n",
			       tok);
			free(s);
			return -EINVAL;
		}
		if (top->nr_sort == BPF_TOP_KEY_MAX) {
			pr_err("perf bpf top: -s: more than %d sort keys\n", BPF_TOP_KEY_MAX);
			free(s);
			return -EINVAL;
		}
		top->sort[top->nr_sort++] = k;
	}
	free(s);
	if (!top->nr_sort) {
		pr_err("perf bpf top: -s takes sort keys, not '%s'\n", top->sort_str);
		return -EINVAL;
	}
	return 0;
}

/*
 * -e: the events, each opened once on every online CPU here to say at
 * once what cannot be counted, then once a program counted; and their
 * keys for -x and -j
 */
static int bpf_top__parse_events(struct bpf_top *top)
{
	struct target target = { .system_wide = true, .uid = UINT_MAX, };
	const size_t nr_fixed = ARRAY_SIZE(bpf_top_columns) - 1;
	struct parse_events_error perr;
	struct evsel *evsel, *pos;
	char msg[BUFSIZ];
	int err, i;

	top->events = evlist__new();
	top->cpus = perf_cpu_map__new_online_cpus();
	top->own = intlist__new(NULL);
	if (!top->events || !top->cpus || !top->own)
		return -ENOMEM;
	parse_events_error__init(&perr);
	err = parse_events(top->events, top->event_str, &perr);
	if (err)
		parse_events_error__print(&perr, top->event_str);
	parse_events_error__exit(&perr);
	if (err)
		return -1;
	evlist__for_each_entry(top->events, evsel) {
		struct perf_event_attr *attr = &evsel->core.attr;

		if (evsel__is_tool(evsel) || !evsel__is_group_leader(evsel) ||
		    evsel->core.nr_members > 1) {
			pr_err("perf bpf top: -e takes events the kernel counts, not in groups: not %s\n",
			       evsel__name(evsel));
			return -1;
		}
		/* BPF programs run in the kernel */
		if (attr->exclude_kernel) {
			pr_err("perf bpf top: -e %s counts nothing: BPF programs run in the kernel\n",
			       evsel__name(evsel));
			return -1;
		}
		evlist__for_each_entry(top->events, pos) {
			if (pos == evsel)
				break;
			if (!strcmp(evsel__name(pos), evsel__name(evsel))) {
				pr_err("perf bpf top: -e names %s twice\n", evsel__name(evsel));
				return -1;
			}
		}
		/* counting from the open; BPF cannot read inherited counts */
		attr->disabled = 0;
		attr->inherit = 0;
		err = evsel__open_per_cpu(evsel, top->cpus, -1);
		if (err) {
			evsel__open_strerror(evsel, &target, -err, msg, sizeof(msg));
			pr_err("perf bpf top: cannot count %s: %s\n", evsel__name(evsel), msg);
			return -1;
		}
		evsel__close(evsel);
		top->nr_events++;
	}
#ifndef HAVE_BPF_SKEL
	pr_err("perf bpf top: -e needs perf built with BPF skeletons (BUILD_BPF_SKEL=1)\n");
	return -1;
#endif
	top->columns = calloc(nr_fixed + 3 * top->nr_events + 1, sizeof(*top->columns));
	if (!top->columns)
		return -ENOMEM;
	memcpy(top->columns, bpf_top_columns, nr_fixed * sizeof(*top->columns));
	i = nr_fixed;
	evlist__for_each_entry(top->events, evsel) {
		const char *name = evsel__name(evsel);

		if (asprintf((char **)&top->columns[i++], "%s", name) < 0 ||
		    asprintf((char **)&top->columns[i++], "%s_per_run", name) < 0 ||
		    asprintf((char **)&top->columns[i++], "%s_total", name) < 0) {
			top->columns[i - 1] = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static void bpf_top__exit(struct bpf_top *top)
{
	const size_t nr_fixed = ARRAY_SIZE(bpf_top_columns) - 1;
	struct hashmap_entry *cur;
	size_t bkt, i;

	evlist__delete(top->evlist);
	if (top->progs) {
		hashmap__for_each_entry(top->progs, cur, bkt)
			bpf_top_prog__delete(top, cur->pvalue);
		hashmap__free(top->progs);
	}
	intlist__delete(top->ids);
	intlist__delete(top->pids);
	intlist__delete(top->own);
	evlist__delete(top->events);
	perf_cpu_map__put(top->cpus);
	if (top->columns) {
		for (i = nr_fixed; top->columns[i]; i++)
			free((char *)top->columns[i]);
		free(top->columns);
	}
	bpf_resolver__exit(&top->res);
	if (top->stats_fd >= 0)
		close(top->stats_fd);
	if (top->out.fp && top->out.fp != stdout)
		fclose(top->out.fp);
}

static int bpf_top__parse_delay(const struct option *opt, const char *str, int unset)
{
	struct bpf_top *top = opt->value;
	double *delay = &top->delay;
	char *end;

	if (unset || !str) {
		pr_err("perf bpf top: -d takes a number of seconds\n");
		return -1;
	}
	top->delay_set = true;
	errno = 0;
	*delay = strtod(str, &end);
	if (errno || end == str || *end || !(*delay >= 0.1) || *delay > 1e6) {
		pr_err("perf bpf top: -d takes a number of seconds from 0.1, not '%s'\n", str);
		return -1;
	}
	return 0;
}

static int cmd_bpf_top(int argc, const char **argv)
{
	struct bpf_top top = {
		.delay = 2,
		.mmap_pages = UINT_MAX,
		.stats_fd = -1,
		.sort_str = "run_time,run_time_total",
	};
	struct target target = { .system_wide = true, .uid = UINT_MAX, };
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_DUMMY,
		.size		= sizeof(attr),
		.sample_id_all	= 1,
		.bpf_event	= 1,
		.bpf_event_ext	= 1,
		.watermark	= 1,
		.wakeup_watermark = 1,
	};
	const char *sep = NULL;
	const char * const usage[] = {
		"perf bpf top [<options>]",
		NULL
	};
	const struct option options[] = {
	OPT_CALLBACK('d', "delay", &top, "secs",
		     "seconds between refreshes of the screen (default 2)", bpf_top__parse_delay),
	OPT_INTEGER('I', "interval-print", &top.interval,
		    "print the figures every this many ms (default: -d)"),
	OPT_INTEGER(0, "interval-count", &top.interval_count,
		    "stop after this many refreshes"),
	OPT_STRING('s', "sort", &top.sort_str, "key[,key...]",
		   "sort by run_time, runs, avg, run_time_total, runs_total, id, name, type"),
	OPT_INTEGER('E', "entries", &top.entries, "show this many programs at most"),
	OPT_STRING('e', "event", &top.event_str, "event[,event...]",
		   "count these around each run of the programs (perf stat -b's profiler)"),
	OPT_STRING(0, "name", &top.name_glob, "glob", "only the programs whose name matches"),
	OPT_STRING(0, "prog-type", &top.types_str, "type[,type...]",
		   "only programs of these types (libbpf's names: tracepoint, kprobe, ...)"),
	OPT_STRING(0, "id", &top.id_str, "id[,id...]", "only these programs"),
	OPT_STRING('p', "pid", &top.pid_str, "pid[,pid...]",
		   "only the programs these processes hold, or hold links to"),
	OPT_BOOLEAN(0, "stdio", &top.stdio, "print text, a screen a refresh"),
	OPT_STRING('x', "field-separator", &sep, "separator",
		   "print CSV with this separator: a header, a line a program a refresh"),
	OPT_BOOLEAN('j', "json-output", &top.json,
		    "print one JSON object a program a refresh"),
	OPT_STRING('o', "output", &top.output_name, "file", "output file name"),
	OPT_CALLBACK('m', "mmap-pages", &top.mmap_pages, "pages",
		     "number of mmap data pages per CPU", evlist__parse_mmap_pages),
	OPT_INCR('v', "verbose", &verbose, "be more verbose"),
	OPT_END()
	};
	struct sigaction act = { .sa_handler = bpf_events__signal };
	char msg[BUFSIZ];
	int err, on = 0;

	argc = parse_options(argc, argv, options, usage, 0);
	if (argc)
		usage_with_options_msg(usage, options, "unexpected argument '%s'", argv[0]);
	if (sep && top.json)
		usage_with_options_msg(usage, options, "-x and -j are mutually exclusive");
	if ((sep || top.json) && top.stdio)
		usage_with_options_msg(usage, options, "--stdio goes with neither -x nor -j");
	if (!top.sort_str)
		usage_with_options_msg(usage, options, "-s takes sort keys");
	if (top.delay_set && top.interval)
		usage_with_options_msg(usage, options, "-d and -I are mutually exclusive");
	if (top.interval < 0 || (top.interval && top.interval < 10))
		usage_with_options_msg(usage, options, "-I takes 10 ms or more");
	if (top.interval_count < 0)
		usage_with_options_msg(usage, options, "--interval-count takes a positive count");
	if (top.entries < 0)
		usage_with_options_msg(usage, options, "-E takes a positive count");
	if (top.id_str) {
		top.ids = intlist__new(top.id_str);
		if (!top.ids)
			usage_with_options_msg(usage, options, "--id takes program ids, not '%s'",
					       top.id_str);
	}
	if (top.pid_str) {
		top.pids = intlist__new(top.pid_str);
		if (!top.pids)
			usage_with_options_msg(usage, options, "-p takes process ids, not '%s'",
					       top.pid_str);
	}
	if (bpf_top__parse_sort(&top) ||
	    (top.types_str && bpf_top__parse_types(&top))) {
		err = -1;
		goto out;
	}
	if (bpf_check_privileges("top", true)) {
		err = -1;
		goto out;
	}
	if (top.event_str) {
		err = bpf_top__parse_events(&top);
		if (err == -ENOMEM)
			pr_err("perf bpf top: out of memory\n");
		if (err)
			goto out;
	}

	err = bpf_out__setup(&top.out, sep, top.json, top.output_name, "top");
	if (err)
		goto out;
	top.clear = top.out.format == BPF_FORMAT_TEXT && isatty(fileno(top.out.fp));
	top.nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (top.nr_cpus < 1)
		top.nr_cpus = 1;

	err = -ENOMEM;
	if (bpf_resolver__init(&top.res))
		goto out;
	top.progs = id_map();
	if (!top.progs)
		goto out;
	/* the records first, then the programs there: none falls in between */
	err = bpf_side_band__open(&top.evlist, &attr, bpf_top__record, &top, &target,
				  top.mmap_pages, "top");
	if (err)
		goto out;
	/* without link records, links are looked for at each refresh */
	top.links_always = !bpf_side_band__has_links(top.evlist);
	while (!bpf_prog_get_next_id(top.last_id, &top.last_id))
		;

	/*
	 * Run-time stats through an fd: the kernel turns them off when the
	 * last holder closes it, killed or not.  The sysctl is never written.
	 */
	top.stats_were_on = sysctl__read_int("kernel/bpf_stats_enabled", &on) == 0 && on;
	top.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (top.stats_fd < 0) {
		err = -errno;
		pr_err("perf bpf top: cannot turn BPF run-time stats on (BPF_ENABLE_STATS): %s\n",
		       str_error_r(errno, msg, sizeof(msg)));
		goto out;
	}
	if (top.stats_were_on)
		pr_warning("perf bpf top: kernel.bpf_stats_enabled is 1: %s\n",
			   "BPF run-time stats were on before and stay on");

	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
#ifdef HAVE_SLANG_SUPPORT
	/* on a terminal, the TUI unless --stdio */
	if (top.out.format == BPF_FORMAT_TEXT && top.out.fp == stdout && !top.stdio &&
	    isatty(STDIN_FILENO)) {
		setup_browser(false);
		/* perf's main ends the TUI, after the command returns */
		if (use_browser == 1) {
			err = bpf_top__tui(&top);
			goto done;
		}
	}
#endif
	out_header(&top.out, top.columns ?: bpf_top_columns);
	err = bpf_top__loop(&top);
#ifdef HAVE_SLANG_SUPPORT
done:
#endif
	if (err < 0 && err != -1)
		pr_err("perf bpf top: %s\n", str_error_r(-err, msg, sizeof(msg)));
out:
	bpf_top__exit(&top);
	return err ? -1 : 0;
}

int cmd_bpf(int argc, const char **argv)
{
	static const char * const usage[] = {
		"perf bpf events [<options>] [-- <command> [<args>]]",
		"perf bpf list [<options>]",
		"perf bpf top [<options>]",
		NULL
	};
	const struct option options[] = {
	OPT_END()
	};

	argc = parse_options(argc, argv, options, usage, PARSE_OPT_STOP_AT_NON_OPTION);
	if (!argc)
		usage_with_options(usage, options);
	if (!strcmp(argv[0], "events"))
		return cmd_bpf_events(argc, argv);
	if (!strcmp(argv[0], "list"))
		return cmd_bpf_list(argc, argv);
	if (!strcmp(argv[0], "top"))
		return cmd_bpf_top(argc, argv);
	usage_with_options_msg(usage, options, "unknown subcommand '%s'", argv[0]);
	return -1;
}
