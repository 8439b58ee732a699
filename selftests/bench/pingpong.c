// SPDX-License-Identifier: GPL-2.0
/*
 * pingpong: two threads of one long-lived process passing a byte back
 * and forth through two pipes, for 'make bench-bperf'.  Each round trip
 * is two context switches on one CPU, as in 'perf bench sched pipe -T',
 * but the process outlives the runs, so that perf stat sessions can
 * count it with -p before it runs.
 *
 * For each line "L" on stdin it makes L round trips and prints the
 * microseconds one took; it exits at the end of stdin.
 */
#include <err.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int to_peer[2], to_main[2];

static void *peer(void *arg)
{
	char c;

	(void)arg;
	while (read(to_peer[0], &c, 1) == 1) {
		if (write(to_main[1], &c, 1) != 1)
			err(1, "write");
	}
	return NULL;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void)
{
	char line[64], c = 0;
	pthread_t thread;
	long loops, i;
	double t0;

	if (pipe(to_peer) || pipe(to_main))
		err(1, "pipe");
	if (pthread_create(&thread, NULL, peer, NULL))
		errx(1, "pthread_create failed");
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		loops = strtol(line, NULL, 10);
		if (loops <= 0)
			errx(1, "want a number of round trips, got: %s", line);
		t0 = now_us();
		for (i = 0; i < loops; i++) {
			if (write(to_peer[1], &c, 1) != 1 ||
			    read(to_main[0], &c, 1) != 1)
				err(1, "round trip");
		}
		printf("%.3f\n", (now_us() - t0) / loops);
	}
	close(to_peer[1]);
	pthread_join(thread, NULL);
	return 0;
}
