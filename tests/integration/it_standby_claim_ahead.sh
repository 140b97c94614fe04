#!/usr/bin/env bash
# it_standby_claim_ahead: with --standby-claim ahead (standby.claim=ahead)
# every named standby keeps a claim of the partitions it stands by for,
# queued behind the owner's, all along (docs/design.md, "Claims made ahead
# of time"):
#   1. Settled, every partition's claims queue is the owner's claim, then
#      its standby's (status's "standby"; the claims' bodies name them);
#      a worker's claims made ahead in one poll went in one multi.
#   2. A leave (SIGTERM) and a crash (SIGKILL), the coordinator frozen
#      (SIGSTOP) so only the standbys can move anything: each standby takes
#      its partitions with the claim it made ahead of time -- the new epoch
#      is that claim's czxid, read before -- and creates none for them.
#      The standby settles each queue on the owner's claim's deletion
#      event, with no read (event=queue_checked ...
#      reason=predecessor_deleted).
#   2b. A standby's claim deleted by hand while it waits, then the owner
#      leaves: the standby hears of its own claim's deletion first (it
#      watches it too, ZooKeeper keeps the order), finds it lost
#      (event=claim_lost) instead of acquiring on the owner's deletion with
#      a claim that is gone, and owns at the czxid of a claim that is
#      there.
#   3. The owner lets go without leaving (its claim deleted by hand; the
#      coordinator's handoff watchdog off, so nothing but the yield can
#      clear the way): the standby's claim, lowest without a promotion,
#      yields (event=standby_claim_yield,
#      baton_worker_standby_claim_yields_total) and the owner owns again.
#      Then a move (batonctl pin): the queues follow the new assignment.
#   4. Continuous input throughout: every record once, epochs never fall.
# A bad value of --standby-claim is a usage error naming the flag.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_standby_claim_ahead
h_zk_start
B_PARTITIONS=6
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

rc=0
"$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id wbad --brokers "$BOOTSTRAP" \
    --sink "sqlite:$B_SINK" --standby-claim early >"$H_DIR/bad.out" 2>&1 || rc=$?
((rc == 2)) || h_fail "--standby-claim early should exit 2, got $rc: $(cat "$H_DIR/bad.out")"
grep -q -- "--standby-claim: 'early'" "$H_DIR/bad.out" || h_fail "unclear error: $(cat "$H_DIR/bad.out")"

# The coordinator's session outlives its freeze; no handoff watchdog (3.).
B_SESSION_MS=30000 b_coord c1 --handoff-timeout-ms 0
B_SESSION_MS=3000
declare -A MPORT=()
# start W: a worker with claims ahead, serving /metrics on a port of its own.
start() {
    MPORT[$1]=$(h_free_port)
    b_worker "$1" --standby-claim ahead --log-level debug --metrics-addr "127.0.0.1:${MPORT[$1]}"
}
# metric W NAME: W's value of counter NAME (0 before the first).
metric() { b_counter "127.0.0.1:${MPORT[$1]}" "$2"; }
start w1
start w2
start w3
h_wait_for 30 "three workers share the partitions, each standby's claim queued behind its owner's" \
    b_queued_ahead 3
# Two or more claims made ahead in one poll go in one multi (its size is
# logged as batch=N): the six standby duties over three workers give some
# worker two, where the owners' own claims, two each, are made one by one.
grep -hE 'event=claimed partition=[0-9]+ claim=[^ ]+ batch=([2-9]|[0-9]{2,})' \
    "$H_DIR/w1.log" "$H_DIR/w2.log" "$H_DIR/w3.log" >/dev/null ||
    h_fail "no worker made its claims ahead of time in one multi (event=claimed ... batch=N)"

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 9000 --rate 500
h_wait_for 10 "records flowing" b_sink_has 300

# takeover VICTIM SIGNAL WHAT: freezes c1, stops VICTIM with SIGNAL; each of
# VICTIM's partitions goes to the standby whose claim was queued behind
# VICTIM's, at that claim's czxid.
takeover() {
    local victim=$1 sig=$2 what=$3 parts p s c
    local -A sb=() cz=() lines=()
    parts=$(b_partitions_of "$victim")
    [[ -n $parts ]] || h_fail "$victim owns nothing"
    for p in $parts; do
        read -r _ sb[$p] <<<"$(b_queue "$p")"
        [[ -n ${sb[$p]} ]] || h_fail "$what: partition $p has no claim queued behind $victim's"
        c=$(b_claims "$p" | sed -n 2p)
        cz[$p]=$(h_zk stat "$(b_claims_dir "$p")/$c" | sed -E 's/.*czxid=([0-9]+).*/\1/')
        lines[$p]=$(wc -l <"$H_DIR/${sb[$p]}.log")
    done
    h_log "$what: $victim's partitions ($parts) queued ahead on (${sb[*]})"
    h_kill c1 STOP
    h_kill "$victim" "$sig"
    for p in $parts; do
        h_wait_for 15 "$what: partition $p owned by ${sb[$p]}, coordinator frozen" \
            bash -c "[[ \$(b_owner $p) == ${sb[$p]} ]]"
        [[ $(b_epoch "$p") == "${cz[$p]}" ]] ||
            h_fail "$what: partition $p's epoch is $(b_epoch "$p"), not ${cz[$p]}, the czxid of ${sb[$p]}'s claim made ahead"
        # No claim made for it since the takeover began: the one queued ahead was used.
        # (grep without -q reads to the end: under pipefail, one that quit
        # at its first match would fail the pipeline with tail's SIGPIPE)
        if tail -n +"${lines[$p]}" "$H_DIR/${sb[$p]}.log" | grep -E "event=claimed partition=$p " >/dev/null; then
            h_fail "$what: ${sb[$p]} created a claim of partition $p in the takeover"
        fi
        h_wait_for 10 "$what: ${sb[$p]} acquired partition $p" \
            b_log_has "${sb[$p]}" "event=acquired partition=$p epoch=${cz[$p]} "
        # ... on the owner's claim's deletion event, without reading the queue
        tail -n +"${lines[$p]}" "$H_DIR/${sb[$p]}.log" |
            grep -E "event=queue_checked partition=$p .*reason=predecessor_deleted" >/dev/null ||
            h_fail "$what: ${sb[$p]} did not settle partition $p on its predecessor's deletion"
    done
    h_kill c1 CONT
    h_wait_for 30 "$what: the coordinator's rebalance agrees, standbys queued again" b_queued_ahead 2
}
export -f b_owner b_epoch b_status b_ctl
export ZK B_GROUP BATON_BIN H_DIR

takeover w1 TERM "leave"
rc=0; h_wait_exit w1 10 || rc=$?
((rc == 0)) || h_fail "w1 exited $rc on SIGTERM"
start w1
h_wait_for 30 "w1 back: three share the partitions, standbys queued" b_queued_ahead 3
takeover w2 KILL "crash"
start w2
h_wait_for 30 "w2 back: three share the partitions, standbys queued" b_queued_ahead 3

# --- 2b. a standby's claim deleted while it waits ----------------------------
# The standby would settle its queue on the owner's claim's deletion
# without a read; its own claim's deletion came first, and reaches it
# first, so it never acquires with the claim that is gone: it finds it
# lost, claims again, and ends owning at the czxid of a claim that is
# there.
# owned_at_lowest P W: W owns P at the czxid of P's lowest claim, W's.
owned_at_lowest() {
    local c
    c=$(b_claims "$1" | sed -n 1p)
    [[ -n $c && $(b_owner "$1") == "$2" ]] || return 1
    [[ $(h_zk get "$(b_claims_dir "$1")/$c" | jq -r .worker) == "$2" ]] || return 1
    [[ $(b_epoch "$1") == "$(h_zk stat "$(b_claims_dir "$1")/$c" | sed -E 's/.*czxid=([0-9]+).*/\1/')" ]]
}
victim=w3
p=$(b_partitions_of $victim | awk '{ print $1 }')
[[ -n $p ]] || h_fail "orphan: $victim owns nothing"
read -r _ sbw <<<"$(b_queue "$p")"
[[ -n $sbw ]] || h_fail "orphan: partition $p has no claim queued behind $victim's"
from=$(wc -l <"$H_DIR/$sbw.log")
gone=$(b_claims "$p" | sed -n 2p)
gone_cz=$(h_zk stat "$(b_claims_dir "$p")/$gone" | sed -E 's/.*czxid=([0-9]+).*/\1/')
h_log "orphan: deleting $sbw's claim of partition $p ($gone), then $victim leaves"
h_zk delete "$(b_claims_dir "$p")/$gone"
h_kill c1 STOP
h_kill $victim TERM
h_wait_for 15 "orphan: $sbw finds the claim it took partition $p with gone" \
    bash -c "tail -n +$from '$H_DIR/$sbw.log' | grep -E 'event=claim_lost partition=$p ' >/dev/null"
h_wait_for 15 "orphan: $sbw owns partition $p at its new claim's czxid" owned_at_lowest "$p" "$sbw"
if tail -n +"$from" "$H_DIR/$sbw.log" | grep -E "event=acquired partition=$p epoch=$gone_cz " >/dev/null; then
    h_fail "orphan: $sbw acquired partition $p with its deleted claim $gone (epoch $gone_cz)"
fi
h_kill c1 CONT
rc=0; h_wait_exit $victim 10 || rc=$?
((rc == 0)) || h_fail "$victim exited $rc on SIGTERM"
start $victim
h_wait_for 30 "$victim back: three share the partitions, standbys queued" b_queued_ahead 3

# --- 3. the owner lets go without leaving: the standby's claim yields ------
# The owner's claim deleted by hand (as an operator could): the standby's
# claim is lowest without a promotion (the owner's member node lives). It
# must yield, or the owner, claiming again, would wait behind it for good
# (no watchdog here). The owner then owns again, at a new epoch; the
# standby queues again behind it after its back-off.
p=0
owner=$(b_owner $p)
read -r _ sbw <<<"$(b_queue $p)"
[[ -n $sbw ]] || h_fail "yield: partition $p has no claim queued behind $owner's: $(b_claims $p)"
y0=$(metric "$sbw" baton_worker_standby_claim_yields_total)
e0=$(b_epoch $p)
from=$(wc -l <"$H_DIR/$sbw.log")
# yielded_since W P L: W logged a yield of partition P after its line L.
yielded_since() { tail -n +"$3" "$H_DIR/$1.log" | grep -E "event=standby_claim_yield partition=$2 " >/dev/null; }
h_log "yield: deleting $owner's claim of partition $p; $sbw's is queued behind it"
h_zk delete "$(b_claims_dir $p)/$(b_claims $p | sed -n 1p)"
h_wait_for 10 "$sbw yields partition $p" yielded_since "$sbw" $p "$from"
h_wait_for 20 "partition $p owned by $owner again, $sbw queued behind" \
    bash -c "[[ \$(b_owner $p) == $owner && \$(b_epoch $p) != $e0 ]]"
y1=$(metric "$sbw" baton_worker_standby_claim_yields_total)
((y1 > y0)) || h_fail "$sbw yielded, but standby_claim_yields_total stayed $y0"
h_wait_for 20 "after the yield: all active, standbys queued" b_queued_ahead 3

# --- a move: the queues follow the new assignment ---------------------------
owner=$(b_owner $p)
for t in w1 w2 w3; do [[ $t != "$owner" ]] && target=$t; done
h_log "move: partition $p from $owner to $target"
b_ctl pin $p "$target" >/dev/null
h_wait_for 20 "partition $p owned by $target" bash -c "[[ \$(b_owner $p) == $target ]]"
h_wait_for 30 "after the move: all active, standbys queued" b_queued_ahead 3
b_ctl unpin $p >/dev/null

rc=0; h_wait_exit producer 40 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 30 "all 9000 records in the sink" b_sink_has 9000
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "standbys held claims ahead, took a leave and a crash with them, and yielded to a live owner"
