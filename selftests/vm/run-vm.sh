#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the built kernel in QEMU and run one command in it as root.
#
#   selftests/vm/run-vm.sh [options] [--] [COMMAND...]
#     --kernel applied|base|debug|kcsan|bpf|bpf-base
#                            which kernel to boot (default applied)
#     --timeout SECONDS      watchdog: kill the VM after this long (default 1800)
#     --log FILE             also write the console to FILE
#     --job DIR              job directory to use (default: a new one)
#     --quiet                do not stream the console, only the log
#
# With no COMMAND it gives an interactive shell.  The command's output is
# streamed and its exit status is returned; a VM that hangs, panics or ends
# without reporting a status makes the run fail.  Environment: BUILD_DIR,
# VM_ACCEL (auto|tcg|kvm), VM_CPUS, VM_MEM, VM_ICOUNT (set: the guest clock
# counts executed instructions, one per ns; TCG only; for benchmarks).
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/mk/common.sh"
set +e

kernel=applied timeout=1800 log='' job='' quiet=''
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--job) job=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
case $kernel in
applied) bzimage=$KOBJ/arch/x86/boot/bzImage ;;
base)	bzimage=$KOBJ_BASE/arch/x86/boot/bzImage ;;
debug|kcsan) bzimage=$BUILD_DIR/$kernel/kernel/arch/x86/boot/bzImage ;;
bpf)	bzimage=$BUILD_DIR/bpf-kernel/arch/x86/boot/bzImage ;;
bpf-base) bzimage=$BUILD_DIR/pristine/bpf-kernel/arch/x86/boot/bzImage ;;
*)	die "--kernel takes applied, base, debug, kcsan, bpf or bpf-base" ;;
esac
[ -f "$bzimage" ] || die "$bzimage missing: run 'make build' (or 'make kernel-$kernel') first"
[ -x "$TOBJ/vm/vm-poweroff" ] || die "VM helpers missing: run 'make build' first"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (make deps)"

if [ $# -gt 0 ]; then
	mode=cmd
	cmd="$*"
elif [ -t 0 ]; then
	mode=shell
	cmd=
else
	die "no command given and no terminal for a shell"
fi

# The job directory is the guest's only writable share; keep it outside
# /tmp like everything else the guest reaches.
mkdir -p "$BUILD_DIR/vm"
if [ -z "$job" ]; then
	job=$(mktemp -d "$BUILD_DIR/vm/job.XXXXXX")
	trap 'rm -rf "$job"' EXIT
fi
mkdir -p "$job"
rm -f "$job/status" "$job/dmesg"

write_env() {	# write_env MODE CMD
	{
		printf 'MODE=%q\n' "$1"
		printf 'CMD=%q\n' "$2"
		printf 'CWD=%q\n' "$PWD"
		printf 'TOP=%q\n' "$TOP"
		printf 'BUILD_DIR=%q\n' "$BUILD_DIR"
	} >"$job/env"
}

# qemu_run ACCEL TIMEOUT: boot once; the console goes to stdout.
qemu_run() {
	local accel=$1 secs=$2 serial=stdio
	# shellcheck disable=SC2054 # QEMU's options have commas
	local opts=(
		-M q35 -bios /usr/share/qemu/qboot.rom -m "${VM_MEM:-4G}"
		-smp "${VM_CPUS:-2}" -nographic -no-reboot -nodefaults
		-kernel "$bzimage"
		-append "console=ttyS0 loglevel=5 panic=-1 root=root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro init=$TOP/selftests/vm/guest-init.sh"
		-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=root,mount_tag=root
		-fsdev local,id=top,path="$TOP",security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=top,mount_tag=top
		-fsdev local,id=build,path="$BUILD_DIR",security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=build,mount_tag=build
		-fsdev local,id=job,path="$job",security_model=none,multidevs=remap
		-device virtio-9p-pci,fsdev=job,mount_tag=job
	)
	[ "$mode" = shell ] && serial=mon:stdio
	case $accel in
	kvm) opts+=(-accel kvm -cpu "${VM_KVM_CPU:-kvm64}") ;;
	# Multi-threaded TCG oopses on jump-label patching (selftests/README.md).
	*) opts+=(-accel "tcg,thread=single" -cpu max) ;;
	esac
	[ -z "${VM_ICOUNT:-}" ] || opts+=(-icount "shift=0,sleep=off")
	if [ "$mode" = shell ]; then
		# A person at the terminal is the watchdog; timeout(1) would
		# take the terminal away from QEMU.
		qemu-system-x86_64 "${opts[@]}" -serial "$serial"
	else
		timeout -k 5 "$secs" qemu-system-x86_64 "${opts[@]}" -serial "$serial" </dev/null
	fi
}

# pick_accel: KVM only when a short probe boot under it reaches userspace.
# These machines expose a PVM /dev/kvm on which a stock kernel hangs, and
# QEMU's own fallback does not notice, so the probe is the only test.  The
# answer is cached per kernel image.
pick_accel() {
	local want=${VM_ACCEL:-auto} sum cache
	[ -z "${VM_ICOUNT:-}" ] || want=tcg
	case $want in
	tcg|kvm) echo "$want"; return ;;
	esac
	if [ ! -w /dev/kvm ]; then
		echo tcg
		return
	fi
	sum=$(sha1sum "$bzimage" | cut -c1-16)
	cache=$BUILD_DIR/vm/kvm-probe.$sum
	if [ ! -f "$cache" ]; then
		write_env probe ""
		qemu_run kvm "${KVM_PROBE_TIMEOUT:-15}" >"$cache.log" 2>&1
		if [ -f "$job/status" ]; then echo kvm; else echo tcg; fi >"$cache"
		rm -f "$job/status" "$job/dmesg"
	fi
	cat "$cache"
}

accel=$(pick_accel)
write_env "$mode" "$cmd"
echo "==> booting the $kernel kernel ($accel, ${VM_CPUS:-2} vCPUs, watchdog ${timeout}s)" >&2
start=$(date +%s)
if [ -n "$log" ] && [ -n "$quiet" ]; then
	qemu_run "$accel" "$timeout" >"$log" 2>&1
	rc=$?
elif [ -n "$log" ]; then
	qemu_run "$accel" "$timeout" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
else
	qemu_run "$accel" "$timeout"
	rc=$?
fi
echo "==> VM ran for $(($(date +%s) - start))s" >&2

if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "error: VM watchdog: the guest did not finish in ${timeout}s" >&2
	exit 124
fi
if [ ! -f "$job/status" ]; then
	echo "error: the guest ended without reporting a status (boot failure or panic?)" >&2
	exit 125
fi
exit "$(cat "$job/status")"
