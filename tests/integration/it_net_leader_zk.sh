#!/usr/bin/env bash
# it_net_leader_zk: the leading coordinator cut off from ZooKeeper by a
# silent cut (tests/lib/net.sh: no RST, no FIN) steps down on its own clock,
# the workers' one: no answer for 2/3 of its session and it stops leading
# (event=leader_suspended, baton_coordinator_leader 0,
# baton_coordinator_leader_suspended 1), before the server can expire its
# session and the standby take over, so two coordinators never both believe
# they lead (issue 18).
# 1. A cut that ends inside the session: c1 suspends no later than 2/3 of
#    the session (+ TOL_MS for load) after the last bytes its proxy passed
#    from ZooKeeper; healed right after, it is answered again and leads
#    again with the same epoch; c2 never led.
# 2. A cut past the session: c1 suspends in time again, c2 is elected only
#    after that and publishes (a new worker gets partitions); after the heal
#    c1's session has expired and it rejoins as a follower; the group
#    converges and every record lands exactly once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
source "$BATON_SRC/tests/lib/net.sh"
h_init it_net_leader_zk
h_zk_start

B_PARTITIONS=4
T_MS=4000
LIMIT_MS=$((T_MS * 2 / 3))
TOL_MS=${TOL_MS:-600}
TOTAL=4000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

# nth_line NAME PATTERN N: the Nth line of NAME's log matching PATTERN.
nth_line() { grep -E -- "$2" "$H_DIR/$1.log" | sed -n "${3}p"; }
has_nth() { [[ -n $(nth_line "$@") ]]; }

# c1 reaches ZooKeeper only through its proxy; c2 directly, and later.
net_proxy_start c1-zk "$ZK"
m1=127.0.0.1:$(h_free_port)
m2=127.0.0.1:$(h_free_port)
h_spawn c1 "$BATON_BIN/baton-coordinator" --zk "${NET_ADDR[c1-zk]}" --group "$B_GROUP" --id c1 \
    --session-timeout-ms $T_MS --metrics-addr "$m1"
h_wait_for 15 "c1 leads" b_log_has c1 'event=elected'
B_SESSION_MS=$T_MS b_coord c2 --metrics-addr "$m2"
h_wait_for 15 "c2 is a candidate" b_log_has c2 'event=candidate node='
B_SESSION_MS=6000 b_worker w1
B_SESSION_MS=6000 b_worker w2
h_wait_for 20 "w1 and w2 own everything" b_all_active 2
h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 200
h_wait_for 20 "records flowing" b_sink_has 100
epoch1=$(nth_line c1 'event=elected' 1 | grep -oE 'epoch=[0-9]+')

# gauge NAME: the value of NAME on the last scraped page (PAGE).
gauge() { b_metric_in "$1" <<<"$PAGE"; }

# cut_c1 N [heal]: cuts c1 from ZooKeeper both ways, waits for its Nth
# event=leader_suspended and checks it came no later than 2/3 of the
# session (+ TOL_MS) after the last bytes from ZooKeeper. Sets SUSP_MS.
# With "heal": c1's metrics page is scraped (PAGE) and the cut healed as
# soon as the suspension is seen, before anything else: the session
# expires only a third of it later, and a loaded machine's checks must
# not eat that.
cut_c1() {
    local n=$1 last line
    net_cut c1-zk both
    last=$NET_LAST_DOWN
    h_log "cut c1 from ZooKeeper (last answer passed at $last; limit $LIMIT_MS + $TOL_MS ms)"
    h_wait_for $((T_MS / 1000 + 5)) "c1 suspends its leadership" has_nth c1 'event=leader_suspended' "$n" ||
        h_fail "c1 never stopped leading while cut off from ZooKeeper"
    if [[ ${2:-} == heal ]]; then
        # The gauges follow the log line by one turn of c1's loop.
        local i
        for ((i = 0; i < 10; i++)); do
            PAGE=$(b_scrape "$m1") || PAGE=
            [[ $(gauge baton_coordinator_leader) == 0 && $(gauge baton_coordinator_leader_suspended) == 1 ]] && break
            _h_nap 0.1
        done
        net_heal c1-zk
    fi
    line=$(nth_line c1 'event=leader_suspended' "$n")
    SUSP_MS=$(b_ts_ms "$line")
    local after=$((SUSP_MS - last))
    ((after <= LIMIT_MS + TOL_MS)) ||
        h_fail "c1 stopped leading $after ms after its last ZooKeeper answer (limit $LIMIT_MS + $TOL_MS ms): $line"
    nth_line c1 'event=step_down reason=zk_silent' "$n" | grep . >/dev/null ||
        h_fail "c1 logged leader_suspended without its step_down"
    SUSP_AFTER=$after
}

# --- 1. a cut inside the session: c1 leads again ---------------------------
cut_c1 1 heal
a1=$SUSP_AFTER
[[ $(gauge baton_coordinator_leader) == 0 ]] || h_fail "c1 suspended, yet its leader gauge is not 0"
[[ $(gauge baton_coordinator_leader_suspended) == 1 ]] || h_fail "c1 suspended, yet its suspended gauge is not 1"
h_wait_for 10 "c1 hears ZooKeeper again" b_log_has c1 'event=zk_heard'
h_wait_for 10 "c1 leads again" has_nth c1 'event=elected' 2
nth_line c1 'event=elected' 2 | grep -- "$epoch1\b" >/dev/null ||
    h_fail "c1 came back with another epoch than $epoch1: $(nth_line c1 'event=elected' 2)"
b_log_has c1 'event=session_expired' && h_fail "c1's session expired in a cut inside its session"
b_log_has c2 'event=elected' && h_fail "c2 was elected while c1's session lived"
h_wait_for 10 "c1's gauges say leader again" b_metric_is "$m1" baton_coordinator_leader 1
b_metric_is "$m1" baton_coordinator_leader_suspended 0 || h_fail "c1 leads again, yet its suspended gauge is not 0"
h_log "part 1: c1 suspended $a1 ms after its last answer and led again with $epoch1"

# --- 2. a cut past the session: c2 takes over --------------------------------
cut_c1 2
a2=$SUSP_AFTER
h_wait_for $((T_MS / 1000 + 15)) "c2 is elected" b_log_has c2 'event=elected'
c2_at=$(b_ts_ms "$(nth_line c2 'event=elected' 1)")
((SUSP_MS < c2_at)) ||
    h_fail "c2 was elected at $c2_at, before c1 stopped leading at $SUSP_MS: both led"
B_SESSION_MS=6000 b_worker w3
h_wait_for 30 "c2 publishes w3's share" b_all_active 3
b_log_has c2 'event=published' || h_fail "c2 leads but never published"
b_metric_is "$m1" baton_coordinator_leader 0 || h_fail "c1 reports itself leader while c2 leads"
b_metric_is "$m2" baton_coordinator_leader 1 || h_fail "c2 leads, yet its leader gauge is not 1"
net_heal c1-zk
h_wait_for 20 "c1 learns its session expired" b_log_has c1 'event=session_expired'
h_wait_for 20 "c1 is a candidate again" has_nth c1 'event=candidate node=' 2
h_wait_for 10 "c1's suspended gauge clears" b_metric_is "$m1" baton_coordinator_leader_suspended 0
b_metric_is "$m1" baton_coordinator_leader 0 || h_fail "c1 leads after the heal although c2 does"
[[ $(b_status | jq -r '.coordinator.id') == c2 ]] || h_fail "status does not name c2 as the leader"
rc=0
h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 60 "all $TOTAL records in the sink" b_sink_has $TOTAL
h_wait_for 20 "every partition active with its owner" b_all_active 3
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "c1 stopped leading $a1 and $a2 ms after its last ZooKeeper answer (limit $LIMIT_MS ms): led again after a short cut, and after a long one c2 (elected $((c2_at - SUSP_MS)) ms after c1 stopped) published, c1 a follower, exactly once"
