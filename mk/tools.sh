#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build what the VM runs besides perf: bpftool from the applied tree, the
# kselftests (installed with the kernel's own kselftest-install), and the
# harness's small helpers from selftests/vm/guest/.
. "$(dirname "$0")/common.sh"

mkdir -p "$TOBJ/bpftool"
use_ccache

phase "building bpftool, log in $TOBJ/bpftool.log"
quiet_run "$TOBJ/bpftool.log" make -C "$SRC/tools/bpf/bpftool" \
	OUTPUT="$TOBJ/bpftool/" -j"$JOBS" "${MAKE_CC[@]}" \
	CLANG="$CLANG" LLVM_STRIP="$LLVM_STRIP"
phase_done

phase "building the VM helpers"
make -s -C "$TOP/selftests/vm/guest" O="$TOBJ/vm" CLANG="$CLANG" \
	BPF_INCLUDE="$TOBJ/bpftool/libbpf/include" UAPI_INCLUDE="$SRC/tools/include/uapi"
phase_done

# Kselftest targets the VM runs; config fragments of these feed the kernel.
KSFT_TARGETS=${KSFT_TARGETS:-perf_events}
phase "building and installing kselftests ($KSFT_TARGETS), log in $TOBJ/kselftest.log"
[ -f "$KOBJ/.config" ] || die "configure the kernel first (mk/kernel.sh)"
rm -rf "$KST.new"
# The kselftests' makefiles do not know that their programs depend on the
# uapi headers: build them all again when those changed since the last
# build (a program built with another perf_event_attr layout would ask
# the kernel for the wrong bits).
uapi_sum=$(cat "$SRC"/include/uapi/linux/perf_event.h "$SRC"/include/uapi/linux/bpf.h |
	sha1sum | cut -d' ' -f1)
for t in $KSFT_TARGETS; do
	if [ "$(cat "$KOBJ/kselftest/$t/.uapi" 2>/dev/null)" != "$uapi_sum" ]; then
		rm -rf "$KOBJ/kselftest/$t"
		mkdir -p "$KOBJ/kselftest/$t"
		echo "$uapi_sum" >"$KOBJ/kselftest/$t/.uapi"
	fi
done
quiet_run "$TOBJ/kselftest.log" make -C "$SRC" O="$KOBJ" -j"$JOBS" \
	TARGETS="$KSFT_TARGETS" KSFT_INSTALL_PATH="$KST.new" kselftest-install
rm -rf "$KST"
mv "$KST.new" "$KST"
printf '    %s tests in %s\n' "$(wc -l <"$KST/kselftest-list.txt")" "$KST"
phase_done
