// SPDX-License-Identifier: GPL-2.0
/*
 * vm-poweroff: end the test VM from its init script.
 *
 * Flushes file systems and ends the machine with reboot(2).  The VM kernel
 * has no ACPI, so a power off would only halt the CPUs; a restart is what
 * ends QEMU, which runs with -no-reboot.  With ACPI present it powers off.
 */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/reboot.h>

int main(void)
{
	sync();
	if (access("/sys/firmware/acpi", F_OK) == 0)
		reboot(RB_POWER_OFF);
	reboot(RB_AUTOBOOT);
	fprintf(stderr, "vm-poweroff: %s\n", strerror(errno));
	return 1;
}
