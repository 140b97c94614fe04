#!/usr/bin/env bash
# it_zk_multi: baton_zk_multi, the one multi call of every process, against
# a real ZooKeeper: a multi that commits, one that fails (each op's own
# code in its result) and one in flight while the server is frozen, which
# must end in a lost connection -- and, in the sanitizer build, leave no leak
# behind (the client's synchronous zoo_multi leaked there).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_zk_multi
prog=${BATON_TESTS_BIN:-$BATON_BIN/../tests}/test_zk_multi
[[ -x $prog ]] || h_fail "$prog not built"
h_zk_start
out=$("$prog" "$ZK" "$(h_pid zk)" 2>"$H_DIR/test_zk_multi.err") || h_fail "test_zk_multi failed: $(tail -n 5 "$H_DIR/test_zk_multi.err")"
[[ $out == "zk_multi=ok" ]] || h_fail "test_zk_multi said '$out'"
# The benchmarks' probe of the day's ZooKeeper (bench/run.sh rebalance):
# its line, and its refusals. (The server was frozen above: wait for it.)
zkt() { "$BATON_BIN/baton-zk" --zk "$ZK" --timeout-ms 20000 "$@"; }
out=$(zkt latency /probe 20 100) || h_fail "baton-zk latency failed: $out"
[[ $out =~ ^set_ms\ n=20\ p50=[0-9.]+\ p90=[0-9.]+\ p99=[0-9.]+\ max=[0-9.]+$ ]] ||
    h_fail "baton-zk latency said '$out'"
! zkt exists /probe || h_fail "baton-zk latency left its node behind"
rc=0; zkt latency /probe 0 100 2>/dev/null || rc=$?
((rc == 2)) || h_fail "a count of 0 should be a usage error (2), got $rc"
rc=0; zkt latency /no/such/parent 5 0 2>"$H_DIR/lat.err" || rc=$?
((rc == 1)) && grep -q "no node" "$H_DIR/lat.err" || h_fail "a missing parent: exit $rc, $(cat "$H_DIR/lat.err")"
h_pass "a committed multi, a failed one op by op, one lost to a frozen server; baton-zk latency"
