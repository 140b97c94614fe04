#!/usr/bin/env bash
# it_run_once: cron-style runs (baton-run --once RUN_ID).
#   1. Five instances start at once for one key and RUN_ID R1: the job (a
#      fenced append) happens exactly once, the run is recorded at
#      keys/<key>/runs/R1 with the runner's epoch, and all five exit 0.
#   2. Five instances for R2, whose job appends "start", sleeps, appends
#      "done": the runner and its job are killed -9 mid-job; exactly one
#      other instance runs it again, to "done", with a higher epoch; the
#      record has that epoch; the four survivors exit 0.
#   3. A later instance for R1 exits 0 without running anything.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_run_once
h_zk_start
B_SESSION_MS=2000
b_ctl init --keys nightly >/dev/null
b_coord c1

export FW=$BATON_BIN/baton-fence-write S=$H_DIR/job.state
RUNS=/baton/$B_GROUP/keys/nightly/runs
lines() { tail -n +2 "$S" 2>/dev/null; }
# start_run NAME RUN_ID JOB: one baton-run --once instance.
start_run() {
    h_spawn "$1" "$BATON_BIN/baton-run" --zk "$ZK" --group "$B_GROUP" --key nightly --id "$1" \
        --session-timeout-ms "$B_SESSION_MS" --kill-after-ms 2000 --once "$2" -- sh -c "$3"
}
# all_exit_0 NAME...: each exits 0 (bounded).
all_exit_0() {
    local n rc
    for n in "$@"; do
        rc=0; h_wait_exit "$n" 30 || rc=$?
        ((rc == 0)) || h_fail "$n exited $rc, wanted 0"
    done
}

# 1. Five at once.
JOB1='"$FW" --state "$S" --append "ran $BATON_RUN_ID $BATON_EPOCH $$"'
for i in 1 2 3 4 5; do start_run "a$i" R1 "$JOB1"; done
all_exit_0 a1 a2 a3 a4 a5
n=$(lines | grep -c '^ran R1 ' || true)
((n == 1)) || h_fail "the R1 job ran $n times, wanted once"
e1=$(lines | awk '$1 == "ran" && $2 == "R1" { print $3 }')
rec=$(h_zk get "$RUNS/R1") || h_fail "no record at $RUNS/R1"
jq -e --argjson e "$e1" '.epoch == $e and .exit_code == 0 and .run_id == "R1"' <<<"$rec" >/dev/null ||
    h_fail "record $rec does not match the run (epoch $e1)"
recorded=$(cat "$H_DIR"/a?.log | grep -c 'event=run_recorded run_id=R1' || true)
((recorded == 1)) || h_fail "$recorded instances recorded R1, wanted 1"
skipped=$(cat "$H_DIR"/a?.log | grep -c 'event=run_already_done run_id=R1' || true)
((skipped == 4)) || h_fail "$skipped instances saw R1 done, wanted 4"
h_log "R1 ran once (epoch $e1), recorded; the other four exited 0 without running"

# 2. The runner dies mid-job.
JOB2='"$FW" --state "$S" --append "start $BATON_RUN_ID $BATON_EPOCH $$" &&
  sleep 3 && "$FW" --state "$S" --append "done $BATON_RUN_ID $BATON_EPOCH $$"'
for i in 1 2 3 4 5; do start_run "b$i" R2 "$JOB2"; done
h_wait_for 20 "the R2 job starts" bash -c "tail -n +2 '$S' | grep '^start R2 ' >/dev/null"
read -r _ _ es pid < <(lines | grep '^start R2 ')
ppid=$(awk '{print $4}' "/proc/$pid/stat")
victim=
for i in 1 2 3 4 5; do [[ $(h_pid "b$i") == "$ppid" ]] && victim=b$i; done
[[ -n $victim ]] || h_fail "the R2 job $pid is not a baton-run's command"
h_kill "$victim" KILL
kill -KILL -- "-$pid" 2>/dev/null || true
h_log "killed runner $victim and its job $pid (epoch $es) mid-job"
rest=()
for i in 1 2 3 4 5; do [[ b$i == "$victim" ]] || rest+=("b$i"); done
all_exit_0 "${rest[@]}"
starts=$(lines | grep -c '^start R2 ' || true)
dones=$(lines | grep -c '^done R2 ' || true)
((starts == 2 && dones == 1)) || h_fail "R2: $starts starts and $dones dones, wanted 2 and 1"
read -r _ _ ed pid2 < <(lines | grep '^done R2 ')
((ed > es)) || h_fail "R2 finished with epoch $ed, not above the killed runner's $es"
grep -q "^start R2 $ed $pid2\$" < <(lines) || h_fail "R2's second run did not start with epoch $ed"
rec=$(h_zk get "$RUNS/R2") || h_fail "no record at $RUNS/R2"
jq -e --argjson e "$ed" '.epoch == $e and .exit_code == 0' <<<"$rec" >/dev/null ||
    h_fail "record $rec does not match the finishing run (epoch $ed)"
h_log "R2 finished once by another instance with epoch $ed > $es"

# 3. Late: the run is recorded, nothing runs.
before=$(lines | wc -l)
start_run late R1 "$JOB1"
all_exit_0 late
b_log_has late 'event=run_already_done run_id=R1' || h_fail "the late instance did not see R1 done"
(($(lines | wc -l) == before)) || h_fail "the late instance ran the job"
h_pass "R1 ran exactly once among five; R2 killed mid-job was finished once with a higher epoch"
