#!/usr/bin/env bash
# it_e2e (it_pg_e2e on PostgreSQL, it_redis_e2e on Redis: BATON_IT_SINK,
# tests/lib/sinks.sh):
# 12,000 records over 12 partitions into 3 workers under 2 coordinators,
# with one worker SIGKILLed and another paused past its session timeout
# mid-stream. Afterwards the sink holds every produced (partition, offset,
# value) exactly once, epochs never fall as offsets rise, every partition
# is active with its assigned owner, and no sink password is in a log.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/sinks.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init "$(sink_name it_e2e)"
h_zk_start
sink_start
B_PARTITIONS=12
B_SESSION_MS=1500
TOTAL=12000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
b_coord c2
b_worker w1
b_worker w2
b_worker w3
h_wait_for 20 "three workers own 4 partitions each" b_all_active 3
b_log_has w1 "event=sink_opened uri=$B_SINK_URI" || h_fail "w1 did not open the sink $B_SINK_URI"

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 1500
h_wait_for 20 "records flowing" b_sink_has 1500
h_kill w1 KILL
h_log "killed w1"
h_wait_for 20 "w2 and w3 own everything" b_all_active 2
h_kill w2 STOP
h_log "paused w2"
sleep $(((B_SESSION_MS * 3) / 1000 + 1))
h_wait_for 20 "w3 owns everything while w2 is paused" b_jq 'all(.partitions[]; .owner == "w3" and .state == "active")'
h_kill w2 CONT
h_log "resumed w2"
b_worker w1
rc=0; h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 60 "all $TOTAL records in the sink" b_sink_has $TOTAL
h_wait_for 30 "faults settled: every partition active with its assigned owner" b_all_active 3
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK_URI" "$B_GROUP" || h_fail "sink verification failed"
sink_no_secret_in_logs
b_ctl status
h_pass "$TOTAL records exactly once in $BATON_IT_SINK through a SIGKILL and a pause past the session timeout"
