#!/usr/bin/env bash
# it_run_orphan: the job dies with its runner (issue 13, item 3).
#   1. One baton-run whose command is a shell with a child shell (and its
#      sleep), a foreground sleep, and an orphan in a process group of its
#      own (perl setpgrp, its parent gone: adopted by baton-run as
#      subreaper). The runner is killed with SIGKILL: every process of the
#      job is gone within a bounded wait (killed by the guardian,
#      which says so in the runner's log), and none of them printed "done".
#   2. The issue's scenario: three instances of
#      `baton-run --key compaction --once run-2 -- sh -c 'echo start; sleep 4;
#      echo done'`; the owner is killed with SIGKILL mid-job (its job is not
#      touched by the test): its job dies with it, a successor runs the job
#      again with a higher BATON_EPOCH, and exactly one "done" is printed,
#      the successor's.
# shellcheck disable=SC2016 # the jobs expand their own variables
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_run_orphan
# shellcheck disable=SC2119 # default tick
h_zk_start
B_SESSION_MS=2000
b_ctl init --keys orphan,compaction >/dev/null
b_coord c1

export P=$H_DIR/pids.txt OUT=$H_DIR/out.txt
: >"$P"
: >"$OUT"
# Whatever a failing run leaves behind is stopped by its recorded pid and
# process group (never by name).
groups=()
kill_leftovers() {
    local s pid
    for s in "${groups[@]}"; do kill -KILL -- "-$s" 2>/dev/null || true; done
    while read -r _ pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$P"
}
trap 'rc=$?; kill_leftovers; (exit $rc); h_cleanup' EXIT

# stat_field PID N: field N of /proc/PID/stat counted after "(comm)" (1:
# state, 2: ppid, 3: pgrp, 4: session); fails if PID is gone or a zombie.
stat_field() {
    local st rest
    read -r st 2>/dev/null <"/proc/$1/stat" || return 1
    rest=${st##*) }
    local -a f
    read -r -a f <<<"$rest"
    [[ ${f[0]} != Z ]] || return 1
    echo "${f[$(($2 - 1))]}"
}
# job_left PGID [PID...]: the live processes of group PGID, and those of
# the PIDs (moved to another group) still alive, one per line.
job_left() {
    local d pid g=$1
    shift
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [[ $(stat_field "$pid" 3 2>/dev/null) == "$g" ]] && echo "$pid"
    done
    for pid in "$@"; do stat_field "$pid" 1 >/dev/null 2>&1 && echo "$pid"; done
    return 0
}
job_gone() { [[ -z $(job_left "$@") ]]; }
pid_of() { awk -v w="$1" '$1 == w { print $2 }' "$P"; }
has_lines() { (($(wc -l <"$1") >= $2)); }

# 1. A job with a child, a grandchild and an adopted orphan in another group.
JOB='echo "sh $$" >>"$P"
sh -c '\''echo "sub $$" >>"$P"; sleep 30; echo done >>"$OUT"'\'' &
( perl -e '\''setpgrp(0, 0); open(my $f, ">>", $ENV{P}); print $f "perl $$\n"; close $f;
  sleep 30; open($f, ">>", $ENV{OUT}); print $f "done\n"'\'' & )
sleep 30; echo done >>"$OUT"'
h_spawn r1 "$BATON_BIN/baton-run" --zk "$ZK" --group "$B_GROUP" --key orphan --id r1 \
    --session-timeout-ms "$B_SESSION_MS" --kill-after-ms 2000 -- sh -c "$JOB"
h_wait_for 20 "the job and its descendants run" has_lines "$P" 3 || h_fail "the job did not start"
sid=$(pid_of sh) sub=$(pid_of sub) perl=$(pid_of perl)
groups+=("$sid")
r1=$(h_pid r1)
[[ $(stat_field "$sid" 2) == "$r1" ]] || h_fail "the job $sid is not r1's child"
[[ $(stat_field "$sid" 3) == "$sid" ]] || h_fail "the job $sid does not lead its own process group"
adopted() { [[ $(stat_field "$perl" 2) == "$r1" ]]; }
h_wait_for 10 "the orphan $perl is adopted by r1 (subreaper)" adopted ||
    h_fail "the orphan was not adopted"
[[ $(stat_field "$perl" 3) != "$sid" ]] || h_fail "the orphan $perl did not leave the job's group"
n=$(job_left "$sid" "$perl" | wc -l)
((n >= 5)) || h_fail "the job has $n processes, wanted sh, sub, 2 sleeps, perl"
h_log "job $sid (child $sub, orphan $perl in its own group): $n processes; SIGKILL r1"

h_kill r1 KILL
h_wait_for 5 "nothing of the job is left" job_gone "$sid" "$sub" "$perl" ||
    h_fail "left after r1's SIGKILL: $(job_left "$sid" "$sub" "$perl" | tr '\n' ' ')"
! grep -q 'done' "$OUT" || h_fail "the killed runner's job printed done"
h_wait_for 5 "the guardian says what it killed" \
    b_log_has r1 "event=guardian_killed reason=runner_gone session=$sid " ||
    h_fail "r1's guardian did not log the kill"
h_log "$(grep -o 'event=guardian_killed.*' "$H_DIR/r1.log")"

# 2. The issue's scenario: three --once instances, the owner killed mid-job.
JOB2='echo "start $BATON_EPOCH $$" >>"$OUT"; sleep 4; echo "done $BATON_EPOCH $$" >>"$OUT"'
for i in 1 2 3; do
    h_spawn "o$i" "$BATON_BIN/baton-run" --zk "$ZK" --group "$B_GROUP" --key compaction \
        --id "o$i" --session-timeout-ms "$B_SESSION_MS" --kill-after-ms 2000 \
        --once run-2 -- sh -c "$JOB2"
done
h_wait_for 20 "the run-2 job starts" has_lines "$OUT" 1 || h_fail "run-2 did not start"
read -r _ e1 job1 <"$OUT"
groups+=("$job1")
victim=
for i in 1 2 3; do [[ $(h_pid "o$i") == "$(stat_field "$job1" 2)" ]] && victim=o$i; done
[[ -n $victim ]] || h_fail "the job $job1 is not a runner's command"
h_kill "$victim" KILL
h_log "killed runner $victim (SIGKILL) mid-job; its job $job1 has epoch $e1"
h_wait_for 3 "the killed runner's job is gone (before its sleep 4 ends)" job_gone "$job1" ||
    h_fail "the killed runner's job $job1 outlived it"
rest=()
for i in 1 2 3; do [[ o$i == "$victim" ]] || rest+=("o$i"); done
for n in "${rest[@]}"; do
    rc=0
    h_wait_exit "$n" 30 || rc=$?
    ((rc == 0)) || h_fail "$n exited $rc, wanted 0"
done
starts=$(grep -c '^start ' "$OUT" || true)
dones=$(grep -c '^done ' "$OUT" || true)
((starts == 2 && dones == 1)) || h_fail "run-2: $starts starts and $dones dones, wanted 2 and 1"
! grep -q "^done $e1 " "$OUT" || h_fail "the killed runner's job printed done"
read -r _ e2 job2 < <(grep '^done ' "$OUT")
((e2 > e1)) || h_fail "run-2 finished with epoch $e2, not above the killed runner's $e1"
grep -q "^start $e2 $job2\$" "$OUT" || h_fail "the successor's run did not start with epoch $e2"
h_pass "the job died with its SIGKILLed runner (group, child, adopted orphan); run-2 printed done once, epoch $e2 > $e1"
