#!/usr/bin/env bash
# it_fault_badinput: bad input gets a clear error naming what was wrong,
# never a crash, never lost data.
#   - unknown flags and a malformed --config file exit 2 naming the flag/line
#   - an unparseable Kafka bootstrap and an unopenable sink fail at start
#   - unreachable ZooKeeper: worker, coordinator and batonctl exit non-zero
#     within their connect timeout
#   - unreachable Kafka is transient: the worker logs the broker errors and
#     keeps running (it cannot know until it fetches), and leaves cleanly
#   - corrupt, oversized and wrongly typed znodes (config, member,
#     assignment, assignment meta, claim) are logged with their path while
#     the worker and coordinator keep running; afterwards every record still
#     lands exactly once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_fault_badinput
B=$BATON_BIN

# expect_exit WANT OUTFILE PATTERN CMD...: CMD (bounded by timeout) exits
# WANT ("nz" = any non-zero below 124) and OUTFILE matches PATTERN.
expect_exit() {
    local want=$1 out=$2 pat=$3 rc=0
    shift 3
    timeout 30 "$@" >"$out" 2>&1 || rc=$?
    if [[ $want == nz ]]; then
        ((rc > 0 && rc < 124)) || h_fail "$* exited $rc, wanted a non-zero failure: $(head -c 600 "$out")"
    else
        ((rc == want)) || h_fail "$* exited $rc, wanted $want: $(head -c 600 "$out")"
    fi
    grep -Eq -- "$pat" "$out" || h_fail "$*: output does not match '$pat': $(head -c 600 "$out")"
}

# --- flags, config files, start-up errors (no servers needed) ---------------
o=$H_DIR/out
for b in baton-worker baton-coordinator batonctl; do
    expect_exit 2 "$o" "'--no-such-flag'" "$B/$b" --no-such-flag
done
printf 'zookeeper.connect=127.0.0.1:1\nthis line is not a property\n' >"$H_DIR/bad.properties"
expect_exit 2 "$o" 'bad.properties:2' "$B/baton-coordinator" --config "$H_DIR/bad.properties"
expect_exit 2 "$o" 'bad.properties:2' "$B/baton-worker" --config "$H_DIR/bad.properties"
expect_exit 2 "$o" "session-timeout-ms" "$B/baton-worker" --zk 127.0.0.1:1 --group g --id w \
    --brokers 127.0.0.1:1 --sink "sqlite:$H_DIR/x.db" --session-timeout-ms 12abc
common=(--group g --id w1 --sink "sqlite:$H_DIR/x.db" --connect-timeout-ms 1000)
expect_exit nz "$o" "event=kafka_config_error .*--brokers: 'no-port-here'" \
    "$B/baton-worker" --zk 127.0.0.1:1 --brokers no-port-here "${common[@]}"
expect_exit nz "$o" "--brokers: 'h:99999'" \
    "$B/baton-worker" --zk 127.0.0.1:1 --brokers 127.0.0.1:9092,h:99999 "${common[@]}"
expect_exit nz "$o" "event=sink_open_failed .*/no/such/dir/x.db" "$B/baton-worker" --zk 127.0.0.1:1 \
    --brokers 127.0.0.1:9092 --group g --id w1 --sink sqlite:/no/such/dir/x.db
expect_exit 2 "$o" "--sink: unknown sink scheme 'nosuchscheme'" "$B/baton-worker" --zk 127.0.0.1:1 \
    --brokers 127.0.0.1:9092 --group g --id w1 --sink "nosuchscheme:whatever"

# --- CLI hygiene (issue 15): a bad or missing value exits 2 naming it --------
expect_exit 2 "$o" "--sink: unknown sink scheme 'mysql'" "$B/baton-worker" --zk 127.0.0.1:1 \
    --brokers 127.0.0.1:9092 --group g --id w1 --sink mysql://foo
expect_exit 2 "$o" "--kafka 'fetch.wait.max.mss=5': No such configuration property" \
    "$B/baton-worker" --zk 127.0.0.1:1 --brokers 127.0.0.1:9092 --group g --id w1 \
    --sink "sqlite:$H_DIR/x.db" --kafka fetch.wait.max.mss=5
[[ ! -e $H_DIR/x.db ]] || h_fail "a usage error left the sink file behind"
expect_exit 2 "$o" "^baton-worker: --id is required" "$B/baton-worker" --zk 127.0.0.1:1 \
    --brokers 127.0.0.1:9092 --group g --sink "sqlite:$H_DIR/x.db"
expect_exit 2 "$o" "^baton-coordinator: --group is required" "$B/baton-coordinator" --zk 127.0.0.1:1
expect_exit 2 "$o" "^baton-run: --key is required" "$B/baton-run" --zk 127.0.0.1:1 --group g -- true
expect_exit 2 "$o" "^baton-worker: option '--zk' needs a value" "$B/baton-worker" --zk
expect_exit 2 "$o" "^baton-fence-write: option '--state' needs a value" "$B/baton-fence-write" --state
ctl=("$B/batonctl" --zk 127.0.0.1:1 --group g)
expect_exit 2 "$o" "^batonctl: --sink: unknown sink scheme 'mysql'" "${ctl[@]}" fences --sink mysql://foo
expect_exit 2 "$o" "^batonctl: --kafka 'fetch.wait.max.mss=5'" \
    "${ctl[@]}" status --brokers 127.0.0.1:9092 --kafka fetch.wait.max.mss=5
expect_exit 2 "$o" "^batonctl: --kafka 'fetch.wait.max.mss=5'" \
    "${ctl[@]}" init --topic t --partitions 1 --brokers 127.0.0.1:9092 --kafka fetch.wait.max.mss=5
for args in "status --partition" "status --worker" "init --topic" "fences --sink" \
    "watch --max-updates" "partitions --sink" "sink --sink" "evict --timeout" \
    "pin --zk-auth" "history --root" "--group"; do
    # shellcheck disable=SC2086 # word splitting wanted
    expect_exit 2 "$o" "^batonctl: option '${args##* }' needs a value\$" "${ctl[@]}" $args
    [[ $(wc -l <"$o") -eq 2 ]] || h_fail "batonctl $args: more than one message: $(cat "$o")"
done
expect_exit 2 "$o" "^batonctl: option '--json' takes no value" "${ctl[@]}" status --json=yes
expect_exit 2 "$o" "^batonctl: unknown option '--nope'" "${ctl[@]}" status --nope
expect_exit 1 "$o" "'nosuchhost.invalid:2181': a host name does not resolve" \
    "$B/baton-coordinator" --zk nosuchhost.invalid:2181 --group g
grep -q "No such file or directory" "$o" && h_fail "an unresolvable host: $(cat "$o")"
for b in baton-worker baton-coordinator batonctl baton-run baton-devkafka baton-fence-write; do
    expect_exit 0 "$o" "^$b [0-9]+\.[0-9]+\.[0-9]+" "$B/$b" --version
    [[ $(wc -l <"$o") -eq 1 ]] || h_fail "$b --version: $(cat "$o")"
done

# --- unreachable ZooKeeper: bounded, non-zero --------------------------------
dead=127.0.0.1:$(h_free_port)
expect_exit nz "$o" "cannot connect to ZooKeeper at '$dead' within 1000 ms" \
    "$B/baton-worker" --zk "$dead" --brokers 127.0.0.1:9092 "${common[@]}"
expect_exit nz "$o" "cannot connect to ZooKeeper" \
    "$B/baton-coordinator" --zk "$dead" --group g --connect-timeout-ms 1000
expect_exit nz "$o" "$dead|ZooKeeper" "$B/batonctl" --zk "$dead" --group g --timeout 1000 status
h_log "flags, files and unreachable servers: ok"

# --- a running group ---------------------------------------------------------
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1 --handoff-timeout-ms 2000
b_worker w1
h_wait_for 20 "w1 owns everything" b_all_active 1
b_produce 100 a
h_wait_for 15 "first records in the sink" b_sink_has 100

# alive_both: neither w1 nor c1 has exited (a crash would end them).
alive_both() {
    h_alive w1 || h_fail "w1 exited: $(tail -n 5 "$H_DIR/w1.log")"
    h_alive c1 || h_fail "c1 exited: $(tail -n 5 "$H_DIR/c1.log")"
}

# Unreachable Kafka is transient: a worker of another group keeps running.
b_ctl_g2() { "$B/batonctl" --zk "$ZK" --group g2 --timeout 5000 "$@"; }
b_ctl_g2 init --topic "$B_TOPIC" --partitions 2 >/dev/null
kdead=127.0.0.1:$(h_free_port)
h_spawn wk "$B/baton-worker" --zk "$ZK" --group g2 --id wk --brokers "$kdead" \
    --sink "sqlite:$H_DIR/g2.db" --session-timeout-ms 2000
h_spawn c2 "$B/baton-coordinator" --zk "$ZK" --group g2 --id c2 --session-timeout-ms 2000
h_wait_for 20 "wk owns g2's partitions" bash -c \
    "'$B/batonctl' --zk '$ZK' --group g2 --timeout 5000 status --json | jq -e 'all(.partitions[]; .owner == \"wk\" and .state == \"active\")'"
h_wait_for 20 "wk logs the unreachable broker" b_log_has wk "$kdead"
h_alive wk || h_fail "wk should keep running while Kafka is unreachable"
h_stop wk
rc=0; h_wait_exit wk 0 || rc=$?
((rc == 0)) || h_fail "wk did not leave cleanly ($rc)"
h_stop c2

cfg_path=/baton/g/config
good_cfg=$(h_zk get $cfg_path)
# corrupt_check NAME PATTERN DESC: NAME's log gets a line matching PATTERN.
corrupt_check() { h_wait_for 20 "$3" b_log_has "$1" "$2"; }

# Config: not JSON, wrong type, oversized. Running processes keep their
# config; a new worker refuses to start and says why.
h_zk set $cfg_path 'this is not json' >/dev/null
corrupt_check w1 "event=config_error .*$cfg_path" "w1 reports the corrupt config"
corrupt_check c1 "event=config_error .*$cfg_path" "c1 reports the corrupt config"
expect_exit nz "$o" "$cfg_path" "$B/baton-worker" --zk "$ZK" --group g --id w9 \
    --brokers "$BOOTSTRAP" --sink "sqlite:$H_DIR/w9.db" --connect-timeout-ms 5000
alive_both
h_zk set $cfg_path "$(jq -c '.partitions = "four"' <<<"$good_cfg")" >/dev/null
h_wait_for 20 "the wrong type is named" bash -c "grep -c 'event=config_error' '$H_DIR/c1.log' | grep -v '^1$' >/dev/null"
grep -q 'partitions' <<<"$(grep 'event=config_error' "$H_DIR/c1.log" | tail -n 1)" ||
    h_fail "c1's config error does not name the wrong field: $(grep 'event=config_error' "$H_DIR/c1.log" | tail -n 1)"
# 120 kB (past the 4 kB first read, below the kernel's argument limit)
# with an oversized topic name.
big=$(head -c 120000 /dev/zero | tr '\0' 'x')
h_zk set $cfg_path "$(jq -c --arg t "$big" '.topic = $t' <<<"$good_cfg")" >/dev/null
# Wait for the topic's error itself: the previous config may be reported
# more than once (each read of it logs), so counting lines races.
h_wait_for 20 "the oversized config is reported" bash -c "grep 'event=config_error' '$H_DIR/c1.log' | tail -n 1 | grep \"field 'topic'\" >/dev/null"
grep 'event=config_error' "$H_DIR/c1.log" | tail -n 1 | grep topic >/dev/null ||
    h_fail "the oversized config's error does not name the topic: $(grep 'event=config_error' "$H_DIR/c1.log" | tail -n 1 | head -c 300)"
alive_both
h_zk set $cfg_path "$good_cfg" >/dev/null

# Member: a malformed workers/ node counts with capacity 1; then it goes.
h_zk create /baton/g/workers/zz '{"id":' >/dev/null
corrupt_check c1 "event=corrupt_znode path=/baton/g/workers/zz" "c1 reports the corrupt member"
h_zk delete /baton/g/workers/zz >/dev/null
# Let the rebalance zz's departure causes finish first: it rewrites w1's
# node anyway and would race the corruption below.
h_wait_for 20 "w1 owns everything again" b_all_active 1
alive_both

# Assignment: w1's node not JSON, then a generation of the wrong type: w1
# keeps what it owns, the coordinator rewrites the node (at its next resync).
h_zk set /baton/g/assignment/w1 'garbage{' >/dev/null
corrupt_check w1 "event=corrupt_znode path=/baton/g/assignment/w1 .*action=keep_current" "w1 reports its corrupt assignment"
corrupt_check c1 "event=corrupt_znode path=/baton/g/assignment/w1 .*action=rewrite" "c1 rewrites w1's assignment"
h_wait_for 20 "w1's assignment is valid again" bash -c "'$B/baton-zk' --zk '$ZK' get /baton/g/assignment/w1 | jq -e '.partitions | length == 4'"
h_zk set /baton/g/assignment/w1 '{"generation":"seven","partitions":[0,1,2,3]}' >/dev/null
h_wait_for 20 "w1 names the wrongly typed generation" bash -c "grep 'event=corrupt_znode path=/baton/g/assignment/w1' '$H_DIR/w1.log' | tail -n 1 | grep generation >/dev/null"
# The assignment meta node.
h_zk set /baton/g/assignment '[1,2' >/dev/null
corrupt_check c1 "event=corrupt_znode path=/baton/g/assignment error" "c1 reports the corrupt assignment meta"
alive_both

# Claim: w1's own claim on partition 0 gets garbage data. A new leader (all
# partitions looked at after an election) reports it but does not revoke:
# the claim's session is its owner's.
claim=$(h_zk ls /baton/g/partitions/0/claims | head -n 1)
h_zk set "/baton/g/partitions/0/claims/$claim" '\x00not a claim' >/dev/null
h_stop c1
b_coord c1 --handoff-timeout-ms 2000
corrupt_check c1 "event=corrupt_znode path=/baton/g/partitions/0/claims/$claim" "the new leader reports the corrupt claim"
rc=0; timeout 30 "$B/batonctl" --zk "$ZK" --group g --timeout 5000 status >"$o" 2>&1 || rc=$?
((rc < 124)) || h_fail "batonctl status crashed or hung on a corrupt claim ($rc): $(head -c 400 "$o")"
grep -q "$claim" "$o" || h_fail "batonctl status does not name the corrupt claim: $(head -c 600 "$o")"
h_zk set "/baton/g/partitions/0/claims/$claim" '{"worker":"w1","generation":1}' >/dev/null
h_wait_for 15 "every partition active with w1" b_all_active 1
b_log_has c1 'event=forced_revoke' && h_fail "a claim of the owner's own session was revoked"
alive_both

# Text output: a string read from a znode with an escape sequence in it (a
# terminal's "clear screen"), a C1 control (U+009B, CSI on its own in some
# terminals) and a right-to-left override (U+202E: what follows reads
# backwards) is printed with '?' for each (tables go through the same
# cell text).
sink_node=$(h_zk get /baton/g/sink)
h_zk set /baton/g/sink "$(jq -c '.sink_uri = "sqlite:\u001b[2J/x\u009b1m\u202ebd.y"' <<<"$sink_node")" >/dev/null
b_ctl sink show >"$o" || h_fail "sink show failed: $(cat "$o")"
grep -q $'\x1b' "$o" && h_fail "sink show printed an escape sequence read from the binding"
grep -qaF -e $'\xc2\x9b' -e $'\xe2\x80\xae' "$o" && h_fail "sink show printed a C1 or bidirectional control"
grep -q '^sink uri:     sqlite:?\[2J/x?1m?bd\.y$' "$o" || h_fail "sink show: $(grep 'sink uri' "$o")"
h_zk set /baton/g/sink "$sink_node" >/dev/null
alive_both

b_produce 100 b
h_wait_for 20 "all 200 records in the sink" b_sink_has 200
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
if grep -El 'AddressSanitizer|runtime error|Segmentation|Aborted' "$H_DIR"/*.log "$o"; then
    h_fail "a process crashed or hit a sanitizer error"
fi
h_pass "every bad input named in a clear error; no crash; exactly once"
