#!/usr/bin/env bash
# it_processor: baton-worker's processor plugins end to end (issue 8).
#   1. a processor that cannot be loaded (unknown name, a .so without the
#      table, a table of another ABI version, a bad config) exits 2 with a
#      message naming it, before joining the group (no member node);
#   2. --processor project with a "where" filter: every offset is applied
#      exactly once -- projected values for matching records, no row for
#      the others, next_offset past all of them -- across a SIGKILL and a
#      restart of the worker;
#   3. the example plugin (examples/processor_words.c, one output per word)
#      fills baton_output with each record's first word and
#      baton_output_more with the rest, seq 1..n-1;
#   4. a processor failing on a poison record: event=processor_error with
#      the partition and offset, the partition stops there (next_offset ==
#      the poison's offset, nothing at or after it written) while the other
#      partition completes; a restart stops at the same offset (never
#      skipped); fixing the config resumes it and every record is written;
#   5. a processor that crashes (SIGSEGV) kills the worker; nothing at or
#      after the crashing record is written, and the next owner writes
#      every record exactly once.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_processor
B=$BATON_BIN
WORDS_SO=$BATON_BIN/../lib/processor_words.so
FIX=${BATON_TESTS_BIN:?}
[[ -f $WORDS_SO ]] || h_fail "$WORDS_SO not built"

h_zk_start
B_PARTITIONS=2
B_SESSION_MS=2000
h_kafka_start "$B_TOPIC" $B_PARTITIONS

# value P I: the JSON value of record I of partition P (with blanks, so the
# words processor splits it; keep is false for every third record).
value() {
    local keep=true
    (($2 % 3 == 0)) && keep=false
    printf '{"user": "u%s_%s", "amount": %s, "keep": %s, "note": "w%s x y"}' "$1" "$2" "$2" "$keep" "$2"
}
# produce P FROM TO: records FROM..TO-1 of partition P (offsets FROM..TO-1).
produce() {
    local i
    for ((i = $2; i < $3; i++)); do value "$1" "$i"; echo; done |
        timeout 30 kcat -b "$BOOTSTRAP" -P -t "$B_TOPIC" -p "$1" || h_fail "kcat could not produce"
}
# consumed: sum of next_offset over the group's partitions.
consumed() { b_sql "SELECT coalesce(sum(next_offset), 0) FROM baton_fence WHERE grp='$B_GROUP'"; }
consumed_is() { [[ $(consumed 2>/dev/null) == "$1" ]]; }
next_of() { b_sql "SELECT next_offset FROM baton_fence WHERE grp='$B_GROUP' AND partition=$1"; }
crash_check() {
    if grep -El 'AddressSanitizer|runtime error|Segmentation|Aborted' "$H_DIR"/*.log; then
        h_fail "a process crashed or hit a sanitizer error"
    fi
}

# --- 1. processors that cannot be loaded: exit 2 before joining -------------
B_GROUP=gbad
b_init $B_PARTITIONS
bad_load() { # WANT_PATTERN ARGS...
    local pat=$1 rc=0 out=$H_DIR/bad.out
    shift
    timeout 30 "$B/baton-worker" --zk "$ZK" --group gbad --id wbad --brokers "$BOOTSTRAP" \
        --sink "sqlite:$H_DIR/bad.db" "$@" >"$out" 2>&1 || rc=$?
    ((rc == 2)) || h_fail "baton-worker $* exited $rc, wanted 2: $(head -c 600 "$out")"
    grep -Eq -- "$pat" "$out" || h_fail "baton-worker $*: no '$pat' in: $(head -c 600 "$out")"
    ! h_zk exists /baton/gbad/workers/wbad >/dev/null 2>&1 || h_fail "wbad joined the group"
}
bad_load "unknown processor 'nope'" --processor nope
bad_load "processor_no_table.so': exports no 'baton_processor_v1' table" \
    --processor "$FIX/processor_no_table.so"
bad_load "abi_version is 99, but this worker knows only ABI version 1" \
    --processor "$FIX/processor_bad_abi.so"
bad_load "cannot load it" --processor "$H_DIR/missing.so"
bad_load "'fields' must be a non-empty array" --processor project --processor-config '{"fields":[]}'
bad_load "not JSON" --processor project --processor-config '{"fields":'
# The environment and the config file reach it too.
rc=0
BATON_PROCESSOR=nope2 timeout 30 "$B/baton-worker" --zk "$ZK" --group gbad --id wbad \
    --brokers "$BOOTSTRAP" --sink "sqlite:$H_DIR/bad.db" >"$H_DIR/bad.out" 2>&1 || rc=$?
((rc == 2)) && grep -q "unknown processor 'nope2'" "$H_DIR/bad.out" ||
    h_fail "BATON_PROCESSOR was not used ($rc): $(head -c 400 "$H_DIR/bad.out")"
printf 'processor=project\nprocessor.config={"fields":["a"],"where":3}\n' >"$H_DIR/w.properties"
bad_load "'where' must be an object" --config "$H_DIR/w.properties"
h_log "bad processors refused with exit 2: ok"

# --- 2. project with a filter: exactly once across a SIGKILL ----------------
produce 0 0 20
produce 1 0 20
B_GROUP=gproj
B_SINK=$H_DIR/proj.db
b_init $B_PARTITIONS
b_coord cp
PROJ=(--processor project --processor-config '{"fields":["user","amount"],"where":{"keep":true}}')
b_worker wp "${PROJ[@]}"
h_wait_for 30 "wp consumed 40 records" consumed_is 40
h_kill wp KILL
produce 0 20 30
produce 1 20 30
b_worker wp "${PROJ[@]}"
h_wait_for 30 "wp consumed 60 records after its restart" consumed_is 60
expected="" got=""
for p in 0 1; do
    for ((i = 0; i < 30; i++)); do
        ((i % 3 == 0)) || expected+="$p|$i|{\"user\":\"u${p}_$i\",\"amount\":$i};"
    done
done
got=$(b_sql "SELECT group_concat(partition || '|' || offset || '|' || CAST(value AS TEXT), ';') || ';'
             FROM (SELECT * FROM baton_output WHERE grp='gproj' ORDER BY partition, offset)")
[[ $got == "$expected" ]] || h_fail "project output differs:
 got      $got
 expected $expected"
[[ $(b_sql "SELECT count(*) FROM baton_output_more WHERE grp='gproj'") == 0 ]] ||
    h_fail "project wrote to baton_output_more"
[[ $(next_of 0) == 30 && $(next_of 1) == 30 ]] || h_fail "next_offset is not 30 for both partitions"
h_stop wp
h_stop cp
crash_check
h_log "project: every offset once, filtered ones consumed without a row: ok"

# --- 3. the example plugin: several outputs per record ----------------------
B_GROUP=gwords
B_SINK=$H_DIR/words.db
b_init $B_PARTITIONS
b_coord cw
b_worker ww --processor "$WORDS_SO" --processor-config '{"upper": true}'
h_wait_for 30 "ww consumed 60 records" consumed_is 60
first="" more=""
for p in 0 1; do
    for ((i = 0; i < 30; i++)); do
        read -ra ws <<<"$(value $p $i)"
        first+="$p|$i|${ws[0]^^};"
        for ((s = 1; s < ${#ws[@]}; s++)); do more+="$p|$i|$s|${ws[s]^^};"; done
    done
done
got=$(b_sql "SELECT group_concat(partition || '|' || offset || '|' || CAST(value AS TEXT), ';') || ';'
             FROM (SELECT * FROM baton_output WHERE grp='gwords' ORDER BY partition, offset)")
[[ $got == "$first" ]] || h_fail "words: baton_output differs:
 got      ${got:0:400}
 expected ${first:0:400}"
got=$(b_sql "SELECT group_concat(partition || '|' || offset || '|' || seq || '|' || CAST(value AS TEXT), ';') || ';'
             FROM (SELECT * FROM baton_output_more WHERE grp='gwords' ORDER BY partition, offset, seq)")
[[ $got == "$more" ]] || h_fail "words: baton_output_more differs:
 got      ${got:0:400}
 expected ${more:0:400}"
# Every stored output carries the owner's epoch, in both tables.
[[ $(b_sql "SELECT count(*) FROM baton_output_more m JOIN baton_output o USING (grp, partition, offset)
            WHERE m.grp='gwords' AND m.epoch <> o.epoch") == 0 ]] || h_fail "epochs differ between tables"
h_stop ww
h_stop cw
crash_check
h_log "words: first word in baton_output, the rest in baton_output_more: ok"

# --- 4. a poison record: loud, stopped, never skipped ----------------------
printf 'poison\n' | timeout 30 kcat -b "$BOOTSTRAP" -P -t "$B_TOPIC" -p 0 || h_fail "kcat"
produce 0 31 34 # offsets 31..33 of partition 0, after the poison at 30
produce 1 30 33
B_GROUP=gpoison
B_SINK=$H_DIR/poison.db
b_init $B_PARTITIONS
b_coord cx
POISON=(--processor "$WORDS_SO" --processor-config '{"fail_on": "poison"}')
b_worker wx "${POISON[@]}"
h_wait_for 30 "the processor error is logged" b_log_has wx \
    'event=processor_error partition=0 offset=30 .*processor=words stage=process error=.*poison'
h_wait_for 30 "partition 1 completes" bash -c "[[ \$(sqlite3 '$B_SINK' \".timeout 5000\" \"SELECT next_offset FROM baton_fence WHERE grp='gpoison' AND partition=1\") == 33 ]]"
b_log_has wx 'event=partition_stopped partition=0 .*next_offset=30' || h_fail "no partition_stopped line"
[[ $(next_of 0) == 30 ]] || h_fail "partition 0's next_offset is $(next_of 0), wanted 30 (the poison)"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gpoison' AND partition=0 AND offset >= 30") == 0 ]] ||
    h_fail "something at or after the poison was written"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gpoison' AND partition=0") == 30 ]] ||
    h_fail "the records before the poison were not all written"
h_alive wx || h_fail "wx exited on a processor error (it should stop only the partition)"
# A restart (what a supervisor does) stops at the same offset: not skipped.
h_stop wx
rc=0; h_wait_exit wx 0 || rc=$?
((rc == 0)) || h_fail "wx did not leave cleanly ($rc)"
b_worker wx "${POISON[@]}"
h_wait_for 30 "the restarted worker fails on the same record" bash -c \
    "[[ \$(grep -c 'event=processor_error partition=0 offset=30 ' '$H_DIR/wx.log') -ge 2 ]]"
[[ $(next_of 0) == 30 ]] || h_fail "the restart moved past the poison: $(next_of 0)"
h_stop wx
# Fixed (no fail_on): the poison record and everything after it are written.
b_worker wx --processor "$WORDS_SO"
h_wait_for 30 "partition 0 goes past the poison" bash -c "[[ \$(sqlite3 '$B_SINK' \".timeout 5000\" \"SELECT next_offset FROM baton_fence WHERE grp='gpoison' AND partition=0\") == 34 ]]"
[[ $(b_sql "SELECT CAST(value AS TEXT) FROM baton_output WHERE grp='gpoison' AND partition=0 AND offset=30") == poison ]] ||
    h_fail "the poison record's output is missing after the fix"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gpoison'") == 67 ]] ||
    h_fail "not every record was written once: $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gpoison'")"
h_stop wx
h_stop cx
crash_check
h_log "poison: loud, stopped at its offset, never skipped: ok"

# --- 5. a processor that crashes takes the worker down, and loses nothing ---
# (last: this worker's log holds the crash report crash_check looks for)
printf 'crash\n' | timeout 30 kcat -b "$BOOTSTRAP" -P -t "$B_TOPIC" -p 1 || h_fail "kcat" # offset 33
B_GROUP=gcrash
B_SINK=$H_DIR/crash.db
b_init $B_PARTITIONS
b_coord cc
b_worker wc --processor "$FIX/processor_crash.so"
rc=0; h_wait_exit wc 30 || rc=$?
((rc != 0 && rc != 124)) || h_fail "the worker did not die with its processor ($rc)"
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gcrash' AND partition=1 AND offset >= 33") == 0 ]] ||
    h_fail "an output at or after the crashing record was written"
p1=$(next_of 1 || true)
[[ -z $p1 || $p1 -le 33 ]] || h_fail "partition 1's next_offset $p1 is past the crashing record"
b_worker wc2 # copy: the records the crash interrupted are read again
h_wait_for 30 "every record of gcrash written once" consumed_is 68
[[ $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gcrash'") == 68 ]] ||
    h_fail "gcrash: $(b_sql "SELECT count(*) FROM baton_output WHERE grp='gcrash'") rows, wanted 68"
[[ $(b_sql "SELECT CAST(value AS TEXT) FROM baton_output WHERE grp='gcrash' AND partition=1 AND offset=33") == crash ]] ||
    h_fail "the crashing record is missing after the restart"
h_stop wc2
h_stop cc
if grep -El 'AddressSanitizer|runtime error|Segmentation|Aborted' "$H_DIR/wc2.log" "$H_DIR/cc.log"; then
    h_fail "a process other than the crashing worker crashed"
fi
h_pass "processors: load errors exit 2; project and words exactly once; a poison record stops its partition without being skipped"
