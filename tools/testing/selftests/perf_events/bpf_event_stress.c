// SPDX-License-Identifier: GPL-2.0
/*
 * A storm of BPF program and link lifecycles, read by eight side-band
 * listeners at once.
 *
 * One worker process per online CPU (at least two), each bound to its
 * CPU, makes and undoes links of several kinds as fast as it can for
 * BPF_EVENT_STRESS_SECS seconds (10 by default): cgroup links detached,
 * closed or left by their removed cgroup, raw tracepoints, fentry linked
 * both ways, XDP on the loopback device of a fresh netns, detached,
 * closed or left by the netns going away, and sk_lookup on a fresh netns
 * closed as the netns goes (the two race).  A link left by its target is
 * closed once the kernel shows it detached.
 * Every program it loads and every link it makes is counted: each writes
 * two PERF_RECORD_BPF_EVENT records, one when it comes and one when it
 * goes.
 *
 * Meanwhile eight listeners, each a dummy event on every CPU with rings
 * from one page to 512, are read by this process, the largest every few
 * milliseconds, the smallest only at the end, so that the small rings
 * overflow.  At the end every listener must account for every record
 * written: records read plus records the kernel reported lost equals
 * twice the programs and links made.  No record may be torn (a size or
 * a sample_id that does not fit its type, ring and CPU), no program or
 * link may show two loads, attaches, unloads or detaches, an unload or
 * detach may not come before its load or attach, and a listener that
 * lost nothing must have seen each program and link come and go exactly
 * once.  Last, the programs and links in the system must be those there
 * were before.
 *
 * One step's program samples itself: an fentry program on
 * bpf_obj_get_next_id(), which BPF_PROG_GET_NEXT_ID enters, writes a
 * sample naming itself to a bpf-output event of its CPU.  A caller
 * process on each CPU, at the lowest priority, makes such calls whenever
 * the CPU has nothing else to do, so that the program runs on the other
 * CPUs while its link is closed, which rewrites the trampoline.  No
 * sample of it may be later than the link's LINK_DETACH: the kernel
 * writes that only once the runs the link started are over.
 *
 * The test counts every record, so nothing else may load programs or
 * make links while it runs.
 */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <bpf/btf.h>

#include "bpf_event.h"
#include "bpf_link_kinds.h"

#define NR_LISTENERS	8
#define MAX_WORKERS	16		/* fentry: 38 links per function */
#define STRESS_SECS	10
#define DRAIN_US	2000		/* how often listeners are looked at */
#define ERR_LEN		256
#define GONE_WAIT_MS	5000		/* for a cgroup or netns to go */
#define MAX_SAMPLED	4096		/* sampled links a worker keeps */
#define SAMPLE_PAGES	64		/* data pages of a bpf-output event */

/*
 * Data pages per CPU of each listener, and how often it is read during
 * the storm (0: only at the end).  The first ones overflow.
 */
static const struct {
	int pages;
	int every_ms;
} listener_conf[NR_LISTENERS] = {
	{ 1, 0 }, { 1, 500 }, { 2, 100 }, { 4, 2 },
	{ 16, 2 }, { 64, 2 }, { 256, 2 }, { 512, 2 },
};

/*
 * The sampled program's kind.  Its sample is its cookie: the worker's
 * number and the index of its link in the worker's sampled_link[].
 */
#define SAMPLE_FUNC	"bpf_obj_get_next_id"

static int sample_map_fd = -1;		/* bpf-output events, by CPU */
static __u32 sample_btf_id;		/* SAMPLE_FUNC's, or 0 */
static __u64 sample_cookie;		/* for the next program, in a worker */

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })

static int sampled_setup(struct link_ctx *ctx)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		.expected_attach_type = BPF_TRACE_FENTRY,
		.attach_btf_id = sample_btf_id,
	);
	const struct bpf_insn insns[] = {
		/* *(u64 *)(fp - 8) = cookie; */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, 0, 0,
		     (__u32)sample_cookie),
		INSN(0, 0, 0, 0, sample_cookie >> 32),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_1, -8, 0),
		/* bpf_perf_event_output(ctx, map, BPF_F_CURRENT_CPU, fp - 8, 8); */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD,
		     0, sample_map_fd),
		INSN(0, 0, 0, 0, 0),
		/* a 32-bit move zero-extends: 0xffffffff */
		INSN(BPF_ALU | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, -1),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_4, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_4, 0, 0, -8),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_5, 0, 0, 8),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_perf_event_output),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	if (!sample_btf_id)
		return kind_skip(ctx, "no BTF of " SAMPLE_FUNC "()");
	/* a cookie the test could not tell apart */
	if ((__u32)sample_cookie >= MAX_SAMPLED)
		return kind_skip(ctx, "no room for more than %d sampled links",
				 MAX_SAMPLED);
	ctx->prog_fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, PROG_NAME, "GPL",
				     insns, ARRAY_SIZE(insns), &opts);
	if (ctx->prog_fd < 0)
		return kind_err(ctx, -errno,
				"BPF_PROG_LOAD fentry with bpf_perf_event_output");
	return 0;
}

static int sampled_attach(struct link_ctx *ctx, enum link_via via)
{
	int fd = bpf_link_create(ctx->prog_fd, 0, BPF_TRACE_FENTRY, NULL);

	if (fd < 0)
		return kind_err(ctx, -errno, "BPF_LINK_CREATE fentry " SAMPLE_FUNC);
	return fd;
}

static void sampled_teardown(struct link_ctx *ctx)
{
}

static const struct link_kind kind_sampled = {
	.name = "sampled",
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = BPF_TRACE_FENTRY,
	.has_prog = true,
	.setup = sampled_setup,
	.attach = sampled_attach,
	.teardown = sampled_teardown,
};

/* What a worker does, in turn. */
static const struct storm_step {
	const struct link_kind *kind;
	enum link_via via;
	enum link_by by;
} steps[] = {
	{ &kind_cgroup, VIA_LINK_CREATE, BY_CLOSE },
	{ &kind_xdp, VIA_LINK_CREATE, BY_DETACH },
	{ &kind_raw_tp, VIA_RAW_TP_OPEN, BY_CLOSE },
	{ &kind_cgroup, VIA_LINK_CREATE, BY_DETACH },
	{ &kind_sk_lookup, VIA_LINK_CREATE, BY_TARGET_GONE },
	{ &kind_fentry, VIA_LINK_CREATE, BY_CLOSE },
	{ &kind_cgroup, VIA_LINK_CREATE, BY_TARGET_GONE },
	{ &kind_xdp, VIA_LINK_CREATE, BY_TARGET_GONE },
	{ &kind_raw_tp, VIA_RAW_TP_OPEN, BY_CLOSE },
	{ &kind_xdp, VIA_LINK_CREATE, BY_CLOSE },
	{ &kind_fentry, VIA_RAW_TP_OPEN, BY_CLOSE },
	{ &kind_sampled, VIA_LINK_CREATE, BY_CLOSE },
};

#define NR_STEPS	ARRAY_SIZE(steps)

/* What one worker did; the workers write, the test reads at the end. */
struct worker_stat {
	__u64 progs;			/* programs loaded */
	__u64 links;			/* links made */
	__u64 cycles[NR_STEPS];		/* steps done */
	__u64 errors;
	__u64 gone;			/* links detached by their target going */
	__u64 gone_late;		/* ... that were closed first */
	__u64 raced;			/* netns links closed as their netns went */
	bool skipped[NR_STEPS];		/* the kernel cannot make the kind */
	char skip[ERR_LEN];		/* why, for the last skipped kind */
	char err[ERR_LEN];		/* the first error */
	__u32 nr_sampled;
	__u32 sampled_link[MAX_SAMPLED]; /* link ids, by cookie */
};

/* Shared with the workers (MAP_SHARED). */
struct storm {
	int stop;			/* __atomic: set by the test */
	int nr_workers;
	struct worker_stat w[MAX_WORKERS];
};

/* When each program or link id was seen to come and to go. */
struct life {
	__u64 t_begin, t_end;
	__u8 begins, ends;
};

struct lives {
	struct life *v;
	__u32 base;			/* the first id made during the test */
	__u32 nr;			/* ids base .. base + nr - 1 have room */
};

/* One CPU's ring of a listener. */
struct ring {
	int fd;
	int cpu;
	__u64 id;
	struct perf_event_mmap_page *page;
	char *data;
	__u64 size;
};

struct listener {
	int pages;
	int every_ms;
	__u64 next_ms;			/* when to read it next */
	struct ring *ring;		/* one per possible CPU */
	__u64 read[PERF_BPF_EVENT_MAX];	/* BPF_EVENT records, by type */
	__u64 lost;			/* PERF_RECORD_LOST says so */
	__u64 torn;
	__u64 other;			/* records of other types */
	__u64 twice;			/* an id begun or ended twice */
	__u64 backwards;		/* an id ended before it began */
	__u64 foreign;			/* records of objects older than the test */
	char torn_why[ERR_LEN];
	struct lives progs, links;
};

/* The bpf-output events the sampled programs write to, and what they got. */
struct sampler {
	struct ring *ring;		/* one per possible CPU */
	__u64 samples, lost, odd;
	__u64 *last;			/* latest sample time, by cookie */
};

FIXTURE(storm) {
	struct storm *st;
	pid_t pid[MAX_WORKERS];
	pid_t caller[MAX_WORKERS];
	int nr_cpus;			/* possible CPUs */
	struct listener l[NR_LISTENERS];
	struct sampler sm;
};

static struct life *life_of(struct lives *ls, __u32 id)
{
	id -= ls->base;
	if (id >= ls->nr) {
		__u32 nr = id + 4096 > 2 * ls->nr ? id + 4096 : 2 * ls->nr;
		struct life *v = realloc(ls->v, nr * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + ls->nr, 0, (nr - ls->nr) * sizeof(*v));
		ls->v = v;
		ls->nr = nr;
	}
	return &ls->v[id];
}

/* Map the ring of r->fd, with pages data pages: 0 or -errno. */
static int ring_mmap(struct ring *r, int pages)
{
	long page_size = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, (pages + 1) * page_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->page = p;
	r->data = (char *)p + r->page->data_offset;
	r->size = r->page->data_size;
	return 0;
}

/* A BPF_EVENT listener on CPU cpu, with pages data pages. */
static int ring_open(struct ring *r, int cpu, int pages)
{
	r->cpu = cpu;
	r->fd = sb_event_open(SB_BPF_LINKS, false, -1, cpu);
	if (r->fd < 0)
		return r->fd;
	if (ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id))
		return -errno;
	return ring_mmap(r, pages);
}

static void ring_close(struct ring *r)
{
	if (r->page)
		munmap(r->page, r->size + sysconf(_SC_PAGESIZE));
	if (r->fd >= 0)
		close(r->fd);
	r->page = NULL;
	r->fd = -1;
}

static void __attribute__((format(printf, 2, 3)))
torn(struct listener *l, const char *fmt, ...)
{
	va_list ap;

	if (!l->torn++) {
		va_start(ap, fmt);
		vsnprintf(l->torn_why, sizeof(l->torn_why), fmt, ap);
		va_end(ap);
	}
}

/* Note that id began (begin) or ended at time t. */
static void life_note(struct listener *l, struct lives *ls, __u32 id,
		      bool begin, __u64 t)
{
	struct life *f = life_of(ls, id);

	if (!f) {
		torn(l, "out of memory for id %u", id);
		return;
	}
	if (begin) {
		l->twice += f->begins++ > 0;
		f->t_begin = t;
	} else {
		l->twice += f->ends++ > 0;
		f->t_end = t;
	}
	if (f->begins && f->ends && f->t_end < f->t_begin)
		l->backwards++;
}

/* Take one record of ring r into listener l. */
static void account(struct listener *l, struct ring *r, const char *buf,
		    __u16 size)
{
	const struct perf_event_header *hdr = (const void *)buf;
	const char *body = (const char *)(hdr + 1);
	struct sb_sample_id sid;
	__u16 type, flags, want;
	__u32 id, link_id;

	if (hdr->type != PERF_RECORD_BPF_EVENT &&
	    hdr->type != PERF_RECORD_LOST) {
		l->other++;
		return;
	}
	if (size < sizeof(*hdr) + sizeof(sid)) {
		torn(l, "record of type %u and %u bytes", hdr->type, size);
		return;
	}
	memcpy(&sid, buf + size - sizeof(sid), sizeof(sid));
	if (sid.cpu != (__u32)r->cpu || sid.id != r->id) {
		torn(l, "record on CPU %d's ring says CPU %u, event id %llu",
		     r->cpu, sid.cpu, (unsigned long long)sid.id);
		return;
	}
	if (hdr->type == PERF_RECORD_LOST) {
		__u64 lost[2];

		if (size != sizeof(*hdr) + sizeof(lost) + sizeof(sid)) {
			torn(l, "PERF_RECORD_LOST of %u bytes", size);
			return;
		}
		memcpy(lost, body, sizeof(lost));
		l->lost += lost[1];
		return;
	}
	memcpy(&type, body, sizeof(type));
	memcpy(&flags, body + 2, sizeof(flags));
	memcpy(&id, body + 4, sizeof(id));
	switch (type) {
	case PERF_BPF_EVENT_PROG_LOAD:
		want = SB_BPF_PROG_BODY;
		break;
	case PERF_BPF_EVENT_PROG_UNLOAD:
		/*
		 * With its counts, but for an unload that raced with the
		 * opening of the rings: its size is the one its flags give.
		 */
		want = flags & PERF_BPF_EVENT_FLAG_RUN_STATS ?
		       SB_BPF_STATS_BODY : SB_BPF_PROG_BODY;
		break;
	case PERF_BPF_EVENT_LINK_ATTACH:
	case PERF_BPF_EVENT_LINK_DETACH:
		want = SB_BPF_LINK_BODY;
		break;
	default:
		torn(l, "BPF_EVENT of type %u", type);
		return;
	}
	if (size != sizeof(*hdr) + want + sizeof(sid)) {
		torn(l, "BPF_EVENT of type %u and %u bytes", type, size);
		return;
	}
	if (type == PERF_BPF_EVENT_PROG_LOAD ||
	    type == PERF_BPF_EVENT_PROG_UNLOAD) {
		if (!id) {
			torn(l, "BPF_EVENT of type %u for program id 0", type);
		} else if (id < l->progs.base) {
			l->foreign++;	/* freed late, from before the test */
		} else if (type == PERF_BPF_EVENT_PROG_UNLOAD &&
			   !(flags & PERF_BPF_EVENT_FLAG_RUN_STATS)) {
			/* the test's programs go while the rings are open */
			torn(l, "PROG_UNLOAD of program %u without its counts",
			     id);
		} else {
			l->read[type]++;
			life_note(l, &l->progs, id,
				  type == PERF_BPF_EVENT_PROG_LOAD, sid.time);
		}
		return;
	}
	memcpy(&link_id, body + 16, sizeof(link_id));
	if (!link_id) {
		torn(l, "BPF_EVENT of type %u for link id 0", type);
	} else if (link_id < l->links.base) {
		l->foreign++;
	} else {
		l->read[type]++;
		life_note(l, &l->links, link_id,
			  type == PERF_BPF_EVENT_LINK_ATTACH, sid.time);
	}
}

struct ring_reader {
	struct listener *l;
	struct ring *r;
};

static void ring_take(void *arg, const char *rec, __u16 len)
{
	struct ring_reader *rr = arg;

	account(rr->l, rr->r, rec, len);
}

/* Read all that ring r holds into listener l. */
static void ring_drain(struct listener *l, struct ring *r)
{
	struct ring_reader rr = { .l = l, .r = r };

	/* nothing after an impossible header can be trusted: it is skipped */
	if (!sb_read(r->page, r->data, r->size, ring_take, &rr))
		torn(l, "impossible record header on CPU %d", r->cpu);
}

static void drain_all(struct listener *ls, int nr_cpus)
{
	for (int i = 0; i < NR_LISTENERS; i++)
		for (int c = 0; c < nr_cpus; c++)
			if (ls[i].ring[c].fd >= 0)
				ring_drain(&ls[i], &ls[i].ring[c]);
}

/* During the storm: read the listeners whose time has come. */
static void drain_due(struct listener *ls, int nr_cpus)
{
	__u64 now = now_ms();

	for (int i = 0; i < NR_LISTENERS; i++) {
		struct listener *l = &ls[i];

		if (!l->every_ms || now < l->next_ms)
			continue;
		l->next_ms = now + l->every_ms;
		for (int c = 0; c < nr_cpus; c++)
			if (l->ring[c].fd >= 0)
				ring_drain(l, &l->ring[c]);
	}
}

/* A bpf-output event on CPU cpu, in the sample map at index cpu. */
static int sampler_open(struct ring *r, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_BPF_OUTPUT,
		.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
		.sample_period = 1,
		/* the listeners' clock */
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};
	__u32 key = cpu;
	int err;

	r->cpu = cpu;
	r->fd = sys_perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	err = ring_mmap(r, SAMPLE_PAGES);
	if (err)
		return err;
	if (bpf_map_update_elem(sample_map_fd, &key, &r->fd, BPF_ANY))
		return -errno;
	return 0;
}

/* Take one record of a bpf-output event: a sample names its program. */
static void sample_take(void *arg, const char *rec, __u16 len)
{
	const struct perf_event_header *hdr = (const void *)rec;
	const char *body = (const char *)(hdr + 1);
	struct sampler *sm = arg;
	__u64 time, cookie, lost;
	__u32 size, w, i;

	if (hdr->type == PERF_RECORD_LOST &&
	    len >= sizeof(*hdr) + 2 * sizeof(__u64)) {
		memcpy(&lost, body + sizeof(__u64), sizeof(lost));
		sm->lost += lost;
		return;
	}
	/* time, then the raw data's size and the cookie */
	if (hdr->type != PERF_RECORD_SAMPLE ||
	    len < sizeof(*hdr) + sizeof(time) + sizeof(size) + sizeof(cookie)) {
		sm->odd++;
		return;
	}
	memcpy(&time, body, sizeof(time));
	memcpy(&size, body + sizeof(time), sizeof(size));
	memcpy(&cookie, body + sizeof(time) + sizeof(size), sizeof(cookie));
	w = cookie >> 32;
	i = (__u32)cookie;
	if (size < sizeof(cookie) || w >= MAX_WORKERS || i >= MAX_SAMPLED) {
		sm->odd++;
		return;
	}
	sm->samples++;
	if (time > sm->last[w * MAX_SAMPLED + i])
		sm->last[w * MAX_SAMPLED + i] = time;
}

static void sampler_drain(struct sampler *sm, int nr_cpus)
{
	for (int c = 0; c < nr_cpus; c++)
		if (sm->ring[c].fd >= 0 &&
		    !sb_read(sm->ring[c].page, sm->ring[c].data,
			     sm->ring[c].size, sample_take, sm))
			sm->odd++;
}

static __u64 listener_read(const struct listener *l)
{
	__u64 n = 0;

	for (int t = 0; t < PERF_BPF_EVENT_MAX; t++)
		n += l->read[t];
	return n;
}

/* Records the workers (and the flush) caused: each object comes and goes. */
static __u64 written(const struct storm *st, int flushed)
{
	__u64 n = 2 * flushed;

	for (int w = 0; w < st->nr_workers; w++)
		n += 2 * (st->w[w].progs + st->w[w].links);
	return n;
}

/*
 * What listener l has accounted for: records read, lost, and those of
 * objects older than the test.  Every listener is written the same
 * records: the test's, and as many older ones as the largest listener,
 * which loses nothing, saw.
 */
static __u64 accounted(const struct listener *l)
{
	return listener_read(l) + l->lost + l->foreign;
}

static __u64 expected(const struct listener *ls, const struct storm *st,
		      int flushed)
{
	return written(st, flushed) + ls[NR_LISTENERS - 1].foreign;
}

static bool all_accounted(struct listener *ls, int nr_cpus,
			  const struct storm *st, int flushed)
{
	drain_all(ls, nr_cpus);
	for (int i = 0; i < NR_LISTENERS; i++)
		if (accounted(&ls[i]) != expected(ls, st, flushed))
			return false;
	return true;
}

static void worker_error(struct worker_stat *ws, const struct storm_step *s,
			 const char *what)
{
	if (!ws->errors++)
		snprintf(ws->err, sizeof(ws->err), "%s: %.200s", s->kind->name,
			 what);
}

/*
 * Whether the link fd no longer has the cgroup or device it had.  (A
 * netns link says it has none as soon as the netns starts to go, before
 * the kernel detaches it: its close and the netns teardown race.)
 */
static bool link_detached(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_link_get_info_by_fd(fd, &info, &len))
		return false;
	switch (info.type) {
	case BPF_LINK_TYPE_CGROUP:
		return !info.cgroup.cgroup_id;
	case BPF_LINK_TYPE_XDP:
		return !info.xdp.ifindex;
	default:
		return false;
	}
}

static int worker_nr;			/* in a worker: its number */

/* One lifecycle: load, link, undo the link the step's way, unload. */
static void step_run(struct worker_stat *ws, int i)
{
	const struct storm_step *s = &steps[i];
	const struct link_kind *k = s->kind;
	struct link_ctx ctx;
	int err;

	link_ctx_init(&ctx);
	if (k == &kind_sampled)
		sample_cookie = (__u64)worker_nr << 32 | ws->nr_sampled;
	err = k->setup(&ctx);
	ws->progs += (ctx.prog_fd >= 0) + (ctx.prog2_fd >= 0);
	if (err == KIND_SKIP) {
		ws->skipped[i] = true;
		snprintf(ws->skip, sizeof(ws->skip), "%s: %.200s", k->name,
			 ctx.skip);
	} else if (err) {
		worker_error(ws, s, ctx.err);
	} else {
		ctx.link_fd = k->attach(&ctx, s->via);
		if (ctx.link_fd < 0) {
			worker_error(ws, s, ctx.err);
		} else {
			ws->links++;
			if (k == &kind_sampled && ws->nr_sampled < MAX_SAMPLED) {
				__u32 id;

				ws->sampled_link[ws->nr_sampled++] =
					link_id_of(ctx.link_fd);
				/* the program runs once here, at least */
				bpf_prog_get_next_id(~0u, &id);
			}
			if (s->by == BY_DETACH && bpf_link_detach(ctx.link_fd))
				worker_error(ws, s, "BPF_LINK_DETACH failed");
			if (s->by == BY_TARGET_GONE) {
				if (k->remove_target(&ctx))
					worker_error(ws, s, ctx.err);
				else if (k->link_type == BPF_LINK_TYPE_NETNS)
					ws->raced++;
				/*
				 * The kernel detaches the link from a work
				 * item once the target is gone: give it the
				 * time, so that the close does not do it.
				 */
				else if (wait_until(link_detached(ctx.link_fd),
						    GONE_WAIT_MS))
					ws->gone++;
				else
					ws->gone_late++;
			}
		}
	}
	close_fd(&ctx.link_fd);
	close_fd(&ctx.prog_fd);
	close_fd(&ctx.prog2_fd);
	k->teardown(&ctx);
	ws->cycles[i]++;
}

static int bind_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void __attribute__((noreturn))
worker(struct storm *st, int w, int cpu)
{
	struct worker_stat *ws = &st->w[w];
	size_t skipped = 0;

	worker_nr = w;
	if (bind_cpu(cpu))
		worker_error(ws, &steps[0], "sched_setaffinity failed");
	/* until told to stop, or until the kernel can make no kind */
	for (size_t i = w % NR_STEPS;
	     !__atomic_load_n(&st->stop, __ATOMIC_RELAXED) && skipped < NR_STEPS;
	     i = (i + 1) % NR_STEPS) {
		if (ws->skipped[i])
			continue;
		step_run(ws, i);
		skipped += ws->skipped[i];
	}
	_exit(0);
}

/* Make cheap bpf() calls on cpu, when it is idle, until told to stop. */
static void __attribute__((noreturn))
caller(struct storm *st, int cpu)
{
	struct sched_param param = {};
	__u32 id;

	if (bind_cpu(cpu) || sched_setscheduler(0, SCHED_IDLE, &param))
		_exit(1);
	while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED))
		bpf_prog_get_next_id(~0u, &id);
	_exit(0);
}

/* The ids of the programs (links if link) in the system now, sorted. */
static int ids_now(bool link, __u32 *ids, int max)
{
	__u32 id = 0;
	int n = 0;

	while (!(link ? bpf_link_get_next_id(id, &id) :
			bpf_prog_get_next_id(id, &id))) {
		if (n == max)
			return -E2BIG;
		ids[n++] = id;
	}
	return errno == ENOENT ? n : -errno;
}

#define MAX_IDS	65536

/* The first id above those of the programs (links) in the system now. */
static int id_base(bool link, __u32 *base)
{
	static __u32 ids[MAX_IDS];
	int n = ids_now(link, ids, MAX_IDS);

	if (n < 0)
		return n;
	*base = n ? ids[n - 1] + 1 : 1;
	return 0;
}

/* Whether no program (link) made since base is left. */
static bool none_from(bool link, __u32 base)
{
	__u32 b;

	return !id_base(link, &b) && b <= base;
}

FIXTURE_SETUP(storm)
{
	self->st = MAP_FAILED;
	self->nr_cpus = sysconf(_SC_NPROCESSORS_CONF);
	for (int w = 0; w < MAX_WORKERS; w++) {
		self->pid[w] = 0;
		self->caller[w] = 0;
	}
	for (int i = 0; i < NR_LISTENERS; i++) {
		struct listener *l = &self->l[i];

		memset(l, 0, sizeof(*l));
		l->pages = listener_conf[i].pages;
		l->every_ms = listener_conf[i].every_ms;
		l->ring = calloc(self->nr_cpus, sizeof(*l->ring));
		ASSERT_NE(NULL, l->ring);
		for (int c = 0; c < self->nr_cpus; c++)
			l->ring[c].fd = -1;
	}
	self->sm.ring = calloc(self->nr_cpus, sizeof(*self->sm.ring));
	ASSERT_NE(NULL, self->sm.ring);
	for (int c = 0; c < self->nr_cpus; c++)
		self->sm.ring[c].fd = -1;
	self->sm.last = calloc(MAX_WORKERS * MAX_SAMPLED, sizeof(__u64));
	ASSERT_NE(NULL, self->sm.last);
	self->st = mmap(NULL, sizeof(*self->st), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->st);
	memset(self->st, 0, sizeof(*self->st));
}

FIXTURE_TEARDOWN(storm)
{
	if (self->st != MAP_FAILED)
		__atomic_store_n(&self->st->stop, 1, __ATOMIC_RELAXED);
	for (int w = 0; w < MAX_WORKERS; w++) {
		if (self->caller[w] > 0) {
			kill(self->caller[w], SIGKILL);
			waitpid(self->caller[w], NULL, 0);
		}
		if (self->pid[w] > 0) {
			char path[64];

			kill(self->pid[w], SIGKILL);
			waitpid(self->pid[w], NULL, 0);
			/* the cgroup a killed worker may have left */
			snprintf(path, sizeof(path),
				 "/sys/fs/cgroup/kst_bpf_link_%d", self->pid[w]);
			rmdir(path);
		}
	}
	for (int i = 0; i < NR_LISTENERS; i++) {
		for (int c = 0; self->l[i].ring && c < self->nr_cpus; c++)
			ring_close(&self->l[i].ring[c]);
		free(self->l[i].ring);
		free(self->l[i].progs.v);
		free(self->l[i].links.v);
	}
	for (int c = 0; self->sm.ring && c < self->nr_cpus; c++)
		ring_close(&self->sm.ring[c]);
	free(self->sm.ring);
	free(self->sm.last);
	if (sample_map_fd >= 0)
		close(sample_map_fd);
	sample_map_fd = -1;
	if (self->st != MAP_FAILED)
		munmap(self->st, sizeof(*self->st));
}

/* Check what listener l saw; lossless: it must have seen everything. */
static void listener_check(struct __test_metadata *_metadata,
			   struct listener *l, int i, __u64 progs, __u64 links)
{
	__u64 seen_progs = 0, seen_links = 0, whole = 0;
	bool lossless = !l->lost;

	EXPECT_EQ(0, l->torn) TH_LOG("listener %d: %llu torn records, first: %s",
				     i, (unsigned long long)l->torn,
				     l->torn_why);
	EXPECT_EQ(0, l->other) TH_LOG("listener %d: %llu records of other types",
				      i, (unsigned long long)l->other);
	EXPECT_EQ(0, l->twice) TH_LOG("listener %d: %llu ids begun or ended twice",
				      i, (unsigned long long)l->twice);
	EXPECT_EQ(0, l->backwards)
		TH_LOG("listener %d: %llu ids ended before they began", i,
		       (unsigned long long)l->backwards);
	if (!lossless)
		return;
	for (__u32 id = 0; id < l->progs.nr; id++) {
		struct life *f = &l->progs.v[id];

		seen_progs += f->begins || f->ends;
		whole += f->begins == 1 && f->ends == 1;
	}
	for (__u32 id = 0; id < l->links.nr; id++) {
		struct life *f = &l->links.v[id];

		seen_links += f->begins || f->ends;
		whole += f->begins == 1 && f->ends == 1;
	}
	EXPECT_EQ(progs, seen_progs)
		TH_LOG("listener %d lost nothing: %llu programs made, records of %llu",
		       i, (unsigned long long)progs,
		       (unsigned long long)seen_progs);
	EXPECT_EQ(links, seen_links)
		TH_LOG("listener %d lost nothing: %llu links made, records of %llu",
		       i, (unsigned long long)links,
		       (unsigned long long)seen_links);
	EXPECT_EQ(seen_progs + seen_links, whole)
		TH_LOG("listener %d lost nothing: %llu objects without both records",
		       i, (unsigned long long)(seen_progs + seen_links - whole));
}

/*
 * No sample of a sampled program may be later than its link's
 * LINK_DETACH, as listener l, which lost nothing, saw it.
 */
static void sampler_check(struct __test_metadata *_metadata,
			  const struct sampler *sm, const struct storm *st,
			  const struct listener *l)
{
	__u64 links = 0, seen = 0, late = 0;

	for (int w = 0; w < st->nr_workers; w++) {
		const struct worker_stat *ws = &st->w[w];

		for (__u32 i = 0; i < ws->nr_sampled; i++) {
			__u64 t = sm->last[w * MAX_SAMPLED + i];
			__u32 id = ws->sampled_link[i];
			const struct life *f;

			links++;
			if (!t || id < l->links.base ||
			    id - l->links.base >= l->links.nr)
				continue;
			f = &l->links.v[id - l->links.base];
			if (f->ends != 1)
				continue;
			seen++;
			if (t > f->t_end && !late++)
				TH_LOG("link %u: a sample %llu ns after its LINK_DETACH",
				       id, (unsigned long long)(t - f->t_end));
		}
	}
	ksft_print_msg("sampled: %llu links, %llu with samples; %llu samples, %llu lost; ",
		       (unsigned long long)links, (unsigned long long)seen,
		       (unsigned long long)sm->samples,
		       (unsigned long long)sm->lost);
	printf("%llu links with a sample after their LINK_DETACH\n",
	       (unsigned long long)late);
	EXPECT_EQ(0, sm->odd) TH_LOG("bpf-output records that are not our samples");
	EXPECT_EQ(0, late);
	if (links)
		EXPECT_LT(0, seen) TH_LOG("no sampled program was seen to run");
}

static const char *read_when(int ms)
{
	static char buf[32];

	if (!ms)
		return "at the end";
	snprintf(buf, sizeof(buf), "every %d ms", ms);
	return buf;
}

TEST_F_TIMEOUT(storm, lifecycle, 900)
{
	const char *env = getenv("BPF_EVENT_STRESS_SECS");
	__u64 progs = 0, links = 0, errors = 0, cycles[NR_STEPS] = {};
	__u64 gone = 0, gone_late = 0, raced = 0;
	int online[MAX_WORKERS], nr_online = 0;
	int flushed = 0, err;
	__u64 start, end, stop_ms;
	struct storm *st = self->st;
	__u32 prog_base, link_base;
	struct prog_info warm;
	struct btf *vmlinux;
	char *rest = NULL;
	cpu_set_t set;
	long secs;

	secs = env ? strtol(env, &rest, 10) : STRESS_SECS;
	ASSERT_TRUE(secs > 0 && secs <= 600 && (!rest || !*rest))
		TH_LOG("BPF_EVENT_STRESS_SECS=%s: want 1 to 600 seconds", env);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (int c = 0; c < CPU_SETSIZE && nr_online < MAX_WORKERS; c++)
		if (CPU_ISSET(c, &set))
			online[nr_online++] = c;

	/*
	 * libbpf loads programs of its own the first time it loads one,
	 * to see what the kernel supports: have it do so now, before the
	 * listeners, in this process, whose answers the workers inherit.
	 */
	err = load_prog(&warm);
	SKIP_IF_NO_PRIV(err, "BPF_PROG_LOAD");
	ASSERT_LE(0, err) TH_LOG("BPF_PROG_LOAD: %s", strerror(-err));
	close(err);

	for (int i = 0; i < NR_LISTENERS; i++) {
		for (int c = 0; c < self->nr_cpus; c++) {
			err = ring_open(&self->l[i].ring[c], c,
					self->l[i].pages);
			if (err == -ENODEV) {	/* offline CPU */
				ring_close(&self->l[i].ring[c]);
				continue;
			}
			SKIP_IF_NO_PRIV(err, "perf_event_open");
			ASSERT_EQ(0, err)
				TH_LOG("listener %d, CPU %d, %d pages: %s", i,
				       c, self->l[i].pages, strerror(-err));
		}
	}

	/* The sampled programs' function, and their bpf-output events. */
	vmlinux = btf__load_vmlinux_btf();
	if (vmlinux) {
		err = btf__find_by_name_kind(vmlinux, SAMPLE_FUNC,
					     BTF_KIND_FUNC);
		sample_btf_id = err > 0 ? err : 0;
		btf__free(vmlinux);
	}
	sample_map_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY,
				       "kst_samples", sizeof(__u32),
				       sizeof(__u32), self->nr_cpus, NULL);
	ASSERT_LE(0, sample_map_fd) TH_LOG("perf event array: %s",
					   strerror(errno));
	for (int c = 0; c < self->nr_cpus; c++) {
		if (self->l[0].ring[c].fd < 0)
			continue;
		err = sampler_open(&self->sm.ring[c], c);
		ASSERT_EQ(0, err) TH_LOG("bpf-output event on CPU %d: %s", c,
					 strerror(-err));
	}

	/* Every CPU's rings are flushed at the end, from that CPU. */
	for (int c = 0; c < self->nr_cpus; c++)
		if (self->l[0].ring[c].fd >= 0 && !CPU_ISSET(c, &set))
			SKIP(return, "CPU %d is online but not ours to run on", c);

	/*
	 * Objects older than the listeners may still be on their way out
	 * (a previous test's, freed after an RCU grace period): their
	 * records are not ours.  Ours have ids from here on.
	 */
	err = id_base(false, &prog_base);
	SKIP_IF_NO_PRIV(err, "BPF_PROG_GET_NEXT_ID");
	ASSERT_EQ(0, err) TH_LOG("program ids: %s", strerror(-err));
	ASSERT_EQ(0, id_base(true, &link_base));
	if (prog_base <= warm.id)
		prog_base = warm.id + 1;
	for (int i = 0; i < NR_LISTENERS; i++) {
		self->l[i].progs.base = prog_base;
		self->l[i].links.base = link_base;
	}

	st->nr_workers = nr_online < 2 ? 2 : nr_online;
	for (int c = 0; c < nr_online; c++) {
		self->caller[c] = fork();
		ASSERT_LE(0, self->caller[c]);
		if (!self->caller[c])
			caller(st, online[c]);
	}
	start = now_ms();
	for (int w = 0; w < st->nr_workers; w++) {
		self->pid[w] = fork();
		ASSERT_LE(0, self->pid[w]);
		if (!self->pid[w])
			worker(st, w, online[w % nr_online]);
	}
	stop_ms = start + secs * 1000ull;
	while (now_ms() < stop_ms) {
		drain_due(self->l, self->nr_cpus);
		sampler_drain(&self->sm, self->nr_cpus);
		usleep(DRAIN_US);
	}
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED);
	for (int w = 0; w < st->nr_workers; w++) {
		int status = 0;

		/* a step takes well under a second; allow a stalled VM */
		ASSERT_TRUE(wait_until(waitpid(self->pid[w], &status,
					       WNOHANG) == self->pid[w],
				       60000))
			TH_LOG("worker %d did not stop within 60 s", w);
		self->pid[w] = 0;
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("worker %d ended with status %#x", w, status);
	}
	end = now_ms();
	for (int c = 0; c < nr_online; c++) {
		int status = 0;

		ASSERT_TRUE(wait_until(waitpid(self->caller[c], &status,
					       WNOHANG) == self->caller[c],
				       60000))
			TH_LOG("the caller on CPU %d did not stop within 60 s",
			       online[c]);
		self->caller[c] = 0;
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("the caller on CPU %d ended with status %#x",
			       online[c], status);
	}
	sampler_drain(&self->sm, self->nr_cpus);

	/* Every program and link made goes: none is left. */
	EXPECT_TRUE(wait_until(none_from(false, prog_base) &&
			       none_from(true, link_base), WAIT_LONG_MS))
		TH_LOG("programs or links made during the storm are still there");

	/*
	 * A ring reports what it dropped only with the next record it
	 * writes: load a program on each CPU with a ring, so that every
	 * ring writes one.
	 */
	drain_all(self->l, self->nr_cpus);
	for (int c = 0; c < self->nr_cpus; c++) {
		int fd;

		if (self->l[0].ring[c].fd < 0)
			continue;
		ASSERT_EQ(0, bind_cpu(c))
			TH_LOG("cannot run on CPU %d to flush its rings", c);
		fd = load_prog(NULL);
		ASSERT_LE(0, fd) TH_LOG("load: %s", strerror(-fd));
		close(fd);
		flushed++;
	}
	sched_setaffinity(0, sizeof(set), &set);

	EXPECT_TRUE(wait_until(all_accounted(self->l, self->nr_cpus, st,
					     flushed), WAIT_LONG_MS));

	for (int w = 0; w < st->nr_workers; w++) {
		struct worker_stat *ws = &st->w[w];

		progs += ws->progs;
		links += ws->links;
		errors += ws->errors;
		gone += ws->gone;
		gone_late += ws->gone_late;
		raced += ws->raced;
		for (size_t i = 0; i < NR_STEPS; i++)
			cycles[i] += ws->cycles[i];
		if (ws->errors)
			TH_LOG("worker %d: %llu errors, the first: %s", w,
			       (unsigned long long)ws->errors, ws->err);
		if (ws->skip[0])
			ksft_print_msg("worker %d skipped %s\n", w, ws->skip);
	}

	ksft_print_msg("storm: %d workers, %.1f s: %llu programs, %llu links (%.0f a second)\n",
		       st->nr_workers, (end - start) / 1000.0,
		       (unsigned long long)progs, (unsigned long long)links,
		       (progs + links) * 1000.0 / (end - start));
	ksft_print_msg("links detached by their target going: %llu, ",
		       (unsigned long long)gone);
	printf("closed first: %llu, netns links racing: %llu\n",
	       (unsigned long long)gone_late, (unsigned long long)raced);
	for (size_t i = 0; i < NR_STEPS; i++)
		ksft_print_msg("  %-10s %-19s %-12s %llu\n",
			       steps[i].kind->name,
			       steps[i].via == VIA_LINK_CREATE ?
			       "BPF_LINK_CREATE" : "RAW_TRACEPOINT_OPEN",
			       steps[i].by == BY_CLOSE ? "close" :
			       steps[i].by == BY_DETACH ? "LINK_DETACH" :
			       "target gone", (unsigned long long)cycles[i]);
	for (int i = 0; i < NR_LISTENERS; i++) {
		struct listener *l = &self->l[i];

		ksft_print_msg("listener %d (%3d pages/CPU, read %s): ", i,
			       l->pages, read_when(l->every_ms));
		printf("written %llu, read %llu, lost %llu, torn %llu, older %llu\n",
		       (unsigned long long)written(st, flushed),
		       (unsigned long long)listener_read(l),
		       (unsigned long long)l->lost,
		       (unsigned long long)l->torn,
		       (unsigned long long)l->foreign);
		EXPECT_EQ(expected(self->l, st, flushed), accounted(l))
			TH_LOG("listener %d: records read + lost != written", i);
		listener_check(_metadata, l, i, progs + flushed, links);
	}
	EXPECT_EQ(0, errors);
	/* the ring read only at the end must have overflowed */
	if (secs >= 5)
		EXPECT_LT(0, self->l[0].lost)
			TH_LOG("listener 0 lost nothing: the storm was too small");
	/* the largest ring, read every few ms, must keep up */
	EXPECT_EQ(0, self->l[NR_LISTENERS - 1].lost)
		TH_LOG("the largest listener lost records");
	EXPECT_LT(0, links) TH_LOG("the workers made no link");
	sampler_check(_metadata, &self->sm, st, &self->l[NR_LISTENERS - 1]);
}

TEST_HARNESS_MAIN
