#!/usr/bin/env bash
# it_pg_sink: the fenced sink's protocol against a real PostgreSQL server
# (tests/integration/test_sink_pg_server.c: fence, stale fence, unfenced
# write, duplicates, gaps, stale write rejected whole and counted, two
# connections with a zombie, a commit whose reply is lost and its retry, a
# killed connection, authentication, schema races and shapes).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/pg.sh"
h_init it_pg_sink
pg_start
prog=${BATON_TESTS_BIN:?}/test_sink_pg_server
[[ -x $prog ]] || h_fail "$prog is not built"
rc=0
timeout 240 "$prog" >"$H_DIR/proto.log" 2>&1 || rc=$?
cat "$H_DIR/proto.log" >&2
((rc == 0)) || h_fail "protocol tests failed (exit $rc)"
# A password never reaches the server's log through baton (it only ever
# came from the passfile) -- and the sink never logs one either.
pw=$(cut -d: -f5 "$PGPASSFILE")
if grep -qF -- "$pw" "$H_DIR/proto.log" "$H_DIR/pg.log"; then
    h_fail "the password appears in a log"
fi
h_pass "sink protocol against PostgreSQL"
