#!/usr/bin/env bash
# it_standby_prefetch: a named standby fetches its standby partitions ahead
# all along (--standby-prefetch on; off by default), within its memory bound,
# and uses what it holds after its fence -- never before it:
#   1. w2 stands by for w1's partition q and fetches it (none>prefetching,
#      reason standby). w1 is frozen (SIGSTOP) while 10 large records go to
#      q: w2 holds them up to its 2,048-byte bound, then pauses
#      (event=standby_prefetch_full, held_bytes within the bound). w1
#      wakes and writes them: w2 drops what it held and fetches on from
#      w1's next_offset (event=standby_prefetch_resumed); w1 is frozen
#      again over 10 more records, which w2 holds up to its bound.
#   2. w1 is evicted: w2 takes q, fences it at w1's next_offset, writes the
#      first --batch-size (4) of what it held in the fence's transaction
#      (event=prefetch_used, used > 4, written_with_fence = 4), the rest
#      of it after, and fetches the rest from
#      where its bound stopped it: q's offsets 0-29 exactly once, 20-29
#      under w2's epoch, above w1's.
#   3. The fence ahead of what a standby fetched: w3 stands by for w2's
#      partition s; w2 is frozen with records unwritten (w3 stops at its
#      bound over all partitions, 1,024 bytes), evicted, and w3
#      stops before its fence (failpoint); the operator moves s's
#      next_offset past everything produced so far. w3's fence discards what
#      it held (event=prefetch_discarded reason=fence_ahead) and reads from
#      the fence's next_offset: the skipped offsets stay unwritten, every
#      later one is written once, under w3's epoch.
# (it_prefetch covers a fence behind what was fetched ahead: the same code.)
# Bad values of the three settings are usage errors naming the flag.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_standby_prefetch
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1 --session-timeout-ms 20000 --standby-prefetch on
h_wait_for 15 "w1 owns both partitions" b_all_active 1
b_produce 20 a
h_wait_for 15 "20 records in the sink" b_sink_has 20
next_of() { b_sql "SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=$1"; }
next_is() { [[ $(next_of "$1") == "$2" ]]; }
# standby_fetching W P: W fetches partition P ahead as its standby.
standby_fetching() {
    h_wait_for 15 "$1 fetches partition $2 ahead as its standby" \
        b_log_has "$1" "event=partition_state partition=$2 from=none to=prefetching reason=standby"
}
offsets_of() { b_sql "SELECT group_concat(offset) FROM (SELECT offset FROM baton_output WHERE grp='$B_GROUP' AND partition=$1 ORDER BY offset)"; }

# Bad settings are usage errors (exit 2) that say what is wrong.
for bad in "--standby-prefetch maybe" "--standby-prefetch-bytes 10" "--standby-prefetch-total-bytes x"; do
    rc=0
    # shellcheck disable=SC2086
    "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id wbad --brokers "$BOOTSTRAP" \
        --sink "sqlite:$B_SINK" $bad >"$H_DIR/bad.out" 2>&1 || rc=$?
    ((rc == 2)) || h_fail "'$bad' should exit 2, got $rc: $(cat "$H_DIR/bad.out")"
    grep -q -- "${bad%% *}: " "$H_DIR/bad.out" || h_fail "'$bad': unclear error: $(cat "$H_DIR/bad.out")"
done

# --- 1. a standby fetches ahead, within its bound ---------------------------
b_worker w2 --log-level debug --session-timeout-ms 20000 --standby-prefetch on --standby-prefetch-bytes 2048 \
    --batch-size 4
h_wait_for 20 "w1 and w2 own a partition each" b_all_active 2
q=$(b_partitions_of w1)
p=$(b_partitions_of w2)
[[ $q =~ ^[01]$ && $p =~ ^[01]$ ]] || h_fail "w1 owns '$q', w2 owns '$p'"
standby_fetching w2 "$q"
b_log_has w2 'event=standby_prefetch partitions=1' || h_fail "no event=standby_prefetch in w2's log"
# bound_held W P FIELD MAX [N]: W paused partition P at a bound (for the
# Nth time, default 1), holding FIELD (held_bytes: P's, total_bytes: all
# partitions') between 1 and MAX.
bound_held() {
    local n=${5:-1} full v
    h_wait_for 15 "$1 reached its bound on partition $2 ($n)" bash -c "(( \$(grep -cE 'event=standby_prefetch_full partition=$2 ' '$H_DIR/$1.log') >= $n ))"
    full=$(grep -E "event=standby_prefetch_full partition=$2 " "$H_DIR/$1.log" | sed -n "${n}p")
    v=$(sed -E "s/.* $3=([0-9]+).*/\\1/" <<<"$full")
    ((v > 0 && v <= $4)) || h_fail "$1 held $3=$v, bound $4: $full"
}
big=$(printf 'x%.0s' $(seq 1 300))
h_kill w1 STOP
# 10 records of about 300 bytes each to each partition (offsets 10-19).
b_produce 20 "$big"
bound_held w2 "$q" held_bytes 2048
# The owner wakes and writes past what w2 held: w2 drops it and fetches on
# from the owner's next_offset.
h_kill w1 CONT
h_wait_for 15 "w1 wrote partition $q through offset 19" next_is "$q" 20
h_wait_for 15 "w2 resumed partition $q at offset 20" b_log_has w2 "event=standby_prefetch_resumed partition=$q from=20 "
# Frozen again, with offsets 20-29 to come.
h_kill w1 STOP
b_produce 20 "$big"
bound_held w2 "$q" held_bytes 2048 2
h_wait_for 15 "w2 wrote its own partition $p through offset 29" next_is "$p" 30
[[ $(next_of "$q") == 20 ]] || h_fail "partition $q moved on with its owner frozen: $(next_of "$q")"
! b_log_has w2 "event=prefetch_used partition=$q " || h_fail "w2 used what it held before owning partition $q"

# --- 2. the owner goes: the standby writes what it held, after its fence -----
e1=$(b_epoch "$q")
b_ctl evict w1 >/dev/null || h_fail "evict w1 failed"
h_wait_for 20 "w2 wrote partition $q through offset 29" next_is "$q" 30
used=$(grep -E "event=prefetch_used partition=$q " "$H_DIR/w2.log" | head -1)
[[ $used =~ used=([0-9]+) ]] && ((BASH_REMATCH[1] > 0)) || h_fail "w2 did not use what it held: '$used'"
[[ $used == *" next_offset=20"* ]] || h_fail "w2 was fenced elsewhere than 20: '$used'"
# The first --batch-size (4) of the held records went in with the fence,
# in its transaction (copy); the rest (w2 holds 6 of about 300 bytes within
# 2,048) through the ordinary writes after it.
[[ $used =~ used=([0-9]+).*written_with_fence=([0-9]+) ]] && ((BASH_REMATCH[1] > 4 && BASH_REMATCH[2] == 4)) ||
    h_fail "w2 did not write its first 4 held records with its fence, the rest after: '$used'"
e2=$(b_epoch "$q")
((e2 > e1)) || h_fail "epoch $e2 is not above w1's $e1"
[[ $(offsets_of "$q") == "$(seq -s, 0 29)" ]] || h_fail "partition $q: offsets $(offsets_of "$q")"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$q AND offset >= 20 AND epoch = $e2") == 10 ]] ||
    h_fail "offsets 20-29 of partition $q must be w2's (epoch $e2)"
states='none>prefetching:standby prefetching>fencing_prefetched:acquired fencing_prefetched>fenced:fenced fenced>active:first_write '
[[ $(b_part_states w2 "$q") == "$states"* ]] || h_fail "partition $q: w2 logged the states '$(b_part_states w2 "$q")'"
h_kill w1 CONT
rc=0
h_wait_exit w1 15 || rc=$?
((rc == 1)) || h_fail "an evicted w1 should exit 1, got $rc"

# --- 3. a fence ahead of what the standby fetched ----------------------------
# w3's first fence (the partition it is given on joining) passes; the second
# (taking w2's other partition as its standby) stops it.
BATON_LOG_LEVEL=debug BATON_FAILPOINTS="worker.before_fence=1:stop" b_worker w3 --session-timeout-ms 20000 \
    --standby-prefetch on --standby-prefetch-total-bytes 1024
h_wait_for 20 "w2 and w3 own a partition each" b_all_active 2
s=$(b_partitions_of w2)
r=$(b_partitions_of w3)
[[ $s =~ ^[01]$ && $r =~ ^[01]$ ]] || h_fail "w2 owns '$s', w3 owns '$r'"
standby_fetching w3 "$s"
h_kill w2 STOP
b_produce 20 "$big" # offsets 30-39: past w3's bound over all its standby partitions
bound_held w3 "$s" total_bytes 1024
h_wait_for 15 "w3 wrote its partition $r through offset 39" next_is "$r" 40
[[ $(next_of "$s") == 30 ]] || h_fail "partition $s moved on with its owner frozen: $(next_of "$s")"
# While the owner is frozen the record that did not fit still does not: w3
# does not fetch it again (and drop it) at each trim (every 250 ms). The
# window for a wrong resume is at least this second (four trims).
sleep 1
! b_log_has w3 "event=standby_prefetch_resumed partition=$s " ||
    h_fail "w3 resumed partition $s with no room for the record that did not fit: $(grep -c "standby_prefetch_full partition=$s " "$H_DIR/w3.log") bound hits"
b_ctl evict w2 >/dev/null || h_fail "evict w2 failed"
h_wait_for 15 "w3 stopped before the fence of partition $s" \
    h_at_failpoint w3 worker.before_fence
# The operator skips offsets 30-41 of partition s (past all that was produced).
b_sql "UPDATE baton_fence SET next_offset = 42 WHERE grp='$B_GROUP' AND partition=$s"
b_produce 20 d # offsets 40-49
h_kill w3 CONT
h_wait_for 20 "w3 wrote partition $s through offset 49" next_is "$s" 50
b_log_has w3 "event=prefetch_discarded partition=$s from=30 next_offset=42 .*reason=fence_ahead" ||
    h_fail "w3 should have discarded what it fetched from 30: $(grep -E 'prefetch|fenced' "$H_DIR/w3.log")"
e3=$(b_epoch "$s")
[[ $(offsets_of "$s") == "$(seq -s, 0 29),$(seq -s, 42 49)" ]] || h_fail "partition $s: offsets $(offsets_of "$s")"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$s AND offset >= 42 AND epoch = $e3") == 8 ]] ||
    h_fail "offsets 42-49 of partition $s must be w3's (epoch $e3)"
[[ $(offsets_of "$r") == "$(seq -s, 0 49)" ]] || h_fail "partition $r: offsets $(offsets_of "$r")"
for w in w2 w3; do
    ! b_log_has $w "event=partition_state_unexpected" || h_fail "$w: an unexpected partition state"
done
h_kill w2 CONT
h_pass "a standby fetches ahead within its bound, writes what it held after its fence, and follows a fence ahead"
