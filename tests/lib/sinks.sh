# shellcheck shell=bash
# sinks.sh: which sink a scenario writes to, for the integration tests that
# ctest runs once per backend under two names (tests/integration/
# CMakeLists.txt, baton_it_sinks: it_e2e and it_pg_e2e, it_expiry_zombie and
# it_pg_expiry_zombie). Source after harness.sh and baton.sh.
#
#   BATON_IT_SINK            sqlite (the default) or postgresql
#   sink_name BASE           the test's name: BASE, or it_pg_... for postgresql
#   sink_start               after h_init: sqlite: B_SINK=$H_DIR/sink.db;
#                            postgresql: pg_start and pg_use_sink (pg.sh).
#                            Sets B_SINK_URI (what workers and verify_sink
#                            get) and B_VALUE_TEXT (SQL: baton_output.value
#                            as text, for b_sql)
#   sink_no_secret_in_logs   fails the test if the sink's password is in a log

: "${BATON_IT_SINK:=sqlite}"

sink_name() {
    local base=${1:?sink_name BASE}
    case $BATON_IT_SINK in
    sqlite) echo "$base" ;;
    postgresql) echo "it_pg_${base#it_}" ;;
    *) echo "sinks.sh: unknown BATON_IT_SINK '$BATON_IT_SINK' (sqlite, postgresql)" >&2 && return 1 ;;
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
    *) h_fail "sinks.sh: unknown BATON_IT_SINK '$BATON_IT_SINK'" ;;
    esac
    h_log "sink: $B_SINK_URI"
}

sink_no_secret_in_logs() {
    [[ $BATON_IT_SINK == postgresql ]] || return 0
    local pw
    pw=$(cut -d: -f5 "$PGPASSFILE")
    if grep -lF -- "$pw" "$H_DIR"/*.log; then
        h_fail "the sink password appears in a log"
    fi
}
