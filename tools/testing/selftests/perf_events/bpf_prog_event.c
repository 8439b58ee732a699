// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_RECORD_BPF_EVENT records of BPF programs (PROG_LOAD, PROG_UNLOAD)
 * and the PERF_RECORD_KSYMBOL records of their symbols.
 *
 * A listener for this task gets both kinds of record when a program is
 * loaded and when its last reference goes, matching what bpf(2) says of
 * the program; a listener without attr.bpf_event gets only the symbols; a
 * listener on one CPU gets what happens there; a ring too small for what
 * is written keeps whole records and counts the rest as lost; and
 * attr.bpf_event_ext, which asks for link records too, is refused without
 * attr.bpf_event, is bit 40 of the flags word, and has reserved bits on
 * either side.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>

#include "bpf_event.h"

FIXTURE(bpf_sb) {
	struct sb_listener full;	/* bpf_event and ksymbol */
	struct sb_listener ksym_only;	/* ksymbol, no bpf_event */
	struct prog_info prog;
	int prog_fd;
};

FIXTURE_SETUP(bpf_sb)
{
	int err;

	self->prog_fd = -1;
	self->full.fd = -1;
	self->ksym_only.fd = -1;
	err = sb_open(&self->full, SB_BPF_PROGS, true, 0, -1);
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("side-band listener: %s", strerror(-err));
	err = sb_open(&self->ksym_only, SB_BPF_NONE, true, 0, -1);
	ASSERT_EQ(0, err) TH_LOG("ksymbol listener: %s", strerror(-err));

	self->prog_fd = load_prog(&self->prog);
	SKIP_IF_NO_PRIV(self->prog_fd, "BPF_PROG_LOAD");
	ASSERT_LE(0, self->prog_fd)
		TH_LOG("BPF_PROG_LOAD: %s", strerror(-self->prog_fd));
	if (!self->prog.ksym_addr)
		SKIP(return, "program not JIT-compiled (bpf_jit_enable=0?)");
}

FIXTURE_TEARDOWN(bpf_sb)
{
	if (self->prog_fd >= 0)
		close(self->prog_fd);
	sb_close(&self->full);
	sb_close(&self->ksym_only);
}

/*
 * The index of the first BPF_EVENT record of this type for program id, from
 * index from on; -1 if none.  Programs are told apart by id: libbpf loads
 * programs of its own in this task, to probe what the kernel supports.
 */
static int find_prog(struct sb_listener *l, int from, __u16 type, __u32 id)
{
	for (int i = from; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		if (r->type == PERF_RECORD_BPF_EVENT && r->bpf.type == type &&
		    r->bpf.id == id)
			return i;
	}
	return -1;
}

/*
 * The index of the first KSYMBOL record registering (flags 0) or
 * unregistering (PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) the symbol at addr,
 * from index from on; -1 if none.
 */
static int find_ksym(struct sb_listener *l, int from, __u16 flags, __u64 addr)
{
	for (int i = from; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		if (r->type == PERF_RECORD_KSYMBOL && r->ksym.addr == addr &&
		    (r->ksym.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) ==
		    flags)
			return i;
	}
	return -1;
}

/* Drain l, then whether a find_prog() or find_ksym() finds a record. */
static bool has_prog(struct sb_listener *l, int from, __u16 type, __u32 id)
{
	sb_drain(l);
	return find_prog(l, from, type, id) >= 0;
}

static bool has_ksym(struct sb_listener *l, int from, __u16 flags, __u64 addr)
{
	sb_drain(l);
	return find_ksym(l, from, flags, addr) >= 0;
}

/* A KSYMBOL record of the program the fixture loaded. */
static void check_ksym(struct __test_metadata *_metadata,
		       struct sb_listener *l, struct sb_record *ks,
		       const struct prog_info *pi)
{
	EXPECT_EQ(PERF_RECORD_KSYMBOL_TYPE_BPF, ks->ksym.ksym_type);
	EXPECT_EQ(pi->ksym_len, ks->ksym.len);
	EXPECT_STREQ(pi->ksym_name, ks->ksym.name);
	check_sample_id(_metadata, l, ks);
}

/* A PROG_LOAD or PROG_UNLOAD record of the program the fixture loaded. */
static void check_prog(struct __test_metadata *_metadata,
		       struct sb_listener *l, struct sb_record *ev,
		       const struct prog_info *pi)
{
	EXPECT_EQ(0, memcmp(pi->tag, ev->bpf.tag, BPF_TAG_SIZE));
	EXPECT_EQ(0, ev->bpf.flags);
	/* program records did not grow when links got theirs */
	EXPECT_EQ(SB_BPF_PROG_BODY, ev->body);
	check_sample_id(_metadata, l, ev);
}

/* Load: one KSYMBOL register record, then one PROG_LOAD, both matching. */
TEST_F(bpf_sb, prog_load)
{
	struct sb_listener *l = &self->full;
	__u32 id = self->prog.id;
	int k, e;

	ASSERT_TRUE(wait_until(has_prog(l, 0, PERF_BPF_EVENT_PROG_LOAD, id),
			       WAIT_MS))
		TH_LOG("no PROG_LOAD record for program %u", id);
	EXPECT_EQ(0, l->lost);
	e = find_prog(l, 0, PERF_BPF_EVENT_PROG_LOAD, id);
	check_prog(_metadata, l, &l->rec[e], &self->prog);
	/* exactly one: the program was loaded once */
	EXPECT_EQ(-1, find_prog(l, e + 1, PERF_BPF_EVENT_PROG_LOAD, id));

	k = find_ksym(l, 0, 0, self->prog.ksym_addr);
	ASSERT_LE(0, k) TH_LOG("no KSYMBOL register record for %s",
			       self->prog.ksym_name);
	EXPECT_LT(k, e) TH_LOG("KSYMBOL must come before PROG_LOAD");
	check_ksym(_metadata, l, &l->rec[k], &self->prog);
	EXPECT_LE(l->rec[k].sid.time, l->rec[e].sid.time);
}

/*
 * Last close: KSYMBOL unregister, then PROG_UNLOAD, for the same program,
 * written by the closing task.
 */
TEST_F(bpf_sb, prog_unload)
{
	struct sb_listener *l = &self->full;
	__u32 id = self->prog.id;
	int from, k, e;

	ASSERT_TRUE(wait_until(has_prog(l, 0, PERF_BPF_EVENT_PROG_LOAD, id),
			       WAIT_MS))
		TH_LOG("no PROG_LOAD record for program %u", id);
	from = l->nr;
	ASSERT_EQ(0, close(self->prog_fd));
	self->prog_fd = -1;
	ASSERT_TRUE(wait_until(has_prog(l, from, PERF_BPF_EVENT_PROG_UNLOAD,
					id), WAIT_MS))
		TH_LOG("no PROG_UNLOAD record after close");
	EXPECT_EQ(0, l->lost);

	e = find_prog(l, from, PERF_BPF_EVENT_PROG_UNLOAD, id);
	check_prog(_metadata, l, &l->rec[e], &self->prog);
	EXPECT_EQ(-1, find_prog(l, e + 1, PERF_BPF_EVENT_PROG_UNLOAD, id));

	k = find_ksym(l, from, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
		      self->prog.ksym_addr);
	ASSERT_LE(0, k) TH_LOG("no KSYMBOL unregister record after close");
	EXPECT_LT(k, e) TH_LOG("KSYMBOL must come before PROG_UNLOAD");
	check_ksym(_metadata, l, &l->rec[k], &self->prog);
}

/* Without attr.bpf_event there is no BPF_EVENT record, KSYMBOL still comes. */
TEST_F(bpf_sb, no_bpf_event_without_flag)
{
	struct sb_listener *l = &self->ksym_only;
	__u64 addr = self->prog.ksym_addr;
	__u32 id = self->prog.id;

	ASSERT_EQ(0, close(self->prog_fd));
	self->prog_fd = -1;
	ASSERT_TRUE(wait_until(has_ksym(l, 0,
					PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
					addr), WAIT_MS))
		TH_LOG("no KSYMBOL unregister record after close");
	/* the listener was live: it saw the symbol come and go */
	EXPECT_LE(0, find_ksym(l, 0, 0, addr));
	EXPECT_EQ(0, sb_count(l, PERF_RECORD_BPF_EVENT));
	/* ... while the listener that asked for them got both */
	sb_drain(&self->full);
	EXPECT_LE(0, find_prog(&self->full, 0, PERF_BPF_EVENT_PROG_LOAD, id));
	EXPECT_LE(0, find_prog(&self->full, 0, PERF_BPF_EVENT_PROG_UNLOAD, id));
}

/*
 * A listener on one CPU (pid -1) gets the load and the unload of a program
 * this task, running on that CPU only, loads and closes: in that order,
 * stamped with that CPU and this task, and no KSYMBOL record it did not
 * ask for.
 */
TEST(cpu_wide_listener)
{
	struct sb_listener *l = calloc(1, sizeof(*l));
	struct prog_info pi;
	cpu_set_t set;
	int cpu = 0, fd, load, unload, err;

	ASSERT_NE(NULL, l);
	CPU_ZERO(&set);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	while (!CPU_ISSET(cpu, &set))
		cpu++;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));

	err = sb_open(l, SB_BPF_PROGS, false, -1, cpu);
	SKIP_IF_NO_PRIV(err, "CPU-wide perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("listener on CPU %d: %s", cpu, strerror(-err));
	fd = load_prog(&pi);
	SKIP_IF_NO_PRIV(fd, "BPF_PROG_LOAD");
	ASSERT_LE(0, fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(-fd));
	close(fd);

	/* other programs may come and go on this CPU: look for ours */
	ASSERT_TRUE(wait_until(has_prog(l, 0, PERF_BPF_EVENT_PROG_UNLOAD,
					pi.id), WAIT_MS))
		TH_LOG("no PROG_UNLOAD record for program %u", pi.id);
	unload = find_prog(l, 0, PERF_BPF_EVENT_PROG_UNLOAD, pi.id);
	load = find_prog(l, 0, PERF_BPF_EVENT_PROG_LOAD, pi.id);
	ASSERT_LE(0, load) TH_LOG("no PROG_LOAD record for program %u", pi.id);
	EXPECT_LT(load, unload);
	EXPECT_EQ(cpu, l->rec[load].sid.cpu);
	EXPECT_EQ(cpu, l->rec[unload].sid.cpu);
	check_sample_id(_metadata, l, &l->rec[load]);
	check_sample_id(_metadata, l, &l->rec[unload]);
	EXPECT_EQ(0, sb_count(l, PERF_RECORD_KSYMBOL))
		TH_LOG("KSYMBOL records on a listener that did not ask");
	sb_close(l);
	free(l);
}

/*
 * A link record is 64 bytes: the 8-byte header and 24 bytes of fields
 * (type, flags, id, tag, link_id, link_type, attach_type), then 32 bytes
 * of sample_id (pid, tid, time, cpu, res, id).
 */
#define LINK_RECORD_SIZE	64

/*
 * A one-page ring, not read while 200 raw_tp links are made and closed:
 * 400 link records of 64 bytes, 25600 bytes for a 4096-byte ring.  The
 * kernel keeps one byte of a ring free to tell full from empty, so the
 * first 63 records fit (4032 bytes) and the other 337 are lost.  The
 * records read are whole and the first ones written; the others are
 * counted by a PERF_RECORD_LOST, written with the next record that fits
 * once the ring has been read (the load of another program).
 */
TEST(overflow)
{
	struct sb_listener *l = calloc(1, sizeof(*l));
	const int cycles = 200;
	struct prog_info pi, last;
	int prog_fd, fd, err, fit, nr_link = 0, nr_last = 0;
	__u32 link_id = 0;

	ASSERT_NE(NULL, l);
	err = sb_open_pages(l, SB_BPF_LINKS, false, 0, -1, 1);
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("one-page listener: %s", strerror(-err));
	prog_fd = prog_load_ret(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL, 0, &pi);
	SKIP_IF_NO_PRIV(prog_fd, "BPF_PROG_LOAD");
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(-prog_fd));
	/* start from an empty ring: forget the program's load */
	sb_drain(l);
	l->nr = 0;
	fit = (l->data_size - 1) / LINK_RECORD_SIZE;

	for (int i = 0; i < cycles; i++) {
		fd = bpf_raw_tracepoint_open("sched_process_exit", prog_fd);
		ASSERT_LE(0, fd) TH_LOG("BPF_RAW_TRACEPOINT_OPEN: %s",
					strerror(-fd));
		close(fd);
	}
	sb_drain(l);
	/* a PERF_RECORD_LOST needs room too: none until a record fits */
	EXPECT_EQ(0, l->lost);
	fd = load_prog(&last);
	ASSERT_LE(0, fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(-fd));
	close(fd);
	ASSERT_TRUE(wait_until(sb_has(l, PERF_RECORD_BPF_EVENT,
				      PERF_BPF_EVENT_PROG_UNLOAD, 0), WAIT_MS))
		TH_LOG("no PROG_UNLOAD record after the overflow");

	EXPECT_EQ(0, l->torn);
	EXPECT_EQ(0, l->other);
	for (int i = 0; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		ASSERT_EQ(PERF_RECORD_BPF_EVENT, r->type);
		EXPECT_EQ(getpid(), (pid_t)r->sid.pid);
		EXPECT_EQ(l->id, r->sid.id);
		if (r->bpf.type != PERF_BPF_EVENT_LINK_ATTACH &&
		    r->bpf.type != PERF_BPF_EVENT_LINK_DETACH) {
			EXPECT_EQ(last.id, r->bpf.id);
			nr_last++;
			continue;
		}
		/* whole: every field is the one written */
		EXPECT_EQ(LINK_RECORD_SIZE - sizeof(struct perf_event_header) -
			  sizeof(r->sid), r->body);
		EXPECT_EQ(pi.id, r->bpf.id);
		EXPECT_EQ(0, memcmp(pi.tag, r->bpf.tag, BPF_TAG_SIZE));
		EXPECT_EQ(BPF_LINK_TYPE_RAW_TRACEPOINT, r->bpf.link_type);
		EXPECT_EQ(BPF_TRACE_RAW_TP, r->bpf.attach_type);
		/* the first ones: attach, detach of that link, attach ... */
		if (nr_link % 2 == 0) {
			EXPECT_EQ(PERF_BPF_EVENT_LINK_ATTACH, r->bpf.type);
			EXPECT_NE(link_id, r->bpf.link_id);
		} else {
			EXPECT_EQ(PERF_BPF_EVENT_LINK_DETACH, r->bpf.type);
			EXPECT_EQ(link_id, r->bpf.link_id);
		}
		link_id = r->bpf.link_id;
		nr_link++;
	}
	EXPECT_EQ(fit, nr_link)
		TH_LOG("%d link records read, %d fit a %llu-byte ring",
		       nr_link, fit, (unsigned long long)l->data_size);
	EXPECT_EQ(2 * cycles - fit, l->lost)
		TH_LOG("%d link records read, %d lost", nr_link, l->lost);
	/* and the load and unload of the last program, whole */
	EXPECT_EQ(2, nr_last);
	close(prog_fd);
	sb_close(l);
	free(l);
}

/* Open attr for this task and close it again: 0, or -errno. */
static int open_result(struct perf_event_attr *attr)
{
	int fd = sys_perf_event_open(attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * attr.bpf_event_ext asks for more of what bpf_event asks for: alone, it
 * is refused as an unknown bit would be.
 */
TEST(ext_without_bpf_event)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_id_all = 1,
		.ksymbol = 1,
		.bpf_event_ext = 1,
	};
	int err;

	err = open_result(&attr);
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	EXPECT_EQ(-EINVAL, err) TH_LOG("bpf_event_ext alone: %s",
				       err ? strerror(-err) : "accepted");

	attr.bpf_event = 1;
	err = open_result(&attr);
	EXPECT_EQ(0, err) TH_LOG("bpf_event and bpf_event_ext: %s",
				 strerror(-err));

	/* the two bits before it stay reserved (defer_* in later kernels) */
	for (int bit = 0; bit < 2; bit++) {
		attr.__reserved_4 = 1 << bit;
		err = open_result(&attr);
		EXPECT_EQ(-EINVAL, err) TH_LOG("reserved bit %d: %s", 38 + bit,
					       err ? strerror(-err) : "accepted");
	}
}

/* The flags word of attr, which follows read_format. */
#define ATTR_FLAGS_OFF	(offsetof(struct perf_event_attr, read_format) + \
			 sizeof(__u64))

static __u64 attr_flags(const struct perf_event_attr *attr)
{
	__u64 word;

	memcpy(&word, (const char *)attr + ATTR_FLAGS_OFF, sizeof(word));
	return word;
}

static void attr_set_flags(struct perf_event_attr *attr, __u64 word)
{
	memcpy((char *)attr + ATTR_FLAGS_OFF, &word, sizeof(word));
}

/*
 * bpf_event_ext is bit 40 of the flags word, whatever a compiler makes of
 * the header's bit-fields: readers that set the word whole rely on it.
 */
TEST(ext_is_bit_40)
{
	static const int around[] = { 38, 39, 41 };
	struct perf_event_attr attr = {};
	int err;

	if (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
		SKIP(return, "bit-fields are laid out from the top bit here");

	attr.bpf_event_ext = 1;
	EXPECT_EQ(1ULL << 40, attr_flags(&attr));
	memset(&attr, 0, sizeof(attr));
	attr.__reserved_4 = 3;
	EXPECT_EQ(3ULL << 38, attr_flags(&attr));

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr_set_flags(&attr, 1ULL << 40);
	attr.bpf_event = 1;
	attr.sample_id_all = 1;
	err = open_result(&attr);
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	EXPECT_EQ(0, err) TH_LOG("bit 40 with bpf_event: %s", strerror(-err));

	/* the two before are reserved, the next one is unknown */
	for (size_t i = 0; i < ARRAY_SIZE(around); i++) {
		int bit = around[i];

		attr_set_flags(&attr, 1ULL << 40 | 1ULL << bit);
		attr.bpf_event = 1;
		attr.sample_id_all = 1;
		err = open_result(&attr);
		EXPECT_EQ(-EINVAL, err) TH_LOG("bit %d: %s", bit,
					       err ? strerror(-err) : "accepted");
	}
}

/*
 * What PROG_UNLOAD says of a program's runs.  A listener with
 * bpf_event_ext gets run_cnt, run_time_ns and recursion_misses after the
 * tag, flagged RUN_STATS, and STATS_ON if run-time stats were on at some
 * time in the program's life; one with bpf_event alone gets Linux 6.12's
 * record.  Runs are BPF_PROG_TEST_RUN repeats, each one run; stats are
 * switched with BPF_ENABLE_STATS, before or after the load.
 */
enum stats_when { STATS_NEVER, STATS_BEFORE_LOAD, STATS_AFTER_LOAD };

FIXTURE(unload_stats) {
	struct sb_listener ext;
	struct sb_listener plain;
	struct prog_info prog;
	int prog_fd;
	int stats_fd;
};

FIXTURE_VARIANT(unload_stats) {
	enum stats_when on;
	int counted;		/* runs while stats are on */
	bool off_before_unload;
	int uncounted;		/* runs once they are off again, or never on */
};

/* counted, then stats off and more runs: only the counted ones */
FIXTURE_VARIANT_ADD(unload_stats, counted) {
	.on = STATS_BEFORE_LOAD, .counted = 1000,
	.off_before_unload = true, .uncounted = 300,
};

/* stats never on: zeros, and no STATS_ON to say they mean nothing */
FIXTURE_VARIANT_ADD(unload_stats, never_on) {
	.on = STATS_NEVER, .uncounted = 300,
};

/* on and off again after the load, no run meanwhile: 0 runs, counted */
FIXTURE_VARIANT_ADD(unload_stats, on_idle) {
	.on = STATS_AFTER_LOAD, .off_before_unload = true, .uncounted = 300,
};

/* on at the unload */
FIXTURE_VARIANT_ADD(unload_stats, on_at_unload) {
	.on = STATS_AFTER_LOAD, .counted = 700,
};

/* on at the unload, never run: 0 runs, counted */
FIXTURE_VARIANT_ADD(unload_stats, on_at_unload_idle) {
	.on = STATS_AFTER_LOAD,
};

/* kernel.bpf_stats_enabled: 0 or 1, -1 if it cannot be read */
static int stats_sysctl(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
	int val = -1;

	if (f) {
		if (fscanf(f, "%d", &val) != 1)
			val = -1;
		fclose(f);
	}
	return val;
}

/* What run_filter() hands the socket filter: an Ethernet frame of zeros */
static char test_pkt[64];

/* Run the socket filter fd n times: 0 or -errno. */
static int run_filter(int fd, int n)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = test_pkt,
		.data_size_in = sizeof(test_pkt),
		.repeat = n,
	);

	if (!n)
		return 0;
	return bpf_prog_test_run_opts(fd, &opts) ? -errno : 0;
}

/* Run-time stats on while *fd is open: 0 or -errno. */
static int stats_on(int *fd)
{
	*fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return *fd < 0 ? -errno : 0;
}

FIXTURE_SETUP(unload_stats)
{
	int err;

	self->prog_fd = -1;
	self->stats_fd = -1;
	self->ext.fd = -1;
	self->plain.fd = -1;
	err = stats_sysctl();
	if (err < 0)
		SKIP(return, "no kernel.bpf_stats_enabled to read");
	if (err)
		SKIP(return, "kernel.bpf_stats_enabled is 1: stats cannot be switched off");
	err = sb_open(&self->ext, SB_BPF_LINKS, false, 0, -1);
	SKIP_IF_NO_PRIV(err, "perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("bpf_event_ext listener: %s", strerror(-err));
	err = sb_open(&self->plain, SB_BPF_PROGS, false, 0, -1);
	ASSERT_EQ(0, err) TH_LOG("bpf_event listener: %s", strerror(-err));
	if (variant->on == STATS_BEFORE_LOAD) {
		err = stats_on(&self->stats_fd);
		SKIP_IF_NO_PRIV(err, "BPF_ENABLE_STATS");
		ASSERT_EQ(0, err) TH_LOG("BPF_ENABLE_STATS: %s", strerror(-err));
	}
	self->prog_fd = load_prog(&self->prog);
	SKIP_IF_NO_PRIV(self->prog_fd, "BPF_PROG_LOAD");
	ASSERT_LE(0, self->prog_fd)
		TH_LOG("BPF_PROG_LOAD: %s", strerror(-self->prog_fd));
}

FIXTURE_TEARDOWN(unload_stats)
{
	if (self->prog_fd >= 0)
		close(self->prog_fd);
	if (self->stats_fd >= 0)
		close(self->stats_fd);
	sb_close(&self->ext);
	sb_close(&self->plain);
}

TEST_F(unload_stats, final_counts)
{
	__u16 flags = PERF_BPF_EVENT_FLAG_RUN_STATS;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct sb_record *r;
	__u32 id = self->prog.id;
	int err, e;

	if (variant->on == STATS_AFTER_LOAD) {
		err = stats_on(&self->stats_fd);
		SKIP_IF_NO_PRIV(err, "BPF_ENABLE_STATS");
		ASSERT_EQ(0, err) TH_LOG("BPF_ENABLE_STATS: %s", strerror(-err));
	}
	if (variant->on != STATS_NEVER)
		flags |= PERF_BPF_EVENT_FLAG_STATS_ON;
	err = run_filter(self->prog_fd, variant->counted);
	ASSERT_EQ(0, err) TH_LOG("BPF_PROG_TEST_RUN: %s", strerror(-err));
	if (variant->off_before_unload) {
		close(self->stats_fd);
		self->stats_fd = -1;
	}
	err = run_filter(self->prog_fd, variant->uncounted);
	ASSERT_EQ(0, err) TH_LOG("BPF_PROG_TEST_RUN: %s", strerror(-err));
	/* what bpf(2) says last: nothing runs the program after this */
	ASSERT_EQ(0, bpf_prog_get_info_by_fd(self->prog_fd, &info, &len));
	ASSERT_EQ(variant->counted, info.run_cnt)
		TH_LOG("stats counted %llu runs, not %d: are they on elsewhere?",
		       (unsigned long long)info.run_cnt, variant->counted);
	close(self->prog_fd);
	self->prog_fd = -1;

	ASSERT_TRUE(wait_until(has_prog(&self->ext, 0,
					PERF_BPF_EVENT_PROG_UNLOAD, id),
			       WAIT_MS))
		TH_LOG("no PROG_UNLOAD of program %u with bpf_event_ext", id);
	ASSERT_TRUE(wait_until(has_prog(&self->plain, 0,
					PERF_BPF_EVENT_PROG_UNLOAD, id),
			       WAIT_MS))
		TH_LOG("no PROG_UNLOAD of program %u with bpf_event", id);
	EXPECT_EQ(0, self->ext.lost);

	e = find_prog(&self->ext, 0, PERF_BPF_EVENT_PROG_UNLOAD, id);
	r = &self->ext.rec[e];
	EXPECT_EQ(SB_BPF_STATS_BODY, r->body);
	EXPECT_EQ(flags, r->bpf.flags);
	EXPECT_EQ(0, memcmp(self->prog.tag, r->bpf.tag, BPF_TAG_SIZE));
	/* the counts the program had when it went, the last bpf(2) read */
	EXPECT_EQ(info.run_cnt, r->bpf.run_cnt);
	EXPECT_EQ(info.run_time_ns, r->bpf.run_time_ns);
	EXPECT_EQ(info.recursion_misses, r->bpf.recursion_misses);
	if (!variant->counted)
		EXPECT_EQ(0, r->bpf.run_time_ns);
	check_sample_id(_metadata, &self->ext, r);

	/* Linux 6.12's record to the listener that did not ask for more */
	e = find_prog(&self->plain, 0, PERF_BPF_EVENT_PROG_UNLOAD, id);
	check_prog(_metadata, &self->plain, &self->plain.rec[e], &self->prog);
}

TEST_HARNESS_MAIN
