#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the VM (check-bpf.sh, beside it, boots it once per kernel):
# the BPF selftests' test_progs, on the tests bpf-allow.txt names less
# those bpf-deny.txt names, with the test modules built for this kernel.
#   [BPF_ONLY=NAME,...] guest-bpf.sh base|applied
# BPF_ONLY runs those tests instead of bpf-allow.txt's.
# test_progs' output, with a verdict line for every test and subtest, goes
# to $JOB/test_progs.log; check-bpf.sh judges it.

which=${1:?usage: guest-bpf.sh base|applied}
out=$BUILD_DIR/bpf-selftests
lists=$TOP/selftests/runners

[ -x "$out/test_progs" ] || { echo "$out/test_progs missing"; exit 1; }
[ -d "$out/testmod-$which" ] || { echo "$out/testmod-$which missing"; exit 1; }

# test_progs opens its BPF objects and loads its modules from the current
# directory, and some tests write there: run it in a writable copy made
# of links, with this kernel's modules in place of the ones it was built
# with.
work=/tmp/bpf-selftests
rm -rf "$work"
cp -rs "$out" "$work" || exit 1
rm -rf "$work"/testmod-*
for m in "$out/testmod-$which"/*.ko; do
	ln -sf "$m" "$work/${m##*/}"
done

# test_progs reads the lists itself: a name or glob per line, '#' starts
# a comment.
args=(-a "${BPF_ONLY:-@$lists/bpf-allow.txt}" -d "@$lists/bpf-deny.txt")

cd "$work" || exit 1
echo "==> test_progs on the $which kernel ($(uname -r))"
./test_progs "${args[@]}" 2>&1 | tee "$JOB/test_progs.log"
rc=${PIPESTATUS[0]}
echo "==> test_progs exited with $rc"
# A failing test is for check-bpf.sh to judge against the base: only a
# run that did not get to its summary fails here.
grep -q '^Summary: ' "$JOB/test_progs.log"
