#!/usr/bin/env bash
# it_libbaton_version: lib/version.cmake, the source of baton_version_str(),
# in each place baton can be built from (it_libbaton checks the calls):
#   - a release tarball (no git, or unpacked inside some other repository):
#     the project version, "0.1.0";
#   - a fresh clone without version tags: "0.1.0-g<commit>";
#   - a tagged commit: the tag without its "v"; later commits: git describe.
# The header is rewritten only when its text changes (no rebuild otherwise).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_libbaton_version
script=$BATON_SRC/lib/version.cmake
export GIT_CONFIG_NOSYSTEM=1 HOME=$H_DIR GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t

# version_of DIR: the string version.cmake gives a source tree at DIR.
version_of() {
    local out=$H_DIR/gen.h
    cmake -DSRC="$1" -DVERSION=0.1.0 -DOUT="$out" -P "$script" >"$H_DIR/cmake.log" 2>&1 ||
        h_fail "version.cmake failed for $1: $(cat "$H_DIR/cmake.log")"
    sed -nE 's/^#define BATON_VERSION_STR_ "(.*)"$/\1/p' "$out"
}
expect() {
    local got
    got=$(version_of "$1")
    [[ $got == "$2" ]] || h_fail "$3: version '$got', wanted '$2'"
}

tarball=$H_DIR/tarball
mkdir -p "$tarball"
expect "$tarball" 0.1.0 "a tarball"

repo=$H_DIR/repo
git init -q "$repo"
mkdir -p "$repo/baton-0.1.0"
echo a >"$repo/f"
git -C "$repo" add f
git -C "$repo" commit -q -m one
expect "$repo/baton-0.1.0" 0.1.0 "a tarball unpacked inside another repository"
c1=$(git -C "$repo" rev-parse --short=12 HEAD)
expect "$repo" "0.1.0-g$c1" "a clone without tags"
git -C "$repo" tag not-a-version
expect "$repo" "0.1.0-g$c1" "a clone with only a non-version tag"
git -C "$repo" tag -a v0.1.0 -m v0.1.0
expect "$repo" 0.1.0 "the tagged commit"
echo b >"$repo/f"
git -C "$repo" commit -q -am two
c2=$(git -C "$repo" rev-parse --short=12 HEAD)
expect "$repo" "0.1.0-1-g$c2" "a commit after the tag"

# Unchanged text: the header is not rewritten (its mtime stays).
touch -d '2000-01-01' "$H_DIR/gen.h"
version_of "$repo" >/dev/null
[[ $(stat -c %Y "$H_DIR/gen.h") == $(date -d '2000-01-01' +%s) ]] || h_fail "an unchanged version rewrote the header"
h_pass "version.cmake: tarball, foreign repository, untagged clone, tag and describe"
