#!/usr/bin/env bash
# it_pg_graceful: it_graceful against the PostgreSQL sink, plus the way
# back. Under continuous input, SIGTERM on w1 is a graceful leave: it
# flushes its last batch to PostgreSQL before releasing each claim, exits 0,
# and w2 takes its partitions at once (no session-timeout wait) under higher
# epochs, while w2's own partitions never change epoch. Then w1 rejoins and
# the rebalance moves partitions back from w2 the same way (flush, then
# release), under higher epochs again. Every record lands exactly once, the
# epochs never go down along a partition's offsets, and each fence row holds
# its current owner's epoch (verify_sink and the checks below).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/pg.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_pg_graceful
h_zk_start
pg_start
pg_use_sink
B_PARTITIONS=6
# A long session timeout: a handoff that waited for expiry would show.
B_SESSION_MS=8000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
b_worker w1
b_worker w2
h_wait_for 20 "w1 and w2 share the partitions" b_all_active 2
w1_parts=$(b_partitions_of w1)
w2_parts=$(b_partitions_of w2)
epochs0=$(b_status | jq -c '[.partitions[] | {key: (.partition | tostring), value: .epoch}] | from_entries')

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 5000 --rate 1000
h_wait_for 10 "records flowing" b_sink_has 300

# 1. w1 leaves gracefully: w2 owns everything well before a session expiry.
h_kill w1 TERM
h_wait_for 6 "w2 owns everything" b_all_active 1
rc=0; h_wait_exit w1 10 || rc=$?
((rc == 0)) || h_fail "w1 exited $rc on SIGTERM"
for p in $w1_parts; do
    b_log_has w1 "event=revoked partition=$p .*reason=leave" || h_fail "w1 did not revoke $p on leave"
    b_log_has w1 "event=released partition=$p " || h_fail "w1 revoked $p without releasing its claim"
done
epochs1=$(b_status | jq -c '[.partitions[] | {key: (.partition | tostring), value: .epoch}] | from_entries')
for p in $w1_parts; do
    jq -e -n --argjson a "$epochs0" --argjson b "$epochs1" --arg p "$p" '$b[$p] > $a[$p]' >/dev/null ||
        h_fail "partition $p moved to w2 without a higher epoch ($epochs0 -> $epochs1)"
done
for p in $w2_parts; do
    jq -e -n --argjson a "$epochs0" --argjson b "$epochs1" --arg p "$p" '$b[$p] == $a[$p]' >/dev/null ||
        h_fail "partition $p stayed with w2 but its epoch changed ($epochs0 -> $epochs1)"
done
h_log "w1 left gracefully; its partitions ($w1_parts) moved to w2 under higher epochs"

# 2. w1 (a new process, a new session) rejoins: partitions move back.
b_worker w1
h_wait_for 20 "w1 and w2 share the partitions again" b_all_active 2
back=$(b_partitions_of w1)
[[ -n $back ]] || h_fail "nothing moved back to w1"
for p in $back; do
    b_log_has w2 "event=revoked partition=$p .*reason=revoked" || h_fail "w2 did not revoke $p for the rebalance"
done
epochs2=$(b_status | jq -c '[.partitions[] | {key: (.partition | tostring), value: .epoch}] | from_entries')
for p in $back; do
    jq -e -n --argjson a "$epochs1" --argjson b "$epochs2" --arg p "$p" '$b[$p] > $a[$p]' >/dev/null ||
        h_fail "partition $p moved back to w1 without a higher epoch ($epochs1 -> $epochs2)"
done
h_log "w1 rejoined; partitions $back moved back under higher epochs"

rc=0; h_wait_exit producer 30 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 30 "all 5000 records in the sink" b_sink_has 5000
# Each fence row holds its current owner's epoch.
fences=$(b_sql "SELECT json_object_agg(partition::text, epoch) FROM baton_fence WHERE grp='$B_GROUP'")
jq -e -n --argjson f "$fences" --argjson s "$epochs2" '$f == $s' >/dev/null ||
    h_fail "the fence rows' epochs $fences are not the owners' $epochs2"
# w2's untouched partitions were written under one epoch all along.
for p in $w2_parts; do
    [[ " $back " == *" $p "* ]] && continue
    n=$(b_sql "SELECT count(DISTINCT epoch) FROM baton_output WHERE grp='$B_GROUP' AND partition=$p")
    ((n == 1)) || h_fail "partition $p stayed with w2 but was written under $n epochs"
done
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$PG_URI" "$B_GROUP" || h_fail "sink verification failed"
h_pass "graceful handoffs on PostgreSQL (leave, then rebalance back): epochs rose, exactly once"
