#!/usr/bin/env bash
# it_standby_fence_failpoint: a hot standby's first batch, written with its
# fence (baton_sink_fence_write), passes the failpoint
# worker.before_sink_write like any other write, before the sink is called:
#   1. w1 owns the one partition; w2 stands by for it with
#      --standby-prefetch on and owns nothing, so its first write is that
#      first batch. w1 is frozen while 10 records arrive (w2 holds them up
#      to its bound), then evicted.
#   2. w2, with worker.before_sink_write=exit (its first hit), exits 99 at
#      the fence: the sink still holds w1's epoch and next_offset, nothing
#      of w2's reached it.
#   3. w3 takes the partition once w2's session is gone: offsets 0-19
#      exactly once, 10-19 under w3's epoch.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_standby_fence_failpoint
h_zk_start
B_PARTITIONS=1
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
sink_of() { b_sql "SELECT $1 FROM baton_fence WHERE grp='$B_GROUP' AND partition=0"; }
offsets() { b_sql "SELECT group_concat(offset) FROM (SELECT offset FROM baton_output WHERE grp='$B_GROUP' AND partition=0 ORDER BY offset)"; }

# --- 1. w2 holds what w1 has not written --------------------------------------
b_worker w1 --session-timeout-ms 20000
h_wait_for 15 "w1 owns the partition" b_all_active 1
b_produce 10 a
h_wait_for 15 "10 records in the sink" b_sink_has 10
BATON_FAILPOINTS="worker.before_sink_write=exit" b_worker w2 --log-level debug \
    --session-timeout-ms 4000 --standby-prefetch on --standby-prefetch-bytes 2048
h_wait_for 15 "w2 fetches partition 0 ahead as its standby" \
    b_log_has w2 "event=partition_state partition=0 from=none to=prefetching reason=standby"
h_kill w1 STOP
big=$(printf 'x%.0s' $(seq 1 300))
b_produce 10 "$big" # offsets 10-19, about 300 bytes each
h_wait_for 15 "w2 holds partition 0 up to its bound" b_log_has w2 "event=standby_prefetch_full partition=0 "
e1=$(sink_of epoch)
[[ $(sink_of next_offset) == 10 ]] || h_fail "partition 0 moved on with its owner frozen: $(sink_of next_offset)"

# --- 2. w2 stops at the failpoint, before its fence reaches the sink ---------
b_ctl evict w1 >/dev/null || h_fail "evict w1 failed"
rc=0
h_wait_exit w2 20 || rc=$?
((rc == 99)) || h_fail "w2 should exit 99 at its failpoint, got $rc: $(tail -n 5 "$H_DIR/w2.log")"
b_log_has w2 "event=failpoint name=worker.before_sink_write action=exit" || h_fail "w2 exited elsewhere"
b_log_has w2 "event=acquired partition=0 " || h_fail "w2 never acquired partition 0"
! b_log_has w2 "event=(fenced|batch) partition=0 " || h_fail "w2 fenced or wrote before its failpoint"
[[ $(sink_of epoch) == "$e1" && $(sink_of next_offset) == 10 ]] ||
    h_fail "the sink moved before w2's failpoint: epoch $(sink_of epoch) (w1's $e1), next_offset $(sink_of next_offset)"

# --- 3. w3 takes over: nothing lost, nothing twice ---------------------------
b_worker w3 --session-timeout-ms 20000
h_wait_for 30 "w3 wrote partition 0 through offset 19" bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=0\") == 20 ]]"
e3=$(sink_of epoch)
((e3 > e1)) || h_fail "w3's epoch $e3 is not above w1's $e1"
[[ $(offsets) == "$(seq -s, 0 19)" ]] || h_fail "partition 0: offsets $(offsets)"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=0 AND offset >= 10 AND epoch = $e3") == 10 ]] ||
    h_fail "offsets 10-19 must be w3's (epoch $e3)"
h_kill w1 CONT
rc=0
h_wait_exit w1 15 || rc=$?
((rc == 1)) || h_fail "an evicted w1 should exit 1, got $rc"
h_pass "a hot standby's first batch with its fence passes worker.before_sink_write before the sink is called"
