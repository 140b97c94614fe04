#!/usr/bin/env bash
# it_standby_defer: while members keep joining, the coordinator publishes
# without standbys and names them once the membership has been quiet.
#
# Every standby watches its owners' member nodes, one watch per (standby,
# owner); a standby named in the middle of a burst of joins is replaced by
# the next rebalance's. So a rebalance that runs while churn goes on (the
# debounce's bound, --max-rebalance-delay-ms, cut the burst short) logs
# event=standby_deferred and publishes with standbys=deferred; a rebalance
# once the membership has been quiet for --rebalance-delay-ms names them
# (standbys=named). And a crash after that, rebalanced at once, still
# finds every partition with a named standby.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_standby_defer
h_zk_start
b_init 24
PROBE=$BATON_TESTS_BIN/member_probe
probe() { h_spawn "$1" "$PROBE" --zk "$ZK" --group "$B_GROUP" --id "$1" --session-timeout-ms "$B_SESSION_MS"; }
# A quiet period of 1 s, bounded at 1.5 s: twelve joins 150 ms apart (about
# 1.8 s of churn, each lull far below the quiet period even on a loaded
# machine) run at least one rebalance by the bound, in the middle of it.
b_coord c1 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1500
h_wait_for 30 "c1 elected" b_log_has c1 "event=elected"
for i in $(seq -w 1 12); do
    probe "p$i"
    sleep 0.15
done
h_wait_for 30 "c1 deferred the standbys during the joins" b_log_has c1 "event=standby_deferred reason=churn"
h_wait_for 30 "every partition assigned to a live probe, with a standby named" \
    b_jq '(.partitions | length == 24) and all(.partitions[]; .assigned != null and .standby != null and .standby != .assigned)'
grep 'event=published ' "$H_DIR/c1.log" | sed 's/.*event=published //' >"$H_DIR/published.txt"
h_log "publishes: $(awk '{ print $1, $3, $5, $NF }' "$H_DIR/published.txt" | tr '\n' ';')"
grep -q ' standbys=deferred$' "$H_DIR/published.txt" || h_fail "no publish left the standbys out"
# The last publish, once quiet, names them (it also moves what the last
# joins asked for, if the bound did not already).
last=$(tail -n 1 "$H_DIR/published.txt")
[[ $last == *" standbys=named" && $last == *" workers=12 "* ]] ||
    h_fail "the last publish is not the quiet one naming the standbys: $last"

# A crash now (SIGKILL, its session expires) is rebalanced at once and names
# standbys for all: the churn that deferred them is long over.
gen=$(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation)
h_kill p01 KILL
gone() { ! h_zk exists "/baton/$B_GROUP/workers/p01"; }
h_wait_for 30 "p01's session expired" gone
h_wait_for 30 "p01's partitions reassigned, every partition with a standby" \
    b_jq '(.partitions | length == 24) and all(.partitions[]; .assigned != null and .assigned != "p01" and .standby != null and .standby != .assigned)'
[[ $(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation) != "$gen" ]] || h_fail "no publish after p01 went"
# The crash's membership events may bring a second, debounced rebalance
# that moves nothing: it must not take the standbys back (wait out its
# quiet period first).
sleep 2
after=$(grep -c 'event=published ' "$H_DIR/c1.log")
grep 'event=published ' "$H_DIR/c1.log" | tail -n $((after - $(wc -l <"$H_DIR/published.txt"))) >"$H_DIR/after.txt"
! grep -q ' standbys=deferred$' "$H_DIR/after.txt" || h_fail "a publish after the crash left the standbys out: $(cat "$H_DIR/after.txt")"
b_jq 'all(.partitions[]; .standby != null and .standby != .assigned)' >/dev/null ||
    h_fail "a partition lost its standby after the crash"
h_pass "standbys deferred while members joined, named once quiet, kept through a crash"
