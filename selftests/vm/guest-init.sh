#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of the test VM (kernel command line init=).
#
# The host root is mounted read-only over 9p.  This script makes the few
# writable and virtual file systems perf and BPF need, mounts the project,
# the build directory and the job directory (the only writable share) at
# their host paths, runs the job and powers the VM off.  The job directory
# holds "env" (what to run) and receives "status", "dmesg" and whatever
# the job writes to $JOB.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
JOB=/run/job

fs() {	# fs TYPE DIR [OPTIONS]: mount unless already mounted
	mountpoint -q "$2" 2>/dev/null && return 0
	mkdir -p "$2" 2>/dev/null
	mount -t "$1" ${3:+-o "$3"} "$1" "$2" || echo "guest-init: cannot mount $1 on $2"
}

share() {	# share TAG DIR [OPTIONS]: mount a 9p share of the host
	mkdir -p "$2" 2>/dev/null
	mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000${3:+,$3}" "$1" "$2" ||
		echo "guest-init: cannot mount share $1 on $2"
}

fs proc /proc
fs sysfs /sys
fs devtmpfs /dev
fs tmpfs /tmp mode=1777
fs tmpfs /run mode=755
fs devpts /dev/pts
# What udev would make; run_kselftest.sh writes to /dev/stdout.
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
fs tmpfs /dev/shm mode=1777
fs debugfs /sys/kernel/debug
fs tracefs /sys/kernel/tracing
fs bpf /sys/fs/bpf
fs cgroup2 /sys/fs/cgroup

share job "$JOB"
# shellcheck source=/dev/null
. "$JOB/env"
share top "$TOP" ro,cache=loose
share build "$BUILD_DIR" ro,cache=loose

# The tools under test, first on PATH.
mkdir -p /run/bin /tmp/root
ln -s "$BUILD_DIR/perf/perf" /run/bin/perf
ln -s "$BUILD_DIR/pristine/perf/perf" /run/bin/perf-base
ln -s "$BUILD_DIR/tools/bpftool/bpftool" /run/bin/bpftool
export PATH=/run/bin:$PATH HOME=/tmp/root TERM=${TERM:-linux}
export TOP BUILD_DIR JOB
hostname bpf-perf-vm 2>/dev/null
ip link set lo up 2>/dev/null
echo 1 >/proc/sys/kernel/sysrq

echo "guest-init: $(uname -r), $(nproc) CPUs, running $MODE"
case $MODE in
shell)
	echo "guest-init: interactive shell; 'exit' powers the VM off"
	# not a login shell: /etc/profile would put the host perf first
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
	status=$?
	;;
probe)
	status=0
	;;
*)
	(cd "${CWD:-/}" 2>/dev/null || cd /; bash -c "$CMD")
	status=$?
	;;
esac

dmesg >"$JOB/dmesg" 2>&1
echo "$status" >"$JOB/status"
sync
exec "$BUILD_DIR/tools/vm/vm-poweroff"
