#!/usr/bin/env bash
# it_standby_arm_late: a standby that sets its watch on the owner's member
# node only after the owner marked itself leaving still takes over. The
# coordinator counts on the standby (it holds its own rebalance for
# --leave-hold-ms), so a missed mark left the partition unowned until the
# hold's rebalance: a 48 x 6 rolling restart showed it (2026-12-07), a
# worker restarted 33 ms before its neighbour's SIGTERM, named that
# neighbour's standby, armed its watch after the mark, and the partition
# went unwritten 118-125 ms, waiting for the publish.
#   1. w1 owns the one partition; w2 joins, is named its standby, and stops
#      at worker.before_standby_arm, before it reads w1's member node.
#   2. w1 gets SIGTERM and marks its node leaving: the coordinator holds
#      its rebalance 1.5 s for w2 (event=leave_marked ...
#      action=standbys_take_over).
#   3. w2 resumes: the read that sets its watch finds the mark, and w2
#      takes the partition over (event=standby_promoted ... reason=leaving)
#      well before the hold's rebalance would have given it to it. Every
#      record is written once.
# The scenario runs three times, each in a group and topic of its own:
# with the plain watch; with --standby-notice (the read that sets the
# watch also subscribes to the owner's release notices: member_notice.c,
# notice_read_done); and with --standby-claim ahead (the claim made ahead
# goes out in the same poll as that read, after the mark: the promotion
# must not wait behind it).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_standby_arm_late
h_zk_start
B_PARTITIONS=1
h_kafka_start "in,in2,in3" $B_PARTITIONS
HOLD=1500

# arm_late MODE [WORKER ARGS...]: the scenario in group MODE, on its own
# topic and sink, with its own coordinator; the workers get WORKER ARGS.
arm_late() {
    local mode=$1
    shift
    B_GROUP=$mode
    B_SINK=$H_DIR/$mode.db
    b_init $B_PARTITIONS
    b_coord "c-$mode" --leave-hold-ms $HOLD
    local w1=$mode-w1 w2=$mode-w2 c1=c-$mode
    # --- 1. w2 named the standby, stopped before its watch ---------------------
    b_worker_as "$w1" w1 "$@"
    h_wait_for 15 "w1 owns the partition" b_all_active 1
    b_produce 10 a
    h_wait_for 15 "10 records in the sink" b_sink_has 10
    # Its session outlives the stop (ZooKeeper hears nothing from it meanwhile).
    BATON_FAILPOINTS="worker.before_standby_arm=stop" b_worker_as "$w2" w2 --session-timeout-ms 20000 "$@"
    h_wait_for 20 "w2 stopped before it watches its owner" h_at_failpoint "$w2" worker.before_standby_arm
    b_log_has "$w2" "event=assignment generation=[0-9]+ partitions=0 keys=0 standby_for=1" ||
        h_fail "w2 stopped at its standby watch without being named a standby"

    # --- 2. w1 leaves; the coordinator leaves the partition to w2 ------------
    h_kill "$w1" TERM
    h_wait_for 10 "c1 holds its rebalance for w1's standby" \
        b_log_has "$c1" "event=leave_marked worker=w1 action=standbys_take_over"
    mark=$(b_ts_of "$c1" "event=leave_marked worker=w1 ")

    # --- 3. w2 resumes, finds the mark in its read, takes over ---------------
    h_kill "$w2" CONT
    h_wait_for 10 "w2 owns the partition" b_log_has "$w2" "event=acquired partition=0 "
    b_log_has "$w2" "event=standby_promoted owner=w1 reason=leaving" ||
        h_fail "w2 did not take the partition over as w1's standby: $(grep -E 'standby|acquired' "$H_DIR/$w2.log" | tail -n 3)"
    acq=$(b_ts_of "$w2" "event=acquired partition=0 ")
    echo "w1's mark at $mark, w2 resumed $(($(date +%s%3N) - mark)) ms after it, acquired $((acq - mark)) ms after it"
    # The hold's rebalance publishes no sooner than HOLD after the mark, and
    # an acquisition from it comes after its publish.
    ((acq < mark + HOLD)) ||
        h_fail "w2 acquired the partition $((acq - mark)) ms after w1's mark: from the hold's rebalance, not as its standby"
    rc=0
    h_wait_exit "$w1" 20 || rc=$?
    ((rc == 0)) || h_fail "w1 exited $rc on SIGTERM"
    b_produce 10 b
    h_wait_for 20 "all 20 records in the sink" b_sink_has 20
    verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "$mode: sink verification failed"
    h_stop "$w2"
    h_stop "$c1"
    h_log "$mode: w2 took over $((acq - mark)) ms after w1's mark"
}

B_TOPIC=in arm_late plain
B_TOPIC=in2 arm_late notice --standby-notice 127.0.0.1:0
B_TOPIC=in3 arm_late ahead --standby-claim ahead
h_pass
