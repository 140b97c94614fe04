#!/usr/bin/env bash
# it_guard_sink_late: two workers of a new group start on one SQLite file
# that does not exist yet (each defers creating it to its binding check,
# once its run loop starts). w1 stops just before that check; w2 creates
# the file and binds the group to it; w1 resumes: the sink it was given now
# exists and is the group's, so it must open it and go on, not be refused
# as "a new sink".
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_guard_sink_late
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
# Both register before the coordinator assigns: two partitions each, so w2
# need not wait for the frozen w1 to let go of anything.
BATON_FAILPOINTS="worker.before_bind_check=stop" b_worker w1 --session-timeout-ms 20000
b_worker w2
h_wait_for 15 "w1 and w2 registered" b_jq '(.workers | length) == 2'
b_coord c1
h_wait_for 15 "w1 stopped before its binding check" \
    h_at_failpoint w1 worker.before_bind_check
h_wait_for 15 "w2 created the sink and bound the group" b_log_has w2 'event=sink_bound '
h_kill w1 CONT
h_wait_for 15 "w1 checked the binding against the file w2 created" b_log_has w1 'event=sink_binding_checked '
! b_log_has w1 'event=sink_bind_refused' || h_fail "w1 was refused: $(grep sink_bind_refused "$H_DIR/w1.log")"
h_wait_for 20 "w1 and w2 share the partitions" b_all_active 2
b_produce 100 a
h_wait_for 15 "all 100 records in the sink" b_sink_has 100
h_pass "a worker whose sink was created by another after it started opened it and went on"
