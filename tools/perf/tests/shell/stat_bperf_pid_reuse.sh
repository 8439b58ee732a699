#!/bin/bash
# perf stat --bpf-counters tells apart tasks that had the same tid (exclusive)
# SPDX-License-Identifier: GPL-2.0
#
# Session A counts a process with two threads.  One thread exits: A's
# root registration keeps the entry of what it counted as long as A
# runs.  A new task then gets that tid (clone3 with set_tid).  It is a
# different task: sessions that ask for it must count all of it, whether
# it is forked by their workload or they name it with -p, and A must not
# count it.

set -u
# shellcheck source=lib/bperf.sh
. "$(dirname "$0")"/lib/bperf.sh

bperf_require python3 bpftool
tmp=$(bpf_test_dir)

# helper threads OUT FIFO: a process whose second thread writes its tid
#   to OUT and exits once FIFO has a line; the process then sleeps.
# helper spawn TID OUT CMD...: run CMD in a child whose pid is TID;
#   once it ends, write to OUT its pid, the CPU time (ms) the kernel
#   charged to it, and that plus the helper's own.  Exits with 4 if the
#   kernel cannot give a chosen pid (no clone3, or not privileged).
cat >"$tmp/helper.py" <<'EOF'
import ctypes, errno, os, resource, signal, sys, threading, time

def cpu_ms(ru):
    return (ru.ru_utime + ru.ru_stime) * 1000

def threads(out, fifo):
    def worker():
        with open(out + ".tmp", "w") as f:
            f.write("%d\n" % threading.get_native_id())
        os.rename(out + ".tmp", out)
        with open(fifo) as f:
            f.readline()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    time.sleep(3600)

def spawn(tid, out, argv):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.syscall.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_size_t]
    want = (ctypes.c_int32 * 1)(tid)
    # struct clone_args: flags, pidfd, child_tid, parent_tid,
    # exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup
    args = (ctypes.c_uint64 * 11)(0, 0, 0, 0, signal.SIGCHLD, 0, 0, 0,
                                  ctypes.addressof(want), 1, 0)
    pid = libc.syscall(435, ctypes.byref(args), ctypes.sizeof(args))
    if pid < 0:
        err = ctypes.get_errno()
        print("clone3 with set_tid %d: %s" % (tid, os.strerror(err)),
              file=sys.stderr)
        sys.exit(4 if err in (errno.ENOSYS, errno.EPERM) else 1)
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    own = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        f.write("%d %.3f %.3f\n" % (pid, cpu_ms(ru), cpu_ms(ru) + cpu_ms(own)))
    sys.exit(os.waitstatus_to_exitcode(status))

if sys.argv[1] == "threads":
    threads(sys.argv[2], sys.argv[3])
else:
    spawn(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
EOF

# task_session NAME PID: in the background, session NAME counts the
# task-clock of PID; returns once it counts, its pid in $session.
task_session() {
	bperf_stat "$1" -e task-clock -p "$2" &
	session=$!
	bpf_test_track $session
	bperf_wait_fd $session "bpf?link" ||
		bpf_test_fail "session $1 did not start: $(cat "$tmp/$1.err")"
}

thread_gone() {
	[ ! -e "/proc/$x/task/$tid" ]
}

# roots N: the sessions have registered N root tasks in all
roots() {
	[ "$(bperf_entries "$(bperf_attr_map)_dir/bperf_roots")" = "$1" ]
}

# field N FILE: the Nth number a spawn helper wrote
field() {
	cut -d' ' -f"$1" "$2"
}

mkfifo "$tmp/exit" "$tmp/go"
python3 "$tmp/helper.py" threads "$tmp/tid" "$tmp/exit" &
x=$!
bpf_test_track $x
bperf_until 30 test -s "$tmp/tid" || bpf_test_fail "the two-thread process did not start"
tid=$(cat "$tmp/tid")
echo "process $x, second thread $tid"

task_session a "$x"
a=$session
bperf_until 60 roots 2 || bpf_test_fail "session A did not register both threads"
echo exit >"$tmp/exit"
bperf_until 30 thread_gone || bpf_test_fail "thread $tid did not exit"
# A's registration keeps the entry of the thread that exited
[ "$(bperf_entries "$(bperf_attr_map)_dir/bperf_tasks")" = 2 ] ||
	bpf_test_fail "want the entries of both threads of $x kept for A"

# Can this kernel give the tid to a new task?
python3 "$tmp/helper.py" spawn "$tid" "$tmp/probe.ru" true 2>"$tmp/probe.err"
case $? in
0) ;;
4) bpf_test_skip "$(cat "$tmp/probe.err")" ;;
*) bpf_test_fail "$(cat "$tmp/probe.err")" ;;
esac

# A workload whose child gets the tid: the session follows the fork.
bperf_stat c -e task-clock -- python3 "$tmp/helper.py" spawn "$tid" "$tmp/w.ru" \
	perf test -w noploop 2 ||
	bpf_test_fail "session C failed: $(cat "$tmp/c.err")"
[ "$(field 1 "$tmp/w.ru")" = "$tid" ] || bpf_test_fail "the forked task's pid is not $tid"
count=$(bperf_get c task-clock)
bperf_check "workload forking tid $tid, task-clock (reference: the CPU time of both)" \
	"$(field 3 "$tmp/w.ru")" "$count" 15

# cpu_ticks PID: user + sys time of PID so far, in clock ticks
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

# half_a_second: the task of tid $tid ran for 0.5 s at least
half_a_second() {
	local t

	t=$(cpu_ticks "$tid")
	[ "${t:-0}" -ge $(($(getconf CLK_TCK) / 2)) ]
}

# -p: the new task waits for the fifo, then spins for 4 s.
# shellcheck disable=SC2016 # expanded by the new task's shell
python3 "$tmp/helper.py" spawn "$tid" "$tmp/p.ru" \
	sh -c 'read -r _ <"$0"; exec perf test -w noploop 4' "$tmp/go" 2>"$tmp/p.spawn" &
sp=$!
bpf_test_track $sp
bperf_until 30 test -e "/proc/$tid" ||
	bpf_test_fail "no new task of tid $tid: $(cat "$tmp/p.spawn")"
task_session b "$tid"
b=$session
bperf_until 60 roots 3 || bpf_test_fail "session B did not register tid $tid"
echo go >"$tmp/go"

# A ends while the new task runs and is tracked for B: A counted its
# process, which slept, and nothing of the new task.
bperf_until 60 half_a_second || bpf_test_fail "the task of tid $tid does not run"
# $a is the subshell running perf stat
pkill -INT -P $a
wait $a
count=$(bperf_get a task-clock)
echo "-p $x, task-clock: $count ms, stopped once the new task had run for 500 ms"
awk -v c="$count" 'BEGIN { exit !(c < 250) }' ||
	bpf_test_fail "session A counted $count ms, some of them of a task that was not its"
kill $x

wait $sp || bpf_test_fail "the task of tid $tid failed: $(cat "$tmp/p.spawn")"
wait $b
[ "$(field 1 "$tmp/p.ru")" = "$tid" ] || bpf_test_fail "the new task's pid is not $tid"
count=$(bperf_get b task-clock)
bperf_check "-p $tid, task-clock of the new task (reference: its CPU time)" \
	"$(field 2 "$tmp/p.ru")" "$count" 15

bperf_none_pinned
exit 0
