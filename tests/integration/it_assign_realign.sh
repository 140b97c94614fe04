#!/usr/bin/env bash
# it_assign_realign: rack.policy end to end (#16). The embedded Kafka runs
# three brokers in racks r1, r2, r3 and 12 partitions; three workers declare
# racks chosen (from the leaders kcat reports) so that the assignment a
# coordinator without --brokers makes (4 partitions each, racks unknown) is
# as misaligned as it can be. A coordinator restarted with --brokers and
# --rack-policy tiebreak leaves that balanced assignment alone; one restarted
# with the default (realign) moves partitions into their leader's rack until
# the most rack-local placement balance allows, 4/4/4 all along.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_realign
h_zk_start
B_PARTITIONS=12
h_kafka_start "$B_TOPIC" $B_PARTITIONS 3 r1,r2,r3
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

# The leaders (broker N is in rack rN; the mock cluster picks them at random).
declare -A lead=()
while read -r p leader; do lead[$p]=r$leader; done < <(kcat -L -b "$BOOTSTRAP" -t "$B_TOPIC" -m 5 2>/dev/null |
    sed -n 's/.*partition \([0-9]*\), leader \([0-9]*\),.*/\1 \2/p')
((${#lead[@]} == B_PARTITIONS)) || h_fail "kcat reported ${#lead[@]} leaders, not $B_PARTITIONS"

declare -A rack_of=() # worker -> rack
# local_count: "PARTITION WORKER" lines on stdin -> how many are in their
# leader's rack.
local_count() {
    local p w n=0
    while read -r p w; do
        if [[ ${rack_of[$w]:-} == "${lead[$p]}" ]]; then n=$((n + 1)); fi
    done
    echo $n
}
# best_local: the most partitions in their leader's rack with 4 per worker:
# per rack, min(partitions led there, 4 x its workers).
best_local() {
    local r p w led slots sum=0
    for r in r1 r2 r3; do
        led=0 slots=0
        for p in "${!lead[@]}"; do if [[ ${lead[$p]} == "$r" ]]; then led=$((led + 1)); fi; done
        for w in "${!rack_of[@]}"; do if [[ ${rack_of[$w]} == "$r" ]]; then slots=$((slots + 4)); fi; done
        sum=$((sum + (led < slots ? led : slots)))
    done
    echo $sum
}
# Without racks the first assignment is contiguous: w1 0-3, w2 4-7, w3 8-11.
first_layout() { for p in $(seq 0 11); do echo "$p w$((p / 4 + 1))"; done; }

# Worker racks: the choice (of 27) with the widest gap between the first
# assignment's rack-local count and the best one.
gap=-1
for r1 in r1 r2 r3; do
    for r2 in r1 r2 r3; do
        for r3 in r1 r2 r3; do
            rack_of=([w1]=$r1 [w2]=$r2 [w3]=$r3)
            g=$(($(best_local) - $(first_layout | local_count)))
            if ((g > gap)); then gap=$g choice="$r1 $r2 $r3"; fi
        done
    done
done
read -r c1 c2 c3 <<<"$choice"
rack_of=([w1]=$c1 [w2]=$c2 [w3]=$c3)
want=$(best_local)
((gap > 0)) || h_fail "every leader is in one rack (${lead[*]}): nothing to realign; rerun"

b_worker w1 --rack "$c1"
b_worker w2 --rack "$c2"
b_worker w3 --rack "$c3"
three() { b_jq '.workers | length == 3' >/dev/null; }
h_wait_for 15 "three members" three

owners() { b_status | jq -r '.partitions[] | "\(.partition) \(.assigned)"' | sort -n; }
four_each() { b_jq 'all(.partitions | group_by(.assigned)[]; length == 4)' >/dev/null; }

# 1. No --brokers: racks unknown, a balanced assignment blind to them.
b_coord c1
h_wait_for 20 "4 partitions each" b_all_active 3
four_each || h_fail "not 4/4/4 without racks"
before=$(owners)
initial=$(local_count <<<"$before")
((initial < want)) || h_fail "the first assignment has $initial rack-local partitions, $want at most: not misaligned"

# 2. --rack-policy tiebreak: racks are read, and the balanced assignment
# stays as it is. The racks are read in the new leader's first step, right
# before its rebalance; it handles SIGTERM only after that step.
h_stop c1
b_coord cT --brokers "$BOOTSTRAP" --rack-policy tiebreak
h_wait_for 20 "tiebreak leader read the racks" b_log_has cT 'event=racks topic=in partitions=12 with_rack=12'
h_stop cT
[[ $(owners) == "$before" ]] || h_fail "tiebreak moved partitions: $(owners | tr '\n' ' ')"
! b_log_has cT 'event=assign ' || h_fail "tiebreak logged moves"

# 3. The default (realign): every partition the balance allows moves into its
# leader's rack, still 4 each.
b_coord cR --brokers "$BOOTSTRAP"
realigned() { b_all_active 3 && [[ $(owners | local_count) == "$want" ]]; }
h_wait_for 30 "$want partitions in their leader's rack" realigned
four_each || h_fail "realignment broke the balance"
b_log_has cR "event=published .* moved=[1-9][0-9]* minimal=0 .*rack_local=$want" ||
    h_fail "coordinator did not log the realignment (minimal=0, rack_local=$want)"
moved=$(sed -n 's/.*event=published .* moved=\([0-9]*\) minimal=0 .*/\1/p' "$H_DIR/cR.log" | head -1)
# Each swap puts at least one partition in its rack for at most two moves.
((moved <= 2 * (want - initial))) || h_fail "moved $moved partitions for $((want - initial)) realigned"
h_pass "racks ($c1 $c2 $c3): $initial of 12 rack-local; tiebreak left them, realign reached $want moving $moved"
