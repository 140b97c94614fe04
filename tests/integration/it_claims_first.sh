#!/usr/bin/env bash
# it_claims_first: a claim that is the first node ever created in its
# claims directory (sequence 0) is owned without listing the directory; any
# other claim still lists it and queues.
#
# ZooKeeper numbers a sequential node with its parent's child version,
# which every create below the parent raises: sequence 0 means nothing was
# created there before, so the claim is lowest (worker/member_claims.c,
# mb_claims_reconcile). A cold start on fresh directories then takes one
# read per claim, not two. Here a worker is assigned 40 partitions (more
# than CLAIM_PIPELINE_MAX, so its claims go in a multi, whose reply has no
# stat): partition 0 holds a foreign claim already (ours is sequence 1: it
# must list, and wait), partition 1 had a node created and deleted (ours is
# past 0: it lists, and owns), the other 38 are fresh. Every epoch the
# worker acquired must be its claim's czxid.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_claims_first
h_zk_start
B_PARTITIONS=40
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
claims() { echo "/baton/$B_GROUP/partitions/$1/claims"; }
h_zk create "$(claims 0)/claim-00000000deadbeef-0000000000" '{"worker":"ghost","generation":0}'
h_zk create "$(claims 1)/junk" ''
h_zk delete "$(claims 1)/junk"
b_coord c1 --handoff-timeout-ms 0
b_worker p1 --log-level debug
acquired() { (($(grep -c 'event=acquired partition=' "$H_DIR/p1.log" || true) >= 39)); }
h_wait_for 30 "p1 owns the 39 partitions without a foreign claim" acquired
b_log_has p1 "event=claimed partition=2 claim=claim-" || h_fail "p1 logged no claim"
grep -q 'event=claimed partition=2 .* batch=' "$H_DIR/p1.log" || h_fail "p1's claims did not go in a multi"
for p in $(seq 2 39); do
    b_log_has p1 "event=queue_checked partition=$p claim=claim-" ||
        h_fail "partition $p (a fresh directory) was listed"
done
for p in 0 1; do
    ! grep -q "event=queue_checked partition=$p claim=" "$H_DIR/p1.log" ||
        h_fail "partition $p was taken as the first claim of its directory"
done
b_log_has p1 'event=waiting partition=0 behind=claim-00000000deadbeef-0000000000' ||
    h_fail "p1 does not wait behind the foreign claim of partition 0"
! grep -q 'event=acquired partition=0 ' "$H_DIR/p1.log" || h_fail "p1 acquired partition 0 past the foreign claim"
grep -q 'event=acquired partition=1 ' "$H_DIR/p1.log" || h_fail "p1 does not own partition 1"
# Each epoch is its claim's czxid (the watch's stat brought it, not a create
# reply): the status reads the lowest claim's czxid.
st=$(b_status)
for p in $(seq 1 39); do
    e=$(sed -n "s/.*event=acquired partition=$p epoch=\([0-9]*\) .*/\1/p" "$H_DIR/p1.log" | tail -n 1)
    z=$(jq -r --argjson p "$p" '.partitions[] | select(.partition == $p) | .epoch' <<<"$st")
    [[ -n $e && $e != 0 && $e == "$z" ]] || h_fail "partition $p: p1 was given epoch '$e', its claim's czxid is '$z'"
done
# One watch read brought the epoch of the whole multi (one transaction, one
# zxid): the other 37 were owned on it.
n=$(grep -c 'event=queue_checked partition=[0-9]* claim=claim-[0-9a-f-]* listed=0 reason=first_in_directory epoch_from=multi' "$H_DIR/p1.log" || true)
((n == 37)) || h_fail "$n claims took the multi's epoch, not 37"
# Their own watches were held back a few round trips (first_settle), then
# sent, all 37: a claim owned that way and deleted by someone else is
# noticed, and claimed again.
h_wait_for 15 "p1 sends the 37 own watches it held back" \
    b_log_has p1 "event=own_watches_sent claims=37 held=37"
c20=$(h_zk ls "$(claims 20)" | grep '^claim-' | head -n 1)
[[ -n $c20 ]] || h_fail "no claim of p1 in partition 20's directory"
grep -q "event=queue_checked partition=20 claim=$c20 .*epoch_from=multi" "$H_DIR/p1.log" ||
    h_fail "partition 20 was not owned on the multi's epoch"
h_zk delete "$(claims 20)/$c20"
h_wait_for 15 "p1 notices its claim of partition 20 deleted" b_log_has p1 "event=claim_lost partition=20 claim=$c20"
h_wait_for 15 "p1 owns partition 20 again" \
    bash -c "(( \$(grep -c 'event=acquired partition=20 ' '$H_DIR/p1.log') >= 2 ))"
# The foreign claim goes: partition 0 is p1's.
h_zk delete "$(claims 0)/claim-00000000deadbeef-0000000000"
h_wait_for 15 "p1 owns partition 0 once the foreign claim is gone" grep -q 'event=acquired partition=0 ' "$H_DIR/p1.log"
h_pass "fresh directories owned without a listing, with their czxids as epochs; the others listed and queued"
