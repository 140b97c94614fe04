#!/usr/bin/env bash
# it_redis_replica: the Redis sink's wait_replicas=N (Redis WAIT) against a
# primary and a real replica. While the replica is up, a worker's writes
# return once the replica has them. With the replica stopped, every write
# is applied on the primary but reported as a retriable failure
# (event=sink_replicas_behind), so the worker does not move on; once the
# replica is back and caught up, the retry (which skips what is already
# applied) succeeds. The primary and the replica end with every record
# exactly once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/redis.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_redis_replica
h_zk_start
redis_start redis
redis_start replica --replicaof 127.0.0.1 "$REDIS_PORT"
replica_up() { [[ $(redis_cli replica -- INFO replication) == *"master_link_status:up"* ]]; }
h_wait_for 20 "the replica follows the primary" replica_up
redis_use_sink
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
REDIS_URI="$REDIS_URI?wait_replicas=1&wait_timeout_ms=300" b_worker w1
h_wait_for 20 "w1 owns everything" b_all_active 1
b_produce 100 a
h_wait_for 20 "100 records written" b_sink_has 100
replica_count() { # the replica's stream entries of the group
    redis_cli replica -- EVAL 'local n = 0
        for _, k in ipairs(redis.call("KEYS", ARGV[1])) do n = n + redis.call("XLEN", k) end
        return n' 0 "baton:{$B_GROUP.*}:out"
}
replica_has() { [[ $(replica_count) == "$1" ]]; }
replica_has 100 || h_fail "the replica holds $(replica_count) of 100 acknowledged records"

h_stop replica
b_produce 100 b
h_wait_for 30 "w1 hears the replica is missing" b_log_has w1 'event=sink_replicas_behind .*acked=0 wanted=1'
h_wait_for 30 "w1 retries the write" b_log_has w1 'event=write_failed .*action=retry'
b_log_has w1 'event=sink_fatal' && h_fail "a missing replica must be retriable"
redis_start replica --replicaof 127.0.0.1 "$REDIS_PORT"
h_wait_for 20 "the replica is back" replica_up
b_produce 100 c
h_wait_for 30 "300 records written" b_sink_has 300
h_wait_for 30 "the replica has all 300" replica_has 300
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$REDIS_URI" "$B_GROUP" || h_fail "primary: not exactly once"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "redis://127.0.0.1:${REDIS_PORTS[replica]}/0" "$B_GROUP" ||
    h_fail "replica: not exactly once"
h_pass "wait_replicas=1: writes wait for the replica, retry while it is gone, 300 records exactly once on both"
