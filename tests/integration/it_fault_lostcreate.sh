#!/usr/bin/env bash
# it_fault_lostcreate: claim creates whose replies are lost to a connection
# loss are resolved by finding our own claim by its session id, never by
# creating twice. test_lost_create (zoo_create2 wrapped at link time: the
# create happens, the reply says ZCONNECTIONLOSS) joins a real group as the
# only worker and checks that every partition ends with exactly one claim
# of ours whose czxid is the epoch it was given.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_fault_lostcreate
prog=${BATON_TESTS_BIN:-$BATON_BIN/../tests}/test_lost_create
[[ -x $prog ]] || h_fail "$prog not built"
h_zk_start
b_init 4
b_coord c1
h_spawn wl "$prog" --zk "$ZK" --group "$B_GROUP" --id wl --partitions 4 --lose 3
rc=0; h_wait_exit wl 60 || rc=$?
((rc == 0)) || h_fail "test_lost_create failed ($rc): $(tail -n 5 "$H_DIR/wl.log")"
lost=$(grep -c 'reporting ZCONNECTIONLOSS' "$H_DIR/wl.log")
recovered=$(grep -c 'event=claim_recovered' "$H_DIR/wl.log")
# A lost multi (claims are created in batches) loses every reply in it.
((lost >= 3)) || h_fail "lost $lost create replies, wanted at least 3"
((recovered == lost)) || h_fail "recovered $recovered claims after $lost lost replies"
h_stop c1

# Regression: the partition is unassigned before the member learns whether
# its create happened. It must still find that claim and delete it, or the
# orphan would block the next owner for as long as our session lives.
h_zk rmr /baton/g2 >/dev/null
"$BATON_BIN/batonctl" --zk "$ZK" --group g2 --timeout 5000 init --topic "$B_TOPIC" --partitions 2 >/dev/null
h_zk create /baton/g2/assignment/wo '{"generation":1,"partitions":[0,1]}' >/dev/null
h_spawn wo "$prog" --zk "$ZK" --group g2 --id wo --partitions 2 --lose 1 --unassign-lost 1
rc=0; h_wait_exit wo 60 || rc=$?
((rc == 0)) || h_fail "test_lost_create --unassign-lost failed ($rc): $(tail -n 5 "$H_DIR/wo.log")"
b_log_has wo 'event=orphan_claim .*action=delete' || h_fail "the orphan claim was not deleted"
h_stop wo

# Issue 20 (2): the create is committed only after the member's recovery
# listing has answered (sent through one server, committed after another
# answered). The member creates a second claim behind its own first: it
# must keep the lowest claim of its session and delete the other, not wait
# behind itself for as long as its session lives.
h_zk rmr /baton/g3 >/dev/null 2>&1 || true
"$BATON_BIN/batonctl" --zk "$ZK" --group g3 --timeout 5000 init --topic "$B_TOPIC" --partitions 2 >/dev/null
h_zk create /baton/g3/assignment/wl '{"generation":1,"partitions":[0,1]}' >/dev/null
h_spawn wlate "$prog" --zk "$ZK" --group g3 --id wl --partitions 2 --lose 1 --late-create 1
rc=0; h_wait_exit wlate 60 || rc=$?
((rc == 0)) || h_fail "test_lost_create --late-create failed ($rc): $(tail -n 5 "$H_DIR/wlate.log")"
b_log_has wlate 'late create of .* after a listing: ok' || h_fail "the held-back create never landed: the test tested nothing"
b_log_has wlate 'event=duplicate_claim .*action=delete' || h_fail "the second claim of our session was not deleted"

# A cold start's claims go in a multi (more than 16 new claims in one poll):
# the multi commits, its reply is lost, every claim in it is uncertain and
# recovered by session id, none created twice.
h_zk rmr /baton/g4 >/dev/null 2>&1 || true
"$BATON_BIN/batonctl" --zk "$ZK" --group g4 --timeout 5000 init --topic "$B_TOPIC" --partitions 24 >/dev/null
h_zk create /baton/g4/assignment/wm "{\"generation\":1,\"partitions\":[$(seq -s, 0 23)]}" >/dev/null
h_spawn wmulti "$prog" --zk "$ZK" --group g4 --id wm --partitions 24 --lose 1
rc=0; h_wait_exit wmulti 60 || rc=$?
((rc == 0)) || h_fail "test_lost_create with a multi failed ($rc): $(tail -n 5 "$H_DIR/wmulti.log")"
mlost=$(grep -c 'in a multi of 24), reporting ZCONNECTIONLOSS' "$H_DIR/wmulti.log" || true)
((mlost == 24)) || h_fail "lost $mlost replies in a multi of 24, wanted 24"
mrec=$(grep -c 'event=claim_recovered' "$H_DIR/wmulti.log" || true)
((mrec == 24)) || h_fail "recovered $mrec of the multi's 24 claims"
h_pass "$lost lost create replies, each claim recovered by session id, one claim per partition; an orphan of an unassigned partition deleted; a create landing after the recovery listing adopted, the duplicate deleted; a lost multi of 24 recovered claim by claim"
