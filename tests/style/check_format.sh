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
n=$(echo "$files" | wc -l)
# One clang-format for every file: each process loads LLVM, and 191 of
# them one by one took over the test's 120 s on the loaded 2-core machine
# (0.8 s a file; one process for all of them, 8-16 s). Its messages name
# the files that differ; only those get a diff below. A failure that names
# none (a bad .clang-format, a file it cannot read) is its own error,
# shown as it is.
# shellcheck disable=SC2086 # paths without blanks, one word each
if out=$(clang-format --dry-run -Werror $files 2>&1); then
    echo "check_format: $n files formatted"
    exit 0
fi
named=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if [[ -z $named ]]; then
    echo "check_format: clang-format failed without naming a file to format:" >&2
    echo "$out" | sed -n '1,20p' >&2
    exit 1
fi
files=$named
bad=0
for f in $files; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "check_format: $f is not formatted:"
        clang-format "$f" | diff -u "$f" - | sed -n '1,12p' || true
        bad=$((bad + 1))
    fi
done
if ((bad)); then
    echo "check_format: $bad of $n files differ from .clang-format" >&2
    exit 1
fi
echo "check_format: $n files formatted"
