#!/usr/bin/env bash
# it_metrics: --metrics-addr on a real coordinator and real workers. /metrics
# is Prometheus text (HELP/TYPE lines, histograms with cumulative buckets);
# partitions owned and the epoch per partition equal what `batonctl status`
# shows; records written rise by exactly what was produced; a zombie (paused
# past its session timeout, as in it_expiry_zombie) counts its stale batch
# and its session expiry; the coordinator shows leadership, generation and
# rebalances. A bad address is refused at start: unparseable exits 2, a port
# in use exits 1, both naming the address.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_metrics
command -v curl >/dev/null || h_fail "curl is not installed (deploy/setup.sh installs it)"

# --- bad addresses, before anything else exists ----------------------------
set +e
out=$("$BATON_BIN/baton-worker" --zk 127.0.0.1:1 --group g --id w --brokers 127.0.0.1:1 \
    --sink "sqlite:$H_DIR/x.db" --metrics-addr nonsense 2>&1)
rc=$?
set -e
((rc == 2)) || h_fail "unparseable --metrics-addr: exit $rc, expected 2 ($out)"
grep -q "metrics-addr: 'nonsense' is not HOST:PORT" <<<"$out" || h_fail "message does not name the address: $out"
set +e
out=$(BATON_METRICS_ADDR=127.0.0.1:70000 "$BATON_BIN/baton-coordinator" --zk 127.0.0.1:1 --group g 2>&1)
rc=$?
set -e
((rc == 2)) || h_fail "BATON_METRICS_ADDR with port 70000: exit $rc, expected 2 ($out)"
grep -q "port '70000' is not in 0..65535" <<<"$out" || h_fail "message does not name the port: $out"

h_zk_start
B_PARTITIONS=4
B_SESSION_MS=1000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

cport=$(h_free_port)
b_coord c1 --metrics-addr "127.0.0.1:$cport"
h_wait_for 15 "c1 serves /metrics" b_metric_is "127.0.0.1:$cport" baton_coordinator_leader 1

# A port in use: exit 1 naming it (the coordinator's own port).
set +e
out=$("$BATON_BIN/baton-coordinator" --zk "$ZK" --group "$B_GROUP" --id c9 \
    --metrics-addr "127.0.0.1:$cport" 2>&1)
rc=$?
set -e
((rc == 1)) || h_fail "--metrics-addr on a port in use: exit $rc, expected 1 ($out)"
grep -q "127.0.0.1:$cport': cannot listen: Address already in use" <<<"$out" ||
    h_fail "message does not name the address: $out"

# The format: HELP and TYPE before each family, a cumulative histogram.
b_scrape "127.0.0.1:$cport" >"$H_DIR/c1.metrics"
grep -qx '# TYPE baton_coordinator_leader gauge' "$H_DIR/c1.metrics" || h_fail "no TYPE line for the leader gauge"
grep -q '^# HELP baton_coordinator_rebalances_total ' "$H_DIR/c1.metrics" || h_fail "no HELP line for rebalances"
grep -q '^baton_coordinator_rebalance_duration_seconds_bucket{le="+Inf"} ' "$H_DIR/c1.metrics" ||
    h_fail "no +Inf bucket for the rebalance duration"
[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$cport/other") == 404 ]] ||
    h_fail "a path other than /metrics should be 404"
curl -sS -D - -o /dev/null --max-time 5 "http://127.0.0.1:$cport/metrics" |
    grep -i '^content-type: text/plain; version=0.0.4' >/dev/null || h_fail "wrong Content-Type"

# w1's 3rd sink write stops the process just before the sink call (the
# zombie of it_expiry_zombie).
p1=$(h_free_port)
BATON_FAILPOINTS="worker.before_sink_write=2:stop" b_worker w1 --metrics-addr "127.0.0.1:$p1"
h_wait_for 15 "w1 owns everything" b_all_active 1
h_wait_for 10 "w1's metrics show 4 partitions" b_metric_is "127.0.0.1:$p1" baton_worker_partitions_owned 4
st=$(b_status)
for p in 0 1 2 3; do
    want=$(jq -r --argjson p $p '.partitions[] | select(.partition == $p) | .epoch' <<<"$st")
    got=$(b_metric "127.0.0.1:$p1" "baton_worker_partition_epoch{partition=\"$p\"}")
    [[ $got == "$want" ]] || h_fail "w1's epoch metric for partition $p is '$got', status says $want"
done
gen=$(jq -r .generation <<<"$st")
b_metric_is "127.0.0.1:$cport" baton_coordinator_generation "$gen" ||
    h_fail "coordinator generation metric $(b_metric "127.0.0.1:$cport" baton_coordinator_generation) != status $gen"
b_metric_is "127.0.0.1:$cport" baton_coordinator_partitions 4 ||
    h_fail "the leader's partitions metric is $(b_metric "127.0.0.1:$cport" baton_coordinator_partitions), the group has 4"
b_metric_is "127.0.0.1:$p1" baton_zk_connected 1 || h_fail "w1 should report ZooKeeper connected"
(($(b_metric "127.0.0.1:$p1" baton_worker_handoff_duration_seconds_count) == 4)) ||
    h_fail "w1 should have observed 4 handoffs (claim -> fenced)"
b_metric_is "127.0.0.1:$p1" baton_worker_records_written_total 0 || h_fail "nothing written yet"
b_metric_is "127.0.0.1:$p1" baton_worker_standby_promotions_total 0 ||
    h_fail "w1 should export baton_worker_standby_promotions_total 0 before any promotion"

b_produce 40 a
h_wait_for 10 "w1 stopped at the failpoint" h_at_failpoint w1 worker.before_sink_write

p2=$(h_free_port)
b_worker w2 --metrics-addr "127.0.0.1:$p2"
h_wait_for 20 "w2 owns everything" b_jq 'all(.partitions[]; .owner == "w2" and .state == "active")'
h_wait_for 15 "the first 40 records are in the sink" b_sink_has 40
h_wait_for 10 "w2's metrics show 4 partitions" b_metric_is "127.0.0.1:$p2" baton_worker_partitions_owned 4
before=$(b_metric "127.0.0.1:$p2" baton_worker_records_written_total)
b_produce 40 b
h_wait_for 15 "80 records in the sink" b_sink_has 80
h_wait_for 10 "w2 counts exactly the 40 new records" b_metric_is "127.0.0.1:$p2" \
    baton_worker_records_written_total $((before + 40))
batches=$(b_metric "127.0.0.1:$p2" baton_worker_sink_batches_total)
((batches > 0)) || h_fail "w2 wrote no batches?"
[[ $(b_metric "127.0.0.1:$p2" baton_worker_sink_batch_duration_seconds_count) == "$batches" ]] ||
    h_fail "the batch latency histogram should count every batch ($batches)"
b_metric_is "127.0.0.1:$p2" baton_worker_stale_batches_rejected_total 0 || h_fail "w2 had nothing rejected"

# Lag: one series per owned partition, high watermark minus the sink's
# next_offset. Caught up, every one is 0; with the sink locked by another
# process (its writes fail busy and are retried), 20 new records show as
# lag 20, and drain back to 0 once the lock goes.
lag_series_are() { [[ $(b_scrape "127.0.0.1:$p2" | grep -c '^baton_worker_partition_lag{partition="[0-3]"} ') == "$1" ]]; }
lag_sum_is() { [[ $(b_scrape "127.0.0.1:$p2" | awk '/^baton_worker_partition_lag\{/ {s += $2} END {print s + 0}') == "$1" ]]; }
h_wait_for 10 "w2 exports lag for its 4 partitions" lag_series_are 4
h_wait_for 10 "w2's lag is 0 when caught up" lag_sum_is 0
# The lock is held until the lag has been seen (the file unlock), at most
# 30 s: not for a fixed time a loaded machine could outrun.
sqlite3 "$B_SINK" "BEGIN EXCLUSIVE;" \
    ".shell i=0; while [ ! -e '$H_DIR/unlock' ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done" \
    "COMMIT;" &
locker=$!
unlock() { : >"$H_DIR/unlock"; }
unlock_fail() { unlock; h_fail "$@"; }
h_wait_for 5 "the sink is locked" bash -c "! sqlite3 '$B_SINK' 'BEGIN IMMEDIATE; COMMIT;' 2>/dev/null" ||
    unlock_fail "the sink was never locked"
b_produce 20 c
h_wait_for 15 "w2's lag shows the 20 unwritten records" lag_sum_is 20 ||
    unlock_fail "w2's lag never showed the 20 unwritten records"
unlock
wait "$locker" || h_fail "the lock holder failed"
h_wait_for 20 "100 records in the sink" b_sink_has 100
h_wait_for 10 "w2's lag drains back to 0" lag_sum_is 0

# The zombie wakes up: its batch is rejected, it notices its expired session.
h_kill w1 CONT
h_wait_for 10 "the zombie's batch is rejected" b_log_has w1 'event=write_rejected .*reason=STALE'
h_wait_for 10 "w1 counts the stale batch" bash -c \
    "(( \$(curl -sS --max-time 5 http://127.0.0.1:$p1/metrics | awk '\$1 == \"baton_worker_stale_batches_rejected_total\" { print \$2 }') >= 1 ))"
h_wait_for 15 "w1 counts its session expiry" b_metric_is "127.0.0.1:$p1" baton_zk_session_expirations_total 1
h_wait_for 15 "w1 and w2 share the partitions" b_all_active 2

# Owned partitions per worker equal the status, and the coordinator counted
# the rebalances.
check_owned() {
    local s o1 o2
    s=$(b_status) || return 1
    o1=$(jq '[.partitions[] | select(.owner == "w1")] | length' <<<"$s")
    o2=$(jq '[.partitions[] | select(.owner == "w2")] | length' <<<"$s")
    b_metric_is "127.0.0.1:$p1" baton_worker_partitions_owned "$o1" &&
        b_metric_is "127.0.0.1:$p2" baton_worker_partitions_owned "$o2" && ((o1 + o2 == 4))
}
h_wait_for 10 "partitions owned match the status" check_owned
# The partitions w2 gave back to w1 take their lag series with them.
lag_matches_owned() { lag_series_are "$(b_metric "127.0.0.1:$p2" baton_worker_partitions_owned)"; }
h_wait_for 10 "w2 exports lag only for the partitions it still owns" lag_matches_owned
(($(b_metric "127.0.0.1:$cport" baton_coordinator_rebalances_total) >= 3)) ||
    h_fail "the coordinator published at least 3 assignments (w1, w2, w1 again)"
gen=$(b_status | jq -r .generation)
h_wait_for 5 "coordinator generation is the status's" b_metric_is "127.0.0.1:$cport" baton_coordinator_generation "$gen"
[[ $(b_metric "127.0.0.1:$cport" baton_coordinator_epoch) == $(b_status | jq -r .coordinator.epoch) ]] ||
    h_fail "coordinator epoch metric differs from the status"

# A standby shows leader 0 until the leader goes, then 1 with its epoch.
cport2=$(h_free_port)
b_coord c2 --metrics-addr "127.0.0.1:$cport2"
h_wait_for 10 "c2 is connected" b_metric_is "127.0.0.1:$cport2" baton_zk_connected 1
b_jq '.coordinator.id == "c1"' >/dev/null || h_fail "c1 should still lead"
b_metric_is "127.0.0.1:$cport2" baton_coordinator_leader 0 || h_fail "the standby reports leader 1"
b_metric_is "127.0.0.1:$cport2" baton_coordinator_epoch 0 || h_fail "the standby reports an epoch"
b_metric_is "127.0.0.1:$cport2" baton_coordinator_partitions 0 || h_fail "the standby reports a partition count"
h_stop c1
h_wait_for 15 "c2 leads" b_metric_is "127.0.0.1:$cport2" baton_coordinator_leader 1
h_wait_for 10 "status shows c2" b_jq '.coordinator.id == "c2"'
[[ $(b_metric "127.0.0.1:$cport2" baton_coordinator_epoch) == $(b_status | jq -r .coordinator.epoch) ]] ||
    h_fail "c2's epoch metric differs from the status"

h_stop w2
rc=0
h_wait_exit w2 10 || rc=$?
((rc == 0)) || h_fail "w2 should exit 0 after SIGTERM, got $rc"
h_pass "metrics: owned/epochs match status, records +40, zombie's stale batch and expiry counted, coordinator leader/generation/rebalances; bad addresses exit 2 and 1"
