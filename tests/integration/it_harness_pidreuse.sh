#!/usr/bin/env bash
# it_harness_pidreuse: the harness's exit codes belong to processes, not to
# pids. The kernel reuses pids (pid_max is 32768 on these machines; an hour
# of chaos forks far more), and h_wait_exit once answered a new process
# with the exit code collected for an earlier one of the same pid: a
# 60-minute chaos soak counted an aborted worker, and a producer batch that
# had finished, as "killed by signal 9 not sent by the harness". Here the
# kernel is asked for the same pid again (root writes
# /proc/sys/kernel/ns_last_pid), and the second process's own exit code
# must come back.
#
# In a PID namespace of its own where it can have one (root: it needs
# root anyway), so that the only forks between writing ns_last_pid and
# the spawn are its own: in the shared namespace, the tests running
# beside it under ctest -j3 took the pid first 50 times in a row (CI,
# 2026-12-06).
set -euo pipefail
if [[ ${BATON_PIDREUSE_NS:-} != 1 ]] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    exec env BATON_PIDREUSE_NS=1 unshare --pid --fork --mount-proc bash "${BASH_SOURCE[0]}" "$@"
fi
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_harness_pidreuse
last=/proc/sys/kernel/ns_last_pid
[[ -w $last ]] || h_fail "needs root: writes $last to make the kernel reuse a pid"
h_spawn first sleep 60
pid=$(h_pid first)
h_kill first KILL
rc=0
h_wait_exit first 10 || rc=$?
((rc == 137)) || h_fail "first: exit $rc, expected 137 (SIGKILL)"
# Other processes on the machine fork too, and h_spawn forks before its
# command (a date for its log line): try a few offsets until it gets it.
got=
for ((try = 0; try < 50; try++)); do
    echo $((pid - 1 - try % 4)) >"$last"
    h_spawn second sh -c 'exit 3'
    if [[ $(h_pid second) == "$pid" ]]; then
        got=1
        break
    fi
    h_wait_exit second 10 >/dev/null 2>&1 || true
done
[[ -n $got ]] || h_fail "the kernel did not give pid $pid again in 50 tries"
rc=0
h_wait_exit second 10 || rc=$?
((rc == 3)) || h_fail "second (pid $pid again): exit $rc, expected 3; 137 is the first process's"
h_pass "pid $pid reused after $try tries: each process's own exit code (own PID namespace: ${BATON_PIDREUSE_NS:-0})"
