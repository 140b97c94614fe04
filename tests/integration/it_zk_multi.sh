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
h_pass "a committed multi, a failed one op by op, one lost to a frozen server"
