#!/usr/bin/env bash
# it_keys_limit: a group has at most BATON_KEYS_MAX (100,000) keys. At the
# real limit: `keys add` and `init --keys` refuse a request whose new names
# would pass it (exit 1, naming the limit, the group's keys and the new
# ones), creating nothing; names already there and keys up to the limit
# exactly pass; a node under keys/ that is not a key name does not count;
# a removed key makes room. The group is filled by `baton-zk fill`
# (pipelined multis: 6-9 s on the 2-core build machine under load, the
# sanitizer build included; ZooKeeper's own work), key nodes only: the
# limit counts names, and claims directories would double the creates.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_keys_limit
h_zk_start

kdir=/baton/$B_GROUP/keys
b_ctl init --keys seed >/dev/null
h_zk fill "$kdir" k 99998 "" >"$H_DIR/fill.out" || h_fail "baton-zk fill: $(cat "$H_DIR/fill.out")"
h_log "filled the group to 99,999 keys: $(cat "$H_DIR/fill.out")"
nkids() { h_zk stat "$kdir" | sed -n 's/.*numChildren=\([0-9]*\).*/\1/p'; }
(($(nkids) == 99999)) || h_fail "the fill left $(nkids) children of $kdir, not 99999"

# refused EXPECTED CMD...: CMD exits 1 with EXPECTED in its message and
# changes nothing under keys/.
refused() {
    local want=$1 before rc=0
    shift
    before=$(nkids)
    "$@" >"$H_DIR/out" 2>"$H_DIR/err" || rc=$?
    ((rc == 1)) || h_fail "$* should exit 1 (refused), got $rc: $(cat "$H_DIR/out" "$H_DIR/err")"
    grep -F -- "$want" "$H_DIR/err" >/dev/null || h_fail "$*: expected '$want' in: $(cat "$H_DIR/err")"
    (($(nkids) == before)) || h_fail "$* created nodes though refused: $before children before, $(nkids) after"
}

# 99,999 + 2 new (new-a asked for twice, k7 is there): one past the limit.
refused "batonctl: the group has 99999 keys and 2 of those asked for are new: that would pass the limit of 100000 keys (nothing added); add at most 1, or remove keys first" \
    b_ctl keys add new-a new-b,new-a k7
! h_zk exists "$kdir/new-a" >/dev/null 2>&1 || h_fail "new-a was created by a refused add"
# init --keys is refused before it writes anything: the topic is not taken.
refused "the group has 99999 keys and 2 of those asked for are new" \
    b_ctl init --topic in --partitions 2 --keys new-a,new-b
h_zk get "/baton/$B_GROUP/config" | jq -e '.topic == "" and .partitions == 0' >/dev/null ||
    h_fail "a refused init --topic --keys changed the config: $(h_zk get "/baton/$B_GROUP/config")"
# Up to the limit exactly.
out=$(b_ctl keys add new-a k7 new-a 2>&1) || h_fail "keys add of the 100,000th key failed: $out"
[[ $out == "added 1 key(s) to group $B_GROUP (the others exist)" ]] || h_fail "keys add of the 100,000th key: $out"
(($(nkids) == 100000)) || h_fail "not 100000 keys after the last one fits: $(nkids)"
# A node made by hand that is not a key name is no key: the group still
# has 100,000.
h_zk create "$kdir/bad key" "" >/dev/null
refused "batonctl: the group has 100000 keys, the limit is 100000: cannot add the 1 new one(s) asked for (nothing added); remove keys first" \
    b_ctl keys add new-b
# Names that are all there create nothing and pass.
b_ctl keys add k0 new-a seed | grep -x "added 0 key(s) to group $B_GROUP (the others exist)" >/dev/null ||
    h_fail "keys add of existing keys at the limit should pass"
b_ctl init --keys k99997,seed | grep "no change" >/dev/null || h_fail "init --keys of existing keys at the limit should pass"
# A removed key makes room for one.
b_ctl keys remove k7 >/dev/null
b_ctl keys add new-b | grep -x "added 1 key(s) to group $B_GROUP" >/dev/null || h_fail "keys add after a remove"
h_zk exists "$kdir/new-b/claims" >/dev/null || h_fail "new-b has no claims directory"
h_pass "keys add and init --keys refused past 100,000 keys (nothing created), up to it accepted, existing names and a removed key's room fine"
