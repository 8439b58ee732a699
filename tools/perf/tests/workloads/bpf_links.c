// SPDX-License-Identifier: GPL-2.0
/*
 * BPF programs and links for the perf bpf tests to watch come and go.
 *
 *   perf test -w bpf_links links CGROUP [FUNC]
 *	Load five programs and attach each through a link: cgroup_skb on
 *	CGROUP's egress, raw_tp on sched_process_exec, fentry on FUNC (by
 *	default the first of bpf_fentry_test1, do_nanosleep that the
 *	kernel's BTF has), perf_event on a cpu-clock event of this process
 *	and xdp on lo.  The raw_tp program uses an array map, pbt_map.  The
 *	raw_tp, perf_event and xdp programs are loaded with no expected
 *	attach type (0), as libbpf loads raw_tp and perf_event programs and
 *	as loaders that set none load xdp ones; the link gives the attach
 *	type.  Print "prog KIND ID NAME", "map KIND ID" and "link KIND ID
 *	PROG_ID TARGET" lines, then "ready", and wait for a line (or the
 *	end) on stdin.  Then detach the cgroup and xdp links with
 *	BPF_LINK_DETACH, close every link ("detached"), close the programs
 *	and the map ("unloaded").
 *
 *   perf test -w bpf_links struct_ops
 *	Register a TCP congestion control named pbt_cc_PID, its three
 *	required operations struct_ops programs named pbt_cc in a
 *	struct_ops map, through a link, which holds no program of its own;
 *	print "link struct_ops ID 0 pbt_cc_PID" and "ready", and wait for a
 *	line (or the end) on stdin; then close the link ("detached") and the
 *	map ("unloaded").  Exit 3 if the kernel has no tcp_congestion_ops
 *	struct_ops (it registers them only with module support).
 *
 *   perf test -w bpf_links short N
 *	Load and close a program named pbt_short N times; print
 *	"short I NS" with the time between the end of the load and the end
 *	of the close (no more: asking for its id would lengthen its life).
 *
 *   perf test -w bpf_links churn CGROUP SECS [RATE]
 *	For SECS seconds, load a program, attach it to CGROUP through a
 *	link, close the link and the program, as fast as possible or RATE
 *	times a second; print "churn OPS SECS", each operation being four
 *	PERF_RECORD_BPF_EVENT records.  CGROUP "-": no link, two records
 *	an operation.
 *
 *   perf test -w bpf_links runs
 *	Load a tracepoint program named pbt_runs, with BTF for the
 *	profiler of perf stat -b and perf bpf top -e, and attach it through a
 *	perf_event link to syscalls:sys_enter_getcpu, which nothing else
 *	enters (glibc asks the vDSO); print "prog runs ID pbt_runs", "link
 *	runs ID PROG_ID syscalls:sys_enter_getcpu" and "ready".  Then, for
 *	each line "run N" on stdin, enter getcpu N times and print "ran N
 *	NS", NS the time that took; for "detach", close the link and the
 *	event and print "detached"; at any other line, or the end, close
 *	the program.
 *
 *   perf test -w bpf_links recursion
 *	Load an fentry program named pbt_recursion on htab_map_delete_elem
 *	that, unless the delete is from its own hash map (pbt_recursion),
 *	deletes a key of that map, and attach it through a link: such a run
 *	enters htab_map_delete_elem again, where the kernel does not run it
 *	a second time but counts a recursion miss.  Print "prog recursion
 *	ID pbt_recursion INSNS", INSNS the instructions the verifier says it
 *	processed (its log's statistics), and "ready"; for each line "run
 *	N" on stdin, delete a key of another hash map, pbt_other, N times (N
 *	runs, N misses), for "own N" one of its own map (N runs, no miss),
 *	and print "ran N"; at any other line, or the end, close all.  Exit
 *	3 if the kernel's BTF has no htab_map_delete_elem.
 *
 *   perf test -w bpf_links loop
 *	Load a tracepoint program named pbt_loop, with BTF, that calls
 *	bpf_loop() as many times as the first entry of its array map
 *	(pbt_loop) says, and attach it through a perf_event link to
 *	syscalls:sys_enter_getcpu, as for runs; print "prog loop ID
 *	pbt_loop" and "ready".  For each line "run K N" on stdin, enter
 *	getcpu K times with N loops a run; for "mix K N", K times with N
 *	loops, every tenth time 50 * N; then print "ran K".  For "spin N",
 *	enter it with N loops a run until the next line comes (which is
 *	taken as the end of the spin, whatever it says), and print "spun
 *	K", K the runs.  At any other line, or the end, close all.
 *
 *   perf test -w bpf_links net CGROUP
 *	Load an XDP program named pbt_net_xdp and a cgroup_skb program named
 *	pbt_net_egress, both with BTF (as runs) and letting every packet
 *	through; attach the first through a link to lo, the second to the
 *	egress of CGROUP; bind a UDP socket to 127.0.0.1, which is never
 *	read (what is sent there stops there, with no ICMP error); print
 *	"prog xdp ID pbt_net_xdp", "prog egress ID pbt_net_egress", "port
 *	PORT" (the socket's) and "ready", and wait for a line (or the end)
 *	on stdin; then close all.
 *
 *   perf test -w bpf_links nolink CGROUP
 *	Attach three programs without a link, as older tools do: a
 *	tracepoint program named pbt_nolink_tp to syscalls:sys_enter_getcpu
 *	through PERF_EVENT_IOC_SET_BPF on a perf event it holds, an XDP
 *	program named pbt_nolink_xdp to lo over netlink (generic mode), a
 *	cgroup_skb program named pbt_nolink_cg to the egress of CGROUP with
 *	BPF_PROG_ATTACH (BPF_F_ALLOW_MULTI) and through a link as well;
 *	print "prog tp ID pbt_nolink_tp", "prog xdp ID pbt_nolink_xdp",
 *	"prog cgroup ID pbt_nolink_cg", "link cgroup ID" and "ready", and
 *	wait for a line (or the end, or SIGTERM) on stdin; then detach and
 *	close all (an XDP program attached over netlink would stay on lo).
 *
 *   perf test -w bpf_links many N
 *	Load N socket filter programs named pbt_many (raising the limit on
 *	open files to hold them), print "many N" and wait for a line (or
 *	the end) on stdin; then close them.
 *
 *   perf test -w bpf_links many N CGROUP
 *	The same with N cgroup_skb programs named pbt_many, each using one
 *	array map named pbt_many that they share, each attached through a
 *	link to the egress of a cgroup CGROUP/pbt_many_K, made for each 32
 *	links; then close the links and the map and remove these cgroups.
 *
 * Programs are named pbt_KIND, built from instructions here so that nothing
 * needs clang.
 * Exit status: 0, 1 on failure, 2 if perf was built without libbpf.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/if_link.h>
#include <linux/perf_event.h>
#include "../tests.h"

#ifdef HAVE_LIBBPF_SUPPORT
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

struct bpf_links_prog {
	const char		*kind;
	const char		*name;
	enum bpf_prog_type	type;
	enum bpf_attach_type	load_type;	/* expected attach type at load */
	enum bpf_attach_type	attach_type;	/* the link's */
	int			ret;		/* what the program returns */
	bool			map;		/* uses the array map */
	int			fd;
	int			link_fd;
	bool			detach;		/* BPF_LINK_DETACH before close */
	char			target[64];
};

#define BPF_LINKS_PROG(_kind, _type, _load_type, _attach_type, _ret, _map, _detach) { \
	.kind = #_kind, .name = "pbt_" #_kind, .type = _type,			\
	.load_type = _load_type, .attach_type = _attach_type, .ret = _ret,	\
	.map = _map, .detach = _detach,						\
}

static struct bpf_links_prog bpf_links_progs[] = {
	BPF_LINKS_PROG(cgroup, BPF_PROG_TYPE_CGROUP_SKB, BPF_CGROUP_INET_EGRESS,
		       BPF_CGROUP_INET_EGRESS, 1, false, true),
	BPF_LINKS_PROG(raw_tp, BPF_PROG_TYPE_RAW_TRACEPOINT, 0, BPF_TRACE_RAW_TP, 0, true, false),
	BPF_LINKS_PROG(fentry, BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, BPF_TRACE_FENTRY, 0,
		       false, false),
	BPF_LINKS_PROG(perf_event, BPF_PROG_TYPE_PERF_EVENT, 0, BPF_PERF_EVENT, 0, false, false),
	BPF_LINKS_PROG(xdp, BPF_PROG_TYPE_XDP, 0, BPF_XDP, XDP_PASS, false, true),
};

static u64 bpf_links_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* [r1 = map_fd (the map, as a pointer)]; r0 = ret; exit */
static int bpf_links_load(const char *name, enum bpf_prog_type type,
			  enum bpf_attach_type attach_type, u32 btf_id, int ret, int map_fd)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
		{},
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = ret },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	size_t skip = map_fd < 0 ? 2 : 0;

	opts.expected_attach_type = attach_type;
	opts.attach_btf_id = btf_id;

	return bpf_prog_load(type, name, "GPL", insns + skip, ARRAY_SIZE(insns) - skip, &opts);
}

static u32 bpf_links_prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_prog_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

static u32 bpf_links_link_id(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_link_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

static u32 bpf_links_map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_map_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

static int bpf_links_fail(const char *what)
{
	fprintf(stderr, "bpf_links workload: %s: %s\n", what, strerror(errno));
	return 1;
}

/* The BTF id of the first of these kernel functions the kernel has */
static int bpf_links_func(const char *want, char *name, size_t size)
{
	static const char * const funcs[] = { "bpf_fentry_test1", "do_nanosleep" };
	struct btf *btf = btf__load_vmlinux_btf();
	int id = -1;
	size_t i;

	if (!btf)
		return -1;
	for (i = 0; i < ARRAY_SIZE(funcs) && id < 0; i++) {
		const char *f = want ?: funcs[i];

		id = btf__find_by_name_kind(btf, f, BTF_KIND_FUNC);
		if (id > 0)
			snprintf(name, size, "%s", f);
		if (want)
			break;
	}
	btf__free(btf);
	return id;
}

static int bpf_links_attach(struct bpf_links_prog *p, int cgroup_fd, int perf_fd)
{
	unsigned int lo = if_nametoindex("lo");

	if (p->type == BPF_PROG_TYPE_CGROUP_SKB)
		return bpf_link_create(p->fd, cgroup_fd, p->attach_type, NULL);
	if (p->type == BPF_PROG_TYPE_RAW_TRACEPOINT) {
		snprintf(p->target, sizeof(p->target), "sched_process_exec");
		return bpf_raw_tracepoint_open(p->target, p->fd);
	}
	if (p->type == BPF_PROG_TYPE_TRACING)
		return bpf_link_create(p->fd, 0, p->attach_type, NULL);
	if (p->type == BPF_PROG_TYPE_PERF_EVENT) {
		snprintf(p->target, sizeof(p->target), "event cpu-clock");
		return bpf_link_create(p->fd, perf_fd, p->attach_type, NULL);
	}
	snprintf(p->target, sizeof(p->target), "lo ifindex %u", lo);
	return bpf_link_create(p->fd, lo, p->attach_type, NULL);
}

static int bpf_links_links(const char *cgroup, const char *func)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_period = 1000000000,
	};
	int cgroup_fd, perf_fd, map_fd, btf_id, err = 0;
	char line[16];
	size_t i;

	cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (cgroup_fd < 0)
		return bpf_links_fail(cgroup);
	perf_fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (perf_fd < 0)
		return bpf_links_fail("perf_event_open");
	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pbt_map", sizeof(u32), sizeof(u64), 16, NULL);
	if (map_fd < 0)
		return bpf_links_fail("pbt_map");

	for (i = 0; i < ARRAY_SIZE(bpf_links_progs); i++) {
		struct bpf_links_prog *p = &bpf_links_progs[i];

		btf_id = 0;
		if (p->type == BPF_PROG_TYPE_TRACING) {
			btf_id = bpf_links_func(func, p->target, sizeof(p->target));
			if (btf_id < 0)
				return bpf_links_fail("no function to trace in the kernel's BTF");
		} else if (p->type == BPF_PROG_TYPE_CGROUP_SKB) {
			snprintf(p->target, sizeof(p->target), "%s", cgroup);
		}
		p->fd = bpf_links_load(p->name, p->type, p->load_type, btf_id, p->ret,
				       p->map ? map_fd : -1);
		if (p->fd < 0)
			return bpf_links_fail(p->name);
		printf("prog %s %u %s\n", p->kind, bpf_links_prog_id(p->fd), p->name);
		if (p->map)
			printf("map %s %u\n", p->kind, bpf_links_map_id(map_fd));
		p->link_fd = bpf_links_attach(p, cgroup_fd, perf_fd);
		if (p->link_fd < 0)
			return bpf_links_fail(p->kind);
		printf("link %s %u %u %s\n", p->kind, bpf_links_link_id(p->link_fd),
		       bpf_links_prog_id(p->fd), p->target);
	}
	printf("ready\n");
	fflush(stdout);

	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		err = bpf_links_fail("stdin");

	for (i = 0; i < ARRAY_SIZE(bpf_links_progs); i++) {
		struct bpf_links_prog *p = &bpf_links_progs[i];

		if (p->detach && bpf_link_detach(p->link_fd))
			err = bpf_links_fail("BPF_LINK_DETACH");
		close(p->link_fd);
	}
	printf("detached\n");
	fflush(stdout);
	for (i = 0; i < ARRAY_SIZE(bpf_links_progs); i++)
		close(bpf_links_progs[i].fd);
	close(map_fd);
	close(perf_fd);
	close(cgroup_fd);
	printf("unloaded\n");
	return err;
}

/* Index, byte offset and size of member @name of struct @id; -1 if none */
static int bpf_links_member(const struct btf *btf, u32 id, const char *name, u32 *off, u32 *size)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m = btf_members(t);
	s64 sz;
	int i;

	for (i = 0; i < btf_vlen(t); i++, m++) {
		if (strcmp(btf__name_by_offset(btf, m->name_off), name))
			continue;
		sz = btf__resolve_size(btf, m->type);
		if (sz < 0)
			return -1;
		*off = btf_member_bit_offset(t, i) / 8;
		*size = sz;
		return i;
	}
	return -1;
}

/* Fill a struct bpf_struct_ops_tcp_congestion_ops: its name, its programs */
static int bpf_links_cc_fill(const struct btf *btf, s32 value_id, s32 ops_id, char *value,
			     const char *name, int *progs)
{
	static const struct {
		const char	*op;
		int		ret;
	} ops[] = {
		{ "ssthresh", 2 }, { "undo_cwnd", 2 }, { "cong_avoid", 0 },
	};
	u32 data, off, size;
	size_t i;
	int idx;

	if (bpf_links_member(btf, value_id, "data", &data, &size) < 0 ||
	    bpf_links_member(btf, ops_id, "name", &off, &size) < 0)
		return -1;
	snprintf(value + data + off, size, "%s", name);
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		idx = bpf_links_member(btf, ops_id, ops[i].op, &off, &size);
		if (idx < 0)
			return -1;
		/* the member's index is the program's expected attach type */
		progs[i] = bpf_links_load("pbt_cc", BPF_PROG_TYPE_STRUCT_OPS, idx, ops_id,
					  ops[i].ret, -1);
		if (progs[i] < 0)
			return -1;
		*(u64 *)(value + data + off) = progs[i];
	}
	return 0;
}

static int bpf_links_struct_ops(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_LINK);
	struct btf *btf = btf__load_vmlinux_btf(), *user = btf__new_empty();
	int progs[3] = { -1, -1, -1 }, map_fd = -1, link_fd = -1, ret = 1;
	s32 value_id = -1, ops_id = -1;
	char name[32], line[16], *value = NULL;
	s64 value_size = 0;
	u32 key = 0;
	size_t i;

	if (btf) {
		value_id = btf__find_by_name_kind(btf, "bpf_struct_ops_tcp_congestion_ops",
						  BTF_KIND_STRUCT);
		ops_id = btf__find_by_name_kind(btf, "tcp_congestion_ops", BTF_KIND_STRUCT);
		value_size = btf__resolve_size(btf, value_id);
	}
	if (value_id < 0 || ops_id < 0 || value_size <= 0) {
		fprintf(stderr, "bpf_links workload: no BTF of tcp_congestion_ops struct_ops\n");
		ret = 3;
		goto out;
	}
	/* BPF_MAP_CREATE wants BTF of the map's own, whatever it holds */
	if (!user || btf__add_int(user, "int", 4, BTF_INT_SIGNED) < 0 ||
	    btf__load_into_kernel(user)) {
		ret = bpf_links_fail("BTF for the struct_ops map");
		goto out;
	}
	opts.btf_fd = btf__fd(user);
	opts.btf_vmlinux_value_type_id = value_id;
	map_fd = bpf_map_create(BPF_MAP_TYPE_STRUCT_OPS, "pbt_cc", sizeof(u32), value_size, 1,
				&opts);
	if (map_fd < 0) {
		/* the kernel's ENOTSUPP: tcp_congestion_ops not registered */
		ret = errno == 524 ? 3 : 1;
		bpf_links_fail("BPF_MAP_CREATE of tcp_congestion_ops");
		goto out;
	}
	value = calloc(1, value_size);
	snprintf(name, sizeof(name), "pbt_cc_%d", (int)getpid());
	if (!value || bpf_links_cc_fill(btf, value_id, ops_id, value, name, progs) ||
	    bpf_map_update_elem(map_fd, &key, value, 0)) {
		ret = bpf_links_fail("the tcp_congestion_ops map");
		goto out;
	}
	link_fd = bpf_link_create(map_fd, 0, BPF_STRUCT_OPS, NULL);
	if (link_fd < 0) {
		ret = bpf_links_fail("BPF_LINK_CREATE of tcp_congestion_ops");
		goto out;
	}
	printf("link struct_ops %u 0 %s\nready\n", bpf_links_link_id(link_fd), name);
	fflush(stdout);
	ret = 0;
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		ret = bpf_links_fail("stdin");
	close(link_fd);
	printf("detached\n");
	fflush(stdout);
out:
	for (i = 0; i < ARRAY_SIZE(progs); i++)
		if (progs[i] >= 0)
			close(progs[i]);
	if (map_fd >= 0)
		close(map_fd);
	if (!ret)
		printf("unloaded\n");
	free(value);
	btf__free(user);
	btf__free(btf);
	return ret;
}

static int bpf_links_short(int n)
{
	u64 loaded;
	int i, fd;

	for (i = 0; i < n; i++) {
		fd = bpf_links_load("pbt_short", BPF_PROG_TYPE_SOCKET_FILTER, 0, 0, 0, -1);
		loaded = bpf_links_now();
		if (fd < 0)
			return bpf_links_fail("pbt_short");
		close(fd);
		printf("short %d %llu\n", i, (unsigned long long)(bpf_links_now() - loaded));
	}
	return 0;
}

static int bpf_links_churn(const char *cgroup, double secs, double rate)
{
	u64 start = bpf_links_now(), end = start + secs * 1e9, next = start;
	unsigned long ops = 0;
	bool links = strcmp(cgroup, "-");	/* "-": programs only */
	int cgroup_fd = -1, fd, link;

	if (links) {
		cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY);
		if (cgroup_fd < 0)
			return bpf_links_fail(cgroup);
	}
	while (bpf_links_now() < end) {
		if (rate > 0) {
			struct timespec ts;
			u64 now = bpf_links_now();

			next += 1e9 / rate;
			if (next > now) {
				ts.tv_sec = (next - now) / 1000000000ULL;
				ts.tv_nsec = (next - now) % 1000000000ULL;
				nanosleep(&ts, NULL);
			}
		}
		fd = bpf_links_load("pbt_churn", BPF_PROG_TYPE_CGROUP_SKB,
				    BPF_CGROUP_INET_EGRESS, 0, 1, -1);
		if (fd < 0)
			return bpf_links_fail("pbt_churn");
		if (links) {
			link = bpf_link_create(fd, cgroup_fd, BPF_CGROUP_INET_EGRESS, NULL);
			if (link < 0)
				return bpf_links_fail("cgroup link");
			close(link);
		}
		close(fd);
		ops++;
	}
	printf("churn %lu %.3f\n", ops, (bpf_links_now() - start) / 1e9);
	if (links)
		close(cgroup_fd);
	return 0;
}

/* The id of tracepoint CATEGORY/NAME, from tracefs */
static int bpf_links_tracepoint(const char *category, const char *name)
{
	static const char * const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[256];
	size_t i;
	int id = -1;

	for (i = 0; i < ARRAY_SIZE(roots) && id < 0; i++) {
		FILE *fp;

		snprintf(path, sizeof(path), "%s/events/%s/%s/id", roots[i], category, name);
		fp = fopen(path, "r");
		if (!fp)
			continue;
		if (fscanf(fp, "%d", &id) != 1)
			id = -1;
		fclose(fp);
	}
	return id;
}

/*
 * The BTF of a program "int NAME(void *ctx)": fentry programs, as perf
 * stat -b's profiler attaches, need it of the program they trace
 */
static struct btf *bpf_links_btf(const char *name, u32 *func_id)
{
	struct btf *btf = btf__new_empty();
	int int_id, ptr_id, proto_id, id;

	if (!btf)
		return NULL;
	int_id = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	ptr_id = btf__add_ptr(btf, 0);
	proto_id = btf__add_func_proto(btf, int_id);
	if (int_id < 0 || ptr_id < 0 || proto_id < 0 ||
	    btf__add_func_param(btf, "ctx", ptr_id))
		goto err;
	id = btf__add_func(btf, name, BTF_FUNC_GLOBAL, proto_id);
	if (id < 0 || btf__load_into_kernel(btf))
		goto err;
	*func_id = id;
	return btf;
err:
	btf__free(btf);
	return NULL;
}

/*
 * Load "r0 = @ret; exit" as program @name of @type, with the BTF of
 * bpf_links_btf(); its fd, -1 on failure, said
 */
static int bpf_links_load_btf(const char *name, enum bpf_prog_type type,
			      enum bpf_attach_type attach_type, int ret)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = ret },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	struct bpf_func_info func = { .insn_off = 0 };
	struct btf *btf;
	int fd;

	btf = bpf_links_btf(name, &func.type_id);
	if (!btf) {
		bpf_links_fail("BTF of a program");
		return -1;
	}
	opts.expected_attach_type = attach_type;
	opts.prog_btf_fd = btf__fd(btf);
	opts.func_info = &func;
	opts.func_info_cnt = 1;
	opts.func_info_rec_size = sizeof(func);
	fd = bpf_prog_load(type, name, "GPL", insns, ARRAY_SIZE(insns), &opts);
	btf__free(btf);
	if (fd < 0)
		bpf_links_fail(name);
	return fd;
}

/*
 * Attach program @fd (named @name) through a perf_event link to an event
 * of syscalls:sys_enter_getcpu, which *@perf_fd gets; the link's fd, -1
 * on failure, said
 */
static int bpf_links_getcpu_link(int fd, const char *name, int *perf_fd)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(attr),
		.sample_period = 1,
	};
	char what[64];
	int tp, link_fd;

	tp = bpf_links_tracepoint("syscalls", "sys_enter_getcpu");
	if (tp < 0) {
		bpf_links_fail("no tracepoint syscalls:sys_enter_getcpu in tracefs");
		return -1;
	}
	attr.config = tp;
	*perf_fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, 0);
	if (*perf_fd < 0) {
		bpf_links_fail("perf_event_open syscalls:sys_enter_getcpu");
		return -1;
	}
	link_fd = bpf_link_create(fd, *perf_fd, BPF_PERF_EVENT, NULL);
	if (link_fd < 0) {
		snprintf(what, sizeof(what), "perf_event link of %s", name);
		bpf_links_fail(what);
	}
	return link_fd;
}

static int bpf_links_runs(void)
{
	int fd, perf_fd, link_fd, n, i;
	char line[32];
	unsigned int cpu;

	fd = bpf_links_load_btf("pbt_runs", BPF_PROG_TYPE_TRACEPOINT, 0, 0);
	if (fd < 0)
		return 1;
	printf("prog runs %u pbt_runs\n", bpf_links_prog_id(fd));
	link_fd = bpf_links_getcpu_link(fd, "pbt_runs", &perf_fd);
	if (link_fd < 0)
		return 1;
	printf("link runs %u %u syscalls:sys_enter_getcpu\nready\n",
	       bpf_links_link_id(link_fd), bpf_links_prog_id(fd));
	fflush(stdout);

	while (fgets(line, sizeof(line), stdin)) {
		u64 start = bpf_links_now();

		if (!strcmp(line, "detach\n") && link_fd >= 0) {
			/* and the event: without a program, it would sample */
			close(link_fd);
			close(perf_fd);
			link_fd = -1;
			perf_fd = -1;
			printf("detached\n");
			fflush(stdout);
			continue;
		}
		if (sscanf(line, "run %d", &n) != 1)
			break;
		for (i = 0; i < n; i++)
			syscall(__NR_getcpu, &cpu, NULL, NULL);
		printf("ran %d %llu\n", n, (unsigned long long)(bpf_links_now() - start));
		fflush(stdout);
	}
	if (link_fd >= 0) {
		close(link_fd);
		close(perf_fd);
	}
	close(fd);
	return 0;
}

static int bpf_links_recursion(void)
{
	struct bpf_insn insns[] = {
		/* r2 = the map deleted from (the traced function's first argument) */
		{ .code = BPF_LDX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1 },
		/* r1 = its own map; nothing more if that is the one */
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{},
		{ .code = BPF_JMP | BPF_JEQ | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
		  .off = 4 },
		/* *(u32 *)(r10 - 4) = 0; r2 = r10 - 4; delete that key of its own map */
		{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2,
		  .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_delete_elem },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	int own_fd, other_fd, fd, link_fd, btf_id, n, i;
	char line[32], func[64], log[1024] = "";
	const char *stats;
	u32 key = 0, verified = 0;

	btf_id = bpf_links_func("htab_map_delete_elem", func, sizeof(func));
	if (btf_id < 0) {
		fprintf(stderr, "bpf_links workload: %s\n",
			"no htab_map_delete_elem in the kernel's BTF");
		return 3;
	}
	own_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "pbt_recursion", sizeof(u32), sizeof(u32),
				1, NULL);
	other_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "pbt_other", sizeof(u32), sizeof(u32),
				  1, NULL);
	if (own_fd < 0 || other_fd < 0)
		return bpf_links_fail("hash maps pbt_recursion and pbt_other");
	insns[1].imm = own_fd;
	opts.expected_attach_type = BPF_TRACE_FENTRY;
	opts.attach_btf_id = btf_id;
	/* BPF_LOG_STATS: a few lines of statistics, "processed N insns ..." among them */
	opts.log_level = 4;
	opts.log_buf = log;
	opts.log_size = sizeof(log);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "pbt_recursion", "GPL", insns,
			   ARRAY_SIZE(insns), &opts);
	if (fd < 0)
		return bpf_links_fail("pbt_recursion");
	stats = strstr(log, "processed ");
	if (!stats || sscanf(stats, "processed %u insns", &verified) != 1)
		fprintf(stderr, "bpf_links workload: no count in the verifier's log: %s\n", log);
	link_fd = bpf_link_create(fd, 0, BPF_TRACE_FENTRY, NULL);
	if (link_fd < 0)
		return bpf_links_fail("fentry link of pbt_recursion");
	printf("prog recursion %u pbt_recursion %u\nready\n", bpf_links_prog_id(fd), verified);
	fflush(stdout);

	while (fgets(line, sizeof(line), stdin)) {
		int map_fd;

		if (sscanf(line, "run %d", &n) == 1)
			map_fd = other_fd;
		else if (sscanf(line, "own %d", &n) == 1)
			map_fd = own_fd;
		else
			break;
		/* ENOENT: the maps stay empty */
		for (i = 0; i < n; i++)
			bpf_map_delete_elem(map_fd, &key);
		printf("ran %d\n", n);
		fflush(stdout);
	}
	close(link_fd);
	close(fd);
	close(own_fd);
	close(other_fd);
	return 0;
}

/*
 * pbt_loop's BTF: "int pbt_loop(void *ctx)" and the callback of its
 * bpf_loop(), "static long pbt_loop_cb(u64 index, void *ctx)"
 */
static struct btf *bpf_links_loop_btf(u32 *main_id, u32 *cb_id)
{
	struct btf *btf = btf__new_empty();
	int int_id, long_id, u64_id, ptr_id, proto_id, cb_proto_id, id;

	if (!btf)
		return NULL;
	int_id = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	long_id = btf__add_int(btf, "long", 8, BTF_INT_SIGNED);
	u64_id = btf__add_int(btf, "unsigned long long", 8, 0);
	ptr_id = btf__add_ptr(btf, 0);
	proto_id = btf__add_func_proto(btf, int_id);
	if (int_id < 0 || long_id < 0 || u64_id < 0 || ptr_id < 0 || proto_id < 0 ||
	    btf__add_func_param(btf, "ctx", ptr_id))
		goto err;
	id = btf__add_func(btf, "pbt_loop", BTF_FUNC_GLOBAL, proto_id);
	if (id < 0)
		goto err;
	*main_id = id;
	cb_proto_id = btf__add_func_proto(btf, long_id);
	if (cb_proto_id < 0 || btf__add_func_param(btf, "index", u64_id) ||
	    btf__add_func_param(btf, "ctx", ptr_id))
		goto err;
	id = btf__add_func(btf, "pbt_loop_cb", BTF_FUNC_STATIC, cb_proto_id);
	if (id < 0 || btf__load_into_kernel(btf))
		goto err;
	*cb_id = id;
	return btf;
err:
	btf__free(btf);
	return NULL;
}

static int bpf_links_loop(void)
{
	struct bpf_insn insns[] = {
		/* r0 = the map's first entry, or out */
		{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2,
		  .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{},
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
		{ .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0, .off = 6 },
		/* bpf_loop(*r0, pbt_loop_cb, NULL, 0) */
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_0 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_2,
		  .src_reg = BPF_PSEUDO_FUNC, .imm = 6 },
		{},
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_4 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_loop },
		/* out: return 0 */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
		/* pbt_loop_cb: return 0, on to the next loop */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	struct bpf_func_info funcs[2] = { { .insn_off = 0 }, { .insn_off = 15 } };
	int map_fd, fd, perf_fd, link_fd, k, n, i;
	char line[64];
	unsigned int cpu;
	u32 zero = 0;
	struct btf *btf;

	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pbt_loop", sizeof(u32), sizeof(u32), 1,
				NULL);
	if (map_fd < 0)
		return bpf_links_fail("array map pbt_loop");
	insns[3].imm = map_fd;
	btf = bpf_links_loop_btf(&funcs[0].type_id, &funcs[1].type_id);
	if (!btf)
		return bpf_links_fail("BTF of pbt_loop");
	opts.prog_btf_fd = btf__fd(btf);
	opts.func_info = funcs;
	opts.func_info_cnt = ARRAY_SIZE(funcs);
	opts.func_info_rec_size = sizeof(funcs[0]);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, "pbt_loop", "GPL", insns,
			   ARRAY_SIZE(insns), &opts);
	btf__free(btf);
	if (fd < 0)
		return bpf_links_fail("pbt_loop");
	link_fd = bpf_links_getcpu_link(fd, "pbt_loop", &perf_fd);
	if (link_fd < 0)
		return 1;
	printf("prog loop %u pbt_loop\nready\n", bpf_links_prog_id(fd));
	fflush(stdout);
	/* no line read ahead: spin watches fd 0 for the next one */
	setvbuf(stdin, NULL, _IONBF, 0);

	while (fgets(line, sizeof(line), stdin)) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		bool mix;

		if (sscanf(line, "spin %d", &n) == 1) {
			u32 loops = n;

			if (bpf_map_update_elem(map_fd, &zero, &loops, BPF_ANY))
				return bpf_links_fail("pbt_loop's map");
			for (k = 0; !poll(&pfd, 1, 0); k++)
				syscall(__NR_getcpu, &cpu, NULL, NULL);
			/* the line that stopped it, whatever it says */
			if (!fgets(line, sizeof(line), stdin))
				break;
			printf("spun %d\n", k);
			fflush(stdout);
			continue;
		}
		if (sscanf(line, "run %d %d", &k, &n) == 2)
			mix = false;
		else if (sscanf(line, "mix %d %d", &k, &n) == 2)
			mix = true;
		else
			break;
		for (i = 0; i < k; i++) {
			u32 loops = mix && i % 10 == 9 ? 50 * n : n;

			if (bpf_map_update_elem(map_fd, &zero, &loops, BPF_ANY))
				return bpf_links_fail("pbt_loop's map");
			syscall(__NR_getcpu, &cpu, NULL, NULL);
		}
		printf("ran %d\n", k);
		fflush(stdout);
	}
	close(link_fd);
	close(perf_fd);
	close(fd);
	close(map_fd);
	return 0;
}

/* Room for @n more fds */
static int bpf_links_nofile(int n)
{
	struct rlimit rl = { 0, 0 };

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = n + 64;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			return bpf_links_fail("RLIMIT_NOFILE");
	}
	return 0;
}

/* "many N": wait for a line (or the end) on stdin */
static int bpf_links_many_wait(int n)
{
	char line[16];

	printf("many %d\n", n);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		return bpf_links_fail("stdin");
	return 0;
}

static int bpf_links_many(int n)
{
	int i, *fds;

	if (n <= 0)
		return bpf_links_fail("many: a number of programs");
	fds = calloc(n, sizeof(*fds));
	if (!fds)
		return bpf_links_fail("calloc");
	if (bpf_links_nofile(n))
		return 1;
	for (i = 0; i < n; i++) {
		fds[i] = bpf_links_load("pbt_many", BPF_PROG_TYPE_SOCKET_FILTER, 0, 0, 0, -1);
		if (fds[i] < 0)
			return bpf_links_fail("pbt_many");
	}
	if (bpf_links_many_wait(n))
		return 1;
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return 0;
}

#define BPF_LINKS_PER_CGROUP	32

/* The cgroup of the many links' @k-th 32 */
static void bpf_links_many_cgroup(const char *cgroup, int k, char *path, size_t size)
{
	snprintf(path, size, "%s/pbt_many_%d", cgroup, k);
}

static int bpf_links_many_links(int n, const char *cgroup)
{
	int i, k, nr_cg, fd, cgroup_fd = -1, map_fd, *links;
	char path[PATH_MAX];

	if (n <= 0)
		return bpf_links_fail("many: a number of programs");
	nr_cg = (n + BPF_LINKS_PER_CGROUP - 1) / BPF_LINKS_PER_CGROUP;
	links = calloc(n, sizeof(*links));
	if (!links)
		return bpf_links_fail("calloc");
	if (bpf_links_nofile(n))
		return 1;
	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pbt_many", sizeof(u32), sizeof(u64), 1,
				NULL);
	if (map_fd < 0)
		return bpf_links_fail("pbt_many map");
	for (i = 0; i < n; i++) {
		if (i % BPF_LINKS_PER_CGROUP == 0) {
			if (cgroup_fd >= 0)
				close(cgroup_fd);
			bpf_links_many_cgroup(cgroup, i / BPF_LINKS_PER_CGROUP, path, sizeof(path));
			if (mkdir(path, 0755) && errno != EEXIST)
				return bpf_links_fail(path);
			cgroup_fd = open(path, O_RDONLY | O_DIRECTORY);
			if (cgroup_fd < 0)
				return bpf_links_fail(path);
		}
		fd = bpf_links_load("pbt_many", BPF_PROG_TYPE_CGROUP_SKB, BPF_CGROUP_INET_EGRESS,
				    0, 1, map_fd);
		if (fd < 0)
			return bpf_links_fail("pbt_many");
		links[i] = bpf_link_create(fd, cgroup_fd, BPF_CGROUP_INET_EGRESS, NULL);
		if (links[i] < 0)
			return bpf_links_fail("cgroup link");
		/* the link holds the program */
		close(fd);
	}
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	if (bpf_links_many_wait(n))
		return 1;
	for (i = 0; i < n; i++)
		close(links[i]);
	close(map_fd);
	for (k = 0; k < nr_cg; k++) {
		bpf_links_many_cgroup(cgroup, k, path, sizeof(path));
		rmdir(path);
	}
	free(links);
	return 0;
}

static int bpf_links_net(const char *cgroup)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t len = sizeof(addr);
	int xdp, egress, xdp_link, egress_link, cgroup_fd, sock;
	char line[16];

	cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (cgroup_fd < 0)
		return bpf_links_fail(cgroup);
	xdp = bpf_links_load_btf("pbt_net_xdp", BPF_PROG_TYPE_XDP, BPF_XDP, 2 /* XDP_PASS */);
	egress = bpf_links_load_btf("pbt_net_egress", BPF_PROG_TYPE_CGROUP_SKB,
				    BPF_CGROUP_INET_EGRESS, 1 /* let it go */);
	if (xdp < 0 || egress < 0)
		return 1;
	xdp_link = bpf_link_create(xdp, if_nametoindex("lo"), BPF_XDP, NULL);
	if (xdp_link < 0)
		return bpf_links_fail("XDP link to lo");
	egress_link = bpf_link_create(egress, cgroup_fd, BPF_CGROUP_INET_EGRESS, NULL);
	if (egress_link < 0)
		return bpf_links_fail("cgroup_skb egress link");
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&addr, sizeof(addr)) ||
	    getsockname(sock, (struct sockaddr *)&addr, &len))
		return bpf_links_fail("UDP socket on 127.0.0.1");
	printf("prog xdp %u pbt_net_xdp\nprog egress %u pbt_net_egress\nport %u\nready\n",
	       bpf_links_prog_id(xdp), bpf_links_prog_id(egress), ntohs(addr.sin_port));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	close(sock);
	close(egress_link);
	close(xdp_link);
	close(egress);
	close(xdp);
	close(cgroup_fd);
	return 0;
}

static volatile sig_atomic_t bpf_links_nolink_ended;

static void bpf_links_nolink_term(int sig __maybe_unused)
{
	/* the read of stdin ends too (EINTR): detach as at its end */
	bpf_links_nolink_ended = 1;
}

static int bpf_links_nolink(const char *cgroup)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(attr),
		.sample_period = 1,
	};
	struct sigaction act = { .sa_handler = bpf_links_nolink_term };
	int tp_fd, xdp_fd, cg_fd, perf_fd, cgroup_fd, cg_link, tp, err = 0;
	int lo = if_nametoindex("lo");
	char line[16];

	/* from the start: what is attached is detached whatever happens */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (cgroup_fd < 0)
		return bpf_links_fail(cgroup);
	tp = bpf_links_tracepoint("syscalls", "sys_enter_getcpu");
	if (tp < 0)
		return bpf_links_fail("no tracepoint syscalls:sys_enter_getcpu in tracefs");
	attr.config = tp;
	tp_fd = bpf_links_load_btf("pbt_nolink_tp", BPF_PROG_TYPE_TRACEPOINT, 0, 0);
	xdp_fd = bpf_links_load_btf("pbt_nolink_xdp", BPF_PROG_TYPE_XDP, 0, 2 /* XDP_PASS */);
	cg_fd = bpf_links_load_btf("pbt_nolink_cg", BPF_PROG_TYPE_CGROUP_SKB,
				   BPF_CGROUP_INET_EGRESS, 1);
	if (tp_fd < 0 || xdp_fd < 0 || cg_fd < 0)
		return 1;
	perf_fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, 0);
	if (perf_fd < 0)
		return bpf_links_fail("perf_event_open syscalls:sys_enter_getcpu");
	if (ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, tp_fd) ||
	    ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0))
		return bpf_links_fail("PERF_EVENT_IOC_SET_BPF");
	if (bpf_xdp_attach(lo, xdp_fd, XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL))
		return bpf_links_fail("XDP over netlink on lo");
	/* the cgroup program twice: without a link, and through one */
	cg_link = -1;
	if (bpf_prog_attach(cg_fd, cgroup_fd, BPF_CGROUP_INET_EGRESS, BPF_F_ALLOW_MULTI)) {
		err = bpf_links_fail("BPF_PROG_ATTACH to the cgroup");
	} else {
		cg_link = bpf_link_create(cg_fd, cgroup_fd, BPF_CGROUP_INET_EGRESS, NULL);
		if (cg_link < 0)
			err = bpf_links_fail("cgroup link");
	}
	if (!err && !bpf_links_nolink_ended) {
		printf("prog tp %u pbt_nolink_tp\nprog xdp %u pbt_nolink_xdp\n"
		       "prog cgroup %u pbt_nolink_cg\nlink cgroup %u\nready\n",
		       bpf_links_prog_id(tp_fd), bpf_links_prog_id(xdp_fd),
		       bpf_links_prog_id(cg_fd), bpf_links_link_id(cg_link));
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = '\0';
	}
	if (cg_link >= 0)
		close(cg_link);
	if (bpf_prog_detach2(cg_fd, cgroup_fd, BPF_CGROUP_INET_EGRESS) && !err)
		err = bpf_links_fail("BPF_PROG_DETACH");
	{
		/* ours only, whatever may have replaced it */
		LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdp_fd);

		if (bpf_xdp_detach(lo, XDP_FLAGS_SKB_MODE | XDP_FLAGS_REPLACE, &opts))
			err = bpf_links_fail("XDP detach over netlink from lo");
	}
	close(perf_fd);
	close(cg_fd);
	close(xdp_fd);
	close(tp_fd);
	close(cgroup_fd);
	return err;
}

static int bpf_links(int argc, const char **argv)
{
	if (argc >= 2 && !strcmp(argv[0], "links"))
		return bpf_links_links(argv[1], argc > 2 ? argv[2] : NULL);
	if (argc == 1 && !strcmp(argv[0], "struct_ops"))
		return bpf_links_struct_ops();
	if (argc == 2 && !strcmp(argv[0], "short"))
		return bpf_links_short(atoi(argv[1]));
	if (argc >= 3 && !strcmp(argv[0], "churn"))
		return bpf_links_churn(argv[1], atof(argv[2]), argc > 3 ? atof(argv[3]) : 0);
	if (argc == 2 && !strcmp(argv[0], "many"))
		return bpf_links_many(atoi(argv[1]));
	if (argc == 3 && !strcmp(argv[0], "many"))
		return bpf_links_many_links(atoi(argv[1]), argv[2]);
	if (argc == 1 && !strcmp(argv[0], "runs"))
		return bpf_links_runs();
	if (argc == 1 && !strcmp(argv[0], "recursion"))
		return bpf_links_recursion();
	if (argc == 1 && !strcmp(argv[0], "loop"))
		return bpf_links_loop();
	if (argc == 2 && !strcmp(argv[0], "net"))
		return bpf_links_net(argv[1]);
	if (argc == 2 && !strcmp(argv[0], "nolink"))
		return bpf_links_nolink(argv[1]);
	fprintf(stderr, "usage: %s links CGROUP [FUNC] | short N | runs | recursion | loop\n",
		__func__);
	fprintf(stderr, "       %s net CGROUP | nolink CGROUP\n", __func__);
	fprintf(stderr, "       %s many N [CGROUP]\n", __func__);
	fprintf(stderr, "       %s churn CGROUP|- SECS [RATE]\n", __func__);
	return 1;
}
#else
static int bpf_links(int argc __maybe_unused, const char **argv __maybe_unused)
{
	fprintf(stderr, "%s: perf was built without libbpf\n", __func__);
	return 2;
}
#endif

DEFINE_WORKLOAD(bpf_links);
