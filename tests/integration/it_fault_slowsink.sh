#!/usr/bin/env bash
# it_fault_slowsink: a sink write that blocks for longer than the session
# timeout (failpoint worker.before_sink_write=sleep) never costs the worker
# its session: ZooKeeper's pings run on the client's own IO thread and no
# sink I/O runs on its threads. After the stall the worker suspends until a
# fresh probe answers (it cannot know what happened while it was blocked),
# then resumes in the same session; every record lands exactly once.
# Then w2 takes over, and its first write is held between its statements
# and its COMMIT (failpoint sink.before_commit=sleep) past the
# self-suspension limit: the sink's commit gate asks the worker again at
# that moment and rolls the write back (event=sink_commit_withheld), to be
# written once a fresh probe answers. Before the gate the flush asked only
# before its transaction, and such a write committed late (the network
# chaos soak saw a PostgreSQL commit 60 ms past the limit). At debug the
# worker's loop logs the iteration the slow write held (event=loop_slow).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_fault_slowsink
h_zk_start
B_PARTITIONS=4
B_SESSION_MS=3000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
# The 3rd write blocks 7 s: more than twice the session timeout (3 s: a
# shorter one is at the mercy of a loaded machine's scheduling). At debug,
# so that the loop's own account of the stall (event=loop_slow) is seen.
BATON_FAILPOINTS="worker.before_sink_write=2:sleep-7000" b_worker w1 --log-level debug
h_wait_for 20 "w1 owns everything" b_all_active 1
b_produce 400 a
h_wait_for 15 "the slow write started" b_log_has w1 'event=failpoint name=worker.before_sink_write action=sleep'
h_wait_for 20 "all 400 records in the sink" b_sink_has 400
b_produce 400 b
h_wait_for 20 "all 800 records in the sink" b_sink_has 800
b_log_has w1 'event=session_expired' && h_fail "the slow sink cost w1 its session"
joins=$(grep -c 'event=joined' "$H_DIR/w1.log")
((joins == 1)) || h_fail "w1 joined $joins times"
b_log_has w1 'event=revoked' && h_fail "w1 lost a partition during the slow write"
# After the stall the worker does not trust its old news: it suspends
# until a fresh probe of the same session answers.
b_log_has w1 'event=zk_silent .*action=suspend_writes' || h_fail "w1 did not suspend after the stall"
b_log_has w1 'event=zk_heard .*action=resume_writes' || h_fail "w1 did not resume after the stall"
h_wait_for 10 "every partition active with w1" b_all_active 1
# The loop's iteration that held the write says so, with the time it took.
grep -Eq 'event=loop_slow work_ms=(69[5-9][0-9]|[7-9][0-9]{3}|[1-9][0-9]{4}) ' "$H_DIR/w1.log" ||
    h_fail "w1 logged no event=loop_slow of the 7 s write: $(grep -a 'event=loop_slow' "$H_DIR/w1.log" | head -3)"

# w2's first write waits 4 s before its commit: past the 2 s limit.
BATON_FAILPOINTS="sink.before_commit=sleep-4000" b_worker w2
h_wait_for 15 "w2 joined" b_log_has w2 'event=joined'
h_stop w1
h_wait_for 20 "w2 owns everything" b_all_active 1
b_produce 400 c
h_wait_for 15 "the slow commit started" b_log_has w2 'event=failpoint name=sink.before_commit action=sleep'
h_wait_for 20 "all 1200 records in the sink" b_sink_has 1200
b_log_has w2 'event=sink_commit_withheld .*reason=gate' ||
    h_fail "w2 committed a write after its self-suspension limit (no sink_commit_withheld)"
b_log_has w2 'event=zk_heard .*action=resume_writes' || h_fail "w2 did not resume after the stall"
b_log_has w2 'event=sink_commit_resumed .*after_withheld=1' || h_fail "w2 logged no sink_commit_resumed"
b_log_has w2 'event=session_expired' && h_fail "the slow commit cost w2 its session"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "a 7 s sink stall under a 3 s session: session kept; a commit held past the limit rolled back at the gate; exactly once"
