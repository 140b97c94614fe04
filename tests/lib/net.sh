# shellcheck shell=bash
# net.sh: the network-fault layer for tests (issue 18), on top of harness.sh
# (source that first, then h_init). A path that matters -- one process's
# link to ZooKeeper, to Kafka, to the sink, or one pair of ZooKeeper peers
# -- runs through its own netproxy (tests/net/netproxy.c), a loopback TCP
# proxy that the harness starts and stops by pid like any other process
# (harness name net-NAME, log $H_DIR/net-NAME.log). On command it forwards,
# cuts (silence: nothing read, nothing closed, no RST, no FIN; both ways or
# one way), delays with jitter, or heals. Loopback only.
#
#   net_proxy_start NAME TARGET...  one proxy for the path NAME; each TARGET
#                                   (IPV4:PORT) gets a free loopback port.
#                                   Sets NET_ADDR[NAME] to the proxy's
#                                   addresses, comma separated, in TARGET
#                                   order, and NET_MAP[NAME] to
#                                   "TARGET=PROXY,..." (for net_remap_env).
#                                   NET_DIAL_RETRY_MS (default 0): how long
#                                   a refused dial is retried before the
#                                   client is reset; NET_SEED (default 0)
#                                   seeds its jitter, mixed with NAME
#   net_cut NAME [both|up|down]     silence (up: client to server only)
#   net_delay NAME MS [JITTER_MS]   every chunk held MS + [0, JITTER] ms
#   net_heal NAME                   forward again; what waited is delivered
#   net_mode NAME MODE...           any of the three; waits (10 s) until the
#                                   proxy confirms, then sets NET_T (its ms
#                                   clock when the mode began) and
#                                   NET_LAST_DOWN (ms of the last bytes it
#                                   forwarded server to client before that)
#   net_remap_env NAME...           prints the env assignments (LD_PRELOAD
#                                   of libnetremap.so, BATON_NET_REMAP) that
#                                   make a process connect to NAME's proxies
#                                   instead of their targets: for clients
#                                   that learn addresses from their server
#                                   (a Kafka client from metadata)
# The programs come from $BATON_TESTS_BIN (default $BATON_BIN/../tests).

declare -gA NET_ADDR=() NET_MAP=() NET_SEQ=()
NET_T=0 NET_LAST_DOWN=0

_net_bin() { echo "${BATON_TESTS_BIN:-$BATON_BIN/../tests}/$1"; }

# net_proxy_start NAME TARGET...
net_proxy_start() {
    local name=${1:?net_proxy_start NAME TARGET...} t port
    shift
    (($# > 0)) || h_fail "net_proxy_start $name: no target"
    local bin
    bin=$(_net_bin netproxy)
    [[ -x $bin ]] || h_fail "net_proxy_start: $bin is not built"
    mkdir -p "$H_DIR/net"
    echo "0 pass" >"$H_DIR/net/$name.ctl"
    local -a args=()
    local addrs="" map=""
    for t in "$@"; do
        [[ $t =~ ^([0-9.]+):([0-9]+)$ ]] || h_fail "net_proxy_start $name: '$t' is not IPV4:PORT"
        port=$(h_free_port) || h_fail "net_proxy_start: no free port"
        args+=(--route "$port:${BASH_REMATCH[1]}:${BASH_REMATCH[2]}")
        addrs+="${addrs:+,}127.0.0.1:$port"
        map+="${map:+,}$t=127.0.0.1:$port"
    done
    h_spawn "net-$name" "$bin" --control "$H_DIR/net/$name.ctl" --dial-retry-ms "${NET_DIAL_RETRY_MS:-0}" \
        --seed $((${NET_SEED:-0} * 31 + $(cksum <<<"$name" | cut -d' ' -f1))) "${args[@]}"
    # shellcheck disable=SC2034 # NET_ADDR, NET_T, NET_LAST_DOWN: read by the callers
    NET_ADDR[$name]=$addrs
    NET_MAP[$name]=$map
    NET_SEQ[$name]=0
    h_wait_for 10 "net-$name listens on $# port(s)" _net_listening "$name" "$#" ||
        h_fail "net_proxy_start: proxy $name did not start"
}

_net_listening() { (($(grep -c 'event=listening' "$H_DIR/net-$1.log") >= $2)); }

# net_mode NAME MODE [ARGS]: see above.
net_mode() {
    local name=${1:?net_mode NAME MODE...} n line
    shift
    n=$((${NET_SEQ[$name]:-0} + 1))
    NET_SEQ[$name]=$n
    echo "$n $*" >"$H_DIR/net/$name.ctl.tmp"
    mv -f "$H_DIR/net/$name.ctl.tmp" "$H_DIR/net/$name.ctl"
    h_kill "net-$name" HUP || h_fail "net_mode: proxy $name is not running"
    if ! h_wait_for 10 "net-$name in mode '$*'" grep -q "event=mode n=$n " "$H_DIR/net-$name.log"; then
        h_fail "net_mode: proxy $name did not take mode '$*'"
    fi
    line=$(grep "event=mode n=$n " "$H_DIR/net-$name.log" | tail -n 1)
    # shellcheck disable=SC2034
    [[ $line =~ ^ms=([0-9]+) ]] && NET_T=${BASH_REMATCH[1]}
    # shellcheck disable=SC2034
    [[ $line =~ last_down_ms=([0-9]+) ]] && NET_LAST_DOWN=${BASH_REMATCH[1]}
    return 0
}

net_cut() { net_mode "${1:?net_cut NAME [both|up|down]}" cut "${2:-both}"; }
net_delay() { net_mode "${1:?net_delay NAME MS [JITTER_MS]}" delay "${2:?}" "${3:-0}"; }
net_heal() { net_mode "${1:?net_heal NAME}" pass; }

# net_remap_env NAME...: "LD_PRELOAD=... BATON_NET_REMAP=..." for env(1).
net_remap_env() {
    local map="" name lib
    for name in "$@"; do map+="${map:+,}${NET_MAP[$name]:?net_remap_env: no proxy $name}"; done
    lib=$(_net_bin libnetremap.so)
    [[ -f $lib ]] || h_fail "net_remap_env: $lib is not built"
    # A sanitizer build's runtime wants to be first; this library has none.
    echo "LD_PRELOAD=$lib" "BATON_NET_REMAP=$map" \
        "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
}
