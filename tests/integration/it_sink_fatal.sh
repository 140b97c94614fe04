#!/usr/bin/env bash
# it_sink_fatal: the worker retries a sink error that can pass and stops on
# one that cannot (issue 14, "Fatal codes are not retried").
#   - busy: another writer holds the SQLite write lock; the worker's writes
#     fail with BUSY (retriable), are retried, and land once it lets go;
#   - write: every insert into baton_output fails (a trigger whose body names
#     a table that does not exist: SQLite answers SQLITE_ERROR "no such
#     table", which sq_map classes BATON_IO, fatal). The worker does not
#     retry: it logs one event=sink_fatal naming the sink and the error,
#     leaves the group and exits 1, and what it wrote before is intact;
#   - fence: the same for a fence (every update of baton_fence fails): a new
#     worker exits 1 the same way, having fenced nothing.
# A trigger, not chmod: the tests run as root, which file modes do not stop,
# and a WAL-mode connection keeps writing through descriptors it opened
# before a chmod. Not RAISE() either: SQLite reports it as a constraint
# failure, which the SQLite sink reads as a duplicate row (CORRUPT).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_sink_fatal
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
SINK_URI=sqlite:$B_SINK
b_init $B_PARTITIONS
b_coord c1
b_worker w1
h_wait_for 20 "w1 owns everything" b_all_active 1
b_produce 100 a
h_wait_for 20 "100 records in the sink" b_sink_has 100

# sink_rows: everything the sink holds for the group, in order.
sink_rows() {
    b_sql "SELECT 'fence', partition, epoch, next_offset, rejected FROM baton_fence WHERE grp='$B_GROUP'
           ORDER BY partition;
           SELECT 'output', partition, offset, epoch, value FROM baton_output WHERE grp='$B_GROUP'
           ORDER BY partition, offset"
}
# fatal_once NAME OP: NAME logged exactly one event=sink_fatal, for OP,
# naming the sink, the error (IO) and SQLite's message, and no retry.
fatal_once() {
    local name=$1 op=$2 n
    n=$(grep -c 'event=sink_fatal' "$H_DIR/$name.log" || true)
    ((n == 1)) || h_fail "$name logged event=sink_fatal $n times, not once"
    b_log_has "$name" "event=sink_fatal sink=$SINK_URI op=$op error=IO detail=\"[^\"]*no such table: main.it_sink_fatal_refuses[^\"]*\" action=leave_and_exit" ||
        h_fail "$name: unclear fatal message: $(grep 'event=sink_fatal' "$H_DIR/$name.log")"
    ! b_log_has "$name" 'event=(write|fence)_failed .*error=IO .*action=retry' ||
        h_fail "$name retried a fatal error: $(grep -E 'event=(write|fence)_failed .*error=IO' "$H_DIR/$name.log" | head -3)"
    b_log_has "$name" 'event=left ' || h_fail "$name did not leave the group"
}

# --- busy: retried -----------------------------------------------------------
mkfifo "$H_DIR/lock.fifo"
h_spawn locker bash -c 'exec sqlite3 "$1" <"$2"' _ "$B_SINK" "$H_DIR/lock.fifo"
exec 3>"$H_DIR/lock.fifo"
printf '.timeout 5000\nBEGIN IMMEDIATE;\nSELECT %s;\n' "'write lock held'" >&3
h_wait_for 10 "the locker holds the write lock" b_log_has locker 'write lock held'
b_produce 20 b
h_wait_for 20 "w1's write failed BUSY and will be retried" \
    b_log_has w1 'event=write_failed .*error=BUSY .*action=retry'
printf 'COMMIT;\n' >&3
exec 3>&-
rc=0; h_wait_exit locker 10 || rc=$?
((rc == 0)) || h_fail "the locker exited $rc"
h_wait_for 20 "the 20 records landed after the lock went" b_sink_has 120
h_alive w1 || h_fail "w1 exited on a busy sink"
! b_log_has w1 'event=sink_fatal' || h_fail "a busy sink was taken as fatal"
h_log "BUSY retried"

# --- a write the sink refuses for good ----------------------------------------
before=$(sink_rows)
b_sql "CREATE TRIGGER it_refuse_output BEFORE INSERT ON baton_output
       BEGIN SELECT * FROM it_sink_fatal_refuses; END"
b_produce 20 c
rc=0; h_wait_exit w1 30 || rc=$?
((rc == 1)) || h_fail "w1 exited $rc on a fatal write error, wanted 1"
fatal_once w1 write
[[ $(sink_rows) == "$before" ]] || h_fail "the sink changed after the fatal write"
h_log "fatal write: w1 left and exited 1, the sink as it was"

# --- a fence the sink refuses for good ----------------------------------------
# The trigger comes once w2 has opened the sink (a sink it cannot even
# prepare its statements on fails the start: event=sink_open_failed), just
# before its first fence.
b_sql "DROP TRIGGER it_refuse_output"
BATON_FAILPOINTS="worker.before_fence=stop" b_worker w2 --session-timeout-ms 20000
h_wait_for 20 "w2 stopped before its first fence" \
    h_at_failpoint w2 worker.before_fence
b_sql "CREATE TRIGGER it_refuse_fence BEFORE UPDATE ON baton_fence
       BEGIN SELECT * FROM it_sink_fatal_refuses; END"
h_kill w2 CONT
rc=0; h_wait_exit w2 30 || rc=$?
((rc == 1)) || h_fail "w2 exited $rc on a fatal fence error, wanted 1"
fatal_once w2 fence
! b_log_has w2 'event=fenced ' || h_fail "w2 fenced a partition"
[[ $(sink_rows) == "$before" ]] || h_fail "the sink changed after the fatal fence"
h_pass "BUSY is retried; a fatal write or fence error ends the worker (leave, exit 1, one message), the sink intact"
