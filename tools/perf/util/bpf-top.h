/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPF_TOP_H
#define __PERF_BPF_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <perf/event.h>
#include <internal/cpumap.h>

#include "bpf-desc.h"
#include "bpf-out.h"
#include "bpf-top-hist.h"
#include "counts.h"
#include "strbuf.h"

struct evlist;
struct evsel;
struct hashmap;
struct intlist;
union perf_event;

/*
 * -e: an event counted around each run of a program by perf stat -b's
 * profiler (fentry and fexit programs attached to it, reading the event
 * on the CPU it runs on)
 */
struct bpf_top_count {
	struct evsel		*evsel;
	struct perf_counts_values base;		/* raw, at the first read */
	struct perf_counts_values last;		/* raw, at the last read */
	u64			win;		/* over the last window, scaled */
	u64			total;		/* since the first read, scaled */
	bool			based;		/* read once */
	bool			win_ok;		/* win is a whole window's */
	bool			resync;		/* a read failed: no window next */
};

/*
 * --split: a program's runs driven by one cgroup or device (its key),
 * counted and timed by the programs of --hist (bpf-top-hist.c)
 */
struct bpf_top_split {
	u64			key;		/* BPF_TOP_SPLIT_OTHER: keys without room */
	u64			runs;		/* since attached, at the last read */
	u64			timed;		/* of which timed */
	u64			time_ns;	/* their time */
	u64			base_runs;	/* at the first read: not shown in totals */
	u64			base_time_ns;
	u64			win_runs;	/* over the last window */
	u64			win_timed;
	u64			win_time_ns;
	char			*name;		/* the cgroup's path, the device's name, or NULL */
};

/*
 * A program's run time and count, as the kernel counts them while
 * BPF_ENABLE_STATS is held (kernel.bpf_stats_enabled), and its recursion
 * misses (runs the kernel skipped as a BPF program was running on that
 * CPU already), counted always: read once a window, the figures of the
 * window are the differences between two reads.  The kernel's last
 * counts of a program come in its unload record (on a kernel that adds
 * them): the window it went in ends with them.
 */
struct bpf_top_prog {
	struct bpf_prog_desc	desc;
	struct strbuf		attach;		/* its links' types and targets */
	bool			attach_unlinked; /* no link: attached without one? */
	u64			base_time;	/* at the first read; 0 if loaded since start */
	u64			base_cnt;
	u64			base_misses;
	u64			time;		/* at the last read */
	u64			cnt;
	u64			misses;
	u64			win_time;	/* over the last window */
	u64			win_cnt;
	u64			win_misses;
	u64			final_time;	/* from its unload record, if final */
	u64			final_cnt;
	u64			final_misses;
	bool			final;
	bool			exact;		/* gone, the window ends with the final counts */
	bool			missing;	/* found gone, its unload record not read yet */
	bool			read;		/* read at least once */
	bool			seen_load;	/* its load record was read */
	bool			shown;		/* passes -p */
	int			gone;		/* refreshes since it was unloaded */
	struct bpf_top_count	*counts;	/* -e: one an event, NULL if not counted */
	bool			counts_failed;	/* the profiler cannot attach to it */
	struct bpf_top_hist	*hist;		/* --hist: its run times, NULL if not timed */
	struct bpf_top_hist_sum	hist_last;	/* at the last read */
	struct bpf_top_hist_sum	hist_win;	/* over the last window, if hist_ok */
	bool			hist_based;	/* read once */
	bool			hist_ok;	/* hist_win is a whole window's */
	bool			hist_failed;	/* cannot be traced */
	u32			split_by;	/* --split: enum bpf_top_split_by */
	struct bpf_top_split	*splits;	/* --split: by key, since attached */
	int			nr_splits;
	bool			splits_ok;	/* their windows are a whole window's */
	bool			splits_based;	/* read since attached: base taken */
	bool			splits_stale;	/* the last read failed */
	bool			unheld_said;	/* -v said it is not counted, held by nothing */
};

/*
 * A program gone before it could be looked up, or one not followed that
 * is unloaded: from its records since the last refresh
 */
struct bpf_top_gone {
	u32			id;
	u8			tag[BPF_TAG_SIZE];
	char			*name;		/* its ksymbol's, NULL if not read */
	bool			loaded;		/* its load record was read */
	bool			final;		/* its unload record gave its last counts */
	bool			waited;		/* kept over a refresh for its other record */
	u64			cnt;
	u64			time;
	u64			misses;
};

enum bpf_top_key {
	BPF_TOP_KEY_RUN_TIME,
	BPF_TOP_KEY_RUNS,
	BPF_TOP_KEY_AVG,
	BPF_TOP_KEY_RUN_TIME_TOTAL,
	BPF_TOP_KEY_RUNS_TOTAL,
	BPF_TOP_KEY_ID,
	BPF_TOP_KEY_NAME,
	BPF_TOP_KEY_TYPE,
	BPF_TOP_KEY_MAX,
};

struct bpf_top {
	struct bpf_out		out;
	struct bpf_resolver	res;
	struct evlist		*evlist;
	struct hashmap		*progs;		/* id -> struct bpf_top_prog * */
	struct intlist		*ids;		/* --id */
	struct intlist		*pids;		/* -p: programs these hold */
	struct intlist		*own;		/* -e: the profiler's programs, not shown */
	struct evlist		*events;	/* -e: the events, opened per program */
	struct perf_cpu_map	*cpus;		/* -e: where they are opened */
	const char		**columns;	/* -x, -j: with the events' */
	const char		*event_str;
	int			nr_events;
	int			nr_counted;	/* programs -e counts */
	bool			hist;		/* --hist */
	bool			split;		/* --split */
	const char		*name_glob;
	const char		*id_str;
	const char		*pid_str;
	const char		*types_str;
	const char		*sort_str;
	const char		*output_name;
	u64			types;		/* --prog-type: bit per enum bpf_prog_type */
	int			sort[BPF_TOP_KEY_MAX];
	int			nr_sort;
	int			entries;	/* -E */
	double			delay;		/* -d, seconds */
	int			interval;	/* -I, ms */
	int			interval_count;
	unsigned int		mmap_pages;
	int			nr_cpus;
	int			stats_fd;
	bool			stats_were_on;
	bool			delay_set;	/* -d given */
	bool			links_always;	/* no link records: read links each refresh */
	bool			unload_counts;	/* unload records give a program's last counts */
	/*
	 * The names of the last program ksymbols read, bpf_prog_<tag>_<name>:
	 * those of programs gone before their load record was read
	 */
	char			*ksyms[16];
	int			ksym_next;
	/* id -> struct bpf_top_gone *, from the last refresh or two */
	struct hashmap		*gone;
	bool			stdio;
	bool			json;
	u32			last_id;	/* the highest program id when records began */
	bool			rescan;		/* records were lost: look programs up by id */
	bool			links_stale;	/* a link came or went */
	bool			clear;		/* text on a terminal: one screen a window */
	u64			start;		/* CLOCK_MONOTONIC, ns */
	u64			last;		/* the last read */
	u64			window;		/* from the read before it */
	u64			lost;
	int			err;
};

/* -x and -j: a line a program a window, these keys, --hist's, then the events' */
#define BPF_TOP_NR_COLUMNS	17
extern const char * const bpf_top_columns[BPF_TOP_NR_COLUMNS + 1];
#define BPF_TOP_NR_HIST_COLUMNS	7
extern const char * const bpf_top_hist_columns[BPF_TOP_NR_HIST_COLUMNS + 1];
/* --split: a split's line has the first of these of its own, the time to run_time_ns_total */
#define BPF_TOP_NR_SPLIT_OWN_COLUMNS	12
/* --split: last, after the events' */
#define BPF_TOP_NR_SPLIT_COLUMNS	4
extern const char * const bpf_top_split_columns[BPF_TOP_NR_SPLIT_COLUMNS + 1];

/* What ops->wait() says */
enum bpf_top_wait {
	BPF_TOP_WAIT_REFRESH,	/* time to read the figures and show them */
	BPF_TOP_WAIT_AGAIN,	/* not yet */
	BPF_TOP_WAIT_QUIT,	/* stop */
};

/* How the figures are shown: text (-x, -j, --stdio) or the TUI */
struct bpf_top_ops {
	/* after the first read, before the loop; non-zero: no loop */
	int	(*begin)(struct bpf_top *top, void *priv);
	/*
	 * Until @next, the end of the window (CLOCK_MONOTONIC), or a key:
	 * reads the side-band records (bpf_side_band__read()) meanwhile,
	 * which the loop does not.
	 */
	enum bpf_top_wait (*wait)(struct bpf_top *top, void *priv, u64 next);
	/* what the refresh at @now read */
	void	(*show)(struct bpf_top *top, void *priv, u64 now);
	void	(*end)(struct bpf_top *top, void *priv);
};

int bpf_top__parse_sort(struct bpf_top *top);
int bpf_top__parse_types(struct bpf_top *top);
int bpf_top__parse_events(struct bpf_top *top);
int bpf_top__setup_columns(struct bpf_top *top);
void bpf_top__exit(struct bpf_top *top);

int bpf_top__record(union perf_event *event, void *data);
int bpf_top__loop(struct bpf_top *top, const struct bpf_top_ops *ops, void *priv);
u64 bpf_top__refresh(struct bpf_top *top);

struct bpf_top_prog **bpf_top__sorted(struct bpf_top *top, int *nr);
void bpf_top__title(struct bpf_top *top, struct bpf_top_prog **v, int nr, u64 window,
		    char *line, size_t size);
void bpf_top__heads(struct bpf_top *top, char *line, size_t size);
void bpf_top__row(struct bpf_top *top, struct bpf_top_prog *prog, u64 window,
		  char *line, size_t size);
const char *bpf_top__none(struct bpf_top *top);
void bpf_top__hist_text(const struct bpf_top_prog *prog, char *buf, size_t size);
void bpf_top__print_interval(struct bpf_top *top, struct bpf_top_prog **v, int nr,
			     u64 now, u64 window);
const char *bpf_top__split_kind(u32 split_by);
u32 bpf_top_prog__split_by(const struct bpf_top_prog *prog);
u64 bpf_top_split__id(const struct bpf_top_prog *prog, const struct bpf_top_split *split);
const char *bpf_top_prog__split(const struct bpf_top_prog *prog);
struct bpf_top_split **bpf_top_prog__splits(struct bpf_top_prog *prog, int *nr);
void bpf_top__split_row(struct bpf_top *top, struct bpf_top_prog *prog,
			const struct bpf_top_split *split, u64 window, char *line, size_t size);

#endif /* __PERF_BPF_TOP_H */
