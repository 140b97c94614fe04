#!/usr/bin/env bash
# it_keys_handoff: the stuck-handoff revoke covers named keys too. r1 (a
# baton-run with a long session) owns key k and freezes itself at
# worker.before_release when a drain moves k to r2: its claim stays lowest
# and r2 queues behind it. After --handoff-timeout-ms the leading
# coordinator deletes it (event=forced_revoke key=k ... reason=
# handoff_timeout, history reason "forced"), and r2 runs its command with a
# higher BATON_EPOCH while r1 is still frozen.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_keys_handoff
h_zk_start
b_ctl init --keys k >/dev/null
b_coord c1 --handoff-timeout-ms 2000
runner() {
    local name=$1
    shift
    h_spawn "$name" "$@" "$BATON_BIN/baton-run" --zk "$ZK" --group "$B_GROUP" --key k --id "$name" \
        -- sh -c "echo \"$name \$BATON_EPOCH\" >>'$H_DIR/runs'; exec sleep 600"
}
runner r1 env BATON_FAILPOINTS=worker.before_release=stop BATON_SESSION_TIMEOUT_MS=20000
h_wait_for 20 "r1 runs the command" grep -q '^r1 ' "$H_DIR/runs"
runner r2 env
# r2 a member before r1 is drained: a drain with nobody else to take k
# would leave it unassigned instead of moving it.
h_wait_for 20 "r2 is a member" h_zk exists "/baton/$B_GROUP/workers/r2"
e1=$(awk '$1 == "r1" {print $2}' "$H_DIR/runs")
b_ctl drain r1 >/dev/null
h_wait_for 15 "r1 froze itself releasing k" \
    h_at_failpoint r1 worker.before_release
h_wait_for 20 "the coordinator revokes r1's stuck claim" b_log_has c1 'event=forced_revoke key=k worker=r1 .*reason=handoff_timeout'
h_wait_for 15 "r2 runs the command" grep -q '^r2 ' "$H_DIR/runs"
e2=$(awk '$1 == "r2" {print $2}' "$H_DIR/runs")
((e2 > e1)) || h_fail "r2's epoch $e2 is not above r1's $e1"
h_stopped r1 || h_fail "r1 should still be frozen"
b_ctl history --json | jq -e '.entries | any(.key == "k" and .reason == "forced" and .from == "r1")' >/dev/null ||
    h_fail "no forced history entry for key k"
b_ctl keys list --json | jq -e '.keys[0].owner == "r2" and .keys[0].state == "active"' >/dev/null || h_fail "r2 should own k"
h_kill r1 CONT
h_stop r1
h_stop r2
h_pass "a stuck key claim is revoked after --handoff-timeout-ms; the next owner runs with a higher epoch"
