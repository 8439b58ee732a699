#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series: the series of the applied tree as mail, ready for
# git send-email, in SERIES_DIR (default $BUILD_DIR/series/out).
#
#   SERIES_VERSION=N   revision: [PATCH vN m/n], and the cover letter gets
#                      the changelog of patches/changelog.txt
#
# The applied tree's commits are the series (see mk/apply.sh).  The plan's
# "#@ series NAME TREE" lines cut it into parts, each its own series for
# its own tree, in SERIES_DIR/KK-NAME (KK its place): git format-patch with
# [PATCH TREE] subjects, a cover letter from patches/cover-letter-NAME.txt,
# Signed-off-by from git config, To/Cc from scripts/get_maintainer.pl
# over the tree's MAINTAINERS (ours merged in) for that part's patches.
# A part applies on the ones before it: its base-commit is the base, its
# prerequisite-patch-ids those of the parts before.  A plan without such
# lines would be one series, in SERIES_DIR itself, with
# patches/cover-letter.txt (this project's plan has two parts).
. "$(dirname "$0")/common.sh"

OUT=${SERIES_DIR:-$BUILD_DIR/series/out}
V=${SERIES_VERSION:-1}

case $V in '' | *[!0-9]* | 0) die "SERIES_VERSION must be a number from 1" ;; esac
name=$(git -C "$TOP" config user.name || true)
email=$(git -C "$TOP" config user.email || true)
[ -n "$name" ] && [ -n "$email" ] ||
	die "set git config user.name and user.email: they sign the patches off"
[ -z "$(git_src status --porcelain -uno)" ] ||
	die "the applied tree $SRC has edits: run 'make refresh' or 'make apply FORCE=1'"
last=$(git_src log -1 --format=%s)
[ "$last" != "$OVERLAY_SUBJECT" ] ||
	die "overlay files that no patch of patches/series claims:
$(git_src diff-tree --no-commit-id --name-only -r HEAD | sed 's/^/  /')"

# plan_parts: "name|tree|first|last" for each part of the plan, first
# and last the 1-based numbers of its patches; "||1|N" without parts.
plan_parts() {
	awk '
		/^#@ series / {
			if (n && name == "") {
				print "patches/series: patches before the first #@ series line" > "/dev/stderr"
				exit 1
			}
			if (name != "" && n > first - 1) print name "|" tree "|" first "|" n
			name = $3; tree = $4; first = n + 1; next
		}
		{ sub(/#.*/, "") }
		/^[ \t]*$/ || /^[ \t]/ { next }
		{ n++ }
		END {
			if (name == "") print "||1|" n
			else if (n > first - 1) print name "|" tree "|" first "|" n
		}
	' "$TOP/patches/series"
}

mapfile -t commits < <(git_src rev-list --reverse base..HEAD)
parts_list=$(plan_parts) || die "patches/series: see above"
mapfile -t parts <<<"$parts_list"
nparts=${#parts[@]}
[ "${parts[nparts - 1]##*|}" = ${#commits[@]} ] ||
	die "patches/series names ${parts[nparts - 1]##*|} patches, the applied tree has ${#commits[@]}"
blurb=$(mktemp)
trap 'rm -f "$blurb"' EXIT
phase "writing the series to $OUT"
rm -rf "$OUT"
mkdir -p "$OUT"
k=0
for part in "${parts[@]}"; do
	IFS='|' read -r pname tree first last <<<"$part"
	k=$((k + 1))
	if [ "$nparts" = 1 ] && [ -z "$pname" ]; then
		dir=$OUT letter=$TOP/patches/cover-letter.txt
	else
		dir=$OUT/$(printf '%02d' $k)-$pname letter=$TOP/patches/cover-letter-$pname.txt
	fi
	[ -f "$letter" ] || die "no cover letter for series '$pname': $letter"
	from=base
	[ "$first" = 1 ] || from=${commits[first - 2]}
	range=$from..${commits[last - 1]}
	mkdir -p "$dir"
	fp() {
		git_src -c user.name="$name" -c user.email="$email" format-patch -q \
			--cover-letter --signoff --thread=shallow --zero-commit \
			${tree:+--subject-prefix="PATCH $tree"} \
			--base=base $([ "$V" = 1 ] || echo "-v$V") -o "$dir" "$@" "$range"
	}
	fp

	# Recipients: the maintainers of what the patches touch, and the lists.
	maint() {
		(cd "$SRC" && scripts/get_maintainer.pl --no-git --no-git-fallback \
			--no-rolestats "$@" $(ls "$dir"/*.patch | grep -v '0000-cover-letter'))
	}
	mapfile -t to < <(maint --nol --nor)
	mapfile -t cc < <(maint --nom | grep -vxF -f <(printf '%s\n' "${to[@]}"))
	rm -f "$dir"/*.patch
	args=()
	for a in "${to[@]}"; do args+=(--to="$a"); done
	for a in "${cc[@]}"; do args+=(--cc="$a"); done
	fp "${args[@]}"

	# The cover letter: subject and text from the part's letter, then the
	# base, then the changes since earlier revisions.
	cover=$(ls "$dir"/*0000-cover-letter.patch)
	{
		sed 1,2d "$letter"
		printf '\nBase: Debian %s %s as the package ships it;\n' \
			"$BASE_PKG" "$BASE_PKG_VERSION"
		printf 'the base-commit below is that tree imported into git.\n'
		if [ "$V" -gt 1 ]; then
			printf '\n'
			sed -e '/^#/d' "$TOP/patches/changelog.txt" |
				awk -v v="$V" '/^v[0-9]+:/ { n = substr($1, 2) + 0 } n && n <= v'
		fi
	} >"$blurb"
	subject=$(head -n 1 "$letter")
	awk -v subject="$subject" -v blurb="$blurb" '
		/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
		/^\*\*\* BLURB HERE \*\*\*$/ {
			while ((getline l < blurb) > 0) print l
			next
		}
		{ print }
	' "$cover" >"$cover.new"
	mv "$cover.new" "$cover"

	n=$(ls "$dir"/*.patch | wc -l)
	printf '    %s: %d files (cover letter + %d patches, %d-%d of the plan), base %s\n' \
		"${pname:-series}" "$n" $((n - 1)) "$first" "$last" "$BASE_PKG_VERSION"
	printf '      To: %s\n' "${to[@]}"
	printf '      Cc: %s\n' "${cc[@]}"
	printf '      send with: git send-email %s/*.patch\n' "$dir"
done
phase_done
