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
#                         REDIS_PORT  REDIS_PASS (random)
#                         REDIS_URI       redis://127.0.0.1:PORT/0
#                         REDISCLI_AUTH   the password, for REDIS_URI
#                         REDIS_URI_PASS  redis://:PASS@127.0.0.1:PORT/0
#                       and sets REDIS_PORTS[NAME]. Workers get REDIS_URI
#                       (the password from the environment, so none is on a
#                       command line or in a log). Restarting a stopped NAME
#                       reuses its port, password and data directory.
#   redis_cli [NAME] -- ARGS...   redis-cli against NAME (password from the
#                       environment, never the command line)
#   redis_use_sink      makes b_worker write to $REDIS_URI and b_sql,
#                       b_sink_count and b_sink_has read it
#   redis_uri_cli URI ARGS...     redis-cli against the server of a sink URI
#                       (the password through REDISCLI_AUTH, not argv)
#   redis_mirror URI GROUP DB     copies GROUP's fence hashes and output
#                       streams (outputs 0 only: entries without seq) into
#                       the SQLite file DB as the SQL backends' tables
#                       baton_fence and baton_output, for SQL checks. Values
#                       must be UTF-8 without the bytes 0x1E and 0x1F.
#
# Every wait is bounded (REDIS_START_TIMEOUT s for the server, 10 s per cli).

: "${REDIS_START_TIMEOUT:=20}"
[[ -v REDIS_PORTS ]] || declare -gA REDIS_PORTS=()

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
    # The password goes in through a config file (0600), not argv.
    (umask 077 && printf 'requirepass %s\nmasterauth %s\n' "$REDIS_PASS" "$REDIS_PASS" \
        >"$dir/auth.conf")
    _redis_name=$name _redis_dir=$dir _redis_args=("$@")
    H_SERVE_PORT=${REDIS_PORTS[$name]:-}
    h_serve "$name" "$REDIS_START_TIMEOUT" 'Address already in use' _redis_launch _redis_ready
    local port=$H_SERVE_PORT
    REDIS_PORTS[$name]=$port
    if [[ $name == redis ]]; then
        export REDIS_PORT=$port
        export REDIS_URI="redis://127.0.0.1:$port/0" REDISCLI_AUTH=$REDIS_PASS
        export REDIS_URI_PASS="redis://:$REDIS_PASS@127.0.0.1:$port/0"
    fi
    h_log "redis $name ready at 127.0.0.1:$port in $H_SERVE_MS ms (pid ${H_PIDS[$name]})"
}

# _redis_launch PORT: redis_start's server $_redis_name on PORT.
_redis_launch() {
    _h_spawn_io "$_redis_name" "$H_DIR/$_redis_name.log" "$H_DIR/$_redis_name.log" \
        redis-server "$_redis_dir/auth.conf" --port "$1" --bind 127.0.0.1 \
        --dir "$_redis_dir" --save "" --daemonize no --protected-mode yes --loglevel notice \
        --appenddirname aof "${_redis_args[@]}"
}

# _redis_ready PORT: the server answers PING.
_redis_ready() {
    [[ $(REDISCLI_AUTH=$REDIS_PASS timeout 2 redis-cli --no-auth-warning -h 127.0.0.1 \
        -p "$1" PING 2>/dev/null) == PONG ]]
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

# redis_uri_cli URI ARGS...: see the top of the file.
redis_uri_cli() {
    local uri=${1:?redis_uri_cli URI ARGS...}
    shift
    local re='^redis://(([^:@/]*):([^@/]*)@)?([^:/?]+)(:([0-9]+))?(/([0-9]*))?$'
    [[ $uri =~ $re ]] || { echo "redis_uri_cli: cannot parse the sink URI" >&2 && return 2; }
    local user=${BASH_REMATCH[2]} pass=${BASH_REMATCH[3]} host=${BASH_REMATCH[4]}
    local port=${BASH_REMATCH[6]:-6379} db=${BASH_REMATCH[8]:-0}
    local -a as=()
    [[ -n $user ]] && as=(--user "$user")
    REDISCLI_AUTH=${pass:-${REDISCLI_AUTH:-}} timeout 60 redis-cli --no-auth-warning --raw \
        -h "$host" -p "$port" -n "${db:-0}" "${as[@]}" "$@"
}

# The layout (docs/sinks.md) as records: "f" p epoch next_offset rejected and
# "o" p offset epoch value, fields split by 0x1F, records by 0x1E.
_REDIS_DUMP_LUA='
local g, us, rs, out = ARGV[1], "\031", "\030", {}
local pre = "baton:{" .. g .. "."
local function part(key, what)
  if string.sub(key, 1, #pre) ~= pre then return nil end
  return string.match(string.sub(key, #pre + 1), "^(%d+)}:" .. what .. "$")
end
for _, k in ipairs(redis.call("KEYS", pre .. "*")) do
  local p = part(k, "fence")
  if p then
    local v = redis.call("HMGET", k, "epoch", "next_offset", "rejected")
    out[#out + 1] = table.concat({"f", p, v[1] or "", v[2] or "", v[3] or ""}, us) .. rs
  end
  p = part(k, "out")
  if p then
    for _, e in ipairs(redis.call("XRANGE", k, "-", "+")) do
      local f = {}
      for i = 1, #e[2], 2 do f[e[2][i]] = e[2][i + 1] end
      if not f.seq then
        out[#out + 1] = table.concat({"o", p, f.offset or "", f.epoch or "", f.value or ""}, us) .. rs
      end
    end
  end
end
return table.concat(out)'

# redis_mirror URI GROUP DB: see the top of the file.
redis_mirror() {
    local uri=${1:?redis_mirror URI GROUP DB} grp=${2:?} db=${3:?} us=$'\x1f' rs=$'\x1e'
    local q_grp=${grp//\'/\'\'}
    rm -f "$db" "$db.f" "$db.o"
    redis_uri_cli "$uri" EVAL "$_REDIS_DUMP_LUA" 0 "$grp" >"$db.dump" || return 1
    # redis-cli --raw ends the reply with a newline of its own.
    head -c -1 "$db.dump" | awk -v RS="$rs" -v FS="$us" -v ORS="$rs" -v OFS="$us" \
        -v f="$db.f" -v o="$db.o" '
        $1 == "f" { print $2, $3, $4, $5 > f }
        $1 == "o" { v = $5; for (i = 6; i <= NF; i++) v = v FS $i; print $2, $3, $4, v > o }'
    touch "$db.f" "$db.o"
    local rc=0
    sqlite3 -batch -bail "$db" <<EOF || rc=$?
CREATE TABLE rf(partition INTEGER, epoch INTEGER, next_offset INTEGER, rejected INTEGER);
CREATE TABLE ro(partition INTEGER, "offset" INTEGER, epoch INTEGER, value TEXT);
.mode ascii
.import '$db.f' rf
.import '$db.o' ro
CREATE TABLE baton_fence AS SELECT '$q_grp' AS grp, * FROM rf;
CREATE TABLE baton_output AS SELECT '$q_grp' AS grp, partition, "offset", epoch, NULL AS key,
  value FROM ro;
DROP TABLE rf;
DROP TABLE ro;
EOF
    rm -f "$db.f" "$db.o" "$db.dump"
    return $rc
}

# redis_use_sink: b_worker (baton.sh) writes to $REDIS_URI; b_sql runs its
# SQL on a mirror of the group's keys (redis_mirror); b_sink_count counts
# the entries of the group's streams (one per record for the copy
# processor) without copying them.
# shellcheck disable=SC2317 # the functions are defined here, called later
redis_use_sink() {
    : "${REDIS_URI:?redis_use_sink: call redis_start first}"
    b_worker() {
        local name=${1:?b_worker NAME}
        shift
        h_spawn "$name" "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "$name" \
            --brokers "$BOOTSTRAP" --sink "$REDIS_URI" --session-timeout-ms "$B_SESSION_MS" \
            --linger-ms 10 "$@"
    }
    b_sql() {
        redis_mirror "$REDIS_URI" "$B_GROUP" "$H_DIR/redis-mirror.db" &&
            sqlite3 -bail "$H_DIR/redis-mirror.db" "$1"
    }
    b_sink_count() {
        redis_uri_cli "$REDIS_URI" EVAL 'local n = 0
            for _, k in ipairs(redis.call("KEYS", ARGV[1])) do n = n + redis.call("XLEN", k) end
            return n' 0 "baton:{$B_GROUP.*}:out"
    }
}
