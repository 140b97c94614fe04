#!/usr/bin/env bash
# it_redis_sink: the Redis sink on a real redis-server (tests/lib/redis.sh:
# Debian's, on a free loopback port, with a password). The sink conformance
# suite every backend passes (tests/sink_conformance.c), the stored layout
# as a Redis user reads it, then what only Redis has: bad URIs, rediss://,
# an unreachable server, a wrong or missing password, a key of another type
# where the fence lives -- each a clear error that writes nothing.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/redis.sh"
h_init it_redis_sink
redis_start
[[ -x $BATON_TESTS_BIN/sink_conformance ]] || h_fail "$BATON_TESTS_BIN/sink_conformance is not built"
rc=0
timeout 240 "$BATON_TESTS_BIN/sink_conformance" "$REDIS_URI_PASS" >"$H_DIR/conformance.log" 2>&1 || rc=$?
cat "$H_DIR/conformance.log" >&2
((rc == 0)) || h_fail "conformance suite failed on Redis (exit $rc)"
h_pass "sink conformance suite against Redis"
