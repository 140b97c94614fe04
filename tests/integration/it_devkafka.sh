#!/usr/bin/env bash
# it_devkafka.sh: the test infrastructure itself. baton-devkafka serves a
# real Kafka protocol (kcat and baton-produce talk to it, records persist
# while it runs, fetches from an offset work, SIGTERM exits 0, bad flags exit
# 2; it has exactly the --topic topics, repeatable, and creates no other on
# demand, not even for a producer that asks); the harness starts ZooKeeper; baton-zk round-trips create/get/ls/stat/
# delete and gives up with exit 3 when nothing listens.
set -euo pipefail

: "${BATON_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# shellcheck source=../lib/harness.sh
source "$BATON_SRC/tests/lib/harness.sh"
h_init it_devkafka

TOPIC=in
PARTS=3
COUNT=300

# --- devkafka: usage errors -------------------------------------------------
for args in "--topic" "--topic t --partitions 0" "--topic t --partitions x" \
    "--topic t --partitions 3 --bogus" "--partitions 3" "--topic t" \
    "--topic t --partitions 3 --brokers 0" "--topic t --topic t --partitions 3" \
    "--topic bad/name --partitions 3"; do
    rc=0
    # shellcheck disable=SC2086 # word splitting is the point
    timeout 10 "$BATON_BIN/baton-devkafka" $args >/dev/null 2>"$H_DIR/usage.err" || rc=$?
    ((rc == 2)) || h_fail "baton-devkafka $args: exit $rc, want 2"
    grep -q '^usage:' "$H_DIR/usage.err" || h_fail "baton-devkafka $args: no usage on stderr"
done
rc=0
"$BATON_BIN/baton-devkafka" --topic t --partitions 3 --bogus >/dev/null 2>"$H_DIR/usage.err" || rc=$?
grep -q -- "--bogus" "$H_DIR/usage.err" || h_fail "usage error does not name the bad flag"
"$BATON_BIN/baton-devkafka" --help | grep '^usage:' >/dev/null || h_fail "--help prints no usage"

# --- devkafka: serve, produce, consume --------------------------------------
h_kafka_start "$TOPIC" "$PARTS"
first=$(head -n 1 "$H_DIR/kafka.out")
[[ $first =~ ^bootstrap=127\.0\.0\.1:[0-9]+$ ]] || h_fail "first stdout line '$first'"

out=$("$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$TOPIC" \
    --partitions "$PARTS" --count "$COUNT" --timeout-ms 10000)
[[ $out == "produced=$COUNT" ]] || h_fail "baton-produce printed '$out'"

consume() { # all records as "partition offset key value"
    timeout 30 kcat -b "$BOOTSTRAP" -C -t "$TOPIC" -o beginning -e -q \
        -f '%p %o %k %s\n'
}
consume >"$H_DIR/all.txt" || h_fail "kcat could not consume"
n=$(wc -l <"$H_DIR/all.txt")
((n == COUNT)) || h_fail "consumed $n records, want $COUNT"
for ((p = 0; p < PARTS; p++)); do
    c=$(awk -v p="$p" '$1 == p' "$H_DIR/all.txt" | wc -l)
    ((c == COUNT / PARTS)) || h_fail "partition $p has $c records, want $((COUNT / PARTS))"
done
# Round-robin: record i is in partition i % N at offset i / N.
awk -v n="$PARTS" '{ i = substr($3, 2) + 0
    if ($1 != i % n || $2 != int(i / n) || $4 != "v-" i) { print; bad++ } }
    END { exit bad > 0 }' "$H_DIR/all.txt" || h_fail "records not where round-robin puts them"

# A fetch from a given offset starts there.
got=$(timeout 30 kcat -b "$BOOTSTRAP" -C -t "$TOPIC" -p 1 -o 95 -e -q -f '%o %s\n')
[[ $got == $'95 v-286\n96 v-289\n97 v-292\n98 v-295\n99 v-298' ]] ||
    h_fail "fetch from offset 95 of partition 1 returned '$got'"

# kcat can produce too, and records persist: a second producer appends.
printf 'x1\nx2\n' | timeout 30 kcat -b "$BOOTSTRAP" -P -t "$TOPIC" -p 2 ||
    h_fail "kcat could not produce"
"$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$TOPIC" \
    --partitions "$PARTS" --count 3 --prefix w --rate 100 >/dev/null ||
    h_fail "second baton-produce failed"
consume >"$H_DIR/all2.txt" || h_fail "kcat could not consume again"
n=$(wc -l <"$H_DIR/all2.txt")
((n == COUNT + 5)) || h_fail "consumed $n records after appending, want $((COUNT + 5))"
cmp -s <(sort "$H_DIR/all.txt") <(grep -v -e ' x[12]$' -e ' w-[0-9]*$' "$H_DIR/all2.txt" | sort) ||
    h_fail "the first $COUNT records changed"
grep -q '^2 100 .* x1$' "$H_DIR/all2.txt" || h_fail "kcat record not at partition 2 offset 100"

# A producer that cannot deliver fails, boundedly.
rc=0
timeout 30 "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$TOPIC" \
    --partitions 4 --count 4 --timeout-ms 2000 >/dev/null 2>"$H_DIR/produce-bad.err" || rc=$?
((rc == 1)) || h_fail "baton-produce to a missing partition: exit $rc, want 1"

# No topic is created on demand: a producer asking for one (librdkafka
# producers ask the broker to create it) and a metadata request naming it
# both see an unknown topic, and Kafka still has only $TOPIC.
topics() { timeout 20 kcat -b "$BOOTSTRAP" -L | sed -n 's/^ *topic "\([^"]*\)" with .*/\1/p' | sort | paste -sd,; }
rc=0
echo x | timeout 30 kcat -b "$BOOTSTRAP" -P -t nosuch -X message.timeout.ms=2000 \
    2>"$H_DIR/kcat-nosuch.err" || rc=$?
((rc != 0)) || h_fail "kcat produced to topic nosuch, which devkafka was not told to create"
timeout 20 kcat -b "$BOOTSTRAP" -L -t nosuch2 >"$H_DIR/meta-nosuch.txt" 2>&1 || true
grep -q 'Unknown topic' "$H_DIR/meta-nosuch.txt" ||
    h_fail "metadata for topic nosuch2: $(<"$H_DIR/meta-nosuch.txt")"
[[ $(topics) == "$TOPIC" ]] || h_fail "devkafka created topics on demand: $(topics)"

# SIGTERM: clean exit 0.
h_kill kafka TERM
rc=0
h_wait_exit kafka 10 || rc=$?
((rc == 0)) || h_fail "baton-devkafka exit $rc after SIGTERM, want 0"
grep -q 'event=stopped' "$H_DIR/kafka.log" || h_fail "no event=stopped in kafka.log"

# SIGINT too (the harness must not leave it ignored in background jobs).
# --topic repeats: two topics, both served, no third.
h_kafka_start other,second 1 3
[[ $BOOTSTRAP =~ ^127\.0\.0\.1:[0-9]+(,127\.0\.0\.1:[0-9]+){2}$ ]] ||
    h_fail "3-broker bootstrap '$BOOTSTRAP'"
for t in other second; do
    out=$("$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic $t --partitions 1 --count 10)
    [[ $out == produced=10 ]] || h_fail "produce to $t on the 3-broker cluster printed '$out'"
done
[[ $(topics) == other,second || $(topics) == second,other ]] || h_fail "two --topic: Kafka has $(topics)"
h_kill kafka INT
rc=0
h_wait_exit kafka 10 || rc=$?
((rc == 0)) || h_fail "baton-devkafka exit $rc after SIGINT, want 0"

# --port N: a fixed bootstrap address, relayed to the first of 3 brokers
# (clients find the brokers through Metadata). A port in use is exit 1
# naming it; a bad one exit 2.
kport=$(h_free_port)
_h_spawn_io kafka2 "$H_DIR/kafka2.out" "$H_DIR/kafka2.log" \
    "$BATON_BIN/baton-devkafka" --topic fixed --partitions 2 --brokers 3 --port "$kport"
h_wait_for 15 "devkafka --port prints its bootstrap" grep -qx "bootstrap=127.0.0.1:$kport" "$H_DIR/kafka2.out"
out=$("$BATON_BIN/baton-produce" --brokers "127.0.0.1:$kport" --topic fixed --partitions 2 --count 20)
[[ $out == produced=20 ]] || h_fail "produce through --port printed '$out'"
n=$(timeout 30 kcat -b "127.0.0.1:$kport" -C -t fixed -o beginning -e -q | wc -l)
((n == 20)) || h_fail "consumed $n records through --port, want 20"
rc=0
"$BATON_BIN/baton-devkafka" --topic fixed --partitions 1 --port "$kport" 2>"$H_DIR/port-taken.err" || rc=$?
((rc == 1)) || h_fail "a second devkafka on port $kport: exit $rc, want 1"
grep -q -- "--port $kport: cannot listen on 127.0.0.1:$kport" "$H_DIR/port-taken.err" ||
    h_fail "a taken --port gives no clear error: $(cat "$H_DIR/port-taken.err")"
for bad in 0 65536 x; do
    rc=0
    "$BATON_BIN/baton-devkafka" --topic t --partitions 1 --port "$bad" 2>"$H_DIR/port-bad.err" || rc=$?
    ((rc == 2)) && grep -q "bad value for --port: '$bad'" "$H_DIR/port-bad.err" ||
        h_fail "--port $bad: exit $rc, $(head -1 "$H_DIR/port-bad.err")"
done
h_stop kafka2
h_pass "devkafka"

# --- ZooKeeper and baton-zk ---------------------------------------------------
h_zk_start 200
zkc() { h_zk --timeout-ms 5000 "$@"; }
zkc create /it '{"a":1}' || h_fail "create /it"
zkc create /it/b 'bee' || h_fail "create /it/b"
zkc create /it/a '' || h_fail "create /it/a"
[[ $(zkc get /it) == '{"a":1}' ]] || h_fail "get /it"
[[ $(zkc ls /it) == $'a\nb' ]] || h_fail "ls /it: '$(zkc ls /it)'"
zkc set /it/b 'bee2' || h_fail "set /it/b"
[[ $(zkc get /it/b) == bee2 ]] || h_fail "get /it/b after set"
st=$(zkc stat /it/b)
[[ $st =~ ^czxid=[0-9]+\ mzxid=[0-9]+\ .*version=1\ .*ephemeralOwner=0x0\ numChildren=0 ]] ||
    h_fail "stat /it/b: '$st'"
czxid=${st#czxid=}
czxid=${czxid%% *}
mzxid=${st#*mzxid=}
mzxid=${mzxid%% *}
((mzxid > czxid)) || h_fail "mzxid $mzxid not above czxid $czxid after set"
zkc exists /it/b || h_fail "exists /it/b"
rc=0
zkc exists /nope || rc=$?
((rc == 1)) || h_fail "exists /nope: exit $rc, want 1"
rc=0
zkc get /nope 2>"$H_DIR/zk-get.err" || rc=$?
((rc == 1)) || h_fail "get /nope: exit $rc, want 1"
grep -q "'/nope'.*no node" "$H_DIR/zk-get.err" || h_fail "get /nope message: $(cat "$H_DIR/zk-get.err")"
rc=0
zkc delete /it 2>/dev/null || rc=$?
((rc == 1)) || h_fail "delete of a non-empty node: exit $rc, want 1"
zkc delete /it/a || h_fail "delete /it/a"
[[ $(zkc ls /it) == b ]] || h_fail "ls /it after delete"
(sleep 0.3 && zkc create /it/late x) &
waiter=$!
zkc wait-exists /it/late 5000 || h_fail "wait-exists /it/late"
wait "$waiter" || h_fail "create /it/late"
rc=0
zkc wait-exists /it/never 300 2>/dev/null || rc=$?
((rc == 1)) || h_fail "wait-exists timeout: exit $rc, want 1"
zkc rmr /it || h_fail "rmr /it"
rc=0
zkc exists /it || rc=$?
((rc == 1)) || h_fail "/it still exists after rmr"

# Nothing listening: exit 3 within the timeout (from the spawn, bounded by
# the default timeout, 10 s: the tight bound is checked below).
port=$(h_free_port)
t0=$(_h_now_ms)
rc=0
"$BATON_BIN/baton-zk" --zk "127.0.0.1:$port" --timeout-ms 1000 ls / 2>"$H_DIR/zk-noconn.err" || rc=$?
ms=$(($(_h_now_ms) - t0))
((rc == 3)) || h_fail "baton-zk with nothing listening: exit $rc, want 3"
((ms < 10000)) || h_fail "baton-zk took $ms ms to give up on a 1000 ms timeout (the default is 10000)"
grep -q 'cannot connect' "$H_DIR/zk-noconn.err" || h_fail "no 'cannot connect' message"
# Timed against a listener that closes every connection: from baton-zk's
# first attempt, as its clock starts, not from its spawn (a loaded
# machine's slow start counted too: it_init once failed so).
port=$(h_free_port)
h_closer closer "$port"
rc=0
"$BATON_BIN/baton-zk" --zk "127.0.0.1:$port" --timeout-ms 1000 ls / 2>"$H_DIR/zk-noconn.err" || rc=$?
t1=$(_h_now_ms)
((rc == 3)) || h_fail "baton-zk with a listener that closes every connection: exit $rc, want 3"
first=$(h_closer_first closer)
[[ -n $first ]] || h_fail "baton-zk never reached the listener on port $port"
ms=$((t1 - first))
((ms < 3000)) || h_fail "baton-zk took $ms ms after its first attempt to give up on a 1000 ms timeout"
h_stop closer

# The harness restarts ZooKeeper on the same port with the same data.
h_zk_stop
h_zk_start 200
zkc create /after-restart x || h_fail "create after restart"
zkc exists /zookeeper || h_fail "root missing after restart"
h_pass "zookeeper and baton-zk"
