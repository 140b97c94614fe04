#!/usr/bin/env bash
# it_graceful: SIGTERM is a graceful leave under continuous input: the
# leaver flushes its last batch before releasing each claim, exits 0, its
# partitions reach their new owner at once (no session timeout wait), the
# other partitions never stop, and every record lands exactly once. w2,
# the published standby of all of w1's partitions, takes them over by
# itself (the coordinator's action=standbys_take_over), and the publish
# after it moves just those. w1
# logs at debug: each partition it held went through the named states
# (event=partition_state) none -> fencing -> fenced -> active -> releasing
# -> none, and its member library's states for them (event=member_state)
# idle -> wanted -> queued -> owned, then on the leave owned -> queued ->
# wanted; no transition was unexpected in either.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_graceful
h_zk_start
B_PARTITIONS=6
# A long session timeout: a handoff that waited for expiry would show.
B_SESSION_MS=8000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1 --log-level debug
b_worker w2
h_wait_for 20 "w1 and w2 share the partitions" b_all_active 2
w2_parts=$(b_partitions_of w2)
w1_parts=$(b_partitions_of w1)
[[ -n $w1_parts ]] || h_fail "w1 owns no partition"

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 3000 --rate 1000
h_wait_for 10 "records flowing" b_sink_has 300
# Every partition written at least once, so w1's are active (not just fenced).
all_written() { (($(b_sql "SELECT count(DISTINCT partition) FROM baton_output WHERE grp='$B_GROUP'") == B_PARTITIONS)); }
h_wait_for 10 "every partition written" all_written
t0=$(_h_now_ms)
h_kill w1 TERM
h_wait_for 5 "w2 owns everything" b_all_active 1
took=$(($(_h_now_ms) - t0))
((took < B_SESSION_MS)) || h_fail "handoff took ${took} ms: it waited for session expiry"
rc=0; h_wait_exit w1 10 || rc=$?
((rc == 0)) || h_fail "w1 exited $rc on SIGTERM"
# w2 is the published standby of every partition of w1: the coordinator
# leaves the handoff to it and rebalances after --leave-hold-ms (50), and that
# publish moves w1's partitions to w2 and nothing else.
b_log_has c1 "event=leave_marked worker=w1 action=standbys_take_over" ||
    h_fail "the coordinator did not leave w1's partitions to their standby: $(grep 'event=leave_marked' "$H_DIR/c1.log")"
pub=$(awk '/event=leave_marked worker=w1/ { f = 1 } f && /event=published / { print; exit }' "$H_DIR/c1.log")
[[ $pub == *" moved=$(wc -w <<<"$w1_parts") "* ]] ||
    h_fail "the publish after w1's leave did not move exactly its $(wc -w <<<"$w1_parts") partitions: $pub"
# w1 released each claim after flushing: the new owner starts exactly there.
for p in $(seq 0 $((B_PARTITIONS - 1))); do
    if b_log_has w1 "event=revoked partition=$p "; then
        b_log_has w1 "event=released partition=$p " || h_fail "w1 revoked $p without releasing its claim"
    fi
done
life='(none>fencing:acquired fencing|prefetching>fencing_prefetched:acquired fencing_prefetched)'
life+='>fenced:fenced fenced>active:first_write active>releasing:leave releasing>none:released $'
mlife='^idle>wanted:assignment wanted>queued:claimed queued>owned:acquired '
mlife+='owned>queued:leaving queued>wanted:left (wanted>idle:assignment )?$'
for p in $w1_parts; do
    got=$(b_part_states w1 "$p")
    [[ $got =~ $life ]] || h_fail "partition $p: w1 logged the states '$got'"
    got=$(b_member_states w1 "partition=$p")
    [[ $got =~ $mlife ]] || h_fail "partition $p: w1's membership logged the states '$got'"
done
for w in w1 w2; do
    ! b_log_has $w "event=partition_state_unexpected" || h_fail "$w: an unexpected partition state"
    ! b_log_has $w "event=member_state_unexpected" || h_fail "$w: an unexpected member state"
done
rc=0; h_wait_exit producer 30 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 20 "all 3000 records in the sink" b_sink_has 3000
# Partitions w2 held all along kept their first epoch: they never paused.
for p in $w2_parts; do
    n=$(b_sql "SELECT count(DISTINCT epoch) FROM baton_output WHERE grp='g' AND partition=$p")
    ((n == 1)) || h_fail "partition $p stayed with w2 but was written under $n epochs"
done
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "graceful handoff in ${took} ms (session timeout ${B_SESSION_MS} ms); exactly once"
