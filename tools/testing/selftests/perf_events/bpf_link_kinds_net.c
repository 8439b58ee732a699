// SPDX-License-Identifier: GPL-2.0
/*
 * The link kinds of bpf_link_event.c that attach to cgroups, network
 * namespaces, network devices, netfilter hooks and sockmaps.
 *
 * Every kind that needs a device or a namespace makes a namespace of its
 * own, so the host's are never touched: setup() remembers the namespace
 * it started in and unshares a new one, teardown() goes back and drops
 * the new one, which the kernel then tears down with all it holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "bpf_link_kinds.h"

/*
 * bpf_event.h brings in the test harness, which only one object of the
 * test may include: what we need of it is here.
 */
#define PROG_NAME	"kst_bpf_event"	/* as bpf_event.h names programs */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define CGROUP_ROOT	"/sys/fs/cgroup"
#define NK_PRIMARY	"kst_nk0"	/* the netkit pair, in our netns */
#define NK_PEER		"kst_nk1"
#define LSM_CG_HOOK	"bpf_lsm_settime"	/* rare, and not a net hook */
#define NF_PRIORITY	100

/* The last line the verifier wrote, for ctx->err. */
static const char *log_tail(char *log)
{
	char *end = log + strlen(log);

	while (end > log && end[-1] == '\n')
		*--end = 0;
	while (end > log && end[-1] != '\n')
		end--;
	return end;
}

/*
 * Load "r0 = ret; exit" of this type into *fd.  A program type the
 * kernel does not know fails before the verifier, with nothing in the
 * log: that is the kernel option config missing, and a skip.
 */
static int load_one(struct link_ctx *ctx, int *fd, enum bpf_prog_type type,
		    enum bpf_attach_type expected, __u32 btf_id, int ret,
		    const char *what, const char *config)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		.expected_attach_type = expected,
		.attach_btf_id = btf_id,
	);
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = ret },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	char log[4096] = "";

	/* libbpf asks for the log only when the load fails */
	opts.log_buf = log;
	opts.log_size = sizeof(log);
	*fd = bpf_prog_load(type, PROG_NAME, "GPL", insns, 2, &opts);
	if (*fd >= 0)
		return 0;
	*fd = -errno;
	if (*fd == -EINVAL && !log[0] && config) {
		snprintf(ctx->skip, sizeof(ctx->skip),
			 "the kernel cannot load %s programs (%s off?)",
			 what, config);
		return KIND_SKIP;
	}
	if (log[0])
		return kind_err(ctx, *fd, "BPF_PROG_LOAD %s (%s)", what,
				log_tail(log));
	return kind_err(ctx, *fd, "BPF_PROG_LOAD %s", what);
}

/* The program the link is made with, and the one update() puts in. */
static int load_progs(struct link_ctx *ctx, enum bpf_prog_type type,
		      enum bpf_attach_type expected, __u32 btf_id, int ret,
		      const char *what, const char *config)
{
	int err;

	err = load_one(ctx, &ctx->prog_fd, type, expected, btf_id, ret, what,
		       config);
	if (err)
		return err;
	return load_one(ctx, &ctx->prog2_fd, type, expected, btf_id, ret,
			what, config);
}

/* BPF_LINK_CREATE, the one way these links are made. */
static int link_make(struct link_ctx *ctx, enum link_via via, int target,
		     enum bpf_attach_type type,
		     const struct bpf_link_create_opts *opts, const char *what)
{
	int fd;

	if (via != VIA_LINK_CREATE)
		return kind_err(ctx, -EOPNOTSUPP,
				"BPF_RAW_TRACEPOINT_OPEN %s", what);
	fd = bpf_link_create(ctx->prog_fd, target, type, opts);
	if (fd < 0)
		return kind_err(ctx, -errno, "BPF_LINK_CREATE %s", what);
	return fd;
}

static int link_update(struct link_ctx *ctx)
{
	LIBBPF_OPTS(bpf_link_update_opts, opts,
		.flags = BPF_F_REPLACE,
		.old_prog_fd = ctx->prog_fd,
	);

	if (bpf_link_update(ctx->link_fd, ctx->prog2_fd, &opts))
		return kind_err(ctx, -errno, "BPF_LINK_UPDATE");
	return 0;
}

/* Close fd[]: all the sockmap kinds have to undo. */
static void fds_close(struct link_ctx *ctx)
{
	for (size_t i = 0; i < ARRAY_SIZE(ctx->fd); i++)
		close_fd(&ctx->fd[i]);
}

/* Cgroups: a new cgroup2 directory, in fd[0] and ctx->path. */

static int cgroup_make(struct link_ctx *ctx)
{
	struct statfs fs;

	if (statfs(CGROUP_ROOT, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(ctx->skip, sizeof(ctx->skip),
			 "cgroup2 is not mounted at %s", CGROUP_ROOT);
		return KIND_SKIP;
	}
	snprintf(ctx->path, sizeof(ctx->path), "%s/kst_bpf_link_%d",
		 CGROUP_ROOT, getpid());
	if (mkdir(ctx->path, 0755)) {
		int err = -errno;

		ctx->path[0] = 0;
		return kind_err(ctx, err, "mkdir %s/kst_bpf_link_%d",
				CGROUP_ROOT, getpid());
	}
	ctx->fd[0] = open(ctx->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctx->fd[0] < 0)
		return kind_err(ctx, -errno, "open %s", ctx->path);
	return 0;
}

/*
 * Remove the cgroup while the link holds it: the kernel detaches its
 * links from a kworker once the cgroup's BPF state is released.
 */
static int cgroup_remove(struct link_ctx *ctx)
{
	close_fd(&ctx->fd[0]);
	if (rmdir(ctx->path))
		return kind_err(ctx, -errno, "rmdir %s", ctx->path);
	ctx->path[0] = 0;
	return 0;
}

static void cgroup_teardown(struct link_ctx *ctx)
{
	fds_close(ctx);
	if (ctx->path[0])
		rmdir(ctx->path);
	ctx->path[0] = 0;
}

static int cgroup_skb_setup(struct link_ctx *ctx, enum bpf_attach_type load)
{
	int err = cgroup_make(ctx);

	if (err)
		return err;
	return load_progs(ctx, BPF_PROG_TYPE_CGROUP_SKB, load, 0, 1,
			  "cgroup_skb", "CONFIG_CGROUP_BPF");
}

static int cgroup_setup(struct link_ctx *ctx)
{
	return cgroup_skb_setup(ctx, BPF_CGROUP_INET_EGRESS);
}

/*
 * Loaded with expected_attach_type 0, which is BPF_CGROUP_INET_INGRESS,
 * and linked at egress: the records must say where the link is.
 */
static int cgroup_expected_0_setup(struct link_ctx *ctx)
{
	return cgroup_skb_setup(ctx, 0);
}

static int cgroup_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->fd[0], BPF_CGROUP_INET_EGRESS, NULL,
			 "cgroup_skb egress");
}

const struct link_kind kind_cgroup = {
	.name = "cgroup",
	.link_type = BPF_LINK_TYPE_CGROUP,
	.attach_type = BPF_CGROUP_INET_EGRESS,
	.has_prog = true,
	.can_detach = true,
	.setup = cgroup_setup,
	.attach = cgroup_attach,
	.update = link_update,
	.remove_target = cgroup_remove,
	.teardown = cgroup_teardown,
};

const struct link_kind kind_cgroup_expected_0 = {
	.name = "cgroup_expected_0",
	.link_type = BPF_LINK_TYPE_CGROUP,
	.attach_type = BPF_CGROUP_INET_EGRESS,
	.has_prog = true,
	.can_detach = true,
	.setup = cgroup_expected_0_setup,
	.attach = cgroup_attach,
	.update = link_update,
	.remove_target = cgroup_remove,
	.teardown = cgroup_teardown,
};

/*
 * An LSM program run only for the tasks of one cgroup.  The hook is not
 * a socket hook, so the kernel runs it for the current task's cgroup, and
 * it is one that runs rarely; returning 1 lets the call through.
 */
static int lsm_cgroup_setup(struct link_ctx *ctx)
{
	struct btf *btf;
	int id, err;

	btf = btf__load_vmlinux_btf();
	if (!btf) {
		snprintf(ctx->skip, sizeof(ctx->skip),
			 "no vmlinux BTF (CONFIG_DEBUG_INFO_BTF off?)");
		return KIND_SKIP;
	}
	id = btf__find_by_name_kind(btf, LSM_CG_HOOK, BTF_KIND_FUNC);
	btf__free(btf);
	if (id < 0) {
		snprintf(ctx->skip, sizeof(ctx->skip),
			 "no BTF for %s (CONFIG_BPF_LSM off?)", LSM_CG_HOOK);
		return KIND_SKIP;
	}
	err = cgroup_make(ctx);
	if (err)
		return err;
	return load_progs(ctx, BPF_PROG_TYPE_LSM, BPF_LSM_CGROUP, id, 1,
			  "lsm_cgroup " LSM_CG_HOOK, "CONFIG_BPF_LSM");
}

static int lsm_cgroup_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->fd[0], BPF_LSM_CGROUP, NULL,
			 "lsm_cgroup " LSM_CG_HOOK);
}

const struct link_kind kind_lsm_cgroup = {
	.name = "lsm_cgroup",
	.link_type = BPF_LINK_TYPE_CGROUP,
	.attach_type = BPF_LSM_CGROUP,
	.has_prog = true,
	.can_detach = true,
	.setup = lsm_cgroup_setup,
	.attach = lsm_cgroup_attach,
	.update = link_update,
	.remove_target = cgroup_remove,
	.teardown = cgroup_teardown,
};

/* Network namespaces: ours in ctx->netns_fd, the one we left in orig. */

static int netns_make(struct link_ctx *ctx)
{
	ctx->orig_netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ctx->orig_netns_fd < 0)
		return kind_err(ctx, -errno, "open /proc/self/ns/net");
	if (unshare(CLONE_NEWNET))
		return kind_err(ctx, -errno, "unshare(CLONE_NEWNET)");
	ctx->netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ctx->netns_fd < 0)
		return kind_err(ctx, -errno, "open the new /proc/self/ns/net");
	return 0;
}

/*
 * Go back to the namespace we came from and drop our last reference to
 * the new one; the kernel tears it down from its cleanup workqueue.
 */
static int netns_leave(struct link_ctx *ctx)
{
	int err = 0;

	if (ctx->orig_netns_fd >= 0 && setns(ctx->orig_netns_fd, CLONE_NEWNET))
		err = kind_err(ctx, -errno, "setns back to the first netns");
	close_fd(&ctx->netns_fd);
	return err;
}

static void netns_teardown(struct link_ctx *ctx)
{
	fds_close(ctx);
	if (ctx->netns_fd >= 0)
		netns_leave(ctx);
	close_fd(&ctx->orig_netns_fd);
	ctx->ifindex = 0;
}

/* Links on the namespace itself: flow dissector and sk_lookup. */

static int flow_dissector_setup(struct link_ctx *ctx)
{
	return netns_make(ctx) ?:
	       load_progs(ctx, BPF_PROG_TYPE_FLOW_DISSECTOR,
			  BPF_FLOW_DISSECTOR, 0, BPF_FLOW_DISSECTOR_CONTINUE,
			  "flow_dissector", "CONFIG_NET");
}

static int flow_dissector_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->netns_fd, BPF_FLOW_DISSECTOR, NULL,
			 "flow_dissector");
}

const struct link_kind kind_flow_dissector = {
	.name = "flow_dissector",
	.link_type = BPF_LINK_TYPE_NETNS,
	.attach_type = BPF_FLOW_DISSECTOR,
	.has_prog = true,
	.can_detach = true,
	.setup = flow_dissector_setup,
	.attach = flow_dissector_attach,
	.update = link_update,
	.remove_target = netns_leave,
	.teardown = netns_teardown,
};

static int sk_lookup_setup(struct link_ctx *ctx)
{
	return netns_make(ctx) ?:
	       load_progs(ctx, BPF_PROG_TYPE_SK_LOOKUP, BPF_SK_LOOKUP, 0,
			  SK_PASS, "sk_lookup", "CONFIG_INET");
}

static int sk_lookup_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->netns_fd, BPF_SK_LOOKUP, NULL,
			 "sk_lookup");
}

const struct link_kind kind_sk_lookup = {
	.name = "sk_lookup",
	.link_type = BPF_LINK_TYPE_NETNS,
	.attach_type = BPF_SK_LOOKUP,
	.has_prog = true,
	.can_detach = true,
	.setup = sk_lookup_setup,
	.attach = sk_lookup_attach,
	.update = link_update,
	.remove_target = netns_leave,
	.teardown = netns_teardown,
};

/*
 * Links on the loopback device of our namespace: generic XDP and tcx.
 * lo cannot be deleted; it goes when the namespace does, and takes the
 * links' attach point with it.
 */
static int lo_setup(struct link_ctx *ctx, enum bpf_prog_type type,
		    enum bpf_attach_type expected, int ret, const char *what)
{
	int err = netns_make(ctx);

	if (err)
		return err;
	ctx->ifindex = if_nametoindex("lo");
	if (!ctx->ifindex)
		return kind_err(ctx, -errno, "if_nametoindex(lo)");
	return load_progs(ctx, type, expected, 0, ret, what, "CONFIG_NET");
}

/* Loaded with no attach type, as an XDP program may be: records say BPF_XDP */
static int xdp_setup(struct link_ctx *ctx)
{
	return lo_setup(ctx, BPF_PROG_TYPE_XDP, 0, XDP_PASS, "xdp");
}

static int xdp_attach(struct link_ctx *ctx, enum link_via via)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts,
		.flags = XDP_FLAGS_SKB_MODE,
	);

	return link_make(ctx, via, ctx->ifindex, BPF_XDP, &opts,
			 "generic xdp on lo");
}

const struct link_kind kind_xdp = {
	.name = "xdp",
	.link_type = BPF_LINK_TYPE_XDP,
	.attach_type = BPF_XDP,
	.has_prog = true,
	.can_detach = true,
	.setup = xdp_setup,
	.attach = xdp_attach,
	.update = link_update,
	.remove_target = netns_leave,
	.teardown = netns_teardown,
};

static int tcx_ingress_setup(struct link_ctx *ctx)
{
	return lo_setup(ctx, BPF_PROG_TYPE_SCHED_CLS, BPF_TCX_INGRESS,
			TCX_PASS, "tcx ingress");
}

static int tcx_ingress_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->ifindex, BPF_TCX_INGRESS, NULL,
			 "tcx ingress on lo");
}

const struct link_kind kind_tcx_ingress = {
	.name = "tcx_ingress",
	.link_type = BPF_LINK_TYPE_TCX,
	.attach_type = BPF_TCX_INGRESS,
	.has_prog = true,
	.can_detach = true,
	.setup = tcx_ingress_setup,
	.attach = tcx_ingress_attach,
	.update = link_update,
	.remove_target = netns_leave,
	.teardown = netns_teardown,
};

/* Loaded for ingress and linked at egress: records say where it is linked */
static int tcx_egress_setup(struct link_ctx *ctx)
{
	return lo_setup(ctx, BPF_PROG_TYPE_SCHED_CLS, BPF_TCX_INGRESS,
			TCX_PASS, "tcx egress");
}

static int tcx_egress_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->ifindex, BPF_TCX_EGRESS, NULL,
			 "tcx egress on lo");
}

const struct link_kind kind_tcx_egress = {
	.name = "tcx_egress",
	.link_type = BPF_LINK_TYPE_TCX,
	.attach_type = BPF_TCX_EGRESS,
	.has_prog = true,
	.can_detach = true,
	.setup = tcx_egress_setup,
	.attach = tcx_egress_attach,
	.update = link_update,
	.remove_target = netns_leave,
	.teardown = netns_teardown,
};

/*
 * rtnetlink, by hand: a request is a header, an ifinfomsg and attributes,
 * some of them nests of more attributes.
 */
struct nl_req {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char attrs[256];
	bool full;		/* an attribute did not fit */
};

/* Append an attribute; NULL, and req->full set, if it does not fit. */
static struct rtattr *nla_add(struct nl_req *req, int type, const void *data,
			      int len)
{
	struct rtattr *rta;

	if (req->full || NLMSG_ALIGN(req->nh.nlmsg_len) + RTA_SPACE(len) >
			 offsetof(struct nl_req, full)) {
		req->full = true;
		return NULL;
	}
	rta = (void *)((char *)req + NLMSG_ALIGN(req->nh.nlmsg_len));
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	req->nh.nlmsg_len = NLMSG_ALIGN(req->nh.nlmsg_len) + RTA_SPACE(len);
	return rta;
}

static struct rtattr *nla_add_str(struct nl_req *req, int type,
				  const char *s)
{
	return nla_add(req, type, s, strlen(s) + 1);
}

/* A nest ends where the request does now. */
static void nla_end(struct nl_req *req, struct rtattr *nest)
{
	if (nest)
		nest->rta_len = (char *)req + req->nh.nlmsg_len - (char *)nest;
}

static void nl_init(struct nl_req *req, int type, int flags)
{
	memset(req, 0, sizeof(*req));
	req->nh.nlmsg_len = NLMSG_LENGTH(sizeof(req->ifi));
	req->nh.nlmsg_type = type;
	req->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	req->nh.nlmsg_seq = 1;
	req->ifi.ifi_family = AF_UNSPEC;
}

/* Send the request in our netns and read its ack: 0 or -errno. */
static int nl_talk(struct nl_req *req)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char buf[8192];
	int fd, err = -EPROTO;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, req, req->nh.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		struct nlmsghdr *h = (void *)buf;

		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			err = -errno;
			goto out;
		}
		for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_seq != req->nh.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				err = e->error;
				goto out;
			}
		}
	}
out:
	close(fd);
	return err;
}

/*
 * A netkit pair, NK_PRIMARY and its peer NK_PEER, in the default mode
 * (L3) and policy (pass).  The primary's ifindex goes to ctx->ifindex.
 */
static int netkit_make(struct link_ctx *ctx)
{
	struct ifinfomsg peer = { .ifi_family = AF_UNSPEC };
	struct rtattr *info, *data, *pinfo;
	struct nl_req req;
	int err;

	nl_init(&req, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	nla_add_str(&req, IFLA_IFNAME, NK_PRIMARY);
	info = nla_add(&req, IFLA_LINKINFO, NULL, 0);
	nla_add_str(&req, IFLA_INFO_KIND, "netkit");
	data = nla_add(&req, IFLA_INFO_DATA, NULL, 0);
	pinfo = nla_add(&req, IFLA_NETKIT_PEER_INFO, &peer, sizeof(peer));
	nla_add_str(&req, IFLA_IFNAME, NK_PEER);
	nla_end(&req, pinfo);
	nla_end(&req, data);
	nla_end(&req, info);
	if (req.full)
		return kind_err(ctx, -EMSGSIZE, "RTM_NEWLINK netkit");

	err = nl_talk(&req);
	if (err == -EOPNOTSUPP) {	/* "Unknown device type" */
		snprintf(ctx->skip, sizeof(ctx->skip),
			 "no netkit devices (CONFIG_NETKIT off?)");
		return KIND_SKIP;
	}
	if (err)
		return kind_err(ctx, err, "RTM_NEWLINK netkit %s/%s",
				NK_PRIMARY, NK_PEER);
	ctx->ifindex = if_nametoindex(NK_PRIMARY);
	if (!ctx->ifindex)
		return kind_err(ctx, -errno, "if_nametoindex(%s)", NK_PRIMARY);
	return 0;
}

/* Delete the primary; the kernel deletes its peer with it. */
static int netkit_remove(struct link_ctx *ctx)
{
	struct nl_req req;
	int err;

	nl_init(&req, RTM_DELLINK, 0);
	req.ifi.ifi_index = ctx->ifindex;
	err = nl_talk(&req);
	if (err)
		return kind_err(ctx, err, "RTM_DELLINK %s", NK_PRIMARY);
	ctx->ifindex = 0;
	return 0;
}

static int netkit_setup(struct link_ctx *ctx, enum bpf_attach_type type,
			const char *what)
{
	return netns_make(ctx) ?: netkit_make(ctx) ?:
	       load_progs(ctx, BPF_PROG_TYPE_SCHED_CLS, type, 0, NETKIT_PASS,
			  what, "CONFIG_NET");
}

static int netkit_primary_setup(struct link_ctx *ctx)
{
	return netkit_setup(ctx, BPF_NETKIT_PRIMARY, "netkit primary");
}

/* Loaded for the primary and linked as the peer, as tcx_egress_setup() */
static int netkit_peer_setup(struct link_ctx *ctx)
{
	return netkit_setup(ctx, BPF_NETKIT_PRIMARY, "netkit peer");
}

/* Both sides are named by the primary device. */
static int netkit_primary_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->ifindex, BPF_NETKIT_PRIMARY, NULL,
			 "netkit primary");
}

static int netkit_peer_attach(struct link_ctx *ctx, enum link_via via)
{
	return link_make(ctx, via, ctx->ifindex, BPF_NETKIT_PEER, NULL,
			 "netkit peer");
}

const struct link_kind kind_netkit_primary = {
	.name = "netkit_primary",
	.link_type = BPF_LINK_TYPE_NETKIT,
	.attach_type = BPF_NETKIT_PRIMARY,
	.has_prog = true,
	.can_detach = true,
	.setup = netkit_primary_setup,
	.attach = netkit_primary_attach,
	.update = link_update,
	.remove_target = netkit_remove,
	.teardown = netns_teardown,
};

const struct link_kind kind_netkit_peer = {
	.name = "netkit_peer",
	.link_type = BPF_LINK_TYPE_NETKIT,
	.attach_type = BPF_NETKIT_PEER,
	.has_prog = true,
	.can_detach = true,
	.setup = netkit_peer_setup,
	.attach = netkit_peer_attach,
	.update = link_update,
	.remove_target = netkit_remove,
	.teardown = netns_teardown,
};

/*
 * A netfilter hook in our own namespace.  The link holds the namespace,
 * so its attach point cannot go first; and the kernel refuses to
 * replace a netfilter link's program.
 */
static int netfilter_setup(struct link_ctx *ctx)
{
	return netns_make(ctx) ?:
	       load_one(ctx, &ctx->prog_fd, BPF_PROG_TYPE_NETFILTER,
			BPF_NETFILTER, 0, NF_ACCEPT, "netfilter",
			"CONFIG_NETFILTER_BPF_LINK");
}

static int netfilter_attach(struct link_ctx *ctx, enum link_via via)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts,
		.netfilter.pf = NFPROTO_IPV4,
		.netfilter.hooknum = NF_INET_LOCAL_OUT,
		.netfilter.priority = NF_PRIORITY,
	);

	return link_make(ctx, via, 0, BPF_NETFILTER, &opts,
			 "netfilter ipv4 local_out");
}

const struct link_kind kind_netfilter = {
	.name = "netfilter",
	.link_type = BPF_LINK_TYPE_NETFILTER,
	.attach_type = BPF_NETFILTER,
	.has_prog = true,
	.can_detach = true,
	.setup = netfilter_setup,
	.attach = netfilter_attach,
	.teardown = netns_teardown,
};

/*
 * Verdict programs of a sockmap, in fd[0].  The link holds the map, so
 * it cannot go first either.
 */
static int sockmap_setup(struct link_ctx *ctx, enum bpf_prog_type type,
			 enum bpf_attach_type expected, const char *what)
{
	ctx->fd[0] = bpf_map_create(BPF_MAP_TYPE_SOCKMAP, "kst_sockmap", 4, 4,
				    1, NULL);
	if (ctx->fd[0] < 0)
		return kind_err(ctx, -errno, "BPF_MAP_CREATE sockmap");
	return load_progs(ctx, type, expected, 0, SK_PASS, what,
			  "CONFIG_NET");
}

static int sockmap_skb_verdict_setup(struct link_ctx *ctx)
{
	return sockmap_setup(ctx, BPF_PROG_TYPE_SK_SKB, BPF_SK_SKB_VERDICT,
			     "sk_skb verdict");
}

static int sockmap_msg_verdict_setup(struct link_ctx *ctx)
{
	return sockmap_setup(ctx, BPF_PROG_TYPE_SK_MSG, BPF_SK_MSG_VERDICT,
			     "sk_msg verdict");
}

static int sockmap_skb_verdict_attach(struct link_ctx *ctx,
				      enum link_via via)
{
	return link_make(ctx, via, ctx->fd[0], BPF_SK_SKB_VERDICT, NULL,
			 "sk_skb verdict on a sockmap");
}

static int sockmap_msg_verdict_attach(struct link_ctx *ctx,
				      enum link_via via)
{
	return link_make(ctx, via, ctx->fd[0], BPF_SK_MSG_VERDICT, NULL,
			 "sk_msg verdict on a sockmap");
}

const struct link_kind kind_sockmap_skb_verdict = {
	.name = "sockmap_skb_verdict",
	.link_type = BPF_LINK_TYPE_SOCKMAP,
	.attach_type = BPF_SK_SKB_VERDICT,
	.has_prog = true,
	.can_detach = true,
	.setup = sockmap_skb_verdict_setup,
	.attach = sockmap_skb_verdict_attach,
	.update = link_update,
	.teardown = fds_close,
};

const struct link_kind kind_sockmap_msg_verdict = {
	.name = "sockmap_msg_verdict",
	.link_type = BPF_LINK_TYPE_SOCKMAP,
	.attach_type = BPF_SK_MSG_VERDICT,
	.has_prog = true,
	.can_detach = true,
	.setup = sockmap_msg_verdict_setup,
	.attach = sockmap_msg_verdict_attach,
	.update = link_update,
	.teardown = fds_close,
};
