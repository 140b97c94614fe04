#!/usr/bin/env bash
# it_membership: join and leave. Assignment stays balanced, only moved
# partitions change owner and epoch, a duplicate worker id is refused, and
# a graceful leave hands partitions over with nothing lost.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_membership
h_zk_start
B_PARTITIONS=12
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1

b_worker w1
h_wait_for 15 "w1 owns all partitions" b_all_active 1
b_produce 1200
h_wait_for 15 "first 1200 records in the sink" b_sink_has 1200
before=$(b_status)

b_worker w2
h_wait_for 15 "w1 and w2 share the partitions" b_all_active 2
mid=$(b_status)
# Balance: 6 and 6. Only w2's partitions changed epoch.
jq -e '[.partitions[] | select(.owner == "w1")] | length == 6' <<<"$mid" >/dev/null || h_fail "w1 does not hold 6"
moved=$(jq -n --argjson a "$before" --argjson b "$mid" \
    '[range(0; 12) as $p | select($a.partitions[$p].epoch != $b.partitions[$p].epoch)] | length')
((moved == 6)) || h_fail "expected exactly 6 partitions to move on join, $moved did"
jq -n -e --argjson a "$before" --argjson b "$mid" \
    'all(range(0; 12) as $p | $b.partitions[$p]; (.owner == "w1") == (.epoch == $a.partitions[.partition].epoch))' \
    >/dev/null || h_fail "a partition that stayed with w1 changed epoch (or a moved one kept it)"
jq -n -e --argjson a "$before" --argjson b "$mid" \
    'all(range(0; 12) as $p | $b.partitions[$p]; .epoch >= $a.partitions[.partition].epoch)' \
    >/dev/null || h_fail "an epoch went down"

b_worker w3
h_wait_for 15 "three workers hold 4 each" b_all_active 3
jq -e 'all(.partitions | group_by(.owner)[]; length == 4)' <<<"$(b_status)" >/dev/null ||
    h_fail "not 4/4/4"

# A second worker with a live worker's id is refused, clearly: on the same
# host (the same state directory) at once, by the member lock, naming the
# holder's pid; from another state directory (another host) once
# --member-wait-ms has passed without the holder's session going.
# Its sink is one that cannot be opened (its directory does not exist): a
# worker that opened its sink before the member lock would fail there
# (sink_open_failed), not be refused by the lock.
B_SINK=$H_DIR/no-such-dir/sink.db b_expect_refused dup w2 \
    "member id 'w2' of group 'g' is held by a live process on this host \\(pid $(h_pid w2) "
b_log_has dup 'event=sink_open_failed' && h_fail "the duplicate refused by the member lock opened its sink"
BATON_STATE_DIR="$H_DIR/other-host" b_expect_refused dup2 w2 \
    "worker id 'w2' is held by a live member .*pid $(h_pid w2) " --member-wait-ms 1500
b_log_has dup2 'event=member_id_busy' || h_fail "the wait for the other's expiry was not logged"
b_all_active 3 || h_fail "the refused duplicate disturbed ownership"

# Graceful leave: w3's partitions move to w1 and w2, w3 exits 0.
b_produce 1200 x
before=$(b_status)
h_kill w3 TERM
rc=0; h_wait_exit w3 15 || rc=$?
((rc == 0)) || h_fail "w3 exited $rc on SIGTERM"
h_wait_for 15 "w1 and w2 hold everything" b_all_active 2
after=$(b_status)
jq -n -e --argjson a "$before" --argjson b "$after" \
    'all(range(0; 12) as $p | $a.partitions[$p]; (.owner == "w3") == (.epoch != $b.partitions[.partition].epoch))' \
    >/dev/null || h_fail "leave moved more than the leaver's partitions"
b_log_has w3 'event=left' || h_fail "w3 did not log its leave"
h_wait_for 20 "2400 records in the sink" b_sink_has 2400
source "$BATON_SRC/tests/lib/verify.sh"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "join moved 6 of 12; leave moved only w3's; duplicate id refused"
