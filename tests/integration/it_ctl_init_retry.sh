#!/usr/bin/env bash
# it_ctl_init_retry: `batonctl init` survives a connection lost in the
# middle of the command. batonctl reaches ZooKeeper through a proxy and
# stops itself at a failpoint just before a write; the proxy then goes
# silent from server to client (cut down), so the write reaches ZooKeeper
# and is applied but its answer never comes back, and after 2/3 of the
# session the client declares the connection lost. batonctl says it will
# try again, the cut heals, the session comes back, the step runs again and
# finds its own write: the result line still says what the command changed.
#   1. the group's config create lost: "initialised group g1", 5 partitions;
#   2. the grow's conditional set lost: "grew group g1 to 8 partitions
#      (from 5)", and no version conflict;
#   3. the second key's create lost: "added 2 key(s)";
#   4. the cut both ways outlasts the session: ZooKeeper expires it, init
#      starts a new one (it holds no ephemeral node) and finishes;
#   5. the cut never heals within --timeout: exit 1, a clear error.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/net.sh"
h_init it_ctl_init_retry
h_zk_start
net_proxy_start ctl-zk "$ZK"
logged() { grep -q -- "$2" "$H_DIR/$1.log"; }
config_of() { "$BATON_BIN/batonctl" --zk "$ZK" --group "$1" status --json | jq -c '[.config.topic, .config.partitions]'; }
lost_line="lost the connection to ZooKeeper mid-command"

# lost NAME CUT FAILPOINT TIMEOUT_MS HOLD_S INIT_ARGS...: runs batonctl init
# (as NAME) through the proxy with BATON_FAILPOINTS=FAILPOINT (its action
# stop); once it stopped there, cuts CUT, lets it go on,
# waits for it to say it lost the connection, holds the cut HOLD_S more
# seconds, heals, and returns its exit code.
lost() {
    local name=$1 cut=$2 fp=$3 timeout=$4 hold=$5 rc=0
    shift 5
    BATON_FAILPOINTS="$fp" h_spawn "$name" "$BATON_BIN/batonctl" --zk "${NET_ADDR[ctl-zk]}" \
        --timeout "$timeout" "$@"
    h_wait_for 10 "$name stopped at $fp" h_stopped "$name"
    net_cut ctl-zk "$cut"
    h_kill "$name" CONT
    h_wait_for 15 "$name lost its connection" logged "$name" "$lost_line"
    sleep "$hold"
    net_heal ctl-zk
    h_wait_exit "$name" 20 || rc=$?
    return $rc
}

# lost_ok NAME SAYS LOST_ARGS...: lost NAME LOST_ARGS... exits 0 and NAME
# said SAYS.
lost_ok() {
    local name=$1 says=$2 rc=0
    shift 2
    lost "$name" "$@" || rc=$?
    ((rc == 0)) || h_fail "$name exited $rc: $(cat "$H_DIR/$name.log")"
    logged "$name" "$says" || h_fail "$name did not say '$says': $(cat "$H_DIR/$name.log")"
}
# group_is G TOPIC N: G's config names TOPIC and N partitions, and G has N
# partition nodes.
group_is() {
    [[ $(h_zk ls "/baton/$1/partitions" | wc -w) == "$3" && $(config_of "$1") == "[\"$2\",$3]" ]] ||
        h_fail "$1: config $(config_of "$1"), partitions '$(h_zk ls "/baton/$1/partitions")'"
}

# --- 1. the config's create applied, its answer lost --------------------------
lost_ok init1 "initialised group g1: topic t1, 5 partitions" \
    down group.init.before_config=stop 4500 0 --group g1 init --topic t1 --partitions 5
group_is g1 t1 5

# --- 2. the grow's conditional set applied, its answer lost -------------------
lost_ok init2 "grew group g1 to 8 partitions (from 5)" \
    down group.init.before_config=stop 4500 0 --group g1 init --topic t1 --partitions 8
group_is g1 t1 8

# --- 3. the second key's create applied, its answer lost ----------------------
lost_ok init3 "added 2 key(s) to group g1" \
    down group.keys.before_create=1:stop 4500 0 --group g1 init --keys k1,k2
[[ $(h_zk ls /baton/g1/keys | tr ' ' '\n' | sort | tr '\n' ' ') == "k1 k2 " ]] || h_fail "g1's keys: '$(h_zk ls /baton/g1/keys)'"

# --- 4. the session expires during the cut: a new one -------------------------
# 4000 ms: the loss is declared after about 2.7 s of silence, the session
# is gone at 4 s, the wait ends at about 6.7 s; the heal comes at about 5.2.
lost_ok init4 "expired our session meanwhile; starting a new one" \
    both ctl.init.before_write=stop 4000 2.5 --group g2 init --topic t2 --partitions 2
logged init4 "initialised group g2: topic t2, 2 partitions" || h_fail "init4 did not create g2: $(cat "$H_DIR/init4.log")"
[[ $(config_of g2) == '["t2",2]' ]] || h_fail "g2: config $(config_of g2)"

# --- 5. no answer within --timeout: a clear error -----------------------------
rc=0
lost init5 both ctl.init.before_write=stop 2000 4 --group g3 init --topic t3 --partitions 2 || rc=$?
((rc == 1)) || h_fail "init5 should exit 1, got $rc: $(cat "$H_DIR/init5.log")"
logged init5 "cannot initialise group g3: ZooKeeper did not answer again within --timeout (2000 ms)" ||
    h_fail "init5's error is unclear: $(cat "$H_DIR/init5.log")"
h_pass "batonctl init runs a step again after a lost answer and reports what it changed; a new session after an expiry; a clear error after --timeout"
