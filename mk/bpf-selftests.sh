#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the BPF subsystem's own test runner for 'make check-bpf': test_progs
# of the pristine tree's tools/testing/selftests/bpf, against the pristine
# kernel built by 'mk/kernel.sh bpf-base' (its vmlinux BTF gives vmlinux.h),
# into $BUILD_DIR/bpf-selftests.  The programs it loads are CO-RE, so the
# same binary runs on both kernels; the test modules (bpf_testmod.ko and
# the few others) are not, and are built once per kernel into testmod-base/
# and testmod-applied/.
#
# Their BPF programs want a newer clang than the one perf's skeletons
# use: 6.12's include cpuv4 instructions, which clang-16 cannot assemble.
# bookworm has LLVM 19 (BPF_LLVM, installed here if missing).
. "$(dirname "$0")/common.sh"

out=$BUILD_DIR/bpf-selftests
# The selftests build (and the test modules) write into their source
# tree, and the pristine tree is never modified: they build in a copy of
# it made of hard links, $BUILD_DIR/bpf-src, made again on every run.
tree=$BUILD_DIR/bpf-src
src=$tree/tools/testing/selftests/bpf
kobj_base=$(build_root base)/bpf-kernel
kobj=$(build_root applied)/bpf-kernel
for k in "$kobj_base" "$kobj"; do
	[ -f "$k/vmlinux" ] && [ -f "$k/Module.symvers" ] ||
		die "$k is not built: run 'make kernel-bpf kernel-bpf-base'"
done
mkdir -p "$out"
use_ccache

# The selftests call ld.lld by its plain name: take it, and the rest of
# the toolchain, from that LLVM; the tools they name in variables are
# given on the command line, over the CLANG the Makefile exports for perf.
# The other packages are what test_progs' tests run in the guest, whose
# root is this machine's.
llvm=${BPF_LLVM:-19}
DEPS_EXTRA="clang-$llvm llvm-$llvm lld-$llvm iproute2 iputils-ping ethtool
nftables iptables procps netcat-openbsd" "$(dirname "$0")/deps.sh"
llvm_bin=/usr/lib/llvm-$llvm/bin
[ -x "$llvm_bin/clang" ] && [ -x "$llvm_bin/ld.lld" ] ||
	die "$llvm_bin has no clang or ld.lld"
export PATH=$llvm_bin:$PATH

rm -rf "$tree"
cp -al "$BASE_TREE" "$tree"
# 6.12.117 took a test of bpf_attr sizes from a later kernel without the
# BPF program it loads (progs/cgroup_skb_direct_packet_access.c): with
# it, test_progs does not build.
rm -f "$src/prog_tests/bpf_attr_size.c"

phase "building test_progs from $src, log in $out/build.log"
# The tests' dependency files name the skeletons relative to $out, where
# the compiles run, and the next make, run in $src, cannot find them:
# drop them.  Without them a test is built again only when its source
# changes: what else it depends on (the base tree, its kernel, the LLVM
# that built the skeletons it embeds) is the stamp below, and all is
# built again when that changes.  Not through ccache either: a hit gives
# back such a dependency file.
stamp="$llvm $(cat "$BUILD_DIR/base.id") $(cat "$kobj_base/.config.id")"
if [ "$(cat "$out/.stamp" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$out"
	mkdir -p "$out"
	printf '%s\n' "$stamp" >"$out/.stamp"
fi
find "$out" -maxdepth 1 -name '*.test.d' -delete
quiet_run "$out/build.log" make -C "$src" -j"$JOBS" OUTPUT="$out" \
	VMLINUX_BTF="$kobj_base/vmlinux" KDIR="$kobj_base" CC=gcc HOSTCC=gcc \
	CLANG="$llvm_bin/clang" LLC="$llvm_bin/llc" LLVM_STRIP="$llvm_bin/llvm-strip" \
	LLVM_OBJCOPY="$llvm_bin/llvm-objcopy" "$out/test_progs"
phase_done

# The test modules build in the source tree, through the kernel's own
# module build: once for each kernel, each set kept beside test_progs.
modules="bpf_testmod bpf_test_no_cfi bpf_test_modorder_x bpf_test_modorder_y"
testmods() {
	local which=$1 kdir=$2 m

	mkdir -p "$out/testmod-$which"
	for m in $modules; do
		rm -f "$src/$m/$m.ko"
		quiet_run "$out/testmod-$which/$m.log" make -C "$src/$m" \
			KDIR="$kdir" "${MAKE_CC[@]}"
		cp "$src/$m/$m.ko" "$out/testmod-$which/"
	done
}
phase "building the test modules for the base and the patched kernel"
testmods base "$kobj_base"
testmods applied "$kobj"
phase_done
