#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make perf-rev [REV=rev]: build the perf of another revision of this
# project (default PERF_BEFORE_REV), which make bench-perf-bpf runs beside
# ours.
#   mk/perf-rev.sh [REV]
# Its perf goes to $BUILD_DIR/rev/SHA/perf/perf, SHA being the full
# commit id, and the files of its applied tree that perf's build needs to
# $BUILD_DIR/rev/SHA/src.  As in mk/overlay-check.sh, the revision's own
# mk/apply.sh (APPLY_COMMITS_ONLY) applies a copy of it (git archive) in a
# clone of the applied tree without a work tree: neither the applied tree
# nor the project's work tree is touched, and the clone and the copy are
# removed once its files are out.  mk/perf.sh builds it, through the same
# ccache.  Does nothing when that perf is built, on the same base.
. "$(dirname "$0")/common.sh"

rev=${1:-$PERF_BEFORE_REV}
[ -n "$rev" ] || die "no revision to build: give REV= (or PERF_BEFORE_REV=)"
sha=$(rev_sha "$rev") || die "$rev is not a commit of the project in $TOP"
if perf=$(rev_perf "$sha"); then
	printf '==> perf of %s: %s\n' "$rev" "$perf"
	exit 0
fi
if [ ! -d "$SRC/.git" ] || ! git_src rev-parse -q --verify base >/dev/null; then
	die "no applied tree in $SRC: run 'make build' (or 'make apply') first"
fi
base_id=$(cat "$BUILD_DIR/base.id")
[ "$(git_src config --get bpfperf.baseid)" = "$base_id" ] ||
	die "the applied tree $SRC is not of the base $base_id: run 'make apply' first"
git -C "$TOP" show "$sha:mk/apply.sh" | grep APPLY_COMMITS_ONLY >/dev/null ||
	die "$rev's mk/apply.sh cannot apply into a clone (no APPLY_COMMITS_ONLY): too old"

root=$(build_root rev "$sha")
phase "applying the project as of $rev (${sha:0:12}) into $root/src"
rm -rf "$root"
mkdir -p "$root/src"
tmp=$(mktemp -d "$BUILD_DIR/rev/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
mkdir -p "$tmp/top" "$tmp/build"
git -C "$TOP" archive "$sha" | tar -C "$tmp/top" -xf -
clone_applied "$tmp/build"
quiet_run "$tmp/apply.log" env TOP="$tmp/top" BUILD_DIR="$tmp/build" APPLY_COMMITS_ONLY=1 \
	"$tmp/top/mk/apply.sh"
head=$(tail -n 1 "$tmp/apply.log")
git -C "$tmp/build/src" rev-parse -q --verify "$head^{commit}" >/dev/null || {
	tail -n 20 "$tmp/apply.log" >&2
	die "$rev's mk/apply.sh did not end with a commit id"
}
# What perf's build reads: what tools/perf/MANIFEST names (what perf's
# own tarball, make perf-tar-src-pkg, holds: parts of tools/, arch/,
# kernel/bpf/, scripts/), and the rest of tools/.  Without include/ perf's
# check-headers.sh skips itself, as in that tarball.  -m: files dated now,
# not at the applied tree's fixed commit date.
mapfile -t manifest < <(git -C "$tmp/build/src" show "$head:tools/perf/MANIFEST")
[ ${#manifest[@]} != 0 ] || die "no tools/perf/MANIFEST in $rev's applied tree"
git -C "$tmp/build/src" archive "$head" -- "${manifest[@]}" tools |
	tar -C "$root/src" -m -xf -
# The version perf has when built in the applied tree: the kernel's and
# the commit id, which here it has no .git to take from (as
# tools/perf/util/PERF-VERSION-GEN makes it).
version=$(git -C "$tmp/build/src" show "$head:Makefile" | awk -F' *= *' '
	$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
	$1 == "SUBLEVEL" { s = $2 } $1 == "EXTRAVERSION" { e = $2 }
	END { print v "." p (s == "" ? "" : "." s) e }' |
	sed -e "s/\$/-g${head:0:12}/" -e 's/-/./g;s/\([0-9]*[.][0-9]*\)[.]0/\1/')
printf '#define PERF_VERSION "%s"\n' "$version" >"$root/src/PERF-VERSION-FILE"
printf '    %s: %s + the project as of %s = %s\n' "$root/src" "$base_id" "$rev" "${head:0:12}"
phase_done

"$TOP/mk/perf.sh" rev "$sha"
printf '%s %s\n' "$sha" "$base_id" >"$root/perf/rev.id"
