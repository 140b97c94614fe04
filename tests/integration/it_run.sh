#!/usr/bin/env bash
# it_run: three baton-run instances for one key, each running a shell loop
# that appends "$BATON_EPOCH $$" to a fenced state file (baton-fence-write)
# every 100 ms. Checks that
#   - one command runs at a time: the state file's accepted lines have
#     non-decreasing epochs and one shell per epoch;
#   - kill -9 of the runner (and its command) -> another instance starts
#     the command with a higher BATON_EPOCH;
#   - SIGSTOP of the runner past its session timeout (its command keeps
#     going) -> the successor's epoch is higher, the zombie command's next
#     write is refused (baton-fence-write exit 3), and after SIGCONT the
#     zombie baton-run stops its command itself;
#   - SIGTERM to the runner stops its command (exit 143 mirrored) and the
#     key moves on, with a higher epoch again.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_run
h_zk_start
B_SESSION_MS=2000
b_ctl init --keys loop >/dev/null
b_coord c1

export FW=$BATON_BIN/baton-fence-write S=$H_DIR/loop.state R=$H_DIR/refused.txt
: >"$R"
JOB='while :; do "$FW" --state "$S" --append "$BATON_EPOCH $$" 2>/dev/null; rc=$?
  [ $rc -eq 0 ] || echo "$BATON_EPOCH $$ $rc" >>"$R"; sleep 0.1; done'
for r in r1 r2 r3; do
    h_spawn "$r" "$BATON_BIN/baton-run" --zk "$ZK" --group "$B_GROUP" --key loop --id "$r" \
        --session-timeout-ms "$B_SESSION_MS" --kill-after-ms 2000 -- sh -c "$JOB"
done

lines() { tail -n +2 "$S" 2>/dev/null; }
# last_field N: field N of the last accepted line.
last_field() { lines | tail -n 1 | cut -d' ' -f"$1"; }
# epoch_above E: the last accepted line has an epoch above E.
epoch_above() { local e; e=$(last_field 1); [[ -n $e ]] && ((e > $1)); }
# runner_of PID: the h_spawn name of the baton-run whose command is PID.
runner_of() {
    local ppid r
    ppid=$(awk '{print $4}' "/proc/$1/stat")
    for r in r1 r2 r3; do [[ $(h_pid "$r") == "$ppid" ]] && { echo "$r"; return 0; }; done
    return 1
}
pid_gone() { ! kill -0 "$1" 2>/dev/null; }

h_wait_for 20 "a command writes" bash -c "[[ \$(tail -n +2 '$S' 2>/dev/null | wc -l) -ge 5 ]]"
e1=$(last_field 1) pid1=$(last_field 2)
run1=$(runner_of "$pid1") || h_fail "the writer $pid1 is not a baton-run's command"
h_log "runner $run1 (command $pid1) epoch $e1"
b_log_has "$run1" "event=child_started pid=$pid1 key=loop epoch=$e1" || h_fail "$run1 did not log its start"

# 1. kill -9 the runner and its command: another instance takes over.
h_kill "$run1" KILL
kill -KILL -- "-$pid1" 2>/dev/null || true
h_wait_for 20 "a successor writes with a higher epoch" epoch_above "$e1"
e2=$(last_field 1) pid2=$(last_field 2)
run2=$(runner_of "$pid2") || h_fail "the writer $pid2 is not a baton-run's command"
[[ $run2 != "$run1" ]] || h_fail "the killed runner $run1 came back"
h_log "runner $run2 (command $pid2) epoch $e2 > $e1"

# 2. SIGSTOP the runner only: its command keeps writing with the old epoch
# until the successor's first write, then every write is refused.
h_kill "$run2" STOP
h_wait_for 20 "a successor writes with a higher epoch than the stopped runner" epoch_above "$e2"
e3=$(last_field 1) pid3=$(last_field 2)
run3=$(runner_of "$pid3") || h_fail "the writer $pid3 is not a baton-run's command"
h_wait_for 10 "the zombie command's write is refused" grep -q "^$e2 $pid2 3\$" "$R"
kill -0 "$pid2" || h_fail "the zombie command $pid2 died while its runner was stopped"
h_kill "$run2" CONT
h_wait_for 10 "the resumed runner stops its command" pid_gone "$pid2"
h_wait_for 10 "the resumed runner says why it stopped its command" \
    b_log_has "$run2" "event=child_stopped pid=$pid2 epoch=$e2 reason=(suspended|lost)" ||
    h_fail "$run2 did not say it stopped its command"
h_wait_for 10 "the zombie rejoins" bash -c "[[ \$(grep -c 'event=joined' '$H_DIR/$run2.log') -ge 2 ]]"
h_alive "$run2" || h_fail "the resumed runner exited"
h_log "runner $run3 (command $pid3) epoch $e3 > $e2; zombie $run2 refused and stopped"

# 3. SIGTERM to the runner: forwarded to its command, exit status mirrored;
# the remaining instance takes over.
h_stop "$run3" 10
rc=0; h_wait_exit "$run3" 1 || rc=$?
((rc == 143)) || h_fail "$run3 exited $rc after SIGTERM, wanted 143 (its command's)"
pid_gone "$pid3" || h_fail "the command $pid3 survived its runner"
b_log_has "$run3" 'event=left' || h_fail "$run3 did not leave gracefully"
h_wait_for 20 "the last instance writes with a higher epoch" epoch_above "$e3"
e4=$(last_field 1)

# The invariants over the whole run.
lines | awk 'NR > 1 && $1 < prev { print "epoch went down at line " NR ": " $0; bad = 1 }
             { prev = $1 } END { exit bad }' || h_fail "accepted epochs are not monotonic"
lines | awk '($1 in p) && p[$1] != $2 { print "epoch " $1 " written by " p[$1] " and " $2; bad = 1 }
             { p[$1] = $2 } END { exit bad }' || h_fail "two commands wrote with one epoch"
n_epochs=$(lines | cut -d' ' -f1 | sort -u | wc -l)
((n_epochs == 4)) || h_fail "$n_epochs epochs in the state file, wanted 4 ($e1 $e2 $e3 $e4)"
h_pass "one command at a time; epochs $e1 < $e2 < $e3 < $e4; zombie write refused and its command stopped"
