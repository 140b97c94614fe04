#!/usr/bin/env bash
# it_zk_chroot: two tenants on one ZooKeeper, isolated by a chroot suffix in
# the connect string (HOST:PORT/tenant-a), which the ZooKeeper C client
# applies to every path. Each tenant runs its own coordinator, worker and
# batonctl with the SAME group name and root: each sees only its own group
# (its own workers, partition count and owners), the znodes live under
# /tenant-X/baton, and nothing is created at the real /baton. A chroot that
# does not exist is a clear error from batonctl, not a hang.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_zk_chroot
h_zk_start
ROOT_ZK=$ZK
h_zk create /tenant-a "" >/dev/null
h_zk create /tenant-b "" >/dev/null
h_kafka_start "$B_TOPIC" 6

# Tenant a: 4 partitions, worker wa; tenant b: 6 partitions, worker wb.
# Same group name ($B_GROUP) and root in both.
ZK=$ROOT_ZK/tenant-a
B_SINK=$H_DIR/a.db
b_ctl init --topic "$B_TOPIC" --partitions 4 >/dev/null
b_coord ca
b_worker wa
ZK=$ROOT_ZK/tenant-b
B_SINK=$H_DIR/b.db
b_ctl init --topic "$B_TOPIC" --partitions 6 >/dev/null
b_coord cb
b_worker wb

ZK=$ROOT_ZK/tenant-a
h_wait_for 30 "tenant a: wa owns its 4 partitions" b_all_active 1
b_jq '(.partitions | length == 4) and all(.partitions[]; .owner == "wa")
      and ([.workers[].id] == ["wa"])' >/dev/null ||
    { b_status >&2; h_fail "tenant a sees more than its own group"; }
ZK=$ROOT_ZK/tenant-b
h_wait_for 30 "tenant b: wb owns its 6 partitions" b_all_active 1
b_jq '(.partitions | length == 6) and all(.partitions[]; .owner == "wb")
      and ([.workers[].id] == ["wb"])' >/dev/null ||
    { b_status >&2; h_fail "tenant b sees more than its own group"; }

# The znodes are where the chroot puts them, and only there.
ZK=$ROOT_ZK
h_zk exists "/tenant-a/baton/$B_GROUP/workers/wa" || h_fail "wa is not under /tenant-a/baton"
h_zk exists "/tenant-b/baton/$B_GROUP/workers/wb" || h_fail "wb is not under /tenant-b/baton"
if h_zk exists "/tenant-a/baton/$B_GROUP/workers/wb" || h_zk exists "/tenant-b/baton/$B_GROUP/workers/wa"; then
    h_fail "a tenant's worker registered in the other tenant"
fi
if h_zk exists /baton; then
    h_fail "something was created at the real /baton"
fi
[[ $(h_zk ls "/tenant-a/baton/$B_GROUP/partitions" | wc -l) == 4 ]] || h_fail "tenant a does not have 4 partitions"
[[ $(h_zk ls "/tenant-b/baton/$B_GROUP/partitions" | wc -l) == 6 ]] || h_fail "tenant b does not have 6 partitions"

# A drain in tenant a moves nothing in tenant b (wb keeps its claims' epochs).
ZK=$ROOT_ZK/tenant-b
before=$(b_status | jq -c '[.partitions[].epoch]')
ZK=$ROOT_ZK/tenant-a
b_ctl drain wa >/dev/null
h_wait_for 30 "tenant a: wa drained" b_jq 'all(.partitions[]; .owner == null)'
ZK=$ROOT_ZK/tenant-b
after=$(b_status | jq -c '[.partitions[].epoch]')
[[ $before == "$after" ]] || h_fail "tenant b's ownership changed when tenant a drained ($before -> $after)"
b_all_active 1 || h_fail "tenant b is no longer all active"

# Tenant c: the same isolation through the --zk-chroot setting instead of a
# suffix, from each of its sources: the flag (batonctl init), the
# BATON_ZK_CHROOT environment (the coordinator, and batonctl status) and
# zookeeper.chroot in a --config file (the worker).
ZK=$ROOT_ZK
h_zk create /tenant-c "" >/dev/null
B_SINK=$H_DIR/c.db
b_ctl --zk-chroot /tenant-c init --topic "$B_TOPIC" --partitions 2 >/dev/null
BATON_ZK_CHROOT=/tenant-c b_coord cc
printf 'zookeeper.chroot=/tenant-c\n' >"$H_DIR/wc.properties"
b_worker wc --config "$H_DIR/wc.properties"
c_all_active() { BATON_ZK_CHROOT=/tenant-c b_all_active 1; }
h_wait_for 30 "tenant c: wc owns its 2 partitions" c_all_active
b_ctl --zk-chroot /tenant-c status --json | jq -e '(.partitions | length == 2) and ([.workers[].id] == ["wc"])' >/dev/null ||
    h_fail "tenant c (--zk-chroot) sees more than its own group"
h_zk exists "/tenant-c/baton/$B_GROUP/workers/wc" || h_fail "wc is not under /tenant-c/baton"
if h_zk exists /baton; then
    h_fail "--zk-chroot: something was created at the real /baton"
fi
# The flag and a suffix: the same chroot is fine, another is a usage error.
ZK=$ROOT_ZK/tenant-c
b_ctl --zk-chroot /tenant-c status --json | jq -e '[.workers[].id] == ["wc"]' >/dev/null ||
    h_fail "--zk-chroot equal to the connect string's suffix was not accepted"
rc=0
b_ctl --zk-chroot /tenant-a status >"$H_DIR/conflict.out" 2>&1 || rc=$?
cat "$H_DIR/conflict.out" >&2
((rc == 2)) && grep -q "differs from the chroot '/tenant-c'" "$H_DIR/conflict.out" ||
    h_fail "batonctl with a --zk-chroot unlike the connect string's suffix: exit $rc, no clear error"
rc=0
timeout 20 "$BATON_BIN/baton-worker" --zk "$ZK" --zk-chroot /tenant-a --group "$B_GROUP" --id wx \
    --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK" >"$H_DIR/conflict-w.out" 2>&1 || rc=$?
((rc == 2)) && grep -q "differs from the chroot" "$H_DIR/conflict-w.out" ||
    { cat "$H_DIR/conflict-w.out" >&2; h_fail "baton-worker with a conflicting --zk-chroot: exit $rc, no clear error"; }
ZK=$ROOT_ZK
for bad in tenant-c /tenant-c/ / /a//b /a/../b; do
    rc=0
    BATON_ZK_CHROOT=$bad timeout 20 "$BATON_BIN/baton-coordinator" --zk "$ZK" --group "$B_GROUP" >"$H_DIR/bad.out" 2>&1 || rc=$?
    ((rc == 2)) && grep -q "BATON_ZK_CHROOT\|--zk-chroot: '$bad'" "$H_DIR/bad.out" ||
        { cat "$H_DIR/bad.out" >&2; h_fail "baton-coordinator with chroot '$bad': exit $rc, no clear error"; }
done
for prog in baton-coordinator baton-worker batonctl; do
    help=$("$BATON_BIN/$prog" --help)
    grep -q -- '--zk-chroot' <<<"$help" || h_fail "$prog --help does not document --zk-chroot"
done
h_log "tenant c isolated by --zk-chroot / BATON_ZK_CHROOT / zookeeper.chroot"

# A missing chroot: batonctl says what is wrong and exits non-zero.
rc=0
ZK=$ROOT_ZK/no-such-tenant
b_ctl status >"$H_DIR/missing.out" 2>&1 || rc=$?
cat "$H_DIR/missing.out" >&2
((rc != 0)) || h_fail "batonctl status under a missing chroot succeeded"
h_pass "two tenants with the same group name on one ZooKeeper, isolated by chroot"
