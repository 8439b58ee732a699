// SPDX-License-Identifier: GPL-2.0
/*
 * How perf script --show-bpf-events and perf report -D print
 * PERF_RECORD_BPF_EVENT records: program records as they always did,
 * link records by name with their fields, the attach type of the kinds
 * of link that have a single one whatever the record says and as unknown
 * one a kind cannot have, types perf does not know as unknown, link
 * records smaller than the link fields without reading past them, and the
 * counts of unload records that carry them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include "debug.h"
#include "event.h"
#include "tests.h"

/* Whether perf_event__fprintf_bpf() prints @event as @want */
static int bpf_event_prints(union perf_event *event, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	int ret = TEST_OK;

	fp = open_memstream(&buf, &len);
	if (!fp)
		return TEST_FAIL;
	perf_event__fprintf_bpf(event, fp);
	fclose(fp);
	if (strcmp(buf, want)) {
		pr_debug("type %u, flags %u, size %u: printed '%s', want '%s'\n",
			 event->bpf.type, event->bpf.flags, event->header.size, buf, want);
		ret = TEST_FAIL;
	}
	free(buf);
	return ret;
}

static int bpf_record_prints(u16 type, u16 size, u16 link_type, u16 attach_type,
			     const char *want)
{
	union perf_event event;

	/* what lies past the record must not show */
	memset(&event, 0xff, sizeof(event));
	event.bpf_link = (struct perf_record_bpf_link_event) {
		.bpf = {
			.header = { .type = PERF_RECORD_BPF_EVENT, .size = size },
			.type = type,
			.id = 42,
			.tag = { 1, 2, 3, 4, 5, 6, 7, 8 },
		},
		.link_id = 7,
		.link_type = link_type,
		.attach_type = attach_type,
	};
	if (size < PERF_RECORD_BPF_LINK_SIZE)
		memset((void *)&event + size, 0xff, PERF_RECORD_BPF_LINK_SIZE - size);
	return bpf_event_prints(&event, want);
}

/* An unload record with run_cnt 1000, run_time_ns 52000, recursion_misses 2 */
static int bpf_stats_prints(u16 type, u16 flags, u16 size, const char *want)
{
	union perf_event event;

	memset(&event, 0xff, sizeof(event));
	event.bpf_stats = (struct perf_record_bpf_stats_event) {
		.bpf = {
			.header = { .type = PERF_RECORD_BPF_EVENT, .size = size },
			.type = type,
			.flags = flags,
			.id = 42,
		},
		.run_cnt = 1000,
		.run_time_ns = 52000,
		.recursion_misses = 2,
	};
	if (size < PERF_RECORD_BPF_STATS_SIZE)
		memset((void *)&event + size, 0xff, PERF_RECORD_BPF_STATS_SIZE - size);
	return bpf_event_prints(&event, want);
}

static int test__bpf_event_records(struct test_suite *test __maybe_unused,
				   int subtest __maybe_unused)
{
	const u16 prog = PERF_RECORD_BPF_PROG_SIZE, link = PERF_RECORD_BPF_LINK_SIZE;
	const char *short_link =
		" type 3, flags 0, id 42, link_attach, record too short for the link fields\n";
	const u16 cg = BPF_LINK_TYPE_CGROUP, raw_tp = BPF_LINK_TYPE_RAW_TRACEPOINT;
	const char *counts = "run_cnt 1000, run_time_ns 52000, recursion_misses 2";
	char cgroup[64], raw[64], tcx[16], tracing[16], want[256];

	snprintf(cgroup, sizeof(cgroup), "link_type %u, attach_type %u", cg,
		 BPF_CGROUP_INET_EGRESS);
	snprintf(raw, sizeof(raw), "link_type %u, attach_type %u", raw_tp, BPF_TRACE_RAW_TP);
	snprintf(tcx, sizeof(tcx), "%u", BPF_LINK_TYPE_TCX);
	snprintf(tracing, sizeof(tracing), "%u", BPF_LINK_TYPE_TRACING);
#ifdef HAVE_LIBBPF_SUPPORT
	snprintf(tcx, sizeof(tcx), "tcx");
	snprintf(tracing, sizeof(tracing), "tracing");
	snprintf(cgroup, sizeof(cgroup), "link_type cgroup, attach_type cgroup_inet_egress");
	snprintf(raw, sizeof(raw), "link_type raw_tracepoint, attach_type trace_raw_tp");
#endif

	if (bpf_record_prints(PERF_BPF_EVENT_PROG_LOAD, prog, 0, 0,
			      " type 1, flags 0, id 42\n") ||
	    bpf_record_prints(PERF_BPF_EVENT_PROG_UNLOAD, prog + 16, 0, 0,
			      " type 2, flags 0, id 42\n"))
		return TEST_FAIL;

	snprintf(want, sizeof(want), " type 3, flags 0, id 42, link_attach, link_id 7, %s\n",
		 cgroup);
	if (bpf_record_prints(PERF_BPF_EVENT_LINK_ATTACH, link, cg, BPF_CGROUP_INET_EGRESS,
			      want))
		return TEST_FAIL;
	/* with a sample_id after the link fields */
	snprintf(want, sizeof(want), " type 4, flags 0, id 42, link_detach, link_id 7, %s\n",
		 cgroup);
	if (bpf_record_prints(PERF_BPF_EVENT_LINK_DETACH, link + 24, cg, BPF_CGROUP_INET_EGRESS,
			      want))
		return TEST_FAIL;
	/* a raw_tp program is loaded without an attach type: 0 */
	snprintf(want, sizeof(want), " type 3, flags 0, id 42, link_attach, link_id 7, %s\n",
		 raw);
	if (bpf_record_prints(PERF_BPF_EVENT_LINK_ATTACH, link, raw_tp, 0, want))
		return TEST_FAIL;

	/* a tc program is loaded without an attach type: 0 is no tcx hook */
	snprintf(want, sizeof(want),
		 " type 4, flags 0, id 42, link_detach, link_id 7, link_type %s, attach_type unknown\n",
		 tcx);
	if (bpf_record_prints(PERF_BPF_EVENT_LINK_DETACH, link, BPF_LINK_TYPE_TCX, 0, want))
		return TEST_FAIL;
	/* an freplace link: 0 in a tracing link is no cgroup_inet_ingress */
	snprintf(want, sizeof(want),
		 " type 3, flags 0, id 42, link_attach, link_id 7, link_type %s, attach_type unknown\n",
		 tracing);
	if (bpf_record_prints(PERF_BPF_EVENT_LINK_ATTACH, link, BPF_LINK_TYPE_TRACING, 0, want))
		return TEST_FAIL;

	snprintf(want, sizeof(want), " type %u, flags 0, id 42, unknown type\n",
		 PERF_BPF_EVENT_MAX + 3);
	if (bpf_record_prints(PERF_BPF_EVENT_LINK_ATTACH, prog, cg, 0, short_link) ||
	    bpf_record_prints(PERF_BPF_EVENT_MAX + 3, link, cg, 0, want) ||
	    bpf_record_prints(PERF_BPF_EVENT_UNKNOWN, prog, 0, 0,
			      " type 0, flags 0, id 42, unknown type\n"))
		return TEST_FAIL;

	/* the final counts of an unload record, said counted or not */
	snprintf(want, sizeof(want), " type 2, flags 3, id 42, %s\n", counts);
	if (bpf_stats_prints(PERF_BPF_EVENT_PROG_UNLOAD,
			     PERF_BPF_EVENT_FLAG_RUN_STATS | PERF_BPF_EVENT_FLAG_STATS_ON,
			     PERF_RECORD_BPF_STATS_SIZE + 16, want))
		return TEST_FAIL;
	snprintf(want, sizeof(want), " type 2, flags 1, id 42, %s (bpf stats were off)\n", counts);
	if (bpf_stats_prints(PERF_BPF_EVENT_PROG_UNLOAD, PERF_BPF_EVENT_FLAG_RUN_STATS,
			     PERF_RECORD_BPF_STATS_SIZE, want) ||
	    bpf_stats_prints(PERF_BPF_EVENT_PROG_UNLOAD, PERF_BPF_EVENT_FLAG_RUN_STATS,
			     PERF_RECORD_BPF_STATS_SIZE - 8,
			     " type 2, flags 1, id 42, record too short for the run stats\n") ||
	    /* the flag means nothing to other types */
	    bpf_stats_prints(PERF_BPF_EVENT_PROG_LOAD, PERF_BPF_EVENT_FLAG_RUN_STATS,
			     PERF_RECORD_BPF_STATS_SIZE, " type 1, flags 1, id 42\n"))
		return TEST_FAIL;
	if (perf_bpf_event__fields_size(PERF_BPF_EVENT_PROG_UNLOAD, 0) != prog ||
	    perf_bpf_event__fields_size(PERF_BPF_EVENT_PROG_UNLOAD,
					PERF_BPF_EVENT_FLAG_RUN_STATS) != prog + 24 ||
	    perf_bpf_event__fields_size(PERF_BPF_EVENT_PROG_LOAD,
					PERF_BPF_EVENT_FLAG_RUN_STATS) != prog ||
	    perf_bpf_event__fields_size(PERF_BPF_EVENT_LINK_ATTACH, 0) != link)
		return TEST_FAIL;

	if (strcmp(perf_bpf_event__name(PERF_BPF_EVENT_LINK_DETACH), "link_detach") ||
	    strcmp(perf_bpf_event__name(PERF_BPF_EVENT_MAX), "unknown") ||
	    strcmp(perf_bpf_event__name(0xffff), "unknown"))
		return TEST_FAIL;
	return TEST_OK;
}

DEFINE_SUITE("BPF side-band records: program, link and unknown types", bpf_event_records);
