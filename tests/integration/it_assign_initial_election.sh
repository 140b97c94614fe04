#!/usr/bin/env bash
# it_assign_initial_election: a coordinator elected into a group that forms
# (members there, nothing assigned: a fleet and its coordinator started
# together) does not publish at once to the few that have joined: it logs
# event=rebalance_deferred reason=group_forming and waits for more joins
# as the debounce does (docs/design.md, "The first assignment waits for
# the joins").
#   1. Three probes join, the coordinator starts, six more join 150 ms
#      apart: the first publish names all nine and nothing moves after.
#   2. The coordinator is replaced (SIGTERM; a second one is elected into
#      a formed group): the new leader does not defer.
#   3. In a second group, three probes and a coordinator with an hour's
#      --rebalance-delay-ms and no further joins: the deferral waits at
#      most 1 s (ELECTION_JOIN_WAIT_MS), then publishes.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_initial_election
h_zk_start
b_init 36
# assigned_to P N: all P partitions assigned, over exactly N workers.
assigned_to() {
    b_jq --argjson p "$1" --argjson n "$2" '(.partitions | length == $p) and all(.partitions[]; .assigned != null) and ([.partitions[].assigned] | unique | length == $n)'
}
joined() { [[ $(h_zk ls "/baton/$B_GROUP/workers" | wc -l) -ge $1 ]]; }
published() { grep 'event=published ' "$H_DIR/$1.log" | sed 's/.*event=published //' || true; }
deferred_workers() { grep -o 'event=rebalance_deferred reason=group_forming workers=[0-9]*' "$H_DIR/$1.log" | head -n 1 | cut -d= -f4; }

# --- 1. elected into a forming group: one publish, to all nine ------------
for i in 1 2 3; do b_probe "p$i"; done
h_wait_for 30 "three probes joined" joined 3
# A forming group's quiet period of 2.5 s: a slow probe start does not end
# the joins early.
b_coord c1 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1000 --handoff-timeout-ms 0 \
    --initial-rebalance-delay-ms 2500
for i in 4 5 6 7 8 9; do
    b_probe "p$i"
    sleep 0.15
done
h_wait_for 30 "every partition assigned, over the nine probes" assigned_to 36 9
sleep 1.5 # any later churn rebalance (there should be none) has run
published c1 >"$H_DIR/first.txt"
h_log "publishes: $(awk '{ print $1, $3, $5 }' "$H_DIR/first.txt" | tr '\n' ';')"
first=$(head -n 1 "$H_DIR/first.txt")
[[ $first == *" workers=9 "* ]] || h_fail "the first publish did not wait for the joins: $first"
if tail -n +2 "$H_DIR/first.txt" | grep -v ' moved=0 ' | grep . >/dev/null; then
    h_fail "partitions moved after the first publish: $(tail -n +2 "$H_DIR/first.txt" | tr '\n' ';')"
fi
k=$(deferred_workers c1)
[[ -n $k ]] || h_fail "c1 was elected into a forming group and did not defer its first rebalance"
# Elected before the last join (the usual case: an election takes tens of
# ms, the joins 750): the publish to all nine shows the joins extended the
# wait. Elected after all nine (a very slow start) shows only the deferral.
((k < 9)) && h_log "c1 deferred with $k of 9 joined" ||
    h_log "c1 was elected after all nine joined: the wait's extension is not shown in this run"

# --- 2. elected into a formed group: no deferral ----------------------------
b_coord c2 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1000 --handoff-timeout-ms 0
coords() { [[ $(h_zk ls "/baton/$B_GROUP/coordinators" | wc -l) -ge 2 ]]; }
h_wait_for 30 "c2 queued behind c1" coords
h_kill c1 TERM
h_wait_for 30 "c2 elected" b_log_has c2 "event=elected"
b_probe p10
h_wait_for 30 "p10 assigned by c2" assigned_to 36 10
! b_log_has c2 "event=rebalance_deferred" || h_fail "c2 deferred its first rebalance in a formed group"

# --- 3. the deferral's own wait is at most 1 s ------------------------------
B_GROUP=g2
b_init 12
for i in 1 2 3; do b_probe "q$i"; done
h_wait_for 30 "three probes joined group g2" joined 3
b_coord c3 --rebalance-delay-ms 3600000 --max-rebalance-delay-ms 3600000 --handoff-timeout-ms 0
h_wait_for 30 "c3 deferred its first rebalance" b_log_has c3 "event=rebalance_deferred reason=group_forming workers=3"
t0=$(date +%s%N)
h_wait_for 8 "g2 assigned without waiting for its hour-long debounce" assigned_to 12 3
h_log "g2 assigned $((($(date +%s%N) - t0) / 1000000)) ms after the deferral was seen"
h_pass "an election into a forming group waited for the joins, at most 1 s without any; into a formed one it did not"
