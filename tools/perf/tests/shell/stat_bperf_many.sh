#!/bin/bash
# perf stat --bpf-counters runs 40, then 200 sessions at once
# SPDX-License-Identifier: GPL-2.0
#
# Upstream's bperf stops at 38 sessions per event.  Start 40, then 200
# system-wide sessions of the same event, plus two plain perf stat as a
# reference; all count until released together.  One leader program
# must serve them all, and each must count what the reference counts, as
# msec of cpu-clock per second of its own interval.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require
command -v bpftool >/dev/null || bperf_skip "bpftool not found"
tmp=$(bperf_dir)
attr=$(bperf_attr_map)

# hold NAME: count cpu-clock system-wide until $tmp/lock is released;
# the workload stamps when it started and ended.
hold='date +%s%N >"$0.start"; flock -s "$1" true; date +%s%N >"$0.end"'

# rate NAME: msec of cpu-clock per second of NAME's interval.
rate() {
	local count start end

	count=$(bperf_count "$1" cpu-clock) || return 1
	start=$(cat "$tmp/$1.start" 2>/dev/null)
	end=$(cat "$tmp/$1.end" 2>/dev/null)
	[ -n "$start" ] && [ -n "$end" ] || return 1
	awk -v c="$count" -v s="$start" -v e="$end" \
		'BEGIN { if (e > s) printf "%.1f\n", c / ((e - s) / 1e9); else exit 1 }'
}

for n in 40 200; do
	rm -f "$tmp"/*.start "$tmp"/*.end
	exec 9>"$tmp/lock"
	flock -x 9
	for i in $(seq "$n"); do
		bperf_stat "s$i" -e cpu-clock -a -- \
			sh -c "$hold" "$tmp/s$i" "$tmp/lock" 9>&- &
		bperf_track $!
	done
	for i in 1 2; do
		plain_stat "ref$i" -e cpu-clock -a -- \
			sh -c "$hold" "$tmp/ref$i" "$tmp/lock" 9>&- &
		bperf_track $!
	done

	# perf starts in about a second in a TCG VM: allow 3 a session
	started=0
	for _ in $(seq $((n * 30))); do
		started=$(find "$tmp" -name '*.start' | wc -l)
		[ "$started" -ge $((n + 2)) ] && break
		sleep 0.1
	done
	[ "$started" -ge $((n + 2)) ] ||
		bperf_fail "only $started of $((n + 2)) sessions started: $(cat "$tmp"/s*.err | sort | uniq -c)"

	leaders=$(bpftool prog show | grep -c ' name bperf_switch ')
	[ "$leaders" = 1 ] || bperf_fail "$n sessions: $leaders leader programs, want 1"
	registered=$(bperf_entries "${attr}_dir/bperf_sessions")
	[ "$registered" = "$n" ] ||
		bperf_fail "$n sessions: $registered registered, want $n"
	echo "$n sessions counting, one leader program"

	sleep 2
	exec 9>&-
	wait

	ref=$(for i in 1 2; do rate "ref$i"; done |
	      awk '{ s += $1; n++ } END { if (n) printf "%.1f\n", s / n }')
	[ -n "$ref" ] || bperf_fail "the reference sessions counted nothing"
	bad=0
	for i in $(seq "$n"); do
		r=$(rate "s$i") || bperf_fail "session $i counted nothing: $(cat "$tmp/s$i.out" "$tmp/s$i.err")"
		if ! bperf_within "$ref" "$r" 10; then
			echo "session $i: $r msec/s, reference $ref"
			bad=$((bad + 1))
		fi
	done
	[ $bad = 0 ] || bperf_fail "$bad of $n sessions off by more than 10%"
	echo "all $n sessions within 10% of the reference, $ref msec/s"
	left=$(bperf_pinned)
	[ -z "$left" ] || bperf_fail "left pinned after the last session: $left"
done
exit 0
