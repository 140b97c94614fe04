#!/usr/bin/env bash
# it_ctl_status: what an operator asks `batonctl status`, `workers` and
# `partitions`: which worker owns partition 7 and at which epoch (checked
# against the claim znode itself), the lag per partition (Kafka high
# watermark minus the sink's next_offset, checked against what was produced
# and written), how long each partition has been in its state, workers'
# capacity, rack, partitions held and draining, pins, the filters, a 1,000
# partition group's table within 100 columns, and the errors.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_ctl_status
h_zk_start
B_PARTITIONS=8
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
t0=$(($(date +%s%3N) - 1000))
b_worker w1
b_worker w2 --capacity 2 --rack r2
h_wait_for 20 "w1 and w2 own everything" b_all_active 2
b_produce 80 a
h_wait_for 15 "80 records in the sink" b_sink_has 80
LAGFLAGS=(--brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK")

# --- which worker owns partition 7, at which epoch -------------------------
b_ctl status --partition 7 --json >"$H_DIR/p7.json"
jq -e '(.partitions | length) == 1 and .partitions[0].partition == 7 and .partitions[0].state == "active"' \
    "$H_DIR/p7.json" >/dev/null || h_fail "status --partition 7: $(jq -c .partitions "$H_DIR/p7.json")"
owner=$(jq -r '.partitions[0].owner' "$H_DIR/p7.json")
epoch=$(jq -r '.partitions[0].epoch' "$H_DIR/p7.json")
claim=$(h_zk ls /baton/g/partitions/7/claims | head -1)
czxid=$(h_zk stat "/baton/g/partitions/7/claims/$claim" | sed -E 's/.*czxid=([0-9]+).*/\1/')
[[ $epoch == "$czxid" ]] || h_fail "partition 7 epoch $epoch is not its claim's czxid $czxid"
[[ $(h_zk get "/baton/g/partitions/7/claims/$claim" | jq -r .worker) == "$owner" ]] || h_fail "partition 7 owner $owner is not its claim's worker"
# The human form says the same on one row under the summary.
b_ctl status --partition 7 >"$H_DIR/p7.txt"
grep -Eq "^ +7  .*$owner .* $epoch  active " "$H_DIR/p7.txt" || h_fail "human status --partition 7 lacks '7 ... $owner ... $epoch active': $(cat "$H_DIR/p7.txt")"
h_log "partition 7: owner $owner epoch $epoch"

# --- how long in its state -------------------------------------------------
b_status >"$H_DIR/st.json"
jq -e --argjson t0 "$t0" 'all(.partitions[]; .since_ms >= $t0 and .since_ms <= .time_ms // 1e18) and
      all(.partitions[]; .state_age_ms >= 0) and
      all(.workers[]; .joined_ms >= $t0 and .session_age_ms >= 0)' "$H_DIR/st.json" >/dev/null ||
    h_fail "since_ms/state_age_ms/joined_ms out of range: $(jq -c '[.partitions[0], .workers[0], .time_ms]' "$H_DIR/st.json")"
jq -e 'all(.partitions[]; .lag == null and .high_watermark == null and .next_offset == null) and .summary.lag == null' \
    "$H_DIR/st.json" >/dev/null || h_fail "lag must be null without --brokers and --sink"
# The original keys are still there, in their order.
jq -e '(.partitions[0] | keys_unsorted[0:6]) == ["partition","assigned","owner","epoch","state","claims"] and
       (.workers[0] | keys_unsorted[0:6]) == ["id","host","pid","capacity","rack","session"] and
       (keys_unsorted[0:5] == ["group","config","generation","coordinator","summary"]) and
       (.coordinator | keys_unsorted) == ["id","epoch","node"]' "$H_DIR/st.json" >/dev/null ||
    h_fail "the stable status keys changed"

# --- workers ---------------------------------------------------------------
b_ctl workers --json >"$H_DIR/workers.json"
jq -e '(.workers | map(.id)) == ["w1","w2"] and
       (.workers[1] | .capacity == 2 and .rack == "r2" and .draining == false) and
       ([.workers[].owned] | add) == 8 and ([.workers[].assigned] | add) == 8 and
       all(.workers[]; .pid > 0 and (.host | length > 0)) and (has("partitions") | not)' \
    "$H_DIR/workers.json" >/dev/null || h_fail "workers --json: $(jq -c . "$H_DIR/workers.json")"
jq -e --argjson a "$(b_partitions_of w1 | wc -w)" '.workers[0].owned == $a' "$H_DIR/workers.json" >/dev/null ||
    h_fail "w1's owned count differs from the partitions it owns"
# Draining and pins, in the layout `batonctl drain`/`pin` write.
h_zk create /baton/g/drains '' >/dev/null 2>&1 || true
h_zk create /baton/g/drains/w2 '' >/dev/null
h_zk create /baton/g/pins '' >/dev/null 2>&1 || true
h_zk create /baton/g/pins/3 '{"worker":"w2"}' >/dev/null
b_ctl workers >"$H_DIR/workers.txt"
grep -Eq '^WORKER +HOST +PID +CAP +RACK +OWNED +ASSIGNED +DRAINING +SESSION AGE +SESSION$' "$H_DIR/workers.txt" ||
    h_fail "workers header: $(head -1 "$H_DIR/workers.txt")"
grep -Eq '^w2 .* 2  r2 .* yes .*0x[0-9a-f]{16}$' "$H_DIR/workers.txt" || h_fail "w2 row: $(cat "$H_DIR/workers.txt")"
b_jq '.summary.draining == 1 and .summary.pinned == 1 and .partitions[3].pinned == "w2" and .drains == ["w2"]' >/dev/null ||
    h_fail "drain/pin not shown: $(b_status | jq -c '[.summary, .partitions[3], .drains]')"
h_zk delete /baton/g/drains/w2
h_zk delete /baton/g/pins/3

# --- lag -------------------------------------------------------------------
b_ctl status "${LAGFLAGS[@]}" --json >"$H_DIR/lag0.json"
jq -e '.summary.lag == 0 and all(.partitions[]; .high_watermark == 10 and .next_offset == 10 and .lag == 0)' \
    "$H_DIR/lag0.json" >/dev/null || h_fail "lag after everything was written: $(jq -c '[.partitions[] | [.high_watermark, .next_offset, .lag]]' "$H_DIR/lag0.json")"
# Nobody consumes: 16 more records are 2 of lag on every partition.
h_stop w1
h_stop w2
h_wait_for 15 "everything unowned" b_jq 'all(.partitions[]; .state == "unowned")'
b_produce 16 b
b_ctl partitions "${LAGFLAGS[@]}" --json >"$H_DIR/lag2.json"
jq -e '(has("workers") | not) and (.partitions | length == 8) and
       all(.partitions[]; .high_watermark == 12 and .next_offset == 10 and .lag == 2 and .since_ms == null and .state_age_ms == null)' \
    "$H_DIR/lag2.json" >/dev/null || h_fail "lag 2 expected: $(jq -c '[.partitions[] | [.high_watermark, .next_offset, .lag]]' "$H_DIR/lag2.json")"
b_ctl status "${LAGFLAGS[@]}" >"$H_DIR/lag2.txt"
# Quiet without --verbose, even with BATON_LOG_LEVEL exported for a shell's
# workers: the command's output and nothing else.
BATON_LOG_LEVEL=debug b_ctl status "${LAGFLAGS[@]}" >"$H_DIR/lag2-env.txt" 2>"$H_DIR/lag2-env.err" ||
    h_fail "status with BATON_LOG_LEVEL=debug failed: $(cat "$H_DIR/lag2-env.err")"
[[ ! -s $H_DIR/lag2-env.err ]] || h_fail "BATON_LOG_LEVEL made batonctl log without --verbose: $(head -n 3 "$H_DIR/lag2-env.err")"
grep -q '^lag:          16 records in total, most 2 on partition 0$' "$H_DIR/lag2.txt" || h_fail "lag summary: $(cat "$H_DIR/lag2.txt")"
grep -q '^not active:   8 unowned: 0 1 2 3 4 5 6 7$' "$H_DIR/lag2.txt" || h_fail "not-active summary: $(cat "$H_DIR/lag2.txt")"
grep -Eq '^PARTITION +ASSIGNED +OWNER +EPOCH +STATE +FOR +CLAIMS +LAG$' "$H_DIR/lag2.txt" || h_fail "partitions header: $(cat "$H_DIR/lag2.txt")"
b_worker w1
h_wait_for 20 "w1 catches up: no lag" bash -c "'$BATON_BIN/batonctl' --zk '$ZK' --group g status --brokers '$BOOTSTRAP' --sink 'sqlite:$B_SINK' --json | jq -e '.summary.lag == 0 and .summary.active == 8'"

# --- filters ---------------------------------------------------------------
b_ctl status --worker w1 --json >"$H_DIR/fw.json"
jq -e '(.workers | map(.id)) == ["w1"] and (.partitions | length == 8) and all(.partitions[]; .owner == "w1") and .summary.workers == 1' \
    "$H_DIR/fw.json" >/dev/null || h_fail "status --worker w1: $(jq -c . "$H_DIR/fw.json")"
[[ $(b_ctl partitions --partition 2-4,7 --json | jq -c '[.partitions[].partition]') == '[2,3,4,7]' ]] || h_fail "--partition 2-4,7"

# --- errors ----------------------------------------------------------------
expect() { # expect RC GREP CMD...: exit code RC and stderr matching GREP
    local want=$1 pat=$2 rc=0
    shift 2
    "$@" >"$H_DIR/out" 2>"$H_DIR/err" || rc=$?
    ((rc == want)) || h_fail "$* exited $rc, expected $want: $(cat "$H_DIR/err")"
    grep -Eq -- "$pat" "$H_DIR/err" || h_fail "$*: stderr lacks '$pat': $(cat "$H_DIR/err")"
}
expect 1 "--worker 'w9': no such worker" b_ctl status --worker w9
expect 1 "--partition 8: group g has 8 partitions \(0-7\)" b_ctl partitions --partition 8
expect 2 "--partition: 'x' is not a partition" b_ctl status --partition x
expect 2 "--partition: '3-1' is not" b_ctl status --partition 3-1
expect 2 "--worker: 'a/b' is not a valid worker id" b_ctl status --worker a/b
expect 2 "option '--brokers' does not apply" b_ctl workers --brokers "$BOOTSTRAP"
expect 2 "--sink: sink uri 'nocolon' has no scheme" b_ctl status --sink nocolon
expect 2 "--kafka needs --brokers" b_ctl status --kafka a=b
expect 1 "--sink 'sqlite:$H_DIR/nope.db': '$H_DIR/nope.db' does not exist" b_ctl status --sink "sqlite:$H_DIR/nope.db"
[[ ! -e $H_DIR/nope.db ]] || h_fail "a read command created the sink file"
expect 2 "--kafka 'no.such.setting=1'" b_ctl status --brokers "$BOOTSTRAP" --kafka no.such.setting=1
dead=$(h_free_port)
# (the topic check comes first, so it is its metadata that does not come)
expect 1 "--brokers '127.0.0.1:$dead': no metadata for topic 'in' within 1500 ms" \
    "$BATON_BIN/batonctl" --zk "$ZK" --group g --timeout 1500 status --brokers "127.0.0.1:$dead"
for cmd in workers partitions; do
    expect 1 "." "$BATON_BIN/batonctl" --zk "127.0.0.1:$dead" --group g --timeout 1000 $cmd
    "$BATON_BIN/batonctl" $cmd --help | grep '^examples:' >/dev/null || h_fail "$cmd --help has no examples"
done

# --- 1,000 partitions: summary first, every line within 100 columns --------
"$BATON_BIN/batonctl" --zk "$ZK" --group big init --topic big --partitions 1000 >/dev/null
long=w-$(printf 'x%.0s' {1..100})
h_zk create /baton/big/workers/$long '{"id":"'$long'","host":"'$(printf 'h%.0s' {1..60})'","pid":1,"capacity":1}' >/dev/null
COLUMNS=100 "$BATON_BIN/batonctl" --zk "$ZK" --group big status >"$H_DIR/big.txt" 2>"$H_DIR/big.err"
awk 'length > 100 { print NR": "length; bad = 1 } END { exit bad }' "$H_DIR/big.txt" || h_fail "lines over 100 columns in the 1,000-partition status"
[[ $(grep -Ec '^ +[0-9]+  ' "$H_DIR/big.txt") == 1000 ]] || h_fail "expected 1000 partition rows"
head -1 "$H_DIR/big.txt" | grep -E '^group: +big$' >/dev/null || h_fail "summary does not come first"
grep -q '^not active:   1000 unowned: 0 1 2 3 4 5 6 7 ..$' "$H_DIR/big.txt" || h_fail "big not-active line: $(grep 'not active' "$H_DIR/big.txt")"
grep -Eq '^w-x+\.\.x+  ' "$H_DIR/big.txt" || h_fail "a long worker id is not cut with '..'"
# --- long ids: never cut when piped; cut to fit, they still differ -------
ip1=ip-10-0-12-31.eu-west-1.compute.internal
ip2=ip-10-0-12-32.eu-west-1.compute.internal
for id in $ip1 $ip2; do
    h_zk create /baton/big/workers/$id '{"id":"'$id'","host":"h","pid":1,"capacity":1}' >/dev/null
done
ids_shown() { awk '$1 ~ /^ip-/ { print $1 }' "$H_DIR/ids.txt" | sort -u; }
"$BATON_BIN/batonctl" --zk "$ZK" --group big workers >"$H_DIR/ids.txt"
[[ $(ids_shown) == "$ip1"$'\n'"$ip2" ]] || h_fail "piped, ids must be whole: $(<"$H_DIR/ids.txt")"
COLUMNS=60 "$BATON_BIN/batonctl" --zk "$ZK" --group big workers >"$H_DIR/ids.txt"
[[ $(ids_shown | wc -l) == 2 ]] || h_fail "cut to 60 columns, two ids read alike: $(<"$H_DIR/ids.txt")"
grep -q '^ip-.*\.\.' "$H_DIR/ids.txt" || h_fail "at 60 columns the ids should be cut: $(<"$H_DIR/ids.txt")"
COLUMNS=60 "$BATON_BIN/batonctl" --zk "$ZK" --group big workers --wide >"$H_DIR/ids.txt"
[[ $(ids_shown) == "$ip1"$'\n'"$ip2" ]] || h_fail "--wide must not cut: $(<"$H_DIR/ids.txt")"
# history: the same ids, whole when piped or --wide, told apart when cut.
h_zk create /baton/big/history '{"entries":[{"partition":1,"from":"'$ip1'","to":"'$ip2'","epoch":5,"generation":2,"time_ms":1700000000000,"reason":"leave"},{"partition":2,"from":"'$ip2'","to":"'$ip1'","epoch":6,"generation":3,"time_ms":1700000000001,"reason":"drain"}]}' >/dev/null
hist_ids() { awk '$3 ~ /^ip-/ { print $3; print $4 }' "$H_DIR/hist.txt" | sort -u; }
"$BATON_BIN/batonctl" --zk "$ZK" --group big history >"$H_DIR/hist.txt"
[[ $(hist_ids) == "$ip1"$'\n'"$ip2" ]] || h_fail "piped, history ids must be whole: $(<"$H_DIR/hist.txt")"
COLUMNS=70 "$BATON_BIN/batonctl" --zk "$ZK" --group big history >"$H_DIR/hist.txt"
[[ $(hist_ids | wc -l) == 2 ]] || h_fail "history cut to 70 columns, two ids read alike: $(<"$H_DIR/hist.txt")"
grep -q '  ip-.*\.\.' "$H_DIR/hist.txt" || h_fail "at 70 columns the history ids should be cut: $(<"$H_DIR/hist.txt")"
h_pass "owner and epoch of partition 7, lag 0 -> 2 -> 0, ages, workers, drains, pins, filters, errors, 1,000 rows in 100 columns"
