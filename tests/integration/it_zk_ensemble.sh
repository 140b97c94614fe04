#!/usr/bin/env bash
# it_zk_ensemble: baton on a 3-node ZooKeeper ensemble (tests/lib/ensemble.sh)
# under load, and the ensemble's leader SIGKILLed mid-stream. 2 coordinators
# and 3 workers (each given the whole 3-host connect string) keep their
# sessions through the election: afterwards every partition has the same
# owner and the same epoch as before (ownership only stalled while the
# ensemble elected), no session expired, the killed peer rejoins, and the
# sink holds every produced record exactly once with epochs only rising.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
source "$BATON_SRC/tests/lib/ensemble.sh"
h_init it_zk_ensemble
ens_start
B_PARTITIONS=6
# Far above an election on loopback (a few ticks of 200 ms), so a session
# expiry here would be a bug, not a slow machine.
B_SESSION_MS=10000
B_SINK=$H_DIR/sink.db
TOTAL=20000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
b_coord c2
b_worker w1
b_worker w2
b_worker w3
h_wait_for 30 "three workers own 2 partitions each" b_all_active 3

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 1000
h_wait_for 30 "records flowing" b_sink_has 1000
before=$(b_status | jq -c '[.partitions[] | {partition, owner, epoch}] | sort_by(.partition)')
leader=$(ens_leader) || h_fail "the ensemble has no leader"
h_log "killing the ensemble's leader zk$leader; ownership: $before"
ens_kill "$leader" KILL
h_wait_for 30 "a new ensemble leader" ens_leader
h_log "new leader: zk$(ens_leader || echo '?')"
# Writes continue on the surviving quorum.
n=$(b_sink_count)
h_wait_for 30 "records still flowing after the election" b_sink_has $((n + 500))

ens_node_start "$leader"
ens_wait_quorum 45 || h_fail "zk$leader did not rejoin the ensemble"
rc=0; h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 90 "all $TOTAL records in the sink" b_sink_has $TOTAL
h_wait_for 30 "every partition active with its assigned owner" b_all_active 3
after=$(b_status | jq -c '[.partitions[] | {partition, owner, epoch}] | sort_by(.partition)')
[[ $before == "$after" ]] ||
    h_fail "ownership changed across the leader's death: before $before after $after"
for w in w1 w2 w3 c1 c2; do
    if b_log_has "$w" 'event=session_expired'; then
        h_fail "$w's session expired during the election"
    fi
done
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "killed ensemble leader zk$leader under load: no owner or epoch changed, $TOTAL records exactly once"
