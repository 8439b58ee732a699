// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD library: perf_event_open() answers as Linux 6.12 does for an
 * attr with a bit it does not know, EINVAL.  Linux 6.12's perf_copy_attr()
 * refuses any bit of __reserved_1 (bits 38 to 63 of the flags, after
 * sigtrap), where newer kernels put bpf_event_ext: perf run with this
 * library sees what it sees on a 6.12 kernel, and must fall back.  Built
 * on the raw flags word, which follows read_format at byte 40 of the attr
 * in every layout, so that no header can move the bits it refuses.  perf
 * calls perf_event_open() through syscall(3).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <string.h>

/* Whether the attr at addr has a flag 6.12 does not know: bits 38 to 63. */
static int flags612_reserved(long addr)
{
	uint64_t flags;

	memcpy(&flags, (const char *)addr + 40, sizeof(flags));
	return (flags >> 38) != 0;
}

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
	if (nr == __NR_perf_event_open && a[0] && flags612_reserved(a[0])) {
		errno = EINVAL;
		return -1;
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
