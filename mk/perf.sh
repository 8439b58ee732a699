#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build perf with BPF skeletons.
#   mk/perf.sh [applied|base]
# "applied" builds the project's perf into $BUILD_DIR/perf, "base" builds
# upstream's perf from the pristine tree into $BUILD_DIR/perf-base (the
# yardstick of every benchmark).  Fails if skeleton support turned itself
# off, which perf's build otherwise only mentions as a warning.
. "$(dirname "$0")/common.sh"

which=${1:-applied}
root=$(build_root "$which")
tree=$root/src obj=$root/perf
mkdir -p "$obj"
use_ccache
command -v "$CLANG" >/dev/null || die "$CLANG not found (Debian package ${CLANG})"

phase "building the $which perf, log in $obj/build.log"
# perf's Makefile rebuilds a skeleton when its .bpf.c changes, not when a
# header it includes does: drop a skeleton older than a header of
# util/bpf_skel/ its program includes, directly or through another one.
skel=$tree/tools/perf/util/bpf_skel
local_includes() {
	local h

	for h in $(sed -n 's/^#include "\([a-z_]*\.h\)"/\1/p' "$@"); do
		if [ -f "$skel/$h" ]; then
			echo "$skel/$h"
		fi
	done
}
for c in "$skel"/*.bpf.c; do
	s=$obj/util/bpf_skel/$(basename "$c" .bpf.c).skel.h
	[ -f "$s" ] || continue
	hs=$(local_includes "$c")
	[ -n "$hs" ] || continue
	# shellcheck disable=SC2086 # a list of paths without spaces
	for h in $hs $(local_includes $hs); do
		[ "$h" -nt "$s" ] || continue
		rm -f "$s" "$obj/util/bpf_skel/.tmp/$(basename "$c" .c).o"
		break
	done
done
quiet_run "$obj/build.log" make -C "$tree/tools/perf" O="$obj" -j"$JOBS" \
	CC="ccache gcc" HOSTCC="ccache gcc" CLANG="$CLANG" LLVM_STRIP="$LLVM_STRIP" \
	BUILD_BPF_SKEL=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JEVENTS=1 \
	WERROR=0 PYTHON=python3
"$obj/perf" version --build-options >"$obj/build-options.txt"
grep -Eq 'bpf_skeletons: +\[ on' "$obj/build-options.txt" ||
	die "the $which perf was built without BPF skeletons, see $obj/build.log"
grep -Eq '^ *bpf: +\[ on' "$obj/build-options.txt" ||
	die "the $which perf was built without libbpf, see $obj/build.log"
printf '    %s: %s\n' "$obj/perf" "$(head -n 1 "$obj/build-options.txt")"
phase_done
