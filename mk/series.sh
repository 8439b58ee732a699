#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series: the series of the applied tree as mail, ready for
# git send-email, in SERIES_DIR (default $BUILD_DIR/series/out).
#
#   SERIES_VERSION=N   revision: [PATCH vN m/n], and the cover letter gets
#                      the changelog of patches/changelog.txt
#
# The applied tree's commits are the series (see mk/apply.sh); this writes
# them with git format-patch against the base, a cover letter from
# patches/cover-letter.txt, Signed-off-by from git config, and To/Cc from
# scripts/get_maintainer.pl over the tree's MAINTAINERS, ours merged in.
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

phase "writing the series to $OUT"
rm -rf "$OUT"
mkdir -p "$OUT"
fp() {
	git_src -c user.name="$name" -c user.email="$email" format-patch -q \
		--cover-letter --signoff --thread=shallow --zero-commit \
		--base=base $([ "$V" = 1 ] || echo "-v$V") -o "$OUT" "$@" base..HEAD
}
fp

# Recipients: the maintainers of what the patches touch, and the lists.
maint() {
	(cd "$SRC" && scripts/get_maintainer.pl --no-git --no-git-fallback \
		--no-rolestats "$@" $(ls "$OUT"/*.patch | grep -v '0000-cover-letter'))
}
mapfile -t to < <(maint --nol --nor)
mapfile -t cc < <(maint --nom | grep -vxF -f <(printf '%s\n' "${to[@]}"))
rm -f "$OUT"/*.patch
args=()
for a in "${to[@]}"; do args+=(--to="$a"); done
for a in "${cc[@]}"; do args+=(--cc="$a"); done
fp "${args[@]}"

# The cover letter: subject and text from patches/cover-letter.txt, then
# the base, then the changes since earlier revisions.
cover=$(ls "$OUT"/*0000-cover-letter.patch)
blurb=$(mktemp)
trap 'rm -f "$blurb"' EXIT
{
	sed 1,2d "$TOP/patches/cover-letter.txt"
	printf '\nBase: Debian %s %s as the package ships it;\n' \
		"$BASE_PKG" "$BASE_PKG_VERSION"
	printf 'the base-commit below is that tree imported into git.\n'
	if [ "$V" -gt 1 ]; then
		printf '\n'
		sed -e '/^#/d' "$TOP/patches/changelog.txt" |
			awk -v v="$V" '/^v[0-9]+:/ { n = substr($1, 2) + 0 } n && n <= v'
	fi
} >"$blurb"
subject=$(head -n 1 "$TOP/patches/cover-letter.txt")
awk -v subject="$subject" -v blurb="$blurb" '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
	/^\*\*\* BLURB HERE \*\*\*$/ {
		while ((getline l < blurb) > 0) print l
		next
	}
	{ print }
' "$cover" >"$cover.new"
mv "$cover.new" "$cover"

n=$(ls "$OUT"/*.patch | wc -l)
printf '    %d files (cover letter + %d patches), base %s\n' "$n" $((n - 1)) \
	"$BASE_PKG_VERSION"
printf '    To: %s\n' "${to[@]}"
printf '    Cc: %s\n' "${cc[@]}"
printf '    send with: git send-email %s/*.patch\n' "$OUT"
phase_done
