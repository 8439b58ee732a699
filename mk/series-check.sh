#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series-check: is the series fit to post?  Writes it with make series
# and checks, printing TAP:
#   - every patch is checkpatch --strict clean, except for the warning
#     types patches/series keeps on purpose ("!checkpatch TYPE reason");
#   - git am of the series onto the base gives exactly the applied tree;
#   - each patch, applied in turn, builds what it touches: the kernel
#     objects of its .c files (of the files of its patch, for a header),
#     perf if it touches tools/perf, tools/include or tools/lib, and the
#     kselftest targets it touches;
#   - the tools/include/uapi copies of the uapi headers it changes match;
#   - the man pages of the perf documents it adds or changes build;
#   - an edit to any line of an overlay file that later patches edit
#     lands in the patch owning the line (mk/overlay-check.sh).
# The git am tree and its objects live in $BUILD_DIR/series (src/, kernel/,
# perf/), laid out like the applied tree so that ccache serves both, and
# are kept: a second run rebuilds only what the patches touch.
# SERIES_BISECT=0 skips the builds.
. "$(dirname "$0")/common.sh"

root=$(build_root series)
wt=$root/src
out=$root/check-out
name=$(git -C "$TOP" config user.name || true)
email=$(git -C "$TOP" config user.email || true)
git_wt() { git -C "$wt" -c user.name="$name" -c user.email="$email" "$@"; }
use_ccache
# checkpatch runs scripts/spdxcheck.py with the python3 on PATH: Debian's
# has python3-ply and python3-git, a pyenv one may not.
export PATH=/usr/bin:$PATH

# run_quiet LOG CMD...: run CMD, its output in LOG; status of CMD.
run_quiet() { local log=$1; shift; "$@" >"$log" 2>&1; }

SERIES_DIR=$out "$TOP/mk/series.sh" >/dev/null
# Every part's patches, in plan order (the parts' directories sort so).
mapfile -t patches < <(find "$out" -name '*.patch' | LC_ALL=C sort |
	grep -v '0000-cover-letter')
# shellcheck disable=SC2119 # no file: the log goes to stdout as it is made
tap_begin

# Edits to overlay files that later patches edit land in their patches.
if "$TOP/mk/overlay-check.sh" >"$out/overlay-check.log" 2>&1; then
	result ok "overlay-check: $(grep -c '^ok ' "$out/overlay-check.log") files, an edit to a line of each of their patches lands in that patch"
else
	result fail "overlay-check: see $out/overlay-check.log"
fi

# checkpatch, from the applied tree so it knows where it is.
i=0
for p in "${patches[@]}"; do
	i=$((i + 1))
	ignore=$(plan_checkpatch_ignores "$i")
	log=$out/$(basename "$p" .patch).checkpatch
	(cd "$SRC" && scripts/checkpatch.pl --strict --show-types \
		${ignore:+--ignore "$ignore"} "$p") >"$log" 2>&1 || true
	total=$(grep '^total:' "$log" || echo "total: checkpatch did not finish")
	if [[ $total == "total: 0 errors, 0 warnings, 0 checks, "* ]]; then
		result ok "checkpatch $(basename "$p")${ignore:+ (keeps $ignore)}"
	else
		result fail "checkpatch $(basename "$p"): $total"
		grep -E '^(ERROR|WARNING|CHECK):' "$log" | sed 's/^/# /'
	fi
done

# git am onto the base, in a worktree of the applied tree's repository.
# (again if the applied tree was made anew, e.g. for a new base)
if ! git -C "$wt" rev-parse -q --verify base >/dev/null 2>&1 ||
   [ "$(git -C "$wt" rev-parse base)" != "$(git_src rev-parse base)" ]; then
	phase "creating the git am tree $wt (once)" >&2
	rm -rf "$wt"
	git_src worktree prune
	git_src worktree add -q --detach "$wt" base
	phase_done >&2
fi
git_wt am --abort >/dev/null 2>&1 || true
git_wt checkout -q -f --detach base
if run_quiet "$out/git-am.log" git_wt am -q "${patches[@]}"; then
	if [ "$(git_wt rev-parse 'HEAD^{tree}')" = "$(git_src rev-parse 'HEAD^{tree}')" ]; then
		result ok "git am of ${#patches[@]} patches onto the base gives the applied tree"
	else
		result fail "git am of the series differs from the applied tree:"
		git_wt diff --stat HEAD "$(git_src rev-parse HEAD)" | sed 's/^/# /'
	fi
else
	result fail "git am of the series onto the base failed, see $out/git-am.log"
	exit 1
fi

# uapi headers and their tools/ copies, in the final tree.
for f in $(git_wt diff --name-only base HEAD -- include/uapi); do
	copy=tools/$f
	[ -f "$wt/$copy" ] || continue
	if cmp -s "$wt/$f" "$wt/$copy"; then
		result ok "uapi: $copy matches $f"
	else
		result fail "uapi: $copy differs from $f"
	fi
done

# man pages of the perf documents the series touches.
docs=$(git_wt diff --name-only base HEAD -- 'tools/perf/Documentation/*.txt')
for f in $docs; do
	page=$(basename "$f" .txt)
	sect=$(sed -n 's/^[a-z0-9-]*(\([157]\))$/\1/p;q' "$wt/$f")
	mkdir -p "$root/doc"
	if run_quiet "$root/doc/$page.log" make -C "$wt/tools/perf/Documentation" \
		OUTPUT="$root/doc/" "$root/doc/$page.${sect:-1}"; then
		result ok "man page $page.${sect:-1} builds"
	else
		result fail "man page $page.${sect:-1} does not build, see $root/doc/$page.log"
	fi
done
[ -n "$docs" ] || echo "# no perf documentation in the series: no man page to build"

# Bisection: each patch builds what it touches.
wt_obj=$root/kernel
if [ "${SERIES_BISECT:-1}" = 0 ]; then
	echo "# SERIES_BISECT=0: builds skipped"
else
	mkdir -p "$wt_obj"
	if ! cmp -s "$KOBJ/.config" "$wt_obj/.config"; then
		cp "$KOBJ/.config" "$wt_obj/.config"
		kmake "$wt" "$wt_obj" olddefconfig >/dev/null
	fi
	i=0
	for c in $(git_wt rev-list --reverse base..HEAD); do
		i=$((i + 1))
		git_wt checkout -q -f --detach "$c"
		subject=$(git_wt log -1 --format=%s "$c")
		files=$(git_wt diff-tree --no-commit-id --name-only -r "$c")
		built=() bad=''
		objs='' off=''
		for f in $(grep -E '^[^/]+/.*\.c$' <<<"$files" |
			   grep -vE '^(tools|Documentation|scripts|samples)/' || true); do
			# only what the test kernel's config builds
			if [ -f "$KOBJ/${f%.c}.o" ]; then
				objs="$objs ${f%.c}.o"
			else
				off="$off $f"
			fi
		done
		[ -z "$off" ] || echo "# patch $i: not in the test kernel's config:$off"
		if [ -n "$objs" ]; then
			# shellcheck disable=SC2086
			if run_quiet "$root/kernel/patch-$i.log" kmake "$wt" "$wt_obj" -j"$JOBS" $objs; then
				built+=("kernel:" $objs)
			else
				bad="kernel objects (see $root/kernel/patch-$i.log)"
			fi
		elif grep -qE '^include/' <<<"$files"; then
			# a header alone: build the objects that use what it declares
			# is out of reach; at least the kernel's headers must compile
			if run_quiet "$root/kernel/patch-$i.log" kmake "$wt" "$wt_obj" -j"$JOBS" prepare; then
				built+=("kernel: prepare")
			else
				bad="kernel prepare (see $root/kernel/patch-$i.log)"
			fi
		fi
		if grep -qE '^tools/(perf|include|lib)/' <<<"$files"; then
			if run_quiet "$root/perf-patch-$i.log" "$TOP/mk/perf.sh" series; then
				built+=("perf")
			else
				bad="$bad perf (see $root/perf/build.log)"
			fi
		fi
		for t in $(sed -n 's|^tools/testing/selftests/\([^/]*\)/.*|\1|p' <<<"$files" | sort -u); do
			if run_quiet "$root/kernel/kselftest-$t-$i.log" kmake "$wt" "$wt_obj" -j"$JOBS" \
				TARGETS="$t" kselftest-all; then
				built+=("kselftest:$t")
			else
				bad="$bad kselftest $t (see $root/kernel/kselftest-$t-$i.log)"
			fi
		done
		if [ -n "$bad" ]; then
			result fail "patch $i builds: $subject: $bad"
		elif [ ${#built[@]} = 0 ]; then
			result skip "patch $i builds: $subject" "nothing to build (documentation, MAINTAINERS)"
		else
			result ok "patch $i builds: $subject (${built[*]})"
		fi
	done
fi

tap_plan || die "series-check: $tap_fail of $tap_n checks failed (series in $out)"
echo "# series-check: $tap_n checks passed (series in $out)"
