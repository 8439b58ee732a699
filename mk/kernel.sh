#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure and build a kernel (bzImage, no modules) for the test VM.
#   mk/kernel.sh [applied|base|debug]
# "applied" (default) builds $BUILD_DIR/src into $BUILD_DIR/kernel, "base"
# builds the pristine tree into $BUILD_DIR/pristine/kernel, and "debug"
# builds $BUILD_DIR/src with debug.config on top (KASAN, lockdep,
# kmemleak...) into $BUILD_DIR/debug/kernel.  All share ccache.  The
# configuration: allnoconfig, then the fragments of selftests/vm/configs/
# (vm.config, tests.config, and debug.config for "debug"), configured
# again only when their contents or the base change.
. "$(dirname "$0")/common.sh"

which=${1:-applied}
frags="$TOP/selftests/vm/configs/vm.config $TOP/selftests/vm/configs/tests.config"
case $which in
debug)
	tree=$SRC obj=$BUILD_DIR/debug/kernel
	frags="$frags $TOP/selftests/vm/configs/debug.config"
	;;
*)
	root=$(build_root "$which")
	tree=$root/src obj=$root/kernel
	;;
esac
mkdir -p "$obj"
use_ccache

# check_config: every option a fragment names has the value it asks for.
check_config() {
	local bad=0 line sym val got
	while IFS= read -r line; do
		case $line in CONFIG_*=*) ;; *) continue ;; esac
		sym=${line%%=*}
		val=${line#*=}
		got=$(grep -E "^$sym=|^# $sym is not set" "$obj/.config" || true)
		if [ "$val" = n ]; then
			case $got in "$sym="[ym]) bad=1; echo "  $sym: wanted n, got ${got#*=}" ;; esac
		elif [ "$got" != "$sym=$val" ]; then
			bad=1
			echo "  $sym: wanted $val, got ${got:-nothing}"
		fi
	done < <(cat $frags)
	[ $bad = 0 ] || die "olddefconfig dropped options the tests need (above)"
}

cfg_id=$(cat $frags "$BUILD_DIR/base.id" | sha1sum | cut -c1-16)
if [ ! -f "$obj/.config" ] || [ "$(cat "$obj/.config.id" 2>/dev/null)" != "$cfg_id" ]; then
	phase "configuring the $which kernel"
	kmake "$tree" "$obj" allnoconfig >/dev/null
	# shellcheck disable=SC2086
	quiet_run "$obj/merge_config.log" \
		"$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" $frags
	kmake "$tree" "$obj" olddefconfig >/dev/null
	check_config
	echo "$cfg_id" >"$obj/.config.id"
	phase_done
else
	check_config
fi

phase "building the $which kernel ($(kmake "$tree" "$obj" kernelrelease)), log in $obj/build.log"
quiet_run "$obj/build.log" kmake "$tree" "$obj" -j"$JOBS" bzImage
ls -l "$obj/arch/x86/boot/bzImage" | awk '{printf "    bzImage %s bytes\n", $5}'
phase_done
