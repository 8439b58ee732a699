/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPF_SIDE_BAND_H
#define __PERF_BPF_SIDE_BAND_H

#include <signal.h>
#include <stdbool.h>
#include <linux/types.h>
#include "evsel.h"

struct evlist;
struct perf_event_attr;
struct perf_record_bpf_stats_event;
struct target;
union perf_event;

/* Set by bpf_side_band__signal() (SIGINT, SIGTERM): the commands stop */
extern volatile sig_atomic_t bpf_side_band_done;
void bpf_side_band__signal(int sig);

/* CLOCK_MONOTONIC, the clock of the records, in ns */
u64 bpf_side_band__now_ns(void);

int bpf_side_band__open(struct evlist **evlistp, struct perf_event_attr *attr,
			evsel__sb_cb_t *cb, void *data, struct target *target,
			unsigned int mmap_pages, const char *cmd);
int bpf_side_band__read(struct evlist *evlist, int *err);
bool bpf_side_band__has_links(struct evlist *evlist);
const struct perf_record_bpf_stats_event *
bpf_side_band__unload_stats(struct evlist *evlist, union perf_event *event);

#endif /* __PERF_BPF_SIDE_BAND_H */
