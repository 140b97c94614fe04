#!/usr/bin/env bash
# minority_selftest.sh: proves the chaos run's isolated-server check
# (tests/chaos/minority.sh) can fail. One standalone ZooKeeper holds two
# views of the group's assignment node under two chroots: /old (version 1)
# and /new (version 3). Read as "the isolated server" and "the majority"
# they fabricate each case: the old view served past the window must be
# stale_assignment, the current one still_serving, either inside the window
# in_window / stale_in_window, and a server that serves nothing down.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/chaos/minority.sh"
h_init chaos_minority_selftest
h_zk_start
path=/baton/g/assignment
zkc() { "$BATON_BIN/baton-zk" --zk "$1" "${@:2}" >/dev/null; }
for view in old new; do
    zkc "$ZK" create "/$view" ""
    zkc "$ZK" create "/$view/baton" ""
    zkc "$ZK" create "/$view/baton/g" ""
    zkc "$ZK" create "/$view$path" '{"generation":1}'
done
zkc "$ZK" set "/old$path" '{"generation":2}'
for g in 2 3 4; do zkc "$ZK" set "/new$path" "{\"generation\":$g}"; done
[[ $(minority_read "$ZK/old" $path) == "version=1 "* ]] || h_fail "old view: $(minority_read "$ZK/old" $path)"
[[ $(minority_read "$ZK/new" $path) == "version=3 "* ]] || h_fail "new view: $(minority_read "$ZK/new" $path)"
[[ $(minority_read "$ZK/new" /baton/g/nothing) == none ]] || h_fail "a missing node should read as none"

# expect ISOLATED ELAPSED_MS VERDICT
expect() {
    local got
    got=$(minority_judge "$1" "$ZK/new" $path "$2" 5000)
    [[ ${got%% *} == "$3" ]] || h_fail "isolated view $1 after $2 ms: '$got', wanted $3"
    h_log "$1 after $2 ms: $got"
}
expect "$ZK/old" 6000 stale_assignment
expect "$ZK/new" 6000 still_serving
expect "$ZK/old" 1000 stale_in_window
expect "$ZK/new" 1000 in_window
# A view without the assignment at all, where the majority has one.
zkc "$ZK" create /empty ""
expect "$ZK/empty" 6000 stale_assignment
dead=127.0.0.1:$(h_free_port)
expect "$dead" 6000 down
h_pass "the isolated-server check reports a stale assignment served past the window, a server still serving, and a silent one as down"
