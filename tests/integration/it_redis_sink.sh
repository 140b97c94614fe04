#!/usr/bin/env bash
# it_redis_sink: the Redis sink on a real redis-server (tests/lib/redis.sh:
# Debian's, on a free loopback port, with a password). The sink conformance
# suite every backend passes (tests/sink_conformance.c), then what only
# Redis has: bad URIs and rediss:// refused with exit 2 before anything
# runs; an unreachable server, a wrong or a missing password, and a key of
# another type where a fence lives each stop the worker with a clear error
# and nothing written; then the documented layout as redis-cli reads it,
# scripts reloaded after NOSCRIPT, and batonctl fences and sink show on a
# Redis sink.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/redis.sh"
h_init it_redis_sink
redis_start
[[ -x $BATON_TESTS_BIN/sink_conformance ]] || h_fail "$BATON_TESTS_BIN/sink_conformance is not built"
rc=0
timeout 240 "$BATON_TESTS_BIN/sink_conformance" "$REDIS_URI_PASS" >"$H_DIR/conformance.log" 2>&1 || rc=$?
cat "$H_DIR/conformance.log" >&2
((rc == 0)) || h_fail "conformance suite failed on Redis (exit $rc)"

# Bad URIs: exit 2 naming the value, before any connection.
bad_uri() {
    local uri=$1 want=$2 rc=0 out
    out=$("$BATON_BIN/baton-worker" --zk 127.0.0.1:1 --group g --id w --brokers 127.0.0.1:1 \
        --sink "$uri" 2>&1) || rc=$?
    ((rc == 2)) || h_fail "--sink $uri: exit $rc, expected 2: $out"
    [[ $out == *"$want"* ]] || h_fail "--sink $uri: the message does not say '$want': $out"
}
bad_uri "redis://127.0.0.1:99999/0" "port '99999' is not in 1-65535"
bad_uri "redis://127.0.0.1:$REDIS_PORT/zero" "database 'zero' is not a number"
bad_uri "redis://secret@127.0.0.1:$REDIS_PORT" "credentials need a ':'"
bad_uri "redis://127.0.0.1:$REDIS_PORT/0?fsync=1" "unknown option 'fsync'"
bad_uri "redis://127.0.0.1:$REDIS_PORT/0?wait_replicas=many" "option 'wait_replicas': bad value 'many'"
bad_uri "rediss://127.0.0.1:$REDIS_PORT" "no TLS"
bad_uri "rediss://127.0.0.1:$REDIS_PORT" "stunnel"
# ... and a password in a refused URI never shows.
bad_uri "redis://:hunter2@127.0.0.1:$REDIS_PORT/x" "redis://:***@127.0.0.1"
rc=0
out=$("$BATON_BIN/batonctl" --zk 127.0.0.1:1 --group g fences --sink "rediss://127.0.0.1:1" 2>&1) || rc=$?
((rc == 2)) && [[ $out == *"no TLS"* ]] || h_fail "batonctl fences --sink rediss://: exit $rc: $out"

# A group, for the workers below; they write to database 7 (the
# conformance suite used 0 to 4).
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
SINK7="redis://127.0.0.1:$REDIS_PORT/7"
db7() { redis_cli -- -n 7 "$@"; }
worker_fails() { # NAME WANT [ENV...]: the worker exits 1 saying WANT
    local name=$1 want=$2
    shift 2
    h_spawn "$name" env "$@" "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "$name" \
        --brokers "$BOOTSTRAP" --sink "$SINK7" --session-timeout-ms "$B_SESSION_MS"
    local rc=0
    h_wait_exit "$name" 30 || rc=$?
    ((rc == 1)) || h_fail "$name: exit $rc, expected 1"
    b_log_has "$name" "$want" || h_fail "$name: no '$want' in its log"
}
port=$(h_free_port)
SINK7="redis://127.0.0.1:$port/7" worker_fails w_unreachable "cannot reach Redis at 127.0.0.1:$port"
worker_fails w_wrongpw "Redis refused the credentials: WRONGPASS" REDISCLI_AUTH=wrong
worker_fails w_nopw "Redis wants a password and none was given" -u REDISCLI_AUTH
[[ $(db7 DBSIZE) == 0 ]] || h_fail "a refused worker wrote: $(db7 KEYS '*')"
if grep -q "$REDIS_PASS\|hunter2" "$H_DIR"/w_*.log; then h_fail "a password is in a log"; fi

# Another application's key where partition 1's fence lives: the worker's
# first fence (both partitions, one script) is refused whole and it exits.
db7 SET "baton:{$B_GROUP.1}:fence" "not a hash" >/dev/null
worker_fails w_wrongtype "key 'baton:{$B_GROUP.1}:fence' is a string, not what baton keeps there"
keys=$(db7 KEYS 'baton:{*' | sort | tr '\n' ' ')
[[ $keys == "baton:{$B_GROUP.1}:fence " ]] || h_fail "the refused fence wrote something: $keys"
db7 DEL "baton:{$B_GROUP.1}:fence" >/dev/null

# The layout, as a Redis user reads it.
SINK7="redis://127.0.0.1:$REDIS_PORT/7"
h_spawn w1 "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id w1 --brokers "$BOOTSTRAP" \
    --sink "$SINK7" --session-timeout-ms "$B_SESSION_MS" --linger-ms 10
h_wait_for 15 "w1 owns everything" b_all_active 1
b_produce 10 a
db7_has() { (($(db7 XLEN "baton:{$B_GROUP.0}:out") + $(db7 XLEN "baton:{$B_GROUP.1}:out") == $1)); }
h_wait_for 15 "10 records in Redis" db7_has 10
[[ $(db7 TYPE "baton:{$B_GROUP.0}:fence") == hash ]] || h_fail "the fence is not a hash"
[[ $(db7 HGET "baton:{$B_GROUP.0}:fence" next_offset) == 5 ]] || h_fail "next_offset: $(db7 HGETALL "baton:{$B_GROUP.0}:fence")"
epoch0=$(db7 HGET "baton:{$B_GROUP.0}:fence" epoch)
[[ $epoch0 == $(b_epoch 0) ]] || h_fail "fence epoch $epoch0, ZooKeeper's $(b_epoch 0)"
[[ -n $(db7 HGET "baton:{$B_GROUP.0}:fence" updated_ms) && $(db7 HGET "baton:{$B_GROUP.0}:fence" rejected) == 0 ]] ||
    h_fail "fence fields: $(db7 HGETALL "baton:{$B_GROUP.0}:fence")"
first=$(db7 XRANGE "baton:{$B_GROUP.0}:out" - + COUNT 1 | tail -n +2 | tr '\n' ' ')
[[ $first == "offset 0 epoch $epoch0 key "*" value a-"*" " ]] ||
    h_fail "first stream entry: $first"
[[ $(db7 HGET baton:meta sink_id) =~ ^[0-9a-f-]{36}$ ]] || h_fail "baton:meta sink_id"

# Redis forgets its scripts (SCRIPT FLUSH; a restart does too): the next
# EVALSHA gets NOSCRIPT, the sink loads them again and the write goes on.
redis_cli -- SCRIPT FLUSH >/dev/null
b_produce 10 b
h_wait_for 15 "20 records in Redis" db7_has 20
b_log_has w1 'event=sink_script_reload' || h_fail "w1 did not reload the scripts after NOSCRIPT"

# batonctl on a Redis sink.
b_ctl fences --sink "$SINK7" --json >"$H_DIR/fences.json"
jq -e '.summary.agree == 2 and ([.partitions[].next_offset] | add) == 20' "$H_DIR/fences.json" >/dev/null ||
    h_fail "batonctl fences: $(cat "$H_DIR/fences.json")"
b_ctl sink show --sink "$SINK7" --json >"$H_DIR/show.json"
jq -e --arg id "$(db7 HGET baton:meta sink_id)" '.sink.sink_id == $id and .sink.bound == true and
    .binding.sink_id == $id' "$H_DIR/show.json" >/dev/null || h_fail "batonctl sink show: $(cat "$H_DIR/show.json")"
[[ $(db7 HGET "baton:{$B_GROUP}:group" group_uuid) == $(jq -r .group_uuid "$H_DIR/show.json") ]] ||
    h_fail "baton:{$B_GROUP}:group does not record the group's id: $(db7 HGETALL "baton:{$B_GROUP}:group")"
out=$(b_ctl sink show --sink "redis://:$REDIS_PASS@127.0.0.1:$REDIS_PORT/7")
[[ $out != *"$REDIS_PASS"* && $out == *"redis://:***@127.0.0.1:$REDIS_PORT/7"* ]] ||
    h_fail "sink show must not print the password: $out"
h_pass "conformance suite, bad input, the layout and batonctl on Redis"
