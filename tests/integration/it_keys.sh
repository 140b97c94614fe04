#!/usr/bin/env bash
# it_keys: named keys end to end through the public member library.
# batonctl init --keys / keys add|remove|list (names validated); the
# coordinator assigns keys with the group's strategy over the members that
# may take each (a member's key filter); members get on_assigned(key) and
# then on_acquired(key, epoch)
# on their own thread with epochs that rise across owners; a crashed owner's
# key moves after its session expires, with a higher epoch; a graceful leave
# releases with reason "leave"; removing a key takes it from its owner;
# status and history show keys; a keys-only member takes no
# partitions in a group that has both.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_keys
h_zk_start

# --- batonctl: init --keys, keys add|remove|list, validation -------------
b_ctl init --keys nightly,compaction-a,report.x | grep "keys only" >/dev/null || h_fail "init --keys"
b_ctl init --keys nightly,compaction-a | grep "no change" >/dev/null || h_fail "init --keys again should change nothing"
for bad in 'bad/name' 'has space' '' "$(printf 'k%.0s' {1..129})" '..'; do
    rc=0; b_ctl init --keys "$bad" >/dev/null 2>&1 || rc=$?
    ((rc == 2)) || h_fail "init --keys '$bad' should exit 2, got $rc"
    rc=0; b_ctl keys add "$bad" >/dev/null 2>&1 || rc=$?
    ((rc == 2)) || h_fail "keys add '$bad' should exit 2, got $rc"
done
err=$(b_ctl keys add ok,bad/x 2>&1 >/dev/null) && h_fail "a bad name in a list should fail"
[[ $err == *"bad/x"* ]] || h_fail "the error should name the bad key: $err"
b_ctl keys list --json | jq -e '.group == "'"$B_GROUP"'" and (.keys | map(.key)) == ["compaction-a","nightly","report.x"]' >/dev/null ||
    h_fail "keys list: $(b_ctl keys list --json)"
b_ctl keys add extra | grep "added 1" >/dev/null || h_fail "keys add"
b_ctl keys remove extra | grep "removed 1" >/dev/null || h_fail "keys remove"
# --json with add and remove: what was asked and how many changed (it was
# once ignored, printing the text line).
out=$(b_ctl keys add --json extra nightly) || h_fail "keys add --json failed"
jq -e --arg g "$B_GROUP" '. == {"group": $g, "action": "add", "keys": ["extra", "nightly"], "changed": 1}' \
    <<<"$out" >/dev/null || h_fail "keys add --json: $out"
out=$(b_ctl keys remove --json extra extra2) || h_fail "keys remove --json failed"
jq -e --arg g "$B_GROUP" '. == {"group": $g, "action": "remove", "keys": ["extra", "extra2"], "changed": 1}' \
    <<<"$out" >/dev/null || h_fail "keys remove --json: $out"
# A key with --once run records (keys/K/runs/ID) goes with them.
b_ctl keys add with-runs >/dev/null
h_zk create /baton/g/keys/with-runs/runs '' >/dev/null
h_zk create /baton/g/keys/with-runs/runs/2026-11-29 '{"epoch":1}' >/dev/null
b_ctl keys remove with-runs | grep "removed 1" >/dev/null || h_fail "keys remove of a key with run records"
! h_zk exists /baton/g/keys/with-runs >/dev/null 2>&1 || h_fail "with-runs still exists"
rc=0; b_ctl keys frobnicate >/dev/null 2>&1 || rc=$?
((rc == 2)) || h_fail "keys with an unknown subcommand should exit 2, got $rc"
b_ctl keys --help | grep '^examples:' >/dev/null || h_fail "keys --help has no examples"
# init --topic on a keys-only group adopts the topic; the keys stay.
b_ctl init --topic in --partitions 2 | grep "now consumes topic in" >/dev/null || h_fail "a keys-only group should take a topic"

# --- ownership -------------------------------------------------------------
b_coord c1
b_probe p1 --keys-only
b_probe p2 --keys-only --key nightly
keys_json() { b_ctl keys list --json | jq '.keys'; }
settled() { keys_json | jq -e 'length == 3 and all(.[]; .state == "active")'; }
h_wait_for 20 "every key active" settled
keys_json | jq -e 'map(select(.key != "nightly")) | all(.[]; .owner == "p1")' >/dev/null ||
    h_fail "keys only p1 may take must be p1's: $(keys_json)"
# A keys-only member gets no partitions: with no worker they stay unowned.
b_jq '.summary.unowned == 2 and all(.partitions[]; .assigned == null)' >/dev/null ||
    h_fail "keys-only members must not be assigned partitions: $(b_status | jq -c .partitions)"
b_jq '.keys | length == 3' >/dev/null || h_fail "status --json has no keys"
b_ctl status | grep '^KEY ' >/dev/null || h_fail "status has no KEY table"
b_ctl status | grep -E '^keys: +3: 3 active, 0 handoff, 0 unowned' >/dev/null || h_fail "status summary has no keys line"
for p in p1 p2; do
    if grep -q '^acquired' "$H_DIR/$p.log"; then
        grep '^acquired' "$H_DIR/$p.log" | grep -v 'own_thread=1 valid=1' >/dev/null &&
            h_fail "$p: a callback off its own thread, or an epoch not valid inside on_acquired"
    fi
done
# on_assigned named every key before its first on_acquired, on the owner's
# thread, with baton_membership_assigned() saying 1.
for p in p1 p2; do
    awk '$1 == "assigned" && $3 != "assigned=1" { bad = 1 }
         $1 == "assigned" && $4 != "own_thread=1" { bad = 1 }
         $1 == "assigned" { seen[$2] = 1 }
         $1 == "acquired" && !($2 in seen) { bad = 1 }
         END { exit bad }' "$H_DIR/$p.log" ||
        h_fail "$p: an acquire without on_assigned before it, or a bad assigned line: $(cat "$H_DIR/$p.log")"
done
# Every acquisition printed matches the claim epoch ZooKeeper shows.
for k in nightly compaction-a report.x; do
    owner=$(keys_json | jq -r ".[] | select(.key == \"$k\") | .owner")
    epoch=$(keys_json | jq -r ".[] | select(.key == \"$k\") | .epoch")
    grep -q "^acquired key=$k epoch=$epoch " "$H_DIR/$owner.log" ||
        h_fail "$owner did not report key $k with epoch $epoch"
done

# --- a crash moves nightly (if p2 has it) or leaves p1-only keys unowned ---
n_owner=$(keys_json | jq -r '.[] | select(.key == "nightly") | .owner')
n_epoch=$(keys_json | jq -r '.[] | select(.key == "nightly") | .epoch')
other=$([[ $n_owner == p1 ]] && echo p2 || echo p1)
h_kill "$n_owner" KILL
moved() { keys_json | jq -e ".[] | select(.key == \"nightly\") | .owner == \"$other\" and .state == \"active\" and .epoch > $n_epoch"; }
h_wait_for 20 "nightly re-owned by $other with a higher epoch after $n_owner's session expired" moved
if [[ $n_owner == p1 ]]; then
    keys_json | jq -e 'map(select(.key != "nightly")) | all(.[]; .state == "unowned" and .assigned == null)' >/dev/null ||
        h_fail "keys only p1 could take must be unowned once it died: $(keys_json)"
fi
b_ctl history --json | jq -e '.entries | any(.key == "nightly" and .partition == null)' >/dev/null ||
    h_fail "history has no key entry: $(b_ctl history --json)"

# --- restart the dead one; removing a key takes it from its owner ---------
b_probe "$n_owner" --keys-only $([[ $n_owner == p2 ]] && echo --key nightly)
h_wait_for 20 "every key active again" settled
r_owner=$(keys_json | jq -r '.[] | select(.key == "report.x") | .owner')
b_ctl keys remove report.x >/dev/null
# Its claim goes with the key (lost) or the new assignment comes first
# (revoked): either way the owner stops, on its own thread.
h_wait_for 15 "report.x released by $r_owner" grep -Eq '^released key=report.x reason=(lost|revoked) own_thread=1' "$H_DIR/$r_owner.log"
h_wait_for 15 "report.x gone from status" b_jq '(.keys | map(.key)) == ["compaction-a","nightly"]'

# --- a key node made by hand, not a key name: ignored, loudly --------------
# Published, it would make every member's decoder refuse its assignment
# (each kept its old one from then on): the key added after it must still
# be taken.
h_zk create "/baton/$B_GROUP/keys/bad key" "" >/dev/null
b_ctl keys add later >/dev/null
h_wait_for 20 "later taken despite the bad key node" \
    b_jq '.keys | map(.key) == ["compaction-a","later","nightly"] and all(.[]; .state == "active")'
b_log_has c1 'event=bad_key path="/baton/'"$B_GROUP"'/keys/bad key" reason=not_a_key_name action=ignore' ||
    h_fail "the coordinator did not say it ignored the bad key node: $(grep -c bad_key "$H_DIR/c1.log")"
# batonctl says so: one warning per ignored node on stderr, naming it (a
# name that is not ASCII escaped byte by byte: a right-to-left override
# must not reorder the terminal's line), why, and the fix; stdout's JSON
# is what it was. ZooKeeper itself refuses a name with a control character
# (C0, DEL, C1) or bytes that are not UTF-8, so U+202E is the hostile name
# a node can have.
! h_zk create "/baton/$B_GROUP/keys/esc$(printf '\x1b')[2J" "" >/dev/null 2>&1 ||
    h_fail "ZooKeeper took a node name with an escape character: batonctl's warnings must be checked for it"
rlo=$(printf '\342\200\256') # U+202E in UTF-8
rtl="rtl${rlo}x"
h_zk create "/baton/$B_GROUP/keys/$rtl" "" >/dev/null
h_zk create "/baton/$B_GROUP/keys/$rtl/claims" "" >/dev/null
h_zk create "/baton/$B_GROUP/keys/$rtl/claims/x" "" >/dev/null
kbase="/baton/$B_GROUP/keys"
warn_bad="batonctl: warning: $kbase/bad key: ignored: not a key name (1-128 of [A-Za-z0-9._-]); remove it with 'batonctl keys remove --invalid' (and this command's --zk and --group)"
warn_rtl="batonctl: warning: $kbase/rtl\\xe2\\x80\\xaex: ignored: not a key name"
valid_keys='["compaction-a","later","nightly"]'
# warned CMD...: CMD's stdout in $H_DIR/out, its stderr in $H_DIR/err, which
# must hold both warnings (each once, and no raw U+202E).
warned() {
    "$@" >"$H_DIR/out" 2>"$H_DIR/err" || h_fail "$* failed: $(cat "$H_DIR/err")"
    (($(grep -cxF -- "$warn_bad" "$H_DIR/err") == 1)) || h_fail "$*: no (or a repeated) warning of the bad key node: $(cat "$H_DIR/err")"
    (($(grep -cF -- "$warn_rtl" "$H_DIR/err") == 1)) || h_fail "$*: no escaped warning of $kbase/rtl...x: $(cat -v "$H_DIR/err")"
    (($(grep -c . "$H_DIR/err") == 2)) || h_fail "$*: not one warning per ignored node: $(cat -v "$H_DIR/err")"
    ! grep -qF -- "$rlo" "$H_DIR/err" "$H_DIR/out" || h_fail "$*: printed a raw U+202E"
}
warned b_ctl keys list --json
jq -e '.group == "'"$B_GROUP"'" and (.keys | map(.key)) == '"$valid_keys"' and (keys == ["group","keys"])' "$H_DIR/out" >/dev/null ||
    h_fail "keys list --json changed: $(cat "$H_DIR/out")"
later_epoch=$(jq '.keys[] | select(.key == "later") | .epoch' "$H_DIR/out")
warned b_ctl keys list
grep -q '^later ' "$H_DIR/out" || h_fail "keys list has no row of later: $(cat "$H_DIR/out")"
warned b_ctl status --json
jq -e '(.keys | map(.key)) == '"$valid_keys"' and
       (.warnings | map(select(.path | startswith("'"$kbase"'/"))) | map(.path)) == ["'"$kbase"'/bad key", "'"$kbase"'/rtl\\xe2\\x80\\xaex"]' \
    "$H_DIR/out" >/dev/null || h_fail "status --json: $(jq -c '{keys: [.keys[].key], warnings}' "$H_DIR/out")"
warned b_ctl status
grep -q '^warnings: .*(on stderr)' "$H_DIR/out" || h_fail "status does not count the warnings: $(cat "$H_DIR/out")"
# keys remove --invalid: refused with a KEY, --json, or another subcommand
# (exit 2, nothing removed); then it removes both nodes (rtl with what is
# below it), names each, and leaves every key and its claim.
for args in "remove --invalid later" "remove later --invalid" "remove --invalid --json" "list --invalid" "add --invalid x"; do
    read -ra argv <<<"$args"
    rc=0; b_ctl keys "${argv[@]}" >/dev/null 2>"$H_DIR/err" || rc=$?
    ((rc == 2)) || h_fail "keys $args should exit 2, got $rc: $(cat "$H_DIR/err")"
done
{ h_zk exists "$kbase/bad key" >/dev/null && h_zk exists "$kbase/later" >/dev/null; } ||
    h_fail "a refused keys remove --invalid removed something"
b_ctl keys remove --invalid >"$H_DIR/out" 2>"$H_DIR/err" || h_fail "keys remove --invalid failed: $(cat "$H_DIR/err")"
diff <(printf '%s\n' "removed $kbase/bad key: not a key name" "removed $kbase/rtl\\xe2\\x80\\xaex: not a key name" \
    "removed 2 invalid key node(s) from group $B_GROUP") "$H_DIR/out" >&2 || h_fail "keys remove --invalid said: $(cat -v "$H_DIR/out")"
[[ ! -s $H_DIR/err ]] || h_fail "keys remove --invalid wrote to stderr: $(cat "$H_DIR/err")"
! h_zk exists "$kbase/bad key" >/dev/null 2>&1 || h_fail "keys remove --invalid left the bad key node"
! h_zk exists "$kbase/$rtl" >/dev/null 2>&1 || h_fail "keys remove --invalid left $kbase/rtl...x"
b_ctl keys list --json >"$H_DIR/out" 2>"$H_DIR/err" || h_fail "keys list failed after remove --invalid"
[[ ! -s $H_DIR/err ]] || h_fail "keys list still warns after remove --invalid: $(cat "$H_DIR/err")"
jq -e '(.keys | map(.key)) == '"$valid_keys"' and (.keys[] | select(.key == "later") | .epoch == '"$later_epoch"' and .state == "active")' \
    "$H_DIR/out" >/dev/null || h_fail "keys remove --invalid touched a key: $(cat "$H_DIR/out")"
b_ctl keys remove --invalid | grep -qx "removed 0 invalid key node(s) from group $B_GROUP (there were none)" ||
    h_fail "keys remove --invalid with nothing to remove"
b_ctl keys remove later >/dev/null

# --- graceful leave --------------------------------------------------------
h_stop p1
rc=0; h_wait_exit p1 10 || rc=$?
((rc == 0)) || h_fail "member_probe p1 should leave and exit 0, got $rc"
grep -q '^released key=compaction-a reason=leave own_thread=1' "$H_DIR/p1.log" ||
    h_fail "p1 did not release compaction-a with reason leave"
# --- evict: a key-holding member's key claims go with it --------------------
h_wait_for 20 "p2 owns nightly alone" b_jq '.keys[] | select(.key == "nightly") | .owner == "p2" and .state == "active"'
b_ctl evict p2 --json >"$H_DIR/evict.json" || h_fail "evict p2 failed"
jq -e '.claims | any(.key == "nightly" and .partition == null and .owner)' "$H_DIR/evict.json" >/dev/null ||
    h_fail "evict did not remove p2's key claim: $(cat "$H_DIR/evict.json")"
rc=0; h_wait_exit p2 15 || rc=$?
((rc == 1)) || h_fail "an evicted member_probe should exit 1, got $rc"
grep -q '^released key=nightly reason=lost' "$H_DIR/p2.log" || h_fail "p2 did not drop nightly when evicted"
h_pass "keys: validation, filters, own-thread callbacks, rising epochs across a crash, remove, a bad key node ignored, warned of and removed with --invalid, leave, evict"
