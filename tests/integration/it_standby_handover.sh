#!/usr/bin/env bash
# it_standby_handover: with standby.prefetch and standby.notice on, a
# graceful leaver whose standbys subscribed to its release notices hands
# over what it read and has not written instead of writing it; its
# successors write it (docs/design.md, "Handing over the unwritten tail").
# w1 runs with a 60 s linger: past the first batch of each partition it
# owns (written at once, as every new owner's is), it writes nothing on
# its own, so at SIGTERM it holds every later record of its partitions
# unwritten.
#   1. Alone (no subscriber): w1 logs handover=0 and writes what it holds
#      under its own epochs before it goes.
#   2. Hot successor: w1 and w2 both hot, each subscribed to the other's
#      notices. w1 logs handover=1, hands over exactly what it held
#      (revoked ... handed_over, records_handed_over at exit), exits 0;
#      w2 writes those records in its fences' transaction
#      (prefetch_used ... written_with_fence > 0), under its own epochs.
#   3. Cold successor: w2 without prefetch (notices on) subscribes and
#      tells w1 it holds nothing ahead (HLD, notice_holds resources=0).
#      w1 logs handover=0 and writes its own tail under its own epochs.
#   4. The standby left: w1 back (hot), w2 subscribed to it, then w2 leaves
#      gracefully and tells w1 to forget it (UNS, notice_unsubscribed).
#      w1, alone again, logs handover=0 and writes its own tail.
#   5. The standby crashed: w2 (hot, subscribed) is SIGKILLed. Once its
#      session ends and its member node goes, w1 forgets it
#      (notice_subscriber_gone) and, alone, writes its own tail again.
#   6. The standby dropped from the list: w2 (hot, subscribed) is drained,
#      so the coordinator no longer names it standby for w1; w2 tells w1 to
#      forget it (UNS, notice_unsubscribe ... reason=not_standby), and w1,
#      alone, writes its own tail again.
#   7. One hot standby, one cold: w1, w2 (hot) and w3 (notices on, no
#      prefetch) share the partitions, w1 owning two, one with standby w2
#      and one with w3. w1 hands over per partition: the one w2 holds
#      (revoked ... handover=1, written at w2's epoch with its fence), and
#      writes the one w3 stands by for itself (handover=0, at w1's epoch).
#      Once w1 is gone, w2 stands by for both of w3's partitions, and
#      tells w3 so again (notice_holds_sent).
# Every record once throughout (verify_sink).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_standby_handover
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1

HOT=(--standby-claim ahead --standby-prefetch on --standby-notice 127.0.0.1:0 --log-level debug)
# stopped_ok NAME [WHO]: SIGTERMs NAME and checks it exited 0.
stopped_ok() {
    local rc=0
    h_kill "$1" TERM
    h_wait_exit "$1" 15 || rc=$?
    ((rc == 0)) || h_fail "${2:-$1} exited $rc on SIGTERM"
}
MPORT=$(h_free_port)
# start_w1: hot, with a linger nothing reaches (it writes only when it
# lets go), and /metrics for its buffered records.
start_w1() { b_worker w1 "${HOT[@]}" --linger-ms 60000 --metrics-addr "127.0.0.1:$MPORT"; }
buffered() { b_counter "127.0.0.1:$MPORT" baton_worker_records_buffered; }
# primed N: one record into each partition (a new owner writes its first
# batch at once), until the sink holds N.
primed() {
    b_produce $B_PARTITIONS "$2"
    h_wait_for 20 "every partition's first batch written" b_sink_has "$1"
}
# held_all N: the sink's rows and w1's unwritten records make N, some of
# them w1's.
held_all() {
    local b
    b=$(buffered)
    ((b > 0 && $(b_sink_count) + b == $1))
}
# subscribed O S FROM: owner O heard standby S subscribe, after line FROM
# of O's log (a restarted process appends to the same log).
subscribed() { tail -n +"$3" "$H_DIR/$1.log" | grep -E "event=notice_subscriber id=$2 " >/dev/null; }
# w1_leaves FROM: SIGTERMs w1 (its log from line FROM) and checks it left
# cleanly; sets HELD (records it held unwritten) and NEXT[p] (the sink's
# next_offset it left each of its partitions at) and W1_PARTS.
declare -A NEXT=() GAVE=()
w1_leaves() {
    local from=$1 line p
    W1_PARTS=$(b_partitions_of w1)
    [[ -n $W1_PARTS ]] || h_fail "w1 owns nothing"
    HELD=$(buffered)
    stopped_ok w1
    NEXT=() GAVE=()
    for p in $W1_PARTS; do
        line=$(tail -n +"$from" "$H_DIR/w1.log" | grep -E "event=revoked partition=$p " | tail -n 1)
        [[ $line =~ next_offset=([0-9]+) ]] || h_fail "w1 logged no revoke of partition $p"
        NEXT[$p]=${BASH_REMATCH[1]}
        GAVE[$p]=0
        if [[ $line =~ handed_over=([0-9]+) ]]; then GAVE[$p]=${BASH_REMATCH[1]}; fi
    done
}
# rows_at P FROM TO EPOCH: how many of P's offsets FROM..TO-1 the sink holds
# at EPOCH.
rows_at() {
    b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$1 AND offset >= $2 AND offset < $3 AND epoch=$4"
}
# left_alone FROM TOTAL WHO: w1, holding 12 records unwritten with nobody
# to hand them over to, leaves (its log from line FROM): handover=0, it
# hands over nothing, and the sink holds TOTAL records. Sets EP[p] (w1's
# epochs before it left).
declare -A EP=()
left_alone() {
    local p
    EP=()
    for ((p = 0; p < B_PARTITIONS; p++)); do EP[$p]=$(b_epoch $p); done
    w1_leaves "$1"
    tail -n +"$1" "$H_DIR/w1.log" | grep "event=stopping action=graceful_leave handover=0" >/dev/null ||
        h_fail "w1, $3, did not log handover=0"
    ((HELD == 12)) || h_fail "w1 held $HELD records, expected 12"
    for ((p = 0; p < B_PARTITIONS; p++)); do
        ((GAVE[$p] == 0)) || h_fail "w1, $3, handed over ${GAVE[$p]} records of partition $p"
    done
    (($(b_sink_count) == $2)) || h_fail "the sink holds $(b_sink_count) records once w1 left, not $2"
}
# handed_to_w2: every partition w1 handed records over from has them at
# w2's epoch, and they add up to HELD, which is not 0.
handed_to_w2() {
    local p e to n=0
    for p in $W1_PARTS; do
        ((GAVE[$p] > 0)) || continue
        n=$((n + GAVE[$p]))
        e=$(b_epoch "$p")
        to=$((NEXT[$p] + GAVE[$p]))
        (($(rows_at "$p" "${NEXT[$p]}" "$to" "$e") == GAVE[$p])) ||
            h_fail "partition $p: offsets ${NEXT[$p]}..$((to - 1)) (handed over) are not all w2's (epoch $e)"
    done
    ((n == HELD && n > 0)) || h_fail "w1 held $HELD records and handed over $n"
}

# --- 1. alone: nobody to hand over to -------------------------------------------
start_w1
h_wait_for 20 "w1 owns every partition" b_all_active 1
primed 4 p1
b_produce 12 a
h_wait_for 15 "w1 holds the 12 records unwritten" held_all 16
left_alone 1 16 alone
for ((p = 0; p < B_PARTITIONS; p++)); do
    (($(rows_at $p 0 "${NEXT[$p]}" "${EP[$p]}") == NEXT[$p])) ||
        h_fail "partition $p: not every row up to ${NEXT[$p]} is w1's (epoch ${EP[$p]})"
done

# --- 2. a hot successor ---------------------------------------------------------
from=$(($(wc -l <"$H_DIR/w1.log") + 1))
start_w1
W2PORT=$(h_free_port)
b_worker w2 "${HOT[@]}" --metrics-addr "127.0.0.1:$W2PORT"
h_wait_for 30 "w1 and w2 share the partitions, standbys queued" b_queued_ahead 2
h_wait_for 15 "w2 subscribed to w1's notices" subscribed w1 w2 "$from"
primed 20 p2
b_produce 40 b
h_wait_for 20 "w2's records written, w1's held" held_all 60
# w2 holds (at least) what w1 holds unwritten: it fetches w1's partitions
# ahead, and drops what w1 wrote (nothing since the primer).
w2_holds() { (($(b_counter "127.0.0.1:$W2PORT" baton_worker_standby_records_held) >= $(buffered))); }
h_wait_for 15 "w2 holds w1's unwritten records" w2_holds
w2lines=$(($(wc -l <"$H_DIR/w2.log") + 1))
w1_leaves "$from"
tail -n +"$from" "$H_DIR/w1.log" | grep "event=stopping action=graceful_leave handover=1" >/dev/null ||
    h_fail "w1 did not hand over (no handover=1)"
tail -n +"$from" "$H_DIR/w1.log" | grep -E "event=stopped .* records_handed_over=$HELD( |$)" >/dev/null ||
    h_fail "w1's exit line does not count $HELD records handed over"
h_wait_for 20 "all 60 records in the sink" b_sink_has 60
handed_to_w2
for p in $W1_PARTS; do
    ((GAVE[$p] > 0)) || continue
    tail -n +"$w2lines" "$H_DIR/w2.log" | grep -E "event=prefetch_used partition=$p .*written_with_fence=[1-9]" >/dev/null ||
        h_fail "w2 did not write partition $p's handed-over records with its fence"
done

# --- 3. a cold successor ----------------------------------------------------------
stopped_ok w2
from=$(($(wc -l <"$H_DIR/w1.log") + 1))
w2start=$(($(wc -l <"$H_DIR/w2.log") + 1))
b_worker w2 --standby-claim ahead --standby-notice 127.0.0.1:0 --log-level debug
start_w1
h_wait_for 30 "w1 and w2 share the partitions again, standbys queued" b_queued_ahead 2
h_wait_for 15 "w2 subscribed to w1's notices" subscribed w1 w2 "$from"
primed 64 p3
b_produce 40 c
h_wait_for 20 "w2's records written, w1's held" held_all 104
tail -n +"$from" "$H_DIR/w1.log" | grep "event=notice_holds id=w2 resources=0 items=0 " >/dev/null ||
    h_fail "the cold w2 did not tell w1 it holds nothing (notice_holds id=w2 resources=0)"
for ((p = 0; p < B_PARTITIONS; p++)); do EP[$p]=$(b_epoch $p); done
w1_leaves "$from"
tail -n +"$from" "$H_DIR/w1.log" | grep "event=stopping action=graceful_leave handover=0" >/dev/null ||
    h_fail "w1 handed over to a cold successor (no handover=0)"
h_wait_for 20 "all 104 records in the sink" b_sink_has 104
# The 10 records of each of its partitions after the primer (40 round-robin
# over 4), written by w1 under its own epoch.
for p in $W1_PARTS; do
    ((GAVE[$p] == 0)) || h_fail "w1 handed over ${GAVE[$p]} records of partition $p to a cold successor"
    (($(rows_at "$p" $((NEXT[$p] - 10)) "${NEXT[$p]}" "${EP[$p]}") == 10)) ||
        h_fail "partition $p: w1 did not write its 10-record tail (epoch ${EP[$p]}) up to ${NEXT[$p]}"
done

# --- 4. the standby left: w1 writes its own tail ------------------------------
# w2 hot again, so that only its UNS can leave w1 alone.
stopped_ok w2 "the cold w2"
w2start=$(($(wc -l <"$H_DIR/w2.log") + 1))
b_worker w2 "${HOT[@]}"
from=$(($(wc -l <"$H_DIR/w1.log") + 1))
start_w1
h_wait_for 30 "w1 and w2 share the partitions, standbys queued" b_queued_ahead 2
h_wait_for 15 "w2 subscribed to w1's notices" subscribed w1 w2 "$from"
holds_two() { tail -n +"$from" "$H_DIR/w1.log" | grep "event=notice_holds id=w2 resources=2 " >/dev/null; }
h_wait_for 15 "w2 told w1 it holds both w1's partitions" holds_two
stopped_ok w2
tail -n +"$w2start" "$H_DIR/w2.log" | grep -E "event=notice_unsubscribed_all owners=[1-9][0-9]* sent=[1-9]" >/dev/null ||
    h_fail "w2 did not tell the owner it stood by for to forget it"
h_wait_for 15 "w1 forgot w2" bash -c "tail -n +$from '$H_DIR/w1.log' | grep 'event=notice_unsubscribed id=w2 subscribers=0' >/dev/null"
h_wait_for 20 "w1 owns every partition" b_all_active 1
primed 108 p4
b_produce 12 d
h_wait_for 15 "w1 holds the 12 records unwritten" held_all 120
left_alone "$from" 120 "its standby gone"
for ((p = 0; p < B_PARTITIONS; p++)); do
    (($(rows_at $p 0 "${NEXT[$p]}" "${EP[$p]}") >= 3)) ||
        h_fail "partition $p: w1 did not write its last records (epoch ${EP[$p]}) before ${NEXT[$p]}"
done

# --- 5. the standby crashed: w1 forgets it once its node goes -------------------
from=$(($(wc -l <"$H_DIR/w1.log") + 1))
start_w1
b_worker w2 "${HOT[@]}"
h_wait_for 30 "w1 and w2 share the partitions, standbys queued" b_queued_ahead 2
h_wait_for 15 "w2 subscribed to w1's notices" subscribed w1 w2 "$from"
h_kill w2 KILL
h_wait_exit w2 15 >/dev/null 2>&1 || true
forgot_w2() { tail -n +"$from" "$H_DIR/w1.log" | grep 'event=notice_subscriber_gone id=w2 subscribers=0' >/dev/null; }
h_wait_for 30 "w1 forgot the crashed w2" forgot_w2
h_wait_for 30 "w1 owns every partition" b_all_active 1
primed 124 p5
b_produce 12 e
h_wait_for 15 "w1 holds the 12 records unwritten" held_all 136
left_alone "$from" 136 "its standby crashed"

# --- 6. the standby dropped from the list: w1 forgets it -------------------------
# w2 drained: the coordinator names no standby at a drained worker, so w2's
# new assignment drops w1 from its standby list, and w2 tells w1 (UNS).
from=$(($(wc -l <"$H_DIR/w1.log") + 1))
start_w1
b_worker w2 "${HOT[@]}"
h_wait_for 30 "w1 and w2 share the partitions, standbys queued" b_queued_ahead 2
h_wait_for 15 "w2 subscribed to w1's notices" subscribed w1 w2 "$from"
# The UNS and the forgetting are looked for from the drain on, not from a
# list change while w2 joined.
w1from=$(($(wc -l <"$H_DIR/w1.log") + 1))
w2from=$(($(wc -l <"$H_DIR/w2.log") + 1))
b_ctl drain w2 | grep "draining w2" >/dev/null || h_fail "batonctl drain did not confirm"
unsubscribed() { tail -n +"$w2from" "$H_DIR/w2.log" | grep 'event=notice_unsubscribe owner=w1 reason=not_standby' >/dev/null; }
h_wait_for 30 "w2 told w1 it no longer stands by for it" unsubscribed
forgot_drained() { tail -n +"$w1from" "$H_DIR/w1.log" | grep 'event=notice_unsubscribed id=w2 subscribers=0' >/dev/null; }
h_wait_for 15 "w1 forgot the drained w2" forgot_drained
w1_owns_all() { b_status | jq -e 'all(.partitions[]; .state == "active" and .owner == "w1")' >/dev/null; }
h_wait_for 30 "w1 owns every partition (w2 drained)" w1_owns_all
primed 140 p6
b_produce 12 f
h_wait_for 15 "w1 holds the 12 records unwritten" held_all 152
left_alone "$from" 152 "its standby drained"
stopped_ok w2 "the drained w2"
b_ctl undrain w2 >/dev/null || h_fail "batonctl undrain w2 failed"

# --- 7. one hot standby, one cold: w1 hands over per partition ------------------
# w1 first, owning all four: the two that join take one each from it.
from=$(($(wc -l <"$H_DIR/w1.log") + 1))
start_w1
h_wait_for 20 "w1 owns every partition" b_all_active 1
b_worker w2 "${HOT[@]}"
b_worker w3 --standby-claim ahead --standby-notice 127.0.0.1:0 --log-level debug
h_wait_for 30 "w1, w2 and w3 share the partitions, standbys queued" b_queued_ahead 3
# SB[p]: the standby of each of w1's partitions.
declare -A SB=()
split_standbys() {
    local s
    s=$(b_status) || return 1
    [[ $(jq -c '[.partitions[] | select(.owner == "w1") | .standby] | sort' <<<"$s") == '["w2","w3"]' ]] ||
        return 1
    SB=()
    while read -r p sb; do SB[$p]=$sb; done < <(jq -r '.partitions[] | select(.owner == "w1") | "\(.partition) \(.standby)"' <<<"$s")
}
h_wait_for 30 "w1 owns two partitions, one with standby w2, one with w3" split_standbys
holds_heard() {
    tail -n +"$from" "$H_DIR/w1.log" | grep "event=notice_holds id=w2 resources=1 " >/dev/null &&
        tail -n +"$from" "$H_DIR/w1.log" | grep "event=notice_holds id=w3 resources=0 " >/dev/null
}
h_wait_for 15 "w2 and w3 told w1 what they hold (one partition, none)" holds_heard
primed 156 p7
b_produce 40 g
h_wait_for 20 "w2's and w3's records written, w1's held" held_all 196
for p in "${!SB[@]}"; do EP[$p]=$(b_epoch "$p"); done
w1lines=$from
w1_leaves "$from"
tail -n +"$w1lines" "$H_DIR/w1.log" | grep "event=stopping action=graceful_leave handover=1 covered=1" >/dev/null ||
    h_fail "w1 did not hand over exactly one partition (handover=1 covered=1)"
h_wait_for 20 "all 196 records in the sink" b_sink_has 196
for p in $W1_PARTS; do
    line=$(tail -n +"$w1lines" "$H_DIR/w1.log" | grep -E "event=revoked partition=$p " | tail -n 1)
    if [[ ${SB[$p]} == w2 ]]; then
        if [[ $line != *" handover=1 "* ]] || ((GAVE[$p] == 0)); then
            h_fail "partition $p (standby w2, hot): not handed over: $line"
        fi
        e=$(b_epoch "$p")
        ((e > EP[$p])) || h_fail "partition $p: no new epoch after w1 left"
        (($(rows_at "$p" "${NEXT[$p]}" $((NEXT[$p] + GAVE[$p])) "$e") == GAVE[$p])) ||
            h_fail "partition $p: the ${GAVE[$p]} records handed over are not all at w2's epoch $e"
    else
        if [[ $line != *" handover=0 "* ]] || ((GAVE[$p] != 0)); then
            h_fail "partition $p (standby w3, cold): handed over: $line"
        fi
        (($(rows_at "$p" $((NEXT[$p] - 10)) "${NEXT[$p]}" "${EP[$p]}") == 10)) ||
            h_fail "partition $p: w1 did not write its 10-record tail (epoch ${EP[$p]}) up to ${NEXT[$p]}"
    fi
done
# w1 gone, w2 stands by for both of w3's partitions where it stood by for
# one: it told w3 again what it holds (SUB and HLD, notice_holds_sent).
w3_heard_two() { grep -q "event=notice_holds id=w2 resources=2 " "$H_DIR/w3.log"; }
h_wait_for 15 "w3 heard that w2 holds both its partitions now" w3_heard_two
grep -q "event=notice_holds_sent owner=w3 resources=2" "$H_DIR/w2.log" ||
    h_fail "w2 did not tell w3 again when what it stands by for of w3 changed"
for w in w2 w3; do
    stopped_ok $w
done

verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "a hot leaver handed its unwritten records over to a hot successor, per partition; to a cold one, alone, once its standby left, crashed or was dropped from the list, it wrote them"
