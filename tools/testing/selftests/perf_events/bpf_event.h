/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF side-band tests share: a listener for PERF_RECORD_BPF_EVENT
 * and PERF_RECORD_KSYMBOL (a dummy software event with bpf_event and
 * ksymbol set, which never samples), reading its ring, finding records,
 * loading small programs, and one bounded wait.
 *
 * A listener asks for link records with attr.bpf_event_ext; one that sets
 * bpf_event alone is a reader of Linux 6.12's records, and must get
 * nothing else.
 */
#ifndef __PERF_EVENTS_BPF_EVENT_H
#define __PERF_EVENTS_BPF_EVENT_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>

#include "../kselftest_harness.h"

#define RING_PAGES	8		/* data pages, a power of two */
#define MAX_RECORDS	512
#define PROG_NAME	"kst_bpf_event"
#define SB_NAME_MAX	512		/* longest symbol name we keep */
#define WAIT_MS		5000		/* records written in our own task */
#define WAIT_LONG_MS	15000		/* records from workqueues and RCU */

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

/* What a listener asks for of PERF_RECORD_BPF_EVENT. */
enum sb_bpf {
	SB_BPF_NONE,		/* no BPF_EVENT records */
	SB_BPF_PROGS,		/* attr.bpf_event: Linux 6.12's records */
	SB_BPF_LINKS,		/* and attr.bpf_event_ext: link records too */
};

/* Linux 6.12's BPF_EVENT body: type, flags, id and tag, then sample_id. */
#define SB_BPF_PROG_BODY	(2 + 2 + 4 + BPF_TAG_SIZE)
/* With bpf_event_ext: link records add link_id, link_type, attach_type */
#define SB_BPF_LINK_BODY	(SB_BPF_PROG_BODY + 4 + 2 + 2)
/* ... and PROG_UNLOAD run_cnt, run_time_ns, recursion_misses */
#define SB_BPF_STATS_BODY	(SB_BPF_PROG_BODY + 3 * 8)

/* One record read back from a ring, with the fields the tests look at. */
struct sb_record {
	__u32 type;
	union {
		struct {	/* PERF_RECORD_BPF_EVENT */
			__u16 type;
			__u16 flags;
			__u32 id;
			__u8 tag[BPF_TAG_SIZE];
			union {
				struct {	/* LINK_ATTACH, LINK_DETACH */
					__u32 link_id;
					__u16 link_type;
					__u16 attach_type;
				};
				struct {	/* PROG_UNLOAD, RUN_STATS */
					__u64 run_cnt;
					__u64 run_time_ns;
					__u64 recursion_misses;
				};
			};
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
	/*
	 * BPF_EVENT: the sample_id where a reader that parses forward by
	 * Linux 6.12's layout finds it, right after the tag
	 */
	struct sb_sample_id fwd;
	size_t body;			/* bytes between header and sample_id */
};

struct sb_listener {
	int fd;
	__u64 id;			/* PERF_EVENT_IOC_ID */
	struct perf_event_mmap_page *page;
	char *data;
	__u64 data_size;
	__u64 consumed;			/* bytes of records read so far */
	struct sb_record rec[MAX_RECORDS];
	int nr;
	int lost;			/* records the kernel reported as lost */
	int skipped;			/* records that did not fit in rec[] */
	int other;			/* records of other types */
	int torn;			/* impossible headers met */
};

/* A listener on every online CPU, for records written outside our task. */
struct sb_cpus {
	int nr;
	struct sb_listener *l;
};

/* What the kernel says of a program we loaded. */
struct prog_info {
	__u32 id;
	__u8 tag[BPF_TAG_SIZE];
	__u64 ksym_addr;
	__u32 ksym_len;
	char ksym_name[SB_NAME_MAX];
};

static inline int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid,
				      int cpu, int group_fd,
				      unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, flags);
}

static inline __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/*
 * Evaluate cond until it is true or timeout_ms have passed, 10 ms apart;
 * the value is cond's last.  The one way these tests wait.
 */
#define wait_until(cond, timeout_ms) ({					\
	__u64 __deadline = now_ms() + (timeout_ms);			\
	bool __ok;							\
	while (!(__ok = (cond)) && now_ms() < __deadline)		\
		usleep(10000);						\
	__ok;								\
})

/* A test that needs root, run without: skip it, saying so. */
#define SKIP_IF_NO_PRIV(err, what) do {					\
	int __err = (err);						\
									\
	if (__err == -EPERM || __err == -EACCES)			\
		SKIP(return, "%s: %s (run as root)", (what),		\
		     strerror(-__err));					\
} while (0)

/* Map the ring of the event l->fd, with pages data pages (a power of two). */
static inline int ring_map(struct sb_listener *l, int pages)
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
 * The event of a side-band listener, for this task (cpu -1) or a whole
 * CPU (pid -1): its fd, or -errno.
 */
static inline int sb_event_open(enum sb_bpf bpf, bool ksymbol, pid_t pid,
				int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER,
		.sample_id_all = 1,
		.bpf_event = bpf != SB_BPF_NONE,
		.bpf_event_ext = bpf == SB_BPF_LINKS,
		.ksymbol = ksymbol,
		/* one clock for all CPUs, to order their records */
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};
	int fd = sys_perf_event_open(&attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * Open a side-band listener with a ring of pages data pages (a power of
 * two), for this task (cpu -1) or a whole CPU (pid -1).  0 or -errno.
 */
static inline int sb_open_pages(struct sb_listener *l, enum sb_bpf bpf,
				bool ksymbol, pid_t pid, int cpu, int pages)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->fd = sb_event_open(bpf, ksymbol, pid, cpu);
	if (l->fd < 0)
		return l->fd;
	err = ring_map(l, pages);
	if (err) {
		close(l->fd);
		l->fd = -1;
	}
	return err;
}

static inline int sb_open(struct sb_listener *l, enum sb_bpf bpf, bool ksymbol,
			  pid_t pid, int cpu)
{
	return sb_open_pages(l, bpf, ksymbol, pid, cpu, RING_PAGES);
}

static inline void sb_close(struct sb_listener *l)
{
	if (l->page)
		munmap(l->page, l->data_size + sysconf(_SC_PAGESIZE));
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	l->page = NULL;
}

/*
 * Copy len bytes at offset off of a ring's data (size bytes, a power of
 * two), following the wrap-around.
 */
static inline void sb_copy(const char *data, __u64 size, __u64 off, void *dst,
			   size_t len)
{
	size_t pos = off & (size - 1);
	size_t first = size - pos;

	if (first > len)
		first = len;
	memcpy(dst, data + pos, first);
	memcpy((char *)dst + first, data, len - first);
}

static inline void ring_copy(struct sb_listener *l, __u64 off, void *dst,
			     size_t len)
{
	sb_copy(l->data, l->data_size, off, dst, len);
}

#define SB_RECORD_MAX	(sizeof(struct perf_event_header) + 4096)

/*
 * Hand every record the kernel has written to a ring (its control page,
 * and size bytes of data) to fn, then give the space back.  The acquire
 * load of data_head orders it before our reads of the records; the
 * release store of data_tail orders those reads before the kernel may
 * reuse the space.  false if a header was impossible: what follows it
 * cannot be trusted and is skipped.
 */
static inline bool sb_read(struct perf_event_mmap_page *page, const char *data,
			   __u64 size,
			   void (*fn)(void *arg, const char *rec, __u16 len),
			   void *arg)
{
	__u64 head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
	__u64 tail = page->data_tail;
	char buf[SB_RECORD_MAX];
	bool ok = true;

	while (tail < head) {
		struct perf_event_header hdr;

		sb_copy(data, size, tail, &hdr, sizeof(hdr));
		if (hdr.size < sizeof(hdr) || hdr.size > sizeof(buf) ||
		    hdr.size % 8 || hdr.size > head - tail) {
			ok = false;
			tail = head;
			break;
		}
		sb_copy(data, size, tail, buf, hdr.size);
		fn(arg, buf, hdr.size);
		tail += hdr.size;
	}
	__atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
	return ok;
}

static inline void sb_parse(struct sb_listener *l, const char *buf,
			    size_t size)
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
		if (size >= sizeof(*hdr) + SB_BPF_PROG_BODY + sizeof(r->fwd))
			memcpy(&r->fwd,
			       (const char *)(hdr + 1) + SB_BPF_PROG_BODY,
			       sizeof(r->fwd));
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

static inline void sb_take(void *arg, const char *rec, __u16 len)
{
	struct sb_listener *l = arg;

	sb_parse(l, rec, len);
	l->consumed += len;
}

/* Consume everything the kernel has written. */
static inline void sb_drain(struct sb_listener *l)
{
	if (!sb_read(l->page, l->data, l->data_size, sb_take, l))
		l->torn++;
}

/* Index of the next record of this kind from index from on; -1 if none. */
static inline int sb_find(struct sb_listener *l, int from, __u32 type,
			  __u16 sub)
{
	for (int i = from; i < l->nr; i++) {
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

static inline int sb_count(struct sb_listener *l, __u32 type)
{
	int n = 0;

	for (int i = 0; i < l->nr; i++)
		n += l->rec[i].type == type;
	return n;
}

/* Drain, then whether a record of this kind is there from index from on. */
static inline bool sb_has(struct sb_listener *l, __u32 type, __u16 sub,
			  int from)
{
	sb_drain(l);
	return sb_find(l, from, type, sub) >= 0;
}

/* Index of the next BPF_EVENT record of this type for prog_id; -1 if none. */
static inline int sb_find_prog(struct sb_listener *l, int from, __u16 type,
			       __u32 prog_id)
{
	for (int i = from; i < l->nr; i++) {
		struct sb_record *r = &l->rec[i];

		if (r->type == PERF_RECORD_BPF_EVENT && r->bpf.type == type &&
		    r->bpf.id == prog_id)
			return i;
	}
	return -1;
}

/* Drain, then whether a BPF_EVENT record of this type for prog_id is there. */
static inline bool sb_has_prog(struct sb_listener *l, __u16 type,
			       __u32 prog_id)
{
	sb_drain(l);
	return sb_find_prog(l, 0, type, prog_id) >= 0;
}

/* Index of the next BPF_EVENT record of this type for link_id; -1 if none. */
static inline int sb_find_link(struct sb_listener *l, int from, __u16 type,
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

static inline int sb_count_link(struct sb_listener *l, __u16 type,
				__u32 link_id)
{
	int n = 0;

	for (int i = sb_find_link(l, 0, type, link_id); i >= 0;
	     i = sb_find_link(l, i + 1, type, link_id))
		n++;
	return n;
}

/* Drain, then whether a BPF_EVENT record of this type for link_id is there. */
static inline bool sb_has_link(struct sb_listener *l, __u16 type,
			       __u32 link_id)
{
	sb_drain(l);
	return sb_find_link(l, 0, type, link_id) >= 0;
}

static inline int sb_cpus_open_bpf(struct sb_cpus *c, enum sb_bpf bpf)
{
	int err;

	c->nr = sysconf(_SC_NPROCESSORS_CONF);
	c->l = calloc(c->nr, sizeof(*c->l));
	if (!c->l)
		return -ENOMEM;
	for (int i = 0; i < c->nr; i++)
		c->l[i].fd = -1;
	for (int i = 0; i < c->nr; i++) {
		err = sb_open(&c->l[i], bpf, false, -1, i);
		if (err == -ENODEV)	/* offline CPU */
			c->l[i].fd = -1;
		else if (err)
			return err;
	}
	return 0;
}

/* A listener on every online CPU that asks for link records too. */
static inline int sb_cpus_open(struct sb_cpus *c)
{
	return sb_cpus_open_bpf(c, SB_BPF_LINKS);
}

static inline void sb_cpus_close(struct sb_cpus *c)
{
	for (int i = 0; c->l && i < c->nr; i++)
		if (c->l[i].fd >= 0)
			sb_close(&c->l[i]);
	free(c->l);
	c->l = NULL;
}

static inline void sb_cpus_drain(struct sb_cpus *c)
{
	for (int i = 0; i < c->nr; i++)
		if (c->l[i].fd >= 0)
			sb_drain(&c->l[i]);
}

static inline int sb_cpus_lost(struct sb_cpus *c)
{
	int lost = 0;

	for (int i = 0; i < c->nr; i++)
		lost += c->l[i].lost + c->l[i].skipped + c->l[i].torn;
	return lost;
}

/*
 * The BPF_EVENT records of this type whose program id (if prog_id is not
 * ~0) and link id (if not 0) match, over all CPUs: how many, and the
 * earliest in *first.
 */
#define ANY_PROG	(~0u)
static inline int sb_cpus_find(struct sb_cpus *c, __u16 type, __u32 prog_id,
			       __u32 link_id, struct sb_record **first)
{
	int n = 0;

	*first = NULL;
	for (int i = 0; i < c->nr; i++) {
		for (int j = 0; j < c->l[i].nr; j++) {
			struct sb_record *r = &c->l[i].rec[j];

			if (r->type != PERF_RECORD_BPF_EVENT ||
			    r->bpf.type != type ||
			    (prog_id != ANY_PROG && r->bpf.id != prog_id) ||
			    (link_id && r->bpf.link_id != link_id))
				continue;
			if (!*first || r->sid.time < (*first)->sid.time)
				*first = r;
			n++;
		}
	}
	return n;
}

/* Drain all CPUs; how many such records there are now. */
static inline int sb_cpus_count(struct sb_cpus *c, __u16 type, __u32 prog_id,
				__u32 link_id)
{
	struct sb_record *r;

	sb_cpus_drain(c);
	return sb_cpus_find(c, type, prog_id, link_id, &r);
}

/*
 * Whether record a may come before record b: on one CPU's ring the order
 * is exact; across CPUs only time tells, and clocks can tie.
 */
static inline bool sb_cpus_before(struct sb_cpus *c, const struct sb_record *a,
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

/* The id of the link fd, or 0 */
static inline __u32 link_id_of(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_link_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* What BPF_OBJ_GET_INFO_BY_FD says of the program fd; 0 or -errno. */
static inline int prog_info_get(int fd, struct prog_info *pi)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	__u32 func_len = 0;
	__u64 addr = 0;
	int i;

	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uintptr_t)&addr;
	info.nr_jited_func_lens = 1;
	info.jited_func_lens = (uintptr_t)&func_len;
	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		return -errno;
	memset(pi, 0, sizeof(*pi));
	pi->id = info.id;
	memcpy(pi->tag, info.tag, BPF_TAG_SIZE);
	pi->ksym_addr = addr;
	pi->ksym_len = func_len;
	/* The kernel names a program's symbol bpf_prog_<tag>_<name>. */
	i = snprintf(pi->ksym_name, sizeof(pi->ksym_name), "bpf_prog_");
	for (int b = 0; b < BPF_TAG_SIZE; b++)
		i += snprintf(pi->ksym_name + i, sizeof(pi->ksym_name) - i,
			      "%02x", info.tag[b]);
	snprintf(pi->ksym_name + i, sizeof(pi->ksym_name) - i, "_%s",
		 info.name);
	return 0;
}

/*
 * Load "r0 = ret; exit" as a program of this type, named PROG_NAME, with
 * opts (may be NULL) for the attach type, BTF and the rest; fill in *pi if
 * not NULL.  The fd, or -errno.
 */
static inline int prog_load_ret(enum bpf_prog_type type,
				struct bpf_prog_load_opts *opts, int ret,
				struct prog_info *pi)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = ret },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd, err;

	fd = bpf_prog_load(type, PROG_NAME, "GPL", insns, 2, opts);
	if (fd < 0)
		return -errno;
	if (pi) {
		err = prog_info_get(fd, pi);
		if (err) {
			close(fd);
			return err;
		}
	}
	return fd;
}

/* A socket filter: the simplest program there is. */
static inline int load_prog(struct prog_info *pi)
{
	return prog_load_ret(BPF_PROG_TYPE_SOCKET_FILTER, NULL, 0, pi);
}

/* The sample_id of a record our own task wrote to listener l. */
static inline void check_sample_id(struct __test_metadata *_metadata,
				   struct sb_listener *l, struct sb_record *r)
{
	EXPECT_EQ(getpid(), (pid_t)r->sid.pid);
	EXPECT_EQ(gettid(), (pid_t)r->sid.tid);
	EXPECT_NE(0, r->sid.time);
	EXPECT_GT(sysconf(_SC_NPROCESSORS_CONF), r->sid.cpu);
	EXPECT_EQ(l->id, r->sid.id);
}

#endif /* __PERF_EVENTS_BPF_EVENT_H */
