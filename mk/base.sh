#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make $BUILD_DIR/pristine/src the pristine base tree: Debian's
# linux-source package by default, or the user's own 6.12 tree given as
# KSRC.  Writes the name of the base to $BUILD_DIR/base.id; does nothing
# when that name is unchanged.
. "$(dirname "$0")/common.sh"

if [ -n "$KSRC" ]; then
	[ -f "$KSRC/Makefile" ] && [ -d "$KSRC/kernel" ] ||
		die "KSRC=$KSRC is not a Linux source tree"
	KSRC=$(cd "$KSRC" && pwd)
	kver=$(make -s -C "$KSRC" kernelversion 2>/dev/null) ||
		die "cannot read the kernel version of $KSRC"
	case $kver in
	6.12|6.12.*) ;;
	*) die "KSRC=$KSRC is Linux $kver, this series is for 6.12" ;;
	esac
	if git -C "$KSRC" rev-parse --verify -q HEAD >/dev/null 2>&1; then
		[ -z "$(git -C "$KSRC" status --porcelain -uno)" ] ||
			printf 'warning: %s has uncommitted changes; using its HEAD\n' "$KSRC" >&2
		id="git $KSRC $(git -C "$KSRC" rev-parse HEAD) ($kver)"
	else
		id="dir $KSRC ($kver)"
	fi
else
	tarball=/usr/src/$BASE_PKG.tar.xz
	[ -f "$tarball" ] || die "$tarball missing: is $BASE_PKG installed?"
	pkgver=$(dpkg-query -W -f='${Version}' "$BASE_PKG")
	id="debian $BASE_PKG $pkgver"
	[ "$pkgver" = "$BASE_PKG_VERSION" ] ||
		printf 'warning: base is %s %s, pinned is %s\n' \
			"$BASE_PKG" "$pkgver" "$BASE_PKG_VERSION" >&2
fi

if [ -d "$BASE_TREE" ] && [ "$(cat "$BUILD_DIR/base.id" 2>/dev/null)" = "$id" ]; then
	printf '==> base: %s\n' "$id"
	exit 0
fi

phase "preparing base: $id"
rm -rf "$BASE_TREE" "$BASE_TREE.new" "$BUILD_DIR/base.id"
mkdir -p "$BASE_TREE.new"
case $id in
git*)	git -C "$KSRC" archive --format=tar HEAD | tar -x -C "$BASE_TREE.new" ;;
dir*)	rsync -a --exclude=.git "$KSRC/" "$BASE_TREE.new/" ;;
*)	tar -x -f "$tarball" -C "$BASE_TREE.new" --strip-components=1 ;;
esac
# A tree with a configuration or objects in it refuses O= builds.
[ ! -e "$BASE_TREE.new/.config" ] ||
	die "the base tree has a .config: give a clean tree (make mrproper)"
mv "$BASE_TREE.new" "$BASE_TREE"
printf '%s\n' "$id" >"$BUILD_DIR/base.id"
phase_done
