#!/usr/bin/env bash
# it_ctl_init_retry: `batonctl init` survives a connection lost in the
# middle of the command. batonctl reaches ZooKeeper through a proxy and
# stops itself (failpoint ctl.init.before_write=stop) after reading what is
# there, just before it writes the group. The proxy then goes silent from
# server to client (cut down): the writes reach ZooKeeper and are applied,
# their answers never come back, and after 2/3 of the session the client
# declares the connection lost. batonctl says it will try again; the cut
# heals, the session comes back and the step runs again: exit 0, "initialised"
# (the lost attempt had created the group), the group exactly as asked.
# Then the same with the session lost for good (the cut outlasts it): a
# clear error, exit 1.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/net.sh"
h_init it_ctl_init_retry
h_zk_start
net_proxy_start ctl-zk "$ZK"
stopped() { [[ $(awk '{print $3}' "/proc/$(h_pid "$1")/stat" 2>/dev/null) == T ]]; }
logged() { grep -q -- "$2" "$H_DIR/$1.log"; }

# --- the connection comes back within the session ----------------------------
BATON_FAILPOINTS="ctl.init.before_write=stop" h_spawn init1 "$BATON_BIN/batonctl" \
    --zk "${NET_ADDR[ctl-zk]}" --group g1 --timeout 6000 init --topic t1 --partitions 5
h_wait_for 10 "init1 stopped before its writes" stopped init1
net_cut ctl-zk down
h_kill init1 CONT
h_wait_for 15 "init1 lost its connection and waits to try again" logged init1 "trying again when ZooKeeper answers"
net_heal ctl-zk
rc=0
h_wait_exit init1 20 || rc=$?
((rc == 0)) || h_fail "init1 exited $rc: $(cat "$H_DIR/init1.log")"
logged init1 "initialised group g1: topic t1, 5 partitions" || h_fail "init1 did not say it created g1: $(cat "$H_DIR/init1.log")"
[[ $(h_zk ls /baton/g1/partitions | wc -w) == 5 ]] || h_fail "g1 has partitions '$(h_zk ls /baton/g1/partitions)'"
"$BATON_BIN/batonctl" --zk "$ZK" --group g1 status --json | jq -e '.config.topic == "t1" and .config.partitions == 5' >/dev/null ||
    h_fail "g1's config: $("$BATON_BIN/batonctl" --zk "$ZK" --group g1 status --json)"

# --- the session is gone before the connection comes back --------------------
BATON_FAILPOINTS="ctl.init.before_write=stop" h_spawn init2 "$BATON_BIN/batonctl" \
    --zk "${NET_ADDR[ctl-zk]}" --group g2 --timeout 3000 init --topic t2 --partitions 2
h_wait_for 10 "init2 stopped before its writes" stopped init2
net_cut ctl-zk both
h_kill init2 CONT
rc=0
h_wait_exit init2 20 || rc=$?
net_heal ctl-zk
((rc == 1)) || h_fail "init2 should exit 1 with its session gone, got $rc: $(cat "$H_DIR/init2.log")"
logged init2 "cannot initialise group g2" || h_fail "init2's error is unclear: $(cat "$H_DIR/init2.log")"
h_pass "batonctl init tries a step again after a lost connection, and says so when the session is gone"
