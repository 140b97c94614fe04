#!/usr/bin/env bash
# it_guard_sink: sink mistakes are explicit and leave nothing behind.
#   - a sqlite: path in a missing directory: the worker exits 1 naming the
#     directory, and says so once (one line, not a log line and its echo);
#     batonctl's read commands name the directory too; a file that is not
#     a database is named once too, and left as it was
#   - a worker that fails before its first fence (ZooKeeper unreachable, the
#     group not initialised) leaves no new SQLite file (nor -wal, -shm,
#     -journal) behind; a sink file that existed before is kept as it was
#   - the same worker against an initialised group creates the file at its
#     first fence and works
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_guard_sink
B=$BATON_BIN

# run_fail OUT CMD...: CMD (bounded) must exit 1; its output goes to OUT.
run_fail() {
    local out=$1 rc=0
    shift
    timeout 60 "$@" >"$out" 2>&1 || rc=$?
    ((rc == 1)) || h_fail "$* exited $rc, wanted 1: $(head -c 800 "$out")"
}
# no_sqlite_files DIR: nothing named *.db* in DIR.
no_sqlite_files() {
    local left
    left=$(find "$1" -maxdepth 1 -name '*.db*' -printf '%f ')
    [[ -z $left ]] || h_fail "files left behind in $1: $left"
}

# --- a sink in a missing directory -------------------------------------------
dead=127.0.0.1:$(h_free_port)
o=$H_DIR/missing-dir.out
run_fail "$o" "$B/baton-worker" --zk "$dead" --brokers 127.0.0.1:9092 --group g --id w1 \
    --sink "sqlite:$H_DIR/no-such-dir/out.db" --connect-timeout-ms 1000
grep -q "directory '$H_DIR/no-such-dir' does not exist" "$o" ||
    h_fail "the message does not name the missing directory: $(cat "$o")"
n=$(grep -c "no-such-dir" "$o" || true)
((n == 1)) || h_fail "the failure is printed $n times, not once: $(cat "$o")"
grep -q "event=sink_open_failed" "$o" || h_fail "no event=sink_open_failed line: $(cat "$o")"
[[ ! -e $H_DIR/no-such-dir ]] || h_fail "the missing directory was created"
h_log "missing directory named, once"

# A file that is not a database: named, once, and left as it was.
printf 'not a database, keep me\n' >"$H_DIR/junk.db"
o=$H_DIR/junk.out
run_fail "$o" "$B/baton-worker" --zk "$dead" --brokers 127.0.0.1:9092 --group g --id w1 \
    --sink "sqlite:$H_DIR/junk.db" --connect-timeout-ms 1000
n=$(grep -c "'$H_DIR/junk.db' is not a usable SQLite database" "$o" || true)
((n == 1)) || h_fail "a non-database sink: reported $n times, not once: $(cat "$o")"
[[ $(cat "$H_DIR/junk.db") == 'not a database, keep me' ]] || h_fail "the non-database file was changed"

# --- ZooKeeper unreachable: no new file --------------------------------------
mkdir "$H_DIR/sinks"
o=$H_DIR/nozk.out
run_fail "$o" "$B/baton-worker" --zk "$dead" --brokers 127.0.0.1:9092 --group g --id w1 \
    --sink "sqlite:$H_DIR/sinks/new.db" --connect-timeout-ms 1000
grep -q "cannot connect to ZooKeeper" "$o" || h_fail "unclear error: $(cat "$o")"
no_sqlite_files "$H_DIR/sinks"
h_log "ZooKeeper unreachable: no file left"

# --- the group not initialised: no new file; an existing file kept -----------
h_zk_start
B_PARTITIONS=2
h_kafka_start "$B_TOPIC" $B_PARTITIONS
o=$H_DIR/noinit.out
run_fail "$o" "$B/baton-worker" --zk "$ZK" --brokers "$BOOTSTRAP" --group g --id w1 \
    --sink "sqlite:$H_DIR/sinks/new.db" --connect-timeout-ms 5000
grep -q "not initialised" "$o" || h_fail "unclear error: $(cat "$o")"
no_sqlite_files "$H_DIR/sinks"

sqlite3 "$H_DIR/sinks/old.db" "CREATE TABLE keep_me(x); INSERT INTO keep_me VALUES (42);"
before=$(sha256sum <"$H_DIR/sinks/old.db")
run_fail "$o" "$B/baton-worker" --zk "$ZK" --brokers "$BOOTSTRAP" --group g --id w1 \
    --sink "sqlite:$H_DIR/sinks/old.db" --connect-timeout-ms 5000
[[ -f $H_DIR/sinks/old.db ]] || h_fail "an existing sink file was removed"
[[ $(sqlite3 "$H_DIR/sinks/old.db" "SELECT x FROM keep_me") == 42 ]] ||
    h_fail "an existing sink file lost its contents"
h_log "group not initialised: no new file; the existing one kept ($before)"

# --- batonctl read commands name the missing directory too -------------------
b_init $B_PARTITIONS
o=$H_DIR/ctl.out
run_fail "$o" "$B/batonctl" --zk "$ZK" --group "$B_GROUP" --timeout 5000 fences \
    --sink "sqlite:$H_DIR/no-such-dir/out.db"
grep -q "directory '$H_DIR/no-such-dir' does not exist" "$o" ||
    h_fail "batonctl fences does not name the missing directory: $(cat "$o")"
n=$(grep -c "no-such-dir" "$o" || true)
((n == 1)) || h_fail "batonctl prints the failure $n times, not once: $(cat "$o")"

# --- an initialised group: the first fence creates the file ------------------
B_SINK=$H_DIR/sinks/new.db
b_coord c1
b_worker w1
h_wait_for 20 "w1 owns both partitions" b_all_active 1
h_wait_for 10 "the first fence created the sink" \
    bash -c "[[ \$(sqlite3 '$B_SINK' \"SELECT count(*) FROM baton_fence WHERE grp='$B_GROUP'\") == 2 ]]"
b_produce 20 a
h_wait_for 15 "w1 wrote the records" b_sink_has 20
h_pass "missing directory named once; nothing left behind before the first fence"
