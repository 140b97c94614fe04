#!/usr/bin/env bash
# it_restart_expiry (#19): a restarted worker whose new ZooKeeper session
# expires while it registers -- frozen there past its session timeout, as a
# chaos run's SIGSTOP caught one in the middle of its takeover, or held up
# by an ensemble election -- takes a new session and joins
# (event=join_session_expired), instead of exiting 1 with "cannot register:
# session expired". The failpoint member.before_register stops the process
# there; the test resumes it once ZooKeeper has closed the session.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_restart_expiry
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1
h_wait_for 30 "w1 owns everything" b_all_active 1

h_kill w1 KILL
rc=0; h_wait_exit w1 10 || rc=$?
BATON_FAILPOINTS=member.before_register=stop b_worker w1
h_wait_for 30 "the new w1 stopped before registering" h_stopped w1
line=$(grep -o 'event=zk_connected session=0x[0-9a-f]*' "$H_DIR/w1.log" | tail -n 1)
[[ $line =~ session=0x0*([0-9a-f]+)$ ]] || h_fail "the new w1 logged no session before it stopped"
sid=${BASH_REMATCH[1]}
# The server lists every connection by its session (cons) and closes a
# session's connection when it expires it.
expired() {
    local cons
    cons=$(_h_4lw "$H_ZK_PORT" cons)
    [[ $cons == *sid=0x* && $cons != *"sid=0x$sid"* ]]
}
h_wait_for 30 "ZooKeeper expired the frozen w1's session 0x$sid" expired
h_kill w1 CONT
h_wait_for 30 "w1 joined on a new session and owns everything again" b_all_active 1
h_alive w1 || h_fail "w1 exited after its session expired while it registered"
b_log_has w1 "event=join_session_expired session=0x0*$sid attempt=1 .*action=new_session" ||
    h_fail "w1 did not log the expired join"
b_log_has w1 'event=join_failed' && h_fail "w1 logged a failed join"
b_produce 400
h_wait_for 30 "400 records in the sink" b_sink_has 400

# An incarnation killed between recording itself in the lock file and
# creating its member node (here: the failpoint exits there) leaves its
# predecessor's node alive under the id; the lock file keeps that
# predecessor (earlier=), so the next restart still takes it over at once
# instead of waiting for its session (8 s here) to expire.
h_kill w1 KILL
h_wait_exit w1 10 || true
b_worker w1 --session-timeout-ms 8000
h_wait_for 30 "w1 (8 s session) owns everything" b_all_active 1
h_kill w1 KILL
h_wait_exit w1 10 || true
BATON_FAILPOINTS=member.before_register=exit b_worker w1 --session-timeout-ms 8000
rc=0
h_wait_exit w1 30 || rc=$?
((rc == 99)) || h_fail "w1 with member.before_register=exit ended with $rc, not the failpoint's 99"
grep -q '^earlier=' "$BATON_STATE_DIR/$B_GROUP.w1.lock" ||
    h_fail "the lock file lists no earlier incarnation: $(cat "$BATON_STATE_DIR/$B_GROUP.w1.lock")"
b_worker w1 --session-timeout-ms 8000
# The log of w1's latest process only.
w1_last() { awk '/=== .* spawn w1:/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$H_DIR/w1.log"; }
w1_joined() { w1_last | grep 'event=joined' >/dev/null; }
h_wait_for 30 "the restarted w1 joined" w1_joined
h_wait_for 30 "w1 owns everything again" b_all_active 1
last=$(w1_last)
grep -q 'event=incarnation_takeover' <<<"$last" ||
    h_fail "the restart did not take over the node of the incarnation before the one that died unregistered"
grep -q 'event=member_id_busy' <<<"$last" && h_fail "the restart waited for the old session"
grep -q '^earlier=' "$BATON_STATE_DIR/$B_GROUP.w1.lock" &&
    h_fail "the lock file still lists earlier incarnations after a registration"
b_produce 400
h_wait_for 30 "800 records in the sink" b_sink_has 800
source "$BATON_SRC/tests/lib/verify.sh"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "a restart whose session expired while it registered took a new one and joined; one after an incarnation that died unregistered took over at once"
