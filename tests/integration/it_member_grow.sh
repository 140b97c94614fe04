#!/usr/bin/env bash
# it_member_grow: a group's topic grows while a member holds partitions and
# a named key. The member library keeps its resources in one table
# (partitions first, then keys), so growing the partitions moves every key
# to a later row: the key must stay owned through it (acquired once, never
# released, no second claim of ours in its queue), and the new partitions
# are acquired. A graceful leave then releases all of them with reason
# "leave".
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_member_grow
h_zk_start
PROBE=$BATON_TESTS_BIN/member_probe
b_ctl init --keys nightly >/dev/null
b_ctl init --topic in --partitions 2 >/dev/null
b_coord c1
h_spawn p1 "$PROBE" --zk "$ZK" --group "$B_GROUP" --id p1 --session-timeout-ms "$B_SESSION_MS"
acquired() { grep -q "^acquired $1 " "$H_DIR/p1.log"; }
h_wait_for 20 "p1 acquired partitions 0, 1 and key nightly" \
    eval 'acquired partition=0 && acquired partition=1 && acquired key=nightly'
key_epoch=$(grep '^acquired key=nightly ' "$H_DIR/p1.log" | sed -E 's/.* epoch=([0-9]+).*/\1/')

b_ctl init --topic in --partitions 5 | grep "grew group $B_GROUP to 5 partitions" >/dev/null ||
    h_fail "the group did not grow"
h_wait_for 20 "p1 acquired the new partitions 2, 3 and 4" \
    eval 'acquired partition=2 && acquired partition=3 && acquired partition=4'
# Settled: every resource active in status, the key still p1's.
settled() {
    b_jq '.summary.unowned == 0 and (.partitions | length) == 5' >/dev/null &&
        b_ctl keys list --json | jq -e '.keys == [.keys[0]] and .keys[0].owner == "p1" and .keys[0].state == "active"' >/dev/null
}
h_wait_for 20 "five partitions and the key owned" settled
n=$(grep -c '^acquired key=nightly ' "$H_DIR/p1.log")
((n == 1)) || h_fail "key nightly acquired $n times across the growth (want 1)"
! grep -q '^released key=nightly' "$H_DIR/p1.log" || h_fail "key nightly was released by the growth"
for p in 0 1; do
    n=$(grep -c "^acquired partition=$p " "$H_DIR/p1.log")
    ((n == 1)) || h_fail "partition $p acquired $n times across the growth (want 1)"
done
claims=$(h_zk ls "/baton/$B_GROUP/keys/nightly/claims" | grep -o 'claim-[0-9a-f]*-[0-9]*' | wc -l)
((claims == 1)) || h_fail "key nightly has $claims claims (want 1: ours)"
b_ctl keys list --json | jq -e --argjson e "$key_epoch" '.keys[0].epoch == $e' >/dev/null ||
    h_fail "key nightly's epoch changed: $(b_ctl keys list --json | jq -c .keys)"

h_kill p1 TERM
rc=0; h_wait_exit p1 15 || rc=$?
((rc == 0)) || h_fail "p1 should leave and exit 0, got $rc"
for r in key=nightly partition=0 partition=4; do
    grep -q "^released $r reason=leave" "$H_DIR/p1.log" || h_fail "$r not released with reason leave"
done
h_pass "grew 2 -> 5 partitions under a member holding key nightly: the key kept its claim and epoch, the new partitions acquired, a leave released all"
