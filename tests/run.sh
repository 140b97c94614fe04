#!/usr/bin/env bash
# run.sh: installs what is missing, builds, and runs the whole test suite:
# cmocka unit tests and integration tests against a real ZooKeeper and the
# embedded Kafka, first on the normal build, then all of it again on an
# AddressSanitizer + UBSan build (leaks fail it too).
#   tests/run.sh            everything
#   tests/run.sh -L unit    only what ctest's -L selects (normal build)
#   tests/run.sh --repeat N [--sanitize] [--busy] [ctest args...]
#                           the flake hunt: the suite N times (the normal
#                           build, or the sanitizer build with --sanitize;
#                           --busy keeps one core spinning meanwhile), then
#                           a summary of the failures per test. Each run's
#                           log is kept in BUILD/repeat/run-K.log.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Tests at a time: three in both passes. The normal pass mostly waits
# (sessions, quiet periods); the sanitizer pass is bound by its CPU, and
# three at a time still finish sooner than two (docs/testing.md, "CI's
# time"). BATON_TEST_JOBS sets both.
jobs=${BATON_TEST_JOBS:-3}
# What the sanitizer pass leaves out: the random-seed chaos run (one new
# seed per CI run, in the normal pass, is enough), and what runs no baton
# code (the model, the style checks).
san_skip='chaos\.seed_random|model\.quick|^style\.'

san_env() {
    # LeakSanitizer reports fail the run; halt on the first UBSan report too.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
}

if [[ ${1:-} == --repeat ]]; then
    n=${2:?usage: tests/run.sh --repeat N [--sanitize] [--busy] [ctest args...]}
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --repeat needs a count, not '$n'" >&2; exit 2; }
    shift 2
    build=$src/build timeout=600 busy=0
    while (($#)); do
        case $1 in
        --sanitize) build=$src/build-san timeout=900; shift ;;
        --busy) busy=1; shift ;;
        *) break ;;
        esac
    done
    if [[ $build == */build-san ]]; then
        BATON_BUILD_DIR=$build "$src/deploy/setup.sh" --tests -DBATON_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
        san_env
    else
        "$src/deploy/setup.sh" --tests
    fi
    mkdir -p "$build/repeat"
    cd "$build"
    spin=
    if ((busy)); then
        # One core kept busy, for as long as the runs last (and no longer:
        # the loop checks that this script still lives).
        bash -c 'while kill -0 '"$$"' 2>/dev/null; do for ((i = 0; i < 200000; i++)); do :; done; done' &
        spin=$!
        trap '[[ -n $spin ]] && kill "$spin" 2>/dev/null' EXIT
    fi
    declare -A fails=()
    bad=0
    for ((k = 1; k <= n; k++)); do
        log=$build/repeat/run-$k.log
        start=$SECONDS
        # As in CI's sanitizer pass, the random-seed chaos run, the model and
        # the style checks stay out of sanitizer repeats (give -R
        # chaos.seed_random to run it anyway).
        extra=()
        [[ $build == */build-san && $* != *chaos.seed_random* ]] && extra=(-E "$san_skip")
        if ctest --output-on-failure -j"$jobs" --timeout "$timeout" "${extra[@]}" "$@" >"$log" 2>&1; then
            echo "repeat: run $k/$n passed ($((SECONDS - start)) s)"
        else
            bad=$((bad + 1))
            failed=$(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*/\1/p' "$log" | tr '\n' ' ')
            echo "repeat: run $k/$n FAILED ($((SECONDS - start)) s): ${failed:-see $log}"
            for t in $failed; do fails[$t]=$((${fails[$t]:-0} + 1)); done
        fi
    done
    echo "repeat: $((n - bad)) of $n runs passed (logs in $build/repeat)"
    for t in "${!fails[@]}"; do echo "repeat:   $t failed ${fails[$t]} of $n"; done | sort
    ((bad == 0))
    exit
fi

"$src/deploy/setup.sh" --tests
cd "$src/build"
ctest --output-on-failure -j"$jobs" --timeout 600 "$@"

if (($# == 0)) && [[ ${BATON_SKIP_SANITIZE:-0} != 1 ]]; then
    echo "== sanitizer build (ASan + UBSan)"
    BATON_BUILD_DIR="$src/build-san" "$src/deploy/setup.sh" --tests -DBATON_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    cd "$src/build-san"
    san_env
    # The random-seed chaos run stays in the normal pass only: one new seed
    # per CI run is enough, and a sanitizer build is too slow to add another.
    # So do the protocol's model (model.quick) and the style checks: they
    # run no baton code.
    ctest --output-on-failure -j"$jobs" --timeout 900 -E "$san_skip"
fi
