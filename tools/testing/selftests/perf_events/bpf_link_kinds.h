/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The link types bpf_link_event.c walks through: how to make a link of
 * each kind, attach it one of the ways the kind allows, replace its
 * program, and take its attach point away.
 */
#ifndef __PERF_EVENTS_BPF_LINK_KINDS_H
#define __PERF_EVENTS_BPF_LINK_KINDS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* How the link is made. */
enum link_via {
	VIA_LINK_CREATE,	/* BPF_LINK_CREATE */
	VIA_RAW_TP_OPEN,	/* BPF_RAW_TRACEPOINT_OPEN */
};

/* How the link stops being attached. */
enum link_by {
	BY_DETACH,		/* BPF_LINK_DETACH, then the last close */
	BY_CLOSE,		/* the last close of the link */
	BY_TARGET_GONE,		/* the attach point goes away, then close */
};

#define KIND_SKIP	1	/* setup() returns it with ctx->skip set */

/* One link under test; fds are -1 when unused. */
struct link_ctx {
	int prog_fd;		/* the program the link is made with, or -1 */
	int prog2_fd;		/* what update() puts in its place, or -1 */
	int link_fd;
	int fd[4];		/* the kind's own: targets, maps, sockets */
	int ifindex;		/* the kind's device, if any */
	int netns_fd;		/* a namespace the kind made, if any */
	int orig_netns_fd;	/* where we were before it */
	char path[128];		/* a cgroup or file the kind made */
	char skip[256];		/* why the kind cannot be made here */
	char err[256];		/* what failed, for the test's log */
};

struct link_kind {
	const char *name;
	__u32 link_type;	/* enum bpf_link_type */
	__u32 attach_type;	/* what the records must say */
	bool has_prog;		/* records carry a program (not struct_ops) */
	bool can_detach;	/* BPF_LINK_DETACH works */
	/*
	 * Load what the link needs (ctx->prog_fd; ctx->prog2_fd if update
	 * is set) and make its attach point.  0, KIND_SKIP with ctx->skip
	 * naming what is missing (a kernel option, a device type), or
	 * -errno with ctx->err saying what failed.
	 */
	int (*setup)(struct link_ctx *ctx);
	/* Make the link: its fd, or -errno with ctx->err set. */
	int (*attach)(struct link_ctx *ctx, enum link_via via);
	/* BPF_LINK_UPDATE to ctx->prog2_fd: 0 or -errno; NULL if none. */
	int (*update)(struct link_ctx *ctx);
	/* Take the attach point away: 0 or -errno; NULL if it cannot go. */
	int (*remove_target)(struct link_ctx *ctx);
	/*
	 * Undo setup(), whatever happened: close fd[] and the rest; the
	 * test has closed link_fd, prog_fd and prog2_fd.
	 */
	void (*teardown)(struct link_ctx *ctx);
};

/*
 * Say in ctx->err what failed and why, and return err (a -errno).
 * fmt names what was tried.
 */
static inline int __attribute__((format(printf, 3, 4)))
kind_err(struct link_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
	if (n >= 0 && n < (int)sizeof(ctx->err))
		snprintf(ctx->err + n, sizeof(ctx->err) - n, ": %s",
			 strerror(-err));
	return err;
}

/* Say in ctx->skip what is missing, and return KIND_SKIP. */
static inline int __attribute__((format(printf, 2, 3)))
kind_skip(struct link_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->skip, sizeof(ctx->skip), fmt, ap);
	va_end(ap);
	return KIND_SKIP;
}

/* A context with no fd open yet. */
static inline void link_ctx_init(struct link_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->prog_fd = -1;
	ctx->prog2_fd = -1;
	ctx->link_fd = -1;
	ctx->netns_fd = -1;
	ctx->orig_netns_fd = -1;
	for (size_t i = 0; i < ARRAY_SIZE(ctx->fd); i++)
		ctx->fd[i] = -1;
}

static inline void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* bpf_link_kinds_trace.c */
extern const struct link_kind kind_raw_tp, kind_tp_btf, kind_fentry,
	kind_fexit, kind_fmod_ret, kind_lsm, kind_freplace, kind_iter,
	kind_perf_event, kind_kprobe_multi, kind_kprobe_session,
	kind_uprobe_multi, kind_struct_ops;

/* bpf_link_kinds_net.c */
extern const struct link_kind kind_cgroup, kind_cgroup_expected_0,
	kind_lsm_cgroup, kind_flow_dissector, kind_sk_lookup, kind_xdp,
	kind_tcx_ingress, kind_tcx_egress, kind_netkit_primary,
	kind_netkit_peer, kind_netfilter, kind_sockmap_skb_verdict,
	kind_sockmap_msg_verdict;

#endif /* __PERF_EVENTS_BPF_LINK_KINDS_H */
