#!/usr/bin/env bash
# it_claims: claims queue in sequence order and the lowest owns; a waiting
# claim watches only its predecessor; epochs (claim czxids) strictly rise
# across successive owners of a partition; a stale claim from elsewhere
# blocks ownership until it goes, and the sink never sees an epoch fall.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_claims
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

# A claim that is not the worker's (say, left by a paused process) sits at
# the head of partition 0's queue before anyone is assigned.
h_zk create /baton/g/partitions/0/claims/claim-00000000deadbeef-0000000000 '{"worker":"ghost","generation":0}'
b_coord c1
b_worker w1 --log-level debug
h_wait_for 15 "w1 owns partition 1" b_jq '.partitions[1].state == "active" and .partitions[1].owner == "w1"'
behind_ghost() { b_jq '.partitions[0].state == "handoff" and .partitions[0].owner == "ghost" and .partitions[0].assigned == "w1" and .partitions[0].claims == 2'; }
h_wait_for 15 "partition 0 waits behind the ghost claim (w1's claim queued)" behind_ghost ||
    h_fail "partition 0 should wait behind the ghost claim: $(b_status | jq -c '.partitions[0]')"
st=$(b_status)
sleep 1 # not a wait: the window in which a wrongful fence (checked below) would show
h_wait_for 10 "w1 watches its predecessor" b_log_has w1 'event=waiting partition=0 behind=claim-00000000deadbeef-0000000000' ||
    h_fail "w1 does not watch its predecessor"
ghost_epoch=$(jq -r '.partitions[0].epoch' <<<"$st")
[[ -z $(b_sql "SELECT epoch FROM baton_fence WHERE grp='g' AND partition=0") ]] ||
    h_fail "w1 fenced partition 0 while not owning it"

# The ghost goes: w1's claim is lowest now, and its epoch is higher.
h_zk delete /baton/g/partitions/0/claims/claim-00000000deadbeef-0000000000
h_wait_for 10 "w1 owns partition 0" b_jq '.partitions[0].state == "active" and .partitions[0].owner == "w1"'
prev=$(b_epoch 0)
((prev > ghost_epoch)) || h_fail "epoch did not rise past the ghost's"

# Successive owners: move partition 0 back and forth; each owner's epoch is
# higher than the last, in ZooKeeper and in the sink's fence.
b_worker w2
h_wait_for 15 "two workers" b_all_active 2
epochs=("$(b_epoch 0)")
for round in 1 2 3; do
    owner=$(b_owner 0)
    b_produce 20 "r$round"
    h_kill "$owner" TERM
    rc=0; h_wait_exit "$owner" 15 || rc=$?
    ((rc == 0)) || h_fail "$owner exited $rc"
    h_wait_for 15 "partition 0 re-owned" b_all_active 1
    e=$(b_epoch 0)
    ((e > ${epochs[-1]})) || h_fail "round $round: epoch $e is not above ${epochs[-1]}"
    h_wait_for 10 "sink fence at epoch $e" bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT epoch FROM baton_fence WHERE grp='g' AND partition=0\") == $e ]]"
    epochs+=("$e")
    b_worker "$owner"
    h_wait_for 15 "two workers again" b_all_active 2
done
h_wait_for 15 "60 records in the sink" b_sink_has 60
regress=$(b_sql "SELECT count(*) FROM (SELECT epoch, LAG(epoch) OVER (PARTITION BY partition ORDER BY offset) AS prev FROM baton_output WHERE grp='g') WHERE epoch < prev")
((regress == 0)) || h_fail "$regress output rows have an epoch lower than an earlier offset's"
h_pass "claims queue in order; epochs ${epochs[*]} strictly rise"
