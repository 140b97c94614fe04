# shellcheck shell=bash
# sinks.sh: which sink a scenario writes to, for the integration tests that
# ctest runs once per backend under three names (tests/integration/
# CMakeLists.txt, baton_it_sink: it_e2e, it_pg_e2e and it_redis_e2e;
# it_expiry_zombie, it_pg_expiry_zombie and it_redis_expiry_zombie). Source
# after harness.sh and baton.sh.
#
#   BATON_IT_SINK            sqlite (the default), postgresql or redis
#   sink_name BASE           the test's name: BASE, or it_pg_... for postgresql,
#                            it_redis_... for redis
#   sink_start               after h_init: sqlite: B_SINK=$H_DIR/sink.db;
#                            postgresql: pg_start and pg_use_sink (pg.sh);
#                            redis: redis_start and redis_use_sink (redis.sh:
#                            b_sql runs on a SQLite mirror of the keys).
#                            Sets B_SINK_URI (what workers and verify_sink
#                            get) and B_VALUE_TEXT (SQL: baton_output.value
#                            as text, for b_sql)
#   sink_no_secret_in_logs   fails the test if the sink's password is in a log
#   sink_delete_output P OFFSET  deletes the output of (P, OFFSET) behind the
#                            sink's back (to show the verifier catches it)

: "${BATON_IT_SINK:=sqlite}"

sink_name() {
    local base=${1:?sink_name BASE}
    case $BATON_IT_SINK in
    sqlite) echo "$base" ;;
    postgresql) echo "it_pg_${base#it_}" ;;
    redis) echo "it_redis_${base#it_}" ;;
    *) echo "sinks.sh: unknown BATON_IT_SINK '$BATON_IT_SINK' (sqlite, postgresql, redis)" >&2 && return 1 ;;
    esac
}

# shellcheck disable=SC2034 # B_SINK, B_SINK_URI, B_VALUE_TEXT: read by the scenarios
sink_start() {
    case $BATON_IT_SINK in
    sqlite)
        B_SINK=$H_DIR/sink.db
        B_SINK_URI=sqlite:$B_SINK
        B_VALUE_TEXT="CAST(value AS TEXT)"
        ;;
    postgresql)
        source "$BATON_SRC/tests/lib/pg.sh"
        pg_start
        pg_use_sink
        B_SINK_URI=$PG_URI
        B_VALUE_TEXT="convert_from(value, 'UTF8')"
        ;;
    redis)
        source "$BATON_SRC/tests/lib/redis.sh"
        redis_start
        redis_use_sink
        B_SINK_URI=$REDIS_URI
        B_VALUE_TEXT="CAST(value AS TEXT)"
        ;;
    *) h_fail "sinks.sh: unknown BATON_IT_SINK '$BATON_IT_SINK'" ;;
    esac
    h_log "sink: $B_SINK_URI"
}

sink_no_secret_in_logs() {
    local pw
    case $BATON_IT_SINK in
    postgresql) pw=$(cut -d: -f5 "$PGPASSFILE") ;;
    redis) pw=$REDIS_PASS ;;
    *) return 0 ;;
    esac
    if grep -lF -- "$pw" "$H_DIR"/*.log; then
        h_fail "the sink password appears in a log"
    fi
}

sink_delete_output() {
    local p=${1:?sink_delete_output P OFFSET} off=${2:?sink_delete_output P OFFSET}
    if [[ $BATON_IT_SINK != redis ]]; then
        b_sql "DELETE FROM baton_output WHERE grp='$B_GROUP' AND partition=$p AND \"offset\"=$off"
        return
    fi
    redis_uri_cli "$REDIS_URI" EVAL 'local n = 0
        for _, e in ipairs(redis.call("XRANGE", KEYS[1], "-", "+")) do
          for i = 1, #e[2], 2 do
            if e[2][i] == "offset" and e[2][i + 1] == ARGV[1] then
              n = n + redis.call("XDEL", KEYS[1], e[1])
            end
          end
        end
        return n' 1 "baton:{$B_GROUP.$p}:out" "$off" >/dev/null
}
