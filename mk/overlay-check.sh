#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make overlay-check: an edit made to an overlay file lands in the patch
# that owns the edited line.  Prints TAP, one result per overlay file that
# later patches edit (the files of patches/README.md's table).
#
# On a copy of the project, for each such file, it edits one line of each
# patch that has lines in it (git blame in the applied tree tells): a
# line the claiming patch adds and later patches leave alone, and for
# each later patch a line it adds or changes; of each patch's lines, one
# with the fewest lines of the same patch around it, next to another
# patch's lines where there is such a line.  Then it runs mk/apply.sh on the
# copy, into a clone of the applied tree (no work tree; the user's tree is
# left alone), and checks each patch's commit: a marked line is there from
# the patch that owns it on and in no commit before, and apart from the
# marks every version of the file is what the unedited project gives.
. "$(dirname "$0")/common.sh"

[ -d "$SRC/.git" ] || die "no applied tree in $SRC: run 'make apply' first"
[ -z "$(git_src status --porcelain -uno)" ] ||
	die "the applied tree $SRC has edits: make refresh or make apply first"

tmp=$(mktemp -d "$BUILD_DIR/overlay-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
top=$tmp/top bd=$tmp/build
mkdir -p "$top" "$bd"
tar -C "$TOP" --exclude=.git -cf - . | tar -C "$top" -xf -
clone_applied "$bd"
g() { git -C "$bd/src" "$@"; }

# apply_copy: the last commit mk/apply.sh makes of the copy.
apply_copy() {
	TOP=$top BUILD_DIR=$bd APPLY_COMMITS_ONLY=1 "$top/mk/apply.sh" >"$tmp/apply.log" 2>&1 ||
		{ cat "$tmp/apply.log" >&2; return 1; }
	tail -n 1 "$tmp/apply.log"
}

head0=$(apply_copy) || die "make apply of the unedited project failed"
[ "$(g rev-parse "$head0^{tree}")" = "$(git_src rev-parse 'HEAD^{tree}')" ] ||
	die "the applied tree is not the project's: run make apply first"
mapfile -t plan < <(plan_entries | cut -f1)
mapfile -t commits < <(g rev-list --reverse "base..$head0")
declare -A pos=()	# commit -> its index in the plan
for i in "${!commits[@]}"; do
	pos[${commits[i]}]=$i
done

# owned_lines FILE: "line-number<TAB>plan-index<TAB>radius" for each line
# of FILE at head0, radius being how many lines on each side (up to 3)
# have the same owner.
owned_lines() {
	g blame -s -l "$head0" -- "$1" | awk '{ print NR "\t" $1 }' |
	while IFS=$'\t' read -r n c; do
		printf '%s\t%s\n' "$n" "${pos[$c]:-x}"
	done | awk -F'\t' '
		{ owner[$1] = $2; n = $1 }
		END {
			for (i = 1; i <= n; i++) {
				if (owner[i] == "x")
					continue
				for (r = 0; r < 3; r++)
					if (owner[i - r - 1] != owner[i] ||
					    owner[i + r + 1] != owner[i])
						break
				print i "\t" owner[i] "\t" r
			}
		}'
}

declare -A marks=()	# file -> "line:owner line:owner ..."
declare -A later_of=()	# file -> how many later patches edit it
files=()
while IFS=$'\t' read -r claimer f; do
	ci=-1 later=()
	for i in "${!plan[@]}"; do
		[ "${plan[i]}" = "$claimer" ] && ci=$i
		if [ $ci -ge 0 ] && [ "$i" -gt $ci ] &&
		   grep -qxF -- "$f" < <(patch_edits "${plan[i]}"); then
			later+=("$i")
		fi
	done
	[ ${#later[@]} != 0 ] || continue
	owned=$(owned_lines "$f")
	picks=()
	for owner in "$ci" "${later[@]}"; do
		# The middle one of the owner's lines with the narrowest radius:
		# the hardest to place, next to other patches' lines if any is.
		n=$(awk -F'\t' -v o="$owner" '
			$2 == o && (k == 0 || $3 < best) { best = $3; k = 0 }
			$2 == o && $3 == best { l[++k] = $1 }
			END { if (k) print l[int((k + 1) / 2)] }
		' <<<"$owned")
		[ -n "$n" ] && picks+=("$n:$owner")
	done
	[ -n "${picks[0]:-}" ] && [ "${picks[0]#*:}" = "$ci" ] ||
		die "$f: no line of its claiming patch ${plan[ci]:0:4} to edit"
	files+=("$f")
	marks[$f]="${picks[*]}"
	later_of[$f]=${#later[@]}
	for p in "${picks[@]}"; do
		sed -i "${p%%:*}s|\$| overlay-check:${p#*:}|" "$top/$f"
	done
done < <(plan_claims)
[ ${#files[@]} != 0 ] || die "no overlay file is edited by a later patch: nothing to check"

tap_begin
if ! head1=$(apply_copy); then
	result fail "make apply of the project with a line of each file edited"
	tap_end
	exit 1
fi
mapfile -t commits1 < <(g rev-list --reverse "base..$head1")
if [ ${#commits1[@]} != ${#commits[@]} ]; then
	result fail "make apply of the edited project made ${#commits1[@]} commits, not ${#commits[@]}"
	tap_end
	exit 1
fi

for f in "${files[@]}"; do
	bad=''
	picks=(${marks[$f]})
	for i in "${!commits1[@]}"; do
		if ! g cat-file -e "${commits[i]}:$f" 2>/dev/null; then
			continue
		fi
		g show "${commits1[i]}:$f" >"$tmp/now"
		for p in "${picks[@]}"; do
			owner=${p#*:}
			if [ "$i" -ge "$owner" ]; then
				grep -q " overlay-check:$owner\$" "$tmp/now" ||
					bad+=" ${plan[i]:0:4} lacks the edit of a line of ${plan[owner]:0:4};"
			elif grep -q " overlay-check:$owner\$" "$tmp/now"; then
				bad+=" ${plan[i]:0:4} has the edit of a line of ${plan[owner]:0:4};"
			fi
		done
		sed -i 's/ overlay-check:[0-9]*$//' "$tmp/now"
		g show "${commits[i]}:$f" | cmp -s - "$tmp/now" ||
			bad+=" ${plan[i]:0:4} differs elsewhere;"
	done
	owners=$(for p in "${picks[@]}"; do printf '%s ' "${plan[${p#*:}]:0:4}"; done)
	# a later patch that only removes lines has none left to edit
	[ ${#picks[@]} = $((1 + later_of[$f])) ] ||
		owners+="; no line left of the others"
	if [ -z "$bad" ]; then
		result ok "$f: edits land in their patches (${owners% })"
	else
		result fail "$f:$bad"
	fi
done
tap_end
