#!/usr/bin/env bash
# it_ctl_evict: `batonctl evict` on a frozen worker. w1 (a 20 s session) is
# SIGSTOPped at the failpoint worker.before_sink_write holding a batch;
# evicting it re-owns its partitions at once, long before its session could
# expire (proved by w1 later seeing "evicted", not "session expired"). On
# SIGCONT its stale batch is rejected by the sink, it exits 1 with the
# eviction message, and every record lands exactly once. Then a running
# worker is evicted too, and the command's usage errors are checked.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_ctl_evict
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1

BATON_FAILPOINTS="worker.before_sink_write=2:stop" b_worker w1 --session-timeout-ms 20000
h_wait_for 15 "w1 owns everything" b_all_active 1
b_produce 40 a
h_wait_for 10 "w1 stopped at the failpoint" h_at_failpoint w1 worker.before_sink_write
frozen_epochs=$(b_status | jq -c '[.partitions[].epoch]')

# w2 joins: the coordinator gives it half, but frozen w1 never lets go.
b_worker w2
h_wait_for 15 "a handoff stuck behind frozen w1" b_jq 'any(.partitions[]; .state == "handoff" and .owner == "w1" and .assigned == "w2")'

b_ctl evict w1 --json >"$H_DIR/evict.json" || h_fail "evict w1 failed"
h_log "evict: $(jq -c . "$H_DIR/evict.json")"
jq -e '.worker == "w1" and (.member | endswith("/workers/w1")) and (.session | test("^0x[0-9a-f]{16}$"))' \
    "$H_DIR/evict.json" >/dev/null || h_fail "evict output lacks worker/member/session"
jq -e '[.claims[] | select(.owner)] | length == 4 and (map(.partition) | sort == [0,1,2,3])' \
    "$H_DIR/evict.json" >/dev/null || h_fail "evict should list w1's 4 owner claims"
jq -e --argjson e "$frozen_epochs" 'all(.claims[]; .epoch == $e[.partition])' "$H_DIR/evict.json" >/dev/null ||
    h_fail "evicted claims' epochs differ from w1's epochs $frozen_epochs"

h_wait_for 15 "w2 owns everything" b_all_active 1
b_jq 'all(.partitions[]; .owner == "w2") and ([.workers[].id] == ["w2"])' >/dev/null ||
    h_fail "w1 should be gone from workers and owners"
new_epochs=$(b_status | jq -c '[.partitions[].epoch]')
jq -n -e --argjson a "$frozen_epochs" --argjson b "$new_epochs" 'all(range(0; 4); $b[.] > $a[.])' >/dev/null ||
    h_fail "new epochs $new_epochs are not all above the frozen worker's $frozen_epochs"
b_produce 40 b
h_wait_for 15 "w2 wrote the new records" b_sink_has 80

# Evicting it again: not a member any more.
rc=0
b_ctl evict w1 2>"$H_DIR/again.err" || rc=$?
((rc == 1)) || h_fail "evicting a gone worker should exit 1, got $rc"
grep -q "worker 'w1' is not a live member" "$H_DIR/again.err" || h_fail "unclear error: $(cat "$H_DIR/again.err")"

rejected_before=$(b_sql "SELECT sum(rejected) FROM baton_fence WHERE grp='g'")
h_kill w1 CONT
h_wait_for 10 "w1's stale batch is rejected" b_log_has w1 'event=write_rejected .*reason=STALE'
rc=0
h_wait_exit w1 15 || rc=$?
((rc == 1)) || h_fail "an evicted worker should exit 1, got $rc"
b_log_has w1 'event=evicted ' || h_fail "w1 did not log event=evicted"
b_log_has w1 'event=membership_failed error="evicted: ' || h_fail "w1's fatal error does not say evicted"
! b_log_has w1 'event=session_expired' || h_fail "w1's session expired: the takeover was not the eviction's doing"
rejected_after=$(b_sql "SELECT sum(rejected) FROM baton_fence WHERE grp='g'")
((rejected_after > rejected_before)) || h_fail "sink did not count the rejection ($rejected_before -> $rejected_after)"

# A running (not frozen) worker evicted: it notices at once and exits 1.
b_worker w3
h_wait_for 15 "w2 and w3 share the partitions" b_all_active 2
b_ctl evict w3 >"$H_DIR/evict3.txt" || h_fail "evict w3 failed"
grep -q '^evicted worker w3 (session 0x' "$H_DIR/evict3.txt" || h_fail "evict w3 output: $(cat "$H_DIR/evict3.txt")"
grep -q '^removed member  .*/workers/w3$' "$H_DIR/evict3.txt" || h_fail "evict w3 does not name the member node"
rc=0
h_wait_exit w3 15 || rc=$?
((rc == 1)) || h_fail "evicted running w3 should exit 1, got $rc"
h_wait_for 15 "w2 owns everything again" b_all_active 1

# Usage errors exit 2 naming the problem.
rc=0; b_ctl evict 2>"$H_DIR/u1.err" || rc=$?
((rc == 2)) && grep -q 'which worker' "$H_DIR/u1.err" || h_fail "evict without WORKER: rc $rc $(cat "$H_DIR/u1.err")"
rc=0; b_ctl evict 'no/such' 2>"$H_DIR/u2.err" || rc=$?
((rc == 2)) && grep -q "'no/such' is not a valid worker id" "$H_DIR/u2.err" || h_fail "bad id: rc $rc $(cat "$H_DIR/u2.err")"
rc=0; b_ctl evict w2 --bogus 2>"$H_DIR/u3.err" || rc=$?
((rc == 2)) && grep -q "'--bogus'" "$H_DIR/u3.err" || h_fail "bad flag: rc $rc $(cat "$H_DIR/u3.err")"

# Issue 20 (3): a worker that re-registers between evict's read and its
# multi is not evicted in its old self's place. w4 owns nothing (drained),
# so no claim of its old session can fail the multi: only the session
# check can tell. evict stops 6 s at the failpoint; meanwhile w4 is killed,
# its session expires and it comes back with the same id.
b_ctl drain w4 --force >/dev/null
b_worker w4
h_wait_for 15 "w4 live, drained" b_jq 'any(.workers[]; .id == "w4" and .draining)'
old_session=$(b_status | jq -r '.workers[] | select(.id == "w4") | .session')
BATON_FAILPOINTS="ctl.evict_before_multi=sleep-6000" h_spawn ev4 "$BATON_BIN/batonctl" --zk "$ZK" \
    --group "$B_GROUP" --timeout 20000 evict w4
h_wait_for 10 "evict w4 paused before its multi" b_log_has ev4 'event=failpoint name=ctl.evict_before_multi'
h_kill w4 KILL
h_wait_exit w4 5 || true
h_wait_for 15 "w4's old session expired" bash -c "! '$BATON_BIN/baton-zk' --zk '$ZK' exists /baton/$B_GROUP/workers/w4"
b_worker w4
h_wait_for 10 "w4 registered again" b_jq --arg s "$old_session" 'any(.workers[]; .id == "w4" and .session != $s)'
rc=0; h_wait_exit ev4 20 || rc=$?
((rc == 1)) || h_fail "evict of a re-registered w4 should exit 1, got $rc"
b_log_has ev4 "re-registered while being evicted" || h_fail "evict did not say w4 re-registered: $(tail -n 3 "$H_DIR/ev4.log")"
b_jq 'any(.workers[]; .id == "w4")' >/dev/null || h_fail "the new w4 was evicted"
! b_log_has w4 'event=evicted' || h_fail "the new w4 logged an eviction"
h_stop w4
b_ctl undrain w4 >/dev/null

b_produce 40 c
h_wait_for 15 "all 120 records in the sink" b_sink_has 120
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "frozen w1 evicted and re-owned at once, its batch rejected ($rejected_before -> $rejected_after), it exited 1; running w3 evicted; a re-registered w4 spared; exactly once"
