#!/usr/bin/env bash
# it_zkbatch: the batch object of common/baton_zkbatch.h (the member
# library's claims and leave mark go through it) against a real ZooKeeper:
# test_zkbatch checks each request's result in its slot, an unused slot, a
# refused request and a wait that gives up (the batch freed by its last
# completion: the sanitizer build checks that for a use after free or a
# leak).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_zkbatch
prog=${BATON_TESTS_BIN:-$BATON_BIN/../tests}/test_zkbatch
[[ -x $prog ]] || h_fail "$prog not built"
h_zk_start
out=$("$prog" "$ZK" 2>"$H_DIR/test_zkbatch.err") || h_fail "test_zkbatch failed: $(tail -n 5 "$H_DIR/test_zkbatch.err")"
[[ $out == "zkbatch=ok" ]] || h_fail "test_zkbatch said '$out'"
h_pass "mixed requests in slots, an unused slot, a refused request, an abandoned batch"
