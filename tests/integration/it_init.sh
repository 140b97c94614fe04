#!/usr/bin/env bash
# it_init.sh: batonctl against a real ZooKeeper: `init` creates the layout,
# is idempotent, refuses conflicts and shrinking, grows; bad flags exit 2;
# `status --json` on a fresh group and on hand-made coordinator, worker,
# assignment and claim znodes; malformed znodes; an unreachable ZooKeeper.
#
# JSON is checked with the sqlite3 CLI's json functions (json_type tells a
# JSON null from a missing key), so the test needs no jq (python3 only for
# the harness's closing listener, h_closer).
set -euo pipefail
# shellcheck source=../lib/harness.sh
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_init
command -v sqlite3 >/dev/null || h_fail "the sqlite3 CLI is required (apt-get install sqlite3)"
[[ -x $BATON_BIN/batonctl ]] || h_fail "no $BATON_BIN/batonctl (build it first)"
[[ -x $BATON_BIN/baton-zk ]] || h_fail "no $BATON_BIN/baton-zk (build it first)"

CTL=$BATON_BIN/batonctl
G=orders
OUT=$H_DIR/ctl.out
ERR=$H_DIR/ctl.err

# run CMD...: runs CMD with stdout in $OUT and stderr in $ERR, sets RC.
run() {
    RC=0
    "$@" >"$OUT" 2>"$ERR" || RC=$?
}
# expect WANT_RC CMD...: runs CMD and fails the test unless it exits WANT_RC.
expect() {
    local want=$1
    shift
    run "$@"
    if [[ $RC != "$want" ]]; then
        h_fail "expected exit $want from: $*
got $RC; stdout:
$(<"$OUT")
stderr:
$(<"$ERR")"
    fi
}
# out_has / err_has TEXT: the last command's stdout / stderr contains TEXT.
out_has() { grep -qF -- "$1" "$OUT" || h_fail "stdout lacks '$1':$(printf '\n')$(<"$OUT")"; }
err_has() { grep -qF -- "$1" "$ERR" || h_fail "stderr lacks '$1':$(printf '\n')$(<"$ERR")"; }
# ctl ARGS...: batonctl for group $G.
ctl() { "$CTL" --zk "$ZK" --group "$G" --timeout 5000 "$@"; }
# jsql SQL-EXPR: evaluates an SQL expression in which J is the last stdout.
jsql() {
    local j
    j=$(sed "s/'/''/g" "$OUT")
    sqlite3 :memory: "with t(J) as (select '$j') select $1 from t"
}
# jis EXPR WANT DESC: jsql EXPR prints WANT.
jis() {
    local got
    got=$(jsql "$1")
    [[ $got == "$2" ]] || h_fail "$3: $1 is '$got', want '$2'; JSON:$(printf '\n')$(<"$OUT")"
}

# --- usage errors: exit 2 without touching ZooKeeper ------------------------
NOZK=127.0.0.1:1
expect 0 "$CTL" --help
out_has "examples:"
out_has "init"
expect 0 "$CTL" init --help
out_has "--partitions N"
out_has "roundrobin or rendezvous"
expect 0 "$CTL" status --help
out_has "--json"
# The schema names every top-level and summary field gather emits.
out_has '"keys": [{"key"'
out_has '"not_active": {"handoff"'
out_has '"max_lag": {"partition", "lag"}'
out_has "postgresql://"
expect 0 "$CTL" fences --help
out_has "postgresql://"
expect 2 "$CTL"
err_has "no command given"
expect 2 "$CTL" --zk "$NOZK" --group g frobnicate
err_has "unknown command 'frobnicate'"
expect 2 "$CTL" --zk "$NOZK" --group g --bogus init --topic t --partitions 1
err_has "'--bogus'"
expect 2 "$CTL" --zk "$NOZK" --group g init --topic t --partitions 1 --no-such-flag
err_has "'--no-such-flag'"
expect 2 "$CTL" --zk "$NOZK" --group g status --json --wat
err_has "'--wat'"
expect 2 "$CTL" --zk "$NOZK" --group g init --topic t --partitions 4 --strategy fastest
err_has "'fastest' is not sticky, range, roundrobin or rendezvous"
for bad in 0 -1 1000001 abc 3x ""; do
    expect 2 "$CTL" --zk "$NOZK" --group g init --topic t --partitions "$bad"
    err_has "--partitions"
done
expect 2 "$CTL" --zk "$NOZK" --group g init --partitions 4
err_has "--topic is required"
expect 2 "$CTL" --zk "$NOZK" --group g init --topic 'bad/topic' --partitions 4
err_has "bad/topic"
expect 2 "$CTL" --zk "$NOZK" --group 'a/b' status
err_has "--group"
expect 2 "$CTL" --group g status
err_has "--zk is required"
expect 2 "$CTL" --zk "$NOZK" --group g --timeout 0 status
err_has "--timeout"
expect 2 "$CTL" --zk "$NOZK" --group g init --topic t
err_has "--partitions is required"
expect 2 "$CTL" --zk "$NOZK" --group g status extra
err_has "unexpected argument 'extra'"
h_log "usage errors: ok"

# --- unreachable ZooKeeper: exit 1 within the timeout ----------------------
# Nothing listens: every connect is refused. Timed from before the start,
# which is early enough for the lower bound and too early for a tight upper
# one: a loaded machine can take seconds to start the process (its 60-odd
# shared libraries; 67-378 ms at load average 18, and a run once exited
# 4,139 ms after the spawn with --timeout 2000), and the client's clock
# starts only then. Here the upper bound is the default timeout (10 s),
# which a run that ignored --timeout would reach.
port=$(h_free_port)
t0=$(_h_now_ms)
expect 1 "$CTL" --zk "127.0.0.1:$port" --group g --timeout 2000 status
elapsed=$(($(_h_now_ms) - t0))
err_has "cannot connect to ZooKeeper"
((elapsed < 10000)) || h_fail "unreachable ZooKeeper took ${elapsed} ms with --timeout 2000 (the default is 10000)"
((elapsed >= 1500)) || h_fail "gave up after ${elapsed} ms, before the 2000 ms timeout"
h_log "unreachable zk: exit 1 after ${elapsed} ms"
# A listener that closes every connection at once (no session either): the
# upper bound counts from the client's first attempt there, not from the
# spawn.
port=$(h_free_port)
h_closer closer "$port"
expect 1 "$CTL" --zk "127.0.0.1:$port" --group g --timeout 2000 status
t1=$(_h_now_ms)
err_has "cannot connect to ZooKeeper"
first=$(h_closer_first closer)
[[ -n $first ]] || h_fail "batonctl never reached the listener on port $port"
elapsed=$((t1 - first))
((elapsed < 4000)) ||
    h_fail "a ZooKeeper that closes every connection: exit ${elapsed} ms after the first attempt with --timeout 2000"
h_log "closing zk: exit 1 ${elapsed} ms after the first attempt"
h_stop closer

# shellcheck disable=SC2119 # default tick
h_zk_start

# --- init -------------------------------------------------------------------
expect 1 ctl status
err_has "group $G is not initialised"

expect 0 ctl init --topic in --partitions 4
out_has "initialised group $G"
h_zk get "/baton/$G/config" >"$OUT"
jis "json_extract(J, '\$.topic')" in "config topic"
jis "json_extract(J, '\$.partitions')" 4 "config partitions"
jis "json_extract(J, '\$.strategy')" sticky "config strategy"
for d in coordinators workers assignment partitions/0/claims partitions/3/claims; do
    h_zk exists "/baton/$G/$d" || h_fail "init did not create /baton/$G/$d"
done
if h_zk exists "/baton/$G/partitions/4"; then h_fail "init created a 5th partition"; fi

expect 0 ctl init --topic in --partitions 4
out_has "group $G already initialised (no change)"
expect 0 ctl init --topic in --partitions 4 --strategy sticky
out_has "(no change)"

expect 1 ctl init --topic other --partitions 4
err_has "topic 'in', not 'other'"
expect 1 ctl init --topic in --partitions 4 --strategy range
err_has "strategy 'sticky', not 'range'"
expect 1 ctl init --topic in --partitions 2
err_has "shrinking to 2 is not allowed"
h_zk get "/baton/$G/config" >"$OUT"
jis "json_extract(J, '\$.partitions')" 4 "partitions after refused changes"

expect 0 ctl init --topic in --partitions 6
out_has "grew group $G to 6 partitions"
for p in 4 5; do
    h_zk exists "/baton/$G/partitions/$p/claims" || h_fail "growing did not create partition $p"
done
h_zk get "/baton/$G/config" >"$OUT"
jis "json_extract(J, '\$.partitions')" 6 "partitions after growing"

# Global flags after the command, a non-default strategy kept on re-init.
expect 0 "$CTL" init --topic clicks --partitions 3 --strategy range --zk "$ZK" --group clicks
out_has "strategy range"
expect 0 "$CTL" init --topic clicks --partitions 5 --zk "$ZK" --group clicks
out_has "grew group clicks to 5 partitions"
h_zk get /baton/clicks/config >"$OUT"
jis "json_extract(J, '\$.strategy')" range "strategy kept when growing without --strategy"
# Another root.
expect 0 "$CTL" --zk "$ZK" --group g2 --root /apps/baton init --topic in --partitions 2
h_zk exists /apps/baton/g2/partitions/1/claims || h_fail "init ignored --root"
expect 0 "$CTL" --zk "$ZK" --group g2 --root /apps/baton status --json
jis "json_array_length(J, '\$.partitions')" 2 "status under --root"
expect 1 "$CTL" --zk "$ZK" --group g2 status
err_has "group g2 is not initialised"
h_log "init: ok"

# --- status on a fresh group -------------------------------------------------
expect 0 ctl status --json
[[ ! -s $ERR ]] || h_fail "status on a fresh group warned: $(<"$ERR")"
jis "json_extract(J, '\$.group')" "$G" "group"
jis "coalesce(json_extract(J, '\$.generation'), 0)" 0 "fresh generation (null or 0)"
jis "json_type(J, '\$.coordinator')" null "fresh coordinator"
jis "json_array_length(J, '\$.workers')" 0 "fresh workers"
jis "json_array_length(J, '\$.partitions')" 6 "partition count"
jis "(select count(*) from json_each(J, '\$.partitions')
      where json_extract(value, '\$.state') = 'unowned'
        and json_type(value, '\$.assigned') = 'null'
        and json_type(value, '\$.owner') = 'null'
        and json_type(value, '\$.epoch') = 'null'
        and json_extract(value, '\$.claims') = 0
        and json_extract(value, '\$.partition') = key)" 6 "fresh partitions all unowned"

expect 0 ctl status
out_has "coordinator:  none"
out_has "PARTITION"
awk 'length($0) > 100 { exit 1 }' "$OUT" || h_fail "human status has lines over 100 columns"

# --- status on hand-made members, assignment and claims ---------------------
B=/baton/$G
h_zk create "$B/coordinators/c-0000000007" '{"id":"coord-b","host":"h2","pid":2}'
h_zk create "$B/coordinators/c-0000000003" '{"id":"coord-a","host":"h1","pid":1}'
h_zk create "$B/workers/w1" '{"id":"w1","host":"hostA","pid":101,"capacity":2,"rack":"r1"}'
h_zk create "$B/workers/w2" '{"id":"w2","host":"hostB","pid":102,"capacity":1,"rack":null}'
h_zk set "$B/assignment" '{"generation":5,"coordinator_epoch":1,"strategy":"sticky"}'
h_zk create "$B/assignment/w1" '{"generation":5,"partitions":[0,1,2]}'
h_zk create "$B/assignment/w2" '{"generation":5,"partitions":[3,4,5]}'
S1=00000000000000a1
S2=00000000000000b2
# p0: owned by its assigned worker.
h_zk create "$B/partitions/0/claims/claim-$S1-0000000000" '{"worker":"w1","generation":5}'
# p1: still owned by w2 while w1 is assigned.
h_zk create "$B/partitions/1/claims/claim-$S2-0000000004" '{"worker":"w2","generation":4}'
# p3: two claims; the lowest sequence (w2), not the first name, owns it.
h_zk create "$B/partitions/3/claims/claim-$S1-0000000009" '{"worker":"w1","generation":4}'
h_zk create "$B/partitions/3/claims/claim-$S2-0000000002" '{"worker":"w2","generation":5}'
# czxid PATH: the node's creation zxid, from baton-zk stat.
czxid() { h_zk stat "$1" | sed -n 's/.*czxid=\([0-9]*\).*/\1/p'; }
epoch0=$(czxid "$B/partitions/0/claims/claim-$S1-0000000000")
epoch3=$(czxid "$B/partitions/3/claims/claim-$S2-0000000002")
cepoch=$(czxid "$B/coordinators/c-0000000003")
[[ -n $epoch0 && -n $epoch3 && -n $cepoch ]] || h_fail "cannot read czxids with baton-zk stat"

expect 0 ctl status --json
jis "json_extract(J, '\$.generation')" 5 "generation"
jis "json_extract(J, '\$.coordinator.id')" coord-a "leader is the lowest sequence"
jis "json_extract(J, '\$.coordinator.epoch')" "$cepoch" "coordinator epoch is its czxid"
jis "json_array_length(J, '\$.workers')" 2 "workers"
w="'\$.workers[0]"
jis "json_extract(J, $w.id') || ',' || json_extract(J, $w.host') || ','
     || json_extract(J, $w.pid') || ',' || json_extract(J, $w.capacity') || ','
     || json_extract(J, $w.rack') || ',' || json_extract(J, $w.session')" \
    "w1,hostA,101,2,r1,0x0000000000000000" "worker w1"
jis "json_type(J, '\$.workers[1].rack')" null "w2 has no rack"
# part P: "assigned|owner|state|claims" of partition P ("-" for a null owner).
part() {
    local p="'\$.partitions[$1]"
    jsql "json_extract(J, $p.assigned') || '|' || coalesce(json_extract(J, $p.owner'), '-')
          || '|' || json_extract(J, $p.state') || '|' || json_extract(J, $p.claims')"
}
[[ $(part 0) == "w1|w1|active|1" ]] || h_fail "p0: $(part 0)"
[[ $(part 1) == "w1|w2|handoff|1" ]] || h_fail "p1: $(part 1)"
[[ $(part 2) == "w1|-|unowned|0" ]] || h_fail "p2: $(part 2)"
[[ $(part 3) == "w2|w2|active|2" ]] || h_fail "p3: $(part 3)"
jis "json_extract(J, '\$.partitions[0].epoch')" "$epoch0" "p0 epoch is its claim's czxid"
jis "json_extract(J, '\$.partitions[3].epoch')" "$epoch3" "p3 epoch is the lowest claim's czxid"
jis "json_extract(J, '\$.summary.active') || ',' || json_extract(J, '\$.summary.handoff') || ','
     || json_extract(J, '\$.summary.unowned')" "2,1,3" "summary counts"
# Persistent worker nodes are suspicious, and said so; still exit 0.
err_has "$B/workers/w1: not an ephemeral node"

expect 0 ctl status
out_has "coord-a (epoch $cepoch)"
out_has "2 active, 1 handoff, 3 unowned"
grep -Eq '^ +1 +w1 +w2 +[0-9]+ +handoff +[0-9][0-9a-z]* +1 +-$' "$OUT" || # FOR and LAG (issue 6)
    h_fail "p1 row missing:$(printf '\n')$(<"$OUT")"
awk 'length($0) > 100 { exit 1 }' "$OUT" || h_fail "human status has lines over 100 columns"
h_log "status with members and claims: ok"

# --- malformed znodes: warnings, exit 0 --------------------------------------
h_zk set "$B/assignment/w1" 'not json'
h_zk set "$B/workers/w2" '{"id": 7}'
h_zk set "$B/partitions/3/claims/claim-$S2-0000000002" '[1,2'
h_zk set "$B/coordinators/c-0000000003" ''
h_zk create "$B/partitions/2/claims/garbage" 'x'
expect 0 ctl status --json
err_has "warning: $B/assignment/w1: worker assignment: invalid JSON"
err_has "warning: $B/workers/w2: member: field 'id' must be a string"
err_has "warning: $B/partitions/3/claims/claim-$S2-0000000002: claim: invalid JSON"
err_has "warning: $B/coordinators/c-0000000003: member: empty"
err_has "warning: $B/partitions/2/claims/garbage: not a claim node"
jis "json_type(J, '\$.partitions[0].assigned')" null "p0 assigned after its node broke"
jis "json_extract(J, '\$.partitions[0].state')" handoff "p0 state after its assignment broke"
jis "json_extract(J, '\$.partitions[4].assigned')" w2 "p4 still assigned to w2"
jis "json_type(J, '\$.workers[1].host')" null "w2 host after its node broke"
jis "json_type(J, '\$.coordinator.id')" null "coordinator id after its node broke"
jis "json_extract(J, '\$.coordinator.epoch')" "$cepoch" "coordinator epoch after its node broke"
jis "json_type(J, '\$.partitions[3].owner') || ',' || json_extract(J, '\$.partitions[3].epoch')" \
    "null,$epoch3" "p3 owner after its claim broke"
jis "json_extract(J, '\$.partitions[2].claims')" 0 "p2 ignores a non-claim child"
jis "(select count(*) from json_each(J, '\$.warnings'))" 7 \
    "warning count (5 + 2 persistent workers)"
expect 0 ctl status
out_has "warnings:     7 (on stderr)"
h_zk set "$B/assignment" '{"generation":"five"}'
expect 0 ctl status --json
err_has "warning: $B/assignment: assignment: field 'generation' must be an integer"
jis "json_type(J, '\$.generation')" null "generation after the meta broke"

# A malformed config is fatal and named.
h_zk set "$B/config" 'not json'
expect 1 ctl status --json
err_has "$B/config"
err_has "invalid JSON"
[[ ! -s $OUT ]] || h_fail "status printed output with an unreadable config: $(<"$OUT")"
expect 1 ctl init --topic in --partitions 6
err_has "$B/config"
h_log "malformed znodes: ok"

# --- a live coordinator -----------------------------------------------------
G=live
expect 0 ctl init --topic in --partitions 3
h_spawn coord "$BATON_BIN/baton-coordinator" --zk "$ZK" --group live --id coord-live \
    --session-timeout-ms 2000
h_zk create /baton/live/workers/lw1 '{"id":"lw1","host":"h","pid":1,"capacity":1}'
# Published: the partitions' nodes and then /assignment's generation (the
# first publish writes them in that order; status may read between them).
coord_published() {
    ctl status --json >"$OUT" 2>/dev/null &&
        [[ $(jsql "json_extract(J, '\$.partitions[2].assigned')") == lw1 ]] &&
        [[ $(jsql "json_type(J, '\$.generation')") == integer ]]
}
h_wait_for 20 "the coordinator assigns every partition to lw1" coord_published
jis "json_extract(J, '\$.coordinator.id')" coord-live "live coordinator id"
jis "json_type(J, '\$.generation')" integer "live generation"
expect 0 ctl status
out_has "coord-live (epoch"
h_stop coord
h_log "live coordinator: ok"

h_pass "init, status and their errors behave"
