#!/bin/bash
# perf stat --bpf-counters counts forked children, unless --no-inherit (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# The parent of each workload sleeps while its children (and a
# grandchild) burn a CPU and exit: with inheritance a bperf session must
# count what the workload's processes ran, the children included; with
# --no-inherit what the parent alone ran, as perf stat --no-inherit does.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
[ -n "${EPOCHREALTIME-}" ] ||
	bpf_test_skip "bash $BASH_VERSION has no EPOCHREALTIME: the workload cannot time itself"
tmp=$(bpf_test_dir)
hz=$(getconf CLK_TCK)

# A child and a grandchild of the workload spin until a common deadline
# 3 s after the workload started, in forked shells (no exec).  Each of
# its processes, before it ends, adds its own CPU time to the file $1,
# one "ROLE MSEC" line (utime + stime from /proc: the kernel scales them
# to the task's precise run time); the parent also notes, as "start",
# what it had run when the script began.  Before that perf's child ran
# perf's own code, which a session does not count, and the exec, of
# which a session counts the end (enable_on_exec starts counting in
# begin_new_exec()), ld.so and bash's startup.  Sessions one after the
# other cannot be compared with each other: how long the workload takes
# to start and to end varies by 100s of ms in a TCG VM.
cat >"$tmp/work.sh" <<'WORK'
out=$1 hz=$2
end=$((${EPOCHREALTIME//[!0-9]/} + 3000000))
cputime() {
	local st

	read -ra st </proc/$BASHPID/stat
	echo "$1 $(((st[13] + st[14]) * 1000 / hz))" >>"$out"
}
spin() {
	while ((${EPOCHREALTIME//[!0-9]/} < end)); do :; done
	cputime spinner
}
cputime start
spin &
(spin & wait; cputime subshell) &
wait
cputime parent
WORK

# workload NAME [OPTION...]: count task-clock of the workload with perf
# stat OPTION..., to NAME; NAME.cpu gets what its processes said they ran.
workload() {
	local out=$1

	shift
	rm -f "$tmp/$out.cpu"
	perf stat "$@" -x, -o "$tmp/$out.out" -e task-clock -- \
		bash "$tmp/work.sh" "$tmp/$out.cpu" "$hz" 2>"$tmp/$out.err"
	[ "$(wc -l 2>/dev/null <"$tmp/$out.cpu")" = 5 ] ||
		bpf_test_fail "$out: the workload did not run: $(cat "$tmp/$out.err")"
}

# ran NAME [ROLE]: the msec NAME's workload processes (of ROLE) ran
ran() {
	awk -v r="${2:-}" '(r == "" && $1 != "start") || $1 == r { s += $2 }
		END { print s }' "$tmp/$1.cpu"
}

# perf stat first: if it is off, the method is.
for s in inh_ref inh; do
	opt=
	[ $s = inh ] && opt="--bpf-counters --bpf-attr-map $(bperf_attr_map)"
	# shellcheck disable=SC2086 # $opt is several words or none
	workload $s $opt
	bperf_check "$s: task-clock vs what the workload's processes ran" \
		"$(ran $s)" "$(bperf_get $s task-clock)" 5
done

# --no-inherit: what the parent alone ran, a few 10s of ms on a quick
# kernel, 100s on a debug one, against the children's 6 s.  The session
# counts at least what the parent ran once the script began, and at most
# all it ran since the fork, plus its exit (bperf_check_ran), within 20%,
# not 5%: a few 10s of ms, read in clock ticks of 10 ms, are coarse.
for s in noinh_ref noinh; do
	opt=
	[ $s = noinh ] && opt="--bpf-counters --bpf-attr-map $(bperf_attr_map)"
	# shellcheck disable=SC2086
	workload $s --no-inherit $opt
	n=$(bperf_get $s task-clock)
	parent=$(ran $s parent)
	script=$((parent - $(ran $s start)))
	echo "$s: $n msec of task-clock, the parent ran $parent msec, $script in the script"
	bperf_check_ran "$s, --no-inherit, the parent" "$n" "$script" "$parent" 20
done

# -p: the process forks its children only after both sessions attached.
for mode in inherit no-inherit; do
	opt=
	[ $mode = inherit ] || opt=--no-inherit
	bperf_target kids 1 2
	pid=$(cat "$tmp/kids.pid")
	# shellcheck disable=SC2086 # $opt may be empty
	bperf_both kids $opt -e task-clock -p "$pid"
	kids=$(bperf_get kids task-clock)
	kids_ref=$(bperf_get kids_ref task-clock)
	if [ $mode = inherit ]; then
		bperf_check "-p, children forked after the start" "$kids_ref" "$kids" 15
		kids_inh=$kids_ref
	else
		# both count the parent alone, which runs for a few ms
		echo "-p --no-inherit: $kids (reference $kids_ref)"
		awk -v n="$kids" -v r="$kids_ref" -v i="$kids_inh" 'BEGIN {
			exit !(n > 0 && n < i / 4 && n >= r / 2 - 5 && n <= r * 1.5 + 5)
		}' ||
			bpf_test_fail "-p --no-inherit: $kids is not the parent alone:" \
				"perf stat counted $kids_ref, with the children $kids_inh"
	fi
done

bperf_none_pinned
exit 0
