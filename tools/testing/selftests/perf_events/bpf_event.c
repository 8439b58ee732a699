// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_RECORD_BPF_EVENT and PERF_RECORD_KSYMBOL side-band records.
 *
 * A dummy software event with bpf_event and ksymbol set is a side-band
 * listener: it never samples, but the kernel writes a record to its ring
 * buffer whenever a BPF program is loaded or unloaded.  These tests load a
 * two-instruction program with bpf(BPF_PROG_LOAD) and check the records
 * against what BPF_OBJ_GET_INFO_BY_FD reports for the same program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

#include "../kselftest_harness.h"

#define RING_PAGES	8		/* data pages, a power of two */
#define MAX_RECORDS	256
#define PROG_NAME	"kst_bpf_event"
#define SB_NAME_MAX	512		/* longest symbol name we keep */

/*
 * The sample_id trailer for sample_type TID | TIME | CPU | IDENTIFIER, in
 * the order the uapi header gives for struct sample_id.
 */
struct sb_sample_id {
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
	__u64 id;
};

/* One record read back from a ring, with the fields the tests look at. */
struct sb_record {
	__u32 type;
	union {
		struct {	/* PERF_RECORD_BPF_EVENT */
			__u16 type;
			__u16 flags;
			__u32 id;
			__u8 tag[BPF_TAG_SIZE];
		} bpf;
		struct {	/* PERF_RECORD_KSYMBOL */
			__u64 addr;
			__u32 len;
			__u16 ksym_type;
			__u16 flags;
			char name[SB_NAME_MAX];
		} ksym;
	};
	struct sb_sample_id sid;
};

struct sb_listener {
	int fd;
	__u64 id;			/* PERF_EVENT_IOC_ID */
	struct perf_event_mmap_page *page;
	char *data;
	__u64 data_size;
	struct sb_record rec[MAX_RECORDS];
	int nr;
	int lost;			/* records the kernel reported as lost */
	int skipped;			/* records that did not fit in rec[] */
};

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid,
			       int cpu, int group_fd, unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, flags);
}

static int sys_bpf(int cmd, union bpf_attr *attr, unsigned int size)
{
	return syscall(__NR_bpf, cmd, attr, size);
}

/* Open a side-band listener for this task (cpu -1) or a whole CPU (pid -1). */
static int sb_open(struct sb_listener *l, bool bpf_event, bool ksymbol,
		   pid_t pid, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER,
		.sample_id_all = 1,
		.bpf_event = bpf_event,
		.ksymbol = ksymbol,
	};
	long page_size = sysconf(_SC_PAGESIZE);

	memset(l, 0, sizeof(*l));
	l->fd = sys_perf_event_open(&attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (l->fd < 0)
		return -errno;
	if (ioctl(l->fd, PERF_EVENT_IOC_ID, &l->id))
		return -errno;
	l->data_size = RING_PAGES * page_size;
	l->page = mmap(NULL, (RING_PAGES + 1) * page_size,
		       PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
	if (l->page == MAP_FAILED)
		return -errno;
	l->data = (char *)l->page + l->page->data_offset;
	l->data_size = l->page->data_size;
	return 0;
}

static void sb_close(struct sb_listener *l)
{
	if (l->page && l->page != MAP_FAILED)
		munmap(l->page, l->data_size + sysconf(_SC_PAGESIZE));
	if (l->fd > 0)
		close(l->fd);
	l->fd = -1;
	l->page = NULL;
}

/* Copy len bytes at ring offset off, following the wrap-around. */
static void ring_copy(struct sb_listener *l, __u64 off, void *dst, size_t len)
{
	size_t pos = off & (l->data_size - 1);
	size_t first = l->data_size - pos;

	if (first > len)
		first = len;
	memcpy(dst, l->data + pos, first);
	memcpy((char *)dst + first, l->data, len - first);
}

static void sb_parse(struct sb_listener *l, const char *buf, size_t size)
{
	const struct perf_event_header *hdr = (const void *)buf;
	struct sb_record *r;

	if (hdr->type == PERF_RECORD_LOST) {
		const __u64 *lost = (const void *)(hdr + 1);

		l->lost += lost[1];
		return;
	}
	if (hdr->type != PERF_RECORD_BPF_EVENT &&
	    hdr->type != PERF_RECORD_KSYMBOL)
		return;
	if (l->nr == MAX_RECORDS) {
		l->skipped++;
		return;
	}
	r = &l->rec[l->nr++];
	memset(r, 0, sizeof(*r));
	r->type = hdr->type;
	if (hdr->type == PERF_RECORD_BPF_EVENT) {
		memcpy(&r->bpf, hdr + 1, sizeof(r->bpf));
	} else {
		const char *p = (const char *)(hdr + 1);
		int name_max = size - sizeof(*hdr) - 16 - sizeof(r->sid);

		memcpy(&r->ksym.addr, p, 8);
		memcpy(&r->ksym.len, p + 8, 4);
		memcpy(&r->ksym.ksym_type, p + 12, 2);
		memcpy(&r->ksym.flags, p + 14, 2);
		if (name_max < 0)
			name_max = 0;
		snprintf(r->ksym.name, sizeof(r->ksym.name), "%.*s",
			 name_max, p + 16);
	}
	memcpy(&r->sid, buf + size - sizeof(r->sid), sizeof(r->sid));
}

/*
 * Consume everything the kernel has written.  The acquire load of
 * data_head orders it before our reads of the records; the release store
 * of data_tail orders those reads before the kernel may reuse the space.
 */
static void sb_drain(struct sb_listener *l)
{
	__u64 head = __atomic_load_n(&l->page->data_head, __ATOMIC_ACQUIRE);
	__u64 tail = l->page->data_tail;
	char buf[sizeof(struct perf_event_header) + 4096];

	while (tail < head) {
		struct perf_event_header hdr;

		ring_copy(l, tail, &hdr, sizeof(hdr));
		if (hdr.size < sizeof(hdr) || hdr.size > sizeof(buf))
			break;
		ring_copy(l, tail, buf, hdr.size);
		sb_parse(l, buf, hdr.size);
		tail += hdr.size;
	}
	__atomic_store_n(&l->page->data_tail, tail, __ATOMIC_RELEASE);
}

/* Find the next record of this kind from index *from on; -1 if none. */
static int sb_find(struct sb_listener *l, int from, __u32 type, __u16 sub)
{
	int i;

	for (i = from; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		if (r->type != type)
			continue;
		if (type == PERF_RECORD_BPF_EVENT && r->bpf.type == sub)
			return i;
		if (type == PERF_RECORD_KSYMBOL &&
		    (r->ksym.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) == sub)
			return i;
	}
	return -1;
}

static int sb_count(struct sb_listener *l, __u32 type)
{
	int i, n = 0;

	for (i = 0; i < l->nr; i++)
		n += l->rec[i].type == type;
	return n;
}

struct prog_info {
	__u32 id;
	__u8 tag[BPF_TAG_SIZE];
	__u64 ksym_addr;
	__u32 ksym_len;
	char ksym_name[SB_NAME_MAX];
};

/* Load "return 0" as a socket filter; fill in what the kernel says of it. */
static int load_prog(struct prog_info *pi)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_info info = {};
	union bpf_attr attr = {};
	__u64 addr = 0;
	__u32 len = 0;
	int fd, i;

	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = ARRAY_SIZE(insns);
	attr.license = (uintptr_t)"GPL";
	memcpy(attr.prog_name, PROG_NAME, sizeof(PROG_NAME));
	fd = sys_bpf(BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;

	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uintptr_t)&addr;
	info.nr_jited_func_lens = 1;
	info.jited_func_lens = (uintptr_t)&len;
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = (uintptr_t)&info;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr))) {
		int err = -errno;

		close(fd);
		return err;
	}
	pi->id = info.id;
	memcpy(pi->tag, info.tag, BPF_TAG_SIZE);
	pi->ksym_addr = addr;
	pi->ksym_len = len;
	/* The kernel names a program's symbol bpf_prog_<tag>_<name>. */
	i = snprintf(pi->ksym_name, sizeof(pi->ksym_name), "bpf_prog_");
	for (int b = 0; b < BPF_TAG_SIZE; b++)
		i += snprintf(pi->ksym_name + i, sizeof(pi->ksym_name) - i,
			      "%02x", info.tag[b]);
	snprintf(pi->ksym_name + i, sizeof(pi->ksym_name) - i, "_%s", PROG_NAME);
	return fd;
}

/*
 * Records are written before the bpf() or close() call returns, in the
 * calling task; still, give a busy machine a moment before giving up.
 */
static void sb_wait(struct sb_listener *l, __u32 type, __u16 sub, int from)
{
	for (int tries = 0; tries < 100; tries++) {
		sb_drain(l);
		if (sb_find(l, from, type, sub) >= 0)
			return;
		usleep(10000);
	}
}

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
	err = sb_open(&self->full, true, true, 0, -1);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "perf_event_open: %s (run as root)", strerror(-err));
	ASSERT_EQ(0, err) TH_LOG("side-band listener: %s", strerror(-err));
	err = sb_open(&self->ksym_only, false, true, 0, -1);
	ASSERT_EQ(0, err) TH_LOG("ksymbol listener: %s", strerror(-err));

	self->prog_fd = load_prog(&self->prog);
	if (self->prog_fd == -EPERM)
		SKIP(return, "BPF_PROG_LOAD: no privileges (run as root)");
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

static void check_sample_id(struct __test_metadata *_metadata,
			    struct sb_listener *l, struct sb_record *r)
{
	EXPECT_EQ(getpid(), (pid_t)r->sid.pid);
	EXPECT_EQ(gettid(), (pid_t)r->sid.tid);
	EXPECT_NE(0, r->sid.time);
	EXPECT_GT(sysconf(_SC_NPROCESSORS_CONF), r->sid.cpu);
	EXPECT_EQ(l->id, r->sid.id);
}

/* Load: one KSYMBOL register record, then one PROG_LOAD, both matching. */
TEST_F(bpf_sb, prog_load)
{
	struct sb_listener *l = &self->full;
	struct sb_record *ks, *ev;
	int k, e;

	sb_wait(l, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_LOAD, 0);
	EXPECT_EQ(0, l->lost);
	e = sb_find(l, 0, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_LOAD);
	ASSERT_LE(0, e) TH_LOG("no PROG_LOAD record");
	ev = &l->rec[e];
	EXPECT_EQ(self->prog.id, ev->bpf.id);
	EXPECT_EQ(0, memcmp(self->prog.tag, ev->bpf.tag, BPF_TAG_SIZE));
	EXPECT_EQ(0, ev->bpf.flags);
	check_sample_id(_metadata, l, ev);
	/* exactly one: the program was loaded once */
	EXPECT_EQ(-1, sb_find(l, e + 1, PERF_RECORD_BPF_EVENT,
			      PERF_BPF_EVENT_PROG_LOAD));

	k = sb_find(l, 0, PERF_RECORD_KSYMBOL, 0);
	ASSERT_LE(0, k) TH_LOG("no KSYMBOL register record");
	ks = &l->rec[k];
	EXPECT_LT(k, e) TH_LOG("KSYMBOL must come before PROG_LOAD");
	EXPECT_EQ(PERF_RECORD_KSYMBOL_TYPE_BPF, ks->ksym.ksym_type);
	EXPECT_EQ(self->prog.ksym_addr, ks->ksym.addr);
	EXPECT_EQ(self->prog.ksym_len, ks->ksym.len);
	EXPECT_STREQ(self->prog.ksym_name, ks->ksym.name);
	check_sample_id(_metadata, l, ks);
	EXPECT_LE(ks->sid.time, ev->sid.time);
}

/* Last close: KSYMBOL unregister and PROG_UNLOAD for the same program. */
TEST_F(bpf_sb, prog_unload)
{
	struct sb_listener *l = &self->full;
	struct sb_record *ks, *ev;
	int from, k, e;

	sb_wait(l, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_LOAD, 0);
	from = l->nr;
	ASSERT_EQ(0, close(self->prog_fd));
	self->prog_fd = -1;
	sb_wait(l, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_UNLOAD, from);
	EXPECT_EQ(0, l->lost);

	e = sb_find(l, from, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_UNLOAD);
	ASSERT_LE(0, e) TH_LOG("no PROG_UNLOAD record after close");
	ev = &l->rec[e];
	EXPECT_EQ(self->prog.id, ev->bpf.id);
	EXPECT_EQ(0, memcmp(self->prog.tag, ev->bpf.tag, BPF_TAG_SIZE));
	EXPECT_EQ(-1, sb_find(l, e + 1, PERF_RECORD_BPF_EVENT,
			      PERF_BPF_EVENT_PROG_UNLOAD));

	k = sb_find(l, from, PERF_RECORD_KSYMBOL,
		    PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER);
	ASSERT_LE(0, k) TH_LOG("no KSYMBOL unregister record after close");
	ks = &l->rec[k];
	EXPECT_EQ(PERF_RECORD_KSYMBOL_TYPE_BPF, ks->ksym.ksym_type);
	EXPECT_EQ(self->prog.ksym_addr, ks->ksym.addr);
	EXPECT_EQ(self->prog.ksym_len, ks->ksym.len);
	EXPECT_STREQ(self->prog.ksym_name, ks->ksym.name);
	/* unload happens in the closing task */
	check_sample_id(_metadata, l, ev);
}

/* Without attr.bpf_event there is no BPF_EVENT record, KSYMBOL still comes. */
TEST_F(bpf_sb, no_bpf_event_without_flag)
{
	struct sb_listener *l = &self->ksym_only;

	ASSERT_EQ(0, close(self->prog_fd));
	self->prog_fd = -1;
	sb_wait(l, PERF_RECORD_KSYMBOL, PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, 0);
	/* the listener was live: it saw the symbol come and go */
	EXPECT_LE(0, sb_find(l, 0, PERF_RECORD_KSYMBOL, 0));
	EXPECT_LE(0, sb_find(l, 0, PERF_RECORD_KSYMBOL,
			     PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER));
	EXPECT_EQ(0, sb_count(l, PERF_RECORD_BPF_EVENT));
	/* ... while the listener that asked for them got both */
	sb_drain(&self->full);
	EXPECT_EQ(2, sb_count(&self->full, PERF_RECORD_BPF_EVENT));
}

/* A CPU-wide listener gets the load on the CPU it watches, stamped so. */
TEST(cpu_wide_listener)
{
	struct sb_listener *l = calloc(1, sizeof(*l));
	struct prog_info pi;
	cpu_set_t set;
	int cpu = 0, fd, e, err;

	ASSERT_NE(NULL, l);
	CPU_ZERO(&set);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	while (!CPU_ISSET(cpu, &set))
		cpu++;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));

	err = sb_open(l, true, false, -1, cpu);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "CPU-wide perf_event_open: %s", strerror(-err));
	ASSERT_EQ(0, err);
	fd = load_prog(&pi);
	ASSERT_LE(0, fd);
	close(fd);
	sb_wait(l, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_UNLOAD, 0);

	/* other programs may come and go on this CPU: look for ours */
	for (e = 0; e < l->nr; e++)
		if (l->rec[e].type == PERF_RECORD_BPF_EVENT &&
		    l->rec[e].bpf.id == pi.id)
			break;
	ASSERT_LT(e, l->nr) TH_LOG("no record for program %u", pi.id);
	EXPECT_EQ(PERF_BPF_EVENT_PROG_LOAD, l->rec[e].bpf.type);
	EXPECT_EQ(cpu, l->rec[e].sid.cpu);
	EXPECT_EQ(getpid(), (pid_t)l->rec[e].sid.pid);
	EXPECT_EQ(0, sb_count(l, PERF_RECORD_KSYMBOL))
		TH_LOG("KSYMBOL records on a listener that did not ask");
	sb_close(l);
	free(l);
}

TEST_HARNESS_MAIN
