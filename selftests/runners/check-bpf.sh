#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make check-bpf': the BPF subsystem's own test_progs (mk/bpf-selftests.sh)
# on the pristine base kernel and on ours, built with one configuration
# (mk/kernel.sh bpf-base, bpf), each in its own VM (guest side:
# guest-bpf.sh, beside this script).  Prints every test's and subtest's
# two verdicts side by side and a TAP log, ends with the line
#   N passed, N failed, N skipped
# A test passes when it passes on ours; it is skipped when test_progs
# skipped it on both kernels (the VM lacks something).  Anything else
# fails: a test that passes on the base and not on ours (a regression),
# one that fails on both (list it in bpf-deny.txt, saying why), one that
# is missing from ours.  A regression runs twice more on ours, and if it
# passes both times it counts as flaky and is skipped, with its verdicts.
# The run also fails if ours logs a kernel splat the base did not, or if
# the two kernels were not built with one configuration.
# CHECK_BPF_TIMEOUT is the limit of one VM run (5400 s).
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=mk/common.sh
. "$TOP/mk/common.sh"
set +e

res=$BUILD_DIR/results/check-bpf-$(date +%Y%m%d-%H%M%S)
mkdir -p "$res"
ln -sfn "$res" "$BUILD_DIR/results/latest-bpf"
tap=$res/check-bpf.tap
timeout=${CHECK_BPF_TIMEOUT:-5400}
kbase=$(build_root base)/bpf-kernel
kours=$(build_root applied)/bpf-kernel

# run_vm KERNEL WHICH NAME [ENV...]: guest-bpf.sh WHICH in a VM booting
# KERNEL, job and console under $res/NAME.
run_vm() {
	local kernel=$1 which=$2 name=$3

	shift 3
	phase "test_progs on the $which kernel, console in $res/$name.console.log"
	VM_CPUS=${VM_CPUS:-2} VM_MEM=${VM_MEM:-4G} \
		"$TOP/selftests/vm/run-vm.sh" --kernel "$kernel" --timeout "$timeout" \
		--job "$res/$name" --log "$res/$name.console.log" --quiet -- \
		"$@" "$TOP/selftests/runners/guest-bpf.sh" "$which"
	vm_rc=$?
	phase_done
}

# verdicts LOG: "#N[/M] name<TAB>OK|SKIP|FAIL" for every test and subtest
# test_progs printed a verdict for, keyed by its number too (two subtests
# may share a name; the numbers are the tests' places in the binary, the
# same in every run).  "OK (SKIP: n/m)" is OK: its skipped subtests have
# their own lines.  test_progs prints the failed ones again after "All
# error logs:": those are not read twice.
verdicts() {
	sed -n -E -e '/^All error logs:/q' \
		-e 's/^(#[0-9]+(\/[0-9]+)?) +(.*):(OK|SKIP|FAIL)( \(SKIP: [0-9]+\/[0-9]+\))?$/\1 \3\t\4/p' \
		"$1" 2>/dev/null
}

# splats DIR: the kernel splats in a run's log, without their timestamps
# and numbers, so that the two kernels' can be compared.
splats() {
	grep -Eh "$splat_re" "$1/dmesg" 2>/dev/null |
		sed -E 's/^\[ *[0-9]+\.[0-9]+\] //; s/0x[0-9a-f]+|[0-9]+/N/g' | sort -u
}

# Both kernels built from one configuration, the current one.
same_config=1
for k in "$kbase" "$kours"; do
	[ -f "$k/.config" ] || die "$k is not built: run 'make kernel-bpf kernel-bpf-base'"
done
if ! diff <(grep -v '^#' "$kbase/.config") <(grep -v '^#' "$kours/.config") \
	>"$res/config.diff"; then
	same_config=0
fi

run_vm bpf-base base base
base_rc=$vm_rc
run_vm bpf applied applied
ours_rc=$vm_rc

declare -A vb vo again_ok again_runs
keys=()
while IFS=$'\t' read -r key v; do
	[ -n "${vb[$key]+set}" ] || keys+=("$key")
	vb[$key]=$v
done < <(verdicts "$res/base/test_progs.log")
while IFS=$'\t' read -r key v; do
	[ -n "${vb[$key]+set}" ] || [ -n "${vo[$key]+set}" ] || keys+=("$key")
	vo[$key]=$v
done < <(verdicts "$res/applied/test_progs.log")

# Second chances: the tests (top-level names) with a subtest or more that
# passed on the base and not on ours run twice more on ours.
again=()
for key in "${keys[@]}"; do
	if [ "${vb[$key]:-}" = OK ] && [ "${vo[$key]:-}" != OK ]; then
		t=${key#* }
		t=${t%%/*}
		[[ " ${again[*]} " == *" $t "* ]] || again+=("$t")
	fi
done
if [ ${#again[@]} -gt 0 ] && [ "$ours_rc" = 0 ]; then
	list=$(IFS=,; echo "${again[*]}")
	for i in 1 2; do
		run_vm bpf applied "again$i" "BPF_ONLY=$list"
		while IFS=$'\t' read -r key v; do
			again_runs[$key]=$((${again_runs[$key]:-0} + 1))
			[ "$v" = OK ] && again_ok[$key]=$((${again_ok[$key]:-0} + 1))
		done < <(verdicts "$res/again$i/test_progs.log")
	done
fi

tap_begin "$tap"
tap_vm "$base_rc" "VM ran test_progs on the base kernel"
tap_vm "$ours_rc" "VM ran test_progs on the patched kernel"
if [ $same_config = 1 ]; then
	result ok "the base and the patched kernel have one configuration"
else
	result fail "the base and the patched kernel have one configuration" \
		"they differ, see $res/config.diff: make kernel-bpf kernel-bpf-base"
fi
table=$res/verdicts.txt
printf '%-70s %-5s %-5s %s\n' 'test_progs test' base ours verdict >"$table"
for key in "${keys[@]}"; do
	b=${vb[$key]:-none} o=${vo[$key]:-none}
	if [ "$o" = OK ] && [ "$b" = OK ]; then
		verdict=same
		result ok "$key"
	elif [ "$o" = OK ]; then
		verdict="only ours passes"
		result ok "$key" "base: $b"
	elif [ "$b" = OK ] && [ "${again_ok[$key]:-0}" = 2 ]; then
		verdict="flaky: $o on ours, then OK twice"
		result skip "$key" "flaky on ours: $o, then OK in both second runs"
	elif [ "$b" = OK ]; then
		verdict=REGRESSION
		result fail "$key" "OK on the base, $o on ours${again_runs[$key]:+, OK in ${again_ok[$key]:-0} of ${again_runs[$key]} second runs}"
	elif [ "$b" = SKIP ] && [ "$o" = SKIP ]; then
		verdict="skipped on both"
		result skip "$key" "skipped on both kernels"
	else
		verdict="neither passes"
		result fail "$key" "$b on the base, $o on ours: fix it or deny it in bpf-deny.txt, saying why"
	fi
	printf '%-70.70s %-5s %-5s %s\n' "$key" "$b" "$o" "$verdict" >>"$table"
done
[ ${#keys[@]} -gt 0 ] || result fail "test_progs verdicts" "none in $res/base or $res/applied"

# Kernel splats only ours logged.
splats "$res/base" >"$res/base.splats"
splats "$res/applied" >"$res/applied.splats"
new=$(comm -13 "$res/base.splats" "$res/applied.splats")
if [ ! -f "$res/applied/dmesg" ]; then
	result fail "no kernel splat that the base does not have" "missing $res/applied/dmesg"
elif [ -n "$new" ]; then
	printf '%s\n' "$new" | head -n 5 | sed 's/^/#   /' >>"$tap"
	result fail "no kernel splat that the base does not have" "see $res/applied/dmesg"
else
	result ok "no kernel splat that the base does not have"
fi

cat "$table"
tap_end
