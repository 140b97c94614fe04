#!/usr/bin/env bash
# check.sh: checks deploy/prometheus with Debian's promtool (package
# `prometheus`): the example configuration and the rules it loads, then the
# rules' unit tests (baton-rules.test.yml). Exit 0 when all pass.
#   deploy/prometheus/check.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v promtool >/dev/null || {
    echo "check.sh: promtool is not installed (Debian's package prometheus; deploy/setup.sh installs it)" >&2
    exit 1
}
cd "$here"
promtool check config prometheus.yml
promtool check rules baton-rules.yml
promtool test rules baton-rules.test.yml
