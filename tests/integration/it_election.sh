#!/usr/bin/env bash
# it_election: exactly one coordinator leads; standbys watch only their
# predecessor; when the leader dies (SIGKILL) the next one takes over within
# the session timeout, with a higher coordinator epoch.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_election
h_zk_start
B_SINK=$H_DIR/sink.db
b_init 4

b_coord c1
h_wait_for 10 "c1 leads" b_jq '.coordinator.id == "c1"'
b_coord c2 --log-level debug
# c2 before c3 in the queue (started together, their creates could swap).
h_wait_for 10 "c2 is a candidate" bash -c "[[ \$('$BATON_BIN/baton-zk' --zk $ZK ls /baton/g/coordinators | wc -l) == 2 ]]"
b_coord c3 --log-level debug
h_wait_for 10 "c2 and c3 are candidates" bash -c "[[ \$('$BATON_BIN/baton-zk' --zk $ZK ls /baton/g/coordinators | wc -l) == 3 ]]"
# Each has run its election and found a predecessor (so the checks below
# that neither elected itself are not vacuous).
h_wait_for 10 "c2 watches c1" b_log_has c2 'event=standby watching=/baton/g/coordinators/c-0000000000'
h_wait_for 10 "c3 watches c2" b_log_has c3 'event=standby watching=/baton/g/coordinators/c-0000000001'
[[ $(b_status | jq -r .coordinator.id) == c1 ]] || h_fail "leadership moved without cause"
b_log_has c1 'event=elected' || h_fail "c1 did not log its election"
! b_log_has c2 'event=elected' || h_fail "c2 elected itself while c1 leads"
! b_log_has c3 'event=elected' || h_fail "c3 elected itself while c1 leads"
epoch1=$(b_status | jq -r .coordinator.epoch)
# Each standby watches its predecessor only (no herd): c3 watches c2's node.
b_log_has c3 'event=standby watching=/baton/g/coordinators/c-0000000001' || h_fail "c3 does not watch c2"
! b_log_has c3 'watching=/baton/g/coordinators/c-0000000000' || h_fail "c3 watches the leader (herd)"

h_kill c1 KILL
t0=$(_h_now_ms)
h_wait_for 10 "c2 takes over" b_jq '.coordinator.id == "c2"'
took=$(($(_h_now_ms) - t0))
((took <= B_SESSION_MS + 3000)) || h_fail "failover took ${took} ms, session timeout is ${B_SESSION_MS} ms"
epoch2=$(b_status | jq -r .coordinator.epoch)
((epoch2 > epoch1)) || h_fail "coordinator epoch did not rise: $epoch1 -> $epoch2"
! b_log_has c3 'event=elected' || h_fail "c3 elected itself while c2 leads"

# The new leader publishes: a worker that joins now gets everything.
h_kafka_start "$B_TOPIC" 4
b_worker w1
h_wait_for 15 "w1 owns all 4 partitions" b_all_active 1
gen=$(b_status | jq -r .generation)
[[ $(h_zk get /baton/g/assignment | jq -r .coordinator_epoch) == "$epoch2" ]] ||
    h_fail "assignment not stamped with the new leader's epoch"

h_stop c2
h_wait_for 10 "c3 takes over after graceful stop" b_jq '.coordinator.id == "c3"'
epoch3=$(b_status | jq -r .coordinator.epoch)
((epoch3 > epoch2)) || h_fail "coordinator epoch did not rise: $epoch2 -> $epoch3"
rc=0; h_wait_exit c2 10 || rc=$?
((rc == 0)) || h_fail "c2 exited $rc on SIGTERM"
# A new leader with nothing to change publishes nothing: a window of a
# second from its election (the usual quiet period is 200 ms).
h_wait_for 10 "c3 elected" b_log_has c3 'event=elected'
sleep 1
[[ $(b_status | jq -r .generation) == "$gen" ]] || h_fail "a takeover without membership change rebalanced"
h_pass "one leader at a time; failover ${took} ms; epochs $epoch1 < $epoch2 < $epoch3"
