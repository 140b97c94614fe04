#!/usr/bin/env bash
# setup.sh: installs what is missing from Debian's archive and builds baton
# into build/ (or $BATON_BUILD_DIR). Safe to run again: installs nothing that
# is there, rebuilds only what changed.
#   deploy/setup.sh [extra cmake arguments...]
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BATON_BUILD_DIR:-$src/build}

# Build tools, the libraries baton links, and what the demo and the tests run:
# ZooKeeper's server (with a Java runtime), kcat, sqlite3 and jq; libpq for
# the PostgreSQL sink and Debian's postgresql (server, psql) for its tests;
# libmicrohttpd for the daemons' /metrics and curl to scrape it in tests;
# yamllint, python3-kubernetes (the API schema) and docker-compose (v1: its
# `config` validates offline) to check deploy/compose and deploy/k8s;
# confluent-kafka and pytest for the Python package (python/) and its
# fenced worker example, run by Debian's /usr/bin/python3.
pkgs=(build-essential cmake pkg-config
      librdkafka-dev libzookeeper-mt-dev libjansson-dev libcmocka-dev libsqlite3-dev
      zookeeper default-jre-headless sqlite3 kcat jq procps
      libpq-dev postgresql libmicrohttpd-dev curl
      help2man systemd
      yamllint python3-kubernetes docker-compose
      libssl-dev # the coordinator's rack lookup speaks TLS
      openssl # the Kafka TLS test's throwaway CA and TLS listener
      clang-format # tests/style/check_format.sh: the tree is formatted as .clang-format says
      prometheus # promtool for deploy/prometheus, the server for it_prometheus
      python3-confluent-kafka python3-pytest) # python/ and examples/python (ctypes: nothing else)
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
