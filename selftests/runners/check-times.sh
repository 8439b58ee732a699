#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-times.sh RESULTS: how long each part of 'make check' took, from
# RESULTS/times (build, VM, series-check: written by check.sh and the
# Makefile), RESULTS/job/times (the parts inside the VM, by
# guest-check.sh) and RESULTS/job/perf-test-times (each line of
# perf-tests.txt).
# The VM's boot and shutdown are what its parts leave of its time.
res=${1:?usage: check-times.sh RESULTS}
[ -f "$res/times" ] || exit 0
files=("$res/times")
for f in "$res/job/times" "$res/job/perf-test-times"; do
	[ -s "$f" ] && files+=("$f")
done

awk -F'\t' '
	FILENAME ~ /job\/times$/ { guest[++ng] = $1; gsecs[ng] = $2; inside += $2; next }
	FILENAME ~ /perf-test-times$/ { if (np < 5 || $1 > slow[5]) add($1, $2); next }
	{ host[++nh] = $1; hsecs[nh] = $2; total += $2 }
	# the five slowest perf tests, slowest first
	function add(s, name,  i) {
		if (np < 5)
			np++
		for (i = np; i > 1 && slow[i - 1] < s; i--) {
			slow[i] = slow[i - 1]; sname[i] = sname[i - 1]
		}
		slow[i] = s; sname[i] = name
	}
	function mmss(s) { return sprintf("%d min %02d s", s / 60, s % 60) }
	END {
		printf "==> times of this make check: %s in all\n", mmss(total)
		for (i = 1; i <= nh; i++) {
			printf "    %-14s %s\n", host[i], mmss(hsecs[i])
			if (host[i] != "VM")
				continue
			if (hsecs[i] > inside)
				printf "      %-24s %5d s\n", "boot and shutdown", hsecs[i] - inside
			for (j = 1; j <= ng; j++)
				printf "      %-24s %5d s\n", guest[j], gsecs[j]
			for (j = 1; j <= np; j++)
				printf "        %s%5d s  %s\n",
				       j == 1 ? "slowest: " : "         ", slow[j], sname[j]
		}
	}' "${files[@]}"
