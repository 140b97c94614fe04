#!/usr/bin/env bash
# it_deposed: a leader that is deposed while it is about to publish (stopped
# at the failpoint coordinator.before_publish) has its publish refused by
# the fenced multi, writes nothing, steps down, and rejoins as a standby.
# Two ways to be deposed: its candidate node removed while its session
# lives (the check op fails), and its session expired (the whole handle is
# dead).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_deposed
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

# stamped_by_leader: the assignment carries the current leader's epoch.
stamped_by_leader() {
    [[ $(h_zk get /baton/g/assignment | jq .coordinator_epoch) == $(b_status | jq .coordinator.epoch) ]]
}

# --- 1. candidate node removed, session alive --------------------------------
BATON_FAILPOINTS="coordinator.before_publish=1:stop" b_coord c1 --session-timeout-ms 20000
h_wait_for 10 "c1 leads" b_jq '.coordinator.id == "c1"'
b_coord c2
b_worker w1
h_wait_for 15 "w1 owns everything" b_all_active 1
c1_node=$(h_zk ls /baton/g/coordinators | head -1)
# A second worker makes c1 publish again: it stops just before.
b_worker w2
h_wait_for 10 "c1 stopped before publishing" h_stopped c1
gen_before=$(h_zk get /baton/g/assignment | jq .generation)
h_zk delete "/baton/g/coordinators/$c1_node"
h_wait_for 10 "c2 takes over and publishes" b_all_active 2
b_jq '.coordinator.id == "c2"' >/dev/null || h_fail "c2 should lead"
snapshot=$(h_zk get /baton/g/assignment)
c1_from=$(($(wc -l <"$H_DIR/c1.log") + 1))
h_kill c1 CONT
h_wait_for 10 "c1's publish refused" b_log_has c1 'event=deposed reason=candidate_node_gone'
sleep 0.5
# The leader may publish again meanwhile (standbys named later): what is
# checked is who wrote the assignment, not that it stayed byte for byte.
stamped_by_leader || h_fail "the deposed leader wrote the assignment"
if tail -n +"$c1_from" "$H_DIR/c1.log" | grep 'event=published' >/dev/null; then
    h_fail "c1 published after being deposed"
fi
[[ $(jq .coordinator_epoch <<<"$snapshot") == $(b_status | jq .coordinator.epoch) ]] ||
    h_fail "assignment not stamped by the current leader"
h_wait_for 10 "c1 rejoins as a standby" bash -c "[[ \$('$BATON_BIN/baton-zk' --zk $ZK ls /baton/g/coordinators | wc -l) == 2 ]]"
b_jq '.coordinator.id == "c2"' >/dev/null || h_fail "c1 took leadership back"
((gen_before < $(jq .generation <<<"$snapshot"))) || h_fail "generation did not advance"
h_stop c1

# --- 2. session expired while stopped ----------------------------------------
h_stop c2
BATON_FAILPOINTS="coordinator.before_publish=stop" b_coord c3 --session-timeout-ms 1000
h_wait_for 10 "c3 leads" b_jq '.coordinator.id == "c3"'
# c3 leads but cannot publish; with it stopped past its session, c4 leads.
h_stop w2
h_wait_for 10 "c3 stopped before publishing" h_stopped c3
b_coord c4
h_wait_for 20 "c4 takes over after c3's session expires" b_all_active 1
b_jq '.coordinator.id == "c4"' >/dev/null || h_fail "c4 should lead"
h_kill c3 CONT
h_wait_for 10 "c3 learns its session expired" b_log_has c3 'event=session_expired'
sleep 0.5
stamped_by_leader || h_fail "the expired leader wrote the assignment"
b_log_has c3 'event=published' && h_fail "c3 published after being deposed"
h_wait_for 10 "c3 rejoins as a standby" bash -c "[[ \$('$BATON_BIN/baton-zk' --zk $ZK ls /baton/g/coordinators | wc -l) == 2 ]]"
b_jq '.coordinator.id == "c4"' >/dev/null || h_fail "c3 took leadership back"
h_pass "deposed leaders' publishes refused: by the check op, and by session expiry"
