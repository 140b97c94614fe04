#!/usr/bin/env bash
# it_fault_restart: claims belong to a session, not to a worker id. w1 is
# SIGKILLed and restarted at once with the same id and a long session
# timeout, but without its member lock file (another state directory, as
# when the lock file was lost): it cannot prove the old incarnation dead,
# so it must not adopt or delete the old session's claims. It waits for the
# old member node (and with it every old claim) to expire, then claims
# afresh with higher epochs; no partition ever has two writers, and every
# record lands exactly once. (With its lock file it takes over at once:
# it_restart_takeover.)
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_fault_restart
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
B_SESSION_MS=5000 b_worker w1
h_wait_for 20 "w1 owns everything" b_all_active 1
b_produce 200 a
h_wait_for 15 "first records in the sink" b_sink_has 200
old_epochs=$(b_status | jq -c '[.partitions[].epoch]')
old_claims=$(for p in 0 1 2 3; do h_zk ls /baton/g/partitions/$p/claims; done | sort)

h_kill w1 KILL
rc=0; h_wait_exit w1 10 || rc=$?
BATON_STATE_DIR=$H_DIR/lost B_SESSION_MS=5000 b_worker w1
h_wait_for 15 "the new w1 waits for the old session" b_log_has w1 'event=member_id_busy id=w1 .*action=wait_for_expiry'
# While it waits, the old claims are still there and nobody adopted them.
now_claims=$(for p in 0 1 2 3; do h_zk ls /baton/g/partitions/$p/claims; done | sort)
[[ $now_claims == "$old_claims" ]] || h_fail "claims changed while the old session lived: '$old_claims' -> '$now_claims'"
b_produce 200 b
h_wait_for 30 "the new w1 joins once the old session expired" b_log_has w1 'event=joined'
# Status shows owners by worker id, so wait for the new session's epochs.
new_owns() {
    b_all_active 1 &&
        b_status | jq -e --argjson a "$old_epochs" '[.partitions[].epoch] as $b | all(range(0; 4); $b[.] > $a[.])'
}
h_wait_for 30 "the new w1 owns everything with new epochs" new_owns
b_log_has w1 'event=claim_recovered' && h_fail "the new w1 adopted a claim"
b_log_has w1 'event=incarnation_takeover' && h_fail "the new w1 took over without its lock file"
new_claims=$(for p in 0 1 2 3; do h_zk ls /baton/g/partitions/$p/claims; done | sort)
[[ -z $(comm -12 <(echo "$old_claims") <(echo "$new_claims")) ]] ||
    h_fail "an old session's claim survived: $(comm -12 <(echo "$old_claims") <(echo "$new_claims"))"
new_epochs=$(b_status | jq -c '[.partitions[].epoch]')
jq -n -e --argjson a "$old_epochs" --argjson b "$new_epochs" 'all(range(0; 4); $b[.] > $a[.])' >/dev/null ||
    h_fail "new epochs $new_epochs are not all above the old session's $old_epochs"
h_wait_for 20 "all 400 records in the sink" b_sink_has 400
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "restart with the same id: old claims never adopted, fresh epochs, exactly once"
