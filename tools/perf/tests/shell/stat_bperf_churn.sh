#!/bin/bash
# perf stat --bpf-counters keeps counting while sessions come and go (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# For BPERF_CHURN_SECS seconds (20 by default), short sessions of every
# target kind (-a, -C, -p, -t, a group, --no-inherit, a workload) start,
# up to four at a time, and, at random (BPERF_CHURN_SEED repeats a run),
# end by themselves (--timeout, or their workload exits) or are killed
# with SIGKILL, at any moment of their start or once they count.  Meanwhile two long sessions count
# throughout: cpu-clock -a, which must report as many CPUs utilized as a
# plain perf stat beside it, and task-clock -p of a process that burns a
# CPU all along, which must count what a plain perf stat counts of it.
# The short -p and -t sessions count another such process, which
# outlives them.
# Every short session that ended by itself must have printed its count.
# Once the last session is gone nothing of bperf may be left: no
# program, no map, nothing pinned.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require bpftool
tmp=$(bpf_test_dir)
attr=$(bperf_attr_map)
secs=${BPERF_CHURN_SECS:-20}
seed=${BPERF_CHURN_SEED:-$$}
[[ $secs =~ ^[1-9][0-9]*$ ]] || bpf_test_fail "BPERF_CHURN_SECS=$secs: want seconds"
[[ $seed =~ ^[0-9]+$ ]] || bpf_test_fail "BPERF_CHURN_SEED=$seed: want a number"
RANDOM=$seed
echo "churn for $secs s, seed $seed"

# Another perf stat may have its own; ours must all go.
bperf_objects >"$tmp/objects.before"
objects_back() {
	bperf_objects | cmp -s - "$tmp/objects.before"
}

bperf_target busy "$secs"
busy=$(cat "$tmp/busy.pid")
bperf_lock
bperf_held long_a --bpf-counters --bpf-attr-map "$attr" -e cpu-clock -a
bperf_held ref_a -e cpu-clock -a
# What the short -p and -t sessions count: a process that outlives them,
# so that none of them races with its exit.
perf test -w noploop $((secs + 180)) 9>&- &
churned=$!
bpf_test_track $churned
perf stat --bpf-counters --bpf-attr-map "$attr" -x, -o "$tmp/long_p.out" \
	-e task-clock -p "$busy" 2>"$tmp/long_p.err" 9>&- &
long_p=$!
perf stat -x, -o "$tmp/ref_p.out" -e task-clock -p "$busy" 2>"$tmp/ref_p.err" 9>&- &
ref_p=$!
bpf_test_track "$long_p $ref_p"

held_started() {
	[ -s "$tmp/long_a.start" ] && [ -s "$tmp/ref_a.start" ]
}
bperf_until 60 held_started ||
	bpf_test_fail "the -a sessions did not start: $(cat "$tmp"/long_a.err "$tmp"/ref_a.err)"
bperf_wait_fd $long_p "bpf?link" ||
	bpf_test_fail "the long -p session did not start: $(cat "$tmp/long_p.err")"
bperf_wait_fd $ref_p perf_event ||
	bpf_test_fail "the plain -p session did not start: $(cat "$tmp/ref_p.err")"
bperf_go

kinds=("-e cpu-clock -a" "-e cpu-clock -C 0" "-e task-clock -p $churned"
       "-e task-clock -t $churned" "-e {cpu-clock,task-clock} -a"
       "-e task-clock --no-inherit -p $churned" "-e task-clock workload")
declare -A kind_of end_of
live=()
started=0 killed_starting=0 killed_counting=0 ended=0 missing=

# reap: forget the sessions that are gone.
reap() {
	local p still=()

	for p in "${live[@]}"; do
		kill -0 "$p" 2>/dev/null && still+=("$p")
	done
	live=("${still[@]}")
}

# event_of ARGS: the (first) event the options ARGS count.
event_of() {
	local e=${1#-e }

	e=${e%% *}
	e=${e#\{}
	echo "${e%%,*}"
}

# counting N ARGS: session N, started with -I, printed a count.
counting() {
	grep -q ",$(event_of "$2")," "$tmp/c$1.out" 2>/dev/null
}

# sleep_ms N: sleep a random time below N ms.
sleep_ms() {
	sleep "$(awk -v ms="$((RANDOM % $1))" 'BEGIN { print ms / 1000 }')"
}

# kill9 N PID: SIGKILL session N and its workload, if it is still there.
kill9() {
	local kids st

	kids=$(pgrep -P "$2")
	kill -9 "$2" 2>/dev/null || return 1
	wait "$2" 2>/dev/null	# no "Killed" line from bash
	st=$?
	# shellcheck disable=SC2086 # one pid a word
	[ -z "$kids" ] || kill -9 $kids 2>/dev/null
	[ $st = 137 ] || return 1	# it had ended already
	end_of[$1]=killed
}

start=$SECONDS
# for secs seconds, and on until every kind has run once (60 s at most)
while { [ $((SECONDS - start)) -lt "$secs" ] || [ "$started" -lt ${#kinds[@]} ]; } &&
      [ $((SECONDS - start)) -lt $((secs + 60)) ]; do
	reap
	if [ ${#live[@]} -ge 4 ]; then
		sleep 0.1
		continue
	fi
	n=$started
	k=$((started % ${#kinds[@]}))	# every kind in turn
	args=${kinds[$k]}
	# one in three ends by itself after 0.2 to 2 s of counting, one is
	# killed at a random moment of its start, one while it counts
	how=$((RANDOM % 3))
	if [ $how = 0 ]; then
		ms=$((200 + RANDOM % 1800))
		end="--timeout $ms" run=1
	else
		# printing every 100 ms shows when it counts
		end="-I 100" run=5
	fi
	# perf itself in the background (not in a subshell), so that $! is
	# the session that SIGKILL stops
	case $args in
	*workload)
		# shellcheck disable=SC2086 # $args: options
		perf stat --bpf-counters --bpf-attr-map "$attr" -x, -o "$tmp/c$n.out" \
			${args% workload} $end -- perf test -w noploop $run \
			2>"$tmp/c$n.err" 9>&- & ;;
	*)
		# shellcheck disable=SC2086
		perf stat --bpf-counters --bpf-attr-map "$attr" -x, -o "$tmp/c$n.out" \
			$args $end 2>"$tmp/c$n.err" 9>&- & ;;
	esac
	p=$!
	bpf_test_track $p
	live+=("$p")
	kind_of[$n]=$k
	end_of[$n]=self
	started=$((started + 1))
	case $how in
	1)
		sleep_ms 1500
		kill9 "$n" "$p" && killed_starting=$((killed_starting + 1)) ;;
	2)
		bperf_until 60 counting "$n" "$args" ||
			bpf_test_fail "session c$n ($args) did not start: $(cat "$tmp/c$n.err")"
		sleep_ms 500
		kill9 "$n" "$p" && killed_counting=$((killed_counting + 1)) ;;
	esac
done
elapsed=$((SECONDS - start))

# The short sessions end within their timeout or their workload's second.
for p in "${live[@]}"; do
	bperf_until 60 bpf_test_gone "$p" || bpf_test_fail "session $p did not end"
done
kill "$churned"
# the long -p sessions end with busy, the -a ones when let go
bperf_until 60 bpf_test_gone "$long_p" || bpf_test_fail "the long -p session did not end"
bperf_until 60 bpf_test_gone "$ref_p" || bpf_test_fail "the plain -p session did not end"
bperf_unlock
for p in $(jobs -p); do
	bperf_until 60 bpf_test_gone "$p" || bpf_test_fail "process $p did not end"
done
wait

echo "$started short sessions in $elapsed s; killed with SIGKILL:" \
	"$killed_starting while starting, $killed_counting while counting"
for k in "${!kinds[@]}"; do
	n=0
	for i in "${!kind_of[@]}"; do
		[ "${kind_of[$i]}" = "$k" ] && n=$((n + 1))
	done
	echo "  $n x ${kinds[$k]}"
	[ $n -gt 0 ] || missing=1
done
[ -z "${missing:-}" ] ||
	bpf_test_fail "only $started sessions started: not one of every kind"

# Each session that ended by itself printed a count of its event.
bad=0
for i in "${!end_of[@]}"; do
	[ "${end_of[$i]}" = self ] || continue
	ended=$((ended + 1))
	v=$(bperf_count "c$i" "$(event_of "${kinds[${kind_of[$i]}]}")") &&
		awk -v v="$v" 'BEGIN { exit !(v > 0) }' && continue
	echo "session c$i (${kinds[${kind_of[$i]}]}) ended by itself without a count:" \
		"$(cat "$tmp/c$i.out" "$tmp/c$i.err" 2>/dev/null)"
	bad=$((bad + 1))
done
echo "$ended sessions ended by themselves, $bad without a count"
[ $bad = 0 ] || bpf_test_fail "$bad sessions that ended by themselves counted nothing"

bperf_check "long task-clock -p, msec" "$(bperf_get ref_p task-clock)" \
	"$(bperf_get long_p task-clock)" 5
bperf_check_util "long cpu-clock -a" ref_a long_a cpu-clock 10

bperf_none_pinned
bperf_until 30 objects_back ||
	bpf_test_fail "left loaded after the last session:" \
		"$(bperf_objects | grep -vxFf "$tmp/objects.before")"
echo "nothing of bperf left"
exit 0
