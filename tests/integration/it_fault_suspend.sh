#!/usr/bin/env bash
# it_fault_suspend: self-suspension. ZooKeeper is frozen (SIGSTOP) for
# longer than 2/3 of the worker's session timeout but less than the whole
# timeout. The worker must notice the silence itself and stop writing
# before its session could have expired (event=zk_silent with silent_ms
# below timeout_ms, and the sink's row count does not move while ZooKeeper
# is still frozen), then resume with the same session once ZooKeeper
# answers again (event=zk_heard, no session_expired, one join), and every
# record lands exactly once.
#
# Timing: with session timeout T the worker probes every T/6 and counts the
# server as heard at the send time of the last answered probe, so it
# suspends between 2/3 T - T/6 and 2/3 T into the freeze, and the session
# cannot expire before 5/6 T into it. T = 9 s; the freeze ends 5/6 T
# (7.5 s) after the worker's last answered request, which its zk_silent
# line gives: 6 to 7.5 s into the freeze.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_fault_suspend
h_zk_start
B_PARTITIONS=4
T_MS=9000
TOTAL=6000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
# The coordinator's session outlives the freeze, so nothing is reassigned.
B_SESSION_MS=15000 b_coord c1
B_SESSION_MS=$T_MS b_worker w1
h_wait_for 20 "w1 owns everything" b_all_active 1

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count $TOTAL --rate 400
h_wait_for 20 "records flowing" b_sink_has 200

zkpid=$(h_pid zk)
n0=$(wc -l <"$H_DIR/w1.log")
t0=$(_h_now_ms)
kill -STOP "$zkpid"
h_log "froze ZooKeeper (pid $zkpid)"
if ! h_wait_for 10 "w1 suspends writes while ZooKeeper is frozen" b_log_since w1 "$n0" 'event=zk_silent'; then
    kill -CONT "$zkpid"
    h_fail "w1 never suspended its writes"
fi
before=$(b_sink_count)
# Keep ZooKeeper frozen past 2/3 of the session timeout, until 5/6 T after
# the worker's last answered request (its zk_silent line's time less
# silent_ms), which the server heard last at the earliest: 1.5 s before
# the session could expire, however slowly this loop runs, and some 1.2 s
# after the suspension for the sink's rows to show a write.
sl=$(b_log_since w1 "$n0" 'event=zk_silent')
heard=$(b_heard_ms "$sl") || { kill -CONT "$zkpid"; h_fail "no silent_ms in: $sl"; }
end=$((heard + T_MS * 5 / 6))
while _h_clock now && ((now < end - 300)); do _h_nap 0.05; done
after=$(b_sink_count)
while _h_clock now && ((now < end)); do _h_nap 0.02; done
kill -CONT "$zkpid"
h_log "resumed ZooKeeper after $(($(_h_now_ms) - t0)) ms; sink rows while suspended: $before -> $after"
((after == before)) || h_fail "w1 wrote while suspended ($before -> $after rows)"

line=$sl
silent=$(sed -n 's/.* silent_ms=\([0-9]*\).*/\1/p' <<<"$line")
timeout=$(sed -n 's/.* timeout_ms=\([0-9]*\).*/\1/p' <<<"$line")
[[ -n $silent && -n $timeout ]] || h_fail "cannot parse the suspension line: $line"
((timeout == T_MS)) || h_fail "negotiated timeout $timeout, wanted $T_MS"
((silent < timeout)) || h_fail "suspended only after $silent ms of silence (timeout $timeout)"

h_wait_for 15 "w1 resumes writes" b_log_has w1 'event=zk_heard .*action=resume_writes'
rc=0; h_wait_exit producer 60 || rc=$?
((rc == 0)) || h_fail "producer failed ($rc)"
h_wait_for 60 "all $TOTAL records in the sink" b_sink_has $TOTAL
b_log_has w1 'event=session_expired' && h_fail "w1's session expired: the freeze was meant to be survivable"
joins=$(grep -c 'event=joined' "$H_DIR/w1.log")
((joins == 1)) || h_fail "w1 joined $joins times: the session did not survive"
h_wait_for 15 "every partition active with its owner" b_all_active 1
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "suspended after ${silent} ms of silence (timeout $timeout), resumed in the same session, exactly once"
