#!/usr/bin/env bash
# run-long.sh: a long libFuzzer run of every fuzz target (clang, ASan +
# UBSan), one target at a time. Builds into BUILD_DIR (default
# build-fuzz), fuzzes each target for SECONDS (default 300) starting from a
# scratch copy of its committed corpus, and prints the executions each
# reached. Crashes are written as BUILD_DIR/crash-* files; reproduce one
# without libFuzzer with the normal build: build/tests/fuzz/fuzz_X crash-...
# New interesting inputs stay in BUILD_DIR/corpus-X (merge a few small ones
# into tests/fuzz/corpus/X by hand if they add coverage).
#   tests/fuzz/run-long.sh [SECONDS] [BUILD_DIR] [TARGET...]
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
secs=${1:-300}
build=${2:-$src/build-fuzz}
shift $(($# > 2 ? 2 : $#))
targets=("$@")
((${#targets[@]})) || targets=(fuzz_codec fuzz_failpoint fuzz_flags fuzz_config fuzz_racks fuzz_plan fuzz_notice
    fuzz_redis_uri fuzz_lockfile)

command -v clang >/dev/null || { echo "run-long: needs clang and libFuzzer (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
CC=clang cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_FUZZ=ON \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

rc=0
for t in "${targets[@]}"; do
    corpus=$build/corpus-$t
    mkdir -p "$corpus"
    cp -n "$src/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
    log=$build/$t.log
    echo "== $t: fuzzing for ${secs}s (log $log)"
    trc=0
    (cd "$build" && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 -max_len=4096 \
        -timeout=10 -rss_limit_mb=1024 "$corpus") >"$log" 2>&1 || trc=$?
    execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log")
    rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log")
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
    if ((trc == 0)); then
        echo "$t: OK executions=$execs exec_per_sec=$rate $cov corpus=$(ls "$corpus" | wc -l)"
    else
        echo "$t: FAIL (exit $trc) executions=$execs; see $log"
        grep -E 'ERROR|property failed|SUMMARY' "$log" | head -5
        rc=1
    fi
done
exit "$rc"
