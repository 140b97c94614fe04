# shellcheck shell=bash
# pg.sh: a throwaway PostgreSQL server for integration tests, on top of
# harness.sh (source that first, and baton.sh before pg_use_sink). The
# server is Debian's `postgresql` package: initdb into $H_DIR/pg/data, then
# `postgres` itself in the foreground under h_spawn, so the harness stops it
# by pid like ZooKeeper (after the applications, SIGTERM then SIGKILL) and
# its reaper stops it if the test shell dies. It listens on a free loopback
# port and on a unix socket in $H_DIR/pg/sock. PostgreSQL refuses to run as
# root, so as root (CI) initdb and postgres run as the `postgres` user
# (setpriv, no fork: the pid stays the server's).
#
#   pg_start            starts it; creates role baton (with a random password)
#                       and database baton; exports
#                         PG_URI       postgresql://baton@127.0.0.1:PORT/baton
#                         PGPASSFILE   $H_DIR/pg-passfile (0600): the password, any port
#                         PG_PORT PG_SOCK PG_ADMIN (superuser conninfo over the socket)
#   pg_psql SQL         runs SQL as baton, prints unaligned tuples (-At)
#   pg_admin SQL        runs SQL as the superuser
#   pg_use_sink         makes b_worker write to $PG_URI and b_sql query it
# PG_SERVER_OPTS (an array, optional): more postgres arguments for pg_start,
# e.g. (-c track_commit_timestamp=on).
#
# Every wait is bounded (PG_START_TIMEOUT s for the server, 30 s per psql).

: "${PG_START_TIMEOUT:=30}"

# _pg_bin NAME: the path of a PostgreSQL server program (initdb, postgres,
# pg_isready): Debian keeps them in /usr/lib/postgresql/VERSION/bin, off PATH.
_pg_bin() {
    local d
    # The newest major version first.
    for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
        [[ -x $d/$1 ]] && { echo "$d/$1"; return 0; }
    done
    command -v "$1" 2>/dev/null && return 0
    echo "pg.sh: '$1' not found (install Debian's postgresql package)" >&2
    return 1
}

# _pg_as_server CMD...: runs CMD as the server's user (postgres when root).
_pg_as_server() {
    if (($(id -u) == 0)); then
        setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
    else
        "$@"
    fi
}

# pg_start: see the top of the file.
pg_start() {
    local dir=${H_DIR:?pg_start: call h_init first}/pg
    local initdb postgres isready
    initdb=$(_pg_bin initdb) || h_fail "pg_start: no initdb"
    postgres=$(_pg_bin postgres) || h_fail "pg_start: no postgres"
    isready=$(_pg_bin pg_isready) || h_fail "pg_start: no pg_isready"
    if (($(id -u) == 0)); then
        getent passwd postgres >/dev/null ||
            h_fail "pg_start: running as root needs the 'postgres' user (Debian's postgresql package creates it)"
        # postgres must reach its dirs through H_DIR: traverse only, no listing.
        chmod 711 "$H_DIR"
    fi
    mkdir -p "$dir/data" "$dir/sock"
    chmod 700 "$dir/data"
    (($(id -u) == 0)) && chown postgres:postgres "$dir" "$dir/data" "$dir/sock"

    # Local (socket) connections trust; TCP needs the password, so the tests
    # exercise PGPASSFILE like a real deployment. --no-sync: a test server.
    if ! _pg_as_server timeout 120 "$initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C \
        --auth-local=trust --auth-host=scram-sha-256 --no-sync --no-instructions \
        >"$H_DIR/pg-initdb.log" 2>&1; then
        h_fail "pg_start: initdb failed: $(tail -n 5 "$H_DIR/pg-initdb.log")"
    fi

    # As root, setpriv execs postgres as the postgres user (no fork), so the
    # pid h_spawn records is the postmaster's.
    _pg_as=()
    (($(id -u) == 0)) && _pg_as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    _pg_dir=$dir _pg_postgres=$postgres _pg_isready=$isready
    H_SERVE_PORT=
    h_serve pg "$PG_START_TIMEOUT" 'could not bind\|already in use' _pg_launch _pg_ready
    PG_PORT=$H_SERVE_PORT

    export PG_PORT PG_SOCK=$dir/sock
    export PG_ADMIN="host=$PG_SOCK port=$PG_PORT user=postgres dbname=postgres"
    local pw
    pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    pg_admin "CREATE ROLE baton LOGIN PASSWORD '$pw'" >/dev/null ||
        h_fail "pg_start: cannot create role baton"
    pg_admin "CREATE DATABASE baton OWNER baton" >/dev/null ||
        h_fail "pg_start: cannot create database baton"
    export PG_ADMIN="host=$PG_SOCK port=$PG_PORT user=postgres dbname=baton"
    # Any port: test_sink_pg_server's proxy listens on another one.
    (umask 077 && echo "127.0.0.1:*:*:baton:$pw" >"$H_DIR/pg-passfile")
    export PGPASSFILE=$H_DIR/pg-passfile
    export PG_URI="postgresql://baton@127.0.0.1:$PG_PORT/baton"
    h_log "postgresql ready at 127.0.0.1:$PG_PORT in $H_SERVE_MS ms (pid ${H_PIDS[pg]})"
}

# _pg_launch PORT: pg_start's server on PORT. fsync=off: a test server
# whose data dies with the test anyway.
_pg_launch() {
    _h_spawn_io pg "$H_DIR/pg.log" "$H_DIR/pg.log" \
        "${_pg_as[@]}" "$_pg_postgres" -D "$_pg_dir/data" -p "$1" -k "$_pg_dir/sock" \
        -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60 \
        -c shared_buffers=16MB -c log_min_messages=warning "${PG_SERVER_OPTS[@]}"
}

# _pg_ready PORT: the server accepts connections.
_pg_ready() {
    "$_pg_isready" -q -h 127.0.0.1 -p "$1" -t 1 >/dev/null 2>&1
}

# pg_psql SQL: SQL as baton over TCP (password from PGPASSFILE).
pg_psql() {
    timeout 30 psql "${PG_URI:?pg_psql: call pg_start first}" -X -q -At -v ON_ERROR_STOP=1 \
        -c "${1:?pg_psql SQL}"
}

# pg_admin SQL: SQL as the superuser over the unix socket.
pg_admin() {
    timeout 30 psql "${PG_ADMIN:?pg_admin: call pg_start first}" -X -q -At -v ON_ERROR_STOP=1 \
        -c "${1:?pg_admin SQL}"
}

# pg_use_sink: b_worker (baton.sh) writes to $PG_URI; b_sql, b_sink_count
# and b_sink_has read it.
# shellcheck disable=SC2317 # the functions are defined here, called later
pg_use_sink() {
    : "${PG_URI:?pg_use_sink: call pg_start first}"
    b_worker() {
        local name=${1:?b_worker NAME}
        shift
        h_spawn "$name" "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "$name" \
            --brokers "$BOOTSTRAP" --sink "$PG_URI" --session-timeout-ms "$B_SESSION_MS" \
            --linger-ms 10 "$@"
    }
    b_sql() { pg_psql "$1"; }
}
