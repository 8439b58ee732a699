// SPDX-License-Identifier: GPL-2.0
/*
 * The side-band records perf bpf reads: a dummy software event per CPU
 * asking for PERF_RECORD_BPF_EVENT records (and others), read through
 * perf's side-band evlist machinery, a callback for each record.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <linux/compiler.h>
#include <linux/string.h>
#include <linux/time64.h>
#include <perf/mmap.h>

#include "bpf-side-band.h"
#include "debug.h"
#include "event.h"
#include "evlist.h"
#include "mmap.h"
#include "target.h"

volatile sig_atomic_t bpf_side_band_done;

u64 bpf_side_band__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

void bpf_side_band__signal(int sig __maybe_unused)
{
	bpf_side_band_done = 1;
}

/*
 * One pass over every CPU's ring, each record to its event's side-band
 * callback; the number of records read.  The first error a callback
 * returns is kept in *@err.
 */
int bpf_side_band__read(struct evlist *evlist, int *err)
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
bool bpf_side_band__has_links(struct evlist *evlist)
{
	return evlist__first(evlist)->core.attr.bpf_event_ext;
}

/*
 * The counts of a prog_unload record from a kernel that adds them (to
 * listeners with attr.bpf_event_ext); NULL for other records.  The size
 * counts the sample_id too.
 */
const struct perf_record_bpf_stats_event *
bpf_side_band__unload_stats(struct evlist *evlist, union perf_event *event)
{
	if (event->bpf.type != PERF_BPF_EVENT_PROG_UNLOAD ||
	    !(event->bpf.flags & PERF_BPF_EVENT_FLAG_RUN_STATS) ||
	    event->header.size < PERF_RECORD_BPF_STATS_SIZE + evlist__id_hdr_size(evlist))
		return NULL;
	return &event->bpf_stats;
}

/*
 * Open @attr, a dummy event asking for side-band records, on the CPUs of
 * @target, with @cb called for each record bpf_side_band__read() reads.
 */
int bpf_side_band__open(struct evlist **evlistp, struct perf_event_attr *attr,
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
