#!/usr/bin/env bash
# it_assign_initial_election: a coordinator elected into a group that forms
# (members there, nothing assigned: a fleet and its coordinator started
# together) does not publish at once to the few that have joined: it logs
# event=rebalance_deferred reason=group_forming and waits for more joins
# as the debounce does (docs/design.md, "The first assignment waits for
# the joins"). Three probes join, the coordinator starts, six more join
# 150 ms apart: the first publish names all nine and nothing moves after.
# Then the coordinator is replaced (SIGTERM, a second one elected into a
# formed group): the new leader rebalances at once, with no deferral.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_initial_election
h_zk_start
b_init 36
assigned_to() {
    b_jq --argjson n "$1" '(.partitions | length == 36) and all(.partitions[]; .assigned != null) and ([.partitions[].assigned] | unique | length == $n)'
}
joined() { [[ $(h_zk ls "/baton/$B_GROUP/workers" | wc -l) -ge $1 ]]; }
published() { grep 'event=published ' "$H_DIR/$1.log" | sed 's/.*event=published //' || true; }

for i in 1 2 3; do b_probe "p$i"; done
h_wait_for 30 "three probes joined" joined 3
b_coord c1 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1000 --handoff-timeout-ms 0
for i in 4 5 6 7 8 9; do
    b_probe "p$i"
    sleep 0.15
done
h_wait_for 30 "every partition assigned, over the nine probes" assigned_to 9
sleep 1.5 # any later churn rebalance (there should be none) has run
published c1 >"$H_DIR/first.txt"
h_log "publishes: $(awk '{ print $1, $3, $5 }' "$H_DIR/first.txt" | tr '\n' ';')"
first=$(head -n 1 "$H_DIR/first.txt")
[[ $first == *" workers=9 "* ]] || h_fail "the first publish did not wait for the joins: $first"
b_log_has c1 "event=rebalance_deferred reason=group_forming" ||
    h_fail "c1 was elected into a forming group and did not wait for the joins"
if tail -n +2 "$H_DIR/first.txt" | grep -v ' moved=0 ' | grep -q .; then
    h_fail "partitions moved after the first publish: $(tail -n +2 "$H_DIR/first.txt" | tr '\n' ';')"
fi

# A formed group: a new leader's first rebalance is not deferred.
b_coord c2 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1000 --handoff-timeout-ms 0
coords() { [[ $(h_zk ls "/baton/$B_GROUP/coordinators" | wc -l) -ge 2 ]]; }
h_wait_for 30 "c2 queued behind c1" coords
h_kill c1 TERM
h_wait_for 30 "c2 elected" b_log_has c2 "event=elected"
b_probe p10
h_wait_for 30 "p10 assigned by c2" assigned_to 10
! b_log_has c2 "event=rebalance_deferred" || h_fail "c2 deferred its first rebalance in a formed group"
h_pass "an election into a forming group waited for the joins; into a formed one it did not"
