// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_RECORD_BPF_EVENT and PERF_RECORD_KSYMBOL side-band records.
 *
 * A dummy software event with bpf_event and ksymbol set is a side-band
 * listener: it never samples, but the kernel writes a record to its ring
 * buffer whenever a BPF program is loaded or unloaded, and whenever a
 * bpf_link is attached or detached.  These tests load small programs with
 * bpf(BPF_PROG_LOAD), attach them through links of several types, and
 * check the records against what BPF_OBJ_GET_INFO_BY_FD reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <stddef.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/btf.h>
#include <linux/if_link.h>
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
			/* LINK_ATTACH and LINK_DETACH only */
			__u32 link_id;
			__u16 link_type;
			__u16 attach_type;
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
	size_t body;			/* bytes between header and sample_id */
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
	int other;			/* records of other types */
	int torn;			/* impossible headers met */
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

/* Map the ring of the event l->fd, with pages data pages (a power of two). */
static int ring_map(struct sb_listener *l, int pages)
{
	long page_size = sysconf(_SC_PAGESIZE);

	if (ioctl(l->fd, PERF_EVENT_IOC_ID, &l->id))
		return -errno;
	l->page = mmap(NULL, (pages + 1) * page_size,
		       PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
	if (l->page == MAP_FAILED) {
		l->page = NULL;
		return -errno;
	}
	l->data = (char *)l->page + l->page->data_offset;
	l->data_size = l->page->data_size;
	return 0;
}

/*
 * Open a side-band listener with a ring of pages data pages (a power of
 * two), for this task (cpu -1) or a whole CPU (pid -1).
 */
static int sb_open_pages(struct sb_listener *l, bool bpf_event, bool ksymbol,
			 pid_t pid, int cpu, int pages)
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

	memset(l, 0, sizeof(*l));
	l->fd = sys_perf_event_open(&attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (l->fd < 0)
		return -errno;
	return ring_map(l, pages);
}

static int sb_open(struct sb_listener *l, bool bpf_event, bool ksymbol,
		   pid_t pid, int cpu)
{
	return sb_open_pages(l, bpf_event, ksymbol, pid, cpu, RING_PAGES);
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
	    hdr->type != PERF_RECORD_KSYMBOL) {
		l->other++;
		return;
	}
	if (l->nr == MAX_RECORDS) {
		l->skipped++;
		return;
	}
	r = &l->rec[l->nr++];
	memset(r, 0, sizeof(*r));
	r->type = hdr->type;
	if (hdr->type == PERF_RECORD_BPF_EVENT) {
		size_t body = size - sizeof(*hdr) - sizeof(r->sid);

		memcpy(&r->bpf, hdr + 1,
		       body < sizeof(r->bpf) ? body : sizeof(r->bpf));
		r->body = body;
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
		if (hdr.size < sizeof(hdr) || hdr.size > sizeof(buf) ||
		    hdr.size % 8) {
			l->torn++;
			break;
		}
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

/* What to load: "r0 = ret; exit" as a program of this type. */
struct prog_spec {
	__u32 prog_type;
	__u32 attach_type;		/* expected_attach_type */
	__u32 attach_btf_id;		/* for tracing programs */
	__s32 ret;
};

static const struct prog_spec socket_filter = {
	.prog_type = BPF_PROG_TYPE_SOCKET_FILTER,
};

/* Load a program; fill in what the kernel says of it. */
static int load_spec(const struct prog_spec *spec, struct prog_info *pi)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = spec->ret },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_info info = {};
	union bpf_attr attr = {};
	__u64 addr = 0;
	__u32 len = 0;
	int fd, i;

	attr.prog_type = spec->prog_type;
	attr.expected_attach_type = spec->attach_type;
	attr.attach_btf_id = spec->attach_btf_id;
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

static int load_prog(struct prog_info *pi)
{
	return load_spec(&socket_filter, pi);
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

/*
 * bpf_link records: PERF_BPF_EVENT_LINK_ATTACH and PERF_BPF_EVENT_LINK_DETACH.
 */

/* The BTF id of kernel function name, from /sys/kernel/btf/vmlinux; 0 if none. */
static __u32 btf_find_func(const char *name)
{
	const struct btf_header *hdr;
	const char *types, *end, *strs;
	__u32 id = 1, found = 0;
	char *buf = NULL;
	size_t size = 0;
	ssize_t n;
	int fd;

	fd = open("/sys/kernel/btf/vmlinux", O_RDONLY);
	if (fd < 0)
		return 0;
	do {
		char *bigger = realloc(buf, size + 65536);

		if (!bigger)
			goto out;
		buf = bigger;
		n = read(fd, buf + size, 65536);
		if (n > 0)
			size += n;
	} while (n > 0);
	hdr = (const void *)buf;
	if (size < sizeof(*hdr) || hdr->magic != BTF_MAGIC)
		goto out;
	types = buf + hdr->hdr_len + hdr->type_off;
	end = types + hdr->type_len;
	strs = buf + hdr->hdr_len + hdr->str_off;
	while (types < end) {
		const struct btf_type *t = (const void *)types;
		__u32 vlen = BTF_INFO_VLEN(t->info);

		if (BTF_INFO_KIND(t->info) == BTF_KIND_FUNC &&
		    !strcmp(strs + t->name_off, name)) {
			found = id;
			break;
		}
		types += sizeof(*t);
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_INT:
			types += sizeof(__u32);
			break;
		case BTF_KIND_ARRAY:
			types += sizeof(struct btf_array);
			break;
		case BTF_KIND_STRUCT:
		case BTF_KIND_UNION:
			types += vlen * sizeof(struct btf_member);
			break;
		case BTF_KIND_ENUM:
			types += vlen * sizeof(struct btf_enum);
			break;
		case BTF_KIND_ENUM64:
			types += vlen * sizeof(struct btf_enum64);
			break;
		case BTF_KIND_FUNC_PROTO:
			types += vlen * sizeof(struct btf_param);
			break;
		case BTF_KIND_VAR:
			types += sizeof(struct btf_var);
			break;
		case BTF_KIND_DATASEC:
			types += vlen * sizeof(struct btf_var_secinfo);
			break;
		case BTF_KIND_DECL_TAG:
			types += sizeof(struct btf_decl_tag);
			break;
		default:	/* no data after struct btf_type */
			break;
		}
		id++;
	}
out:
	free(buf);
	close(fd);
	return found;
}

struct link_target {
	int fd;				/* perf event or cgroup, if any */
	char cgroup[64];		/* cgroup directory we made */
};

static int link_create(int prog_fd, int target_fd, __u32 attach_type)
{
	union bpf_attr attr = {};

	attr.link_create.prog_fd = prog_fd;
	attr.link_create.target_fd = target_fd;
	attr.link_create.attach_type = attach_type;
	return sys_bpf(BPF_LINK_CREATE, &attr, sizeof(attr));
}

static int attach_raw_tp(struct link_target *t, int prog_fd)
{
	union bpf_attr attr = {};

	attr.raw_tracepoint.name = (uintptr_t)"sched_process_exit";
	attr.raw_tracepoint.prog_fd = prog_fd;
	return sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &attr, sizeof(attr));
}

static int attach_perf_event(struct link_target *t, int prog_fd)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000,
	};

	t->fd = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (t->fd < 0)
		return -1;
	return link_create(prog_fd, t->fd, BPF_PERF_EVENT);
}

static int attach_fentry(struct link_target *t, int prog_fd)
{
	return link_create(prog_fd, 0, BPF_TRACE_FENTRY);
}

static int attach_cgroup(struct link_target *t, int prog_fd)
{
	snprintf(t->cgroup, sizeof(t->cgroup), "/sys/fs/cgroup/kst_bpf_event_%d",
		 getpid());
	if (mkdir(t->cgroup, 0755) && errno != EEXIST)
		return -1;
	t->fd = open(t->cgroup, O_RDONLY | O_DIRECTORY);
	if (t->fd < 0)
		return -1;
	return link_create(prog_fd, t->fd, BPF_CGROUP_INET_EGRESS);
}

static void target_release(struct link_target *t)
{
	if (t->fd > 0)
		close(t->fd);
	t->fd = -1;
	if (t->cgroup[0])
		rmdir(t->cgroup);
	t->cgroup[0] = 0;
}

static int link_get_info(int link_fd, struct bpf_link_info *info)
{
	union bpf_attr attr = {};

	memset(info, 0, sizeof(*info));
	attr.info.bpf_fd = link_fd;
	attr.info.info_len = sizeof(*info);
	attr.info.info = (uintptr_t)info;
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr));
}

static int link_detach(int link_fd)
{
	union bpf_attr attr = {};

	attr.link_detach.link_fd = link_fd;
	return sys_bpf(BPF_LINK_DETACH, &attr, sizeof(attr));
}

/* Index of the next BPF_EVENT record of this type for link_id; -1 if none. */
static int sb_find_link(struct sb_listener *l, int from, __u16 type,
			__u32 link_id)
{
	for (int i = from; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		if (r->type == PERF_RECORD_BPF_EVENT && r->bpf.type == type &&
		    r->bpf.link_id == link_id)
			return i;
	}
	return -1;
}

static int sb_count_link(struct sb_listener *l, __u16 type, __u32 link_id)
{
	int n = 0;

	for (int i = sb_find_link(l, 0, type, link_id); i >= 0;
	     i = sb_find_link(l, i + 1, type, link_id))
		n++;
	return n;
}

/* Wait for a record of this type for link_id, as sb_wait() does. */
static void sb_wait_link(struct sb_listener *l, __u16 type, __u32 link_id)
{
	for (int tries = 0; tries < 300; tries++) {
		sb_drain(l);
		if (sb_find_link(l, 0, type, link_id) >= 0)
			return;
		usleep(10000);
	}
}

/*
 * Listeners on every CPU, for records written outside the test's own task
 * (kworkers, RCU callbacks).  Records on different CPUs are ordered by
 * their sample_id time.
 */
struct sb_cpus {
	int nr;
	struct sb_listener *l;
};

static int sb_cpus_open(struct sb_cpus *c)
{
	int err;

	c->nr = sysconf(_SC_NPROCESSORS_CONF);
	c->l = calloc(c->nr, sizeof(*c->l));
	if (!c->l)
		return -ENOMEM;
	for (int i = 0; i < c->nr; i++) {
		err = sb_open(&c->l[i], true, false, -1, i);
		if (err == -ENODEV || err == -EINVAL)	/* offline CPU */
			c->l[i].fd = -1;
		else if (err)
			return err;
	}
	return 0;
}

static void sb_cpus_close(struct sb_cpus *c)
{
	for (int i = 0; i < c->nr; i++)
		if (c->l[i].fd >= 0)
			sb_close(&c->l[i]);
	free(c->l);
	c->l = NULL;
}

static void sb_cpus_drain(struct sb_cpus *c)
{
	for (int i = 0; i < c->nr; i++)
		if (c->l[i].fd >= 0)
			sb_drain(&c->l[i]);
}

static int sb_cpus_lost(struct sb_cpus *c)
{
	int lost = 0;

	for (int i = 0; i < c->nr; i++)
		lost += c->l[i].lost;
	return lost;
}

/*
 * The BPF_EVENT records of this type whose program id (and link id, if
 * not 0) match, over all CPUs: how many, and the first one in *first.
 */
static int sb_cpus_find(struct sb_cpus *c, __u16 type, __u32 prog_id,
			__u32 link_id, struct sb_record **first)
{
	int n = 0;

	*first = NULL;
	for (int i = 0; i < c->nr; i++) {
		for (int j = 0; j < c->l[i].nr; j++) {
			struct sb_record *r = &c->l[i].rec[j];

			if (r->type != PERF_RECORD_BPF_EVENT || r->bpf.type != type ||
			    r->bpf.id != prog_id ||
			    (link_id && r->bpf.link_id != link_id))
				continue;
			if (!*first || r->sid.time < (*first)->sid.time)
				*first = r;
			n++;
		}
	}
	return n;
}

/*
 * Whether record a may come before record b: on one CPU's ring the order
 * is exact; across CPUs only time tells, and clocks can tie.
 */
static bool sb_cpus_before(struct sb_cpus *c, const struct sb_record *a,
			   const struct sb_record *b)
{
	for (int i = 0; i < c->nr; i++) {
		const struct sb_record *first = c->l[i].rec;
		const struct sb_record *end = first + c->l[i].nr;

		if (a >= first && a < end && b >= first && b < end)
			return a < b;
	}
	return a->sid.time <= b->sid.time;
}

/* Wait up to about 5 s for at least one such record. */
static int sb_cpus_wait(struct sb_cpus *c, __u16 type, __u32 prog_id,
			__u32 link_id, struct sb_record **first)
{
	int n = 0;

	for (int tries = 0; tries < 500 && !n; tries++) {
		sb_cpus_drain(c);
		n = sb_cpus_find(c, type, prog_id, link_id, first);
		if (!n)
			usleep(10000);
	}
	return n;
}

FIXTURE(bpf_link) {
	struct sb_listener sb;
	struct sb_listener ksym_only;
	struct link_target target;
	struct prog_spec spec;
	struct prog_info prog;
	struct bpf_link_info info;
	int prog_fd;
	int link_fd;
};

FIXTURE_VARIANT(bpf_link) {
	struct prog_spec spec;
	const char *btf_func;		/* fentry target, resolved at run time */
	int (*attach)(struct link_target *t, int prog_fd);
	__u32 link_type;
	__u32 attach_type;		/* the records': where the link is */
	bool can_detach;		/* BPF_LINK_DETACH supported */
};

FIXTURE_VARIANT_ADD(bpf_link, raw_tp) {
	.spec = { .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT },
	.attach = attach_raw_tp,
	.link_type = BPF_LINK_TYPE_RAW_TRACEPOINT,
	.attach_type = BPF_TRACE_RAW_TP,
};

FIXTURE_VARIANT_ADD(bpf_link, perf_event) {
	.spec = { .prog_type = BPF_PROG_TYPE_PERF_EVENT },
	.attach = attach_perf_event,
	.link_type = BPF_LINK_TYPE_PERF_EVENT,
	.attach_type = BPF_PERF_EVENT,
};

FIXTURE_VARIANT_ADD(bpf_link, fentry) {
	.spec = { .prog_type = BPF_PROG_TYPE_TRACING,
		  .attach_type = BPF_TRACE_FENTRY },
	.btf_func = "bpf_fentry_test1",
	.attach = attach_fentry,
	.link_type = BPF_LINK_TYPE_TRACING,
	.attach_type = BPF_TRACE_FENTRY,
};

FIXTURE_VARIANT_ADD(bpf_link, cgroup) {
	.spec = { .prog_type = BPF_PROG_TYPE_CGROUP_SKB,
		  .attach_type = BPF_CGROUP_INET_EGRESS, .ret = 1 },
	.attach = attach_cgroup,
	.link_type = BPF_LINK_TYPE_CGROUP,
	.attach_type = BPF_CGROUP_INET_EGRESS,
	.can_detach = true,
};

/*
 * Loaded with expected_attach_type 0 (BPF_CGROUP_INET_INGRESS), as a
 * cgroup_skb program may be, and linked at egress: the records say egress.
 */
FIXTURE_VARIANT_ADD(bpf_link, cgroup_prog_attach_type_0) {
	.spec = { .prog_type = BPF_PROG_TYPE_CGROUP_SKB, .ret = 1 },
	.attach = attach_cgroup,
	.link_type = BPF_LINK_TYPE_CGROUP,
	.attach_type = BPF_CGROUP_INET_EGRESS,
	.can_detach = true,
};

FIXTURE_SETUP(bpf_link)
{
	int err;

	self->prog_fd = -1;
	self->link_fd = -1;
	self->target.fd = -1;
	err = sb_open(&self->sb, true, false, 0, -1);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "perf_event_open: %s (run as root)", strerror(-err));
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, sb_open(&self->ksym_only, false, true, 0, -1));

	self->spec = variant->spec;
	if (variant->btf_func) {
		self->spec.attach_btf_id = btf_find_func(variant->btf_func);
		if (!self->spec.attach_btf_id)
			SKIP(return, "no BTF for %s (CONFIG_DEBUG_INFO_BTF?)",
			     variant->btf_func);
	}
	if (variant->attach == attach_cgroup &&
	    access("/sys/fs/cgroup/cgroup.subtree_control", F_OK))
		SKIP(return, "cgroup2 is not mounted at /sys/fs/cgroup");

	self->prog_fd = load_spec(&self->spec, &self->prog);
	if (self->prog_fd == -EPERM)
		SKIP(return, "BPF_PROG_LOAD: no privileges (run as root)");
	ASSERT_LE(0, self->prog_fd)
		TH_LOG("BPF_PROG_LOAD: %s", strerror(-self->prog_fd));

	self->link_fd = variant->attach(&self->target, self->prog_fd);
	ASSERT_LE(0, self->link_fd) TH_LOG("attach: %s", strerror(errno));
	ASSERT_EQ(0, link_get_info(self->link_fd, &self->info));
	ASSERT_EQ(variant->link_type, self->info.type);
	ASSERT_EQ(self->prog.id, self->info.prog_id);
}

FIXTURE_TEARDOWN(bpf_link)
{
	if (self->link_fd >= 0)
		close(self->link_fd);
	if (self->prog_fd >= 0)
		close(self->prog_fd);
	target_release(&self->target);
	sb_close(&self->sb);
	sb_close(&self->ksym_only);
}

/* A link record, against what bpf(2) and the listener say it should be. */
static void check_link_record(struct __test_metadata *_metadata,
			      struct sb_listener *l, struct sb_record *r,
			      const struct prog_info *pi,
			      const struct bpf_link_info *info, __u32 attach_type)
{
	EXPECT_EQ(sizeof(r->bpf), r->body);
	EXPECT_EQ(pi->id, r->bpf.id);
	EXPECT_EQ(0, memcmp(pi->tag, r->bpf.tag, BPF_TAG_SIZE));
	EXPECT_EQ(info->id, r->bpf.link_id);
	EXPECT_EQ(info->type, r->bpf.link_type);
	EXPECT_EQ(attach_type, r->bpf.attach_type)
		TH_LOG("%s: attach_type %u, not %u", r->bpf.type ==
		       PERF_BPF_EVENT_LINK_ATTACH ? "LINK_ATTACH" : "LINK_DETACH",
		       r->bpf.attach_type, attach_type);
	EXPECT_EQ(0, r->bpf.flags);
	/* written in this task, whose listener it is */
	check_sample_id(_metadata, l, r);
}

/*
 * One LINK_ATTACH when the link is made; one LINK_DETACH when BPF_LINK_DETACH
 * detaches it (for link types that can be detached) or when its last fd is
 * closed, never a second one.
 */
TEST_F(bpf_link, attach_detach_once)
{
	struct sb_listener *l = &self->sb;
	__u32 link_id = self->info.id;
	int a, d;

	sb_wait_link(l, PERF_BPF_EVENT_LINK_ATTACH, link_id);
	a = sb_find_link(l, 0, PERF_BPF_EVENT_LINK_ATTACH, link_id);
	ASSERT_LE(0, a) TH_LOG("no LINK_ATTACH record for link %u", link_id);
	check_link_record(_metadata, l, &l->rec[a], &self->prog, &self->info,
			  variant->attach_type);
	EXPECT_EQ(0, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, link_id));

	if (variant->can_detach) {
		ASSERT_EQ(0, link_detach(self->link_fd))
			TH_LOG("BPF_LINK_DETACH: %s", strerror(errno));
		sb_wait_link(l, PERF_BPF_EVENT_LINK_DETACH, link_id);
		EXPECT_EQ(1, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, link_id));
		/* a second BPF_LINK_DETACH detaches nothing more */
		link_detach(self->link_fd);
	} else {
		EXPECT_EQ(-1, link_detach(self->link_fd));
		EXPECT_EQ(EOPNOTSUPP, errno);
	}
	sb_drain(l);
	EXPECT_EQ(variant->can_detach,
		  sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, link_id));

	ASSERT_EQ(0, close(self->link_fd));
	self->link_fd = -1;
	sb_wait_link(l, PERF_BPF_EVENT_LINK_DETACH, link_id);
	usleep(100000);
	sb_drain(l);
	EXPECT_EQ(1, sb_count_link(l, PERF_BPF_EVENT_LINK_ATTACH, link_id));
	EXPECT_EQ(1, sb_count_link(l, PERF_BPF_EVENT_LINK_DETACH, link_id));
	d = sb_find_link(l, 0, PERF_BPF_EVENT_LINK_DETACH, link_id);
	ASSERT_LE(0, d);
	check_link_record(_metadata, l, &l->rec[d], &self->prog, &self->info,
			  variant->attach_type);
	EXPECT_EQ(0, l->lost);

	/* a listener without bpf_event saw none of it */
	sb_drain(&self->ksym_only);
	EXPECT_EQ(0, sb_count(&self->ksym_only, PERF_RECORD_BPF_EVENT));
}

/*
 * PROG_LOAD, LINK_ATTACH, LINK_DETACH, PROG_UNLOAD: in this order, exactly
 * on one CPU's ring, by the common clock across CPUs.  The unload can come
 * from an RCU callback or a kworker (the link frees its program last),
 * hence listeners on every CPU.
 */
TEST_F(bpf_link, order)
{
	struct sb_record *load, *attach, *detach, *unload;
	struct link_target t = { .fd = -1 };
	struct bpf_link_info info;
	struct sb_cpus c;
	struct prog_info pi;
	int prog_fd, link_fd, err;

	err = sb_cpus_open(&c);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "CPU-wide perf_event_open: %s", strerror(-err));
	ASSERT_EQ(0, err);
	prog_fd = load_spec(&self->spec, &pi);
	ASSERT_LE(0, prog_fd);
	link_fd = variant->attach(&t, prog_fd);
	ASSERT_LE(0, link_fd);
	ASSERT_EQ(0, link_get_info(link_fd, &info));
	if (variant->can_detach)
		ASSERT_EQ(0, link_detach(link_fd));
	close(link_fd);
	close(prog_fd);
	target_release(&t);

	ASSERT_EQ(1, sb_cpus_wait(&c, PERF_BPF_EVENT_PROG_UNLOAD, pi.id, 0, &unload));
	ASSERT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_PROG_LOAD, pi.id, 0, &load));
	ASSERT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_LINK_ATTACH, pi.id, info.id,
				  &attach));
	ASSERT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_LINK_DETACH, pi.id, info.id,
				  &detach));
	EXPECT_TRUE(sb_cpus_before(&c, load, attach));
	EXPECT_TRUE(sb_cpus_before(&c, attach, detach));
	EXPECT_TRUE(sb_cpus_before(&c, detach, unload));
	EXPECT_EQ(0, sb_cpus_lost(&c));
	sb_cpus_close(&c);
}

/*
 * Removing the cgroup detaches its links: one LINK_DETACH, written by the
 * kworker that releases the cgroup's BPF state, and none at close.
 */
TEST(cgroup_removed)
{
	struct prog_spec spec = {
		.prog_type = BPF_PROG_TYPE_CGROUP_SKB,
		.attach_type = BPF_CGROUP_INET_EGRESS,
		.ret = 1,
	};
	struct link_target t = { .fd = -1 };
	struct bpf_link_info info;
	struct sb_record *r;
	struct sb_cpus c;
	struct prog_info pi;
	int prog_fd, link_fd, err;

	if (access("/sys/fs/cgroup/cgroup.subtree_control", F_OK))
		SKIP(return, "cgroup2 is not mounted at /sys/fs/cgroup");
	err = sb_cpus_open(&c);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "CPU-wide perf_event_open: %s", strerror(-err));
	ASSERT_EQ(0, err);
	prog_fd = load_spec(&spec, &pi);
	ASSERT_LE(0, prog_fd);
	link_fd = attach_cgroup(&t, prog_fd);
	ASSERT_LE(0, link_fd);
	ASSERT_EQ(0, link_get_info(link_fd, &info));
	close(t.fd);
	t.fd = -1;
	ASSERT_EQ(0, rmdir(t.cgroup));
	t.cgroup[0] = 0;

	EXPECT_EQ(1, sb_cpus_wait(&c, PERF_BPF_EVENT_LINK_DETACH, pi.id, info.id, &r))
		TH_LOG("LINK_DETACH records after rmdir");

	close(link_fd);
	close(prog_fd);
	/* the program is unloaded after the link is gone */
	sb_cpus_wait(&c, PERF_BPF_EVENT_PROG_UNLOAD, pi.id, 0, &r);
	EXPECT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_LINK_DETACH, pi.id, info.id, &r))
		TH_LOG("LINK_DETACH records after the last close");
	EXPECT_EQ(0, sb_cpus_lost(&c));
	sb_cpus_close(&c);
}

/*
 * Links whose attach point goes away with a network namespace: generic XDP
 * and tcx on the namespace's loopback device, and a flow dissector link on
 * the namespace itself.  Each gets its LINK_DETACH when the namespace is
 * torn down, while user space still holds the link, and none at the close.
 */
TEST(netns_removed)
{
	static const struct {
		const char *name;
		struct prog_spec spec;
		__u32 flags;
		bool on_netns;		/* target is the netns, not lo */
	} kinds[] = {
		{ "xdp", { BPF_PROG_TYPE_XDP, BPF_XDP, 0, 2 /* XDP_PASS */ },
		  XDP_FLAGS_SKB_MODE },
		{ "tcx", { BPF_PROG_TYPE_SCHED_CLS, BPF_TCX_INGRESS, 0, 0 } },
		{ "flow_dissector", { BPF_PROG_TYPE_FLOW_DISSECTOR,
				      BPF_FLOW_DISSECTOR, 0, 0 }, 0, true },
	};
	int prog_fd[ARRAY_SIZE(kinds)], link_fd[ARRAY_SIZE(kinds)];
	struct prog_info pi[ARRAY_SIZE(kinds)];
	__u32 link_id[ARRAY_SIZE(kinds)];
	int orig_ns, new_ns, lo, err;
	struct bpf_link_info info;
	struct sb_record *r;
	struct sb_cpus c;

	orig_ns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, orig_ns);
	err = sb_cpus_open(&c);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "CPU-wide perf_event_open: %s", strerror(-err));
	ASSERT_EQ(0, err);
	if (unshare(CLONE_NEWNET))
		SKIP(return, "unshare(CLONE_NEWNET): %s", strerror(errno));
	new_ns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, new_ns);
	lo = if_nametoindex("lo");
	ASSERT_LT(0, lo);

	for (int i = 0; i < ARRAY_SIZE(kinds); i++) {
		union bpf_attr attr = {};

		prog_fd[i] = load_spec(&kinds[i].spec, &pi[i]);
		ASSERT_LE(0, prog_fd[i]) TH_LOG("loading the %s program: %s",
						kinds[i].name, strerror(-prog_fd[i]));
		attr.link_create.prog_fd = prog_fd[i];
		if (kinds[i].on_netns)
			attr.link_create.target_fd = new_ns;
		else
			attr.link_create.target_ifindex = lo;
		attr.link_create.attach_type = kinds[i].spec.attach_type;
		attr.link_create.flags = kinds[i].flags;
		link_fd[i] = sys_bpf(BPF_LINK_CREATE, &attr, sizeof(attr));
		ASSERT_LE(0, link_fd[i]) TH_LOG("%s link: %s", kinds[i].name,
						strerror(errno));
		ASSERT_EQ(0, link_get_info(link_fd[i], &info));
		link_id[i] = info.id;
	}

	/* Leave the namespace and drop the last reference to it. */
	ASSERT_EQ(0, setns(orig_ns, CLONE_NEWNET));
	close(new_ns);
	close(orig_ns);

	/* namespace cleanup runs from a workqueue: give it up to 15 s */
	for (int tries = 0, found = 0; tries < 1500; tries++, found = 0) {
		sb_cpus_drain(&c);
		for (int i = 0; i < ARRAY_SIZE(kinds); i++)
			found += sb_cpus_find(&c, PERF_BPF_EVENT_LINK_DETACH,
					      pi[i].id, link_id[i], &r) > 0;
		if (found == ARRAY_SIZE(kinds))
			break;
		usleep(10000);
	}
	for (int i = 0; i < ARRAY_SIZE(kinds); i++) {
		EXPECT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_LINK_DETACH,
					  pi[i].id, link_id[i], &r))
			TH_LOG("%s: LINK_DETACH records after the netns went away",
			       kinds[i].name);
		EXPECT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_LINK_ATTACH,
					  pi[i].id, link_id[i], &r))
			TH_LOG("%s: LINK_ATTACH records", kinds[i].name);
		if (r)
			EXPECT_EQ(kinds[i].spec.attach_type, r->bpf.attach_type)
				TH_LOG("%s: attach_type", kinds[i].name);
		/* the record is not early: the kernel shows the link detached */
		ASSERT_EQ(0, link_get_info(link_fd[i], &info));
		EXPECT_EQ(0, kinds[i].on_netns ? info.netns.netns_ino :
			     info.xdp.ifindex)	/* tcx.ifindex is the same */
			TH_LOG("%s: attached according to LINK_GET_INFO",
			       kinds[i].name);
	}

	for (int i = 0; i < ARRAY_SIZE(kinds); i++) {
		close(link_fd[i]);
		close(prog_fd[i]);
		sb_cpus_wait(&c, PERF_BPF_EVENT_PROG_UNLOAD, pi[i].id, 0, &r);
		EXPECT_EQ(1, sb_cpus_find(&c, PERF_BPF_EVENT_LINK_DETACH,
					  pi[i].id, link_id[i], &r))
			TH_LOG("%s: LINK_DETACH records after the last close",
			       kinds[i].name);
	}
	EXPECT_EQ(0, sb_cpus_lost(&c));
	sb_cpus_close(&c);
}

/*
 * A one-page ring and many more link records than fit: each record is
 * either read whole or counted in PERF_RECORD_LOST, never torn.
 */
TEST(overflow)
{
	struct sb_listener *l = calloc(1, sizeof(*l));
	struct prog_spec spec = { .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT };
	struct link_target t = { .fd = -1 };
	const int cycles = 200;
	struct prog_info pi, last;
	int prog_fd, fd, i, err, nr_bpf = 0;

	ASSERT_NE(NULL, l);
	err = sb_open_pages(l, true, false, 0, -1, 1);
	if (err == -EACCES || err == -EPERM)
		SKIP(return, "perf_event_open: %s (run as root)", strerror(-err));
	ASSERT_EQ(0, err);
	prog_fd = load_spec(&spec, &pi);
	ASSERT_LE(0, prog_fd);
	sb_drain(l);
	l->nr = 0;

	/*
	 * 400 records of 64 bytes (32 of fields, 32 of sample_id) into
	 * 4096: most are lost
	 */
	for (i = 0; i < cycles; i++) {
		fd = attach_raw_tp(&t, prog_fd);
		ASSERT_LE(0, fd);
		close(fd);
	}
	sb_drain(l);
	/* the LOST record is written before the next record that fits */
	fd = load_spec(&socket_filter, &last);
	ASSERT_LE(0, fd);
	close(fd);
	sb_wait(l, PERF_RECORD_BPF_EVENT, PERF_BPF_EVENT_PROG_UNLOAD, 0);

	EXPECT_EQ(0, l->skipped);
	EXPECT_EQ(0, l->torn);
	EXPECT_EQ(0, l->other);
	for (i = 0; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		ASSERT_EQ(PERF_RECORD_BPF_EVENT, r->type);
		nr_bpf++;
		if (r->bpf.type == PERF_BPF_EVENT_LINK_ATTACH ||
		    r->bpf.type == PERF_BPF_EVENT_LINK_DETACH) {
			/* whole: every field is the one written */
			EXPECT_EQ(sizeof(r->bpf), r->body);
			EXPECT_EQ(pi.id, r->bpf.id);
			EXPECT_EQ(BPF_LINK_TYPE_RAW_TRACEPOINT, r->bpf.link_type);
			EXPECT_EQ(BPF_TRACE_RAW_TP, r->bpf.attach_type);
			EXPECT_EQ(0, memcmp(pi.tag, r->bpf.tag, BPF_TAG_SIZE));
		} else {
			EXPECT_EQ(last.id, r->bpf.id);
		}
		EXPECT_EQ(getpid(), (pid_t)r->sid.pid);
	}
	EXPECT_LT(0, l->lost) TH_LOG("the ring never overflowed");
	/* 2 records per cycle, then the load and unload of the last program */
	EXPECT_EQ(2 * cycles + 2, nr_bpf + l->lost)
		TH_LOG("%d records read, %d lost", nr_bpf, l->lost);
	close(prog_fd);
	sb_close(l);
	free(l);
}

/*
 * BPF programs on perf events: the rest of the perf <-> BPF uapi.
 */

#define INSN(c, d, s, o, i)						\
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s),	\
			    .off = (o), .imm = (i) })

static int load_insns(__u32 type, const struct bpf_insn *insns, int cnt)
{
	char log[4096] = "";
	union bpf_attr attr = {};
	int fd;

	attr.prog_type = type;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = cnt;
	attr.license = (uintptr_t)"GPL";
	attr.log_buf = (uintptr_t)log;
	attr.log_size = sizeof(log);
	attr.log_level = 1;
	fd = sys_bpf(BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		fprintf(stderr, "# verifier: %s\n", log);
	return fd;
}

static int map_create(__u32 type, __u32 value_size, __u32 entries)
{
	union bpf_attr attr = {};

	attr.map_type = type;
	attr.key_size = 4;
	attr.value_size = value_size;
	attr.max_entries = entries;
	return sys_bpf(BPF_MAP_CREATE, &attr, sizeof(attr));
}

static int map_update(int fd, __u32 key, const void *value)
{
	union bpf_attr attr = {};

	attr.map_fd = fd;
	attr.key = (uintptr_t)&key;
	attr.value = (uintptr_t)value;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &attr, sizeof(attr));
}

static int map_lookup(int fd, __u32 key, void *value)
{
	union bpf_attr attr = {};

	attr.map_fd = fd;
	attr.key = (uintptr_t)&key;
	attr.value = (uintptr_t)value;
	return sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr));
}

/* A perf event program that stores ctx->sample_period in array slot 0. */
static int load_period_prog(int map_fd)
{
	struct bpf_insn insns[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_6, BPF_REG_1,
		     offsetof(struct bpf_perf_event_data, sample_period), 0),
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 1, 0),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_0, BPF_REG_6, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return load_insns(BPF_PROG_TYPE_PERF_EVENT, insns, ARRAY_SIZE(insns));
}

/* Run on the CPU for ms milliseconds, in and out of the kernel. */
static void burn_cpu(int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			syscall(__NR_getppid);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/*
 * A BPF_PROG_TYPE_PERF_EVENT program runs on each overflow of the event it
 * is attached to and reads that event's sample_period from its context,
 * attached with PERF_EVENT_IOC_SET_BPF or with a bpf_link alike.
 */
TEST(perf_event_prog_sample_period)
{
	static const struct { bool link; __u64 period; } ways[] = {
		{ false, 100000 }, { true, 200000 },
	};

	for (int w = 0; w < 2; w++) {
		struct perf_event_attr attr = {
			.size = sizeof(attr),
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_TASK_CLOCK,
			.sample_period = ways[w].period,
		};
		__u64 seen = 0, zero = 0;
		int map_fd, prog_fd, ev_fd, link_fd = -1;

		map_fd = map_create(BPF_MAP_TYPE_ARRAY, 8, 1);
		if (map_fd < 0 && errno == EPERM)
			SKIP(return, "BPF_MAP_CREATE: no privileges (run as root)");
		ASSERT_LE(0, map_fd);
		ASSERT_EQ(0, map_update(map_fd, 0, &zero));
		prog_fd = load_period_prog(map_fd);
		ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));
		ev_fd = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		ASSERT_LE(0, ev_fd);
		if (ways[w].link) {
			link_fd = link_create(prog_fd, ev_fd, BPF_PERF_EVENT);
			ASSERT_LE(0, link_fd) TH_LOG("BPF_LINK_CREATE: %s", strerror(errno));
		} else {
			ASSERT_EQ(0, ioctl(ev_fd, PERF_EVENT_IOC_SET_BPF, prog_fd))
				TH_LOG("PERF_EVENT_IOC_SET_BPF: %s", strerror(errno));
		}
		burn_cpu(100);
		ASSERT_EQ(0, map_lookup(map_fd, 0, &seen));
		EXPECT_EQ(ways[w].period, seen)
			TH_LOG("attached with %s", ways[w].link ? "a link" : "SET_BPF");
		if (link_fd >= 0)
			close(link_fd);
		close(ev_fd);
		close(prog_fd);
		close(map_fd);
	}
}

/*
 * bpf_perf_event_output() into a PERF_COUNT_SW_BPF_OUTPUT event: 600
 * samples of 32 bytes through a one-page ring wrap it round several times;
 * every sample arrives whole and in order.
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
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD, 0, 0),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_3, 0, 0, (__s32)BPF_F_CURRENT_CPU),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_4, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_4, 0, 0, -16),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_5, 0, 0, 16),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_perf_event_output),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	const int n = 600;
	struct sb_listener *l = calloc(1, sizeof(*l));
	int cpu = sched_getcpu(), map_fd, prog_fd, got = 0, bad = 0;
	__u64 next = 0, consumed = 0;
	cpu_set_t set;

	ASSERT_NE(NULL, l);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	map_fd = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4,
			    sysconf(_SC_NPROCESSORS_CONF));
	if (map_fd < 0 && errno == EPERM)
		SKIP(return, "BPF_MAP_CREATE: no privileges (run as root)");
	ASSERT_LE(0, map_fd);
	l->fd = sys_perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, l->fd);
	ASSERT_EQ(0, ring_map(l, 1));
	ASSERT_EQ(0, map_update(map_fd, cpu, &l->fd));
	insns[6].imm = map_fd;
	prog_fd = load_insns(BPF_PROG_TYPE_RAW_TRACEPOINT, insns, ARRAY_SIZE(insns));
	ASSERT_LE(0, prog_fd) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));

	for (__u64 seq = 0; seq < n; seq++) {
		union bpf_attr run = {};
		__u64 args[1] = { seq };

		run.test.prog_fd = prog_fd;
		run.test.ctx_in = (uintptr_t)args;
		run.test.ctx_size_in = sizeof(args);
		ASSERT_EQ(0, sys_bpf(BPF_PROG_TEST_RUN, &run, sizeof(run)))
			TH_LOG("BPF_PROG_TEST_RUN: %s", strerror(errno));
		ASSERT_EQ(0, run.test.retval);
		if (seq % 20 != 19 && seq != n - 1)
			continue;

		/* drain: each sample is header, u32 size, 16 bytes, padding */
		__u64 head = __atomic_load_n(&l->page->data_head, __ATOMIC_ACQUIRE);
		__u64 tail = l->page->data_tail;

		while (tail < head) {
			struct perf_event_header hdr;
			char rec[sizeof(hdr) + sizeof(__u32) + 16];
			__u64 data[2];
			__u32 size;

			ring_copy(l, tail, &hdr, sizeof(hdr));
			if (hdr.type == PERF_RECORD_SAMPLE && hdr.size >= sizeof(rec)) {
				ring_copy(l, tail, rec, sizeof(rec));
				memcpy(&size, rec + sizeof(hdr), sizeof(size));
				memcpy(data, rec + sizeof(hdr) + sizeof(size),
				       sizeof(data));
				if (size < 16 || data[0] != next || data[1] != ~next)
					bad++;
				next = data[0] + 1;
				got++;
			} else {
				bad++;
			}
			if (!hdr.size)
				break;
			tail += hdr.size;
		}
		__atomic_store_n(&l->page->data_tail, tail, __ATOMIC_RELEASE);
		/* data_tail counts every byte read since the start */
		consumed = tail;
	}
	EXPECT_EQ(n, got);
	EXPECT_EQ(0, bad);
	/* the reader went round the ring more than twice */
	EXPECT_LT(l->data_size * 2, consumed)
		TH_LOG("read %llu bytes of a %llu-byte ring: it did not wrap",
		       (unsigned long long)consumed,
		       (unsigned long long)l->data_size);
	close(prog_fd);
	close(map_fd);
	sb_close(l);
	free(l);
}

static int tracepoint_id(const char *name)
{
	char path[256];
	int fd, id = -1;
	char buf[32] = "";

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) > 0)
		id = atoi(buf);
	close(fd);
	return id;
}

/*
 * PERF_EVENT_IOC_QUERY_BPF lists the programs attached to a tracepoint:
 * ids_len 0 asks for the count only, a short ids_len gets ENOSPC with
 * prog_cnt still set and the first ids filled in.
 */
TEST(query_bpf)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_TRACEPOINT,
		.sample_period = 1,
	};
	struct {
		struct perf_event_query_bpf q;
		__u32 ids[4];
	} query;
	struct prog_spec spec = { .prog_type = BPF_PROG_TYPE_TRACEPOINT };
	struct prog_info a, b;
	int ev1, ev2, fa, fb, id;

	id = tracepoint_id("syscalls/sys_enter_getppid");
	if (id < 0)
		SKIP(return, "no syscalls/sys_enter_getppid tracepoint in tracefs");
	attr.config = id;
	ev1 = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, ev1);
	ev2 = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	ASSERT_LE(0, ev2);

	memset(&query, 0, sizeof(query));
	ASSERT_EQ(0, ioctl(ev1, PERF_EVENT_IOC_QUERY_BPF, &query));
	EXPECT_EQ(0, query.q.prog_cnt);

	fa = load_spec(&spec, &a);
	ASSERT_LE(0, fa);
	fb = load_spec(&spec, &b);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, ioctl(ev1, PERF_EVENT_IOC_SET_BPF, fa));
	ASSERT_EQ(0, ioctl(ev2, PERF_EVENT_IOC_SET_BPF, fb));

	/* count only */
	memset(&query, 0, sizeof(query));
	ASSERT_EQ(0, ioctl(ev1, PERF_EVENT_IOC_QUERY_BPF, &query));
	EXPECT_EQ(2, query.q.prog_cnt);

	/* too short: ENOSPC, the count, and the first id */
	memset(&query, 0, sizeof(query));
	query.q.ids_len = 1;
	EXPECT_EQ(-1, ioctl(ev1, PERF_EVENT_IOC_QUERY_BPF, &query));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(2, query.q.prog_cnt);
	EXPECT_TRUE(query.ids[0] == a.id || query.ids[0] == b.id);
	EXPECT_EQ(0, query.ids[1]);

	/* long enough: both, in attach order */
	memset(&query, 0, sizeof(query));
	query.q.ids_len = 4;
	ASSERT_EQ(0, ioctl(ev2, PERF_EVENT_IOC_QUERY_BPF, &query));
	EXPECT_EQ(2, query.q.prog_cnt);
	EXPECT_EQ(a.id, query.ids[0]);
	EXPECT_EQ(b.id, query.ids[1]);

	/* detaching one leaves the other */
	close(ev1);
	memset(&query, 0, sizeof(query));
	query.q.ids_len = 4;
	ASSERT_EQ(0, ioctl(ev2, PERF_EVENT_IOC_QUERY_BPF, &query));
	EXPECT_EQ(1, query.q.prog_cnt);
	EXPECT_EQ(b.id, query.ids[0]);
	close(ev2);
	close(fa);
	close(fb);
}

TEST_HARNESS_MAIN
