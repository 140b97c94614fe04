#!/usr/bin/env bash
# it_assign: the assignor end to end on the real cluster. 12 partitions over
# 3 workers; a 4th worker moves exactly 3; a graceful leave of one of 4 moves
# exactly its own 3. Then operator pins and drains (batonctl) apply at once,
# and a publish split into many multis (--max-multi-bytes) still lands whole.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign
h_zk_start
B_PARTITIONS=12
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
# 256 bytes: every changed worker node goes in its own fenced multi.
b_coord c1 --max-multi-bytes 256

# moved BEFORE AFTER: partitions whose epoch changed between two statuses.
moved() {
    jq -n --argjson a "$1" --argjson b "$2" \
        '[range(0; 12) as $p | select($a.partitions[$p].epoch != $b.partitions[$p].epoch)] | length'
}
# counts: the sorted per-owner partition counts, e.g. "4 4 4".
counts() { jq -r '[.partitions | group_by(.owner)[] | length] | sort | map(tostring) | join(" ")' <<<"$1"; }
# assigned_to W: the partitions assignment/W lists, from status.
assigned_to() {
    b_status | jq -r --arg w "$1" '[.partitions[] | select(.assigned == $w) | .partition] | map(tostring) | join(" ")'
}

b_worker w1
b_worker w2
b_worker w3
h_wait_for 20 "three workers hold 4 each" b_all_active 3
s3=$(b_status)
[[ $(counts "$s3") == "4 4 4" ]] || h_fail "not 4/4/4: $(counts "$s3")"
b_produce 600
h_wait_for 15 "first 600 records in the sink" b_sink_has 600

# --- a 4th worker joins: exactly 3 move, all to it -------------------------
b_worker w4
h_wait_for 20 "four workers hold 3 each" b_all_active 4
s4=$(b_status)
[[ $(counts "$s4") == "3 3 3 3" ]] || h_fail "not 3/3/3/3: $(counts "$s4")"
m=$(moved "$s3" "$s4")
((m == 3)) || h_fail "adding a 4th worker moved $m partitions, expected exactly 3"
jq -n -e --argjson a "$s3" --argjson b "$s4" \
    'all(range(0; 12) as $p | $b.partitions[$p]; (.epoch != $a.partitions[.partition].epoch) == (.owner == "w4"))' \
    >/dev/null || h_fail "a partition moved that did not go to w4"
b_log_has c1 'event=published .* moved=3 minimal=3' || h_fail "coordinator did not log moved=3 minimal=3"
b_log_has c1 'multis=[2-9]' || h_fail "no publish was split into several multis"

# --- graceful leave of one of 4: exactly its own 3 move --------------------
b_produce 600 y
h_kill w4 TERM
rc=0; h_wait_exit w4 15 || rc=$?
((rc == 0)) || h_fail "w4 exited $rc on SIGTERM"
h_wait_for 20 "three workers hold everything" b_all_active 3
s5=$(b_status)
[[ $(counts "$s5") == "4 4 4" ]] || h_fail "not 4/4/4 after the leave: $(counts "$s5")"
m=$(moved "$s4" "$s5")
((m == 3)) || h_fail "w4's graceful leave moved $m partitions, expected exactly its 3"
jq -n -e --argjson a "$s4" --argjson b "$s5" \
    'all(range(0; 12) as $p | $a.partitions[$p]; (.owner == "w4") == (.epoch != $b.partitions[.partition].epoch))' \
    >/dev/null || h_fail "the leave moved a partition w4 did not own"

# --- pin: a partition of w1 to w2, counted in w2's share ---------------------
p=$(jq -r '[.partitions[] | select(.owner == "w1") | .partition][0]' <<<"$s5")
b_ctl pin "$p" w2 | grep "pinned partition $p to w2" >/dev/null || h_fail "batonctl pin did not confirm"
pinned_to_w2() { [[ $(b_owner "$p") == w2 ]] && b_all_active 3; }
h_wait_for 20 "partition $p owned by w2" pinned_to_w2
s6=$(b_status)
[[ $(counts "$s6") == "4 4 4" ]] || h_fail "the pin broke balance: $(counts "$s6")"
m=$(moved "$s5" "$s6")
((m == 2)) || h_fail "the pin moved $m partitions, expected 2 (the pinned one, and one back to w1)"
b_ctl pin "$p" w2 | grep "already pinned" >/dev/null || h_fail "pinning again is not idempotent"
rc=0; b_ctl pin 99 w2 2>"$H_DIR/err" || rc=$?
((rc == 1)) && grep -q "partition 99 is not in group" "$H_DIR/err" || h_fail "pin of a bad partition: rc=$rc"
rc=0; b_ctl pin 1 'bad/id' 2>"$H_DIR/err" || rc=$?
((rc == 2)) && grep -q "not a valid worker id" "$H_DIR/err" || h_fail "pin to a bad id: rc=$rc"

# --- drain w3: it ends with nothing, w1 and w2 take 6 each -----------------
b_ctl drain w3 | grep "draining w3" >/dev/null || h_fail "batonctl drain did not confirm"
# w3 stays a member (3 workers) but owns and is assigned nothing.
drained() {
    b_all_active && [[ -z $(assigned_to w3) ]] &&
        b_jq '([.partitions[].owner] | unique | length == 2) and (.workers | length == 3)' >/dev/null
}
h_wait_for 20 "w3 drained" drained
s7=$(b_status)
[[ $(counts "$s7") == "6 6" ]] || h_fail "not 6/6 with w3 drained: $(counts "$s7")"
((m = $(moved "$s6" "$s7"), m == 4)) || h_fail "the drain moved $m, expected w3's 4"
[[ $(b_owner "$p") == w2 ]] || h_fail "the pin did not survive the drain"
h_alive w3 || h_fail "a drained worker must stay alive"
b_log_has c1 'reason=drain' || h_fail "coordinator did not log reason=drain"

# --- undrain and unpin: back to 4/4/4 ---------------------------------------
b_ctl undrain w3 | grep "undrained w3" >/dev/null || h_fail "batonctl undrain did not confirm"
b_ctl unpin "$p" | grep "unpinned partition $p" >/dev/null || h_fail "batonctl unpin did not confirm"
h_wait_for 20 "w3 back in" b_all_active 3
s8=$(b_status)
[[ $(counts "$s8") == "4 4 4" ]] || h_fail "not 4/4/4 after undrain: $(counts "$s8")"
b_ctl unpin "$p" | grep "was not pinned" >/dev/null || h_fail "unpin again is not idempotent"

h_wait_for 20 "1200 records in the sink" b_sink_has 1200
source "$BATON_SRC/tests/lib/verify.sh"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "join moved 3 of 12, leave moved its own 3; pin, drain, undrain, unpin applied; chunked publish"
