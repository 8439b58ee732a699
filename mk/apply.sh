#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make $BUILD_DIR/src the applied tree: the pristine base, then every patch
# named in patches/series in order, then every overlay file.
#
# The applied tree is a git repository.  Commit "base" (tag base) is the
# pristine tree; on top of it sits one commit per patch and one commit with
# the overlay files, on branch "applied".  The commits are built in a
# scratch index and only then checked out, so git rewrites just the files
# whose content changed and make rebuilds nothing else.  The commits are
# deterministic: applying the same project twice gives the same commit ids.
. "$(dirname "$0")/common.sh"

git_src() { git -C "$SRC" "$@"; }

base_id=$(cat "$BUILD_DIR/base.id")
if [ "$(git_src config --get bpfperf.baseid 2>/dev/null)" != "$base_id" ]; then
	phase "creating the applied tree from the base (once per base)"
	rm -rf "$SRC"
	cp -a "$BASE_TREE" "$SRC"
	git_src init -q -b applied
	git_src config core.untrackedCache true
	git_src config gc.auto 0
	git_src config user.name "bpf-perf apply"
	git_src config user.email "apply@localhost"
	# -f: the tarball may hold files that .gitignore names.
	git_src add -A -f .
	GIT_AUTHOR_DATE="@946684800 +0000" GIT_COMMITTER_DATE="@946684800 +0000" \
		git_src commit -q -m "base: $base_id"
	git_src tag base
	git_src config bpfperf.baseid "$base_id"
	phase_done
fi

if [ -n "$(git_src status --porcelain -uno)" ] && [ -z "${FORCE:-}" ]; then
	git_src status --short -uno | head -20 >&2
	die "the applied tree $SRC has edits that are not in the project:
  run 'make refresh' to bring them back, or 'make apply FORCE=1' to drop them"
fi

phase "applying patches and overlay"
idx=$(mktemp "$BUILD_DIR/index.XXXXXX")
msg=$(mktemp "$BUILD_DIR/msg.XXXXXX")
hdr=$(mktemp "$BUILD_DIR/hdr.XXXXXX")
trap 'rm -f "$idx" "$msg" "$hdr" "$msg.patch"' EXIT
export GIT_INDEX_FILE=$idx
git_src read-tree base
head=$(git_src rev-parse base)
n=0

# patch_list: the patch files in series order.
patch_list() {
	[ -f "$TOP/patches/series" ] || return 0
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/patches/series"
}

for p in $(patch_list); do
	f=$TOP/patches/$p
	[ -f "$f" ] || die "patches/series names $p, which does not exist"
	git_src mailinfo "$msg" "$msg.patch" <"$f" >"$hdr"
	git_src apply --cached "$msg.patch" ||
		die "patch $p does not apply to $base_id"
	subject=$(sed -n 's/^Subject: //p' "$hdr")
	tree=$(git_src write-tree)
	head=$(printf '%s\n\n%s' "$subject" "$(cat "$msg")" |
		GIT_AUTHOR_NAME=$(sed -n 's/^Author: //p' "$hdr") \
		GIT_AUTHOR_EMAIL=$(sed -n 's/^Email: //p' "$hdr") \
		GIT_AUTHOR_DATE=$(sed -n 's/^Date: //p' "$hdr") \
		GIT_COMMITTER_NAME="bpf-perf apply" \
		GIT_COMMITTER_EMAIL="apply@localhost" \
		GIT_COMMITTER_DATE="@946684800 +0000" \
		git_src commit-tree "$tree" -p "$head")
	n=$((n + 1))
done

for d in $(overlay_dirs); do
	while IFS= read -r -d '' f; do
		rel=${f#"$TOP"/}
		mode=100644
		[ -x "$f" ] && mode=100755
		blob=$(git_src hash-object -w --no-filters -- "$f")
		printf '%s %s\t%s\n' "$mode" "$blob" "$rel"
	done < <(find "$TOP/$d" -type f -print0)
done | git_src update-index --add --index-info
nfiles=0
dirs=$(overlay_dirs)
[ -z "$dirs" ] || nfiles=$(cd "$TOP" && find $dirs -type f | wc -l)
tree=$(git_src write-tree)
if [ "$tree" != "$(git_src rev-parse "$head^{tree}")" ]; then
	head=$(GIT_AUTHOR_NAME="bpf-perf apply" GIT_AUTHOR_EMAIL="apply@localhost" \
		GIT_AUTHOR_DATE="@946684800 +0000" GIT_COMMITTER_NAME="bpf-perf apply" \
		GIT_COMMITTER_EMAIL="apply@localhost" GIT_COMMITTER_DATE="@946684800 +0000" \
		git_src commit-tree "$tree" -p "$head" -m "overlay: project files")
fi
unset GIT_INDEX_FILE

if [ "$(git_src rev-parse HEAD)" != "$head" ]; then
	git_src diff --stat=100 HEAD "$head" | tail -n 1 | sed 's/^/    /'
	git_src reset -q --hard "$head"
fi
printf '    %s + %d patches + %d overlay files = %s\n' \
	"$base_id" "$n" "$nfiles" "$(git_src rev-parse --short HEAD)"
phase_done
