#!/usr/bin/env bash
# run.sh: installs what is missing, builds, and runs the whole test suite:
# cmocka unit tests and integration tests against a real ZooKeeper and the
# embedded Kafka, first on the normal build, then all of it again on an
# AddressSanitizer + UBSan build (leaks fail it too).
#   tests/run.sh            everything
#   tests/run.sh -L unit    only what ctest's -L selects (normal build)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${BATON_TEST_JOBS:-2}

"$src/deploy/setup.sh"
cd "$src/build"
ctest --output-on-failure -j"$jobs" --timeout 600 "$@"

if (($# == 0)) && [[ ${BATON_SKIP_SANITIZE:-0} != 1 ]]; then
    echo "== sanitizer build (ASan + UBSan)"
    BATON_BUILD_DIR="$src/build-san" "$src/deploy/setup.sh" -DBATON_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    cd "$src/build-san"
    # LeakSanitizer reports fail the run; halt on the first UBSan report too.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # The random-seed chaos run stays in the normal pass only: one new seed
    # per CI run is enough, and a sanitizer build is too slow to add another.
    ctest --output-on-failure -j"$jobs" --timeout 900 -E 'chaos\.seed_random'
fi
