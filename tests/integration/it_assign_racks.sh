#!/usr/bin/env bash
# it_assign_racks: rack preference end to end. The embedded Kafka runs three
# brokers in racks r1, r2, r3; three workers declare one rack each; the
# coordinator reads the partition leaders' racks from Kafka (--brokers) and,
# as it costs no balance, puts every partition in its leader's rack. A
# coordinator whose Kafka is unreachable still assigns (rack preference off).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_racks
h_zk_start
B_PARTITIONS=6
h_kafka_start "$B_TOPIC" $B_PARTITIONS 3 r1,r2,r3
b_log_has kafka 'event=broker_rack broker=3 rack=r3' || h_fail "devkafka did not set broker racks"
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

# Workers first, so the coordinator's first publish places all six.
b_worker w1 --rack r1
b_worker w2 --rack r2
b_worker w3 --rack r3
three() { b_jq '.workers | length == 3' >/dev/null; }
h_wait_for 15 "three members" three
b_coord c1 --brokers "$BOOTSTRAP" --log-level debug
h_wait_for 20 "two partitions each" b_all_active 3
h_wait_for 5 "published" b_log_has c1 'event=published'
b_log_has c1 'event=racks topic=in partitions=6 with_rack=6' || h_fail "coordinator did not read 6 leader racks"
# The mock cluster picks leaders at random. Cross-check what the coordinator
# read with kcat's view of the leaders (broker N is in rack rN), then expect
# the most local placement balance allows: per rack, min(partitions led
# there, 2 slots of its one worker).
declare -A rack_of=()
while read -r p r; do rack_of[$p]=$r; done < <(sed -n 's/.*event=leader_rack partition=\([0-9]*\) rack=\(r[0-9]\).*/\1 \2/p' "$H_DIR/c1.log")
((${#rack_of[@]} == 6)) || h_fail "expected 6 leader_rack lines, got ${#rack_of[@]}"
while read -r p leader; do
    [[ ${rack_of[$p]} == "r$leader" ]] || h_fail "partition $p: coordinator read rack ${rack_of[$p]}, kcat says leader $leader"
done < <(kcat -L -b "$BOOTSTRAP" -t "$B_TOPIC" -m 5 2>/dev/null | sed -n 's/.*partition \([0-9]*\), leader \([0-9]*\),.*/\1 \2/p')
want=0
for r in r1 r2 r3; do
    n=0
    for p in "${!rack_of[@]}"; do
        if [[ ${rack_of[$p]} == "$r" ]]; then n=$((n + 1)); fi
    done
    want=$((want + (n < 2 ? n : 2)))
done
got=0
while read -r p r; do
    if [[ ${rack_of[$p]} == "$r" ]]; then got=$((got + 1)); fi
done < <(b_status | jq -r '.partitions[] | "\(.partition) r\(.owner | ltrimstr("w"))"')
((got == want)) || h_fail "$got partitions are in their leader's rack, $want could be"
b_log_has c1 "event=published .* partitions=6 .*rack_local=$want" || h_fail "coordinator did not log rack_local=$want"
jq -e 'all(.partitions | group_by(.owner)[]; length == 2)' <<<"$(b_status)" >/dev/null || h_fail "not 2/2/2"

# Kafka unreachable: a standby coordinator that takes over logs the failure
# and still assigns; rack preference is merely off.
h_stop c1
h_kill kafka TERM
b_coord c2 --brokers "127.0.0.1:$(h_free_port)"
b_worker w4 --rack r1
h_wait_for 20 "w4 gets its share without racks" b_all_active 4
b_log_has c2 'event=racks_unavailable' || h_fail "no racks_unavailable log"
h_pass "$want of 6 partitions in their leader's rack (the most balance allows); no Kafka, no racks, still assigned"
