// SPDX-License-Identifier: GPL-2.0
/*
 * The link kinds of bpf_link_event.c that trace: raw tracepoints, BTF
 * tracepoints, trampolines (fentry, fexit, fmod_ret, LSM, freplace),
 * task iterators, perf events, kprobe_multi, uprobe_multi, and a
 * tcp_congestion_ops struct_ops map.
 *
 * In 6.12 only struct_ops links can be detached by BPF_LINK_DETACH, only
 * iterator and struct_ops links can be updated, and none of these attach
 * points can be taken away from under a link by the test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "bpf_link_kinds.h"

/*
 * bpf_event.h brings in the test harness, which only one object of the
 * test may include: what we need of it is here.
 */
#define PROG_NAME	"kst_bpf_event"	/* as bpf_event.h names programs */

#define RAW_TP		"sched_process_exit"
#define TP_BTF		"btf_trace_" RAW_TP
#define FENTRY_FUNC	"bpf_fentry_test1"	/* net/bpf/test_run.c */
#define FMOD_RET_FUNC	"bpf_modify_return_test"
#define LSM_HOOK	"bpf_lsm_file_open"
#define ITER_TARGET	"bpf_iter_task"
#define CC_OPS		"tcp_congestion_ops"
#define CC_VALUE	"bpf_struct_ops_" CC_OPS
#define CC_MAP_NAME	"kst_cc"
#define COOKIE		0x6b7374	/* see link_tracing() */
#define ENOTSUPP	524	/* the kernel's, not in the uapi */

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

static void fds_teardown(struct link_ctx *ctx)
{
	for (size_t i = 0; i < ARRAY_SIZE(ctx->fd); i++)
		close_fd(&ctx->fd[i]);
}

/*
 * The last line the verifier wrote, for ctx->err, leaving out the
 * statistics it ends with.
 */
static const char *log_tail(char *log)
{
	char *end = log + strlen(log);
	char *line;

	for (;;) {
		while (end > log && end[-1] == '\n')
			*--end = 0;
		line = end;
		while (line > log && line[-1] != '\n')
			line--;
		if (line == log || (strncmp(line, "processed ", 10) &&
				    strncmp(line, "verification time", 17) &&
				    strncmp(line, "stack depth", 11)))
			return line;
		*line = 0;
		end = line;
	}
}

/*
 * Load insns as a program of this type into *fd, with opts for the rest.
 * A program type the kernel does not know fails before the verifier,
 * with nothing in the log: that is the kernel option config missing, and
 * a skip.
 */
static int load_insns(struct link_ctx *ctx, int *fd, enum bpf_prog_type type,
		      struct bpf_prog_load_opts *opts,
		      const struct bpf_insn *insns, size_t cnt,
		      const char *what, const char *config)
{
	char log[4096] = "";

	opts->log_buf = log;
	opts->log_size = sizeof(log);
	*fd = bpf_prog_load(type, PROG_NAME, "GPL", insns, cnt, opts);
	opts->log_buf = NULL;
	opts->log_size = 0;
	if (*fd >= 0)
		return 0;
	*fd = -errno;
	if (*fd == -EINVAL && !log[0] && config)
		return kind_skip(ctx, "the kernel cannot load %s programs (%s off?)",
				 what, config);
	if (log[0])
		return kind_err(ctx, *fd, "BPF_PROG_LOAD %s (%s)", what,
				log_tail(log));
	return kind_err(ctx, *fd, "BPF_PROG_LOAD %s", what);
}

/* Load "r0 = ret; exit" into *fd. */
static int load_ret(struct link_ctx *ctx, int *fd, enum bpf_prog_type type,
		    enum bpf_attach_type expected, __u32 btf_id, int ret,
		    const char *what, const char *config)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		.expected_attach_type = expected,
		.attach_btf_id = btf_id,
	);
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = ret },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return load_insns(ctx, fd, type, &opts, insns, 2, what, config);
}

/* The program the link is made with and, if update is set, a second. */
static int load_progs(struct link_ctx *ctx, bool update,
		      enum bpf_prog_type type, enum bpf_attach_type expected,
		      __u32 btf_id, int ret, const char *what,
		      const char *config)
{
	int err;

	err = load_ret(ctx, &ctx->prog_fd, type, expected, btf_id, ret, what,
		       config);
	if (err || !update)
		return err;
	return load_ret(ctx, &ctx->prog2_fd, type, expected, btf_id, ret,
			what, config);
}

/*
 * The vmlinux BTF, or NULL with a skip: without it no program here can
 * name what it attaches to.
 */
static struct btf *vmlinux_btf(struct link_ctx *ctx)
{
	struct btf *btf = btf__load_vmlinux_btf();

	if (!btf)
		kind_skip(ctx, "no vmlinux BTF (CONFIG_DEBUG_INFO_BTF off?)");
	return btf;
}

/* The vmlinux BTF id of name, in *id; a skip if the kernel has none. */
static int vmlinux_id(struct link_ctx *ctx, const char *name, __u32 kind,
		      const char *config, __u32 *id)
{
	struct btf *btf = vmlinux_btf(ctx);
	int ret;

	if (!btf)
		return KIND_SKIP;
	ret = btf__find_by_name_kind(btf, name, kind);
	btf__free(btf);
	if (ret < 0)
		return kind_skip(ctx, "no BTF for %s (%s off?)", name, config);
	*id = ret;
	return 0;
}

/*
 * Load a program that attaches to the vmlinux BTF type name, which the
 * kernel has with config on.
 */
static int btf_prog_setup(struct link_ctx *ctx, bool update,
			  enum bpf_prog_type type,
			  enum bpf_attach_type expected, const char *name,
			  __u32 kind, const char *what, const char *config)
{
	__u32 id = 0;
	int err;

	err = vmlinux_id(ctx, name, kind, config, &id);
	if (err)
		return err;
	return load_progs(ctx, update, type, expected, id, 0, what,
			  type == BPF_PROG_TYPE_LSM ? "CONFIG_BPF_LSM" :
						      "CONFIG_BPF_EVENTS");
}

/* Link a program that names its attach point itself, one way or other. */
static int link_tracing(struct link_ctx *ctx, enum link_via via,
			enum bpf_attach_type type, const char *what)
{
	/*
	 * A cookie, so that libbpf does not quietly try
	 * BPF_RAW_TRACEPOINT_OPEN when BPF_LINK_CREATE fails.
	 */
	LIBBPF_OPTS(bpf_link_create_opts, opts, .tracing.cookie = COOKIE);
	int fd;

	if (via == VIA_RAW_TP_OPEN) {
		fd = bpf_raw_tracepoint_open(NULL, ctx->prog_fd);
		if (fd < 0)
			return kind_err(ctx, -errno,
					"BPF_RAW_TRACEPOINT_OPEN %s", what);
		return fd;
	}
	fd = bpf_link_create(ctx->prog_fd, 0, type, &opts);
	if (fd < 0)
		return kind_err(ctx, -errno, "BPF_LINK_CREATE %s", what);
	return fd;
}

/* BPF_LINK_CREATE only, with these options. */
static int link_create(struct link_ctx *ctx, enum link_via via, int prog_fd,
		       int target_fd, enum bpf_attach_type type,
		       const struct bpf_link_create_opts *opts,
		       const char *what)
{
	int fd;

	if (via != VIA_LINK_CREATE)
		return kind_err(ctx, -EOPNOTSUPP,
				"%s links through BPF_RAW_TRACEPOINT_OPEN", what);
	fd = bpf_link_create(prog_fd, target_fd, type, opts);
	if (fd < 0)
		return kind_err(ctx, -errno, "BPF_LINK_CREATE %s", what);
	return fd;
}

/* Raw tracepoints: named at attach time. */

static int raw_tp_setup(struct link_ctx *ctx)
{
	return load_progs(ctx, false, BPF_PROG_TYPE_RAW_TRACEPOINT, 0, 0, 0,
			  "raw_tp", "CONFIG_BPF_EVENTS");
}

/*
 * 6.12's BPF_LINK_CREATE takes BPF_TRACE_RAW_TP only from tp_btf
 * programs (BPF_PROG_TYPE_TRACING); raw_tp programs are linked by
 * BPF_RAW_TRACEPOINT_OPEN alone.
 */
static int raw_tp_attach(struct link_ctx *ctx, enum link_via via)
{
	int fd;

	if (via != VIA_RAW_TP_OPEN)
		return kind_err(ctx, -EOPNOTSUPP,
				"raw_tp links through BPF_LINK_CREATE");
	fd = bpf_raw_tracepoint_open(RAW_TP, ctx->prog_fd);
	if (fd < 0)
		return kind_err(ctx, -errno,
				"BPF_RAW_TRACEPOINT_OPEN raw_tp " RAW_TP);
	return fd;
}

const struct link_kind kind_raw_tp = {
	.name = "raw_tp",
	.link_type = BPF_LINK_TYPE_RAW_TRACEPOINT,
	.attach_type = BPF_TRACE_RAW_TP,
	.has_prog = true,
	.can_detach = false,
	.setup = raw_tp_setup,
	.attach = raw_tp_attach,
	.teardown = fds_teardown,
};

/* BTF tracepoints: the tracepoint is the typedef btf_trace_<name>. */

static int tp_btf_setup(struct link_ctx *ctx)
{
	return btf_prog_setup(ctx, false, BPF_PROG_TYPE_TRACING,
			      BPF_TRACE_RAW_TP, TP_BTF, BTF_KIND_TYPEDEF,
			      "tp_btf " RAW_TP, "CONFIG_BPF_EVENTS");
}

static int tp_btf_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_tracing(ctx, via, BPF_TRACE_RAW_TP, "tp_btf " RAW_TP);
}

const struct link_kind kind_tp_btf = {
	.name = "tp_btf",
	.link_type = BPF_LINK_TYPE_RAW_TRACEPOINT,
	.attach_type = BPF_TRACE_RAW_TP,
	.has_prog = true,
	.can_detach = false,
	.setup = tp_btf_setup,
	.attach = tp_btf_attach,
	.teardown = fds_teardown,
};

/* Trampolines on kernel functions. */

static int fentry_setup(struct link_ctx *ctx)
{
	return btf_prog_setup(ctx, false, BPF_PROG_TYPE_TRACING,
			      BPF_TRACE_FENTRY, FENTRY_FUNC, BTF_KIND_FUNC,
			      "fentry " FENTRY_FUNC, "CONFIG_NET");
}

static int fentry_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_tracing(ctx, via, BPF_TRACE_FENTRY, "fentry " FENTRY_FUNC);
}

const struct link_kind kind_fentry = {
	.name = "fentry",
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = BPF_TRACE_FENTRY,
	.has_prog = true,
	.can_detach = false,
	.setup = fentry_setup,
	.attach = fentry_attach,
	.teardown = fds_teardown,
};

static int fexit_setup(struct link_ctx *ctx)
{
	return btf_prog_setup(ctx, false, BPF_PROG_TYPE_TRACING,
			      BPF_TRACE_FEXIT, FENTRY_FUNC, BTF_KIND_FUNC,
			      "fexit " FENTRY_FUNC, "CONFIG_NET");
}

static int fexit_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_tracing(ctx, via, BPF_TRACE_FEXIT, "fexit " FENTRY_FUNC);
}

const struct link_kind kind_fexit = {
	.name = "fexit",
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = BPF_TRACE_FEXIT,
	.has_prog = true,
	.can_detach = false,
	.setup = fexit_setup,
	.attach = fexit_attach,
	.teardown = fds_teardown,
};

/* The function's return value is left alone: r0 is what fmod_ret says. */
static int fmod_ret_setup(struct link_ctx *ctx)
{
	return btf_prog_setup(ctx, false, BPF_PROG_TYPE_TRACING,
			      BPF_MODIFY_RETURN, FMOD_RET_FUNC, BTF_KIND_FUNC,
			      "fmod_ret " FMOD_RET_FUNC, "CONFIG_NET");
}

static int fmod_ret_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_tracing(ctx, via, BPF_MODIFY_RETURN,
			    "fmod_ret " FMOD_RET_FUNC);
}

const struct link_kind kind_fmod_ret = {
	.name = "fmod_ret",
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = BPF_MODIFY_RETURN,
	.has_prog = true,
	.can_detach = false,
	.setup = fmod_ret_setup,
	.attach = fmod_ret_attach,
	.teardown = fds_teardown,
};

/* Returning 0 lets every open through. */
static int lsm_setup(struct link_ctx *ctx)
{
	return btf_prog_setup(ctx, false, BPF_PROG_TYPE_LSM, BPF_LSM_MAC,
			      LSM_HOOK, BTF_KIND_FUNC, "lsm " LSM_HOOK,
			      "CONFIG_BPF_LSM");
}

static int lsm_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_tracing(ctx, via, BPF_LSM_MAC, "lsm " LSM_HOOK);
}

const struct link_kind kind_lsm = {
	.name = "lsm",
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = BPF_LSM_MAC,
	.has_prog = true,
	.can_detach = false,
	.setup = lsm_setup,
	.attach = lsm_attach,
	.teardown = fds_teardown,
};

/*
 * freplace: an extension program takes the place of a global function
 * of a target program, which needs BTF for both.  We build it ourselves:
 * "int f(void)" for the target's main function, its subprogram and the
 * extension.  The target is a socket filter in fd[0] whose main function
 * returns what the subprogram does.
 */
enum {
	FR_INT = 1,		/* the ids btf__add_*() hand out, in order */
	FR_PROTO,
	FR_MAIN,
	FR_SUB,
};

static int freplace_btf(struct link_ctx *ctx, struct btf **btfp)
{
	struct btf *btf = btf__new_empty();
	int err;

	*btfp = btf;
	if (!btf)
		return kind_err(ctx, -errno, "btf__new_empty");
	if (btf__add_int(btf, "int", 4, BTF_INT_SIGNED) != FR_INT ||
	    btf__add_func_proto(btf, FR_INT) != FR_PROTO ||
	    btf__add_func(btf, "kst_main", BTF_FUNC_GLOBAL, FR_PROTO) != FR_MAIN ||
	    btf__add_func(btf, "kst_sub", BTF_FUNC_GLOBAL, FR_PROTO) != FR_SUB)
		return kind_err(ctx, -EINVAL, "building the freplace BTF");
	err = btf__load_into_kernel(btf);
	if (err)
		return kind_err(ctx, err, "BPF_BTF_LOAD for freplace");
	return 0;
}

static int freplace_setup(struct link_ctx *ctx)
{
	const struct bpf_insn target[] = {
		/* main: return kst_sub(); */
		{ .code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_CALL,
		  .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
		/* kst_sub: return 0; */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	const struct bpf_insn ext[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	const struct bpf_func_info target_funcs[] = {
		{ .insn_off = 0, .type_id = FR_MAIN },
		{ .insn_off = 2, .type_id = FR_SUB },
	};
	const struct bpf_func_info ext_funcs[] = {
		{ .insn_off = 0, .type_id = FR_SUB },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		.func_info = target_funcs,
		.func_info_cnt = 2,
		.func_info_rec_size = sizeof(struct bpf_func_info),
	);
	struct btf *btf;
	int err;

	err = freplace_btf(ctx, &btf);
	if (err)
		goto out;
	opts.prog_btf_fd = btf__fd(btf);
	err = load_insns(ctx, &ctx->fd[0], BPF_PROG_TYPE_SOCKET_FILTER, &opts,
			 target, 4, "freplace target", NULL);
	if (err)
		goto out;

	opts.func_info = ext_funcs;
	opts.func_info_cnt = 1;
	opts.attach_prog_fd = ctx->fd[0];
	opts.attach_btf_id = FR_SUB;
	err = load_insns(ctx, &ctx->prog_fd, BPF_PROG_TYPE_EXT, &opts, ext, 2,
			 "freplace kst_sub", NULL);
out:
	btf__free(btf);
	return err;
}

/*
 * By the target given at load time, or by naming it again; the attach
 * type is the program's expected one, 0, as libbpf passes it.
 */
static int freplace_attach(struct link_ctx *ctx, enum link_via via)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .target_btf_id = FR_SUB);
	int fd;

	if (via == VIA_RAW_TP_OPEN) {
		fd = bpf_raw_tracepoint_open(NULL, ctx->prog_fd);
		if (fd < 0)
			return kind_err(ctx, -errno,
					"BPF_RAW_TRACEPOINT_OPEN freplace");
		return fd;
	}
	fd = bpf_link_create(ctx->prog_fd, ctx->fd[0], 0, &opts);
	if (fd < 0)
		return kind_err(ctx, -errno, "BPF_LINK_CREATE freplace");
	return fd;
}

/*
 * Extension programs are loaded without an expected attach type, and the
 * link reports the program's: 0 (the uapi has no BPF_TRACE_FREPLACE).
 */
const struct link_kind kind_freplace = {
	.name = "freplace",
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = 0,
	.has_prog = true,
	.can_detach = false,
	.setup = freplace_setup,
	.attach = freplace_attach,
	.teardown = fds_teardown,
};

/* A task iterator, never read; the program may return 0 or 1. */

static int iter_setup(struct link_ctx *ctx)
{
	return btf_prog_setup(ctx, true, BPF_PROG_TYPE_TRACING,
			      BPF_TRACE_ITER, ITER_TARGET, BTF_KIND_FUNC,
			      "iter " ITER_TARGET, "CONFIG_BPF_SYSCALL");
}

static int iter_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_create(ctx, via, ctx->prog_fd, 0, BPF_TRACE_ITER, NULL,
			   "iter " ITER_TARGET);
}

static int prog_update(struct link_ctx *ctx)
{
	LIBBPF_OPTS(bpf_link_update_opts, opts,
		.flags = BPF_F_REPLACE,
		.old_prog_fd = ctx->prog_fd,
	);

	if (bpf_link_update(ctx->link_fd, ctx->prog2_fd, &opts))
		return kind_err(ctx, -errno, "BPF_LINK_UPDATE");
	return 0;
}

const struct link_kind kind_iter = {
	.name = "iter",
	.link_type = BPF_LINK_TYPE_ITER,
	.attach_type = BPF_TRACE_ITER,
	.has_prog = true,
	.can_detach = false,
	.setup = iter_setup,
	.attach = iter_attach,
	.update = prog_update,
	.teardown = fds_teardown,
};

/* A cpu-clock event of this task in fd[0], never enabled. */

static int perf_event_setup(struct link_ctx *ctx)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000,
		.disabled = 1,
	};
	int err;

	err = load_progs(ctx, false, BPF_PROG_TYPE_PERF_EVENT, 0, 0, 0,
			 "perf_event", "CONFIG_BPF_EVENTS");
	if (err)
		return err;
	ctx->fd[0] = syscall(__NR_perf_event_open, &attr, 0, -1, -1,
			     PERF_FLAG_FD_CLOEXEC);
	if (ctx->fd[0] < 0)
		return kind_err(ctx, -errno, "perf_event_open cpu-clock");
	return 0;
}

static int perf_event_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_create(ctx, via, ctx->prog_fd, ctx->fd[0], BPF_PERF_EVENT,
			   NULL, "perf_event");
}

const struct link_kind kind_perf_event = {
	.name = "perf_event",
	.link_type = BPF_LINK_TYPE_PERF_EVENT,
	.attach_type = BPF_PERF_EVENT,
	.has_prog = true,
	.can_detach = false,
	.setup = perf_event_setup,
	.attach = perf_event_attach,
	.teardown = fds_teardown,
};

/* kprobe_multi and kprobe_session, on one function through fprobe. */

static int kprobe_multi_setup(struct link_ctx *ctx)
{
	return load_progs(ctx, false, BPF_PROG_TYPE_KPROBE,
			  BPF_TRACE_KPROBE_MULTI, 0, 0, "kprobe_multi",
			  "CONFIG_BPF_EVENTS");
}

static int kprobe_session_setup(struct link_ctx *ctx)
{
	return load_progs(ctx, false, BPF_PROG_TYPE_KPROBE,
			  BPF_TRACE_KPROBE_SESSION, 0, 0, "kprobe_session",
			  "CONFIG_BPF_EVENTS");
}

static int kprobe_link(struct link_ctx *ctx, enum link_via via,
		       enum bpf_attach_type type, const char *what)
{
	static const char *const syms[] = { FENTRY_FUNC };

	LIBBPF_OPTS(bpf_link_create_opts, opts,
		.kprobe_multi.syms = (const char **)syms,
		.kprobe_multi.cnt = 1,
	);

	return link_create(ctx, via, ctx->prog_fd, 0, type, &opts, what);
}

static int kprobe_multi_attach(struct link_ctx *ctx, enum link_via via)
{
	return kprobe_link(ctx, via, BPF_TRACE_KPROBE_MULTI,
			   "kprobe_multi " FENTRY_FUNC);
}

static int kprobe_session_attach(struct link_ctx *ctx, enum link_via via)
{
	return kprobe_link(ctx, via, BPF_TRACE_KPROBE_SESSION,
			   "kprobe_session " FENTRY_FUNC);
}

const struct link_kind kind_kprobe_multi = {
	.name = "kprobe_multi",
	.link_type = BPF_LINK_TYPE_KPROBE_MULTI,
	.attach_type = BPF_TRACE_KPROBE_MULTI,
	.has_prog = true,
	.can_detach = false,
	.setup = kprobe_multi_setup,
	.attach = kprobe_multi_attach,
	.teardown = fds_teardown,
};

const struct link_kind kind_kprobe_session = {
	.name = "kprobe_session",
	.link_type = BPF_LINK_TYPE_KPROBE_MULTI,
	.attach_type = BPF_TRACE_KPROBE_SESSION,
	.has_prog = true,
	.can_detach = false,
	.setup = kprobe_session_setup,
	.attach = kprobe_session_attach,
	.teardown = fds_teardown,
};

/*
 * uprobe_multi on a function of this test, for this process only.  It is
 * never called: the link only has to be made.
 */
__attribute__((noinline, used)) static int kst_uprobe_target(int x)
{
	asm volatile ("" : "+r" (x));
	return x + 1;
}

/*
 * The file kst_uprobe_target() is mapped from, and its offset there:
 * where its address falls in /proc/self/maps.
 */
static int uprobe_target_find(struct link_ctx *ctx, char *path, size_t size,
			      unsigned long *offset)
{
	uintptr_t addr = (uintptr_t)&kst_uprobe_target;
	char line[PATH_MAX + 256];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return kind_err(ctx, -errno, "open /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8];
		int n = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*u %n", &start, &end,
			   perms, &pgoff, &n) < 4 || !n)
			continue;
		if (addr < start || addr >= end || !strchr(perms, 'x'))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(path, size, "%s", line + n);
		*offset = addr - start + pgoff;
		err = path[0] == '/' ? 0 : -ENOENT;
		break;
	}
	fclose(f);
	if (err)
		return kind_err(ctx, err, "kst_uprobe_target in /proc/self/maps");
	return 0;
}

/* attach() looks for the target again; here it is only checked. */
static int uprobe_multi_setup(struct link_ctx *ctx)
{
	unsigned long offset;
	char path[PATH_MAX];
	int err;

	err = uprobe_target_find(ctx, path, sizeof(path), &offset);
	if (err)
		return err;
	return load_progs(ctx, false, BPF_PROG_TYPE_KPROBE,
			  BPF_TRACE_UPROBE_MULTI, 0, 0, "uprobe_multi",
			  "CONFIG_BPF_EVENTS");
}

static int uprobe_multi_attach(struct link_ctx *ctx, enum link_via via)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts);
	unsigned long offset;
	char path[PATH_MAX];
	int err;

	err = uprobe_target_find(ctx, path, sizeof(path), &offset);
	if (err)
		return err;
	opts.uprobe_multi.path = path;
	opts.uprobe_multi.offsets = &offset;
	opts.uprobe_multi.cnt = 1;
	opts.uprobe_multi.pid = getpid();
	return link_create(ctx, via, ctx->prog_fd, 0, BPF_TRACE_UPROBE_MULTI,
			   &opts, "uprobe_multi kst_uprobe_target");
}

const struct link_kind kind_uprobe_multi = {
	.name = "uprobe_multi",
	.link_type = BPF_LINK_TYPE_UPROBE_MULTI,
	.attach_type = BPF_TRACE_UPROBE_MULTI,
	.has_prog = true,
	.can_detach = false,
	.setup = uprobe_multi_setup,
	.attach = uprobe_multi_attach,
	.teardown = fds_teardown,
};

/*
 * struct_ops: a TCP congestion control made of the three operations
 * tcp_register_congestion_control() requires, in a map that the link
 * registers (fd[0]), and a second map that update() puts in its place
 * (fd[1]).  An update must keep the name.  The maps hold the programs,
 * so no program fd outlives setup(); the link has no program of its own.
 */
static const struct {
	const char *name;
	int ret;
} cc_ops[] = {
	{ "ssthresh", 2 },	/* u32 (*)(struct sock *) */
	{ "undo_cwnd", 2 },	/* u32 (*)(struct sock *) */
	{ "cong_avoid", 0 },	/* void (*)(struct sock *, u32, u32) */
};

/* Index, byte offset and size of struct member name; -1 if none. */
static int member_find(const struct btf *btf, __u32 id, const char *name,
		       __u32 *off, __u32 *size)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m = btf_members(t);
	__s64 sz;

	for (int i = 0; i < btf_vlen(t); i++, m++) {
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

/*
 * Fill value, a struct bpf_struct_ops_tcp_congestion_ops: the name, and
 * the program fds where the operations are.  Load the programs into
 * progs[].
 */
static int cc_value_fill(struct link_ctx *ctx, const struct btf *btf,
			 __u32 value_id, void *value, int *progs)
{
	__u32 ops_id, data_off, off, size;
	int ops, i, idx, err;
	char *data;

	ops = btf__find_by_name_kind(btf, CC_OPS, BTF_KIND_STRUCT);
	if (ops < 0 || member_find(btf, value_id, "data", &data_off, &size) < 0)
		return kind_err(ctx, -ENOENT, "BTF of " CC_VALUE);
	ops_id = ops;
	data = (char *)value + data_off;

	if (member_find(btf, ops_id, "name", &off, &size) < 0)
		return kind_err(ctx, -ENOENT, "BTF of " CC_OPS ".name");
	snprintf(data + off, size, "kst_cc_%d", getpid());

	for (i = 0; i < (int)ARRAY_SIZE(cc_ops); i++) {
		idx = member_find(btf, ops_id, cc_ops[i].name, &off, &size);
		if (idx < 0)
			return kind_err(ctx, -ENOENT, "BTF of " CC_OPS ".%s",
					cc_ops[i].name);
		/* the member index is the program's expected attach type */
		err = load_ret(ctx, &progs[i], BPF_PROG_TYPE_STRUCT_OPS, idx,
			       ops_id, cc_ops[i].ret, "struct_ops " CC_OPS,
			       "CONFIG_BPF_JIT");
		if (err)
			return err;
		*(__u64 *)(data + off) = progs[i];
	}
	return 0;
}

/*
 * An empty struct_ops map for the link into *fd.  The kernel knows no
 * struct_ops of the value type if it did not register tcp_congestion_ops
 * at boot, which it cannot without module support (the struct has a
 * struct module pointer): then the kind is skipped.
 */
static int cc_map_create(struct link_ctx *ctx, int *fd, int btf_fd,
			 __u32 value_id, __u32 value_size)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts,
		.btf_fd = btf_fd,
		.btf_vmlinux_value_type_id = value_id,
		.map_flags = BPF_F_LINK,
	);

	*fd = bpf_map_create(BPF_MAP_TYPE_STRUCT_OPS, CC_MAP_NAME, sizeof(__u32),
			     value_size, 1, &opts);
	if (*fd >= 0)
		return 0;
	*fd = -errno;
	if (*fd == -ENOTSUPP)
		return kind_skip(ctx, "no " CC_OPS
				 " struct_ops in the kernel (CONFIG_MODULES off?)");
	return kind_err(ctx, *fd, "BPF_MAP_CREATE " CC_VALUE);
}

static int cc_map_fill(struct link_ctx *ctx, int fd, const void *value)
{
	__u32 key = 0;

	if (bpf_map_update_elem(fd, &key, value, 0))
		return kind_err(ctx, -errno, "BPF_MAP_UPDATE_ELEM " CC_VALUE);
	return 0;
}

static int struct_ops_setup(struct link_ctx *ctx)
{
	int progs[ARRAY_SIZE(cc_ops)];
	struct btf *btf = vmlinux_btf(ctx);
	struct btf *user_btf = NULL;
	void *value = NULL;
	__s64 value_size;
	int value_id;
	int err;

	for (size_t i = 0; i < ARRAY_SIZE(cc_ops); i++)
		progs[i] = -1;
	if (!btf)
		return KIND_SKIP;
	value_id = btf__find_by_name_kind(btf, CC_VALUE, BTF_KIND_STRUCT);
	if (value_id < 0) {
		err = kind_skip(ctx, "no BTF for " CC_VALUE
				" (CONFIG_BPF_JIT or CONFIG_INET off?)");
		goto out;
	}
	value_size = btf__resolve_size(btf, value_id);
	if (value_size <= 0) {
		err = kind_err(ctx, -EINVAL, "size of " CC_VALUE);
		goto out;
	}
	/* BPF_MAP_CREATE wants the BTF of the map's user, whatever it is */
	user_btf = btf__new_empty();
	if (!user_btf || btf__add_int(user_btf, "int", 4, BTF_INT_SIGNED) < 0 ||
	    btf__load_into_kernel(user_btf)) {
		err = kind_err(ctx, -errno, "loading BTF for the " CC_OPS " maps");
		goto out;
	}
	err = cc_map_create(ctx, &ctx->fd[0], btf__fd(user_btf), value_id,
			    value_size);
	if (!err)
		err = cc_map_create(ctx, &ctx->fd[1], btf__fd(user_btf),
				    value_id, value_size);
	if (err)
		goto out;
	value = calloc(1, value_size);
	if (!value) {
		err = kind_err(ctx, -ENOMEM, "value of " CC_VALUE);
		goto out;
	}
	err = cc_value_fill(ctx, btf, value_id, value, progs);
	if (!err)
		err = cc_map_fill(ctx, ctx->fd[0], value);
	if (!err)
		err = cc_map_fill(ctx, ctx->fd[1], value);
out:
	for (size_t i = 0; i < ARRAY_SIZE(cc_ops); i++)
		close_fd(&progs[i]);
	free(value);
	btf__free(user_btf);
	btf__free(btf);
	return err;
}

static int struct_ops_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_create(ctx, via, ctx->fd[0], 0, BPF_STRUCT_OPS, NULL,
			   "struct_ops " CC_OPS);
}

/* The second map in place of the first. */
static int struct_ops_update(struct link_ctx *ctx)
{
	LIBBPF_OPTS(bpf_link_update_opts, opts,
		.flags = BPF_F_REPLACE,
		.old_map_fd = ctx->fd[0],
	);

	if (bpf_link_update(ctx->link_fd, ctx->fd[1], &opts))
		return kind_err(ctx, -errno, "BPF_LINK_UPDATE struct_ops map");
	return 0;
}

const struct link_kind kind_struct_ops = {
	.name = "struct_ops",
	.link_type = BPF_LINK_TYPE_STRUCT_OPS,
	.attach_type = BPF_STRUCT_OPS,
	.has_prog = false,
	.can_detach = true,
	.setup = struct_ops_setup,
	.attach = struct_ops_attach,
	.update = struct_ops_update,
	.teardown = fds_teardown,
};
