#!/usr/bin/env bash
# it_fault_lostdelete: a claim delete that fails on a lost connection does
# not make the member forget the claim (issue 21, part 4; docs/model.md,
# "Findings"). test_lost_create --lose-delete (zoo_adelete wrapped at link
# time: the first claim delete is never sent and reports ZCONNECTIONLOSS)
# owns two partitions, then the second is taken out of its assignment. The
# claim stays in ZooKeeper under the member's live session; no coordinator
# runs (no watchdog) and the session never expires, so only the member can
# delete it: it must try again, and the partition must end with no claim.
# Before the fix the member forgot the claim and the program timed out.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_fault_lostdelete
prog=${BATON_TESTS_BIN:-$BATON_BIN/../tests}/test_lost_create
[[ -x $prog ]] || h_fail "$prog not built"
h_zk_start
b_init 2
h_zk create "/baton/$B_GROUP/assignment/wd" '{"generation":1,"partitions":[0,1]}' >/dev/null
h_spawn wd "$prog" --zk "$ZK" --group "$B_GROUP" --id wd --partitions 2 --lose 0 --lose-delete 1
rc=0; h_wait_exit wd 60 || rc=$?
((rc == 0)) || h_fail "test_lost_create --lose-delete failed ($rc): $(tail -n 5 "$H_DIR/wd.log")"
b_log_has wd 'not sending the delete of .*/partitions/1/claims/claim-' ||
    h_fail "no claim delete was lost: the test tested nothing"
b_log_has wd 'event=release_failed .*action=retry' ||
    h_fail "the failed delete was not marked for a retry"
b_log_has wd 'event=released .*partition=1' || h_fail "the claim of partition 1 was never deleted"
h_pass "a claim delete lost to a connection loss was retried: partition 1 ended with no claim of ours, without a watchdog or a session expiry"
