#!/usr/bin/env bash
# demo.sh: installs what is missing, builds, and runs baton on the embedded
# defaults: a local ZooKeeper (Debian's zookeeper package) and baton-devkafka
# (librdkafka's mock cluster) on loopback; 2 coordinators and 3 workers on a
# produced stream; one worker frozen by SIGSTOP past its session timeout and
# resumed (the zombie), then another SIGKILLed and restarted. Then it prints `batonctl status` and checks
# the sink: every offset applied exactly once, epochs only rising, the
# zombie's stale write rejected. It stops everything it started on exit.
#   deploy/demo.sh            (BATON_KEEP=1 keeps the work dir and logs)
#   BATON_ENSEMBLE=1 deploy/demo.sh   the same on a 3-node ZooKeeper ensemble
#                             (tests/lib/ensemble.sh), whose leader is also
#                             SIGKILLed mid-stream and restarted
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$src/deploy/setup.sh"

export BATON_SRC=$src BATON_BIN=${BATON_BUILD_DIR:-$src/build}/bin
source "$src/tests/lib/harness.sh"
source "$src/tests/lib/baton.sh"
source "$src/tests/lib/verify.sh"
source "$src/tests/lib/ensemble.sh"
h_init demo
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

B_PARTITIONS=12
B_SESSION_MS=2000
TOTAL=20000
say "starting ZooKeeper and the embedded Kafka on loopback"
if [[ ${BATON_ENSEMBLE:-0} == 1 ]]; then
    ens_start
else
    h_zk_start
fi
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
echo "ZooKeeper $ZK, Kafka $BOOTSTRAP, sink sqlite:$B_SINK, logs in $H_DIR"
b_ctl init --topic "$B_TOPIC" --partitions $B_PARTITIONS --brokers "$BOOTSTRAP"

say "2 coordinators, 3 workers"
b_coord c1
b_coord c2
b_worker w1
# w2 freezes itself with SIGSTOP just before its 200th batch write, so it is
# a zombie holding a batch it has decided to write.
BATON_FAILPOINTS="worker.before_sink_write=199:stop" b_worker w2
b_worker w3
h_wait_for 30 "every partition owned" b_all_active 3
b_ctl status

say "producing $TOTAL records at 2000/s"
h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 2000
h_wait_for 60 "w2 stopped" bash -c "[[ \$(awk '{print \$3}' /proc/$(h_pid w2)/stat) == T ]]"
say "w2 froze itself (SIGSTOP) holding a batch it decided to write; its ${B_SESSION_MS} ms session expires"
h_wait_for 30 "w1 and w3 own everything" b_jq 'all(.partitions[]; (.owner == "w1" or .owner == "w3") and .state == "active")'
b_ctl workers
say "SIGCONT w2: the sink must reject its stale batch"
h_kill w2 CONT
h_wait_for 20 "the zombie's write rejected" b_log_has w2 'event=write_rejected'
grep -h 'event=write_rejected' "$H_DIR/w2.log" | head -3
h_wait_for 30 "w2 rejoined and owns partitions again" b_all_active 3
b_ctl workers

say "SIGKILL w1: its partitions are re-owned once its session expires"
# Reaped at once, quietly: the shell would otherwise report the kill.
{ h_kill w1 KILL && h_wait_exit w1 10; } 2>/dev/null || true
h_wait_for 30 "w1's partitions re-owned" b_jq '[.partitions[] | select(.owner == "w1")] | length == 0'
# The summary and the workers (the partitions table follows at the end).
b_ctl status | awk '/^PARTITION/ {exit} {buf = buf $0 "\n"} END {sub(/\n+$/, "\n", buf); printf "%s", buf}'
say "restarting w1"
b_worker w1
if [[ ${BATON_ENSEMBLE:-0} == 1 ]]; then
    zl=$(ens_leader) || h_fail "the ensemble has no leader"
    say "SIGKILL the ZooKeeper ensemble's leader (zk$zl): the others elect a new one"
    { ens_kill "$zl" KILL; } 2>/dev/null
    h_wait_for 30 "a new ensemble leader" ens_leader
    echo "new leader: zk$(ens_leader)"
    ens_node_start "$zl"
    ens_wait_quorum 45 || h_fail "zk$zl did not rejoin"
    echo "zk$zl rejoined as $(ens_mode "$zl")"
fi
rc=0; h_wait_exit producer 120 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 120 "all $TOTAL records in the sink" b_sink_has $TOTAL
h_wait_for 60 "every partition active with its assigned owner" b_all_active 3

say "batonctl status (lag from Kafka's high watermarks and the sink's fences)"
b_ctl status --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK"
say "verification"
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "verification failed"
rejected=$(b_sql "SELECT sum(rejected) FROM baton_fence WHERE grp='$B_GROUP'")
((rejected > 0)) || h_fail "no stale write was rejected"
echo "stale writes rejected by the sink: $rejected"
say "demo OK"
