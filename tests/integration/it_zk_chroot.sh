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

# A missing chroot: batonctl says what is wrong and exits non-zero.
rc=0
ZK=$ROOT_ZK/no-such-tenant
b_ctl status >"$H_DIR/missing.out" 2>&1 || rc=$?
cat "$H_DIR/missing.out" >&2
((rc != 0)) || h_fail "batonctl status under a missing chroot succeeded"
h_pass "two tenants with the same group name on one ZooKeeper, isolated by chroot"
