// SPDX-License-Identifier: GPL-2.0
/*
 * vm-poweroff: end the test VM from its init script.
 *
 * Flushes file systems and asks the kernel to power off with reboot(2).
 * Should that return (no ACPI), restarts instead: QEMU runs with
 * -no-reboot, so a restart ends it just the same.
 */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/reboot.h>

int main(void)
{
	sync();
	reboot(RB_POWER_OFF);
	fprintf(stderr, "vm-poweroff: power off failed (%s), restarting\n",
		strerror(errno));
	reboot(RB_AUTOBOOT);
	fprintf(stderr, "vm-poweroff: restart failed: %s\n", strerror(errno));
	return 1;
}
