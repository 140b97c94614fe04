#!/usr/bin/env bash
# it_restart_takeover (#19): a worker SIGKILLed and restarted with its id
# and state directory takes over its own dead incarnation at once: the
# member lock (<state dir>/<group>.<id>.lock, flock) is free, and the live
# member node under its id carries the incarnation the lock file names. It
# deletes that node and its claims (event=incarnation_takeover), and owns
# its partitions again with higher epochs long before the old session (20 s)
# expires, with records flowing; nothing lost or doubled. A frozen (SIGSTOP)
# old incarnation still holds the lock: the new process is refused at once,
# naming it, before it opens the sink (whose write lock a frozen worker may
# hold), and nothing is written twice after SIGCONT. A lock file that is
# not one is refused clearly and left alone.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_restart_takeover
h_zk_start
B_PARTITIONS=6
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
B_SESSION_MS=20000
b_worker w1
b_worker w2
h_wait_for 30 "w1 and w2 own everything" b_all_active 2
h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 3000 --rate 300
h_wait_for 30 "records flowing" b_sink_has 300
[[ -s $BATON_STATE_DIR/g.w1.lock ]] || h_fail "no lock file for w1 in $BATON_STATE_DIR"
inc=$(sed -n 's/^incarnation=//p' "$BATON_STATE_DIR/g.w1.lock")
node=$(h_zk get /baton/g/workers/w1)
[[ $(jq -r .incarnation <<<"$node") == "$inc" ]] || h_fail "w1's node carries '$(jq -r .incarnation <<<"$node")', its lock file '$inc'"

# 1. SIGKILL and restart at once: taken over, not waited for.
mine() { b_status | jq -c '[.partitions[] | select(.owner == "w1") | {p: .partition, e: .epoch}]'; }
before=$(mine)
[[ $before != "[]" ]] || h_fail "w1 owns nothing before the kill"
h_kill w1 KILL
rc=0; h_wait_exit w1 10 || rc=$?
b_worker w1
h_wait_for 10 "the new w1 took over its dead incarnation" b_log_has w1 'event=incarnation_takeover old_session=0x[0-9a-f]+ claims=[1-9]'
b_log_has w1 'event=member_id_busy' && h_fail "the new w1 waited for the old session"
# Within half the old session: every partition it had is its own again,
# with a higher epoch (the old session cannot have expired yet).
again() {
    b_all_active 2 &&
        b_status | jq -e --argjson a "$before" '
            [.partitions[] | select(.owner == "w1")] as $now
            | all($a[]; . as $o | any($now[]; .partition == $o.p and .epoch > $o.e))' >/dev/null
}
h_wait_for 10 "w1 owns its partitions again with higher epochs" again
[[ $(sed -n 's/^incarnation=//p' "$BATON_STATE_DIR/g.w1.lock") != "$inc" ]] ||
    h_fail "the new incarnation did not record itself"

# 2. A frozen old incarnation holds the lock: refused at once, by pid,
# before the sink is opened. A worker frozen inside a sink transaction holds
# the SQLite file's write lock; a stand-in holds it here (so it surely is
# held; taken before w1 is frozen, so a frozen w1 cannot be holding it
# already): the refused w1b must fail on the member lock, not on the sink.
h_spawn sinklock python3 -c '
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("write lock held", flush=True)
time.sleep(600)' "$B_SINK"
h_wait_for 10 "the sink's write lock held" b_log_has sinklock '^write lock held$'
h_kill w1 STOP
B_REFUSE_S=10 b_expect_refused w1b w1 "held by a live process on this host \\(pid $(h_pid w1) "
b_log_has w1b 'event=sink_' && h_fail "the refused w1b opened the sink"
b_log_has w1b 'event=incarnation_takeover' && h_fail "a live (frozen) incarnation was taken over"
h_stop sinklock
h_kill w1 CONT

# 3. A lock file that is not one: refused, left as it was.
echo "not a lock" >"$BATON_STATE_DIR/g.w9.lock"
B_REFUSE_S=10 b_expect_refused w9 w9 \
    "member lock '.*g.w9.lock' is not a baton lock file .*remove it once no member 'w9'"
b_log_has w9 'event=sink_' && h_fail "w9, refused, opened the sink"
[[ $(cat "$BATON_STATE_DIR/g.w9.lock") == "not a lock" ]] || h_fail "the corrupt lock file was changed"

rc=0; h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 60 "all 3000 records in the sink" b_sink_has 3000
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "a SIGKILLed worker's restart took over its dead incarnation at once; a frozen one was refused by pid; a corrupt lock file refused; exactly once"
