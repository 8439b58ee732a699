// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_BPF_EVENT_LINK_ATTACH and PERF_BPF_EVENT_LINK_DETACH, for every
 * link type 6.12 can make and every way such a link is attached and
 * detached.
 *
 * Each variant names a kind of link (bpf_link_kinds_*.c make them), how it
 * is made, whether BPF_LINK_UPDATE replaces its program first, and how it
 * stops being attached.  The test checks that exactly one LINK_ATTACH and
 * exactly one LINK_DETACH are written for the link, that they say the
 * link type and the attach type the uapi header promises for the kind,
 * and that they come between the program's load and unload.  A listener
 * that asks for bpf_event alone, as every reader of Linux 6.12 does, gets
 * none of it: only program records, in 6.12's layout.
 */
#include "bpf_event.h"
#include "bpf_link_kinds.h"

FIXTURE(link) {
	struct sb_listener task;	/* this task: attach, update, detach */
	struct sb_listener ksym_only;	/* asked for no BPF_EVENT records */
	struct sb_cpus cpus;		/* all CPUs: kworkers, RCU, unloads */
	struct sb_cpus progs_only;	/* all CPUs, bpf_event alone */
	struct link_ctx ctx;
	struct prog_info prog, prog2;
	const struct prog_info *cur;	/* the program the link holds now */
	bool set_up;			/* the kind's setup() finished */
};

FIXTURE_VARIANT(link) {
	const struct link_kind *kind;
	enum link_via via;
	enum link_by by;
	bool update;			/* BPF_LINK_UPDATE before the detach */
};

#define LINK_CASE(_name, _kind, _via, _by, _update)			\
	FIXTURE_VARIANT_ADD(link, _name) {				\
		.kind = &(_kind), .via = (_via), .by = (_by),		\
		.update = (_update),					\
	}

#define C VIA_LINK_CREATE
#define R VIA_RAW_TP_OPEN

LINK_CASE(raw_tp_open_close, kind_raw_tp, R, BY_CLOSE, false);
LINK_CASE(tp_btf_open_close, kind_tp_btf, R, BY_CLOSE, false);
LINK_CASE(tp_btf_create_close, kind_tp_btf, C, BY_CLOSE, false);
LINK_CASE(fentry_open_close, kind_fentry, R, BY_CLOSE, false);
LINK_CASE(fentry_create_close, kind_fentry, C, BY_CLOSE, false);
LINK_CASE(fexit_open_close, kind_fexit, R, BY_CLOSE, false);
LINK_CASE(fexit_create_close, kind_fexit, C, BY_CLOSE, false);
LINK_CASE(fmod_ret_open_close, kind_fmod_ret, R, BY_CLOSE, false);
LINK_CASE(fmod_ret_create_close, kind_fmod_ret, C, BY_CLOSE, false);
LINK_CASE(lsm_open_close, kind_lsm, R, BY_CLOSE, false);
LINK_CASE(lsm_create_close, kind_lsm, C, BY_CLOSE, false);
LINK_CASE(freplace_open_close, kind_freplace, R, BY_CLOSE, false);
LINK_CASE(freplace_create_close, kind_freplace, C, BY_CLOSE, false);
LINK_CASE(iter_create_close, kind_iter, C, BY_CLOSE, false);
LINK_CASE(iter_update_close, kind_iter, C, BY_CLOSE, true);
LINK_CASE(perf_event_close, kind_perf_event, C, BY_CLOSE, false);
LINK_CASE(kprobe_multi_close, kind_kprobe_multi, C, BY_CLOSE, false);
LINK_CASE(kprobe_session_close, kind_kprobe_session, C, BY_CLOSE, false);
LINK_CASE(uprobe_multi_close, kind_uprobe_multi, C, BY_CLOSE, false);
LINK_CASE(struct_ops_detach, kind_struct_ops, C, BY_DETACH, false);
LINK_CASE(struct_ops_close, kind_struct_ops, C, BY_CLOSE, false);
LINK_CASE(struct_ops_update_detach, kind_struct_ops, C, BY_DETACH, true);

LINK_CASE(cgroup_detach, kind_cgroup, C, BY_DETACH, false);
LINK_CASE(cgroup_close, kind_cgroup, C, BY_CLOSE, false);
LINK_CASE(cgroup_removed, kind_cgroup, C, BY_TARGET_GONE, false);
LINK_CASE(cgroup_update_detach, kind_cgroup, C, BY_DETACH, true);
LINK_CASE(cgroup_update_removed, kind_cgroup, C, BY_TARGET_GONE, true);
LINK_CASE(cgroup_expected_0_detach, kind_cgroup_expected_0, C, BY_DETACH, false);
LINK_CASE(cgroup_expected_0_close, kind_cgroup_expected_0, C, BY_CLOSE, false);
LINK_CASE(cgroup_expected_0_removed, kind_cgroup_expected_0, C, BY_TARGET_GONE, false);
LINK_CASE(lsm_cgroup_detach, kind_lsm_cgroup, C, BY_DETACH, false);
LINK_CASE(lsm_cgroup_close, kind_lsm_cgroup, C, BY_CLOSE, false);
LINK_CASE(lsm_cgroup_removed, kind_lsm_cgroup, C, BY_TARGET_GONE, false);
LINK_CASE(flow_dissector_detach, kind_flow_dissector, C, BY_DETACH, false);
LINK_CASE(flow_dissector_close, kind_flow_dissector, C, BY_CLOSE, false);
LINK_CASE(flow_dissector_netns_gone, kind_flow_dissector, C, BY_TARGET_GONE, false);
LINK_CASE(flow_dissector_update_detach, kind_flow_dissector, C, BY_DETACH, true);
LINK_CASE(sk_lookup_detach, kind_sk_lookup, C, BY_DETACH, false);
LINK_CASE(sk_lookup_netns_gone, kind_sk_lookup, C, BY_TARGET_GONE, false);
LINK_CASE(sk_lookup_close, kind_sk_lookup, C, BY_CLOSE, false);
LINK_CASE(xdp_detach, kind_xdp, C, BY_DETACH, false);
LINK_CASE(xdp_close, kind_xdp, C, BY_CLOSE, false);
LINK_CASE(xdp_dev_gone, kind_xdp, C, BY_TARGET_GONE, false);
LINK_CASE(xdp_update_detach, kind_xdp, C, BY_DETACH, true);
LINK_CASE(tcx_ingress_detach, kind_tcx_ingress, C, BY_DETACH, false);
LINK_CASE(tcx_ingress_close, kind_tcx_ingress, C, BY_CLOSE, false);
LINK_CASE(tcx_ingress_dev_gone, kind_tcx_ingress, C, BY_TARGET_GONE, false);
LINK_CASE(tcx_ingress_update_detach, kind_tcx_ingress, C, BY_DETACH, true);
LINK_CASE(tcx_egress_detach, kind_tcx_egress, C, BY_DETACH, false);
LINK_CASE(tcx_egress_dev_gone, kind_tcx_egress, C, BY_TARGET_GONE, false);
LINK_CASE(netkit_primary_detach, kind_netkit_primary, C, BY_DETACH, false);
LINK_CASE(netkit_primary_close, kind_netkit_primary, C, BY_CLOSE, false);
LINK_CASE(netkit_primary_dev_gone, kind_netkit_primary, C, BY_TARGET_GONE, false);
LINK_CASE(netkit_primary_update_detach, kind_netkit_primary, C, BY_DETACH, true);
LINK_CASE(netkit_peer_detach, kind_netkit_peer, C, BY_DETACH, false);
LINK_CASE(netkit_peer_dev_gone, kind_netkit_peer, C, BY_TARGET_GONE, false);
LINK_CASE(netkit_peer_close, kind_netkit_peer, C, BY_CLOSE, false);
LINK_CASE(netfilter_detach, kind_netfilter, C, BY_DETACH, false);
LINK_CASE(netfilter_close, kind_netfilter, C, BY_CLOSE, false);
LINK_CASE(sockmap_skb_verdict_detach, kind_sockmap_skb_verdict, C, BY_DETACH, false);
LINK_CASE(sockmap_skb_verdict_close, kind_sockmap_skb_verdict, C, BY_CLOSE, false);
LINK_CASE(sockmap_skb_verdict_update_close, kind_sockmap_skb_verdict, C, BY_CLOSE, true);
LINK_CASE(sockmap_msg_verdict_detach, kind_sockmap_msg_verdict, C, BY_DETACH, false);
LINK_CASE(sockmap_msg_verdict_close, kind_sockmap_msg_verdict, C, BY_CLOSE, false);

#undef C
#undef R

/* Close what the test holds, then undo the kind's setup. */
static void link_release(const struct link_kind *k, struct link_ctx *ctx)
{
	close_fd(&ctx->link_fd);
	close_fd(&ctx->prog_fd);
	close_fd(&ctx->prog2_fd);
	k->teardown(ctx);
}

FIXTURE_SETUP(link)
{
	const struct link_kind *k = variant->kind;
	struct link_ctx *ctx = &self->ctx;
	int err;

	link_ctx_init(ctx);
	self->task.fd = -1;
	self->ksym_only.fd = -1;

	err = sb_open(&self->task, SB_BPF_LINKS, false, 0, -1);
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("side-band listener: %s", strerror(-err));
	err = sb_open(&self->ksym_only, SB_BPF_NONE, true, 0, -1);
	ASSERT_EQ(0, err) TH_LOG("ksymbol listener: %s", strerror(-err));
	err = sb_cpus_open(&self->cpus);
	SKIP_IF_NO_PRIV(err, "CPU-wide perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("CPU-wide listeners: %s", strerror(-err));
	err = sb_cpus_open_bpf(&self->progs_only, SB_BPF_PROGS);
	ASSERT_EQ(0, err) TH_LOG("CPU-wide bpf_event listeners: %s",
				 strerror(-err));

	err = k->setup(ctx);
	if (!err && k->has_prog)
		err = prog_info_get(ctx->prog_fd, &self->prog);
	if (!err && k->has_prog && variant->update)
		err = prog_info_get(ctx->prog2_fd, &self->prog2);
	if (err) {
		/* no teardown follows a setup that did not finish */
		link_release(k, ctx);
		if (err == KIND_SKIP)
			SKIP(return, "%s: %s", k->name, ctx->skip);
		SKIP_IF_NO_PRIV(err, k->name);
		ASSERT_EQ(0, err) TH_LOG("%s setup: %s", k->name,
					 ctx->err[0] ? ctx->err : strerror(-err));
	}
	self->cur = k->has_prog ? &self->prog : NULL;
	self->set_up = true;
}

FIXTURE_TEARDOWN(link)
{
	if (self->set_up)
		link_release(variant->kind, &self->ctx);
	sb_cpus_close(&self->cpus);
	sb_cpus_close(&self->progs_only);
	sb_close(&self->task);
	sb_close(&self->ksym_only);
}

static const char *event_name(__u16 type)
{
	return type == PERF_BPF_EVENT_LINK_ATTACH ? "LINK_ATTACH" :
	       type == PERF_BPF_EVENT_LINK_DETACH ? "LINK_DETACH" : "?";
}

/* A link record against the kind's promise and what bpf(2) says. */
static void check_link_record(struct __test_metadata *_metadata,
			      const struct sb_record *r,
			      const struct link_kind *k,
			      const struct prog_info *pi)
{
	static const __u8 no_tag[BPF_TAG_SIZE];

	EXPECT_EQ(SB_BPF_LINK_BODY, r->body);
	EXPECT_EQ(0, r->bpf.flags);
	EXPECT_EQ(k->link_type, r->bpf.link_type)
		TH_LOG("%s %s: link_type %u", k->name,
		       event_name(r->bpf.type), r->bpf.link_type);
	EXPECT_EQ(k->attach_type, r->bpf.attach_type)
		TH_LOG("%s %s: attach_type %u, not %u", k->name,
		       event_name(r->bpf.type), r->bpf.attach_type,
		       k->attach_type);
	/* the program the link holds; none for struct_ops */
	EXPECT_EQ(pi ? pi->id : 0, r->bpf.id)
		TH_LOG("%s %s: program id", k->name, event_name(r->bpf.type));
	EXPECT_EQ(0, memcmp(pi ? pi->tag : no_tag, r->bpf.tag, BPF_TAG_SIZE))
		TH_LOG("%s %s: program tag", k->name, event_name(r->bpf.type));
}

/*
 * Load and unload a socket filter, and wait for its unload on this task's
 * ring: every record this task caused before is then on the ring too.
 */
static void task_fence(struct __test_metadata *_metadata,
		       struct sb_listener *l)
{
	struct prog_info pi;
	int fd;

	fd = load_prog(&pi);
	ASSERT_LE(0, fd) TH_LOG("fence program: %s", strerror(-fd));
	close(fd);
	ASSERT_TRUE(wait_until(sb_has_prog(l, PERF_BPF_EVENT_PROG_UNLOAD, pi.id),
			       WAIT_LONG_MS)) TH_LOG("no unload of the fence");
}

/*
 * What listeners with bpf_event alone got, on every CPU, while the link
 * came and went: program records only (the load of prog, if not NULL,
 * among them), each as a reader of Linux 6.12 parses it, forward, with
 * the sample_id right after the tag.
 */
static void check_progs_only(struct __test_metadata *_metadata,
			     struct sb_cpus *c, const struct prog_info *prog)
{
	struct sb_record *r;

	sb_cpus_drain(c);
	for (int i = 0; i < c->nr; i++) {
		struct sb_listener *l = &c->l[i];

		for (int j = 0; j < l->nr; j++) {
			r = &l->rec[j];
			if (r->type != PERF_RECORD_BPF_EVENT)
				continue;
			EXPECT_TRUE(r->bpf.type == PERF_BPF_EVENT_PROG_LOAD ||
				    r->bpf.type == PERF_BPF_EVENT_PROG_UNLOAD)
				TH_LOG("bpf_event alone: a record of type %u",
				       r->bpf.type);
			EXPECT_EQ(SB_BPF_PROG_BODY, r->body);
			/* parsed forward: our event's id, this CPU */
			EXPECT_EQ(l->id, r->fwd.id);
			EXPECT_EQ(i, r->fwd.cpu);
		}
	}
	if (prog)
		EXPECT_EQ(1, sb_cpus_find(c, PERF_BPF_EVENT_PROG_LOAD, prog->id,
					  0, &r))
			TH_LOG("bpf_event alone: PROG_LOAD records of %u",
			       prog->id);
	EXPECT_EQ(0, sb_cpus_lost(c));
}

/* netns teardown runs from a busy workqueue: more than the 30 s default */
TEST_F_TIMEOUT(link, lifecycle, 60)
{
	const struct link_kind *k = variant->kind;
	struct sb_record *load = NULL, *attach, *detach, *unload = NULL;
	struct link_ctx *ctx = &self->ctx;
	struct sb_listener *l = &self->task;
	struct sb_cpus *c = &self->cpus;
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	__u32 id;
	int a, err;
	bool ok;

	/* Attach: one LINK_ATTACH, written in this task as bpf() returns. */
	ctx->link_fd = k->attach(ctx, variant->via);
	ASSERT_LE(0, ctx->link_fd) TH_LOG("%s attach: %s", k->name, ctx->err);
	ASSERT_EQ(0, bpf_link_get_info_by_fd(ctx->link_fd, &info, &len));
	id = info.id;
	ASSERT_EQ(k->link_type, info.type);
	if (k->has_prog)
		ASSERT_EQ(self->prog.id, info.prog_id);

	ASSERT_TRUE(wait_until(sb_has_link(l, PERF_BPF_EVENT_LINK_ATTACH, id),
			       WAIT_MS)) TH_LOG("no LINK_ATTACH for link %u", id);
	a = sb_find_link(l, 0, PERF_BPF_EVENT_LINK_ATTACH, id);
	check_link_record(_metadata, &l->rec[a], k, self->cur);
	check_sample_id(_metadata, l, &l->rec[a]);

	/* BPF_LINK_UPDATE: another program, still attached, no record. */
	if (variant->update) {
		ASSERT_NE(NULL, k->update) TH_LOG("%s has no update", k->name);
		err = k->update(ctx);
		ASSERT_EQ(0, err) TH_LOG("%s update: %s", k->name, ctx->err);
		if (k->has_prog) {
			memset(&info, 0, sizeof(info));
			len = sizeof(info);
			ASSERT_EQ(0, bpf_link_get_info_by_fd(ctx->link_fd,
							     &info, &len));
			EXPECT_EQ(self->prog2.id, info.prog_id);
			self->cur = &self->prog2;
		}
		task_fence(_metadata, l);
		EXPECT_EQ(0, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, id));
		EXPECT_EQ(1, sb_count_link(l, PERF_BPF_EVENT_LINK_ATTACH, id));
	}

	switch (variant->by) {
	case BY_DETACH:
		ASSERT_TRUE(k->can_detach);
		ASSERT_EQ(0, bpf_link_detach(ctx->link_fd))
			TH_LOG("BPF_LINK_DETACH: %s", strerror(errno));
		ok = wait_until(sb_has_link(l, PERF_BPF_EVENT_LINK_DETACH, id),
				WAIT_MS);
		ASSERT_TRUE(ok) TH_LOG("no LINK_DETACH after BPF_LINK_DETACH");
		/* detaching a detached link detaches nothing more */
		bpf_link_detach(ctx->link_fd);
		break;
	case BY_CLOSE:
		if (!k->can_detach) {
			/* the kernel cannot detach it: no record either */
			EXPECT_EQ(-EOPNOTSUPP, bpf_link_detach(ctx->link_fd));
			task_fence(_metadata, l);
			EXPECT_EQ(0, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH,
						   id));
		}
		break;
	case BY_TARGET_GONE:
		ASSERT_NE(NULL, k->remove_target);
		err = k->remove_target(ctx);
		ASSERT_EQ(0, err) TH_LOG("%s: %s", k->name, ctx->err);
		/* from a workqueue, on any CPU, while we hold the link */
		ok = wait_until(sb_cpus_count(c, PERF_BPF_EVENT_LINK_DETACH,
					      ANY_PROG, id), WAIT_LONG_MS);
		ASSERT_TRUE(ok) TH_LOG("no LINK_DETACH after the attach point went");
		break;
	}

	/*
	 * The last close adds no second LINK_DETACH; closing an attached
	 * link writes its one LINK_DETACH before close() returns (unless
	 * someone else, bpftool say, holds the link at that moment).
	 */
	if (variant->by == BY_CLOSE) {
		sb_drain(l);
		EXPECT_EQ(0, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, id))
			TH_LOG("%s: LINK_DETACH before the close", k->name);
	}
	close_fd(&ctx->link_fd);
	if (variant->by != BY_TARGET_GONE) {
		sb_drain(l);
		EXPECT_EQ(1, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, id))
			TH_LOG("%s: LINK_DETACH records by close() time", k->name);
	}
	if (k->has_prog) {
		__u32 last = self->cur->id;

		/* the unload comes after the link let its program go */
		close_fd(&ctx->prog_fd);
		close_fd(&ctx->prog2_fd);
		ok = wait_until(sb_cpus_count(c, PERF_BPF_EVENT_PROG_UNLOAD,
					      last, 0), WAIT_LONG_MS);
		ASSERT_TRUE(ok) TH_LOG("no PROG_UNLOAD of program %u", last);
		sb_cpus_find(c, PERF_BPF_EVENT_PROG_UNLOAD, last, 0,
			     &unload);
		sb_cpus_find(c, PERF_BPF_EVENT_PROG_LOAD,
			     self->prog.id, 0, &load);
		EXPECT_NE(NULL, load) TH_LOG("no PROG_LOAD of program %u",
					     self->prog.id);
		/* bpf_event_ext changes nothing of the load records */
		if (load)
			EXPECT_EQ(SB_BPF_PROG_BODY, load->body);
	} else {
		task_fence(_metadata, l);
		sb_cpus_drain(c);
	}
	sb_drain(l);

	EXPECT_EQ(1, sb_cpus_find(c, PERF_BPF_EVENT_LINK_ATTACH,
				  ANY_PROG, id, &attach));
	EXPECT_EQ(1, sb_cpus_find(c, PERF_BPF_EVENT_LINK_DETACH,
				  ANY_PROG, id, &detach))
		TH_LOG("%s: LINK_DETACH records for link %u", k->name, id);
	ASSERT_NE(NULL, detach);
	check_link_record(_metadata, detach, k, self->cur);
	ASSERT_NE(NULL, attach);
	EXPECT_TRUE(sb_cpus_before(c, attach, detach));
	if (load)
		EXPECT_TRUE(sb_cpus_before(c, load, attach));
	if (unload)
		EXPECT_TRUE(sb_cpus_before(c, detach, unload));
	EXPECT_EQ(1, sb_count_link(l, PERF_BPF_EVENT_LINK_ATTACH, id));
	EXPECT_EQ(0, l->lost + l->skipped + l->torn);
	EXPECT_EQ(0, sb_cpus_lost(c));

	/* a listener without bpf_event saw the symbols, and none of it */
	sb_drain(&self->ksym_only);
	if (!k->has_prog || self->prog.ksym_addr)	/* JIT-compiled */
		EXPECT_LT(0, sb_count(&self->ksym_only, PERF_RECORD_KSYMBOL));
	EXPECT_EQ(0, sb_count(&self->ksym_only, PERF_RECORD_BPF_EVENT));

	check_progs_only(_metadata, &self->progs_only,
			 k->has_prog ? &self->prog : NULL);
}

TEST_HARNESS_MAIN
