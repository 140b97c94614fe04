#!/usr/bin/env bash
# it_libbaton: the member library as an outside application sees it.
# `cmake --install` puts include/baton/*.h, libbaton.{a,so} and baton.pc
# under a prefix; then
#   - libbaton.so exports exactly the functions include/baton/*.h declares
#     with BATON_EXPORT: nothing undeclared (xmalloc, codecs, failpoints...
#     are internal), nothing declared missing;
#   - a program using only <baton/baton.h> (member_probe.c) compiles with
#     -Wall -Wextra -Werror against that prefix through pkg-config, links
#     dynamically (`pkg-config --cflags --libs baton`) and statically (the
#     archive and `pkg-config --static --libs baton`), and each build joins
#     a real group and owns a key;
#   - examples/member_counter.c builds the same way and counts under a key;
#   - baton_version()/baton_version_str() give the project version.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_libbaton
build=$(dirname "${BATON_BIN:?}")
prefix=$H_DIR/prefix
cmake --install "$build" --prefix "$prefix" >"$H_DIR/install.log" 2>&1 || h_fail "cmake --install: $(tail -5 "$H_DIR/install.log")"
libdir=$(dirname "$(find "$prefix" -name 'libbaton.so' | head -1)")
for h in baton err export fence processor; do [[ -f $prefix/include/baton/$h.h ]] || h_fail "include/baton/$h.h not installed"; done
[[ -f $libdir/libbaton.a && -e $libdir/libbaton.so ]] || h_fail "libbaton.a/.so not installed"
[[ -f $libdir/pkgconfig/baton.pc ]] || h_fail "baton.pc not installed in $libdir/pkgconfig"

# What the public headers declare: preprocess them (no comments), cut the
# text into declarations and take the name before each one's first "(".
# BATON_EXPORT becomes a marker, so the exported ones are told apart.
decls=$(printf '#include <baton/%s.h>\n' baton err export fence processor |
    cc -std=c17 -E -P -DBATON_EXPORT=__baton_export__ -I"$prefix/include" -x c - | tr '\n' ' ' | tr ';{}' '\n\n\n' |
    grep -vE '^[[:space:]]*(typedef|static)[[:space:]]' || true)
declared=$(sed -nE 's/^[^(]*[^a-z0-9_](baton_[a-z0-9_]+)[[:space:]]*\(.*/\1/p' <<<"$decls" | sort -u)
marked=$(grep -F __baton_export__ <<<"$decls" | sed -nE 's/^[^(]*[^a-z0-9_](baton_[a-z0-9_]+)[[:space:]]*\(.*/\1/p' | sort -u)
[[ -n $declared && $declared == "$marked" ]] ||
    h_fail "every function of include/baton/*.h is declared BATON_EXPORT: $(comm -3 <(echo "$declared") <(echo "$marked") | tr '\n' ' ')"
# (_init/_fini are the loader's; __odr_asan.* AddressSanitizer's, in the sanitizer build only.)
exported=$(nm -D --defined-only "$libdir/libbaton.so" | awk '{print $NF}' | grep -Ev '^(_init|_fini|__odr_asan.*)$' | sort -u)
undeclared=$(comm -23 <(echo "$exported") <(echo "$declared") | tr '\n' ' ')
[[ -z ${undeclared// /} ]] || h_fail "libbaton.so exports names include/baton/*.h does not declare: $undeclared"
missing=$(comm -13 <(echo "$exported") <(echo "$declared") | tr '\n' ' ')
[[ -z ${missing// /} ]] || h_fail "libbaton.so does not export what include/baton/*.h declares: $missing"
h_log "libbaton.so exports the $(wc -l <<<"$exported") functions of include/baton/*.h and nothing else"

san=()
# The sanitizer build's libbaton needs the sanitizer runtimes in the program.
if grep -q '^BATON_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then san=(-fsanitize=address,undefined); fi
export PKG_CONFIG_PATH=$libdir/pkgconfig
pc_cflags=$(pkg-config --cflags baton) || h_fail "pkg-config --cflags baton failed"
pc_libs=$(pkg-config --libs baton) || h_fail "pkg-config --libs baton failed"
pc_static=$(pkg-config --static --libs baton) || h_fail "pkg-config --static --libs baton failed"
# The archive in place of -lbaton (which would pick the .so), the rest as pkg-config says.
pc_static_deps=$(sed -E 's/(^| )-lbaton( |$)/ /' <<<"$pc_static")
# build_app NAME SOURCE shared|static [CFLAGS...]: the build an outside user does.
build_app() {
    local out=$H_DIR/$1 src=$2 kind=$3
    shift 3
    # shellcheck disable=SC2086 # pkg-config output is a list of words
    if [[ $kind == shared ]]; then
        cc "$@" -Wall -Wextra -Werror "${san[@]}" $pc_cflags "$src" -o "$out" $pc_libs -Wl,-rpath,"$libdir" ||
            h_fail "building $1 against libbaton.so with pkg-config failed"
    else
        cc "$@" -Wall -Wextra -Werror "${san[@]}" $pc_cflags "$src" -o "$out" "$libdir/libbaton.a" $pc_static_deps ||
            h_fail "building $1 against libbaton.a with pkg-config failed"
    fi
}
# The probe in strict C17 (the headers need no extensions); the example
# as docs/keys.md builds an application, with the compiler's default dialect.
src=$BATON_SRC/tests/integration/member_probe.c
build_app probe-shared "$src" shared -std=c17
build_app probe-static "$src" static -std=c17
build_app member_counter "$BATON_SRC/examples/member_counter.c" shared
# ldd's loader writes line by line: with pipefail, `ldd | grep -q` fails
# whenever grep exits before ldd's last write (SIGPIPE). Read it whole.
deps=$(ldd "$H_DIR/probe-shared") || h_fail "ldd probe-shared failed"
grep -qF "$libdir/libbaton.so" <<<"$deps" || h_fail "probe-shared does not load the installed libbaton.so: $deps"
deps=$(ldd "$H_DIR/probe-static") || h_fail "ldd probe-static failed"
! grep -qF "libbaton.so" <<<"$deps" || h_fail "probe-static loads libbaton.so: $deps"

# The version calls, from the installed library.
cat >"$H_DIR/version.c" <<'EOF_C'
#include <baton/baton.h>
#include <stdio.h>
int main(void) {
    printf("%d %s\n", baton_version(), baton_version_str());
    return 0;
}
EOF_C
build_app version "$H_DIR/version.c" shared -std=c17
read -r vnum vstr < <("$H_DIR/version") || h_fail "the version program failed"
pv=$(sed -nE 's/^project\(baton VERSION ([0-9]+)\.([0-9]+)\.([0-9]+).*/\1 \2 \3/p' "$BATON_SRC/CMakeLists.txt")
read -r major minor patch <<<"$pv"
((vnum == major * 1000000 + minor * 1000 + patch)) || h_fail "baton_version() is $vnum for project version $pv"
[[ $vstr =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || h_fail "baton_version_str() is '$vstr'"
# Built from a git checkout: the string names the commit built (HEAD or,
# if the build is older than the last commit, one of its ancestors), or is
# its tag. (lib/version.cmake's other cases: it_libbaton_version.)
if git -C "$BATON_SRC" rev-parse HEAD >/dev/null 2>&1 && [[ ! $vstr =~ ^[0-9.]+$ ]]; then
    [[ $vstr =~ -g([0-9a-f]+)$ ]] && git -C "$BATON_SRC" merge-base --is-ancestor "${BASH_REMATCH[1]}" HEAD ||
        h_fail "baton_version_str() '$vstr' does not name a commit of this checkout"
fi
h_log "version $vnum $vstr"

h_zk_start
b_ctl init --keys job-a,job-b,counter >/dev/null
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
# The example, built from the install prefix alone, counts under its key.
h_spawn mc "$H_DIR/member_counter" --zk "$ZK" --group "$B_GROUP" --key counter --id mc \
    --state "$H_DIR/counter.state" --count 3 --interval-ms 30 --session-timeout-ms "$B_SESSION_MS"
rc=0; h_wait_exit mc 30 || rc=$?
((rc == 0)) || h_fail "member_counter exited $rc: $(tail -3 "$H_DIR/mc.log")"
[[ $(tail -n +2 "$H_DIR/counter.state") == 3 ]] || h_fail "the counter is $(tail -n +2 "$H_DIR/counter.state"), wanted 3"
h_pass "installed headers, libbaton.{a,so} and baton.pc: exports only the headers' functions; outside programs build with pkg-config both ways, own keys and count"
