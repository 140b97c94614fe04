#!/usr/bin/env bash
# it_standby_lagging: a standby (--standby-prefetch on) does not read a
# partition a second time behind an owner that is catching up on a backlog:
#   1. w2 stands by for w1's partition q. w1 is frozen (SIGSTOP) while 100
#      records go to q: w2 fetches them (well within its bound), and at a
#      later trim, with the owner still below the log end of the trim
#      before and more than a batch (10) behind, pauses q
#      (event=standby_prefetch_lagging). 100 more records go to q while
#      w1 stays frozen: w2 does not resume (for at least four trims) and
#      does not fetch them (its exit line's standby_records_fetched).
#   2. w1 wakes and writes everything: once it has written up to the log
#      end w2 saw when it paused, w2 fetches q again from where the owner
#      is, holding nothing (event=standby_prefetch_resumed).
#   3. w1 is frozen over a second backlog (w2 pauses q again) and evicted:
#      w2 takes q, writes what it held after its fence and fetches the
#      rest; q's offsets are all written exactly once, the last backlog
#      under w2's epoch.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_standby_lagging
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1 --session-timeout-ms 20000 --standby-prefetch on --batch-size 10
h_wait_for 15 "w1 owns both partitions" b_all_active 1
b_produce 20 a
h_wait_for 15 "20 records in the sink" b_sink_has 20
next_of() { b_sql "SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=$1"; }
next_is() { [[ $(next_of "$1") == "$2" ]]; }
offsets_of() { b_sql "SELECT group_concat(offset) FROM (SELECT offset FROM baton_output WHERE grp='$B_GROUP' AND partition=$1 ORDER BY offset)"; }
# events W EVENT P: how many EVENT lines W logged for partition P.
events() { grep -cE "event=$2 partition=$3 " "$H_DIR/$1.log" || true; }

b_worker w2 --log-level debug --session-timeout-ms 20000 --standby-prefetch on --batch-size 10
h_wait_for 20 "w1 and w2 own a partition each" b_all_active 2
q=$(b_partitions_of w1)
p=$(b_partitions_of w2)
[[ $q =~ ^[01]$ && $p =~ ^[01]$ ]] || h_fail "w1 owns '$q', w2 owns '$p'"
h_wait_for 15 "w2 fetches partition $q ahead as its standby" \
    b_log_has w2 "event=partition_state partition=$q from=none to=prefetching reason=standby"
h_wait_for 15 "w1 wrote partition $q through offset 9" next_is "$q" 10

# --- 1. the owner falls behind: the standby stops reading behind it -------
h_kill w1 STOP
b_produce 200 b # offsets 10-109 of each partition
h_wait_for 15 "w2 paused partition $q behind its lagging owner" \
    b_log_has w2 "event=standby_prefetch_lagging partition=$q "
lag=$(grep -E "event=standby_prefetch_lagging partition=$q " "$H_DIR/w2.log" | head -1)
# The owner at 10, the log's end more than a batch (10) beyond it (the
# trim may come while the 100 records are still arriving), w2 holding what
# it fetched of them.
[[ $lag =~ owner_next=10\ log_end=([0-9]+)\ held=([0-9]+) ]] &&
    ((BASH_REMATCH[1] > 20 && BASH_REMATCH[1] <= 110 && BASH_REMATCH[2] > 0)) ||
    h_fail "w2 paused partition $q with the wrong owner position, log end or holding: $lag"
lag_end=${BASH_REMATCH[1]}
! b_log_has w2 "event=standby_prefetch_full partition=$q " || h_fail "w2 reached its bound: $lag"
b_produce 200 c # offsets 110-209
h_wait_for 15 "w2 wrote its own partition $p through offset 209" next_is "$p" 210
# The owner is still frozen: four trims (250 ms each) and no resume.
sleep 1
((0 == $(events w2 standby_prefetch_resumed "$q"))) ||
    h_fail "w2 resumed partition $q with its owner frozen at 10: $(grep -E "partition=$q " "$H_DIR/w2.log" | grep standby_prefetch)"
[[ $(next_of "$q") == 10 ]] || h_fail "partition $q moved on with its owner frozen: $(next_of "$q")"

# --- 2. the owner catches up: the standby reads on from where it is -------
h_kill w1 CONT
h_wait_for 15 "w1 wrote partition $q through offset 209" next_is "$q" 210
# (That it did not resume early is section 1's frozen second.) It resumes
# at the owner's position: offsets below it are no use at a fence.
h_wait_for 15 "w2 resumed partition $q" b_log_has w2 "event=standby_prefetch_resumed partition=$q "
res=$(grep -E "event=standby_prefetch_resumed partition=$q " "$H_DIR/w2.log" | head -1)
[[ $res =~ from=([0-9]+)\ held=0\  ]] && ((BASH_REMATCH[1] >= lag_end && BASH_REMATCH[1] <= 210)) ||
    h_fail "w2 should resume partition $q at its owner's position ($lag_end to 210) holding nothing: $res"
resumed_from=${BASH_REMATCH[1]}

# --- 3. lagging at the handoff: the fence reads on from what it held ------
h_kill w1 STOP
b_produce 200 d # offsets 210-309
h_wait_for 15 "w2 paused partition $q a second time" \
    bash -c "(( \$(grep -cE 'event=standby_prefetch_lagging partition=$q ' '$H_DIR/w2.log') >= 2 ))"
b_produce 200 e # offsets 310-409, not fetched ahead
e1=$(b_epoch "$q")
b_ctl evict w1 >/dev/null || h_fail "evict w1 failed"
h_wait_for 20 "w2 wrote partition $q through offset 409" next_is "$q" 410
e2=$(b_epoch "$q")
((e2 > e1)) || h_fail "epoch $e2 is not above w1's $e1"
[[ $(offsets_of "$q") == "$(seq -s, 0 409)" ]] || h_fail "partition $q: offsets $(offsets_of "$q")"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$q AND offset >= 210 AND epoch = $e2") == 200 ]] ||
    h_fail "offsets 210-409 of partition $q must be w2's (epoch $e2)"
used=$(grep -E "event=prefetch_used partition=$q " "$H_DIR/w2.log" | head -1)
[[ $used =~ used=([0-9]+) ]] && ((BASH_REMATCH[1] > 0)) || h_fail "w2 did not use what it held: '$used'"
[[ $(offsets_of "$p") == "$(seq -s, 0 409)" ]] || h_fail "partition $p: offsets $(offsets_of "$p")"
h_kill w1 CONT
rc=0
h_wait_exit w1 15 || rc=$?
((rc == 1)) || h_fail "an evicted w1 should exit 1, got $rc"

# What w2 read as a standby: q's offsets 10 to its first pause's log end,
# from its resume to 209 behind the owner, and of 210-309 what came before
# its second pause: at most (lag_end - 10) + (210 - resumed_from) + 100,
# and a fetch in flight at a pause (20 here). Reading on behind the frozen
# owner would add 110-209 and 310-409: 400 in all.
h_stop w2
stopped=$(grep -E 'event=stopped ' "$H_DIR/w2.log" | tail -n 1)
[[ $stopped =~ standby_records_fetched=([0-9]+) ]] || h_fail "no standby_records_fetched in w2's exit line: $stopped"
most=$((lag_end - 10 + 210 - resumed_from + 100 + 20))
((BASH_REMATCH[1] > 0 && BASH_REMATCH[1] <= most)) ||
    h_fail "w2 read ${BASH_REMATCH[1]} records of partition $q as its standby (1 to $most expected): $stopped"
! b_log_has w2 "event=partition_state_unexpected" || h_fail "w2: an unexpected partition state"
h_pass "a standby pauses behind an owner catching up, resumes once it has, and hands over exactly once"
