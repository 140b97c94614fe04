# shellcheck shell=bash
# redis.sh: a throwaway Redis for integration tests, on top of harness.sh
# (source that first, and baton.sh before redis_use_sink). The server is
# Debian's `redis-server`, run in the foreground under h_spawn with its
# config on the command line and its data in $H_DIR/redis-NAME, so the
# harness stops it by pid like ZooKeeper (after the applications) and its
# reaper stops it if the test shell dies. It listens on a free loopback port
# only, never on a unix socket, and needs a password (requirepass), so the
# tests exercise AUTH like a real deployment. Never the system's Redis.
#
#   redis_start [NAME [ARGS...]]  starts server NAME (default "redis"), with
#                       extra redis-server ARGS (e.g. --appendonly yes);
#                       waits until it answers. Exports, for NAME "redis":
#                         REDIS_PORT  REDIS_PASS (random)  REDIS_URI
#                         redis://:PASS@127.0.0.1:PORT/0
#                       and sets REDIS_PORTS[NAME]. Restarting a stopped NAME
#                       reuses its port, password and data directory.
#   redis_cli [NAME] -- ARGS...   redis-cli against NAME (password from the
#                       environment, never the command line)
#   redis_use_sink      makes b_worker write to $REDIS_URI
#
# Every wait is bounded (REDIS_START_TIMEOUT s for the server, 10 s per cli).

: "${REDIS_START_TIMEOUT:=20}"
declare -gA REDIS_PORTS=()

# redis_start [NAME [ARGS...]]: see the top of the file.
redis_start() {
    local name=${1:-redis}
    (($# > 0)) && shift
    local dir=${H_DIR:?redis_start: call h_init first}/redis-$name
    command -v redis-server >/dev/null || h_fail "redis_start: no redis-server (install Debian's redis-server)"
    mkdir -p "$dir"
    if [[ -z ${REDIS_PASS:-} ]]; then
        REDIS_PASS=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
        export REDIS_PASS
    fi
    local t0 attempt ok=0 port=${REDIS_PORTS[$name]:-}
    t0=$(_h_now_ms)
    for ((attempt = 1; attempt <= 3; attempt++)); do
        [[ -n ${REDIS_PORTS[$name]:-} ]] || port=$(h_free_port) || h_fail "redis_start: no free port"
        # The password goes in through a config file (0600), not argv.
        (umask 077 && printf 'requirepass %s\nmasterauth %s\n' "$REDIS_PASS" "$REDIS_PASS" \
            >"$dir/auth.conf")
        _h_spawn_io "$name" "$H_DIR/$name.log" "$H_DIR/$name.log" \
            redis-server "$dir/auth.conf" --port "$port" --bind 127.0.0.1 \
            --dir "$dir" --save "" --daemonize no --protected-mode yes --loglevel notice \
            --appenddirname aof "$@"
        # shellcheck disable=SC2034 # harness.sh's: stopped after the applications
        H_INFRA[${H_PIDS[$name]}]=1
        local deadline=$(($(_h_now_ms) + REDIS_START_TIMEOUT * 1000))
        while (($(_h_now_ms) < deadline)); do
            _h_alive "${H_PIDS[$name]}" || break
            if [[ $(REDISCLI_AUTH=$REDIS_PASS timeout 2 redis-cli --no-auth-warning -h 127.0.0.1 \
                -p "$port" PING 2>/dev/null) == PONG ]]; then
                ok=1
                break
            fi
            sleep 0.05
        done
        ((ok)) && break
        _h_alive "${H_PIDS[$name]}" &&
            h_fail "redis_start: Redis on port $port not ready after ${REDIS_START_TIMEOUT}s"
        h_log "redis-server $name exited during startup on port $port (attempt $attempt)"
        grep -q 'Address already in use' "$H_DIR/$name.log" 2>/dev/null && [[ -z ${REDIS_PORTS[$name]:-} ]] ||
            h_fail "redis_start: redis-server exited: $(tail -n 5 "$H_DIR/$name.log")"
    done
    ((ok)) || h_fail "redis_start: Redis $name did not start"
    REDIS_PORTS[$name]=$port
    if [[ $name == redis ]]; then
        export REDIS_PORT=$port
        export REDIS_URI="redis://:$REDIS_PASS@127.0.0.1:$port/0"
    fi
    h_log "redis $name ready at 127.0.0.1:$port in $(($(_h_now_ms) - t0)) ms (pid ${H_PIDS[$name]})"
}

# redis_cli [NAME] -- ARGS...: redis-cli on NAME's port, raw output.
redis_cli() {
    local name=redis
    if [[ ${1:-} != -- ]]; then
        name=$1
        shift
    fi
    [[ ${1:-} == -- ]] && shift
    local port=${REDIS_PORTS[$name]:?redis_cli: redis $name not started}
    REDISCLI_AUTH=$REDIS_PASS timeout 10 redis-cli --no-auth-warning --raw -h 127.0.0.1 \
        -p "$port" "$@"
}

# redis_use_sink: b_worker (baton.sh) writes to $REDIS_URI.
# shellcheck disable=SC2317 # the function is defined here, called later
redis_use_sink() {
    : "${REDIS_URI:?redis_use_sink: call redis_start first}"
    b_worker() {
        local name=${1:?b_worker NAME}
        shift
        h_spawn "$name" "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "$name" \
            --brokers "$BOOTSTRAP" --sink "$REDIS_URI" --session-timeout-ms "$B_SESSION_MS" \
            --linger-ms 10 "$@"
    }
}
