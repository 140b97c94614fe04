#!/usr/bin/env bash
# setup.sh: installs what is missing from Debian's archive and builds baton
# into build/ (or $BATON_BUILD_DIR). Safe to run again: installs nothing that
# is there, rebuilds only what changed.
#   deploy/setup.sh [--tests] [extra cmake arguments...]
# --tests also installs the tools the test suite runs (tests/run.sh passes it).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BATON_BUILD_DIR:-$src/build}

# Two sets. What building and the demo need (deploy/demo.sh): build tools,
# the libraries baton links (librdkafka, the ZooKeeper client, jansson,
# cmocka for the unit tests built with everything, SQLite, libpq for the
# PostgreSQL sink, hiredis for the Redis sink, libmicrohttpd for /metrics, OpenSSL for the rack lookup),
# help2man for the man pages, and what the demo runs: ZooKeeper's server
# (with a Java runtime), kcat, sqlite3 and jq.
pkgs=(build-essential cmake pkg-config
      librdkafka-dev libzookeeper-mt-dev libjansson-dev libcmocka-dev libsqlite3-dev
      libpq-dev libhiredis-dev libmicrohttpd-dev libssl-dev help2man
      zookeeper default-jre-headless sqlite3 kcat jq procps)
# With --tests (tests/run.sh, .ci/run), also the test tools: Debian's
# postgresql (server, psql) and redis-server (and redis-cli) for the sinks'
# tests; curl to scrape
# /metrics; systemd-analyze for the units; yamllint, python3-kubernetes (the
# API schema) and docker-compose (v1: its `config` validates offline) to
# check deploy/compose and deploy/k8s; openssl for the Kafka TLS test's CA;
# clang-format for the style check; prometheus (promtool and the server);
# confluent-kafka and pytest for python/ and its fenced worker example, run
# by Debian's /usr/bin/python3.
test_pkgs=(postgresql redis-server curl systemd
           yamllint python3-kubernetes docker-compose
           openssl clang-format prometheus
           python3-confluent-kafka python3-pytest
           spin) # model/check.sh: the SPIN model checker (ctest model.quick)
if [[ ${1:-} == --tests ]]; then
    shift
    pkgs+=("${test_pkgs[@]}")
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    if (($(id -u) != 0)); then
        echo "setup: run as root (or install: ${missing[*]})" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Quiet unless something fails: the build's output goes to BUILD/build.log,
# and its tail is shown on a failure.
log=$build/build.log
mkdir -p "$build"
t0=$SECONDS
if ! { cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
    cmake --build "$build" -j"$(nproc)"; } >"$log" 2>&1; then
    grep -E 'error|Error|warning' "$log" | head -40 >&2 || true
    echo "setup: the build failed; the last lines of $log:" >&2
    tail -30 "$log" >&2
    exit 1
fi
echo "setup: built $build in $((SECONDS - t0)) s (log: $log)" >&2
