#!/bin/bash
# perf bpf refuses bad input and missing privileges clearly
# SPDX-License-Identifier: GPL-2.0
#
# Bad options and arguments give the usage or an error naming what is
# wrong, and a non-zero exit; so does a user without CAP_SYS_ADMIN, with
# a message naming the capabilities missing; a command that cannot run
# and an output file that cannot be written too.  --type link fails on a
# kernel that writes no link records, saying so, and works on one that
# does.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

pbt_require bpftool
tmp=$(bpf_test_dir)

# expect_error WHAT PATTERN COMMAND...: must fail, saying PATTERN.
expect_error() {
	local what=$1 pattern=$2

	shift 2
	if "$@" >"$tmp/err.out" 2>&1; then
		bpf_test_fail "$what: succeeded"
	fi
	grep -q -- "$pattern" "$tmp/err.out" ||
		bpf_test_fail "$what: no '$pattern' in: $(cat "$tmp/err.out")"
	echo "$what: $(grep -m1 -- "$pattern" "$tmp/err.out" | sed 's/^ *//')"
}

expect_error "no subcommand" "Usage: perf bpf events" perf bpf
expect_error "unknown subcommand" "unknown subcommand 'bogus'" perf bpf bogus
expect_error "unknown option" "unknown option" perf bpf events --bogus
expect_error "unknown option: usage" "Usage: perf bpf events" perf bpf events --bogus
expect_error "list: unknown option: usage" "Usage: perf bpf list" perf bpf list --bogus
expect_error "bad --type" "--type takes prog or link, not 'maps'" perf bpf events --type maps
expect_error "bad --duration" "--duration takes a number of seconds, not 'soon'" \
	perf bpf events --duration soon
expect_error "negative --duration" "--duration takes a number of seconds" \
	perf bpf events --duration -1
expect_error "-a and -p" "-a and -p are mutually exclusive" perf bpf events -a -p 1
expect_error "-p and a command" "-p and a command are mutually exclusive" \
	perf bpf events -p 1 -- true
expect_error "--duration and a command" "--duration and a command are mutually exclusive" \
	perf bpf events --duration 1 -- true
expect_error "bad -p" "-p takes process ids, not 'init'" perf bpf events -p init
expect_error "-x and -j" "-x and -j are mutually exclusive" perf bpf events -x, -j
expect_error "list -x and -j" "-x and -j are mutually exclusive" perf bpf list -x, -j
expect_error "list argument" "unexpected argument 'all'" perf bpf list all
expect_error "unwritable output" "cannot open $tmp/no/such/file" \
	perf bpf events -o "$tmp/no/such/file" --duration 1
expect_error "command not found" "cannot run '$tmp/no-such-command'" \
	perf bpf events -- "$tmp/no-such-command"

if pbt_link_records; then
	perf bpf events --type link --duration 1 -o "$tmp/type.out" 2>"$tmp/type.err" ||
		bpf_test_fail "--type link, on a kernel with link records: exit $?, want 0:" \
			"$(cat "$tmp/type.err")"
	! grep -q 'no link records' "$tmp/type.err" ||
		bpf_test_fail "--type link, on a kernel with link records: $(cat "$tmp/type.err")"
	echo "--type link: works, the kernel writes link records"
else
	expect_error "--type link, no link records" \
		"--type link: this kernel writes no link records" \
		perf bpf events --type link --duration 1
fi

if command -v setpriv >/dev/null; then
	expect_error "not root: events" "lacks CAP_SYS_ADMIN and CAP_PERFMON" \
		setpriv --reuid=65534 --regid=65534 --clear-groups perf bpf events --duration 1
	expect_error "not root: list" "lacks CAP_SYS_ADMIN\." \
		setpriv --reuid=65534 --regid=65534 --clear-groups perf bpf list
	expect_error "root without CAP_SYS_ADMIN" "lacks CAP_SYS_ADMIN\." \
		setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin perf bpf events --duration 1
else
	echo "setpriv not found: privileges not checked"
fi
pbt_end
