#!/usr/bin/env bash
# it_zk_auth: ZooKeeper digest authentication and ACLs. A group run with
# --zk-auth-file (the identity digest:baton:PASS, in BATON_ZK_AUTH_FILE for
# every program) gets znodes that only that identity may change and anyone
# may read. An unauthenticated client (baton-zk, or batonctl without the
# identity) can read but cannot change the config, an assignment, a claim,
# a pin or a drain, nor delete the group; batonctl status still works for
# it. A wrong password is a clear error at start (exit 1 for a daemon,
# non-zero for batonctl), not a retry loop. The password is in no log, no
# --help, and not on any command line.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_zk_auth
h_zk_start
B_PARTITIONS=4
B_SINK=$H_DIR/sink.db
h_kafka_start "$B_TOPIC" $B_PARTITIONS
PW="pw-$RANDOM-$RANDOM-secret"
printf 'digest:baton:%s\n' "$PW" >"$H_DIR/zk-auth"
chmod 600 "$H_DIR/zk-auth"
export BATON_ZK_AUTH_FILE=$H_DIR/zk-auth

b_init $B_PARTITIONS
b_coord c1
b_worker w1
b_worker w2
h_wait_for 30 "w1 and w2 own everything" b_all_active 2
G=/baton/$B_GROUP

# Anyone may read.
h_zk get "$G/config" >/dev/null || h_fail "an unauthenticated client cannot read the config"
b_status_noauth() { env -u BATON_ZK_AUTH_FILE "$BATON_BIN/batonctl" --zk "$ZK" --group "$B_GROUP" --timeout 5000 "$@"; }
b_status_noauth status --json | jq -e '.partitions | length == 4' >/dev/null ||
    h_fail "batonctl status without the identity does not work"

# Nobody else may write. Every attempt must fail with ZNOAUTH.
claim=$(h_zk ls "$G/partitions/0/claims" | head -1)
[[ -n $claim ]] || h_fail "partition 0 has no claim"
owner0=$(b_owner 0)
epoch0=$(b_epoch 0)
try_write() { # DESCRIPTION baton-zk ARGS...
    local what=$1 rc=0
    shift
    h_zk "$@" >"$H_DIR/try.out" 2>&1 || rc=$?
    ((rc != 0)) || h_fail "an unauthenticated client could $what"
    grep -qi 'auth' "$H_DIR/try.out" || { cat "$H_DIR/try.out" >&2; h_fail "$what: refused, but not for lack of authorisation"; }
}
try_write "replace the config" set "$G/config" '{"topic":"x","partitions":1}'
try_write "replace w1's assignment" set "$G/assignment/w1" '{"generation":99,"partitions":[]}'
try_write "replace the assignment root" set "$G/assignment" '{}'
try_write "create a claim" create "$G/partitions/0/claims/claim-0-0000000000" ""
try_write "delete a claim" delete "$G/partitions/0/claims/$claim"
try_write "create a pin" create "$G/pins/0" '{"worker":"w2"}'
try_write "create a drain" create "$G/drains/w1" '{}'
try_write "delete the group" rmr "$G"
try_write "create a group under the root" create /baton/other ""
rc=0
b_status_noauth pin 0 w2 >"$H_DIR/pin.out" 2>&1 || rc=$?
cat "$H_DIR/pin.out" >&2
((rc != 0)) || h_fail "batonctl pin without the identity succeeded"
rc=0
b_status_noauth drain w1 >/dev/null 2>&1 || rc=$?
((rc != 0)) || h_fail "batonctl drain without the identity succeeded"
[[ $(b_owner 0) == "$owner0" && $(b_epoch 0) == "$epoch0" ]] ||
    h_fail "partition 0 changed hands after the refused writes"
b_all_active 2 || h_fail "the group is no longer all active"
h_log "unauthenticated writes refused"

# With the identity, batonctl writes.
b_ctl pin 0 w2 >/dev/null || h_fail "batonctl pin with the identity failed"
h_wait_for 30 "partition 0 moved to w2 by the pin" b_jq '.partitions[] | select(.partition == 0) | .owner == "w2" and .state == "active"'

# A wrong password: a clear error at start, exit 1, quickly.
printf 'digest:baton:not-the-password\n' >"$H_DIR/zk-auth-bad"
BATON_ZK_AUTH_FILE=$H_DIR/zk-auth-bad b_worker w3
rc=0; h_wait_exit w3 30 || rc=$?
((rc == 1)) || h_fail "a worker with a wrong password exited $rc, not 1"
b_log_has w3 'authentication failed' || h_fail "w3 did not say that authentication failed"
BATON_ZK_AUTH_FILE=$H_DIR/zk-auth-bad b_coord c2
rc=0; h_wait_exit c2 30 || rc=$?
((rc == 1)) || h_fail "a coordinator with a wrong password exited $rc, not 1"
rc=0
BATON_ZK_AUTH_FILE=$H_DIR/zk-auth-bad b_ctl status >"$H_DIR/bad-ctl.out" 2>&1 || rc=$?
cat "$H_DIR/bad-ctl.out" >&2
((rc == 1)) || h_fail "batonctl with a wrong password exited $rc, not 1"
grep -q 'authentication failed' "$H_DIR/bad-ctl.out" || h_fail "batonctl did not say that authentication failed"
# No identity at all: a daemon (which must write) says so and exits 1.
h_spawn w4 env -u BATON_ZK_AUTH_FILE "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id w4 \
    --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK" --session-timeout-ms "$B_SESSION_MS"
rc=0; h_wait_exit w4 30 || rc=$?
((rc == 1)) || h_fail "a worker without the identity exited $rc, not 1"
b_log_has w4 'protected by ZooKeeper ACLs.*give --zk-auth' || h_fail "w4 did not say it needs --zk-auth"
# A wrong user is refused too.
rc=0
BATON_ZK_AUTH_FILE= BATON_ZK_AUTH="digest:mallory:$PW" b_ctl status >"$H_DIR/bad-user.out" 2>&1 || rc=$?
((rc == 1)) && grep -q "writable only by digest:baton" "$H_DIR/bad-user.out" ||
    { cat "$H_DIR/bad-user.out" >&2; h_fail "batonctl as another user was not refused clearly"; }

# Credentials refused on a rejoin after session expiry: fatal as well, not
# a rejoin loop. A root that anyone may change (/rejoin, created without an
# identity) holds a group of our identity, run by c5 and w5. The root's ACL
# then becomes read-only for everyone (zkCli setAcl: the open ACL lets
# anyone do it), which running sessions do not notice; both sessions expire
# (SIGSTOP past the timeout), the new sessions' root check refuses the
# identity, and both exit 1 with a clear message.
R=/rejoin
h_zk create "$R" "" >/dev/null
B_SINK=$H_DIR/rejoin.db
b_ctl --root "$R" init --topic "$B_TOPIC" --partitions 2 >/dev/null
b_coord c5 --root "$R"
b_worker w5 --root "$R"
r_active() { b_ctl --root "$R" status --json | jq -e '(.partitions | length == 2) and all(.partitions[]; .state == "active" and .owner == "w5")' >/dev/null; }
h_wait_for 30 "w5 owns $R's 2 partitions" r_active
/usr/share/zookeeper/bin/zkCli.sh -server "$ZK" setAcl "$R" world:anyone:r >"$H_DIR/setacl.out" 2>&1 ||
    { cat "$H_DIR/setacl.out" >&2; h_fail "zkCli setAcl $R failed"; }
try_write "create under $R after its ACL became read-only" create "$R/x" ""
h_kill w5 STOP
h_kill c5 STOP
r_sessions_gone() { ! h_zk exists "$R/$B_GROUP/workers/w5" && [[ -z $(h_zk ls "$R/$B_GROUP/coordinators") ]]; }
h_wait_for 30 "w5's and c5's sessions expired" r_sessions_gone
h_kill w5 CONT
h_kill c5 CONT
rc=0; h_wait_exit w5 30 || rc=$?
((rc == 1)) || h_fail "w5, refused on its rejoin, exited $rc, not 1"
b_log_has w5 'event=session_expired' || h_fail "w5 did not see its session expire"
b_log_has w5 "event=membership_failed.*authentication failed: '$R' is writable only by" ||
    h_fail "w5 did not say that its rejoin's authentication failed"
(($(grep -c 'event=rejoin_failed' "$H_DIR/w5.log") == 0)) || h_fail "w5 retried the refused rejoin"
rc=0; h_wait_exit c5 30 || rc=$?
((rc == 1)) || h_fail "c5, refused on its reconnect, exited $rc, not 1"
b_log_has c5 'event=zk_auth_failed action=exit' || h_fail "c5 did not say that its reconnect's authentication failed"
h_log "refused credentials on a rejoin after expiry: w5 and c5 exit 1"

# Secrets: in no log or help text, and not on a command line (the file was used).
for prog in baton-coordinator baton-worker batonctl; do
    "$BATON_BIN/$prog" --help >>"$H_DIR/help.out" 2>&1 || true
done
if grep -lF -- "$PW" "$H_DIR"/*.log "$H_DIR"/*.out; then
    h_fail "the ZooKeeper password appears in a log or help text"
fi
if grep -F -- "$PW" /proc/"$(h_pid w1)"/cmdline >/dev/null; then
    h_fail "the password is on w1's command line"
fi
h_pass "ACL-protected group: anyone reads, only the identity writes, wrong credentials fail clearly"
