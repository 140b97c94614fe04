#!/usr/bin/env bash
# it_redis_restart: the Redis sink's durability. (1) Redis with AOF on
# (appendfsync always) is SIGKILLed mid-stream and restarted on the same
# data: the workers retry through the outage (reconnect, scripts reloaded
# after NOSCRIPT) and every record lands exactly once. (2) Redis loses its
# latest writes to one partition, as a crash under appendfsync everysec or
# a failover to a lagging replica does (simulated: the stream's tail
# deleted and next_offset moved back together, one script): the owner's
# next write finds next_offset lower than it left it, is refused as
# unfenced (event=sink_regressed), and the partition is fenced again and
# re-read from Kafka, so the lost records come back, each once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/redis.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_redis_restart
h_zk_start
AOF=(--appendonly yes --appendfsync always)
redis_start redis "${AOF[@]}"
redis_use_sink
B_PARTITIONS=4
B_SESSION_MS=2000
TOTAL=4000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
b_worker w1
b_worker w2
h_wait_for 20 "two workers own 2 partitions each" b_all_active 2

# (1) SIGKILL mid-stream, restart on the AOF.
h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 1000
h_wait_for 20 "records flowing" b_sink_has 800
h_kill redis KILL
h_wait_exit redis 10 || true
h_log "killed redis mid-stream"
h_wait_for 20 "a worker notices Redis is gone" b_log_has w1 'event=(sink_disconnected|sink_reconnect_failed)'
redis_start redis "${AOF[@]}"
h_log "restarted redis"
rc=0; h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 60 "all $TOTAL records in Redis" b_sink_has $TOTAL
b_log_has w1 'event=sink_reconnected' || b_log_has w2 'event=sink_reconnected' ||
    h_fail "no worker reconnected: the restart was not mid-stream"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$REDIS_URI" "$B_GROUP" || h_fail "lost or doubled across the restart"

# (2) The latest 5 writes of partition 0 lost: stream tail and next_offset
# together, as a replica or an AOF would hold them.
owner=$(b_owner 0)
lost=$(redis_uri_cli "$REDIS_URI" EVAL '
    local e = redis.call("XREVRANGE", KEYS[2], "+", "-", "COUNT", 5)
    local first
    for _, x in ipairs(e) do
      for i = 1, #x[2], 2 do if x[2][i] == "offset" then first = x[2][i + 1] end end
      redis.call("XDEL", KEYS[2], x[1])
    end
    redis.call("HSET", KEYS[1], "next_offset", first)
    return first' 2 "baton:{$B_GROUP.0}:fence" "baton:{$B_GROUP.0}:out")
h_log "partition 0 (owner $owner) lost its writes from offset $lost"
b_produce 400 b
h_wait_for 30 "the owner finds next_offset went back" b_log_has "$owner" "event=sink_regressed .* partition=0 .*next_offset=$lost "
h_wait_for 60 "all $((TOTAL + 400)) records in Redis" b_sink_has $((TOTAL + 400))
h_wait_for 30 "partition 0 owned and active again" b_all_active 2
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$REDIS_URI" "$B_GROUP" || h_fail "the lost writes did not come back exactly once"
sink_pw=$REDIS_PASS
if grep -lF -- "$sink_pw" "$H_DIR"/w*.log "$H_DIR"/c1.log; then h_fail "the Redis password is in a log"; fi
h_pass "$((TOTAL + 400)) records exactly once through a SIGKILLed Redis (AOF, fsync always) and a lost tail"
