/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPF_DESC_H
#define __PERF_BPF_DESC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/bits.h>
#include <linux/bpf.h>
#include <linux/types.h>

struct btf;
struct hashmap;
struct bpf_kallsyms;

/* What perf bpf knows of a program and of a link, for people */
struct bpf_prog_desc {
	u32			id;
	u32			type;		/* enum bpf_prog_type */
	bool			type_known;
	u8			tag[BPF_TAG_SIZE];
	char			*name;
	u32			verified_insns;	/* what the verifier went through, 0: not said */
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
	/*
	 * id 0: an attachment without a link (bpf_attachments__scan()),
	 * and how it was found: "task_fd_query", "netlink", "prog_query"
	 */
	const char		*found;
};

/*
 * What turns ids into names: BTF objects, cgroup paths, kernel function
 * addresses.  The cgroup tree is walked once a session, /proc/kallsyms
 * read once; what appears later is looked up at most once a batch (a
 * pass over the side-band rings, a refresh, a list): the caller starts
 * each with bpf_resolver__next_batch().
 */
struct bpf_resolver {
	struct btf		*vmlinux;
	bool			vmlinux_tried;
	struct hashmap		*btfs;		/* object id -> struct bpf_kernel_btf * */
	struct hashmap		*cgroups;	/* cgroup id -> path, or NULL if none */
	char			cgroot[PATH_MAX];
	bool			cgroot_tried;
	int			cgroot_fd;	/* for open_by_handle_at(), -1 if none */
	int			cg_handles;	/* by id: 1 works, -1 does not, 0 untried */
	u64			batch;
	u64			cg_walked;	/* batch of the last walk, 0: none yet */
	struct bpf_kallsyms	*kallsyms;
	u64			kallsyms_read;	/* batch of the last read, 0: none yet */
};

/*
 * The processes holding fds of each program and link, found as bpftool
 * finds them, through /proc/PID/fd and fdinfo
 */
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

struct hashmap *perf_bpf__id_map(void);
const char *perf_bpf__prog_type_name(u32 prog_type, char *buf, size_t size);
const char *perf_bpf__link_type_name(u32 link_type, char *buf, size_t size);
const char *perf_bpf__attach_type_name(u32 attach_type, char *buf, size_t size);
void perf_bpf__tag_str(const u8 *tag, char *buf);
const char *perf_bpf__ksym_prog(const char *ksym, const char *tag);
int perf_bpf__fd_by_id(int (*get_fd)(__u32 id), u32 id);
u64 perf_bpf__map_memlock(u32 id);

char *perf_bpf__prog_func_name(int fd, const struct bpf_prog_info *info);
int bpf_prog_desc__fill(struct bpf_prog_desc *prog, int fd, const char *ksym_name);
void bpf_prog_desc__delete(struct bpf_prog_desc *prog);

int bpf_resolver__init(struct bpf_resolver *res);
void bpf_resolver__exit(struct bpf_resolver *res);
void bpf_resolver__next_batch(struct bpf_resolver *res);
const char *bpf_resolver__cgroup(struct bpf_resolver *res, u64 id);

int bpf_link_desc__fill(struct bpf_link_desc *link, int fd, struct bpf_resolver *res);
void bpf_link_desc__delete(struct bpf_link_desc *link);

/* What bpf_attachments__scan() looks for: attachments to these */
#define BPF_ATTACH_PERF_EVENT	BIT(0)
#define BPF_ATTACH_XDP		BIT(1)
#define BPF_ATTACH_CGROUP	BIT(2)
#define BPF_ATTACH_ALL		(BPF_ATTACH_PERF_EVENT | BPF_ATTACH_XDP | BPF_ATTACH_CGROUP)

int bpf_attachments__scan(struct bpf_link_desc ***v, int *nr, int *alloc, unsigned int kinds,
			  struct bpf_resolver *res);
unsigned int bpf_attachments__kinds(u32 prog_type);

void bpf_owner_maps__scan_pid(struct bpf_owner_maps *maps, pid_t pid);
void bpf_owner_maps__scan(struct bpf_owner_maps *maps);
struct bpf_owners *bpf_owners__find(struct hashmap *map, u32 id);
void bpf_owner_map__free(struct hashmap *map);

#endif /* __PERF_BPF_DESC_H */
