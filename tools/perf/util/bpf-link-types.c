// SPDX-License-Identifier: GPL-2.0
/*
 * What perf knows of each kind of BPF link (enum bpf_link_type): the
 * attach types it can have, how to read the attach type of its
 * PERF_RECORD_BPF_EVENT link records and where its bpf_link_info keeps
 * one.  perf script and perf report (the records), perf record (the
 * links there at start) and perf bpf all take it from here.
 *
 * The kernel writes struct bpf_link's attach_type in a link record
 * (__perf_event_bpf_link_event() in kernel/events/core.c), which each
 * kind's attach path sets with bpf_link_init(): where the link is
 * attached, not the attach type its program was loaded with.  That is
 * the attach type given to BPF_LINK_CREATE for cgroup, netns, tcx,
 * netkit and sockmap links; the program's expected_attach_type for
 * tracing, kprobe_multi and uprobe_multi links, which is what they are
 * attached as (0 for freplace: extension programs have none); the one
 * attach type of the other kinds.
 */
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/build_bug.h>
#include <linux/kernel.h>

#include "bpf-link-types.h"

/* How the attach type of a link record is read */
enum perf_bpf_link_record {
	/* as the record has it */
	PERF_BPF_LINK_RECORD_AS_IS,
	/* the kind's one attach type, whatever the record says */
	PERF_BPF_LINK_RECORD_SOLE,
	/* the record's if the kind has it, else unknown: not 0 in a tcx link */
	PERF_BPF_LINK_RECORD_LISTED,
	/* the record's unless 0: a freplace link's, not BPF_CGROUP_INET_INGRESS */
	PERF_BPF_LINK_RECORD_NONZERO,
};

struct perf_bpf_link_type {
	/*
	 * The attach types of the kind, the first one taken when neither
	 * the record nor the info tells; none listed for the kinds that
	 * have many (cgroup, tracing).
	 */
	u16	attach_types[4];
	u8	nr_attach_types;
	u8	record;		/* enum perf_bpf_link_record */
	/*
	 * perf bpf events shows the record's attach type rather than the
	 * one the link's info gives: the info has none (iter, netfilter,
	 * uprobe_multi; kprobe_multi does not tell a session), or the same
	 * one (tracing).  For the other kinds the info gives the one the
	 * record has, checked by the kernel, or the kind's only one.
	 */
	bool	record_first;
	/* of the attach type in struct bpf_link_info; 0 if it has none */
	u16	info_off;
};

/* perf_bpf_link_info__attach_type() reads a u32 there */
#define INFO_OFF(field)							\
	(offsetof(struct bpf_link_info, field.attach_type) +		\
	 BUILD_BUG_ON_ZERO(sizeof(((struct bpf_link_info *)0)->field.attach_type) != \
			   sizeof(u32)))

static const struct perf_bpf_link_type perf_bpf_link_types[] = {
	[BPF_LINK_TYPE_RAW_TRACEPOINT] = {
		.attach_types	= { BPF_TRACE_RAW_TP },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_SOLE,
	},
	[BPF_LINK_TYPE_TRACING] = {
		.record		= PERF_BPF_LINK_RECORD_NONZERO,
		.record_first	= true,
		.info_off	= INFO_OFF(tracing),
	},
	[BPF_LINK_TYPE_CGROUP] = {
		.record		= PERF_BPF_LINK_RECORD_AS_IS,
		.info_off	= INFO_OFF(cgroup),
	},
	[BPF_LINK_TYPE_ITER] = {
		.attach_types	= { BPF_TRACE_ITER },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_AS_IS,
		.record_first	= true,
	},
	[BPF_LINK_TYPE_NETNS] = {
		.attach_types	= { BPF_FLOW_DISSECTOR, BPF_SK_LOOKUP },
		.nr_attach_types = 2,
		.record		= PERF_BPF_LINK_RECORD_LISTED,
		.info_off	= INFO_OFF(netns),
	},
	[BPF_LINK_TYPE_XDP] = {
		.attach_types	= { BPF_XDP },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_SOLE,
	},
	[BPF_LINK_TYPE_PERF_EVENT] = {
		.attach_types	= { BPF_PERF_EVENT },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_SOLE,
	},
	[BPF_LINK_TYPE_KPROBE_MULTI] = {
		.attach_types	= { BPF_TRACE_KPROBE_MULTI, BPF_TRACE_KPROBE_SESSION },
		.nr_attach_types = 2,
		.record		= PERF_BPF_LINK_RECORD_AS_IS,
		.record_first	= true,
	},
	[BPF_LINK_TYPE_STRUCT_OPS] = {
		.attach_types	= { BPF_STRUCT_OPS },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_AS_IS,
	},
	[BPF_LINK_TYPE_NETFILTER] = {
		.attach_types	= { BPF_NETFILTER },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_AS_IS,
		.record_first	= true,
	},
	[BPF_LINK_TYPE_TCX] = {
		.attach_types	= { BPF_TCX_INGRESS, BPF_TCX_EGRESS },
		.nr_attach_types = 2,
		.record		= PERF_BPF_LINK_RECORD_LISTED,
		.info_off	= INFO_OFF(tcx),
	},
	[BPF_LINK_TYPE_UPROBE_MULTI] = {
		.attach_types	= { BPF_TRACE_UPROBE_MULTI },
		.nr_attach_types = 1,
		.record		= PERF_BPF_LINK_RECORD_AS_IS,
		.record_first	= true,
	},
	[BPF_LINK_TYPE_NETKIT] = {
		.attach_types	= { BPF_NETKIT_PRIMARY, BPF_NETKIT_PEER },
		.nr_attach_types = 2,
		.record		= PERF_BPF_LINK_RECORD_LISTED,
		.info_off	= INFO_OFF(netkit),
	},
	[BPF_LINK_TYPE_SOCKMAP] = {
		.attach_types	= { BPF_SK_MSG_VERDICT, BPF_SK_SKB_VERDICT,
				    BPF_SK_SKB_STREAM_PARSER, BPF_SK_SKB_STREAM_VERDICT },
		.nr_attach_types = 4,
		.record		= PERF_BPF_LINK_RECORD_LISTED,
		.info_off	= INFO_OFF(sockmap),
	},
};

/* What perf knows of @link_type; nothing for a kind newer than perf */
static const struct perf_bpf_link_type *perf_bpf_link_type(u32 link_type)
{
	static const struct perf_bpf_link_type unknown;

	if (link_type >= ARRAY_SIZE(perf_bpf_link_types))
		return &unknown;
	return &perf_bpf_link_types[link_type];
}

static bool perf_bpf_link_type__has(const struct perf_bpf_link_type *lt, u32 attach_type)
{
	int i;

	for (i = 0; i < lt->nr_attach_types; i++) {
		if (lt->attach_types[i] == attach_type)
			return true;
	}
	return false;
}

/*
 * The attach type of a link record, as far as the record tells it:
 * PERF_BPF_ATTACH_TYPE_UNKNOWN for a value the kind of link cannot have.
 * The kinds with a single attach type that perf reads whatever the
 * record says (raw tracepoint, xdp, perf event) get that one.
 */
u16 perf_bpf_link__attach_type(u16 link_type, u16 attach_type)
{
	const struct perf_bpf_link_type *lt = perf_bpf_link_type(link_type);

	switch (lt->record) {
	case PERF_BPF_LINK_RECORD_SOLE:
		return lt->attach_types[0];
	case PERF_BPF_LINK_RECORD_LISTED:
		if (perf_bpf_link_type__has(lt, attach_type))
			return attach_type;
		break;
	case PERF_BPF_LINK_RECORD_NONZERO:
		if (attach_type)
			return attach_type;
		break;
	case PERF_BPF_LINK_RECORD_AS_IS:
	default:
		return attach_type;
	}
	return PERF_BPF_ATTACH_TYPE_UNKNOWN;
}

/* Whether a record's attach type goes before the link's info's (see above) */
bool perf_bpf_link__record_first(u32 link_type)
{
	return perf_bpf_link_type(link_type)->record_first;
}

/* Whether a link of @link_type always has @attach_type, which says nothing more */
bool perf_bpf_link__sole_attach_type(u32 link_type, u32 attach_type)
{
	const struct perf_bpf_link_type *lt = perf_bpf_link_type(link_type);

	return lt->nr_attach_types == 1 && lt->attach_types[0] == attach_type;
}

/*
 * The attach type of a link: what its info says for the kinds that carry
 * one, else the first of its kind (kprobe_multi: its info does not tell
 * a session), 0 for a kind perf does not know.
 */
u32 perf_bpf_link_info__attach_type(const struct bpf_link_info *info)
{
	const struct perf_bpf_link_type *lt = perf_bpf_link_type(info->type);

	if (lt->info_off)
		return *(const u32 *)((const char *)info + lt->info_off);
	return lt->nr_attach_types ? lt->attach_types[0] : 0;
}
