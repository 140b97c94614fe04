#!/usr/bin/env bash
# it_libbaton: the member library as an outside application sees it.
# `cmake --install` puts include/baton/*.h and libbaton.{a,so} under a
# prefix; a program using only <baton/baton.h> (member_probe.c) compiles
# with -Wall -Wextra -Werror against that prefix, links statically and
# dynamically, and each build joins a real group and owns a key.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_libbaton
build=$(dirname "${BATON_BIN:?}")
prefix=$H_DIR/prefix
cmake --install "$build" --prefix "$prefix" >"$H_DIR/install.log" 2>&1 || h_fail "cmake --install: $(tail -5 "$H_DIR/install.log")"
libdir=$(dirname "$(find "$prefix" -name 'libbaton.so' | head -1)")
for h in baton err fence processor; do [[ -f $prefix/include/baton/$h.h ]] || h_fail "include/baton/$h.h not installed"; done
[[ -f $libdir/libbaton.a && -e $libdir/libbaton.so ]] || h_fail "libbaton.a/.so not installed"
# Only public symbols of ours: everything exported starts with baton_ (or
# x* allocation helpers, documented as internal).
# (__odr_asan.* are AddressSanitizer's, in the sanitizer build only.)
bad=$(nm -D --defined-only "$libdir/libbaton.so" | awk '$2 ~ /[TDB]/ {print $3}' | grep -Ev '^(baton_|_init$|_fini$|x(malloc|calloc|realloc|strdup|asprintf)$|__odr_asan)' || true)
[[ -z $bad ]] || h_fail "libbaton.so exports names outside baton_*: $bad"

san=()
# The sanitizer build's libbaton needs the sanitizer runtimes in the program.
if grep -q '^BATON_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then san=(-fsanitize=address,undefined); fi
src=$BATON_SRC/tests/integration/member_probe.c
cc -std=c17 -Wall -Wextra -Werror "${san[@]}" -I"$prefix/include" "$src" -o "$H_DIR/probe-shared" \
    -L"$libdir" -lbaton -Wl,-rpath,"$libdir" -lpthread || h_fail "building against libbaton.so failed"
cc -std=c17 -Wall -Wextra -Werror "${san[@]}" -I"$prefix/include" "$src" -o "$H_DIR/probe-static" \
    "$libdir/libbaton.a" -lzookeeper_mt -ljansson -lpthread -lm || h_fail "building against libbaton.a failed"
# ldd's loader writes line by line: with pipefail, `ldd | grep -q` fails
# whenever grep exits before ldd's last write (SIGPIPE). Read it whole.
deps=$(ldd "$H_DIR/probe-shared") || h_fail "ldd probe-shared failed"
grep -qF "$libdir/libbaton.so" <<<"$deps" || h_fail "probe-shared does not load the installed libbaton.so: $deps"

h_zk_start
b_ctl init --keys job-a,job-b >/dev/null
b_coord c1
h_spawn ps "$H_DIR/probe-shared" --zk "$ZK" --group "$B_GROUP" --id ps --keys-only --key job-a --session-timeout-ms "$B_SESSION_MS"
h_spawn pa "$H_DIR/probe-static" --zk "$ZK" --group "$B_GROUP" --id pa --keys-only --key job-b --session-timeout-ms "$B_SESSION_MS"
h_wait_for 20 "the shared build owns job-a" grep -q '^acquired key=job-a epoch=[0-9]* own_thread=1 valid=1' "$H_DIR/ps.log"
h_wait_for 20 "the static build owns job-b" grep -q '^acquired key=job-b epoch=[0-9]* own_thread=1 valid=1' "$H_DIR/pa.log"
# Bad input from the application is an error, not a crash.
rc=0; "$H_DIR/probe-shared" --zk "$ZK" --group 'bad/group' --id x >"$H_DIR/bad.out" 2>&1 || rc=$?
((rc == 1)) && grep -q "group 'bad/group' is not a valid name" "$H_DIR/bad.out" || h_fail "a bad group name: rc=$rc $(cat "$H_DIR/bad.out")"
rc=0; "$H_DIR/probe-shared" --zk "$ZK" --group g --id x --key 'no way' >"$H_DIR/bad.out" 2>&1 || rc=$?
((rc == 1)) && grep -q "key 'no way' is not a key name" "$H_DIR/bad.out" || h_fail "a bad key name: rc=$rc $(cat "$H_DIR/bad.out")"
h_stop ps
h_stop pa
h_pass "installed headers and libbaton.{a,so}: an outside program builds both ways and owns keys"
