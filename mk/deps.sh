#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages the build and the VM need, if any is missing.
# DEPS_EXTRA names more packages, for the targets that need them alone
# (make check-bpf).
. "$(dirname "$0")/common.sh"

pkgs="build-essential bc bison flex cpio kmod rsync xz-utils git pkg-config
ccache dwarves libelf-dev libssl-dev zlib1g-dev libzstd-dev libdw-dev
libtraceevent-dev libcap-dev libnuma-dev libslang2-dev libunwind-dev
libbabeltrace-dev libmnl-dev libpopt-dev python3
clang-16 llvm-16 lld-16
qemu-system-x86 qemu-system-data
asciidoc-base xmlto
python3-ply python3-git
${DEPS_EXTRA:-}"

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
# The base package is only needed when no KSRC tree is given.
if [ -z "$KSRC" ]; then
	have=$(dpkg-query -W -f='${Version}' "$BASE_PKG" 2>/dev/null || true)
	[ "$have" = "$BASE_PKG_VERSION" ] || missing="$missing $BASE_PKG"
fi
[ -z "$missing" ] && exit 0

phase "installing Debian packages:$missing"
sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
quiet_run "$BUILD_DIR/apt-update.log" $sudo apt-get update -q

want=
for p in $missing; do
	if [ "$p" = "$BASE_PKG" ]; then
		# Pin the base; fall back to what Debian serves now, loudly.
		if apt-cache madison "$p" | awk '{print $3}' | grep -qxF "$BASE_PKG_VERSION"; then
			p="$p=$BASE_PKG_VERSION"
		elif [ -n "${STRICT_BASE:-}" ]; then
			die "$BASE_PKG $BASE_PKG_VERSION is no longer served (STRICT_BASE is set)"
		else
			printf 'warning: %s %s is no longer served, using %s\n' \
				"$BASE_PKG" "$BASE_PKG_VERSION" \
				"$(apt-cache policy "$p" | awk '/Candidate/ {print $2}')" >&2
		fi
	fi
	want="$want $p"
done
# shellcheck disable=SC2086
quiet_run "$BUILD_DIR/apt-install.log" $sudo apt-get install -y -q \
	--no-install-recommends --allow-downgrades $want
phase_done
