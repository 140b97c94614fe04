#!/usr/bin/env bash
# it_guard_topic: the source topic is verified, and nothing creates it.
# Kafka (devkafka) has topic "in" with 4 partitions and no other.
#  - a worker whose group names a topic Kafka lacks exits 1 naming the
#    topic and the brokers, without joining; the topic is still absent;
#  - a group of more partitions than the topic: the worker exits 1 naming
#    both counts; a group of fewer: it warns (naming batonctl init
#    --partitions 4) and runs;
#  - batonctl init --brokers refuses a missing topic and a short one before
#    writing anything (no group znode), warns on a longer one, and without
#    --brokers says it could not check;
#  - batonctl status --brokers --sink on a missing topic is an error, not
#    "lag: 0".
# After all of it Kafka still has exactly one topic (kcat -L lists all
# topics, which creates none).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_guard_topic
h_zk_start
h_kafka_start in 4
B_SINK=$H_DIR/sink.db

# kafka_topics: the topics Kafka has, sorted, one a line.
kafka_topics() { timeout 20 kcat -b "$BOOTSTRAP" -L | sed -n 's/^ *topic "\([^"]*\)" with .*/\1/p' | sort; }
# only_in: Kafka has topic "in" and nothing else.
only_in() {
    local t
    t=$(kafka_topics)
    [[ $t == in ]] || h_fail "Kafka should have only topic 'in', has: $(echo $t)"
}
# ctl GROUP ARGS...: batonctl on GROUP, stdout in $H_DIR/ctl.out, stderr in
# $H_DIR/ctl.err; sets RC.
ctl() {
    local g=$1
    shift
    RC=0
    "$BATON_BIN/batonctl" --zk "$ZK" --group "$g" --timeout 5000 "$@" >"$H_DIR/ctl.out" 2>"$H_DIR/ctl.err" || RC=$?
}
err_has() { grep -qF -- "$1" "$H_DIR/ctl.err" || h_fail "batonctl stderr lacks '$1': $(<"$H_DIR/ctl.err")"; }
no_group() { ! h_zk exists "/baton/$1" || h_fail "group $1 was written: /baton/$1 exists"; }
only_in

# --- batonctl init --brokers: checked before anything is written -----------
ctl gmiss init --topic nosuchtopic --partitions 4 --brokers "$BOOTSTRAP"
((RC == 1)) || h_fail "init on a missing topic: exit $RC, want 1 ($(<"$H_DIR/ctl.err"))"
err_has "topic 'nosuchtopic' does not exist"
err_has "$BOOTSTRAP"
no_group gmiss
ctl gshort init --topic in --partitions 8 --brokers "$BOOTSTRAP"
((RC == 1)) || h_fail "init of 8 partitions on a 4-partition topic: exit $RC, want 1"
err_has "has 4 partitions, fewer than the group's 8"
no_group gshort
ctl glong init --topic in --partitions 2 --brokers "$BOOTSTRAP"
((RC == 0)) || h_fail "init of 2 partitions on a 4-partition topic: exit $RC, want 0 ($(<"$H_DIR/ctl.err"))"
err_has "warning: topic 'in'"
err_has "batonctl init --topic in --partitions 4"
ctl gexact init --topic in --partitions 4 --brokers "$BOOTSTRAP"
((RC == 0)) || h_fail "init on a matching topic: exit $RC, want 0 ($(<"$H_DIR/ctl.err"))"
[[ ! -s $H_DIR/ctl.err ]] || h_fail "init on a matching topic printed: $(<"$H_DIR/ctl.err")"
# Usage: --brokers checks --topic; --kafka needs --brokers.
ctl gkeys init --keys k1 --brokers "$BOOTSTRAP"
((RC == 2)) || h_fail "init --keys --brokers: exit $RC, want 2"
ctl gmiss init --topic in --partitions 4 --kafka socket.timeout.ms=1000
((RC == 2)) || h_fail "init --kafka without --brokers: exit $RC, want 2"
no_group gmiss
only_in

# Without --brokers init cannot check, and says so: the groups below are
# the misconfigurations the worker must refuse.
ctl gmiss init --topic nosuchtopic --partitions 4
((RC == 0)) || h_fail "init without --brokers: exit $RC, want 0"
err_has "topic 'nosuchtopic' not checked on Kafka"
ctl gshort init --topic in --partitions 8
((RC == 0)) || h_fail "init gshort without --brokers: exit $RC, want 0"

# --- the worker ------------------------------------------------------------
# refused NAME GROUP WHAT TEXT: worker NAME on GROUP exits 1 with TEXT in its
# log, without starting or registering as a member.
refused() {
    local name=$1 group=$2 what=$3 text=$4 rc=0
    B_GROUP=$group b_worker "$name"
    h_wait_exit "$name" 60 || rc=$?
    ((rc == 1)) || h_fail "worker $what: exit $rc, want 1"
    b_log_has "$name" "$text" || h_fail "$name: the log lacks: $text"
    ! b_log_has "$name" 'event=started' || h_fail "$name started $what"
    [[ -z $(h_zk ls "/baton/$group/workers") ]] || h_fail "$name registered as a member"
}
refused wmiss gmiss "on a missing topic" "event=topic_check_failed topic=nosuchtopic brokers=$BOOTSTRAP"
b_log_has wmiss "topic 'nosuchtopic' does not exist on Kafka at --brokers '$BOOTSTRAP'" ||
    h_fail "wmiss: the error does not name topic and brokers"
only_in
refused wshort gshort "of 8 partitions on a 4-partition topic" "has 4 partitions, fewer than the group's 8"

B_GROUP=glong b_coord clong
B_GROUP=glong b_worker wlong
h_wait_for 30 "wlong started" b_log_has wlong 'event=started topic=in partitions=2'
b_log_has wlong 'event=topic_has_more_partitions topic=in partitions=4 group_partitions=2' ||
    h_fail "wlong: no warning about the topic's extra partitions"
b_log_has wlong 'batonctl init --topic in --partitions 4' || h_fail "wlong: the warning names no batonctl init"
B_GROUP=glong h_wait_for 30 "wlong owns both partitions" b_all_active 1
b_log_has wlong 'event=topic_checked|event=topic_has_more' || h_fail "wlong: no check logged"
h_stop wlong
only_in

# --- batonctl status --brokers --sink: a missing topic is an error ---------
[[ -f $B_SINK ]] || h_fail "no sink file from wlong"
for fmt in "" --json; do
    ctl gmiss status $fmt --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK"
    ((RC == 1)) || h_fail "status $fmt on a missing topic: exit $RC, want 1 (stdout: $(<"$H_DIR/ctl.out"))"
    err_has "topic 'nosuchtopic' does not exist"
    ! grep -q 'lag: *0\|"lag": *0' "$H_DIR/ctl.out" || h_fail "status $fmt reported lag 0 on a missing topic"
done
# A short topic is a warning beside the lag, a matching one has none.
ctl gshort status --json --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK"
((RC == 0)) || h_fail "status on gshort: exit $RC ($(<"$H_DIR/ctl.err"))"
jq -e 'any(.warnings[]; .problem | contains("fewer than the group'"'"'s 8"))' "$H_DIR/ctl.out" >/dev/null ||
    h_fail "status gshort: no warning about the short topic: $(jq -c .warnings "$H_DIR/ctl.out")"
ctl glong status --json --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK"
((RC == 0)) || h_fail "status on glong: exit $RC ($(<"$H_DIR/ctl.err"))"
jq -e '.summary.lag == 0' "$H_DIR/ctl.out" >/dev/null || h_fail "status glong: lag is not 0"
only_in

h_pass "guard_topic"
