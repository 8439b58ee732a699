#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bring edits made in the applied tree ($BUILD_DIR/src) back into the project.
#
#   make refresh                     overlay files only, or edits that touch
#                                    files of exactly one patch
#   make refresh PATCH=0002          fold the edits into patches/0002-*.patch
#   make refresh NEW='subsys: subject'  make a new patch at the end of series
#
# Commits made in the applied tree on top of the series (git commit there,
# with a full message) become patches as they are.
#
# Files the overlay owns, and files new to the tree, are copied back to the
# overlay.  Edits to files upstream owns become part of a patch: committed
# as a fixup of that patch's commit and squashed in with git rebase, after
# which every patch of the series is written again with git format-patch.
. "$(dirname "$0")/common.sh"

PATCH=${PATCH:-}
NEW=${NEW:-}

[ -d "$SRC/.git" ] || die "no applied tree in $SRC: run 'make apply' first"

mapfile -t modified < <(git_src diff --name-only HEAD)
# Not --exclude-standard: the Debian tree's .gitignore ignores every top-level
# path, and builds write nothing here (they all use O=).
mapfile -t added < <(git_src ls-files --others)
# edited_later FILE: a patch other than the one adding the overlay file
# edits it (see mk/apply.sh): edits to it are folded like upstream's.
edited_later() {
	[ -e "$TOP/$1" ] &&
		[ "$(git_src log --format=%s base..HEAD -- "$1" |
			grep -cvxF "$OVERLAY_SUBJECT")" -ge 2 ]
}

upstream=()
for f in "${modified[@]}" "${added[@]}"; do
	[ -n "$f" ] || continue
	if edited_later "$f"; then
		upstream+=("$f")
	elif [ -e "$TOP/$f" ] || ! git_src cat-file -e "base:$f" 2>/dev/null; then
		mkdir -p "$(dirname "$TOP/$f")"
		cp -p "$SRC/$f" "$TOP/$f"
		echo "    overlay: $f"
		if git_src cat-file -e "HEAD:$f" 2>/dev/null; then
			git_src checkout -q HEAD -- "$f"
		else
			rm -f "$SRC/$f"
		fi
	else
		upstream+=("$f")
	fi
done
# The patch commits, oldest first, without the overlay commit.
patch_commits() {
	git_src log --reverse --format='%H %s' base..HEAD |
		grep -vF " $OVERLAY_SUBJECT" | cut -d' ' -f1
}

# fold_edits: commit the edits to upstream files as a new patch (NEW=) or
# as part of an existing one (PATCH=, or the one patch touching them all).
fold_edits() {
	local target='' i c f all touched name email want

	if [ -n "$NEW" ]; then
		name=$(git -C "$TOP" config user.name)
		email=$(git -C "$TOP" config user.email)
		[ -n "$name" ] && [ -n "$email" ] ||
			die "set git config user.name and user.email"
		git_src add -f -- "${upstream[@]}"
		git_src -c user.name="$name" -c user.email="$email" commit -q \
			-m "$NEW" -m "Signed-off-by: $name <$email>"
		echo "    new patch: $NEW"
		return
	fi
	if [ -n "$PATCH" ]; then
		[[ ${PATCH%%-*} =~ ^[0-9]+$ ]] || die "PATCH=NNNN: a patch number, not '$PATCH'"
		# 10#: 0011 is eleven, not octal nine
		want=$((10#${PATCH%%-*}))
		i=0
		for c in $(patch_commits); do
			i=$((i + 1))
			if [ "$i" = "$want" ]; then
				target=$c
			fi
		done
		[ -n "$target" ] || die "no patch $PATCH in patches/series"
	else
		# The one patch that touches all the edited files.
		for c in $(patch_commits); do
			touched=$(git_src diff-tree --no-commit-id --name-only -r "$c")
			all=1
			for f in "${upstream[@]}"; do
				grep -qxF "$f" <<<"$touched" || all=0
			done
			[ $all = 1 ] && target="$target $c"
		done
		target=${target# }
		case $target in
		"" | *" "*)
			printf '    %s\n' "${upstream[@]}" >&2
			die "say which patch these edits belong to: PATCH=NNNN or NEW='subject'" ;;
		esac
	fi
	git_src add -f -- "${upstream[@]}"
	git_src commit -q --fixup="$target"
	GIT_SEQUENCE_EDITOR=: git_src rebase -q -i --autosquash base ||
		die "rebase failed in $SRC: resolve it there (git rebase --continue), then run make refresh again"
	echo "    folded into: $(git_src log -1 --format=%s "$target")"
}

# Without edits to fold, commits made in the tree are still written out.
# The overlay holds files as the series leaves them: those later patches
# edit change in the commits, by a fold here or by commits made in the
# tree on top of the plan's; bring them back (and only them: an overlay
# file edited in the project but not in the tree keeps its edits).
declare -A before=()
while IFS= read -r f; do
	[ "$f" != MAINTAINERS-fragment ] && edited_later "$f" || continue
	before[$f]=$(git_src rev-parse "HEAD:$f")
done < <(overlay_files)
nplan=$(plan_entries | wc -l)
mapfile -t committed < <(patch_commits | tail -n +"$((nplan + 1))" |
	xargs -r -n1 git -C "$SRC" diff-tree --no-commit-id --name-only -r | sort -u)
[ ${#upstream[@]} = 0 ] || fold_edits
for f in "${!before[@]}"; do
	if [ "$(git_src rev-parse "HEAD:$f")" = "${before[$f]}" ] &&
	   ! grep -qxF -- "$f" <<<"$(printf '%s\n' "${committed[@]}")"; then
		continue
	fi
	git_src show "HEAD:$f" | cmp -s - "$TOP/$f" && continue
	git_src show "HEAD:$f" >"$TOP/$f"
	echo "    overlay: $f"
done

# Write the patch files again from the commits, without the overlay files
# each adds (and the MAINTAINERS they make), which stay where they are;
# a later patch's edits to an overlay file stay in that patch.  Keep the
# plan's lines, patch by patch.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t plan < <(plan_entries | cut -f1)
declare -A claims=()
while IFS=$'\t' read -r p f; do
	[ "$f" = MAINTAINERS-fragment ] || claims[$p]+=" $f"
done < <(plan_claims)
i=0
for c in $(patch_commits); do
	i=$((i + 1))
	exclude=(":(exclude)MAINTAINERS")
	p=${plan[i - 1]:-}
	if [ -n "$p" ]; then
		for f in ${claims[$p]:-}; do
			exclude+=(":(exclude)$f")
		done
	fi
	# c^..c, not -1 c: with a pathspec, -1 would pick the last commit
	# touching it; --full-history --sparse keep a commit of overlay only.
	git_src format-patch -q --always --full-history --sparse \
		--start-number "$i" --zero-commit --no-signature -o "$tmp" \
		"$c^..$c" -- . "${exclude[@]}"
done
[ -f "$TOP/patches/series" ] && cp "$TOP/patches/series" "$tmp/plan"
: >>"$tmp/plan"
# The plan with its patch lines replaced, in order, by the new file names.
(cd "$tmp" && ls -- *.patch 2>/dev/null) | awk '
	NR == FNR { name[++n] = $0; next }
	/^[^ \t#]/ && !/^[ \t]*$/ { if (++k <= n) print name[k]; next }
	{ print }
	END { for (k++; k <= n; k++) print name[k] }
' - "$tmp/plan" >"$tmp/series"
rm -f "$TOP"/patches/[0-9][0-9][0-9][0-9]-*.patch
cp "$tmp/series" "$TOP/patches/series"
cp "$tmp"/*.patch "$TOP/patches/"
echo "    patches/: $i patches written"
