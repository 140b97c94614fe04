#!/usr/bin/env bash
# it_bench_input.sh: the rebalance benchmark's observer of the input
# (bench/bench_arrivals.c) and its reading (bench/lib.sh, bench_input_ms).
# baton-bench-arrivals, started on the embedded Kafka before a producer,
# logs every partition's records up to the last one as they arrive, with
# stamps on the watcher's clock, and refuses bad flags. bench_input_ms
# takes a leave apart from a watcher log and an arrivals log with known
# answers: a record the leaver held counts as there at the SIGTERM, one
# arriving later counts from its arrival, and a partition never written
# or never seen gives "- -". bench_stall_trace finds a roll's longest gap
# and the worker's debug line of the write that ended it; bench_follow
# waits for a line appended to a log from now on, and gives up after its
# timeout, leaving no process behind. baton-bench-plain
# --member takes only its share of the partitions.
set -euo pipefail

: "${BATON_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# shellcheck source=../lib/harness.sh
source "$BATON_SRC/tests/lib/harness.sh"
# shellcheck source=../../bench/lib.sh
source "$BATON_SRC/bench/lib.sh"
h_init it_bench_input

# --- baton-bench-arrivals: usage ----------------------------------------------
for args in "" "--brokers x --topic t" "--brokers x --topic t --partitions 0" \
    "--brokers x --topic t --partitions 2 --bogus 1" "--brokers x --topic t --partitions 2 --fetch-wait-ms -1" \
    "--brokers x --topic t --partitions 2 --only 2" "--brokers x --topic t --partitions 2 --only 0,,1" \
    "--brokers x --topic t --partitions 2 --only x"; do
    rc=0
    # shellcheck disable=SC2086 # word splitting is the point
    timeout 10 "$BATON_BIN/baton-bench-arrivals" $args >/dev/null 2>"$H_DIR/usage.err" || rc=$?
    ((rc == 2)) || h_fail "baton-bench-arrivals $args: exit $rc, want 2"
    [[ -s $H_DIR/usage.err ]] || h_fail "baton-bench-arrivals $args: nothing on stderr"
done

# --- baton-bench-arrivals: what arrives ---------------------------------------
# Two observers: one of every partition, one of partition 1 only (--only).
PARTS=3
COUNT=300
h_kafka_start in "$PARTS"
h_spawn arrivals "$BATON_BIN/baton-bench-arrivals" --brokers "$BOOTSTRAP" --topic in \
    --partitions "$PARTS"
h_spawn only1 "$BATON_BIN/baton-bench-arrivals" --brokers "$BOOTSTRAP" --topic in \
    --partitions "$PARTS" --only 1
# It starts at the end of each partition, as the broker gives it before
# its "ready" line: every record produced after that line is seen.
ready() { grep '^ready [0-9]*$' "$H_DIR/$1.log" >/dev/null; }
both_ready() { ready arrivals && ready only1; }
h_wait_for 15 "the observers found the partitions' ends" both_ready
# Four batches, each produced only once the one before has been seen
# arriving: every batch is a separate arrival line of every partition, so
# an observer that logged only at the end, or only its last fetch, fails
# however the broker and the producer are paced on a loaded machine.
BATCHES=4
BATCH=$((COUNT / BATCHES))
seen_upto() { # seen_upto LAST: every partition's record LAST seen arriving
    awk -v n="$PARTS" -v last="$1" '
        $1 == "a" && $4 >= last { done[$3] = 1 }
        END { for (p = 0; p < n; p++) if (!(p in done)) exit 1 }' "$H_DIR/arrivals.log"
}
t0=$(bench_now_us)
for ((b = 1; b <= BATCHES; b++)); do
    out=$("$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic in --partitions "$PARTS" \
        --count "$BATCH" --rate 600 --timeout-ms 10000)
    [[ $out == "produced=$BATCH" ]] || h_fail "baton-produce (batch $b) printed '$out'"
    h_wait_for 15 "every partition's record $((b * BATCH / PARTS - 1)) seen arriving" \
        seen_upto $((b * BATCH / PARTS - 1)) ||
        h_fail "baton-bench-arrivals did not see batch $b's last records"
done
t1=$(bench_now_us)
# Stamps on the watcher's clock, within the production; offsets only grow;
# every partition has a line for every batch, the last at exactly its end.
awk -v t0="$t0" -v t1="$t1" -v n="$PARTS" -v per=$((BATCH / PARTS)) -v nb="$BATCHES" '
    $1 != "a" { next }
    $2 < t0 || $2 > t1 { print "stamp out of range: " $0; bad++ }
    ($3 in last) && $4 <= last[$3] { print "offset went back: " $0; bad++ }
    { last[$3] = $4; batch[$3 " " int($4 / per)] = 1 }
    END {
        for (p = 0; p < n; p++) {
            if (last[p] != per * nb - 1) { print "partition " p " ended at " last[p]; bad++ }
            for (b = 0; b < nb; b++)
                if (!((p " " b) in batch)) { print "partition " p ": no line in batch " b; bad++ }
        }
        exit bad > 0
    }' "$H_DIR/arrivals.log" || h_fail "baton-bench-arrivals's lines are wrong"
h_stop arrivals
h_stop only1
awk '$1 == "a" { n[$3]++ } END { exit !(n[1] > 0 && length(n) == 1) }' "$H_DIR/only1.log" ||
    h_fail "baton-bench-arrivals --only 1 logged other partitions, or none"

# --- baton-bench-plain --member: the throughput benchmark's group baseline ----
# One of three consumers splitting the partitions (p % 3 == 1) writes
# partition 1's 100 records and nothing of the others'.
for m in 3/3 x/3 1/0 1 /3; do
    rc=0
    timeout 10 "$BATON_BIN/baton-bench-plain" --brokers "$BOOTSTRAP" --topic in --partitions "$PARTS" \
        --sink "$H_DIR/plain-bad.db" --count 1 --member "$m" >/dev/null 2>&1 || rc=$?
    ((rc == 2)) || h_fail "baton-bench-plain --member $m: exit $rc, want 2"
done
timeout 30 "$BATON_BIN/baton-bench-plain" --brokers "$BOOTSTRAP" --topic in --partitions "$PARTS" \
    --sink "$H_DIR/plain.db" --count $((COUNT / PARTS)) --member 1/3 2>"$H_DIR/plain.err" ||
    h_fail "baton-bench-plain --member 1/3 failed: $(tail -n 3 "$H_DIR/plain.err")"
got=$(sqlite3 "$H_DIR/plain.db" "SELECT group_concat(partition || ':' || n) FROM (SELECT partition, count(*) AS n FROM baton_output GROUP BY partition)")
[[ $got == "1:$((COUNT / PARTS))" ]] || h_fail "baton-bench-plain --member 1/3 wrote '$got', want '1:$((COUNT / PARTS))'"

# --- bench_input_ms: known answers --------------------------------------------
# Partition 0 moves from epoch 1 to 2 after T0=10000000 with its old owner's
# last next_offset 10; partition 1 from epoch 1 to 3 with 20.
W=$H_DIR/watch.txt A=$H_DIR/arr.txt
cat >"$W" <<'EOF'
w 9900000 0 1 10
w 9900000 1 1 20
w 10004000 0 2 10
w 10006000 0 2 14
w 10005000 1 3 20
w 10012000 1 3 22
EOF
# Record 10 of partition 0 arrived before T0 (held, unwritten): input 0,
# written 6 ms after. Record 20 of partition 1 arrived 9 ms after T0 and
# was written 3 ms later.
cat >"$A" <<'EOF'
a 9990000 0 12
a 9995000 1 19
a 10009000 1 21
EOF
got=$(bench_input_ms "$W" "$A" 10000000 11000000 "0 1")
[[ $got == "9 6" ]] || h_fail "bench_input_ms: '$got', want '9 6'"
got=$(bench_input_ms "$W" "$A" 10000000 11000000 "0")
[[ $got == "0 6" ]] || h_fail "bench_input_ms (partition 0): '$got', want '0 6'"
# A record from an earlier run (appended to the same log, seconds before)
# does not count as arrived.
printf 'a 1000 1 25\n' | cat - "$A" >"$A.old"
got=$(bench_input_ms "$W" "$A.old" 10000000 11000000 "1")
[[ $got == "9 3" ]] || h_fail "bench_input_ms (an earlier run's line): '$got', want '9 3'"
# Never seen arriving, or never written: no answer.
got=$(bench_input_ms "$W" /dev/null 10000000 11000000 "0")
[[ $got == "- -" ]] || h_fail "bench_input_ms (nothing arrived): '$got', want '- -'"
got=$(bench_input_ms "$W" "$A" 10000000 10005500 "0")
[[ $got == "- -" ]] || h_fail "bench_input_ms (not written by the end): '$got', want '- -'"

# --- bench_stall_trace: known answers -----------------------------------------
# Partition 0: epoch 5 writes at 1.000 s and 1.090 s (a 90 ms same-writer
# gap, ended by next_offset 30), then epoch 7 at 1.150 s (a 60 ms handoff
# gap, next_offset 33). Partition 1: a 20 ms gap; an epoch change alone
# (its fence, next_offset unchanged) is no write. The workers' debug lines
# say how long each gap's first record was held and how old it was.
cat >"$W" <<'EOF'
w 1000000 0 5 25
w 1000000 1 5 40
w 1020000 1 5 41
w 1090000 0 5 30
w 1100000 0 7 30
w 1150000 0 7 33
EOF
L1=$H_DIR/m1.log L2=$H_DIR/m2.log
cat >"$L1" <<'EOF'
ts=2026-12-07T00:00:01.090Z level=debug proc=baton-worker id=m1 event=batch partition=0 epoch=5 records=5 applied=5 next_offset=30 commit_us=900 taken_ms=12 created_ms=104
ts=2026-12-07T00:00:01.091Z level=debug proc=baton-worker id=m1 event=batch partition=10 epoch=5 records=5 applied=5 next_offset=30 commit_us=900 taken_ms=1 created_ms=2
EOF
cat >"$L2" <<'EOF'
ts=2026-12-07T00:00:01.150Z level=debug proc=baton-worker id=m2 event=batch partition=0 epoch=7 records=3 applied=3 next_offset=33 commit_us=800 taken_ms=3 created_ms=70
EOF
got=$(bench_stall_trace "$W" 1010000 2000000 same "$L1" "$L2")
[[ $got == "90 0 12 104" ]] || h_fail "bench_stall_trace (same): '$got', want '90 0 12 104'"
got=$(bench_stall_trace "$W" 1010000 2000000 handoff "$L1" "$L2")
[[ $got == "60 0 3 70" ]] || h_fail "bench_stall_trace (handoff): '$got', want '60 0 3 70'"
# A gap ending before T0 does not count; a log not at debug gives no split.
got=$(bench_stall_trace "$W" 1095000 2000000 same "$L1" "$L2")
[[ $got == "- - - -" ]] || h_fail "bench_stall_trace (none after T0): '$got', want '- - - -'"
# As the rolling benchmark reads it (under set -e, in a process
# substitution, where a failed grep would end the read).
read -r g tp held age < <(bench_stall_trace "$W" 1010000 2000000 same /dev/null)
[[ "$g $tp $held $age" == "90 0 - -" ]] || h_fail "bench_stall_trace (no debug line): '$g $tp $held $age', want '90 0 - -'"

# --- bench_steady_rps: the rate from 20% to 80% of N -------------------------
# Two partitions, N=1000: the total reaches 200 at 1.0 s and 800 at 2.0 s
# (a start-up before, a slow tail after): 600 records in 1 s.
cat >"$W" <<'EOF'
w 500000 0 1 10
w 1000000 0 1 100
w 1000000 1 1 100
w 1500000 1 1 300
w 2000000 0 1 500
w 9000000 1 1 500
EOF
got=$(bench_steady_rps "$W" 1000)
[[ $got == 600 ]] || h_fail "bench_steady_rps: '$got', want 600"
got=$(bench_steady_rps "$W" 100000)
[[ $got == 0 ]] || h_fail "bench_steady_rps (never at 80%): '$got', want 0"

# --- bench_follow: a line appended from now on, without polling ---------------
# A log with the first incarnation's acquired line already in it (not
# seen: the follow starts at the end) and a debug-sized tail after it.
LOG=$H_DIR/worker.log
{
    echo "=== 00:00:00.000 spawn m1: baton-worker"
    echo "ts=2026-12-07T00:00:01.000Z level=info proc=baton-worker id=m1 event=acquired partition=3 epoch=7 generation=1"
    for ((i = 0; i < 3000; i++)); do echo "ts=2026-12-07T00:00:02.000Z level=debug proc=baton-worker id=m1 event=batch partition=3 epoch=7 records=1 applied=1 next_offset=$i"; done
} >"$LOG"
# no_followers: none of the follows' tails on LOG is left.
no_followers() { ! pgrep -f -- "-F -- $LOG" >/dev/null; }
bench_follow "$LOG" ' event=acquired ' 2
t0=${EPOCHREALTIME/./}
bench_follow_wait && h_fail "bench_follow: an acquired line from before the follow was taken"
waited=$(((${EPOCHREALTIME/./} - t0) / 1000))
((waited >= 1500 && waited < 5000)) || h_fail "bench_follow: gave up after $waited ms, want its 2 s"
# The second incarnation: a non-matching burst (past a pipe's buffer), then
# its acquired line, written by another process while the follow waits.
bench_follow "$LOG" ' event=acquired ' 20
(
    sleep 0.3
    echo "=== 00:00:03.000 spawn m1: baton-worker"
    for ((i = 0; i < 3000; i++)); do echo "ts=2026-12-07T00:00:04.000Z level=debug proc=baton-worker id=m1 event=member_state partition=$i from=idle to=wanted reason=assignment"; done
    echo "ts=2026-12-07T00:00:05.000Z level=info proc=baton-worker id=m1 event=acquired partition=4 epoch=9 generation=2"
) >>"$LOG" &
writer=$!
t0=${EPOCHREALTIME/./}
bench_follow_wait || h_fail "bench_follow: the second incarnation's acquired line was missed"
[[ $BENCH_FOLLOW_LINE == *" event=acquired partition=4 epoch=9 "* ]] ||
    h_fail "bench_follow: took '$BENCH_FOLLOW_LINE', want the second incarnation's acquired line"
waited=$(((${EPOCHREALTIME/./} - t0) / 1000))
((waited < 10000)) || h_fail "bench_follow: saw the line only after $waited ms"
wait "$writer"
# Its tail and grep are gone (a Kafka member's watcher line, the other use,
# is matched by the same ERE kind: field 4 the member number).
h_wait_for 5 "the follows' tail processes stopped" no_followers
W2=$H_DIR/watch2.log
printf 'w 1000 0 3 10\n' >"$W2"
bench_follow "$W2" "^w [0-9]+ [0-9]+ 4 " 2
(sleep 0.5; printf 'w 1500 1 14 10\nw 1501 2 3 4\n' >>"$W2") &
writer=$!
bench_follow_wait && h_fail "bench_follow: took '$BENCH_FOLLOW_LINE' for member 4's write"
wait "$writer"
# A line written at once, before tail has opened the file, is not lost:
# the follow starts from the file's size when bench_follow was called.
bench_follow "$W2" "^w [0-9]+ [0-9]+ 7 " 10
printf 'w 1600 0 7 1\n' >>"$W2"
bench_follow_wait || h_fail "bench_follow: a line written at once after it began was missed"
bench_follow "$W2" "^w [0-9]+ [0-9]+ 4 " 20
(sleep 0.2; printf 'w 2000 1 14 11\nw 2001 2 4 12\n' >>"$W2") &
writer=$!
bench_follow_wait || h_fail "bench_follow: member 4's write was missed"
[[ $BENCH_FOLLOW_LINE == "w 2001 2 4 12" ]] || h_fail "bench_follow: took '$BENCH_FOLLOW_LINE' for member 4's write"
wait "$writer"

h_pass
