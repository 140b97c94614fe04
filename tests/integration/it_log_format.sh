#!/usr/bin/env bash
# it_log_format: with --log-format json every stderr line of a coordinator
# and a worker is one JSON object, the ZooKeeper client's and librdkafka's
# lines included (lib=zookeeper|librdkafka), and their repeats are
# collapsed (issue 15):
#   - a coordinator and a worker against a ZooKeeper that is not there give
#     up after --connect-timeout-ms 3000 with a handful of lines;
#   - a running coordinator whose ZooKeeper is gone for 3 s logs a handful
#     of lines for it, not one per reconnection attempt;
#   - a worker whose Kafka is not there logs a handful of lines a second.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_log_format

# lines NAME: the process's stderr lines (not the harness's spawn lines).
lines() { grep -v '^=== ' "$H_DIR/$1.log" || true; }
# all_json NAME: every line parses as a JSON object with ts, level, proc.
all_json() {
    local n=0 line
    while IFS= read -r line; do
        n=$((n + 1))
        jq -e 'type == "object" and (.ts | type == "string") and (.level | type == "string")
            and (.proc | type == "string")' <<<"$line" >/dev/null 2>&1 ||
            h_fail "$1: line $n is not a JSON log line: $line"
    done < <(lines "$1")
}
# lib_lines NAME LIB: the count of its lines with lib=LIB.
lib_lines() { lines "$1" | jq -c --arg l "$2" 'select(.lib == $l)' | wc -l; }
at_most() {
    local n
    n=$(lines "$1" | wc -l)
    ((n <= $2)) || { lines "$1" >&2; h_fail "$1 logged $n lines ($3), wanted at most $2"; }
    h_log "$1: $n lines ($3)"
}

# 1. Nothing listens on the ZooKeeper port.
dead=127.0.0.1:$(h_free_port)
h_spawn c0 "$BATON_BIN/baton-coordinator" --zk "$dead" --group g --id c0 \
    --connect-timeout-ms 3000 --log-format json
h_spawn w0 "$BATON_BIN/baton-worker" --zk "$dead" --group g --id w0 --brokers "$dead" \
    --sink "sqlite:$H_DIR/w0.db" --connect-timeout-ms 3000 --log-format json
rc=0 && h_wait_exit c0 20 || rc=$?
((rc == 1)) || h_fail "c0 exited $rc on an unreachable ZooKeeper, wanted 1"
rc=0 && h_wait_exit w0 20 || rc=$?
((rc == 1)) || h_fail "w0 exited $rc on an unreachable ZooKeeper, wanted 1"
for p in c0 w0; do
    all_json "$p"
    (($(lib_lines "$p" zookeeper) >= 1)) || h_fail "$p logged no lib=zookeeper line"
    at_most "$p" 12 "3 s without ZooKeeper"
done

# 2. ZooKeeper goes away for 3 s under a running coordinator.
# shellcheck disable=SC2119 # default tick
h_zk_start
b_ctl init --topic in --partitions 2 >/dev/null
B_SESSION_MS=10000 b_coord c1 --log-format json
h_wait_for 20 "c1 is elected" b_log_has c1 '"event":"elected"' || h_fail "c1 was not elected"
before=$(lines c1 | wc -l)
h_zk_stop
down_at=$(date +%s%3N)
h_wait_for 10 "c1 hears of it from the ZooKeeper client" \
    bash -c "grep -v '^=== ' '$H_DIR/c1.log' | tail -n +$((before + 1)) | grep '\"lib\":\"zookeeper\"' >/dev/null" ||
    h_fail "c1 logged no lib=zookeeper line while ZooKeeper was down"
sleep 3 # the outage itself; nothing is timed
h_zk_start
out_ms=$(($(date +%s%3N) - down_at))
h_wait_for 20 "c1 reconnects" bash -c "\"$BATON_BIN/batonctl\" --zk $ZK --group g status --json |
    jq -e '.coordinator.id == \"c1\"'" || h_fail "c1 did not come back"
all_json c1
n=$(($(lines c1 | wc -l) - before))
# 12 lines for an outage of up to 5 s; on a loaded machine ZooKeeper's
# restart makes it longer, and each 5 s more may repeat the library's
# lines (once per 5 s each) and add c1's own suspension and return.
max=$((12 + 6 * ((out_ms - 1) / 5000)))
((n <= max)) || { lines c1 >&2; h_fail "c1 logged $n lines for a ZooKeeper outage of $out_ms ms, wanted at most $max"; }
h_log "c1: $n lines for a ZooKeeper outage of $out_ms ms (at most $max)"

# 3. A worker whose Kafka is not there (nothing listens on the port).
B_SINK=$H_DIR/w1.db BOOTSTRAP=$dead b_worker w1 --log-format json
h_wait_for 20 "w1 reports the Kafka failure" \
    bash -c "grep -v '^=== ' '$H_DIR/w1.log' | grep '\"kafka_error\"\|\"lib\":\"librdkafka\"' >/dev/null" ||
    h_fail "w1 said nothing of an unreachable Kafka"
sleep 3 # the outage itself; nothing is timed
h_stop w1
all_json w1
at_most w1 20 "3 s without Kafka"
h_pass "every line JSON, library lines included; a 3 s outage costs a handful of lines"
