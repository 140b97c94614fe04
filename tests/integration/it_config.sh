#!/usr/bin/env bash
# it_config: the daemons' settings from a properties file, BATON_* variables
# and flags, with flags > environment > file; bad keys and values are named
# with the file and line; --log-format json emits one JSON object per line.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_config
h_zk_start
B_SINK=$H_DIR/sink.db
b_init 2
B_GROUP=other b_init 2

cat >"$H_DIR/coord.properties" <<EOT
# a coordinator configured from a file
zookeeper.connect = $ZK
group: other
coordinator.id=from-file
session.timeout.ms=2000
log.format=json
EOT
# The flag beats the file's group; the environment beats the file's id.
BATON_ID=from-env h_spawn c1 "$BATON_BIN/baton-coordinator" --config "$H_DIR/coord.properties" --group g
h_wait_for 10 "the coordinator leads group g as from-env" b_jq '.coordinator.id == "from-env"'
B_GROUP=other b_jq '.coordinator == null' >/dev/null || h_fail "the file's group was used over the flag"
h_wait_for 5 "json logs" b_log_has c1 '"event":"elected"'
# Every log line (after the harness's spawn marker) is one JSON object.
grep -v '^===' "$H_DIR/c1.log" | grep -v 'ZOO_' | while IFS= read -r line; do
    jq -e '.ts and .level and .proc == "baton-coordinator" and .id == "from-env"' <<<"$line" >/dev/null ||
        h_fail "not a JSON log line: $line"
done

expect_usage() { # expect_usage PATTERN ARGS...: exit 2 and PATTERN on stderr
    local pat=$1 rc=0
    shift
    "$@" >"$H_DIR/out" 2>&1 || rc=$?
    ((rc == 2)) || h_fail "expected exit 2 from '$*', got $rc: $(cat "$H_DIR/out")"
    grep -q -- "$pat" "$H_DIR/out" || h_fail "expected '$pat' from '$*': $(cat "$H_DIR/out")"
}
printf 'zookeeper.connect=%s\ngroup=g\nsession.timeout=5\n' "$ZK" >"$H_DIR/bad1.properties"
expect_usage "bad1.properties:3: unknown key 'session.timeout'" \
    "$BATON_BIN/baton-coordinator" --config "$H_DIR/bad1.properties"
printf 'zookeeper.connect=%s\ngroup=g\nsession.timeout.ms=soon\n' "$ZK" >"$H_DIR/bad2.properties"
expect_usage "bad2.properties:3: session.timeout.ms: 'soon' is not an integer" \
    "$BATON_BIN/baton-coordinator" --config "$H_DIR/bad2.properties"
printf 'group=g\ngroup=h\n' >"$H_DIR/bad3.properties"
expect_usage "bad3.properties:2: key 'group' was already set on line 1" \
    "$BATON_BIN/baton-coordinator" --config "$H_DIR/bad3.properties"
expect_usage "cannot open '$H_DIR/missing.properties'" \
    "$BATON_BIN/baton-coordinator" --config "$H_DIR/missing.properties"
expect_usage "BATON_SESSION_TIMEOUT_MS: 'x'" env BATON_SESSION_TIMEOUT_MS=x \
    "$BATON_BIN/baton-coordinator" --zk "$ZK" --group g
expect_usage "unknown option '--nope'" "$BATON_BIN/baton-coordinator" --nope
expect_usage "--log-format: 'xml'" "$BATON_BIN/baton-coordinator" --zk "$ZK" --group g --log-format xml
# A worker from a file, with kafka.* keys passed to librdkafka unchanged.
h_kafka_start "$B_TOPIC" 2
cat >"$H_DIR/worker.properties" <<EOT
zookeeper.connect=$ZK
group=g
worker.id=w-file
bootstrap.servers=$BOOTSTRAP
sink=sqlite:$B_SINK
session.timeout.ms=2000
kafka.client.id=baton-it-config
kafka.fetch.wait.max.ms=10
EOT
h_spawn w1 "$BATON_BIN/baton-worker" --config "$H_DIR/worker.properties"
h_wait_for 15 "the configured worker owns both partitions" b_all_active 1
b_jq '.workers[0].id == "w-file"' >/dev/null || h_fail "worker.id from the file not used"
b_log_has w1 'event=config_loaded .*kafka_settings=2' || h_fail "kafka.* keys not collected"
printf 'kafka.no.such.setting=1\n' >>"$H_DIR/worker.properties"
rc=0
"$BATON_BIN/baton-worker" --config "$H_DIR/worker.properties" --id w-bad >"$H_DIR/out" 2>&1 || rc=$?
((rc == 2)) || h_fail "a bad kafka.* key: expected exit 2 (a usage error), got $rc"
grep -q "no.such.setting" "$H_DIR/out" || h_fail "the bad kafka key is not named: $(cat "$H_DIR/out")"
h_stop w1
h_stop c1
rc=0; h_wait_exit c1 10 || rc=$?
((rc == 0)) || h_fail "coordinator exited $rc on SIGTERM"
h_pass "file < environment < flags; bad settings named with file:line; json logs"
