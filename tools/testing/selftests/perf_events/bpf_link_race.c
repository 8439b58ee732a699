// SPDX-License-Identifier: GPL-2.0
/*
 * A cgroup link whose cgroup goes away while another CPU closes the
 * link's last fd.
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

struct closer {
	pthread_t thread;
	pthread_barrier_t go, done;
	int fd;			/* the link to close */
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

/* Wait for a link, spin for its delay, close it; until told to stop. */
static void *closer_run(void *arg)
{
	struct closer *c = arg;
	__u64 until;

	for (;;) {
		pthread_barrier_wait(&c->go);
		if (c->stop)
			return NULL;
		until = now_us() + c->delay_us;
		while (now_us() < until)
			;
		close(c->fd);
		pthread_barrier_wait(&c->done);
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
	struct closer closer;
	struct link_ctx ctx;		/* kind_cgroup's: the program */
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
	ASSERT_EQ(0, pthread_barrier_init(&self->closer.go, NULL, 2));
	ASSERT_EQ(0, pthread_barrier_init(&self->closer.done, NULL, 2));
	ASSERT_EQ(0, pthread_create(&self->closer.thread, NULL, closer_run,
				    &self->closer));
	ASSERT_EQ(0, bind_cpu(self->closer.thread, cpu[1]));

	/* the program, and a cgroup of the kind's, kept for the test */
	err = kind_cgroup.setup(&self->ctx);
	if (err) {
		close_fd(&self->ctx.prog_fd);
		kind_cgroup.teardown(&self->ctx);
	}
	if (err == KIND_SKIP)
		SKIP(return, "%s", self->ctx.skip);
	SKIP_IF_NO_PRIV(err, "cgroup_skb program");
	ASSERT_EQ(0, err) TH_LOG("setup: %s", self->ctx.err);
}

FIXTURE_TEARDOWN(race)
{
	self->closer.stop = true;
	pthread_barrier_wait(&self->closer.go);
	pthread_join(self->closer.thread, NULL);
	if (self->path[0])
		rmdir(self->path);
	close_fd(&self->ctx.prog_fd);
	kind_cgroup.teardown(&self->ctx);
	sb_cpus_close(&self->cpus);
}

/* The link's id, or 0 */
static __u32 link_id_of(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_link_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
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
		self->closer.fd = fd;
		self->closer.delay_us = max_us * (self->nr % BLOCK) / BLOCK;
		err = rmdir(self->path) ? -errno : 0;
		pthread_barrier_wait(&self->closer.go);
		pthread_barrier_wait(&self->closer.done);
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

TEST_HARNESS_MAIN
