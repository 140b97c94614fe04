#!/usr/bin/env bash
# it_standby_restart: a standby's takeover ends when the owner it took over
# from restarts with its id (issue 20, defect 1). The coordinator is frozen
# (SIGSTOP) so that the standby acts first, as it is meant to; w1 is killed
# (SIGKILL), its session expires, its standby w2 promotes w1's partitions;
# then w1 restarts with the same id. The assignment still names w1, so the
# same member set comes back and the coordinator alone would publish
# nothing: w2 must give the partitions back by itself (the new incarnation's
# node is live and not leaving), while the coordinator is still frozen. Once
# it resumes, the coordinator notices the new session under the same id
# (event=member_incarnation) and republishes with a new generation, which
# ends any promotion left. Records flow throughout; every record lands
# exactly once, epochs never fall.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_standby_restart
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
# The coordinator's session outlives its freeze; the workers' is short.
B_SESSION_MS=20000 b_coord c1 --handoff-timeout-ms 2000
B_SESSION_MS=3000
b_worker w1
b_worker w2
h_wait_for 30 "w1 and w2 share the partitions" b_all_active 2
h_wait_for 10 "status names a standby for every partition" \
    b_jq 'all(.partitions[]; .standby != null and .standby != .assigned)'
h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 6000 --rate 400
h_wait_for 10 "records flowing" b_sink_has 200

parts=$(b_partitions_of w1)
[[ -n $parts ]] || h_fail "w1 owns nothing"
gen=$(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation)
owned_by() { local p; for p in $2; do [[ $(b_owner "$p") == "$1" ]] || return 1; done; }
h_kill c1 STOP
h_kill w1 KILL
h_wait_for 15 "w1's partitions ($parts) taken by its standby w2, coordinator frozen" owned_by w2 "$parts"
b_log_has w2 "event=standby_promoted owner=w1 reason=gone" || h_fail "w2 did not log its promotion"
h_wait_exit w1 5 || true
b_worker w1
h_wait_for 10 "w1 registered again" b_jq 'any(.workers[]; .id == "w1")'
# The coordinator is still frozen: only the standby can give them back.
h_wait_for 15 "w2 gave w1's partitions back to the new w1, coordinator frozen" owned_by w1 "$parts"
b_log_has w2 "event=standby_given_back owner=w1 reason=owner_live" || h_fail "w2 did not log giving back"
[[ $(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation) == "$gen" ]] ||
    h_fail "the assignment changed while the coordinator was frozen"
h_kill c1 CONT
h_wait_for 15 "the coordinator saw w1's new incarnation" b_log_has c1 "event=member_incarnation worker=w1 "
h_wait_for 15 "the coordinator republished with a newer generation" \
    bash -c '(( $("$BATON_BIN/baton-zk" --zk "$ZK" get /baton/'"$B_GROUP"'/assignment | jq -r .generation) > '"$gen"' ))'
h_wait_for 20 "every partition active with its assigned owner" b_all_active 2
! b_log_has c1 "event=forced_revoke" || h_fail "the watchdog had to revoke: $(grep event=forced_revoke "$H_DIR/c1.log" | head -3)"

rc=0; h_wait_exit producer 40 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 30 "all 6000 records in the sink" b_sink_has 6000
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "a standby's takeover ended when the owner restarted with its id (coordinator frozen); the coordinator republished on the new incarnation"
