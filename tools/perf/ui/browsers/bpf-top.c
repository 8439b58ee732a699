// SPDX-License-Identifier: GPL-2.0
/*
 * perf bpf top in perf's TUI: a row a program (with --split, then a row
 * for each cgroup or device that drove its runs), the column heads on
 * top, what the programs cost in the helpline; with --hist, ENTER draws
 * the selected program's run times, refreshed until a key; q quits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ttydefaults.h>
#include <linux/zalloc.h>

#include "../browser.h"
#include "../helpline.h"
#include "../keysyms.h"
#include "../ui.h"
#include "../util.h"
#include "../../util/bpf-side-band.h"
#include "../../util/bpf-top.h"
#include "../../util/hashmap.h"
#include "bpf-top.h"

/* The TUI: perf's browser, a row a program, the column heads on top */
struct bpf_top_tui {
	struct ui_browser	b;
	char			**rows;
	u32			*ids;		/* each row's program, 0 for none */
	u32			hist;		/* the program whose run times are drawn */
	int			nr_rows;
	int			secs;		/* between refreshes, whole */
	char			heads[512];
	char			title[256];
};

static void bpf_top_tui__write(struct ui_browser *b, void *entry, int row)
{
	char **line = entry;

	ui_browser__set_color(b, ui_browser__is_current_entry(b, row) ?
			      HE_COLORSET_SELECTED : HE_COLORSET_NORMAL);
	ui_browser__write_nstring(b, *line, b->width);
}

static void bpf_top_tui__seek(struct ui_browser *b, off_t offset, int whence)
{
	char **rows = b->entries;

	switch (whence) {
	case SEEK_SET:
		b->top = rows + offset;
		break;
	case SEEK_CUR:
		b->top = (char **)b->top + offset;
		break;
	case SEEK_END:
		b->top = rows + b->nr_entries - 1 + offset;
		break;
	default:
		break;
	}
}

static void bpf_top_tui__free(struct bpf_top_tui *tui)
{
	int i;

	for (i = 0; i < tui->nr_rows; i++)
		free(tui->rows[i]);
	zfree(&tui->rows);
	zfree(&tui->ids);
	tui->nr_rows = 0;
}

/* A row, whose ENTER shows program @id's run times; none if out of memory */
static void bpf_top_tui__add(struct bpf_top_tui *tui, const char *line, u32 id)
{
	tui->rows[tui->nr_rows] = strdup(line);
	tui->ids[tui->nr_rows] = id;
	if (tui->rows[tui->nr_rows])
		tui->nr_rows++;
}

/* The rows of what the last refresh read, and the summary for the helpline */
static int bpf_top_tui__fill(struct bpf_top_tui *tui, struct bpf_top *top, char *title,
			     size_t size)
{
	struct bpf_top_prog **v;
	char line[1024];
	int i, nr = 0, max = 0;

	v = bpf_top__sorted(top, &nr);
	if (!v)
		return -ENOMEM;
	bpf_top__title(top, v, nr, top->window, title, size);
	if (top->entries && nr > top->entries)
		nr = top->entries;
	bpf_top_tui__free(tui);
	/* --split: a row a program, then one a split or one saying there are none */
	for (i = 0; i < nr; i++)
		max += 1 + (top->split ? v[i]->nr_splits ?: 1 : 0);
	tui->rows = calloc(max ?: 1, sizeof(*tui->rows));
	tui->ids = calloc(max ?: 1, sizeof(*tui->ids));
	if (!tui->rows || !tui->ids) {
		bpf_top_tui__free(tui);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		struct bpf_top_split **splits;
		int j, nr_splits = 0;

		bpf_top__row(top, v[i], top->window, line, sizeof(line));
		bpf_top_tui__add(tui, line, v[i]->desc.id);
		if (!top->split || v[i]->gone)
			continue;
		if (bpf_top_prog__split_by(v[i]) == BPF_TOP_SPLIT_NONE) {
			bpf_top__split_row(top, v[i], NULL, top->window, line, sizeof(line));
			bpf_top_tui__add(tui, line, v[i]->desc.id);
			continue;
		}
		splits = bpf_top_prog__splits(v[i], &nr_splits);
		for (j = 0; j < nr_splits; j++) {
			bpf_top__split_row(top, v[i], splits[j], top->window, line, sizeof(line));
			bpf_top_tui__add(tui, line, v[i]->desc.id);
		}
		free(splits);
	}
	if (!nr) {
		tui->rows[0] = strdup(bpf_top__none(top));
		tui->nr_rows = tui->rows[0] ? 1 : 0;
	}
	free(v);
	tui->b.entries = tui->rows;
	ui_browser__update_nr_entries(&tui->b, tui->nr_rows);
	/* fewer rows than before: the cursor on the last */
	if (tui->b.index >= (u64)tui->nr_rows)
		tui->b.index = tui->nr_rows - 1;
	if (tui->b.top_idx > tui->b.index) {
		tui->b.top_idx = tui->b.index;
		tui->b.seek(&tui->b, tui->b.top_idx, SEEK_SET);
	}
	return 0;
}

static int bpf_top_tui__begin(struct bpf_top *top, void *priv)
{
	struct bpf_top_tui *tui = priv;

	bpf_top__heads(top, tui->heads, sizeof(tui->heads));
	/* the programs there, without figures until the first refresh */
	top->err = bpf_top_tui__fill(tui, top, tui->title, sizeof(tui->title));
	if (top->err ||
	    ui_browser__show(&tui->b, tui->heads, "perf bpf top: figures every %d s; %sq quits",
			     tui->secs, top->hist ? "ENTER: run times, " : "") < 0)
		return -1;
	return 0;
}

/*
 * The browser waits for keys, the run times window (--hist) for one: a
 * refresh when none came for tui->secs, or at the next key once the
 * window's time is up (keys pressed one after another stop none)
 */
static enum bpf_top_wait bpf_top_tui__wait(struct bpf_top *top, void *priv, u64 next)
{
	struct bpf_top_tui *tui = priv;
	struct bpf_top_prog *prog;
	char text[8192];
	int key;

	if (tui->hist && hashmap__find(top->progs, tui->hist, &prog)) {
		bpf_top__hist_text(prog, text, sizeof(text));
		key = ui__question_window("Run times", text, "Press any key...", tui->secs);
		if (key != K_TIMER)
			tui->hist = 0;
	} else {
		tui->hist = 0;
		key = ui_browser__run(&tui->b, tui->secs);
		if (key == 'q' || key == K_ESC || key == CTRL('c') || key == K_ERROR)
			return BPF_TOP_WAIT_QUIT;
		if (key == K_ENTER && !top->hist)
			ui_helpline__puts("perf bpf top: run times need --hist");
		else if (key == K_ENTER && tui->b.index < (u64)tui->nr_rows)
			tui->hist = tui->ids[tui->b.index];
	}
	if (key == K_TIMER || bpf_side_band__now_ns() >= next) {
		bpf_side_band__read(top->evlist, &top->err);
		return BPF_TOP_WAIT_REFRESH;
	}
	return BPF_TOP_WAIT_AGAIN;
}

static void bpf_top_tui__show(struct bpf_top *top, void *priv, u64 now __maybe_unused)
{
	struct bpf_top_tui *tui = priv;

	top->err = top->err ?: bpf_top_tui__fill(tui, top, tui->title, sizeof(tui->title));
	if (!top->err)
		ui_helpline__puts(tui->title);
}

static void bpf_top_tui__end(struct bpf_top *top __maybe_unused, void *priv)
{
	struct bpf_top_tui *tui = priv;

	ui_browser__hide(&tui->b);
	bpf_top_tui__free(tui);
}

static const struct bpf_top_ops bpf_top_tui_ops = {
	.begin	= bpf_top_tui__begin,
	.wait	= bpf_top_tui__wait,
	.show	= bpf_top_tui__show,
	.end	= bpf_top_tui__end,
};

int bpf_top__tui(struct bpf_top *top)
{
	struct bpf_top_tui tui = {
		.b = {
			.refresh	= ui_browser__argv_refresh,
			.seek		= bpf_top_tui__seek,
			.write		= bpf_top_tui__write,
		},
	};

	/* whole seconds: the browser waits for keys that long */
	tui.secs = top->interval ? (top->interval + 999) / 1000 : (int)(top->delay + 0.5);
	if (tui.secs < 1)
		tui.secs = 1;
	return bpf_top__loop(top, &bpf_top_tui_ops, &tui);
}
