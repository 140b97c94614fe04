#!/usr/bin/env bash
# it_guard_sink_bind: a group is bound to its sink and a sink to its group
# (issue 13). The first worker to fence binds them (ROOT/g/sink names the
# sink's id; the sink's baton_groups row names the group's id). Then:
#  (a) a worker of the group with another SQLite sink exits 1 naming both
#      sink ids, leaves, and writes no row into its sink;
#  (b) the same group name under another --root against the same sink is
#      refused (the sink records the other group id) and writes nothing;
#  (c) `batonctl sink show` prints the binding;
#  (d) `sink rebind` refuses while a worker is live, works when none is,
#      and a worker on the new sink then runs;
#  (e) `fences --sink` of a sink with no rows of the group says so;
#  (f) with no coordinator (nothing assigned) a worker on the wrong sink
#      is refused all the same: it checks the binding at start.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_guard_sink_bind
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
OUT=$H_DIR/out.db
B_SINK=$OUT
b_init $B_PARTITIONS
uuid=$(b_status | jq -r .config.group_uuid)
[[ $uuid =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] ||
    h_fail "init gave no group id: '$uuid'"
b_coord c1
b_worker w1
h_wait_for 20 "w1 owns everything" b_all_active 1
b_produce 40 a
h_wait_for 15 "40 records in out.db" b_sink_has 40

# Both sides of the binding, as the first worker wrote them.
sink_id=$(b_sql "SELECT value FROM baton_meta WHERE name='sink_id'")
[[ $(b_sql "SELECT group_uuid FROM baton_groups WHERE grp='g'") == "$uuid" ]] ||
    h_fail "out.db does not record the group id $uuid: $(b_sql 'SELECT * FROM baton_groups')"
h_zk get /baton/g/sink >"$H_DIR/binding.json"
jq -e --arg s "$sink_id" '.sink_id == $s and .bound_by == "w1" and .bound_ms > 0' \
    "$H_DIR/binding.json" >/dev/null || h_fail "binding: $(cat "$H_DIR/binding.json")"

# (c) sink show
b_ctl sink show >"$H_DIR/show.txt"
grep -q "^bound to: *sink $sink_id\$" "$H_DIR/show.txt" && grep -q "^bound by: *w1 at 20" "$H_DIR/show.txt" &&
    grep -q "^group id: *$uuid\$" "$H_DIR/show.txt" || h_fail "sink show: $(cat "$H_DIR/show.txt")"
b_ctl sink show --sink "sqlite:$OUT" --json | jq -e --arg s "$sink_id" --arg u "$uuid" \
    '.group_uuid == $u and .binding.sink_id == $s and .sink.sink_id == $s and .sink.group_uuid == $u and .sink.bound == true' \
    >/dev/null || h_fail "sink show --json: $(b_ctl sink show --sink "sqlite:$OUT" --json)"

# (a) another sink in the same group: refused, nothing written there.
# First a sink that does not exist yet: refused before it is created.
W9=$H_DIR/w9.db
h_spawn w9 "$BATON_BIN/baton-worker" --zk "$ZK" --group g --id w9 --brokers "$BOOTSTRAP" \
    --sink "sqlite:$W9" --session-timeout-ms "$B_SESSION_MS"
rc=0; h_wait_exit w9 40 || rc=$?
((rc == 1)) || h_fail "w9 with a new sink should exit 1, got $rc: $(tail -n 5 "$H_DIR/w9.log")"
refusal=$(grep 'event=sink_bind_refused' "$H_DIR/w9.log" || true)
[[ $refusal == *"group 'g' is bound to sink $sink_id"* && $refusal == *"bound by w1 at 20"* &&
   $refusal == *"this worker's sink sqlite:$W9 does not exist yet"* && $refusal == *"batonctl sink rebind"* ]] ||
    h_fail "w9's refusal (new sink) does not name both sinks: $refusal"
[[ ! -e $W9 ]] || h_fail "w9's refused new sink was created"
b_log_has w9 'event=fenced' && h_fail "w9 fenced something"
h_wait_for 20 "w9 left, w1 owns everything again" b_all_active 1
# Then an existing sink of its own, with an id (another deployment's, say).
w9_id=9c41aaaa-0000-4000-8000-000000000001
sqlite3 "$W9" "CREATE TABLE baton_meta(name TEXT PRIMARY KEY, value TEXT);
               INSERT INTO baton_meta VALUES ('sink_id', '$w9_id')"
h_spawn w9b "$BATON_BIN/baton-worker" --zk "$ZK" --group g --id w9 --brokers "$BOOTSTRAP" \
    --sink "sqlite:$W9" --session-timeout-ms "$B_SESSION_MS"
rc=0; h_wait_exit w9b 40 || rc=$?
((rc == 1)) || h_fail "w9 with another sink should exit 1, got $rc: $(tail -n 5 "$H_DIR/w9b.log")"
refusal=$(grep 'event=sink_bind_refused' "$H_DIR/w9b.log" || true)
[[ $refusal == *"group 'g' is bound to sink $sink_id"* && $refusal == *"bound by w1 at 20"* &&
   $refusal == *"this worker's sink sqlite:$W9 is $w9_id"* && $refusal == *"batonctl sink rebind"* ]] ||
    h_fail "w9's refusal does not name both sinks: $refusal"
[[ $(sqlite3 "$W9" "SELECT (SELECT count(*) FROM baton_fence) + (SELECT count(*) FROM baton_output) + (SELECT count(*) FROM baton_groups)") == 0 ]] ||
    h_fail "w9 wrote into its sink: $(sqlite3 "$W9" 'SELECT * FROM baton_fence')"
b_log_has w9b 'event=fenced' && h_fail "w9 fenced something"
h_wait_for 20 "w9 left, w1 owns everything again" b_all_active 1
b_produce 40 b
h_wait_for 15 "w1 keeps writing out.db" b_sink_has 80

# (e) fences of a sink that holds no rows of the group.
rc=0; b_ctl fences --sink "sqlite:$W9" >/dev/null 2>"$H_DIR/fe.txt" || rc=$?
((rc == 1)) && grep -q "holds no rows of group 'g'" "$H_DIR/fe.txt" &&
    grep -q "bound to another sink, $sink_id" "$H_DIR/fe.txt" ||
    h_fail "fences of an empty sink: $rc $(cat "$H_DIR/fe.txt")"
grep -q sink_behind "$H_DIR/fe.txt" && h_fail "fences of an empty sink says sink_behind"

# (b) the same group name under another root, same sink: the sink records
# another group id for 'g'.
epochs_before=$(b_sql "SELECT group_concat(partition || ':' || epoch) FROM baton_fence WHERE grp='g'")
o_ctl() { "$BATON_BIN/batonctl" --zk "$ZK" --group g --root /other --timeout 5000 "$@"; }
o_ctl init --topic "$B_TOPIC" --partitions $B_PARTITIONS >/dev/null
other=$(o_ctl status --json | jq -r .config.group_uuid)
[[ -n $other && $other != "$uuid" ]] || h_fail "the other deployment's group id: '$other'"
b_coord c2 --root /other
h_spawn x1 "$BATON_BIN/baton-worker" --zk "$ZK" --root /other --group g --id x1 \
    --brokers "$BOOTSTRAP" --sink "sqlite:$OUT" --session-timeout-ms "$B_SESSION_MS"
rc=0; h_wait_exit x1 40 || rc=$?
((rc == 1)) || h_fail "x1 (another root, same sink) should exit 1, got $rc: $(tail -n 5 "$H_DIR/x1.log")"
refusal=$(grep 'event=sink_bind_refused' "$H_DIR/x1.log" || true)
[[ $refusal == *"serves another group named 'g'"* && $refusal == *"$uuid"* && $refusal == *"$other"* ]] ||
    h_fail "x1's refusal does not name both group ids: $refusal"
[[ $(b_sql "SELECT group_concat(partition || ':' || epoch) FROM baton_fence WHERE grp='g'") == "$epochs_before" ]] ||
    h_fail "x1 changed out.db's fences"
[[ $(b_sql "SELECT group_concat(group_uuid) FROM baton_groups") == "$uuid" ]] || h_fail "x1 changed baton_groups"
h_zk get /other/g/sink >/dev/null 2>&1 && h_fail "x1 bound /other's group to out.db"
h_stop c2

# (d) rebind: refused while w1 is live, done once it left; a worker on the
# new sink then runs.
NEW=$H_DIR/new.db
rc=0; b_ctl sink rebind --sink "sqlite:$NEW" >/dev/null 2>"$H_DIR/rb1.txt" || rc=$?
((rc == 1)) && grep -q "refusing to rebind group 'g' while 1 worker(s) are live (w1)" "$H_DIR/rb1.txt" ||
    h_fail "rebind with w1 live: $rc $(cat "$H_DIR/rb1.txt")"
[[ $(h_zk get /baton/g/sink | jq -r .sink_id) == "$sink_id" ]] || h_fail "the refused rebind moved the binding"
h_stop w1
h_wait_for 20 "no worker is live" b_jq '.workers | length == 0'
b_ctl sink rebind --sink "sqlite:$NEW" >"$H_DIR/rb2.txt" || h_fail "rebind failed: $(cat "$H_DIR/rb2.txt")"
new_id=$(sqlite3 "$NEW" "SELECT value FROM baton_meta WHERE name='sink_id'")
grep -q "bound to sink $new_id (sqlite:$NEW), was $sink_id" "$H_DIR/rb2.txt" || h_fail "rebind said: $(cat "$H_DIR/rb2.txt")"
b_ctl sink show --json | jq -e --arg s "$new_id" '.binding.sink_id == $s and (.binding.bound_by | startswith("batonctl sink rebind"))' \
    >/dev/null || h_fail "show after rebind: $(b_ctl sink show --json)"
B_SINK=$NEW
b_worker w2
h_wait_for 20 "w2 owns everything" b_all_active 1
h_wait_for 15 "w2 writes the new sink" b_sink_has 80
[[ $(b_sql "SELECT group_uuid FROM baton_groups WHERE grp='g'") == "$uuid" ]] || h_fail "new.db does not record the group id"
# The old sink, now not the group's, is refused like any other.
B_SINK=$OUT
b_worker w3
rc=0; h_wait_exit w3 40 || rc=$?
((rc == 1)) && b_log_has w3 "event=sink_bind_refused.*group 'g' is bound to sink $new_id" ||
    h_fail "w3 on the old sink: $rc $(tail -n 3 "$H_DIR/w3.log")"

# (f) refused at start: with no coordinator, nothing is assigned, yet a
# worker on the wrong sink checks the binding before it owns anything and
# exits (the check runs once at start, not only at the first fence).
h_stop c1
B_SINK=$OUT
b_worker w4
rc=0; h_wait_exit w4 40 || rc=$?
((rc == 1)) && b_log_has w4 "event=sink_bind_refused.*group 'g' is bound to sink $new_id" ||
    h_fail "w4 on the old sink, no coordinator: $rc $(tail -n 3 "$H_DIR/w4.log")"
b_log_has w4 'event=acquired' && h_fail "w4 acquired a partition with no coordinator running"

# Bad input: clear usage errors.
rc=0; b_ctl sink rebind 2>"$H_DIR/u1.txt" || rc=$?
((rc == 2)) && grep -q -- "--sink URI is required" "$H_DIR/u1.txt" || h_fail "rebind without --sink: $rc"
rc=0; b_ctl sink frob 2>"$H_DIR/u2.txt" || rc=$?
((rc == 2)) && grep -q "unknown subcommand 'frob'" "$H_DIR/u2.txt" || h_fail "sink frob: $rc"
b_ctl sink --help | grep '^examples:' >/dev/null || h_fail "sink --help has no examples"
h_pass "another sink refused, another deployment refused, show, rebind, fences of an empty sink"
