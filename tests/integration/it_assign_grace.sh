#!/usr/bin/env bash
# it_assign_grace: static-membership grace. With --leave-grace-ms, a worker
# that crashes and comes back with the same id within the grace gets its own
# partitions back and nothing else moves; one that stays away past the grace
# has its partitions reassigned (to the others, balanced).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_grace
h_zk_start
B_PARTITIONS=12
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
GRACE_MS=15000
b_coord c1 --leave-grace-ms $GRACE_MS

# assigned_to W: the partitions assignment/W lists, from status.
assigned_to() {
    b_status | jq -r --arg w "$1" '[.partitions[] | select(.assigned == $w) | .partition] | map(tostring) | join(" ")'
}
# owned_map: "p:owner:epoch" for every partition owned by w1 or w2.
kept_map() { b_status | jq -r '[.partitions[] | select(.owner == "w1" or .owner == "w2") | "\(.partition):\(.owner):\(.epoch)"] | join(" ")'; }

b_worker w1
b_worker w2
b_worker w3
h_wait_for 20 "three workers hold 4 each" b_all_active 3
w3_parts=$(assigned_to w3)
before=$(kept_map)
b_produce 600
h_wait_for 15 "600 records in the sink" b_sink_has 600

# --- crash w3 (its session expires) and bring it back within the grace -----
mark=$(wc -l <"$H_DIR/c1.log") # moves before this (start-up order) don't count
h_kill w3 KILL
rc=0; h_wait_exit w3 10 || rc=$?
gone() { b_jq '.workers | length == 2' >/dev/null; }
h_wait_for 15 "w3's session expired" gone
h_wait_for 10 "coordinator reserves w3's partitions" b_log_has c1 "event=leave_grace worker=w3 partitions=4"
[[ $(assigned_to w3) == "$w3_parts" ]] || h_fail "w3's partitions were reassigned within the grace: '$(assigned_to w3)'"
[[ $(kept_map) == "$before" ]] || h_fail "w1's or w2's partitions changed while w3 was away"
b_worker w3
h_wait_for 20 "w3 back with its own partitions" b_all_active 3
[[ $(assigned_to w3) == "$w3_parts" ]] || h_fail "w3 came back to different partitions: '$(assigned_to w3)' != '$w3_parts'"
[[ $(kept_map) == "$before" ]] || h_fail "the restart moved partitions of w1 or w2"
# w3 can own its reserved partitions before the coordinator's (debounced)
# rebalance sees it back: wait for that log rather than expect it now.
h_wait_for 10 "the coordinator sees w3 back within the grace" b_log_has c1 "event=rejoined_within_grace worker=w3"
tail -n +"$((mark + 1))" "$H_DIR/c1.log" >"$H_DIR/c1.since-crash"
grep -q "from=w3" "$H_DIR/c1.since-crash" && h_fail "a partition of w3 was reassigned during the grace"

# --- w3 leaves and stays away: after the grace its 4 go to w1 and w2 --------
b_produce 600 y
h_kill w3 TERM
rc=0; h_wait_exit w3 15 || rc=$?
((rc == 0)) || h_fail "w3 exited $rc on SIGTERM"
h_wait_for 10 "w3's partitions reserved again" bash -c "(( \$(grep -c 'event=leave_grace worker=w3' '$H_DIR/c1.log') >= 2 ))"
h_wait_for $((GRACE_MS / 1000 + 15)) "w1 and w2 hold everything after the grace" b_all_active 2
b_log_has c1 "event=leave_grace_expired worker=w3" || h_fail "no leave_grace_expired log"
jq -e 'all(.partitions | group_by(.owner)[]; length == 6)' <<<"$(b_status)" >/dev/null || h_fail "not 6/6"
[[ -z $(assigned_to w3) ]] || h_fail "w3 still assigned after the grace"

h_wait_for 20 "1200 records in the sink" b_sink_has 1200
source "$BATON_SRC/tests/lib/verify.sh"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "a restart within the grace moved nothing; after the grace the partitions moved"
