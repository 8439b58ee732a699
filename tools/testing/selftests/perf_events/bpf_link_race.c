// SPDX-License-Identifier: GPL-2.0
/*
 * Races between a cgroup going away and the life of a link to it.
 *
 * race.cgroup_gone_while_closed: a cgroup link whose cgroup goes away
 * while another CPU closes the link's last fd.
 *
 * When a cgroup is removed, a kworker detaches its links
 * (cgroup_bpf_release()); a close of a link's last fd detaches it too,
 * and frees it.  Exactly one of the two writes the LINK_DETACH record,
 * and it must do so while the link is still there: once the kworker has
 * let go of a link, the close may free it at any moment, and a read of
 * it then is a use-after-free that KASAN reports (make check-debug).
 *
 * Each round makes a cgroup, links a program to it, removes the cgroup
 * and, from a thread bound to another CPU, closes the link after a delay.
 * The delays sweep a range that adapts, block by block, until both have
 * been seen to win: the close (the record is this process's) and the
 * kworker (the record is another task's).  Every link must show exactly
 * one LINK_ATTACH and one LINK_DETACH, with no record lost.
 *
 * race.cgroup_gone_before_settle: a cgroup link made while another CPU
 * removes its cgroup.  The link is attached under cgroup_mutex, and only
 * then, the lock dropped, does bpf_link_settle() give it its id; if the
 * cgroup's kworker detaches it in between, the LINK_DETACH must still be
 * written then (by bpf_link_settle(), as this process's), not at the
 * last close.  Each round a sentinel link is attached at egress first and
 * the raced one at ingress: the kworker detaches ingress before egress,
 * so once the sentinel shows detached, a raced link that the kworker
 * found is detached too, and its record must be there while the link is
 * held.  A link made once the removal has begun fails with ENOENT; one
 * that took the cgroup before but was attached only after the kworker
 * stays attached to the dead cgroup until closed.  The window between
 * attach and settle is a few instructions wide: a round on a stock
 * kernel rarely falls into it, and the check then holds whoever writes
 * the record.  A kernel with an msleep() before bpf_link_settle()
 * publishes the id puts nearly every round into it (the record is then
 * this process's): that is how this test was seen to fail on a kernel
 * that wrote such a detach only at the last close.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>

#include <bpf/bpf.h>

#include "bpf_event.h"
#include "bpf_link_kinds.h"

#define ROUNDS_MIN	100
#define ROUNDS_MAX	200	/* two records a round, within MAX_RECORDS a CPU */
#define BLOCK		20	/* rounds between adjustments of the range */
#define RACE_SECS	60		/* then up to two WAIT_LONG_MS: within 110 */
#define DELAY_MIN_US	100
#define DELAY_MAX_US	1000000
#define SETTLE_ROUNDS	100	/* four records a round */
#define SETTLE_SECS	40

/* What the racer does on its CPU. */
enum race_act {
	RACE_CLOSE,		/* close(fd) after delay_us */
	RACE_RMDIR,		/* rmdir(path) after delay_us */
};

struct racer {
	pthread_t thread;
	pthread_barrier_t go, done;
	enum race_act act;
	int fd;			/* the link to close */
	const char *path;	/* the cgroup to remove */
	int err;		/* what rmdir() failed with, or 0 */
	__u64 delay_us;
	bool stop;
};

static __u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

static int bind_cpu(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(t, sizeof(set), &set);
}

static void spin_us(__u64 us)
{
	__u64 until = now_us() + us;

	while (now_us() < until)
		;
}

/* Wait for a round, do its act; until told to stop. */
static void *racer_run(void *arg)
{
	struct racer *r = arg;

	for (;;) {
		pthread_barrier_wait(&r->go);
		if (r->stop)
			return NULL;
		if (r->act == RACE_CLOSE) {
			spin_us(r->delay_us);
			close(r->fd);
		} else {
			spin_us(r->delay_us);
			r->err = rmdir(r->path) ? -errno : 0;
		}
		pthread_barrier_wait(&r->done);
	}
}

/* The two online CPUs to race on, or -1 if there is only one. */
static int two_cpus(int cpu[2])
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cpu[n++] = i;
	return n == 2 ? 0 : -1;
}

FIXTURE(race) {
	struct sb_cpus cpus;
	struct racer racer;
	struct link_ctx ctx;		/* the program, loaded for any cgroup_skb hook */
	char path[160];			/* the round's: ctx.path, _, its number */
	__u32 link_id[ROUNDS_MAX];
	int nr;
};

/*
 * The harness runs the teardown only once the setup has finished: what
 * the setup makes that outlives the test (the cgroup) comes last, and is
 * undone here if that fails.
 */
FIXTURE_SETUP(race)
{
	int cpu[2], err;

	link_ctx_init(&self->ctx);
	if (two_cpus(cpu))
		SKIP(return, "needs two CPUs to race on");
	err = sb_cpus_open(&self->cpus);
	SKIP_IF_NO_PRIV(err, "CPU-wide perf_event_open");
	ASSERT_EQ(0, err) TH_LOG("CPU-wide listeners: %s", strerror(-err));

	ASSERT_EQ(0, bind_cpu(pthread_self(), cpu[0]));
	ASSERT_EQ(0, pthread_barrier_init(&self->racer.go, NULL, 2));
	ASSERT_EQ(0, pthread_barrier_init(&self->racer.done, NULL, 2));
	ASSERT_EQ(0, pthread_create(&self->racer.thread, NULL, racer_run,
				    &self->racer));
	ASSERT_EQ(0, bind_cpu(self->racer.thread, cpu[1]));

	/* the program, and a cgroup of the kind's, kept for the test */
	err = kind_cgroup_expected_0.setup(&self->ctx);
	if (err) {
		close_fd(&self->ctx.prog_fd);
		kind_cgroup_expected_0.teardown(&self->ctx);
	}
	if (err == KIND_SKIP)
		SKIP(return, "%s", self->ctx.skip);
	SKIP_IF_NO_PRIV(err, "cgroup_skb program");
	ASSERT_EQ(0, err) TH_LOG("setup: %s", self->ctx.err);
}

FIXTURE_TEARDOWN(race)
{
	self->racer.stop = true;
	pthread_barrier_wait(&self->racer.go);
	pthread_join(self->racer.thread, NULL);
	if (self->path[0])
		rmdir(self->path);
	close_fd(&self->ctx.prog_fd);
	kind_cgroup_expected_0.teardown(&self->ctx);
	sb_cpus_close(&self->cpus);
}

/*
 * Whether the LINK_DETACH of each of links[0..nr) is there; how many of
 * them this process wrote (its close won) in *ours.
 */
static bool detached(struct sb_cpus *c, const __u32 *links, int nr, int *ours)
{
	struct sb_record *r;

	sb_cpus_drain(c);
	*ours = 0;
	for (int i = 0; i < nr; i++) {
		if (!sb_cpus_find(c, PERF_BPF_EVENT_LINK_DETACH, ANY_PROG,
				  links[i], &r))
			return false;
		if (r->sid.pid == (__u32)getpid())
			(*ours)++;
	}
	return true;
}

TEST_F_TIMEOUT(race, cgroup_gone_while_closed, 110)
{
	__u64 max_us = 20000, end = now_ms() + RACE_SECS * 1000;
	int ours, theirs, won[2] = {}, block = 0;
	struct sb_record *r;
	__u32 *ids;

	while (self->nr < ROUNDS_MAX && now_ms() < end &&
	       (self->nr < ROUNDS_MIN || !won[0] || !won[1])) {
		int cg, fd, err;

		snprintf(self->path, sizeof(self->path), "%s_%d",
			 self->ctx.path, self->nr);
		ASSERT_EQ(0, mkdir(self->path, 0755))
			TH_LOG("mkdir %s: %s", self->path, strerror(errno));
		cg = open(self->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ASSERT_LE(0, cg) TH_LOG("open %s: %s", self->path, strerror(errno));
		fd = bpf_link_create(self->ctx.prog_fd, cg,
				     BPF_CGROUP_INET_EGRESS, NULL);
		err = -errno;
		close(cg);
		ASSERT_LE(0, fd) TH_LOG("BPF_LINK_CREATE: %s", strerror(-err));
		self->link_id[self->nr] = link_id_of(fd);
		ASSERT_NE(0, self->link_id[self->nr]);
		self->nr++;

		/* the delay sweeps 0 .. max_us over a block */
		self->racer.act = RACE_CLOSE;
		self->racer.fd = fd;
		self->racer.delay_us = max_us * (self->nr % BLOCK) / BLOCK;
		err = rmdir(self->path) ? -errno : 0;
		pthread_barrier_wait(&self->racer.go);
		pthread_barrier_wait(&self->racer.done);
		ASSERT_EQ(0, err) TH_LOG("rmdir %s: %s", self->path, strerror(-err));
		self->path[0] = 0;

		if (self->nr % BLOCK)
			continue;
		/* who won in this block: widen or narrow the range */
		ids = self->link_id + block;
		ASSERT_TRUE(wait_until(detached(&self->cpus, ids, BLOCK, &ours),
				       WAIT_LONG_MS))
			TH_LOG("links of rounds %d..%d not all detached",
			       block, self->nr - 1);
		theirs = BLOCK - ours;
		won[0] += ours;
		won[1] += theirs;
		if (!theirs && max_us < DELAY_MAX_US)
			max_us *= 2;
		else if (!ours && max_us > DELAY_MIN_US)
			max_us /= 2;
		block = self->nr;
	}
	ASSERT_TRUE(wait_until(detached(&self->cpus, self->link_id, self->nr,
					&ours), WAIT_LONG_MS))
		TH_LOG("not every link of %d rounds detached", self->nr);
	TH_LOG("%d rounds: the close wrote %d detaches, the kworker %d; delays up to %llu us",
	       self->nr, ours, self->nr - ours, (unsigned long long)max_us);

	EXPECT_EQ(0, sb_cpus_lost(&self->cpus)) TH_LOG("records lost");
	for (int i = 0; i < self->nr; i++) {
		EXPECT_EQ(1, sb_cpus_find(&self->cpus, PERF_BPF_EVENT_LINK_ATTACH,
					  ANY_PROG, self->link_id[i], &r))
			TH_LOG("link %u: LINK_ATTACH", self->link_id[i]);
		EXPECT_EQ(1, sb_cpus_find(&self->cpus, PERF_BPF_EVENT_LINK_DETACH,
					  ANY_PROG, self->link_id[i], &r))
			TH_LOG("link %u: LINK_DETACH", self->link_id[i]);
	}
	/* both sides won at least once, or the race was not run */
	EXPECT_LT(0, ours) TH_LOG("the close never won");
	EXPECT_LT(0, self->nr - ours) TH_LOG("the kworker never won");
}

/* The id of the cgroup the link is attached to, or 0 once detached */
static __u64 link_cgroup_id(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_link_get_info_by_fd(fd, &info, &len) ? ~0ULL :
	       info.cgroup.cgroup_id;
}

/* The first LINK_DETACH of link id, or NULL (how many: sb_cpus_find()) */
static struct sb_record *detach_of(struct sb_cpus *c, __u32 id)
{
	struct sb_record *r = NULL;

	sb_cpus_drain(c);
	sb_cpus_find(c, PERF_BPF_EVENT_LINK_DETACH, ANY_PROG, id, &r);
	return r;
}

TEST_F_TIMEOUT(race, cgroup_gone_before_settle, 110)
{
	__u64 max_us = 2000, end = now_ms() + SETTLE_SECS * 1000;
	int rounds = 0, gone_first = 0, block_gone = 0;
	int held = 0, by_settle = 0, late = 0;
	__u32 sentinel[SETTLE_ROUNDS];
	struct sb_record *r;

	while (rounds < SETTLE_ROUNDS && now_ms() < end) {
		int cg, fd, sfd, err;
		__u32 id;

		snprintf(self->path, sizeof(self->path), "%s_%d",
			 self->ctx.path, rounds);
		ASSERT_EQ(0, mkdir(self->path, 0755))
			TH_LOG("mkdir %s: %s", self->path, strerror(errno));
		cg = open(self->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ASSERT_LE(0, cg) TH_LOG("open %s: %s", self->path, strerror(errno));
		sfd = bpf_link_create(self->ctx.prog_fd, cg,
				      BPF_CGROUP_INET_EGRESS, NULL);
		ASSERT_LE(0, sfd) TH_LOG("BPF_LINK_CREATE: %s", strerror(errno));
		sentinel[self->nr] = link_id_of(sfd);
		ASSERT_NE(0, sentinel[self->nr]);

		/* the link is made at once; the cgroup goes after a delay */
		self->racer.act = RACE_RMDIR;
		self->racer.path = self->path;
		self->racer.delay_us = max_us * (rounds % BLOCK) / BLOCK;
		pthread_barrier_wait(&self->racer.go);
		fd = bpf_link_create(self->ctx.prog_fd, cg,
				     BPF_CGROUP_INET_INGRESS, NULL);
		err = -errno;
		pthread_barrier_wait(&self->racer.done);
		close(cg);
		ASSERT_EQ(0, self->racer.err)
			TH_LOG("rmdir %s: %s", self->path,
			       strerror(-self->racer.err));
		self->path[0] = 0;
		rounds++;
		id = fd < 0 ? 0 : link_id_of(fd);
		if (fd < 0) {
			/* the removal had begun: no link */
			ASSERT_EQ(-ENOENT, err)
				TH_LOG("BPF_LINK_CREATE: %s", strerror(-err));
			gone_first++;
			block_gone++;
		} else {
			ASSERT_NE(0, id);
		}

		/* the kworker is done with the cgroup once egress is */
		ASSERT_TRUE(wait_until(!link_cgroup_id(sfd), WAIT_LONG_MS))
			TH_LOG("round %d: the kworker left link %u attached",
			       rounds - 1, sentinel[self->nr]);
		if (fd < 0) {
			/* the sentinel alone: its records are checked below */
			self->link_id[self->nr++] = 0;
		} else if (link_cgroup_id(fd)) {
			/* attached after the kworker: attached until closed */
			late++;
			self->link_id[self->nr++] = id;
		} else {
			held++;
			self->link_id[self->nr++] = id;
			r = NULL;
			EXPECT_TRUE(wait_until((r = detach_of(&self->cpus, id)),
					       WAIT_MS))
				TH_LOG("link %u: detached, no LINK_DETACH while held",
				       id);
			if (r && r->sid.pid == (__u32)getpid())
				by_settle++;
		}
		if (fd >= 0)
			close(fd);
		close(sfd);

		if (rounds % BLOCK)
			continue;
		/* have the cgroup go first in some rounds, not in all */
		if (!block_gone && max_us > DELAY_MIN_US)
			max_us /= 2;
		else if (block_gone == BLOCK && max_us < DELAY_MAX_US)
			max_us *= 2;
		block_gone = 0;
	}
	TH_LOG("%d rounds, delays up to %llu us: the cgroup went first in %d",
	       rounds, (unsigned long long)max_us, gone_first);
	TH_LOG("%d links detached while held, %d before their id was published",
	       held, by_settle);
	TH_LOG("%d links attached after the kworker", late);
	EXPECT_LT(0, held) TH_LOG("no link was detached by its cgroup's removal");

	for (int i = 0; i < self->nr; i++) {
		__u32 ids[2] = { self->link_id[i], sentinel[i] };

		for (int j = 0; j < 2; j++) {
			if (!ids[j])
				continue;
			ASSERT_TRUE(wait_until(detach_of(&self->cpus, ids[j]),
					       WAIT_LONG_MS))
				TH_LOG("link %u: no LINK_DETACH", ids[j]);
			EXPECT_EQ(1, sb_cpus_find(&self->cpus,
						  PERF_BPF_EVENT_LINK_ATTACH,
						  ANY_PROG, ids[j], &r))
				TH_LOG("link %u: LINK_ATTACH", ids[j]);
			EXPECT_EQ(1, sb_cpus_find(&self->cpus,
						  PERF_BPF_EVENT_LINK_DETACH,
						  ANY_PROG, ids[j], &r))
				TH_LOG("link %u: LINK_DETACH", ids[j]);
		}
	}
	EXPECT_EQ(0, sb_cpus_lost(&self->cpus)) TH_LOG("records lost");
}

TEST_HARNESS_MAIN
