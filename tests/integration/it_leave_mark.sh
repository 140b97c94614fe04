#!/usr/bin/env bash
# it_leave_mark: the coordinator acts on a member node's data change as a
# leave mark without reading the node first (a member changes its node's
# data only to mark its leave): it rebalances at once, the leaver gets
# nothing, the history says "leave". 100 ms after the publish it reads the
# node (re-arming its watch): a change that was no leave mark (here an
# operator rewriting the node with the same content) is logged as
# event=leave_mark_unconfirmed and rebalanced again, so the member gets
# partitions back; its watch was re-armed, so a second such change is seen
# too. A real leave (SIGTERM) still hands over with reason "leave".
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_leave_mark
h_zk_start
b_init 4
b_coord c1
b_probe p1
b_probe p2
h_wait_for 20 "p1 and p2 share the partitions" b_all_active 2

has_parts() { [[ -n $(b_partitions_of "$1") ]]; }
touch_node() { h_zk set "/baton/$B_GROUP/workers/$1" "$(h_zk get "/baton/$B_GROUP/workers/$1")" >/dev/null; }
for round in 1 2; do
    n0=$(grep -c "event=leave_mark_unconfirmed worker=p2" "$H_DIR/c1.log" || true)
    touch_node p2
    h_wait_for 10 "round $round: the coordinator took p2's data change for a leave, then found no mark" \
        bash -c "(( \$(grep -c 'event=leave_mark_unconfirmed worker=p2' '$H_DIR/c1.log') > $n0 ))"
    h_wait_for 20 "round $round: p2 has partitions again" has_parts p2
    h_wait_for 20 "round $round: every partition active with 2 members" b_all_active 2
done
grep -Eq "event=leave_marked worker=p2 action=(rebalance_now|standbys_take_over)" "$H_DIR/c1.log" || h_fail "no leave_marked line for p2"

# A real leave: the mark is confirmed (no unconfirmed line for p1), p2
# takes everything, the history records "leave".
h_stop p1
h_wait_for 20 "p2 owns everything" b_all_active 1
! grep -q "event=leave_mark_unconfirmed worker=p1" "$H_DIR/c1.log" || h_fail "p1's real leave mark was not confirmed"
h_wait_for 10 "history: p1 left" bash -c "'$BATON_BIN/batonctl' --zk '$ZK' --group '$B_GROUP' history --json | jq -e '.entries | any(.from == \"p1\" and .reason == \"leave\")' >/dev/null"
h_pass "leave marks acted on from the event, confirmed after the publish"
