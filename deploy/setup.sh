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
# `config` validates offline) to check deploy/compose and deploy/k8s; spin
# for the protocol's model (model/).
pkgs=(build-essential cmake pkg-config
      librdkafka-dev libzookeeper-mt-dev libjansson-dev libcmocka-dev libsqlite3-dev
      zookeeper default-jre-headless sqlite3 kcat jq procps
      libpq-dev postgresql libmicrohttpd-dev curl
      help2man systemd
      yamllint python3-kubernetes docker-compose
      libssl-dev # the coordinator's rack lookup speaks TLS
      openssl # the Kafka TLS test's throwaway CA and TLS listener
      clang-format # tests/style/check_format.sh (STYLE.md: .clang-format checked)
      prometheus # promtool for deploy/prometheus, the server for it_prometheus
      spin) # model/check.sh: the SPIN model checker (ctest model.quick)
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

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
