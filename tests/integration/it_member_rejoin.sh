#!/usr/bin/env bash
# it_member_rejoin: a member that leaves gracefully and comes back under
# the same id before the coordinator re-reads the member list (a rolling
# restart) is seen as a new incarnation by the first rebalance after it,
# not only by the coordinator's 10 s resync.
#
# The interleaving is forced, step by step: p1 leaves (the coordinator acts
# on the leave mark from the event alone, which leaves no watch on p1's
# node); the coordinator stops itself before it reads the node again
# (failpoint coordinator.before_verify) until p1 has deleted its node; that
# read then finds the node gone; p1 starts again, so the member list names
# the same members as before; a rebalance comes (here: a data change of
# p2's node, acted on at once; the churn debounce is set to an hour, so
# nothing else rebalances). That rebalance must read p1's node (it was not
# watched) and give p1 partitions; a coordinator that trusts its cached
# copy of p1's old node keeps the new p1 "leaving", with nothing, until the
# resync.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_member_rejoin
h_zk_start
b_init 4
node() { echo "/baton/$B_GROUP/workers/$1"; }
b_probe p1
b_probe p2
has_node() { h_zk exists "$(node "$1")"; }
has_parts() { [[ -n $(b_partitions_of "$1") ]]; }
both_joined() { has_node p1 && has_node p2; }
h_wait_for 20 "p1 and p2 joined" both_joined
# Both members are there at the coordinator's first rebalance; later
# churn alone never rebalances (the debounce is an hour).
BATON_FAILPOINTS="coordinator.before_verify=stop" b_coord c1 --log-level debug \
    --rebalance-delay-ms 3600000 --max-rebalance-delay-ms 3600000
h_wait_for 30 "p1 and p2 share the partitions" b_all_active 2
old_owner=$(h_zk stat "$(node p1)" | grep -o 'ephemeralOwner=0x[0-9a-f]*')

h_kill p1 TERM
h_wait_for 20 "c1 stopped itself before reading p1's node again" \
    b_log_has c1 "event=failpoint name=coordinator.before_verify action=stop"
h_wait_exit p1 20 || h_fail "p1 did not leave (exit $?)"
! h_zk exists "$(node p1)" || h_fail "p1's member node is still there after p1 exited"
h_kill c1 CONT
h_wait_for 20 "c1 found p1's node gone" b_log_has c1 "event=leave_verified worker=p1 node=gone"

b_probe p1
new_node() { local st; st=$(h_zk stat "$(node p1)") && [[ $st != *"$old_owner "* && $st == *ephemeralOwner=* ]]; }
h_wait_for 20 "p1 is back with a new node" new_node
verified=$(grep -n "event=leave_verified worker=p1 node=gone" "$H_DIR/c1.log" | tail -1 | cut -d: -f1)

# A rebalance now: p2's node rewritten with the same content.
h_zk set "$(node p2)" "$(h_zk get "$(node p2)")" >/dev/null
h_wait_for 20 "c1 rebalanced on p2's data change" b_log_has c1 "event=leave_marked worker=p2"
h_wait_for 30 "p1 owns partitions again" has_parts p1
mark=$(grep -n "event=leave_marked worker=p2" "$H_DIR/c1.log" | tail -1 | cut -d: -f1)
# The generation of the first publish after p2's change, and the one that
# first gave the restarted p1 a partition.
pub_gen=$(awk -v m="$mark" 'NR > m && /event=published /{sub(/.*event=published generation=/, ""); print $1 + 0; exit}' "$H_DIR/c1.log")
p1_gen=$(awk -v v="$verified" 'NR > v && /event=assign .* to=p1 /{sub(/.* to=p1 generation=/, ""); print $1 + 0; exit}' "$H_DIR/c1.log")
[[ -n $pub_gen && -n $p1_gen ]] || h_fail "no publish after p2's change (generation '$pub_gen') or no partition given to p1 (generation '$p1_gen')"
((p1_gen <= pub_gen)) || h_fail "the restarted p1 got partitions only in generation $p1_gen, not in generation $pub_gen (the rebalance on p2's change): its new incarnation went unnoticed until a later full read"
h_wait_for 20 "every partition active with 2 members" b_all_active 2
h_pass "a same-id rejoin between two member-list reads is seen by the next rebalance"
