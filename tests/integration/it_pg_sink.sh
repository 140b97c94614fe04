#!/usr/bin/env bash
# it_pg_sink: the PostgreSQL sink on a real server. First the sink
# conformance suite every backend passes (tests/sink_conformance.c: fence,
# stale fence, unfenced write, duplicates, gaps, stale write rejected whole
# and counted, batched fences and writes, outputs, two connections with a
# zombie, locks, the lazy open, the group binding, concurrent opens), then
# what only PostgreSQL has (tests/integration/test_sink_pg_server.c: a
# commit whose reply is lost and its retry, a killed connection,
# authentication, schema shapes).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/pg.sh"
h_init it_pg_sink
pg_start
for prog in sink_conformance test_sink_pg_server; do
    [[ -x $BATON_TESTS_BIN/$prog ]] || h_fail "$BATON_TESTS_BIN/$prog is not built"
done
rc=0
timeout 240 "$BATON_TESTS_BIN/sink_conformance" "$PG_URI" >"$H_DIR/conformance.log" 2>&1 || rc=$?
cat "$H_DIR/conformance.log" >&2
((rc == 0)) || h_fail "conformance suite failed on $PG_URI (exit $rc)"
timeout 240 "$BATON_TESTS_BIN/test_sink_pg_server" >"$H_DIR/proto.log" 2>&1 || rc=$?
cat "$H_DIR/proto.log" >&2
((rc == 0)) || h_fail "PostgreSQL-only tests failed (exit $rc)"
# A password never reaches the server's log through baton (it only ever
# came from the passfile) -- and the sink never logs one either.
pw=$(cut -d: -f5 "$PGPASSFILE")
if grep -qF -- "$pw" "$H_DIR/conformance.log" "$H_DIR/proto.log" "$H_DIR/pg.log"; then
    h_fail "the password appears in a log"
fi
h_pass "sink conformance suite and PostgreSQL-only tests against PostgreSQL"
