#!/usr/bin/env bash
# check_format.sh: every C source and header of the tree is formatted as
# .clang-format says (committed, and checked here).
# Prints each file that differs with the first lines of its diff; exits 1
# if any does. Fix with: clang-format -i FILE (or the whole tree:
#   git ls-files '*.c' '*.h' | xargs clang-format -i).
set -euo pipefail
src=${BATON_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$src"
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (deploy/setup.sh installs it)" >&2; exit 1; }
files=$(find assignment bench common coordinator ctl devkafka examples include lib run sink tests worker \
    -name '*.[ch]' -not -path '*/corpus/*' | sort)
bad=0
for f in $files; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "check_format: $f is not formatted:"
        clang-format "$f" | diff -u "$f" - | sed -n '1,12p' || true
        bad=$((bad + 1))
    fi
done
n=$(echo "$files" | wc -l)
if ((bad)); then
    echo "check_format: $bad of $n files differ from .clang-format" >&2
    exit 1
fi
echo "check_format: $n files formatted"
