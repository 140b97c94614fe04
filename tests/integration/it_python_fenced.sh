#!/usr/bin/env bash
# it_python_fenced: Python and C workers in one group and one sink
# (examples/python/fenced_worker.py on python/baton, and baton-worker). The
# first Python worker, py1, binds the unbound group to the sink, owns every
# partition, and stops (SIGSTOP, BATON_FAILPOINTS=worker.before_sink_write=
# 1:stop) holding its second batch. A second Python worker and a C worker
# take its partitions with higher epochs once its session expires. Resumed,
# py1's stale batch is refused by the sink and counted, it drops the
# partition, notices its expired session and rejoins; the three share the
# partitions, and the sink holds every record exactly once with epochs
# never falling (verify_sink). Finally a Python worker with another sink
# is refused by the group's binding and writes nothing.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_python_fenced
# Debian's python3: python3-confluent-kafka is installed for it. In the
# sanitizer build it needs the ASan runtime first (tests/integration/CMakeLists.txt).
PY=(/usr/bin/python3)
[[ -z ${BATON_PY_PRELOAD:-} ]] || PY=(env LD_PRELOAD="$BATON_PY_PRELOAD" ASAN_OPTIONS=detect_leaks=0 "${PY[@]}")
"${PY[@]}" -c 'import confluent_kafka' 2>/dev/null ||
    h_fail "/usr/bin/python3 lacks confluent_kafka (deploy/setup.sh installs python3-confluent-kafka)"
export BATON_LIBRARY=$BATON_BIN/../lib/libbaton.so BATONCTL=$BATON_BIN/batonctl
h_zk_start
B_SINK=$H_DIR/sink.db
B_SINK_URI=sqlite:$B_SINK
B_PARTITIONS=6
B_SESSION_MS=4000
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1

# py_worker NAME SESSION_MS [SINK]: a Python fenced worker.
py_worker() {
    h_spawn "$1" "${PY[@]}" "$BATON_SRC/examples/python/fenced_worker.py" --zk "$ZK" --group "$B_GROUP" \
        --id "$1" --brokers "$BOOTSTRAP" --sink "sqlite:${3:-$B_SINK}" --session-timeout-ms "$2" \
        --linger-ms 10
}

# Bad input: a clear error and exit 2, before anything is written.
bad_input() { # EXPECTED_MESSAGE ARGS...
    local want=$1 out rc=0
    shift
    out=$("${PY[@]}" "$BATON_SRC/examples/python/fenced_worker.py" --zk "$ZK" --group "$B_GROUP" --id bad \
        --brokers "$BOOTSTRAP" "$@" 2>&1) || rc=$?
    ((rc == 2)) || h_fail "fenced_worker.py $* exited $rc, not 2: $out"
    [[ $out == *"$want"* ]] || h_fail "fenced_worker.py $*: no '$want' in: $out"
}
bad_input "writes sqlite:PATH only" --sink postgresql://localhost/db
bad_input "does not exist; create it first" --sink "sqlite:$H_DIR/no/such/dir.db"
bad_input "in-memory database cannot fence" --sink sqlite::memory:
BATON_FAILPOINTS="worker.before_sink_write=freeze" bad_input "unknown action 'freeze'" --sink "sqlite:$B_SINK"
[[ ! -e $B_SINK ]] || h_fail "bad input created the sink"
rc=0
out=$("${PY[@]}" "$BATON_SRC/examples/python/fenced_worker.py" --zk "$ZK" --group nosuch --id bad \
    --brokers "$BOOTSTRAP" --sink "sqlite:$H_DIR/nosuch.db" 2>&1) || rc=$?
((rc == 1)) && [[ $out == *"group nosuch is not initialised"* ]] ||
    h_fail "an uninitialised group: exit $rc, not 1 with the reason: $out"
[[ ! -e $H_DIR/nosuch.db ]] || h_fail "a worker of an uninitialised group created its sink"

BATON_FAILPOINTS="worker.before_sink_write=1:stop" py_worker py1 1000
h_wait_for 20 "py1 owns everything" b_jq 'all(.partitions[]; .owner == "py1" and .state == "active")'
b_log_has py1 'event=sink_binding_checked' || h_fail "py1 did not check the sink binding"
b_ctl sink show --json | jq -e '.binding.sink_id' >/dev/null || h_fail "py1 did not bind the group"
b_produce 60 a
h_wait_for 15 "py1 stopped at the failpoint" h_at_failpoint py1 worker.before_sink_write
h_stopped py1 || h_fail "py1 is not stopped"
zombie_epochs=$(b_status | jq -c '[.partitions[].epoch]')

py_worker py2 "$B_SESSION_MS"
b_worker w1
h_wait_for 30 "py2 and w1 own everything" b_jq \
    '(all(.partitions[]; .owner != "py1" and .state == "active")) and ([.partitions[].owner] | unique == ["py2", "w1"])'
new_epochs=$(b_status | jq -c '[.partitions[].epoch]')
jq -n -e --argjson a "$zombie_epochs" --argjson b "$new_epochs" 'all(range(0; 6); $b[.] > $a[.])' >/dev/null ||
    h_fail "new epochs $new_epochs are not all above the zombie's $zombie_epochs"
b_produce 60 b
h_wait_for 20 "py2 and w1 wrote the new records" b_sink_has 120

rejected_before=$(b_sql "SELECT sum(rejected) FROM baton_fence WHERE grp='$B_GROUP'")
h_kill py1 CONT
h_wait_for 10 "py1's batch is refused as stale" b_log_has py1 'event=write_rejected .*reason=STALE'
rejected_after=$(b_sql "SELECT sum(rejected) FROM baton_fence WHERE grp='$B_GROUP'")
((rejected_after > rejected_before)) || h_fail "sink did not count the rejection ($rejected_before -> $rejected_after)"
h_wait_for 15 "py1 notices its session expired" b_log_has py1 'event=session_expired'
h_wait_for 30 "py1, py2 and w1 share the partitions" b_all_active 3
b_produce 60 c
h_wait_for 20 "all 180 records in the sink" b_sink_has 180
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK_URI" "$B_GROUP" || h_fail "sink verification failed"
late=$(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP'
              AND epoch IN ($(jq -r 'join(",")' <<<"$zombie_epochs"))
              AND CAST(value AS TEXT) NOT LIKE 'a-%'")
((late == 0)) || h_fail "$late rows of a zombie epoch came after the takeover"
writers=$(b_sql "SELECT count(DISTINCT epoch) FROM baton_output WHERE grp='$B_GROUP'")
((writers >= 6)) || h_fail "only $writers epochs wrote: expected py1's and the successors'"

# Python workers on other sinks are refused by the binding: a new one is
# not created, an existing one (made by batonctl) gets no fence.
"${PY[@]}" -c 'import sys; sys.path.insert(0, sys.argv[1]); import fenced_worker as f; f.Sink(sys.argv[2], "g")' \
    "$BATON_SRC/examples/python" "sqlite:$H_DIR/other.db" 2>/dev/null
# py9 logs JSON (BATON_LOG_FORMAT), as baton's programs do.
for w in py8:other:text py9:new:json; do
    IFS=: read -r name db format <<<"$w"
    rc=0
    BATON_LOG_FORMAT=$format py_worker "$name" "$B_SESSION_MS" "$H_DIR/$db.db"
    h_wait_exit "$name" 30 || rc=$?
    ((rc == 1)) || h_fail "$name on another sink exited $rc, not 1"
done
b_log_has py8 'event=sink_bind_refused .*is bound to sink' || h_fail "py8 did not say why it was refused"
grep '^{' "$H_DIR/py9.log" | jq -e -s 'any(.[]; .proc == "fenced_worker.py" and .event == "sink_bind_refused"
    and (.error | test("does not exist yet \\(a new sink, nothing created\\)")))' >/dev/null ||
    h_fail "py9 did not say in JSON that its sink is new and refused"
[[ ! -e $H_DIR/new.db ]] || h_fail "py9 created its sink although the group is bound to another"
n=$(sqlite3 "$H_DIR/other.db" "SELECT count(*) FROM baton_fence")
((n == 0)) || h_fail "py8 fenced $n partitions of the other sink"

# A graceful stop: SIGTERM leaves, exit 0.
h_stop py2
rc=0
h_wait_exit py2 1 || rc=$?
((rc == 0)) || h_fail "py2 exited $rc after SIGTERM"
b_log_has py2 'event=left' || h_fail "py2 did not leave gracefully"
h_pass "Python zombie refused (rejected $rejected_before -> $rejected_after), rejoined; 180 records exactly once across py1, py2 and w1"
