#!/usr/bin/env bash
# it_net_leader_oneway: the leading coordinator stops leading on its silence
# clock even while one of its ZooKeeper calls is still waiting. Its link is
# cut one way (tests/lib/net.sh "up": nothing reaches the server, the
# server's bytes still reach it), and the group's changes keep sending it
# watch events: the ZooKeeper client, which gives a request up only once it
# has heard nothing for 2/3 of the session, does not give up the read the
# first event started until the server expires the session and closes the
# connection, past the moment another coordinator may be elected. (The
# chaos harness saw this once: a leader stepped down 3,143 ms after its
# last answer, against a limit of 2/3 of 3,000 ms plus tolerance.)
# Checked: c1 logs event=leader_suspended ... in_call=1 and its step_down
# no later than 2/3 of the session (+ TOL_MS) after the last bytes its proxy
# passed from ZooKeeper, its leader gauge reads 0 while the call still
# waits, it publishes nothing while cut off, and after the heal it leads
# again on a new session and gives the worker that joined meanwhile its
# share.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/net.sh"
h_init it_net_leader_oneway
h_zk_start

B_PARTITIONS=4
T_MS=4000
LIMIT_MS=$((T_MS * 2 / 3))
TOL_MS=${TOL_MS:-600}
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS


net_proxy_start c1-zk "$ZK"
m1=127.0.0.1:$(h_free_port)
h_spawn c1 "$BATON_BIN/baton-coordinator" --zk "${NET_ADDR[c1-zk]}" --group "$B_GROUP" --id c1 \
    --session-timeout-ms $T_MS --metrics-addr "$m1"
h_wait_for 15 "c1 leads" b_log_has c1 'event=elected'
B_SESSION_MS=6000 b_worker w1
B_SESSION_MS=6000 b_worker w2
h_wait_for 20 "w1 and w2 own everything" b_all_active 2

wdir=/baton/$B_GROUP/workers
d1=$(h_zk get "$wdir/w1") || h_fail "cannot read w1's member node $wdir/w1"
d2=$(h_zk get "$wdir/w2") || h_fail "cannot read w2's member node $wdir/w2"
off=$(stat -c %s "$H_DIR/c1.log")

net_cut c1-zk up
last=$NET_LAST_DOWN
h_log "cut c1's link to ZooKeeper one way (last answer passed at $last; limit $LIMIT_MS + $TOL_MS ms)"
# Events c1 hears but cannot answer: the first starts a rebalance whose
# read waits; the others keep its client's receive clock fresh.
sleep 0.3
h_zk set "$wdir/w1" "$d1" || h_fail "cannot rewrite w1's member node"
sleep 1.2
h_zk set "$wdir/w2" "$d2" || h_fail "cannot rewrite w2's member node"
sleep 1.0
B_SESSION_MS=6000 b_worker w3

# new_line PATTERN: the first line of c1's log since the cut matching it.
new_line() { tail -c +$((off + 1)) "$H_DIR/c1.log" | grep -m1 -E -- "$1" || true; }
has_new() { [[ -n $(new_line "$1") ]]; }
h_wait_for $((T_MS / 1000 + 5)) "c1 stops leading" has_new 'event=step_down' ||
    h_fail "c1 never stopped leading while cut off from ZooKeeper"
b_metric_is "$m1" baton_coordinator_leader 0 || h_fail "c1 stopped leading, yet its leader gauge is not 0"
b_metric_is "$m1" baton_coordinator_leader_suspended 1 ||
    h_fail "c1 stopped leading, yet its suspended gauge is not 1"
down=$(new_line 'event=step_down')
[[ $down == *reason=zk_silent* ]] || h_fail "c1 stepped down for another reason than its silence: $down"
after=$(($(b_ts_ms "$down") - last))
((after <= LIMIT_MS + TOL_MS)) ||
    h_fail "c1 stopped leading $after ms after its last ZooKeeper answer (limit $LIMIT_MS + $TOL_MS ms): $down"
susp=$(new_line 'event=leader_suspended')
[[ $susp == *in_call=1* ]] ||
    h_fail "c1 was not waiting in a call when its silence began (the case this test is for): ${susp:-no leader_suspended line}"

# Held past the session, so that the server expires it; then healed.
sleep $(((T_MS + 1500) / 1000))
net_heal c1-zk
h_log "healed c1's link"
h_wait_for 20 "c1 learns its session expired" has_new 'event=session_expired'
h_wait_for 20 "c1 leads again" has_new 'event=elected'
# Nothing published between the cut and the new session's election.
pubs=$(tail -c +$((off + 1)) "$H_DIR/c1.log" | sed '/event=elected/,$d' | grep -c 'event=published' || true)
((pubs == 0)) || h_fail "c1 published $pubs time(s) while cut off"
h_wait_for 30 "w3 gets its share" b_all_active 3
h_pass "c1, waiting in a call on a one-way cut, stopped leading $after ms after its last answer (limit $LIMIT_MS + $TOL_MS ms), published nothing while cut off, and led again after the heal"
