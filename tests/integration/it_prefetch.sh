#!/usr/bin/env bash
# it_prefetch: a partition's new owner starts fetching it from Kafka as soon
# as the assignment names it, before its claim and its fence
# (event=prefetch), and holds what it fetched, unprocessed, until the fence
# returns next_offset. A fence at that offset keeps it; a fence below it (an
# operator reprocessing a partition: its outputs deleted from offset 5 on
# and next_offset set back to 5 while the new owner was frozen before its
# fence) discards it (event=prefetch_discarded) and reads the partition
# again from the fence's next_offset, so nothing is skipped. Both checked
# against the sink's rows: every offset once, stamped with its writer's
# epoch, and in w2's debug log: prefetching -> fencing_prefetched -> fenced.
# w2 runs with --standby-prefetch off: this is the path of a partition an
# assignment newly gives (it_standby_prefetch covers the standby's).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_prefetch
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1
h_wait_for 15 "w1 owns both partitions" b_all_active 1
b_produce 20 a
h_wait_for 15 "20 records in the sink" b_sink_has 20
next_of() { b_sql "SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=$1"; }
rows_of() { b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$1"; }
[[ $(next_of 0):$(next_of 1) == 10:10 ]] || h_fail "next_offsets: $(next_of 0) $(next_of 1)"

# --- the sink goes back while the new owner holds what it fetched ahead -----
BATON_LOG_LEVEL=debug BATON_FAILPOINTS="worker.before_fence=stop" b_worker w2 --session-timeout-ms 20000 \
    --standby-prefetch off
h_wait_for 15 "w2 frozen before its fence" \
    h_at_failpoint w2 worker.before_fence
b_log_has w2 'event=prefetch partitions=1 ' || h_fail "w2 fetched nothing ahead of its fence: $(grep -E 'prefetch|assignment' "$H_DIR/w2.log")"
p=$(grep -Eo 'event=claimed partition=[0-9]+' "$H_DIR/w2.log" | head -1 | grep -Eo '[0-9]+$')
[[ -n $p ]] || h_fail "w2 claimed nothing: $(cat "$H_DIR/w2.log")"
q=$((1 - p))
# More input (offsets 10-19 of each partition); w1 writes its own.
b_produce 20 b
h_wait_for 15 "w1 wrote partition $q through offset 19" bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=$q\") == 20 ]]"
[[ $(next_of "$p") == 10 ]] || h_fail "partition $p moved on without its owner: $(next_of "$p")"
# The operator reprocesses partition p from offset 5.
b_sql "BEGIN; DELETE FROM baton_output WHERE grp='$B_GROUP' AND partition=$p AND offset >= 5;
       UPDATE baton_fence SET next_offset = 5 WHERE grp='$B_GROUP' AND partition=$p; COMMIT;"
h_kill w2 CONT
h_wait_for 20 "w2 wrote partition $p through offset 19" bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=$p\") == 20 ]]"
b_log_has w2 "event=prefetch_discarded partition=$p from=10 next_offset=5" ||
    h_fail "w2 should have discarded what it fetched from 10: $(grep -E 'prefetch|fenced' "$H_DIR/w2.log")"
# w2's states for p: fetched ahead, acquired, fenced (the fetch discarded).
ahead='none>prefetching:assigned prefetching>fencing_prefetched:acquired fencing_prefetched>fenced:fenced '
[[ $(b_part_states w2 "$p") == "$ahead"* ]] || h_fail "partition $p: w2 logged the states '$(b_part_states w2 "$p")'"
e2=$(b_epoch "$p")
[[ $(rows_of "$p") == 20 ]] || h_fail "partition $p: $(rows_of "$p") rows, want 20"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$p AND offset >= 5 AND epoch = $e2") == 15 ]] ||
    h_fail "offsets 5-19 of partition $p must be w2's (epoch $e2): $(b_sql "SELECT offset, epoch FROM baton_output WHERE partition=$p ORDER BY offset")"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$p AND offset < 5 AND epoch < $e2") == 5 ]] ||
    h_fail "offsets 0-4 of partition $p must stay w1's"

# --- a graceful leave: the successor keeps what it fetched ahead ------------
e1=$(b_epoch "$q")
h_stop w1
h_wait_for 15 "w2 owns partition $q" bash -c "[[ \$('$BATON_BIN/batonctl' --zk '$ZK' --group '$B_GROUP' status --json | jq -r '.partitions[] | select(.partition == $q) | .owner') == w2 ]]"
(($(grep -c 'event=prefetch partitions=1 ' "$H_DIR/w2.log") >= 2)) ||
    h_fail "w2 did not fetch partition $q ahead: $(grep -E 'prefetch' "$H_DIR/w2.log")"
! b_log_has w2 "event=prefetch_discarded partition=$q " || h_fail "nothing went back: partition $q's fetch must be kept"
[[ $(b_part_states w2 "$q") == *"$ahead"* ]] || h_fail "partition $q: w2 logged the states '$(b_part_states w2 "$q")'"
b_produce 20 c
h_wait_for 15 "both partitions written through offset 29" \
    bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT group_concat(next_offset) FROM (SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' ORDER BY partition)\") == 30,30 ]]"
for part in 0 1; do
    [[ $(b_sql "SELECT count(*) || ':' || min(offset) || ':' || max(offset) FROM baton_output WHERE grp='$B_GROUP' AND partition=$part") == 30:0:29 ]] ||
        h_fail "partition $part: every offset 0-29 exactly once expected: $(b_sql "SELECT offset FROM baton_output WHERE partition=$part ORDER BY offset" | tr '\n' ' ')"
done
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$q AND offset >= 20 AND epoch > $e1") == 10 ]] ||
    h_fail "offsets 20-29 of partition $q must be w2's"
! b_log_has w2 "event=partition_state_unexpected" || h_fail "w2: an unexpected partition state"
h_pass "fetch ahead of the fence: kept when the fence agrees, discarded when the sink went back"
