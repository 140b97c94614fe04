#!/usr/bin/env bash
# it_ctl_fences: `batonctl fences --sink` shows the sink's fence per
# partition (epoch, next_offset, rejected) beside ZooKeeper's owner epoch:
# "agree" while owners write; "sink_behind" for partitions whose new owner
# is frozen before its fence (failpoint worker.before_fence); "no_owner"
# once nobody holds a claim; "sink_ahead" when the sink fences above the
# owner's epoch. Checked against the SQLite rows and the claim znodes.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_ctl_fences
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1
h_wait_for 15 "w1 owns everything" b_all_active 1
b_produce 40 a
h_wait_for 15 "40 records in the sink" b_sink_has 40
fences() { b_ctl fences --sink "sqlite:$B_SINK" --json "$@"; }

fences >"$H_DIR/f1.json"
jq -e '.summary.agree == 4 and all(.partitions[]; .agreement == "agree" and .owner == "w1" and
       .epoch == .owner_epoch and .next_offset == 10 and .rejected == 0)' "$H_DIR/f1.json" >/dev/null ||
    h_fail "all should agree: $(jq -c .partitions "$H_DIR/f1.json")"
# The sink's own rows say the same.
[[ $(b_sql "SELECT group_concat(epoch || ':' || next_offset, ',') FROM (SELECT * FROM baton_fence WHERE grp='g' ORDER BY partition)") == \
   $(jq -r '[.partitions[] | "\(.epoch):\(.next_offset)"] | join(",")' "$H_DIR/f1.json") ]] || h_fail "fences differ from baton_fence"

# w2 freezes right before fencing the first partition it takes over (its
# long session outlives the freeze): it owns that one (and maybe its other
# new one, queued behind w1's claim until w1 let go) in ZooKeeper, while
# the sink still fences at w1's epochs.
BATON_FAILPOINTS="worker.before_fence=stop" b_worker w2 --session-timeout-ms 20000
h_wait_for 15 "w2 frozen before its fence" \
    h_at_failpoint w2 worker.before_fence
h_wait_for 15 "the sink is behind w2's claim" \
    bash -c "'$BATON_BIN/batonctl' --zk '$ZK' --group g fences --sink 'sqlite:$B_SINK' --json | jq -e '.summary.sink_behind >= 1'"
fences >"$H_DIR/f2.json"
jq -e '.summary.sink_behind >= 1 and .summary.sink_behind + .summary.agree + .summary.no_owner == 4' "$H_DIR/f2.json" >/dev/null || h_fail "sink_behind expected: $(jq -c .partitions "$H_DIR/f2.json")"
jq -e 'all(.partitions[] | select(.agreement == "sink_behind"); .owner == "w2" and .epoch < .owner_epoch)' \
    "$H_DIR/f2.json" >/dev/null || h_fail "sink_behind rows must be w2's with the old epoch below: $(jq -c .partitions "$H_DIR/f2.json")"
b_ctl fences --sink "sqlite:$B_SINK" >"$H_DIR/f2.txt"
grep -Eq '^agreement: +[0-9]+ agree, [12] sink_behind, 0 sink_ahead, [01] no_owner$' "$H_DIR/f2.txt" || h_fail "human summary: $(cat "$H_DIR/f2.txt")"
grep -Eq '^PARTITION +OWNER +OWNER EPOCH +SINK EPOCH +NEXT OFFSET +REJECTED +AGREEMENT$' "$H_DIR/f2.txt" || h_fail "human header: $(cat "$H_DIR/f2.txt")"
grep -Eq ' w2 .* sink_behind$' "$H_DIR/f2.txt" || h_fail "human row: $(cat "$H_DIR/f2.txt")"
h_kill w2 CONT
h_wait_for 15 "w2 fenced: all agree again" bash -c "'$BATON_BIN/batonctl' --zk '$ZK' --group g fences --sink 'sqlite:$B_SINK' --json | jq -e '.summary.agree == 4'"
[[ $(fences --worker w2 | jq '.partitions | length') == 2 ]] || h_fail "fences --worker w2"
[[ $(fences --partition 1 | jq -c '[.partitions[].partition]') == '[1]' ]] || h_fail "fences --partition 1"

# Nobody holds anything: no_owner, the sink's epochs stay.
h_stop w1
h_stop w2
h_wait_for 15 "everything unowned" b_jq 'all(.partitions[]; .state == "unowned")'
fences >"$H_DIR/f3.json"
jq -e '.summary.no_owner == 4 and all(.partitions[]; .owner_epoch == null and .epoch > 0)' "$H_DIR/f3.json" >/dev/null ||
    h_fail "no_owner expected: $(jq -c .partitions "$H_DIR/f3.json")"
# A claim below the sink's epoch (as after a reset of ZooKeeper's claims).
h_zk create /baton/g/partitions/0/claims/claim-0000000000000000-0000000000 '{"worker":"ghost","generation":1}' >/dev/null
czxid=$(h_zk stat /baton/g/partitions/0/claims/claim-0000000000000000-0000000000 | sed -E 's/.*czxid=([0-9]+).*/\1/')
b_sql "UPDATE baton_fence SET epoch = $czxid + 1000, rejected = 7 WHERE grp='g' AND partition=0"
fences >"$H_DIR/f4.json"
jq -e --argjson c "$czxid" '.partitions[0] | .agreement == "sink_ahead" and .owner == "ghost" and .owner_epoch == $c and .epoch == $c + 1000 and .rejected == 7' \
    "$H_DIR/f4.json" >/dev/null || h_fail "sink_ahead expected: $(jq -c '.partitions[0]' "$H_DIR/f4.json")"
jq -e '.summary.rejected >= 7' "$H_DIR/f4.json" >/dev/null || h_fail "summary.rejected"

# Errors: --sink is required, never created, and names what is wrong.
rc=0; b_ctl fences 2>"$H_DIR/e1" || rc=$?
((rc == 2)) && grep -q -- '--sink URI is required' "$H_DIR/e1" || h_fail "fences without --sink: $rc $(cat "$H_DIR/e1")"
rc=0; b_ctl fences --sink "sqlite:$H_DIR/none.db" 2>"$H_DIR/e2" || rc=$?
((rc == 1)) && grep -q "does not exist" "$H_DIR/e2" && [[ ! -e $H_DIR/none.db ]] || h_fail "missing sink: $rc $(cat "$H_DIR/e2")"
rc=0; b_ctl fences --sink "nosuch:x" 2>"$H_DIR/e3" || rc=$?
((rc == 2)) && grep -q "unknown sink scheme 'nosuch'" "$H_DIR/e3" || h_fail "bad scheme: $rc $(cat "$H_DIR/e3")"
b_ctl fences --help | grep '^examples:' >/dev/null || h_fail "fences --help has no examples"
h_pass "agree, sink_behind (frozen before fence), no_owner and sink_ahead, as the sink and the claims say"
