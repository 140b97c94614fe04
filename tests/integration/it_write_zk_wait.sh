#!/usr/bin/env bash
# it_write_zk_wait: a worker goes on writing the partitions it keeps while
# its membership waits for ZooKeeper (poll_hook in worker/worker.c).
# w1 reaches ZooKeeper through a proxy that delays every byte 600 ms each
# way, so each of its ZooKeeper round trips takes at least 1200 ms. Records
# flow into every partition. w2 joins: the coordinator moves half of w1's
# partitions to w2, and w1's poll waits for the new assignment, then for
# its claims' delete, each a round trip of 1200 ms or more. Before the
# hook, w1 wrote nothing during those waits: every partition it kept
# stalled at least 1200 ms. Now the longest gap between two of w1's writes
# to a partition it keeps, from w2's start until w2 owns its share, must
# stay under 900 ms (room for a loaded machine), w1 must report batches
# written inside ZooKeeper waits when it stops, and every record must land
# exactly once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
source "$BATON_SRC/tests/lib/net.sh"
h_init it_write_zk_wait
h_zk_start
B_PARTITIONS=4
DELAY_MS=600
GAP_MAX_MS=900
TOTAL=6000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
B_SESSION_MS=15000 b_coord c1
net_proxy_start w1-zk "$ZK"
BATON_LOG_LEVEL=debug h_spawn w1 "$BATON_BIN/baton-worker" --zk "${NET_ADDR[w1-zk]}" \
    --group "$B_GROUP" --id w1 --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK" \
    --session-timeout-ms 15000 --linger-ms 10
h_wait_for 20 "w1 owns everything" b_all_active 1
h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 300
h_wait_for 20 "records flowing" b_sink_has 300
net_delay w1-zk $DELAY_MS 0
sleep 1 # every reply in flight before the delay has arrived
t_join=$(_h_now_ms)
b_worker w2 --session-timeout-ms 15000
h_wait_for 30 "w2 owns its share" b_all_active 2
t_done=$(_h_now_ms)
kept=$(b_partitions_of w1)
[[ -n $kept ]] || h_fail "w1 kept no partition"
h_log "w2 joined at $t_join, owned its share at $t_done ($((t_done - t_join)) ms); w1 keeps: $kept"
((t_done - t_join >= 2 * DELAY_MS)) ||
    h_fail "the handoff took $((t_done - t_join)) ms: w1's ZooKeeper was not delayed"

# w1's writes (event=batch, debug) per partition, as epoch ms: for each
# partition w1 kept, the longest gap between two that overlaps [t_join,
# t_done] (the first write after t_done closes the last one; a partition
# not written since is open until t_done). A second for that write to come.
sleep 1
gaps=$(awk -v from="$t_join" -v to="$t_done" -v kept=" $kept " '
    /event=batch / {
        if (!match($0, /^ts=[^ ]+/)) next
        ts = substr($0, 4, RLENGTH - 3)          # 2026-12-03T23:40:01.123Z
        split(substr(ts, 1, 10), d, "-")
        split(substr(ts, 12, 12), c, ":")
        # seconds since the epoch from a UTC date (days from civil)
        y = d[1] + 0; m = d[2] + 0; dd = d[3] + 0
        if (m <= 2) { y--; m += 12 }
        days = 365 * y + int(y / 4) - int(y / 100) + int(y / 400) + int((153 * (m - 3) + 2) / 5) + dd - 719469
        ms = (((days * 24 + c[1]) * 60 + c[2]) * 60) * 1000 + int(c[3] * 1000 + 0.5)
        if (!match($0, / partition=[0-9]+/)) next
        p = substr($0, RSTART + 11, RLENGTH - 11)
        if (index(kept, " " p " ") == 0 || ms < from - 2000 || (p in done)) next
        if (p in last && ms >= from) {
            g = ms - (last[p] > from ? last[p] : from)
            if (g > gap[p]) gap[p] = g
        }
        last[p] = ms
        if (ms >= from && ms <= to) n[p]++
        if (ms > to) done[p] = 1   # the write that closes the last gap
    }
    END {
        for (p in last) {
            if (!(p in done) && to - last[p] > gap[p]) gap[p] = to - last[p]   # still open
            printf "%s:%d:%d ", p, n[p], gap[p]
        }
    }' "$H_DIR/w1.log")
h_log "w1's kept partitions (partition:batches:longest gap ms): $gaps"
for p in $kept; do
    [[ $gaps == *"$p:"* ]] || h_fail "no write of w1 to partition $p logged around the handoff: $gaps"
done
for e in $gaps; do
    IFS=: read -r p nb g <<<"$e"
    ((nb >= 3)) || h_fail "partition $p: only $nb writes by w1 around the handoff"
    ((g < GAP_MAX_MS)) || h_fail "partition $p: w1 wrote nothing for $g ms while its ZooKeeper round trips took $((2 * DELAY_MS)) ms or more (limit $GAP_MAX_MS): its writes waited for its membership"
done
# Each write's debug line also says where its first record's time went
# (worker.c, event=batch): the commit's duration, how long the worker held
# the record, and how old it was (its Kafka timestamp), so the age is at
# least the time held (both truncated to ms) and both are plausible.
grep -a ' event=batch ' "$H_DIR/w1.log" | awk '
    {
        n++
        if (!match($0, / commit_us=[0-9]+ taken_ms=[0-9]+ created_ms=-?[0-9]+$/)) { print "no latency fields: " $0; bad++; next }
        split(substr($0, RSTART + 1), f, /[ =]/)
        if (f[6] < f[4] - 2 || f[6] > 60000 || f[4] > 60000) { print "implausible: " $0; bad++ }
    }
    END { if (n < 10) { print "only " n " batch lines"; bad++ } exit bad > 0 }' ||
    h_fail "w1's event=batch lines lack or garble commit_us, taken_ms, created_ms"
net_heal w1-zk
rc=0; h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 60 "all $TOTAL records in the sink" b_sink_has $TOTAL
h_stop w1
line=$(grep -m1 'event=stopped' "$H_DIR/w1.log") || h_fail "w1 did not log event=stopped"
inwait=$(grep -Eo 'batches_in_zk_waits=[0-9]+' <<<"$line" | cut -d= -f2)
((${inwait:-0} > 0)) || h_fail "w1 wrote no batch inside a ZooKeeper wait: $line"
h_wait_for 15 "w2 owns everything" b_all_active 1
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "w1 kept writing through ZooKeeper round trips of $((2 * DELAY_MS)) ms or more (longest gaps: $gaps; $inwait batches inside waits); exactly once"
