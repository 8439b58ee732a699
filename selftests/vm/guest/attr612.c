// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD library: perf_event_open() answers as Linux 6.12 does for an
 * attr with a bit it does not know, EINVAL.  Linux 6.12's perf_copy_attr()
 * refuses any bit of __reserved_1 (bits 38 to 63 of the flags, after
 * sigtrap), where newer kernels put bpf_event_ext: perf run with this
 * library sees what it sees on a 6.12 kernel, and must fall back.  Built
 * against the distribution's <linux/perf_event.h>, whose __reserved_1 is
 * 6.12's.  perf calls perf_event_open() through syscall(3).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

long syscall(long nr, ...)
{
	static long (*real_syscall)(long nr, ...);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (nr == __NR_perf_event_open && a[0] &&
	    ((const struct perf_event_attr *)a[0])->__reserved_1) {
		errno = EINVAL;
		return -1;
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
