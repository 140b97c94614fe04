#!/usr/bin/env bash
# it_standby_defer: while a group forms (members still joining, no standby
# named yet), the coordinator publishes without standbys, and names them
# once the membership has been quiet; after that, every publish names them.
#
# Every standby watches its owners' member nodes, one watch per (standby,
# owner); standbys named in the middle of a cold start's joins are replaced
# by the next rebalance's. So a rebalance that runs while churn goes on
# (here the debounce's bound, --max-rebalance-delay-ms, ends each burst)
# and finds no standby published logs event=standby_deferred and publishes
# with standbys=deferred; once the membership has been quiet for
# --rebalance-delay-ms a rebalance names them (standbys=named). Joins after
# that, and a crash, keep them named.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_standby_defer
h_zk_start
b_init 24
# Quiet period and bound both 1 s, the initial bound too (so the first
# rebalance does not wait for the joins to end, it_assign_initial): the
# first rebalance runs 1 s after the first join, and sixteen joins 150 ms apart (2.25 s) put several joins in
# that second however slowly each probe starts: it runs mid-churn.
b_coord c1 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1000 --initial-max-rebalance-delay-ms 1000 \
    --handoff-timeout-ms 0
h_wait_for 30 "c1 elected" b_log_has c1 "event=elected"
for i in $(seq -w 1 16); do
    b_probe "p$i"
    sleep 0.15
done
h_wait_for 30 "c1 deferred the standbys during the joins" b_log_has c1 "event=standby_deferred reason=churn"
all_named() {
    b_jq --argjson n "$1" '(.partitions | length == 24) and all(.partitions[]; .assigned != null and .standby != null and .standby != .assigned) and ([.partitions[].assigned] | unique | length == $n)'
}
h_wait_for 30 "every partition assigned, over the 16 probes, with a standby named" all_named 16
# The status can show a publish before its log line is written.
h_wait_for 10 "the publish naming the standbys logged" \
    grep -Eq 'event=published .* workers=16 .* standbys=named$' "$H_DIR/c1.log"
published() { grep 'event=published ' "$H_DIR/c1.log" | sed 's/.*event=published //'; }
published >"$H_DIR/published.txt"
h_log "publishes: $(awk '{ print $1, $3, $5, $NF }' "$H_DIR/published.txt" | tr '\n' ';')"
grep -q ' standbys=deferred$' "$H_DIR/published.txt" || h_fail "no publish left the standbys out"
last=$(tail -n 1 "$H_DIR/published.txt")
[[ $last == *" standbys=named" && $last == *" workers=16 "* ]] ||
    h_fail "the last publish is not the quiet one naming the standbys: $last"
n0=$(wc -l <"$H_DIR/published.txt")

# Named once: two more joins in a burst are rebalanced with standbys named.
b_probe p17
sleep 0.15
b_probe p18
h_wait_for 30 "p17 and p18 joined, standbys named" all_named 18
# A crash (SIGKILL, its session expires) is rebalanced at once; its events
# may bring a second, debounced rebalance: neither may take them back.
h_kill p01 KILL
gone() { ! h_zk exists "/baton/$B_GROUP/workers/p01"; }
h_wait_for 30 "p01's session expired" gone
h_wait_for 30 "p01's partitions reassigned, every partition with a standby" all_named 17
sleep 2 # past the quiet period of any churn rebalance still to come
published | tail -n +$((n0 + 1)) >"$H_DIR/after.txt"
h_log "publishes after: $(awk '{ print $1, $3, $5, $NF }' "$H_DIR/after.txt" | tr '\n' ';')"
[[ -s $H_DIR/after.txt ]] || h_fail "no publish after the joins and the crash"
! grep -q ' standbys=deferred$' "$H_DIR/after.txt" || h_fail "a publish after the standbys were named left them out"
all_named 17 >/dev/null || h_fail "a partition lost its standby after the crash"
h_pass "standbys deferred while the group formed, named once quiet, kept through joins and a crash"
