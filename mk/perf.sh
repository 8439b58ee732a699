#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build perf with BPF skeletons.
#   mk/perf.sh [applied|base|series|rev SHA]
# "applied" builds the project's perf into $BUILD_DIR/perf, "base" builds
# upstream's perf from the pristine tree into $BUILD_DIR/pristine/perf
# (perf-base in the VM, the yardstick of every benchmark), "series" that
# of make series-check's git am tree into $BUILD_DIR/series/perf, "rev
# SHA" that of project commit SHA, which mk/perf-rev.sh exports to
# $BUILD_DIR/rev/SHA/src, into $BUILD_DIR/rev/SHA/perf.  Fails if
# skeleton support turned itself off, which perf's build otherwise only
# mentions as a warning.
. "$(dirname "$0")/common.sh"

which=${1:-applied}
root=$(build_root "$which" "${2:-}")
[ "$which" != rev ] || which="rev ${2:0:12}"
tree=$root/src obj=$root/perf
mkdir -p "$obj"
use_ccache
command -v "$CLANG" >/dev/null || die "$CLANG not found (Debian package ${CLANG})"

phase "building the $which perf, log in $obj/build.log"
quiet_run "$obj/build.log" make -C "$tree/tools/perf" O="$obj" -j"$JOBS" \
	"${MAKE_CC[@]}" CLANG="$CLANG" LLVM_STRIP="$LLVM_STRIP" \
	BUILD_BPF_SKEL=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JEVENTS=1 \
	WERROR=0 PYTHON=python3
"$obj/perf" version --build-options >"$obj/build-options.txt"
grep -Eq 'bpf_skeletons: +\[ on' "$obj/build-options.txt" ||
	die "the $which perf was built without BPF skeletons, see $obj/build.log"
grep -Eq '^ *bpf: +\[ on' "$obj/build-options.txt" ||
	die "the $which perf was built without libbpf, see $obj/build.log"
printf '    %s: %s\n' "$obj/perf" "$(head -n 1 "$obj/build-options.txt")"
phase_done
