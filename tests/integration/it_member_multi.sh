#!/usr/bin/env bash
# it_member_multi: a cold start's claims (more than 16 new ones in one poll)
# go in a multi, which is all or nothing. With one claims directory missing
# the multi is refused; every claim is then created on its own (pipelined
# with the queue checks), so only the resource without a directory fails
# (event=claim_failed naming the directory), the others are acquired at
# once, and the failed one is retried until its directory exists. Each is
# acquired exactly once, with one claim.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_member_multi
h_zk_start
PROBE=$BATON_TESTS_BIN/member_probe
N=20
b_ctl init --topic in --partitions $N >/dev/null
# No coordinator: the assignment is written here, every partition to p1.
h_zk create "/baton/$B_GROUP/assignment/p1" "{\"generation\":1,\"partitions\":[$(seq -s, 0 $((N - 1)))]}" >/dev/null
h_zk rmr "/baton/$B_GROUP/partitions/7/claims"
h_spawn p1 "$PROBE" --zk "$ZK" --group "$B_GROUP" --id p1 --session-timeout-ms "$B_SESSION_MS"
count() { grep -c "^acquired partition=[0-9]* " "$H_DIR/p1.log" || true; }
h_wait_for 20 "p1 acquired the $((N - 1)) partitions with a claims directory" \
    eval '(($(count) == N - 1))'
b_log_has p1 "event=claim_failed partition=7 error=\"'/baton/$B_GROUP/partitions/7/claims' does not exist\"" ||
    h_fail "partition 7's failed create was not logged with its directory"
! grep -q '^acquired partition=7 ' "$H_DIR/p1.log" || h_fail "partition 7 acquired without a claims directory"
! b_log_has p1 'event=claimed .* batch=' || h_fail "a claim was made by the refused multi"
h_zk create "/baton/$B_GROUP/partitions/7/claims" '' >/dev/null
h_wait_for 20 "p1 acquired partition 7 once its directory exists" eval '(($(count) == N))'
for p in $(seq 0 $((N - 1))); do
    n=$(grep -c "^acquired partition=$p " "$H_DIR/p1.log")
    ((n == 1)) || h_fail "partition $p acquired $n times (want 1)"
    c=$(h_zk ls "/baton/$B_GROUP/partitions/$p/claims" | grep -c '^claim-' || true)
    ((c == 1)) || h_fail "partition $p has $c claims (want 1)"
done
h_pass "a refused multi of $N claims fell back to one create each: $((N - 1)) acquired at once, partition 7 once its directory existed"
