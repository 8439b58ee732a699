#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure and build a kernel for the test VM (a bzImage; no modules but
# for check-bpf).
#   mk/kernel.sh [applied|base|debug|kcsan|bpf|bpf-base]
# "applied" (default) builds $BUILD_DIR/src into $BUILD_DIR/kernel, "base"
# builds the pristine tree into $BUILD_DIR/pristine/kernel, and "debug"
# builds $BUILD_DIR/src with debug.config on top (KASAN, lockdep,
# kmemleak...) into $BUILD_DIR/debug/kernel, "kcsan" with kcsan.config
# (data races) into $BUILD_DIR/kcsan/kernel.  "bpf" and "bpf-base" build
# the applied and the pristine tree, into bpf-kernel/ beside their src/,
# with one configuration for both: vm.config, the BPF selftests' own
# fragment (tools/testing/selftests/bpf/config of the pristine tree),
# tests.config and bpf.config; they build the modules too, so that
# test_progs' test modules can be built against them.  All share ccache.
# The configuration: allnoconfig, then the fragments of
# selftests/vm/configs/, configured again only when their contents or
# the base change.
. "$(dirname "$0")/common.sh"

which=${1:-applied}
frags="$TOP/selftests/vm/configs/vm.config $TOP/selftests/vm/configs/tests.config"
case $which in
debug|kcsan)
	tree=$SRC obj=$BUILD_DIR/$which/kernel
	frags="$frags $TOP/selftests/vm/configs/$which.config"
	;;
bpf|bpf-base)
	if [ "$which" = bpf ]; then root=$(build_root applied); else root=$(build_root base); fi
	tree=$root/src obj=$root/bpf-kernel
	cfgs=$TOP/selftests/vm/configs
	frags="$cfgs/vm.config $BASE_TREE/tools/testing/selftests/bpf/config"
	frags="$frags $cfgs/tests.config $cfgs/bpf.config"
	targets="bzImage modules"
	;;
*)
	root=$(build_root "$which")
	tree=$root/src obj=$root/kernel
	;;
esac
mkdir -p "$obj"
use_ccache

# check_config: every option a fragment names has the value it asks for;
# when fragments disagree, the last one's value is the one checked.
check_config() {
	local bad=0 line sym val got
	declare -A want=()
	local order=()

	# shellcheck disable=SC2086
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) sym=${line%%=*} val=${line#*=} ;;
		"# CONFIG_"*" is not set") sym=${line#\# } sym=${sym%% *} val=n ;;
		*) continue ;;
		esac
		[ -n "${want[$sym]+set}" ] || order+=("$sym")
		want[$sym]=$val
	done < <(cat $frags)
	for sym in "${order[@]}"; do
		val=${want[$sym]}
		got=$(grep -E "^$sym=|^# $sym is not set" "$obj/.config" || true)
		if [ "$val" = n ]; then
			case $got in "$sym="[ym]) bad=1; echo "  $sym: wanted n, got ${got#*=}" ;; esac
		elif [ "$got" != "$sym=$val" ]; then
			bad=1
			echo "  $sym: wanted $val, got ${got:-nothing}"
		fi
	done
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
# shellcheck disable=SC2086
quiet_run "$obj/build.log" kmake "$tree" "$obj" -j"$JOBS" ${targets:-bzImage}
ls -l "$obj/arch/x86/boot/bzImage" | awk '{printf "    bzImage %s bytes\n", $5}'
phase_done
