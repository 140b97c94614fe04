#!/usr/bin/env bash
# it_prometheus: a real Prometheus (Debian's /usr/bin/prometheus, its own
# config, storage and port in the test dir, listening on 127.0.0.1 only)
# scrapes a coordinator and two workers every second with
# deploy/prometheus/baton-rules.yml loaded. Its HTTP API shows the three
# targets up and baton's metrics; every rule evaluates without error; every
# query of the Grafana dashboard (deploy/grafana/baton.json) is valid PromQL
# and names only metrics that the live /metrics export; and stopping the
# only coordinator makes BatonNoLeadingCoordinator pending.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_prometheus
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
[[ -x $PROMETHEUS ]] || h_fail "$PROMETHEUS is not installed (Debian's package prometheus; deploy/setup.sh installs it)"
command -v curl >/dev/null || h_fail "curl is not installed (deploy/setup.sh installs it)"
RULES=$BATON_SRC/deploy/prometheus/baton-rules.yml
DASHBOARD=$BATON_SRC/deploy/grafana/baton.json

h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

cport=$(h_free_port)
p1=$(h_free_port)
p2=$(h_free_port)
b_coord c1 --metrics-addr "127.0.0.1:$cport"
b_worker w1 --metrics-addr "127.0.0.1:$p1"
b_worker w2 --metrics-addr "127.0.0.1:$p2"
h_wait_for 30 "w1 and w2 own every partition" b_all_active 2

# --- Prometheus: its own config, storage and port ---------------------------
pport=$(h_free_port)
prom=http://127.0.0.1:$pport
mkdir -p "$H_DIR/prometheus/data"
cat >"$H_DIR/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: baton-coordinator
    static_configs:
      - targets: ["127.0.0.1:$cport"]
  - job_name: baton-worker
    static_configs:
      - targets: ["127.0.0.1:$p1", "127.0.0.1:$p2"]
EOF
h_spawn prometheus "$PROMETHEUS" --config.file="$H_DIR/prometheus/prometheus.yml" \
    --storage.tsdb.path="$H_DIR/prometheus/data" --web.listen-address="127.0.0.1:$pport"
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$prom/-/ready") == 200 ]]; }
h_wait_for 30 "Prometheus is ready on 127.0.0.1:$pport" ready

# Every TCP socket Prometheus listens on is on 127.0.0.1 (/proc/net/tcp*
# hold the listening sockets, state 0A; the process's fds name the inodes).
listening_addrs() {
    local pid=$1 inodes
    inodes=$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null |
        sed -E 's/socket:\[([0-9]+)\]/\1/' | sort -u | tr '\n' ' ')
    [[ -n $inodes ]] || return 0
    awk -v inodes=" $inodes" '$4 == "0A" && index(inodes, " " $10 " ") { print $2 }' \
        /proc/net/tcp /proc/net/tcp6
}
addrs=$(listening_addrs "$(h_pid prometheus)")
[[ -n $addrs ]] || h_fail "Prometheus listens on nothing?"
port_hex=$(printf '%04X' "$pport")
while read -r a; do
    [[ $a == "0100007F:$port_hex" ]] || h_fail "Prometheus listens on $a, not only 127.0.0.1:$pport (all: $addrs)"
done <<<"$addrs"

# query PROMQL: the API's JSON answer for an instant query (bounded: 5 s).
query() { curl -sS --max-time 5 -G --data-urlencode "query=$1" "$prom/api/v1/query"; }
# value_is PROMQL VALUE: true when the query returns one sample equal to VALUE.
value_is() {
    query "$1" | jq -e --arg v "$2" '.status == "success" and (.data.result | length == 1) and .data.result[0].value[1] == $v'
}

# --- up, and baton's metrics through the API ----------------------------------
h_wait_for 30 "three targets up" value_is 'count(up == 1)' 3
query up | jq -e '[.data.result[].metric.job] | sort == ["baton-coordinator", "baton-worker", "baton-worker"]' >/dev/null ||
    h_fail "up: unexpected jobs: $(query up)"
h_wait_for 15 "Prometheus sees c1 lead" value_is "baton_coordinator_leader{instance=\"127.0.0.1:$cport\"}" 1
h_wait_for 15 "Prometheus sees 4 partitions owned" value_is 'sum(baton_worker_partitions_owned)' 4
h_wait_for 15 "the recording rule counts 4 partitions" value_is 'group:baton_partitions_owned:count' 4

# Every rule of baton-rules.yml loaded and evaluated without error.
rules_ok() {
    curl -sS --max-time 5 "$prom/api/v1/rules" | jq -e '[.data.groups[].rules[]] |
        length == 11 and all(.[]; .health == "ok")'
}
h_wait_for 15 "every rule evaluates (health ok)" rules_ok
alert_state() { # alert_state NAME: pending/firing, or nothing.
    curl -sS --max-time 5 "$prom/api/v1/alerts" | jq -r --arg n "$1" '.data.alerts[] | select(.labels.alertname == $n) | .state'
}
alert_active() { [[ $(alert_state "$1") =~ ^(pending|firing)$ ]]; }
# A rule evaluated before c1's first scrape saw no coordinator and left the
# alert pending; once c1 is scraped leading, the next evaluation clears it.
h_wait_for 15 "BatonNoLeadingCoordinator inactive while c1 leads" \
    bash -c "! [[ \$(curl -sS --max-time 5 '$prom/api/v1/alerts' | jq -r '.data.alerts[] | select(.labels.alertname == \"BatonNoLeadingCoordinator\") | .state') =~ ^(pending|firing)\$ ]]"

# --- the Grafana dashboard ------------------------------------------------------
curl -sS --max-time 5 "http://127.0.0.1:$cport/metrics" >"$H_DIR/exported.metrics"
curl -sS --max-time 5 "http://127.0.0.1:$p1/metrics" >>"$H_DIR/exported.metrics"
curl -sS --max-time 5 "http://127.0.0.1:$p2/metrics" >>"$H_DIR/exported.metrics"
grep -v '^#' "$H_DIR/exported.metrics" | sed -E 's/[{ ].*//' | sort -u >"$H_DIR/exported.names"
grep -qx baton_coordinator_leader "$H_DIR/exported.names" || h_fail "the scrape lacks the coordinator's metrics"
grep -qx baton_worker_partitions_owned "$H_DIR/exported.names" || h_fail "the scrape lacks the workers' metrics"

# metric_names: the metric names in the PromQL expressions on stdin (one a
# line): strings, label matchers, ranges and by/on/... clauses dropped,
# then every identifier that is not a function call or a keyword.
metric_names() {
    perl -ne 's/"(?:[^"\\]|\\.)*"//g; s/\{[^}]*\}//g; s/\[[^\]]*\]//g;
        s/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)//g;
        while (/(?<![\w.:\$])([a-zA-Z_:][\w:]*+)(?!\s*\()/g) {
            print "$1\n" unless $1 =~ /^(?:and|or|unless|bool|offset|inf|nan)$/i;
        }' | sort -u
}
# check_dashboard FILE: every panel's every target has an expr; each is
# valid PromQL (asked of the live Prometheus) and names at least one
# metric, all of them exported. Prints what is wrong.
check_dashboard() {
    local file=$1 expr names n bad=0
    jq -e '[.panels[] | select(.type != "row")] | length > 0 and
        all(.[]; (.targets | length > 0) and all(.targets[]; (.expr // "") != ""))' "$file" >/dev/null ||
        { echo "$file: a panel without targets or a target without expr"; return 1; }
    while IFS= read -r expr; do
        expr=${expr//\$__rate_interval/1m}
        expr=${expr//\$__range/1h}
        query "$expr" | jq -e '.status == "success"' >/dev/null || { echo "invalid PromQL: $expr"; bad=1; }
        names=$(metric_names <<<"$expr")
        [[ -n $names ]] || { echo "no metric in: $expr"; bad=1; }
        for n in $names; do
            grep -qx -- "$n" "$H_DIR/exported.names" || { echo "not exported: $n (in $expr)"; bad=1; }
        done
    done < <(jq -r '.panels[].targets[]?.expr' "$file")
    return "$bad"
}
out=$(check_dashboard "$DASHBOARD") || h_fail "deploy/grafana/baton.json: $out"
n=$(jq '[.panels[].targets[]?.expr] | length' "$DASHBOARD")
h_log "dashboard: $n queries valid, every metric exported"
# The check can fail: a query naming a metric baton does not export, and
# one that does not parse, are caught.
jq '.panels[1].targets[0].expr = "sum(rate(baton_worker_records_read_total[$__rate_interval]))"' \
    "$DASHBOARD" >"$H_DIR/bad-name.json"
out=$(check_dashboard "$H_DIR/bad-name.json") && h_fail "a dashboard naming an unknown metric passed"
grep -q 'not exported: baton_worker_records_read_total' <<<"$out" || h_fail "unknown metric not named: $out"
jq '.panels[1].targets[0].expr = "sum(baton_worker_partitions_owned"' "$DASHBOARD" >"$H_DIR/bad-syntax.json"
out=$(check_dashboard "$H_DIR/bad-syntax.json") && h_fail "a dashboard with a broken query passed"
grep -q 'invalid PromQL' <<<"$out" || h_fail "broken query not reported: $out"

# --- an alert on live data: no coordinator, no leader -----------------------------
h_stop c1
h_wait_for 20 "BatonNoLeadingCoordinator pending or firing" alert_active BatonNoLeadingCoordinator
h_wait_for 20 "Prometheus sees c1 down" value_is "up{instance=\"127.0.0.1:$cport\"}" 0

h_stop prometheus
rc=0
h_wait_exit prometheus 10 || rc=$?
((rc == 0)) || h_fail "Prometheus should exit 0 after SIGTERM, got $rc"
h_pass "Prometheus on 127.0.0.1 scraped c1, w1, w2 (up, leader, partitions owned); $n dashboard queries valid and exported; every rule ok; no coordinator -> BatonNoLeadingCoordinator"
