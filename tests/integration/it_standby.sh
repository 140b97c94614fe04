#!/usr/bin/env bash
# it_standby: every partition's standby (the worker the coordinator would
# move it to if its owner left, published in assignment/<standby> as
# "standby": {"<owner>": {"partitions": [...]}}) takes it over by itself
# when the owner's member node is marked leaving (SIGTERM) or deleted (a
# crash, once its session expires) -- here while the coordinator is frozen
# with SIGSTOP, so nothing but the standby mechanism can move anything.
# When the coordinator resumes, its own rebalance names the same owners:
# the moved partitions keep the epochs the standbys took them with (no
# second handoff). Continuous input throughout; every record lands exactly
# once, epochs never fall.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_standby
h_zk_start
B_PARTITIONS=6
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
# The coordinator's session outlives its freeze; the workers' is short.
B_SESSION_MS=20000 b_coord c1
B_SESSION_MS=3000
declare -A MPORT=()
# start W: a worker serving /metrics on a port of its own.
start() {
    MPORT[$1]=$(h_free_port)
    b_worker "$1" --metrics-addr "127.0.0.1:${MPORT[$1]}"
}
# promotions W: W's baton_worker_standby_promotions_total (0 before the first).
promotions() {
    local v
    v=$(curl -sS --max-time 5 "http://127.0.0.1:${MPORT[$1]}/metrics" |
        awk '$1 == "baton_worker_standby_promotions_total" { print $2 }')
    echo "${v:-0}"
}
start w1
start w2
start w3
h_wait_for 30 "w1, w2 and w3 share the partitions" b_all_active 3
# batonctl status names each partition's standby: another live worker.
h_wait_for 10 "status names a standby for every partition" \
    b_jq 'all(.partitions[]; .standby != null and .standby != .assigned)'
b_ctl status >"$H_DIR/status.txt"
grep -Eq '^PARTITION +ASSIGNED +OWNER +EPOCH +STATE +FOR +CLAIMS +LAG +STANDBY$' "$H_DIR/status.txt" ||
    h_fail "the partitions table has no STANDBY column: $(cat "$H_DIR/status.txt")"

# standby_of OWNER P: the worker whose assignment node stands by for P of OWNER.
standby_of() {
    local s
    for s in w1 w2 w3; do
        [[ $s == "$1" ]] && continue
        if h_zk get "/baton/$B_GROUP/assignment/$s" |
            jq -e --arg o "$1" --argjson p "$2" '(.standby[$o].partitions // []) | index($p) != null' >/dev/null; then
            echo "$s"
            return 0
        fi
    done
    return 1
}
# owned_by_standbys OWNER "P..." "S...": each P's current owner (its lowest
# claim) is the matching S.
owned_by_standbys() {
    local -a ps=($2) ss=($3)
    local i
    for i in "${!ps[@]}"; do
        [[ $(b_owner "${ps[i]}") == "${ss[i]}" ]] || return 1
    done
}
epochs_of() { local p; for p in $1; do printf '%s ' "$(b_epoch "$p")"; done; }

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 9000 --rate 500
h_wait_for 10 "records flowing" b_sink_has 300

# takeover VICTIM SIGNAL WHAT: freezes c1, stops VICTIM with SIGNAL, and
# checks that VICTIM's partitions go to their standbys by themselves.
takeover() {
    local victim=$1 sig=$2 what=$3 parts sbs="" p s
    parts=$(b_partitions_of "$victim")
    [[ -n $parts ]] || h_fail "$victim owns nothing"
    for p in $parts; do
        s=$(standby_of "$victim" "$p") || h_fail "partition $p of $victim has no standby"
        sbs+="$s "
    done
    h_log "$what: $victim's partitions ($parts) stand by on ($sbs)"
    local gen s0=0 s1=0
    gen=$(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation)
    for s in w1 w2 w3; do
        [[ $s == "$victim" ]] || s0=$((s0 + $(promotions "$s")))
    done
    h_kill c1 STOP
    h_kill "$victim" "$sig"
    h_wait_for 15 "$what: $victim's partitions owned by their standbys, coordinator frozen" \
        owned_by_standbys "$victim" "$parts" "$sbs"
    [[ $(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation) == "$gen" ]] ||
        h_fail "$what: the assignment changed while the coordinator was frozen"
    for s in $sbs; do
        b_log_has "$s" "event=standby_promoted owner=$victim " || h_fail "$s did not log its promotion"
    done
    for s in w1 w2 w3; do
        [[ $s == "$victim" ]] || s1=$((s1 + $(promotions "$s")))
    done
    local n
    n=$(wc -w <<<"$parts")
    ((s1 - s0 == n)) || h_fail "$what: standby_promotions_total rose by $((s1 - s0)), not $n"
    local before after
    before=$(epochs_of "$parts")
    h_kill c1 CONT
    h_wait_for 20 "$what: the coordinator's rebalance agrees" b_all_active 2
    [[ $(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation) != "$gen" ]] ||
        h_fail "$what: the coordinator never published after $victim went"
    after=$(epochs_of "$parts")
    [[ $before == "$after" ]] || h_fail "$what: partitions moved again after the coordinator resumed (epochs $before -> $after)"
}

takeover w1 TERM "leave"
rc=0; h_wait_exit w1 10 || rc=$?
((rc == 0)) || h_fail "w1 exited $rc on SIGTERM"
start w1
h_wait_for 30 "w1 back: three share the partitions" b_all_active 3
takeover w2 KILL "crash"
grep -q "reason=gone" <(grep -h "event=standby_promoted owner=w2 " "$H_DIR"/w1.log "$H_DIR"/w3.log) ||
    h_fail "the crash's promotion did not say reason=gone"

rc=0; h_wait_exit producer 40 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 30 "all 9000 records in the sink" b_sink_has 9000
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "standbys took over a leave and a crash with the coordinator frozen; its rebalance agreed"
