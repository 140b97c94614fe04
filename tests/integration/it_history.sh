#!/usr/bin/env bash
# it_history: `batonctl history` shows the moves the coordinator published,
# kept in <base>/history: w1 joins (every partition to w1, reason join), w2
# joins (half of them w1 -> w2, join), w2 is drained (back to w1, drain), w2
# undrained then leaves gracefully (leave); generations rise; the latest
# entry of a partition carries the current owner's epoch; --partition and
# --worker filter; --json; a partition beyond the group is a usage error.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_history
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

out=$(b_ctl history)
[[ $out == "no ownership changes recorded"* ]] || h_fail "empty history: '$out'"

b_coord c1
b_worker w1
h_wait_for 15 "w1 owns everything" b_all_active 1
hist() { b_ctl history --json; }
# count FILTER: entries matching a jq condition.
count() { hist | jq --exit-status "[.entries[] | select($1)] | length"; }
# counted N FILTER: N entries match, within 5 s (the coordinator writes the
# history shortly after each publish, not in the publish itself).
counted() {
    local i
    for ((i = 0; i < 50; i++)); do
        [[ $(count "$2") == "$1" ]] && return 0
        sleep 0.1
    done
    return 1
}
counted 4 '.from == null and .to == "w1" and .reason == "join"' ||
    h_fail "w1's join should record 4 entries from null to w1: $(hist)"

b_worker w2
h_wait_for 15 "w1 and w2 share" b_all_active 2
moved=$(b_partitions_of w2)
n_moved=$(wc -w <<<"$moved")
((n_moved == 2)) || h_fail "w2 should hold 2 of 4 partitions, holds '$moved'"
counted "$n_moved" '.from == "w1" and .to == "w2" and .reason == "join"' ||
    h_fail "w2's join should record $n_moved moves w1 -> w2: $(hist)"
for p in $moved; do
    last=$(hist | jq -c --argjson p "$p" '[.entries[] | select(.partition == $p)] | last')
    [[ $(jq -r .to <<<"$last") == w2 ]] || h_fail "partition $p's last move should be to w2: $last"
    h_wait_for 10 "partition $p's last entry has w2's epoch" bash -c \
        "[[ \$('$BATON_BIN/batonctl' --zk '$ZK' --group '$B_GROUP' history --json --partition $p | jq '.entries[-1].epoch') == \$('$BATON_BIN/batonctl' --zk '$ZK' --group '$B_GROUP' status --json | jq '.partitions[$p].epoch') ]]"
done

b_ctl drain w2 >/dev/null
h_wait_for 15 "w1 owns everything again" b_jq 'all(.partitions[]; .owner == "w1" and .state == "active")'
counted "$n_moved" '.from == "w2" and .to == "w1" and .reason == "drain"' ||
    h_fail "the drain should record $n_moved moves w2 -> w1: $(hist)"
b_ctl undrain w2 >/dev/null
h_wait_for 15 "w2 gets partitions back" b_all_active 2
counted 2 '.from == "w1" and .to == "w2" and .reason == "rebalance"' ||
    h_fail "the undrain should record 2 rebalance moves w1 -> w2: $(hist)"
gone=$(b_partitions_of w2)
h_stop w2
h_wait_for 15 "w1 owns everything after w2 left" b_all_active 1
counted 2 '.from == "w2" and .to == "w1" and .reason == "leave"' ||
    h_fail "w2's leave should record 2 moves w2 -> w1: $(hist)"

# Generations never go down, in order.
hist | jq -e '[.entries[].generation] | . == sort' >/dev/null || h_fail "generations out of order: $(hist)"
total=$(hist | jq '.entries | length')
((total == 4 + 2 + 2 + 2 + 2)) || h_fail "expected 12 entries, got $total: $(hist)"

# Filters, human output, errors.
p=${gone%% *}
b_ctl history --partition "$p" --json | jq -e --argjson p "$p" 'all(.entries[]; .partition == $p) and (.entries | length >= 3)' >/dev/null ||
    h_fail "--partition $p: $(b_ctl history --partition "$p" --json)"
b_ctl history --worker w2 --json | jq -e 'all(.entries[]; .from == "w2" or .to == "w2") and (.entries | length == 8)' >/dev/null ||
    h_fail "--worker w2: $(b_ctl history --worker w2 --json)"

# A crash is told apart from a graceful leave: w3 joins, then is SIGKILLed.
b_worker w3
h_wait_for 15 "w3 joins" b_all_active 2
n3=$(b_partitions_of w3 | wc -w)
h_kill w3 KILL
h_wait_for 20 "w1 owns everything after w3 crashed" b_all_active 1
counted "$n3" '.from == "w3" and .to == "w1" and .reason == "crash"' ||
    h_fail "w3's crash should record $n3 crash moves: $(hist)"
[[ $(count '.from == "w3" and .reason == "leave"') == 0 ]] || h_fail "a crash recorded as a leave: $(hist)"
b_ctl history --partition "$p" >"$H_DIR/history.txt"
head -1 "$H_DIR/history.txt" | grep '^TIME (UTC) .*PARTITION.*FROM.*TO.*EPOCH.*GENERATION.*REASON' >/dev/null ||
    h_fail "human header: $(cat "$H_DIR/history.txt")"
grep -Eq " w2 +w1 .* leave *$" "$H_DIR/history.txt" || h_fail "human rows lack the leave: $(cat "$H_DIR/history.txt")"
awk 'length > 100 { exit 1 }' "$H_DIR/history.txt" || h_fail "a line is over 100 columns"
set +e
err=$(b_ctl history --partition 9 2>&1)
rc=$?
set -e
((rc == 2)) || h_fail "--partition 9 of 4: exit $rc, expected 2"
grep -q -- "--partition: 9 is not a partition of group $B_GROUP" <<<"$err" || h_fail "message: $err"
b_ctl history --help | grep 'examples:' >/dev/null || h_fail "no help with examples"
h_pass "history: join 4, join $n_moved, drain, rebalance, leave, crash; epochs, filters, errors"
