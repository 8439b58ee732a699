#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make $BUILD_DIR/src the applied tree: the pristine base, then the series
# of patches/series (the commit plan, see plan_entries in common.sh).
#
# The applied tree is a git repository.  Commit "base" (tag base) is the
# pristine tree; on top of it sits one commit per patch of the plan, each
# holding the patch file's edits and the overlay files the plan gives it,
# on branch "applied": the series as it goes to the mailing list.  Overlay
# files the plan does not name yet go in one last commit.  The commits are
# built in a scratch index and only then checked out, so git rewrites just
# the files whose content changed and make rebuilds nothing else.  They
# are deterministic: applying the same project twice gives the same ids.
. "$(dirname "$0")/common.sh"

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

# APPLY_COMMITS_ONLY=1 (mk/overlay-check.sh, on a clone without a work
# tree): build the commits, leave the work tree and HEAD alone, print the
# last commit's id.
if [ -z "${APPLY_COMMITS_ONLY:-}" ] &&
   [ -n "$(git_src status --porcelain -uno)" ] && [ -z "${FORCE:-}" ]; then
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

# commit_index SUBJECT-AND-BODY [author env]: commit the scratch index on
# top of $head; deterministic dates unless the patch gives its own.
commit_index() {
	local tree

	tree=$(git_src write-tree)
	head=$(printf '%s' "$1" |
		GIT_AUTHOR_NAME=${AUTHOR_NAME:-bpf-perf apply} \
		GIT_AUTHOR_EMAIL=${AUTHOR_EMAIL:-apply@localhost} \
		GIT_AUTHOR_DATE=${AUTHOR_DATE:-@946684800 +0000} \
		GIT_COMMITTER_NAME="bpf-perf apply" \
		GIT_COMMITTER_EMAIL="apply@localhost" \
		GIT_COMMITTER_DATE="@946684800 +0000" \
		git_src commit-tree "$tree" -p "$head")
}

# An overlay file holds a file as the whole series leaves it.  When later
# patches of the plan edit a file an earlier one claims (a command, then a
# subcommand of it), each patch's commit gets the file as it was after
# that patch: the overlay's version with the edits of the patches after it
# taken back, the last patch first.  The claiming patch adds the first
# version; a later patch's commit takes its version as it is rather than
# applying the patch file's diff to it, so an edit made to the overlay
# file anywhere stays in the patches from the one that owns the line on.
#
# Taking a patch back uses the diff's own pre- and post-image, the blobs
# of its "index" line, which the applied tree holds since the last apply:
# the file is the post-image, and becomes the pre-image; or it has edits,
# and mk/take-back.py takes back what the patch changed and keeps the
# edits to every other line.  An edit to a line a later patch adds or
# changes thus stays in that patch, an edit to any other line reaches the
# earlier versions; the next "make refresh" writes the diffs again.
# Without the blobs (a new applied tree), "git apply -R" of the diff.
declare -A early=() version=()
stale=()
edits_tmp=$(mktemp -d "$BUILD_DIR/edits.XXXXXX")
trap 'rm -rf "$idx" "$msg" "$hdr" "$msg.patch" "$edits_tmp" "$edits_tmp.check"' EXIT
trap 'exit 1' INT TERM

# take_back PATCH FILE: $edits_tmp/FILE as it was before PATCH.
take_back() {
	local p=$1 f=$2 w=$edits_tmp/$2 d=$edits_tmp.check pre='' post=''

	read -r pre post < <(awk -v f="$f" '
		/^diff --git / { want = ($3 == "a/" f) }
		want && /^index / { split($2, b, /\.\./); print b[1], b[2]; exit }
	' "$TOP/patches/$p") || true
	if pre=$(git_src rev-parse -q --verify "${pre:-none}^{blob}") &&
	   post=$(git_src rev-parse -q --verify "${post:-none}^{blob}"); then
		# The diff must be the one between its blobs: a hand edit to
		# it would be lost below.
		rm -rf "$d"
		mkdir -p "$d/$(dirname "$f")"
		git_src cat-file blob "$pre" >"$d/$f"
		(cd "$d" && GIT_CEILING_DIRECTORIES=$(cd .. && pwd -P) \
			git apply --include="$f" "$TOP/patches/$p" 2>/dev/null) &&
			[ "$(git_src hash-object --no-filters -- "$d/$f")" = "$post" ] ||
			die "patches/$p's diff of $f is not the one between the blobs its
  index line names (edited by hand?): make the edit in the applied tree"
		rm -rf "$d"
		if [ "$(git_src hash-object --no-filters -- "$w")" = "$post" ]; then
			git_src cat-file blob "$pre" >"$w"
			return
		fi
		git_src cat-file blob "$pre" >"$w.pre"
		git_src cat-file blob "$post" >"$w.post"
		python3 "$TOP/mk/take-back.py" "$w" "$w.post" "$w.pre" ||
			die "cannot take patches/$p back from the overlay's $f (see above)"
		rm -f "$w.pre" "$w.post"
		stale+=("$p")
		return
	fi
	# No applied tree yet (or one of another project): the diff as it is.
	(cd "$edits_tmp" &&
	 GIT_CEILING_DIRECTORIES=$(cd .. && pwd -P) \
		git apply -R --include="$f" "$TOP/patches/$p") ||
		die "patches/$p does not apply to the overlay's $f, and the applied tree
  lacks the blobs of its diff to take an edit back with: refresh the patch"
}

mapfile -t plan < <(plan_entries | cut -f1)
while IFS=$'\t' read -r claimer f; do
	later=()
	seen=0
	for p in "${plan[@]}"; do
		if [ "$p" = "$claimer" ]; then
			seen=1
		elif [ $seen = 1 ] && grep -qxF -- "$f" < <(patch_edits "$p"); then
			later+=("$p")
		fi
	done
	[ ${#later[@]} != 0 ] || continue
	mkdir -p "$edits_tmp/$(dirname "$f")"
	cp "$TOP/$f" "$edits_tmp/$f"
	for ((i = ${#later[@]} - 1; i >= 0; i--)); do
		version[${later[i]}|$f]=$(git_src hash-object -w --no-filters -- "$edits_tmp/$f")
		take_back "${later[i]}" "$f"
	done
	early[$f]=$(git_src hash-object -w --no-filters -- "$edits_tmp/$f")
done < <(plan_claims)

# add_files FILE...: put these overlay files (relative to $TOP) in the
# index; MAINTAINERS-fragment becomes the base MAINTAINERS with our entry.
add_files() {
	local f mode blob

	for f in "$@"; do
		if [ "$f" = MAINTAINERS-fragment ]; then
			blob=$(merge_maintainers <(git_src show base:MAINTAINERS) \
				"$TOP/$f" | git_src hash-object -w --stdin)
			printf '100644 %s\tMAINTAINERS\n' "$blob"
			continue
		fi
		mode=100644
		[ -x "$TOP/$f" ] && mode=100755
		blob=${early[$f]:-$(git_src hash-object -w --no-filters -- "$TOP/$f")}
		printf '%s %s\t%s\n' "$mode" "$blob" "$f"
	done | git_src update-index --add --index-info
}

# Each overlay file goes with the patch of the plan that names it (or its
# directory); files no patch names go in a last commit of their own.
mapfile -t unclaimed < <(overlay_files)
while IFS=$'\t' read -r p paths; do
	f=$TOP/patches/$p
	[ -f "$f" ] || die "patches/series names $p, which does not exist"
	git_src mailinfo "$msg" "$msg.patch" <"$f" >"$hdr"
	if grep -q "^diff --git " "$msg.patch"; then
		excl=()
		for f in "${!early[@]}"; do
			excl+=("--exclude=$f")
		done
		git_src apply --cached "${excl[@]}" "$msg.patch" ||
			die "patch $p does not apply to $base_id"
	fi
	for f in "${!early[@]}"; do
		[ -n "${version[$p|$f]:-}" ] || continue
		mode=100644
		[ -x "$TOP/$f" ] && mode=100755
		git_src update-index --cacheinfo "$mode,${version[$p|$f]},$f"
	done
	files=()
	for path in $paths; do
		[ -e "$TOP/$path" ] || die "patches/series: $p claims $path, which does not exist"
		rest=()
		for u in "${unclaimed[@]}"; do
			case $u in
			"$path" | "$path"/*) files+=("$u") ;;
			*) rest+=("$u") ;;
			esac
		done
		[ ${#rest[@]} -lt ${#unclaimed[@]} ] ||
			die "patches/series: $path, claimed by $p, is claimed by an earlier patch too"
		unclaimed=("${rest[@]}")
	done
	[ ${#files[@]} = 0 ] || add_files "${files[@]}"
	AUTHOR_NAME=$(sed -n 's/^Author: //p' "$hdr") \
	AUTHOR_EMAIL=$(sed -n 's/^Email: //p' "$hdr") \
	AUTHOR_DATE=$(sed -n 's/^Date: //p' "$hdr") \
		commit_index "$(printf '%s\n\n%s' "$(sed -n 's/^Subject: //p' "$hdr")" "$(cat "$msg")")"
	n=$((n + 1))
done < <(plan_entries)

if [ ${#stale[@]} != 0 ]; then
	printf '    edits merged into the commits of: %s (make refresh writes them)\n' \
		"$(printf '%s\n' "${stale[@]}" | sort -u | cut -c1-4 | xargs)"
fi

nfiles=$(overlay_files | wc -l)
if [ ${#unclaimed[@]} != 0 ]; then
	add_files "${unclaimed[@]}"
	commit_index "$OVERLAY_SUBJECT"
	printf '    not in any patch of patches/series yet: %s\n' "${unclaimed[*]}"
fi
unset GIT_INDEX_FILE

if [ -n "${APPLY_COMMITS_ONLY:-}" ]; then
	echo "$head"
	exit 0
fi
# Also when only the work tree differs: FORCE=1 drops its edits.
if [ "$(git_src rev-parse HEAD)" != "$head" ] ||
   [ -n "$(git_src status --porcelain -uno)" ]; then
	git_src diff --stat=100 HEAD "$head" | tail -n 1 | sed 's/^/    /'
	git_src reset -q --hard "$head"
fi
printf '    %s + %d patches + %d overlay files = %s\n' \
	"$base_id" "$n" "$nfiles" "$(git_src rev-parse --short HEAD)"
phase_done
