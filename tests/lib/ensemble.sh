# shellcheck shell=bash
# ensemble.sh: a 3-node ZooKeeper ensemble on loopback for fault tests, on
# top of harness.sh (source that first, then h_init). Each peer runs
# Debian's QuorumPeerMain with its own zoo.cfg (server.N= lines), myid file,
# data dir and free ports, as harness process zkN (log $H_DIR/zkN.log), so
# h_cleanup stops the peers by pid like any other infrastructure process.
#
#   ens_start [TICK_MS]      starts peers 1-3, waits for a leader and two
#                            followers; exports ZK=127.0.0.1:P1,...:P3
#   ens_leader               prints the number (1-3) of the peer that
#                            reports "Mode: leader" (1 if there is none now)
#   ens_mode N               prints peer N's mode (leader, follower, or
#                            "down" if it does not serve)
#   ens_kill N [SIG]         sends SIG (default KILL) to peer N by pid
#   ens_node_start N         (re)starts peer N with its data; returns at once
#   ens_wait_quorum TIMEOUT_S  waits until every running peer serves and
#                            one of them leads; 1 on timeout
# With ENS_NET=1 (source net.sh too) the peers reach each other through one
# netproxy per pair (net.sh names zk12, zk13, zk23): each peer's zoo.cfg
# lists the others at that pair's proxy ports, itself at its real ones. Then
#   ens_isolate N            cuts peer N from the other two (silence)
#   ens_rejoin N             heals those links
# Every wait is bounded; ports and data stay the same across restarts.

declare -ga ENS_CLIENT=() ENS_QUORUM=() ENS_ELECT=()
ENS_TICK=200
: "${ENS_START_TIMEOUT:=45}"

# ens_start [TICK_MS]
ens_start() {
    ENS_TICK=${1:-200}
    local n
    for n in 1 2 3; do
        ENS_CLIENT[n]=$(h_free_port) || h_fail "ens_start: no free port"
        ENS_QUORUM[n]=$(h_free_port) || h_fail "ens_start: no free port"
        ENS_ELECT[n]=$(h_free_port) || h_fail "ens_start: no free port"
    done
    local -A peer=() # "N M": how peer N reaches peer M, QUORUM:ELECTION
    local m a b
    for n in 1 2 3; do
        for m in 1 2 3; do peer["$n $m"]=${ENS_QUORUM[m]}:${ENS_ELECT[m]}; done
    done
    if [[ ${ENS_NET:-0} == 1 ]]; then
        for a in 1 2; do
            for b in $(seq $((a + 1)) 3); do
                # A follower dials the leader the moment it is elected,
                # maybe before it listens: retry as its own connect would.
                NET_DIAL_RETRY_MS=$((ENS_TICK * 10)) net_proxy_start "zk$a$b" "127.0.0.1:${ENS_QUORUM[b]}" "127.0.0.1:${ENS_ELECT[b]}" \
                    "127.0.0.1:${ENS_QUORUM[a]}" "127.0.0.1:${ENS_ELECT[a]}"
                local -a px
                IFS=, read -r -a px <<<"${NET_ADDR[zk$a$b]//127.0.0.1:/}"
                peer["$a $b"]=${px[0]}:${px[1]}
                peer["$b $a"]=${px[2]}:${px[3]}
            done
        done
    fi
    for n in 1 2 3; do
        local d=$H_DIR/ens/$n servers=""
        for m in 1 2 3; do
            servers+="server.$m=127.0.0.1:${peer["$n $m"]}"$'\n'
        done
        mkdir -p "$d/data"
        echo "$n" >"$d/data/myid"
        cat >"$d/zoo.cfg" <<CFG
tickTime=$ENS_TICK
initLimit=10
syncLimit=5
dataDir=$d/data
clientPortAddress=127.0.0.1
clientPort=${ENS_CLIENT[n]}
maxClientCnxns=0
minSessionTimeout=$((2 * ENS_TICK))
maxSessionTimeout=20000
4lw.commands.whitelist=*
admin.enableServer=false
autopurge.purgeInterval=0
$servers
CFG
        cat >"$d/log4j.properties" <<'CFG'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
CFG
    done
    local t0
    t0=$(_h_now_ms)
    for n in 1 2 3; do
        ens_node_start "$n"
    done
    ens_wait_quorum "$ENS_START_TIMEOUT" || h_fail "ens_start: no quorum after ${ENS_START_TIMEOUT}s"
    # A peer that reports its mode may still be syncing with the leader and
    # drop a client's first request (the first batonctl init got "connection
    # lost"), and a fresh ensemble that served reads still left its first
    # write unanswered for over 3 s (2026-12-05): wait until each peer serves
    # a read and carries a write through the quorum, retried until answered.
    for n in 1 2 3; do
        h_wait_for "$ENS_START_TIMEOUT" "zk$n serves clients" \
            "$BATON_BIN/baton-zk" --zk "127.0.0.1:${ENS_CLIENT[n]}" exists /
        h_wait_for "$ENS_START_TIMEOUT" "zk$n carries a write" _ens_write "$n"
    done
    export ZK="127.0.0.1:${ENS_CLIENT[1]},127.0.0.1:${ENS_CLIENT[2]},127.0.0.1:${ENS_CLIENT[3]}"
    h_log "zookeeper ensemble ready at $ZK in $(($(_h_now_ms) - t0)) ms (leader zk$(ens_leader), tick $ENS_TICK ms)"
}

# _ens_write N: creates and deletes /ens-warm-N through peer N, each call
# bounded by a 2 s session; 1 if either is not answered.
_ens_write() {
    local zk=(--zk "127.0.0.1:${ENS_CLIENT[$1]}" --timeout-ms 2000) node=/ens-warm-$1
    "$BATON_BIN/baton-zk" "${zk[@]}" rmr "$node" >/dev/null 2>&1 &&
        "$BATON_BIN/baton-zk" "${zk[@]}" create "$node" x >/dev/null 2>&1 &&
        "$BATON_BIN/baton-zk" "${zk[@]}" rmr "$node" >/dev/null 2>&1
}

# ens_node_start N: starts peer N (it must not be running).
ens_node_start() {
    local n=${1:?ens_node_start N} d=$H_DIR/ens/${1}
    # cnxTimeout: a dead peer's election port is noticed in 1 s, not 5.
    _h_spawn_io "zk$n" "$H_DIR/zk$n.log" "$H_DIR/zk$n.log" \
        $(h_zk_java) -Xmx192m \
        -Dzookeeper.log.dir="$d" -Dzookeeper.root.logger=INFO,CONSOLE \
        -Dlog4j.configuration="file:$d/log4j.properties" \
        -Dzookeeper.jmx.log4j.disable=true -Dzookeeper.cnxTimeout=1000 \
        -cp "$(h_zk_classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg"
    H_INFRA[${H_PIDS[zk$n]}]=1
}

# ens_mode N: leader, follower, or down.
ens_mode() {
    local out
    out=$(_h_4lw "${ENS_CLIENT[${1:?ens_mode N}]}" srvr) || true
    case $out in
    *"Mode: leader"*) echo leader ;;
    *"Mode: follower"*) echo follower ;;
    *) echo down ;;
    esac
}

# ens_leader: the number of the leading peer (empty output and status 1 if
# no peer leads right now).
ens_leader() {
    local n
    for n in 1 2 3; do
        if [[ $(ens_mode "$n") == leader ]]; then
            echo "$n"
            return 0
        fi
    done
    return 1
}

# ens_kill N [SIG]
ens_kill() {
    h_kill "zk${1:?ens_kill N [SIG]}" "${2:-KILL}"
}

# _ens_quorum_ok: every running peer serves, exactly one leads.
_ens_quorum_ok() {
    local n leaders=0 m
    for n in 1 2 3; do
        h_alive "zk$n" || continue
        m=$(ens_mode "$n")
        [[ $m == down ]] && return 1
        [[ $m == leader ]] && leaders=$((leaders + 1))
    done
    ((leaders == 1))
}

# ens_wait_quorum TIMEOUT_S
ens_wait_quorum() {
    local timeout=${1:?ens_wait_quorum TIMEOUT_S}
    local deadline=$(($(_h_now_ms) + timeout * 1000))
    while (($(_h_now_ms) < deadline)); do
        _ens_quorum_ok && return 0
        sleep 0.1
    done
    echo "TIMEOUT: ensemble has no serving quorum after ${timeout}s:" \
        "zk1=$(ens_mode 1) zk2=$(ens_mode 2) zk3=$(ens_mode 3)" >&2
    return 1
}

# ens_isolate N / ens_rejoin N (ENS_NET=1): peer N loses / regains the
# other two; its clients' links are not touched.
ens_isolate() {
    local n=${1:?ens_isolate N} m
    for m in 1 2 3; do
        ((m == n)) || net_cut "zk$((n < m ? n : m))$((n < m ? m : n))" both
    done
}
ens_rejoin() {
    local n=${1:?ens_rejoin N} m
    for m in 1 2 3; do
        ((m == n)) || net_heal "zk$((n < m ? n : m))$((n < m ? m : n))"
    done
}
