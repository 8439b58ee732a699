// SPDX-License-Identifier: GPL-2.0
/*
 * The uapi between perf events and the BPF programs that run on them,
 * apart from the side-band records:
 *
 *  - a BPF_PROG_TYPE_PERF_EVENT program, attached to an event with
 *    PERF_EVENT_IOC_SET_BPF or with a bpf_link, runs when the event
 *    overflows and reads the event's sample period from its context;
 *  - bpf_perf_event_output() into a PERF_COUNT_SW_BPF_OUTPUT event goes
 *    round the event's ring several times, each sample whole and in order;
 *  - PERF_EVENT_IOC_QUERY_BPF lists the programs attached to a tracepoint.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <linux/bpf_perf_event.h>

#include "bpf_event.h"

#define INSN(c, d, s, o, i)						\
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s),\
			    .off = (o), .imm = (i) })

/* Load insns as a program of this type; the fd, or -errno. */
static int load_insns(enum bpf_prog_type type, const struct bpf_insn *insns,
		      int cnt)
{
	static char log[65536];
	/* with log_level 0, libbpf asks for the log if the load fails */
	struct bpf_prog_load_opts opts = {
		.sz = sizeof(opts),
		.log_buf = log,
		.log_size = sizeof(log),
	};
	int fd;

	log[0] = 0;
	fd = bpf_prog_load(type, PROG_NAME, "GPL", insns, cnt, &opts);
	if (fd < 0) {
		fd = -errno;
		fprintf(stderr, "# verifier: %s\n", log);
	}
	return fd;
}

/*
 * A BPF_PROG_TYPE_PERF_EVENT program runs on each overflow of the event it
 * is attached to and reads that event's sample_period from its context,
 * attached with PERF_EVENT_IOC_SET_BPF or with a bpf_link alike.
 */
FIXTURE(perf_event_prog) {
	int map_fd, prog_fd, ev_fd, link_fd;
};

FIXTURE_VARIANT(perf_event_prog) {
	bool link;		/* BPF_LINK_CREATE, else PERF_EVENT_IOC_SET_BPF */
	__u64 period;		/* of the event, in ns of task clock */
};

FIXTURE_VARIANT_ADD(perf_event_prog, set_bpf) {
	.link = false,
	.period = 100000,
};

FIXTURE_VARIANT_ADD(perf_event_prog, link) {
	.link = true,
	.period = 200000,
};

/* Store ctx->sample_period in slot 0 of the array map_fd. */
static int load_period_prog(int map_fd)
{
	struct bpf_insn insns[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_6, BPF_REG_1,
		     offsetof(struct bpf_perf_event_data, sample_period), 0),
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD,
		     0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 1, 0),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_0, BPF_REG_6, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return load_insns(BPF_PROG_TYPE_PERF_EVENT, insns, ARRAY_SIZE(insns));
}

FIXTURE_SETUP(perf_event_prog)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.sample_period = variant->period,
	};

	self->prog_fd = -1;
	self->ev_fd = -1;
	self->link_fd = -1;
	/* an array's slot starts at 0, which no sample period is */
	self->map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, sizeof(__u32),
				      sizeof(__u64), 1, NULL);
	SKIP_IF_NO_PRIV(self->map_fd, "BPF_MAP_CREATE");
	ASSERT_LE(0, self->map_fd)
		TH_LOG("BPF_MAP_CREATE: %s", strerror(-self->map_fd));
	self->prog_fd = load_period_prog(self->map_fd);
	ASSERT_LE(0, self->prog_fd)
		TH_LOG("BPF_PROG_LOAD: %s", strerror(-self->prog_fd));
	self->ev_fd = sys_perf_event_open(&attr, 0, -1, -1,
					  PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, self->ev_fd)
		TH_LOG("perf_event_open: %s", strerror(errno));
}

FIXTURE_TEARDOWN(perf_event_prog)
{
	if (self->link_fd >= 0)
		close(self->link_fd);
	if (self->ev_fd >= 0)
		close(self->ev_fd);
	if (self->prog_fd >= 0)
		close(self->prog_fd);
	if (self->map_fd >= 0)
		close(self->map_fd);
}

/*
 * Run on the CPU for a millisecond or two, so that task clock moves on
 * (it stands still while we sleep), then read the map's slot 0.
 */
static __u64 run_then_read(int map_fd)
{
	__u64 t0 = now_ms(), value = 0;
	__u32 key = 0;

	while (now_ms() - t0 < 2)
		syscall(__NR_getppid);
	bpf_map_lookup_elem(map_fd, &key, &value);
	return value;
}

TEST_F(perf_event_prog, sample_period)
{
	__u64 seen = 0;
	int err;

	if (variant->link) {
		self->link_fd = bpf_link_create(self->prog_fd, self->ev_fd,
						BPF_PERF_EVENT, NULL);
		ASSERT_LE(0, self->link_fd)
			TH_LOG("BPF_LINK_CREATE: %s", strerror(-self->link_fd));
	} else {
		err = ioctl(self->ev_fd, PERF_EVENT_IOC_SET_BPF, self->prog_fd);
		ASSERT_EQ(0, err)
			TH_LOG("PERF_EVENT_IOC_SET_BPF: %s", strerror(errno));
	}
	ASSERT_TRUE(wait_until((seen = run_then_read(self->map_fd)) != 0,
			       WAIT_MS))
		TH_LOG("the program never ran");
	EXPECT_EQ(variant->period, seen)
		TH_LOG("attached with %s", variant->link ? "a link" : "SET_BPF");
}

/*
 * A sample of bpf_perf_event_output() with 16 bytes of data and
 * PERF_SAMPLE_RAW: the 8-byte header, the u32 size, the 16 bytes and 4
 * of padding to keep the record 8-byte aligned.
 */
#define OUTPUT_DATA		16
#define OUTPUT_SAMPLE_SIZE	32
#define OUTPUT_LAPS		5	/* times the samples fill the ring */
#define OUTPUT_BATCH		20	/* samples written between reads */

/*
 * bpf_perf_event_output() into a PERF_COUNT_SW_BPF_OUTPUT event with a
 * one-page ring, read every 20 samples: the samples go round the ring
 * five times, and every one arrives whole and in order.
 */
TEST(perf_event_output_wraps)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_BPF_OUTPUT,
		.sample_type = PERF_SAMPLE_RAW,
		.sample_period = 1,
		.wakeup_events = 1,
	};
	struct bpf_insn insns[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
		/* args[0] of the test run is the sequence number */
		INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_7, BPF_REG_6, 0, 0),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_7, -16, 0),
		INSN(BPF_ALU64 | BPF_XOR | BPF_K, BPF_REG_7, 0, 0, -1),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_7, -8, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0),
		/* map fd, patched below */
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD,
		     0, 0),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_3, 0, 0,
		     (__s32)BPF_F_CURRENT_CPU),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_4, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_4, 0, 0, -16),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_5, 0, 0, OUTPUT_DATA),
		/* the program returns what the helper does: 0 or -errno */
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_perf_event_output),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	struct sb_listener *l = calloc(1, sizeof(*l));
	int cpu = sched_getcpu(), map_fd, prog_fd, n, got = 0, bad = 0;
	__u64 next = 0, consumed = 0;
	cpu_set_t set;

	ASSERT_NE(NULL, l);
	ASSERT_LE(0, cpu);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	map_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, NULL,
				sizeof(__u32), sizeof(__u32),
				sysconf(_SC_NPROCESSORS_CONF), NULL);
	SKIP_IF_NO_PRIV(map_fd, "BPF_MAP_CREATE");
	ASSERT_LE(0, map_fd) TH_LOG("BPF_MAP_CREATE: %s", strerror(-map_fd));
	l->fd = sys_perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, l->fd) TH_LOG("perf_event_open: %s", strerror(errno));
	ASSERT_EQ(0, ring_map(l, 1));
	ASSERT_EQ(0, bpf_map_update_elem(map_fd, &cpu, &l->fd, BPF_ANY));
	insns[6].imm = map_fd;
	prog_fd = load_insns(BPF_PROG_TYPE_RAW_TRACEPOINT, insns,
			     ARRAY_SIZE(insns));
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(-prog_fd));

	n = OUTPUT_LAPS * l->data_size / OUTPUT_SAMPLE_SIZE;
	for (__u64 seq = 0; seq < n; seq++) {
		__u64 args[1] = { seq };
		struct bpf_test_run_opts run = {
			.sz = sizeof(run),
			.ctx_in = args,
			.ctx_size_in = sizeof(args),
		};
		__u64 head, tail;

		ASSERT_EQ(0, bpf_prog_test_run_opts(prog_fd, &run))
			TH_LOG("BPF_PROG_TEST_RUN: %s", strerror(errno));
		ASSERT_EQ(0, (int)run.retval)
			TH_LOG("bpf_perf_event_output(): %s",
			       strerror(-(int)run.retval));
		if (seq % OUTPUT_BATCH != OUTPUT_BATCH - 1 && seq != n - 1)
			continue;

		head = __atomic_load_n(&l->page->data_head, __ATOMIC_ACQUIRE);
		tail = l->page->data_tail;
		while (tail < head) {
			struct perf_event_header hdr;
			char rec[OUTPUT_SAMPLE_SIZE];
			__u64 data[2];
			__u32 size;

			ring_copy(l, tail, &hdr, sizeof(hdr));
			if (hdr.type != PERF_RECORD_SAMPLE ||
			    hdr.size != OUTPUT_SAMPLE_SIZE) {
				bad++;
				if (hdr.size < sizeof(hdr))
					break;
				tail += hdr.size;
				consumed += hdr.size;
				continue;
			}
			ring_copy(l, tail, rec, sizeof(rec));
			memcpy(&size, rec + sizeof(hdr), sizeof(size));
			memcpy(data, rec + sizeof(hdr) + sizeof(size),
			       sizeof(data));
			if (size < OUTPUT_DATA || data[0] != next ||
			    data[1] != ~next)
				bad++;
			next = data[0] + 1;
			got++;
			tail += hdr.size;
			consumed += hdr.size;
		}
		__atomic_store_n(&l->page->data_tail, tail, __ATOMIC_RELEASE);
	}
	EXPECT_EQ(n, got);
	EXPECT_EQ(0, bad);
	/* what the reader took out went round the ring more than twice */
	EXPECT_LT(2 * l->data_size, consumed)
		TH_LOG("read %llu bytes of a %llu-byte ring",
		       (unsigned long long)consumed,
		       (unsigned long long)l->data_size);
	close(prog_fd);
	close(map_fd);
	sb_close(l);
	free(l);
}

/* The id of tracepoint name ("group/event") from tracefs; -1 if none. */
static int tracepoint_id(const char *name)
{
	static const char * const tracefs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[256], buf[32] = "";
	int fd, id = -1;

	for (int i = 0; i < ARRAY_SIZE(tracefs) && id < 0; i++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", tracefs[i],
			 name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		if (read(fd, buf, sizeof(buf) - 1) > 0)
			id = atoi(buf);
		close(fd);
	}
	return id;
}

/* What PERF_EVENT_IOC_QUERY_BPF fills in, with room for 4 ids. */
struct query {
	struct perf_event_query_bpf q;
	__u32 ids[4];
};

/* A value the kernel never writes: what it leaves alone reads as this. */
#define UNTOUCHED	0xffffffffu

/* Query fd with room for ids_len ids, all else UNTOUCHED; 0 or -errno. */
static int do_query(int fd, __u32 ids_len, struct query *qr)
{
	memset(qr, 0xff, sizeof(*qr));
	qr->q.ids_len = ids_len;
	return ioctl(fd, PERF_EVENT_IOC_QUERY_BPF, qr) ? -errno : 0;
}

/*
 * PERF_EVENT_IOC_QUERY_BPF lists the programs attached to a tracepoint,
 * through any event on it, in the order they were attached: ids_len 0
 * asks for the count only, a short ids_len gets ENOSPC with the count
 * and the first ids, and closing an event takes its program off the list.
 */
TEST(query_bpf)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_TRACEPOINT,
		.sample_period = 1,
	};
	struct prog_info a, b;
	struct query qr;
	int ev1, ev2, fa, fb, id, err;

	id = tracepoint_id("syscalls/sys_enter_getppid");
	if (id < 0)
		SKIP(return, "no syscalls/sys_enter_getppid tracepoint in tracefs");
	attr.config = id;
	ev1 = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	err = ev1 < 0 ? -errno : 0;
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("perf_event_open: %s", strerror(-err));
	ev2 = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, ev2) TH_LOG("perf_event_open: %s", strerror(errno));

	/* none yet: the kernel says 0, over our UNTOUCHED */
	err = do_query(ev1, 0, &qr);
	SKIP_IF_NO_PRIV(err, "PERF_EVENT_IOC_QUERY_BPF");
	ASSERT_EQ(0, err) TH_LOG("PERF_EVENT_IOC_QUERY_BPF: %s", strerror(-err));
	EXPECT_EQ(0, qr.q.prog_cnt);

	fa = prog_load_ret(BPF_PROG_TYPE_TRACEPOINT, NULL, 0, &a);
	SKIP_IF_NO_PRIV(fa, "BPF_PROG_LOAD");
	ASSERT_LE(0, fa) TH_LOG("BPF_PROG_LOAD: %s", strerror(-fa));
	fb = prog_load_ret(BPF_PROG_TYPE_TRACEPOINT, NULL, 0, &b);
	ASSERT_LE(0, fb) TH_LOG("BPF_PROG_LOAD: %s", strerror(-fb));
	ASSERT_EQ(0, ioctl(ev1, PERF_EVENT_IOC_SET_BPF, fa));
	ASSERT_EQ(0, ioctl(ev2, PERF_EVENT_IOC_SET_BPF, fb));

	/* count only: no id written */
	ASSERT_EQ(0, do_query(ev1, 0, &qr));
	EXPECT_EQ(2, qr.q.prog_cnt);
	EXPECT_EQ(UNTOUCHED, qr.ids[0]);

	/* too short: ENOSPC, the count, the first id and nothing past it */
	EXPECT_EQ(-ENOSPC, do_query(ev1, 1, &qr));
	EXPECT_EQ(2, qr.q.prog_cnt);
	EXPECT_EQ(a.id, qr.ids[0]);
	EXPECT_EQ(UNTOUCHED, qr.ids[1]);

	/* long enough, through the other event: both, in attach order */
	ASSERT_EQ(0, do_query(ev2, 4, &qr));
	EXPECT_EQ(2, qr.q.prog_cnt);
	EXPECT_EQ(a.id, qr.ids[0]);
	EXPECT_EQ(b.id, qr.ids[1]);

	/* closing one event detaches its program and leaves the other */
	close(ev1);
	ASSERT_EQ(0, do_query(ev2, 4, &qr));
	EXPECT_EQ(1, qr.q.prog_cnt);
	EXPECT_EQ(b.id, qr.ids[0]);
	close(ev2);
	close(fa);
	close(fb);
}

TEST_HARNESS_MAIN
