#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make check-bpf': the BPF subsystem's own test_progs (mk/bpf-selftests.sh)
# on the pristine base kernel and on ours, built with one configuration
# (mk/kernel.sh bpf-base, bpf), each in its own VM (guest side:
# guest-bpf.sh, beside this script).  Prints every test's and subtest's two verdicts side by
# side and a TAP log, ends with the line
#   N passed, N failed, N skipped
# and fails on a regression: a test that passes on the base and fails, is
# skipped or is missing on ours.  Such tests run twice more on ours, and
# one that passes then counts as flaky, not as a regression.  A test that
# does not pass on the base is listed with both verdicts, as skipped.
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

# verdicts LOG: "name<TAB>OK|SKIP|FAIL" for every test and subtest that
# test_progs printed a verdict for; "OK (SKIP: n/m)" is OK, its skipped
# subtests are listed on their own.
verdicts() {
	sed -n -E 's/^#[0-9]+(\/[0-9]+)? +(.*):(OK|SKIP|FAIL)( \(SKIP: [0-9]+\/[0-9]+\))?$/\2\t\3/p' \
		"$1" 2>/dev/null
}

run_vm bpf-base base base
base_rc=$vm_rc
run_vm bpf applied applied
ours_rc=$vm_rc

declare -A vb vo
names=()
while IFS=$'\t' read -r name v; do
	[ -n "${vb[$name]+set}" ] || names+=("$name")
	vb[$name]=$v
done < <(verdicts "$res/base/test_progs.log")
while IFS=$'\t' read -r name v; do
	[ -n "${vb[$name]+set}" ] || [ -n "${vo[$name]+set}" ] || names+=("$name")
	vo[$name]=$v
done < <(verdicts "$res/applied/test_progs.log")

# Second chances: the tests (top-level names) with a subtest or more that
# passed on the base and not on ours run twice more on ours.
declare -A retry_ok
again=()
for name in "${names[@]}"; do
	[ "${vb[$name]:-}" = OK ] && [ "${vo[$name]:-}" != OK ] || continue
	t=${name%%/*}
	[[ " ${again[*]} " == *" $t "* ]] || again+=("$t")
done
if [ ${#again[@]} -gt 0 ] && [ "$ours_rc" = 0 ]; then
	list=$(IFS=,; echo "${again[*]}")
	for i in 1 2; do
		run_vm bpf applied "retry$i" "BPF_ONLY=$list"
		while IFS=$'\t' read -r name v; do
			[ "$v" = OK ] && retry_ok[$name]=1
		done < <(verdicts "$res/retry$i/test_progs.log")
	done
fi

tap_begin "$tap"
tap_vm "$base_rc" "VM ran test_progs on the base kernel"
tap_vm "$ours_rc" "VM ran test_progs on the patched kernel"
table=$res/verdicts.txt
printf '%-64s %-5s %-5s %s\n' 'test_progs test' base ours verdict >"$table"
for name in "${names[@]}"; do
	b=${vb[$name]:-none} o=${vo[$name]:-none}
	if [ "$b" = OK ] && [ "$o" = OK ]; then
		verdict=same
		result ok "$name"
	elif [ "$b" = OK ] && [ -n "${retry_ok[$name]:-}" ]; then
		verdict="flaky: $o on ours, then OK"
		result skip "$name" "flaky on ours: $o, then OK on a second run"
	elif [ "$b" = OK ]; then
		verdict=REGRESSION
		result fail "$name" "OK on the base, $o on ours"
	elif [ "$o" = OK ]; then
		verdict="only ours passes"
		result ok "$name" "$b on the base"
	else
		verdict="neither passes"
		result skip "$name" "$b on the base, $o on ours"
	fi
	printf '%-64.64s %-5s %-5s %s\n' "$name" "$b" "$o" "$verdict" >>"$table"
done
[ ${#names[@]} -gt 0 ] || result fail "test_progs verdicts" "none in $res/base or $res/applied"
cat "$table"
tap_end
