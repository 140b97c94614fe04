#!/usr/bin/env bash
# it_claims_junk: a node in a claims directory that is not a claim (made by
# hand, with a sequence-like suffix) is ignored by every reader alike
# (baton_layout.h: a claim is claim-...-<10 digits>). batonctl status always
# ignored it and showed the worker's claim as the owner; the worker used to
# count it as a claim and wait behind it for ever, so status said "active"
# while nobody owned the partition. Now the worker owns it and fences the
# sink with the epoch status shows.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_claims_junk
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

h_zk create /baton/g/partitions/0/claims/junk-0000000000 'not a claim'
b_coord c1
b_worker w1 --log-level debug
h_wait_for 15 "w1 shown owning both partitions" b_all_active 1
st=$(b_status)
jq -e '.partitions[0].claims == 1' <<<"$st" >/dev/null ||
    h_fail "status counts the junk node as a claim: $(jq -c '.partitions[0]' <<<"$st")"
jq -e '[.warnings[]? | tostring | test("junk-0000000000")] | any' <<<"$st" >/dev/null ||
    h_fail "status does not warn about the junk node: $(jq -c '.warnings' <<<"$st")"
epoch=$(b_epoch 0)
h_wait_for 15 "w1 acquires partition 0 and fences it at epoch $epoch" \
    bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT epoch FROM baton_fence WHERE grp='g' AND partition=0\") == $epoch ]]"
b_log_has w1 'event=waiting partition=0' && h_fail "w1 waited behind the junk node"
b_produce 10 junk
h_wait_for 15 "10 records in the sink" b_sink_has 10
h_pass "a non-claim node in a claims directory blocks nobody; status and worker agree"
