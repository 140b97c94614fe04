#!/usr/bin/env bash
# it_lifecycle: SIGHUP is logged and ignored by the worker and the
# coordinator (its default action would kill them); SIGTERM drains a worker
# and exits 0 within --shutdown-timeout-ms; a worker whose leave is stuck in
# a sink write (failpoint worker.before_sink_write sleeping 60 s) exits 1 at
# its shutdown timeout, and the partition goes to another worker when the
# session expires, every record written exactly once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_lifecycle
command -v curl >/dev/null || h_fail "curl is not installed (deploy/setup.sh installs it)"
metric() { curl -sS --max-time 5 "http://$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }

h_zk_start
B_PARTITIONS=1
B_SESSION_MS=2000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1

# --- SIGHUP: logged, nothing else -------------------------------------------
b_worker w0
h_wait_for 15 "w0 owns the partition" b_all_active 1
h_kill w0 HUP
h_kill c1 HUP
h_wait_for 10 "w0 logs the SIGHUP" b_log_has w0 'event=sighup action=none'
h_wait_for 10 "c1 logs the SIGHUP" b_log_has c1 'event=sighup action=none'
h_alive w0 || h_fail "SIGHUP killed the worker"
h_alive c1 || h_fail "SIGHUP killed the coordinator"
b_produce 10 a
h_wait_for 15 "w0 still works after SIGHUP" b_sink_has 10

# --- SIGTERM within the timeout: exit 0 -------------------------------------
h_kill w0 TERM
rc=0
h_wait_exit w0 20 || rc=$?
((rc == 0)) || h_fail "a graceful leave within --shutdown-timeout-ms should exit 0, got $rc"
b_log_has w0 'event=left' || h_fail "w0 did not leave gracefully"

# --- SIGTERM with the leave stuck in the sink: exit 1 at the timeout ---------
# Lingering 10 minutes, w1 writes its first batch at once (a fresh owner)
# and then buffers; its second write -- the one the leave makes -- sleeps.
port=$(h_free_port)
BATON_FAILPOINTS="worker.before_sink_write=1:sleep-60000" b_worker w1 --linger-ms 600000 \
    --batch-size 1000 --shutdown-timeout-ms 1500 --metrics-addr "127.0.0.1:$port"
h_wait_for 15 "w1 owns the partition" b_all_active 1
b_produce 5 b
h_wait_for 15 "w1's first batch is written" b_sink_has 11
b_produce 5 c
buffered_all() {
    local w b
    w=$(metric "127.0.0.1:$port" baton_worker_records_written_total) || return 1
    b=$(metric "127.0.0.1:$port" baton_worker_records_buffered) || return 1
    ((b > 0 && w + b == 10))
}
h_wait_for 15 "w1 holds the rest in its buffer" buffered_all
h_kill w1 TERM
rc=0
h_wait_exit w1 20 || rc=$?
((rc == 1)) || h_fail "a leave cut short by --shutdown-timeout-ms should exit 1, got $rc"
b_log_has w1 'event=shutdown_timeout phase=graceful_leave timeout_ms=1500 action=exit_now exit_code=1' ||
    h_fail "no shutdown_timeout event in w1's log"
b_log_has w1 'event=left' && h_fail "w1 cannot have left gracefully"

# w1's claim vanishes with its session; w2 takes over from the sink's offset.
b_worker w2
h_wait_for 20 "w2 owns the partition" b_jq 'all(.partitions[]; .owner == "w2" and .state == "active")'
h_wait_for 15 "all 20 records in the sink" b_sink_has 20
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "SIGHUP ignored by worker and coordinator; SIGTERM exit 0 in time, exit 1 at the shutdown timeout; exactly once"
