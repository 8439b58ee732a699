// SPDX-License-Identifier: GPL-2.0
/*
 * link_bench: what the BPF side-band records cost the bpf() paths.
 *
 * Times, in ns per operation, BPF_PROG_LOAD + close of a two-instruction
 * program, BPF_LINK_CREATE + close of a cgroup link (the cheapest link to
 * make and destroy) and BPF_RAW_TRACEPOINT_OPEN + close of a raw tracepoint
 * link (the link perf and most tracers use), first with no perf listener,
 * then with one side-band listener whose ring is drained as it goes: one
 * with bpf_event alone, as readers of Linux 6.12 open it ("listener"),
 * then one that asks for link records too with bpf_event_ext ("links"; on
 * a kernel that refuses the bit, bpf_event alone again).  Each figure is
 * the best of several rounds.  Run under QEMU with -icount, the guest clock counts
 * executed instructions, so the figures are instructions per operation.
 *
 * Output: one "name ns_per_op" line per figure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

#define ROUNDS	7
#define PAGES	64

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int load(__u32 type)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr = {};

	attr.prog_type = type;
	attr.insns = (unsigned long)insns;
	attr.insn_cnt = 2;
	attr.license = (unsigned long)"GPL";
	return sys_bpf(BPF_PROG_LOAD, &attr);
}

static int cgroup_fd;

static int cgroup_link(int prog_fd)
{
	union bpf_attr attr = {};

	attr.link_create.prog_fd = prog_fd;
	attr.link_create.target_fd = cgroup_fd;
	attr.link_create.attach_type = BPF_CGROUP_INET_EGRESS;
	return sys_bpf(BPF_LINK_CREATE, &attr);
}

static int raw_tp_link(int prog_fd)
{
	union bpf_attr attr = {};

	attr.raw_tracepoint.name = (unsigned long)"sched_process_exit";
	attr.raw_tracepoint.prog_fd = prog_fd;
	return sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &attr);
}

static struct perf_event_mmap_page *ring;

/* Skip whatever the kernel wrote: the listener only has to exist. */
static void drain(void)
{
	if (ring)
		__atomic_store_n(&ring->data_tail,
				 __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
}

/* A listener, with bpf_event_ext if ext and the kernel knows it. */
static int listen(int ext)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.bpf_event = 1,
		.bpf_event_ext = ext,
	};
	long psz = sysconf(_SC_PAGESIZE);
	int fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);

	if (fd < 0 && ext && errno == EINVAL) {
		fprintf(stderr, "link_bench: the kernel refuses bpf_event_ext: "
			"the links listener asks for bpf_event alone\n");
		attr.bpf_event_ext = 0;
		fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	}
	if (fd < 0)
		return -1;
	ring = mmap(NULL, (PAGES + 1) * psz, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	return ring == MAP_FAILED ? -1 : fd;
}

/*
 * Best of ROUNDS rounds of n operations, in ns per operation: load and
 * unload a program, or create and close a link with make_link(prog_fd).
 */
static double bench(int n, int (*make_link)(int), int prog_fd)
{
	double best = 0;

	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();

		for (int i = 0; i < n; i++) {
			int fd = make_link ? make_link(prog_fd)
					   : load(BPF_PROG_TYPE_SOCKET_FILTER);

			if (fd < 0) {
				perror(make_link ? "link" : "BPF_PROG_LOAD");
				exit(1);
			}
			close(fd);
			drain();
		}
		double ns = (now_ns() - t0) / n;

		if (!r || ns < best)
			best = ns;
	}
	return best;
}

int main(int argc, char **argv)
{
	const char *cg = "/sys/fs/cgroup/link_bench";
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	int prog_fd = load(BPF_PROG_TYPE_CGROUP_SKB);
	int tp_fd = load(BPF_PROG_TYPE_RAW_TRACEPOINT);
	const char *phase[] = { "nolistener", "listener", "links" };
	int fd = -1;

	if (prog_fd < 0 || tp_fd < 0) {
		perror("BPF_PROG_LOAD");
		return 1;
	}
	if (mkdir(cg, 0755) && errno != EEXIST) {
		perror(cg);
		return 1;
	}
	cgroup_fd = open(cg, O_RDONLY | O_DIRECTORY);
	if (cgroup_fd < 0) {
		perror(cg);
		return 1;
	}
	for (int p = 0; p < 3; p++) {
		if (fd >= 0) {
			munmap(ring, (PAGES + 1) * sysconf(_SC_PAGESIZE));
			ring = NULL;
			close(fd);
		}
		fd = p ? listen(p == 2) : -1;
		if (p && fd < 0) {
			perror("side-band listener (perf_event_open, mmap)");
			return 1;
		}
		printf("prog_load_%s %.0f\n", phase[p], bench(n, NULL, -1));
		printf("cgroup_link_%s %.0f\n", phase[p],
		       bench(n, cgroup_link, prog_fd));
		printf("raw_tp_link_%s %.0f\n", phase[p],
		       bench(n, raw_tp_link, tp_fd));
	}
	close(cgroup_fd);
	rmdir(cg);
	return 0;
}
