#!/usr/bin/env bash
# it_libbaton_conf: memberships made from a baton_conf_t (baton/baton.h),
# three of them in one process (tests/integration/member_multi.c, public
# header only):
#   - per-handle ZooKeeper identity: root /ra belongs to digest user alice,
#     /rb to bob. Member a (alice, from zookeeper.auth.file) and c (alice,
#     zookeeper.auth) join a group under /ra, member b (bob) one under /rb;
#     each owns its key. One identity for the process would fail a root
#     check ("writable only by digest:bob, not by digest user 'alice'"),
#     and each claim znode carries its own member's identity (getAcl);
#   - per-handle log callback: a's lines (log.level debug) go to a's
#     callback only, with debug lines and the ZooKeeper client's lines of
#     a's session (lib=zookeeper); b's (log.level info) to b's only, with
#     no debug line; c has no callback, so its lines go to stderr as
#     before, and a's and b's never do;
#   - a bad setting or a missing required one is a clear error naming it;
#   - standby.claim and standby.notice reach the member: a, with
#     standby.notice=127.0.0.1:0, binds a socket and advertises it in its
#     member node;
#   - baton-run (the library's conf form, its identity from --zk-auth-file)
#     writes as alice under /ra, and as bob is refused naming --zk-auth.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_libbaton_conf
h_zk_start
MULTI=$BATON_TESTS_BIN/member_multi
PA="pw-a-$RANDOM-$RANDOM"
PB="pw-b-$RANDOM-$RANDOM"
printf 'digest:alice:%s\n' "$PA" >"$H_DIR/alice.auth"
chmod 600 "$H_DIR/alice.auth"

# Two roots, each writable by one identity only, each with a coordinator.
BATON_ZK_AUTH="digest:alice:$PA" b_ctl --root /ra init --keys ka,kc >/dev/null
BATON_ZK_AUTH="digest:bob:$PB" b_ctl --root /rb init --keys kb >/dev/null
BATON_ZK_AUTH="digest:alice:$PA" b_coord ca --root /ra
BATON_ZK_AUTH="digest:bob:$PB" b_coord cb --root /rb

# Bad input first: clear errors naming the setting, no crash.
expect_err() { # EXIT_CODE PATTERN ARGS...
    local want=$1 pat=$2 rc=0
    shift 2
    "$MULTI" "$@" >"$H_DIR/bad.out" 2>&1 || rc=$?
    ((rc == want)) && grep -Eq -- "$pat" "$H_DIR/bad.out" ||
        h_fail "member_multi $*: exit $rc (want $want), output: $(cat "$H_DIR/bad.out")"
}
expect_err 2 "unknown setting 'zookeeper.nope'" --member --set zookeeper.nope=1
expect_err 2 "capacity: '0' is not an integer in 1..1000000" --member --set capacity=0
expect_err 2 "session.timeout.ms: '10s' is not an integer" --member --set session.timeout.ms=10s
expect_err 2 "keys: 'bad/key' is not a key name" --member --set keys=ka,bad/key
expect_err 2 "zookeeper.auth: the scheme must be 'digest'" --member --set zookeeper.auth=sasl:x:y
expect_err 2 "zookeeper.auth.file: cannot read '/nonexistent'" --member --set zookeeper.auth.file=/nonexistent
expect_err 2 "standby.claim: 'early' is not takeover or ahead" --member --set standby.claim=early
expect_err 2 "standby.notice: '0.0.0.0:0' is a wildcard" --member --set standby.notice=0.0.0.0:0
expect_err 1 "zookeeper.connect is required" --member --set group=g --set id=x
! grep -q "$PA\|$PB" "$H_DIR/bad.out" || h_fail "a password in an error message"

common=(--set "zookeeper.connect=$ZK" --set "group=$B_GROUP" --set no.partitions=true
    --set "session.timeout.ms=$B_SESSION_MS")
h_spawn m "$MULTI" \
    --member "${common[@]}" --set zookeeper.root=/ra --set id=a --set keys=ka \
    --set "zookeeper.auth.file=$H_DIR/alice.auth" --set log.level=debug --log "$H_DIR/a.lines" \
    --set standby.claim=ahead --set standby.notice=127.0.0.1:0 \
    --member "${common[@]}" --set zookeeper.root=/rb --set worker.id=b --set keys=kb \
    --set "zookeeper.auth=digest:bob:$PB" --set log.level=info --log "$H_DIR/b.lines" \
    --member "${common[@]}" --set zookeeper.root=/ra --set id=c --set keys=kc \
    --set "zookeeper.auth=digest:alice:$PA"
owns() { grep -q "^acquired id=$1 key=$2 epoch=" "$H_DIR/m.log"; }
h_wait_for 30 "a owns ka, b owns kb, c owns kc (each as its own identity)" \
    eval 'owns a ka && owns b kb && owns c kc'

# a's notice address, bound and advertised (standby.notice from its conf).
h_wait_for 10 "a logged its notice address" grep -q "event=notice_bound addr=127.0.0.1:" "$H_DIR/a.lines"
addr=$(grep -o "event=notice_bound addr=[0-9.:]*" "$H_DIR/a.lines" | head -1 | sed 's/.*addr=//')
adv=$(h_zk get "/ra/$B_GROUP/workers/a" | jq -r .notice)
[[ $adv == "$addr" ]] || h_fail "a's member node advertises notice '$adv', its log says '$addr'"
grep -q "event=joined .*standby_claim=ahead" "$H_DIR/a.lines" || h_fail "a did not join with standby.claim=ahead"
grep -q "event=joined .*standby_claim=takeover" "$H_DIR/b.lines" || h_fail "b did not join with standby.claim=takeover (the default)"

# Each claim carries its creator's identity.
acl_of() { # ROOT KEY: the claim's ACL, as zkCli prints it
    local claim
    claim=$(h_zk ls "$1/$B_GROUP/keys/$2/claims" | head -1)
    [[ -n $claim ]] || h_fail "no claim on $1 key $2"
    /usr/share/zookeeper/bin/zkCli.sh -server "$ZK" getAcl "$1/$B_GROUP/keys/$2/claims/$claim" 2>&1
}
acl_of /ra ka >"$H_DIR/acl-ka.out"
grep -q "'digest,'alice:" "$H_DIR/acl-ka.out" || h_fail "ka's claim is not alice's: $(cat "$H_DIR/acl-ka.out")"
acl_of /rb kb >"$H_DIR/acl-kb.out"
grep -q "'digest,'bob:" "$H_DIR/acl-kb.out" || h_fail "kb's claim is not bob's: $(cat "$H_DIR/acl-kb.out")"

# The log callbacks: each member's lines reach its own callback only.
h_wait_for 10 "a's callback got its zk_connected and claim lines" \
    eval 'grep -q "event=zk_connected" "$H_DIR/a.lines" && grep -q "key=ka" "$H_DIR/a.lines"'
h_wait_for 10 "b's callback got its zk_connected and claim lines" \
    eval 'grep -q "event=zk_connected" "$H_DIR/b.lines" && grep -q "key=kb" "$H_DIR/b.lines"'
grep -q '^L0 .*level=debug ' "$H_DIR/a.lines" || h_fail "a (log.level debug) got no debug line"
grep -q '^L[0-3] .*lib=zookeeper ' "$H_DIR/a.lines" ||
    h_fail "a (log.level debug) got none of its ZooKeeper client's lines"
! grep -q '^L0 \|level=debug' "$H_DIR/b.lines" || h_fail "b (log.level info) got a debug line"
! grep -q 'key=k[bc]\b' "$H_DIR/a.lines" || h_fail "a's callback got another member's line"
! grep -q 'key=k[ac]\b' "$H_DIR/b.lines" || h_fail "b's callback got another member's line"
awk '!/^L[0-3] ts=[^ ]+ level=(debug|info|warn|error) /{ bad = 1 } END { exit bad }' "$H_DIR/a.lines" "$H_DIR/b.lines" ||
    h_fail "a callback line is not 'L<level> <baton line>'"

# c has no callback: its lines on stderr, as without the library's conf.
h_wait_for 10 "c's lines on the process's stderr" grep -q 'level=.*key=kc' "$H_DIR/m.log"

h_stop m
rc=0; h_wait_exit m 20 || rc=$?
((rc == 0)) || h_fail "member_multi should leave and exit 0, got $rc"
for x in "a ka" "b kb" "c kc"; do
    set -- $x
    grep -q "^released id=$1 key=$2 reason=leave" "$H_DIR/m.log" || h_fail "$1 did not release $2 with reason leave"
done
grep -q 'event=left' "$H_DIR/a.lines" || h_fail "a's leave was not logged through its callback"
! grep -E 'key=k[ab]\b|member=/r[ab]/[^ ]*/workers/[ab]\b' "$H_DIR/m.log" | grep -v '^\(acquired\|released\) ' ||
    h_fail "a's or b's lines reached stderr"
# (m.log's first line is the harness's echo of the command line, which
# holds b's and c's passwords: zookeeper.auth is given there on purpose.)
if grep -v '^=== ' "$H_DIR"/*.lines "$H_DIR"/m.log | grep -F -e "$PA" -e "$PB"; then
    h_fail "a ZooKeeper password in a log line"
fi

# baton-run, on the same library, builds its identity from --zk-auth-file /
# BATON_ZK_AUTH: as alice it runs under /ra (its --once record carries
# alice's ACL); as bob it is refused, naming its own flag.
BATON_ZK_AUTH="digest:alice:$PA" b_ctl --root /ra keys add kr >/dev/null
rc=0
"$BATON_BIN/baton-run" --zk "$ZK" --root /ra --group "$B_GROUP" --key kr --once r1 \
    --zk-auth-file "$H_DIR/alice.auth" --session-timeout-ms "$B_SESSION_MS" -- true \
    >"$H_DIR/run-alice.out" 2>&1 || rc=$?
((rc == 0)) || h_fail "baton-run as alice exited $rc: $(tail -3 "$H_DIR/run-alice.out")"
/usr/share/zookeeper/bin/zkCli.sh -server "$ZK" getAcl "/ra/$B_GROUP/keys/kr/runs/r1" >"$H_DIR/acl-run.out" 2>&1
grep -q "'digest,'alice:" "$H_DIR/acl-run.out" || h_fail "baton-run's run record is not alice's: $(cat "$H_DIR/acl-run.out")"
rc=0
BATON_ZK_AUTH="digest:bob:$PB" "$BATON_BIN/baton-run" --zk "$ZK" --root /ra --group "$B_GROUP" \
    --key kr -- true >"$H_DIR/run-bob.out" 2>&1 || rc=$?
((rc == 1)) && grep -q "'/ra' is writable only by digest:alice, not by digest user 'bob' (check --zk-auth)" "$H_DIR/run-bob.out" ||
    h_fail "baton-run as bob under /ra: exit $rc, $(cat "$H_DIR/run-bob.out")"
h_pass "three memberships in one process: each its own identity, its own log callback or stderr"
