#!/usr/bin/env bash
# check_selftest.sh: proves the chaos checker (check.sh) can fail. Produces
# records to the embedded Kafka, writes a correct sink by hand with the
# sqlite3 CLI (no baton code), checks that check.sh passes it, then breaks a
# copy of the sink in one way at a time -- a lost row, a changed value, an
# extra row, an epoch regression, a write committed out of order, a write
# from an epoch an earlier fence sample had already passed, a final status
# with a partition in handoff or a fence that is not the owner's -- and
# checks that each is reported by its own counter and fails the check.
# Then the same through the producer's delivery reports (check.sh
# --deliveries, the chaos run's path: no read-back of the topic): the
# reports must equal the topic, a correct sink passes, a sink with one
# delivered record missing and another doubled fails with both reported, a
# possibly-persisted record is not called extra, a report cut short by a
# kill is ignored, records acknowledged but never reported (a kill) are
# looked up in the topic one by one, and a directory without reports
# falls back to the topic.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init chaos_check_selftest
PARTS=3 COUNT=300
h_kafka_start in $PARTS
mkdir -p "$H_DIR/deliveries"
"$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic in --partitions $PARTS --count $COUNT \
    --deliveries "$H_DIR/deliveries/batch-1.asv" >/dev/null
CHECK=$BATON_SRC/tests/chaos/check.sh
good=$H_DIR/good.db

# Record i of baton-produce goes to partition i % PARTS at offset i / PARTS
# with value v-i. Epoch 100 for the first half of each partition, 200 after.
{
    echo "CREATE TABLE baton_fence(grp TEXT, partition INTEGER, epoch INTEGER, next_offset INTEGER, rejected INTEGER, PRIMARY KEY(grp, partition));"
    echo "CREATE TABLE baton_output(grp TEXT, partition INTEGER, offset INTEGER, epoch INTEGER, key BLOB, value BLOB, PRIMARY KEY(grp, partition, offset));"
    echo "BEGIN;"
    for ((i = 0; i < COUNT; i++)); do
        p=$((i % PARTS)) o=$((i / PARTS))
        e=$((o < COUNT / PARTS / 2 ? 100 : 200))
        echo "INSERT INTO baton_output VALUES('g', $p, $o, $e, 'k$i', 'v-$i');"
    done
    for ((p = 0; p < PARTS; p++)); do
        echo "INSERT INTO baton_fence VALUES('g', $p, 200, $((COUNT / PARTS)), 1);"
    done
    echo "COMMIT;"
} | sqlite3 "$good"
# A fence sample taken after the first half of partition 0: fence 200.
half_rowid=$(sqlite3 "$good" "SELECT max(rowid) FROM baton_output WHERE partition = 0 AND epoch = 100")
echo "1 0 200 $half_rowid" >"$H_DIR/samples.txt"
status_good() {
    jq -n --argjson n $PARTS '{workers: [{id: "w1"}], partitions: [range(0; $n) |
        {partition: ., assigned: "w1", owner: "w1", epoch: 200, state: "active"}]}'
}
status_good >"$H_DIR/status.json"

CHECK_EXTRA=()
run_check() { # DB [STATUS]: runs check.sh (+ CHECK_EXTRA), output in $H_DIR/out
    local rc=0
    "$CHECK" --bootstrap "$BOOTSTRAP" --topic in --sink "$1" --group g "${CHECK_EXTRA[@]}" \
        --samples "$H_DIR/samples.txt" --status "${2:-$H_DIR/status.json}" --workers w1 \
        >"$H_DIR/out" 2>&1 || rc=$?
    return $rc
}
run_check "$good" || { cat "$H_DIR/out" >&2; h_fail "check.sh refused a correct sink"; }
grep -q "check: OK records=$COUNT .*rejected_stale=$PARTS" "$H_DIR/out" ||
    { cat "$H_DIR/out" >&2; h_fail "check.sh OK line is wrong"; }

expect_fail() { # NAME COUNTER_REGEX SQL [STATUS_FILE]
    local name=$1 want=$2 sql=$3 db=$H_DIR/$1.db
    cp "$good" "$db"
    [[ -z $sql ]] || sqlite3 "$db" "$sql"
    if run_check "$db" "${4:-}"; then
        cat "$H_DIR/out" >&2
        h_fail "check.sh passed a sink with $name"
    fi
    grep -Eq -- "$want" "$H_DIR/out" || { cat "$H_DIR/out" >&2; h_fail "$name: no '$want' in the report"; }
    h_log "detected: $name"
}
expect_fail lost 'check: FAIL .* lost=1 ' "DELETE FROM baton_output WHERE partition = 1 AND offset = 7"
expect_fail mismatch 'mismatched=1 ' "UPDATE baton_output SET value = 'other' WHERE partition = 2 AND offset = 3"
expect_fail extra 'extra=1 ' "INSERT INTO baton_output VALUES('g', 0, 100000, 200, 'k', 'v')"
expect_fail epoch_regression 'epoch_regr=1 ' \
    "UPDATE baton_output SET epoch = 100 WHERE partition = 1 AND offset = $((COUNT / PARTS - 10))"
# The highest offset of partition 2 re-inserted last is fine by offset, but
# committed after a lower offset with a higher rowid... move a middle row to
# the end of the commit order instead: its offset no longer rises.
expect_fail apply_order 'apply_order=[1-9]' \
    "DELETE FROM baton_output WHERE partition = 2 AND offset = 5;
     INSERT INTO baton_output VALUES('g', 2, 5, 100, 'k17', 'v-17')"
# Partition 0 written at epoch 100 throughout, although a sample saw its
# fence at 200 halfway: offsets and epochs look monotonic, only the fence
# samples show that the second half came from a fenced epoch.
expect_fail fenced_write "epoch_regr=0 apply_order=0 fenced_writes=$((COUNT / PARTS / 2)) " \
    "UPDATE baton_output SET epoch = 100 WHERE partition = 0"
status_good | jq '.partitions[1].state = "handoff" | .partitions[1].owner = "w2"' >"$H_DIR/handoff.json"
expect_fail handoff 'partition 1: state=handoff' "" "$H_DIR/handoff.json"
status_good | jq '.partitions[2].epoch = 300' >"$H_DIR/fence.json"
expect_fail fence_not_owner 'final fence: 1 partition' "" "$H_DIR/fence.json"
status_good | jq '.workers = [{id: "w1"}, {id: "w9"}]' >"$H_DIR/workers.json"
expect_fail wrong_workers 'differ from the expected' "" "$H_DIR/workers.json"

# --- the delivery reports instead of the topic -------------------------------
us=$'\x1f' rs=$'\x1e'
kcat -b "$BOOTSTRAP" -C -t in -o beginning -e -q -f "%p${us}%o${us}%s${rs}" >"$H_DIR/topic.asv"
sorted() { tr '\036' '\n' <"$1" | sort; }
[[ $(sorted "$H_DIR/deliveries/batch-1.asv") == "$(sorted "$H_DIR/topic.asv")" ]] ||
    h_fail "baton-produce --deliveries does not match the topic read back"
[[ $(sorted "$H_DIR/topic.asv" | wc -l) == "$COUNT" ]] || h_fail "the topic does not hold $COUNT records"
CHECK_EXTRA=(--deliveries "$H_DIR/deliveries")
run_check "$good" || { cat "$H_DIR/out" >&2; h_fail "check.sh --deliveries refused a correct sink"; }
grep -q "check: OK records=$COUNT .* maybe_delivered=0 read_back=0 topic_from=deliveries" "$H_DIR/out" ||
    { cat "$H_DIR/out" >&2; h_fail "check.sh --deliveries OK line is wrong"; }
# Doubled: the sink's primary key forbids two rows at one offset, so the
# doubled row goes into a copy without it (the checker must not rely on it).
nopk=$H_DIR/nopk.db
cp "$good" "$nopk"
sqlite3 "$nopk" "CREATE TABLE x AS SELECT * FROM baton_output ORDER BY rowid;
  DROP TABLE baton_output; ALTER TABLE x RENAME TO baton_output;"
good_saved=$good good=$nopk
expect_fail deliveries_lost_and_doubled 'check: FAIL .* lost=1 dup=1 ' \
    "DELETE FROM baton_output WHERE partition = 1 AND offset = 7;
     INSERT INTO baton_output VALUES('g', 2, $((COUNT / PARTS - 1)), 200, 'k$((COUNT - 1))', 'v-$((COUNT - 1))')"
grep -q '^check:   lost 1 7$' "$H_DIR/out" || { cat "$H_DIR/out" >&2; h_fail "lost record 1/7 not named"; }
good=$good_saved
# A record whose delivery failed but may have been written (offset -1):
# found in the sink at an offset no report names, it is not extra; the
# same row without that report is.
maybe_row="INSERT INTO baton_output VALUES('g', 0, $((COUNT / PARTS)), 200, 'kx', 'b2-0')"
expect_fail deliveries_extra 'extra=1 ' "$maybe_row"
cp -r "$H_DIR/deliveries" "$H_DIR/deliveries-maybe"
printf '0\x1f-1\x1fb2-0\x1e1\x1f5' >"$H_DIR/deliveries-maybe/batch-2.asv" # + a torn report
CHECK_EXTRA=(--deliveries "$H_DIR/deliveries-maybe")
cp "$good" "$H_DIR/maybe.db"
sqlite3 "$H_DIR/maybe.db" "$maybe_row"
run_check "$H_DIR/maybe.db" ||
    { cat "$H_DIR/out" >&2; h_fail "check.sh called a possibly persisted record extra"; }
grep -q "check: OK records=$COUNT .* extra=0 .* maybe_delivered=1 " "$H_DIR/out" ||
    { cat "$H_DIR/out" >&2; h_fail "maybe_delivered not counted"; }
# A producer killed before its last 10 reports were written: those sink
# rows are looked up in the topic one by one, found, and not extra.
mkdir -p "$H_DIR/deliveries-cut"
perl -0777 -ne 'my @r = split /\x1e/; print map { "$_\x1e" } @r[0 .. $#r - 10]' \
    "$H_DIR/deliveries/batch-1.asv" >"$H_DIR/deliveries-cut/batch-1.asv"
CHECK_EXTRA=(--deliveries "$H_DIR/deliveries-cut")
run_check "$good" || { cat "$H_DIR/out" >&2; h_fail "check.sh called acknowledged but unreported records extra"; }
grep -q "check: OK records=$COUNT .* read_back=10 " "$H_DIR/out" ||
    { cat "$H_DIR/out" >&2; h_fail "the 10 unreported records were not read back"; }
# No report at all: the topic is read back (and still finds a lost row).
mkdir -p "$H_DIR/deliveries-none"
CHECK_EXTRA=(--deliveries "$H_DIR/deliveries-none")
expect_fail fallback_lost 'check: FAIL .* lost=1 ' "DELETE FROM baton_output WHERE partition = 0 AND offset = 3"
grep -q 'no delivery file' "$H_DIR/out" || { cat "$H_DIR/out" >&2; h_fail "no fallback message"; }
! grep -q 'topic_from=deliveries' "$H_DIR/out" || h_fail "fallback still claims the delivery reports"
h_pass "check.sh accepts a correct sink and reports each of 9 kinds of violation; through the delivery reports, lost and doubled, possibly persisted and fallback"
