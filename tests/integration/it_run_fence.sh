#!/usr/bin/env bash
# it_run_fence: the fenced file writer (baton-fence-write, baton/fence.h),
# baton-run's bad input, and the member library example (member_counter).
#   - a lower epoch is refused (exit 3) and changes nothing; equal and
#     higher epochs write; --data-file replaces; a file that is not a fence
#     file is never overwritten (exit 1); bad flags exit 2;
#   - concurrent writers with different epochs: the file's lines never go
#     down in epoch and every accepted append is there exactly once;
#   - baton-run: unknown flag, bad key, bad run id, missing "--" or command
#     exit 2; a command not found 127; no ZooKeeper, no such key 1;
#   - member_counter: two members count 10 each in turn, the second
#     continues from the first's value with a higher epoch.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_run_fence
FW=$BATON_BIN/baton-fence-write
F=$H_DIR/f.state

# expect_rc RC DESCRIPTION CMD...: CMD exits RC (stderr kept in last.err).
expect_rc() {
    local want=$1 desc=$2 rc=0
    shift 2
    "$@" >"$H_DIR/last.out" 2>"$H_DIR/last.err" || rc=$?
    ((rc == want)) || { cat "$H_DIR/last.err" >&2; h_fail "$desc: exit $rc, wanted $want"; }
}

# --- baton-fence-write ------------------------------------------------------
expect_rc 0 "first write" "$FW" --epoch 5 --state "$F" --append "a"
[[ $(head -n 1 "$F") == "baton-fence epoch=5" ]] || h_fail "header: $(head -n 1 "$F")"
cp "$F" "$H_DIR/before"
expect_rc 3 "a lower epoch" "$FW" --epoch 4 --state "$F" --append "b"
grep -q "epoch 4 refused: .* already saw epoch 5" "$H_DIR/last.err" || h_fail "stale message: $(cat "$H_DIR/last.err")"
cmp -s "$F" "$H_DIR/before" || h_fail "a refused write changed the file"
expect_rc 0 "the same epoch" "$FW" --epoch 5 --state "$F" --append "c"
expect_rc 0 "BATON_EPOCH from the environment" env BATON_EPOCH=7 "$FW" --state "$F" --append "d"
[[ $(tail -n +2 "$F" | tr '\n' ' ') == "a c d " ]] || h_fail "data: $(tail -n +2 "$F")"
printf 'x\ny\n' >"$H_DIR/data"
expect_rc 0 "--data-file" "$FW" --epoch 8 --state "$F" --data-file "$H_DIR/data"
[[ $(tail -n +2 "$F") == $'x\ny' && $(head -n 1 "$F") == "baton-fence epoch=8" ]] || h_fail "replace: $(cat "$F")"
expect_rc 0 "--data-file - (stdin)" bash -c "echo z | '$FW' --epoch 8 --state '$F' --data-file -"
expect_rc 0 "fence only" "$FW" --epoch 9 --state "$F"
[[ $(cat "$F") == $'baton-fence epoch=9\nz' ]] || h_fail "fence only changed the data: $(cat "$F")"
echo "precious" >"$H_DIR/other"
expect_rc 1 "not a fence file" "$FW" --epoch 9 --state "$H_DIR/other" --append x
[[ $(cat "$H_DIR/other") == precious ]] || h_fail "a foreign file was overwritten"
expect_rc 2 "no --state" "$FW" --epoch 1 --append x
expect_rc 2 "epoch 0" "$FW" --epoch 0 --state "$F"
expect_rc 2 "epoch not a number" "$FW" --epoch 12x --state "$F"
expect_rc 2 "no epoch at all" env -u BATON_EPOCH "$FW" --state "$F"
expect_rc 2 "--append with --data-file" "$FW" --epoch 9 --state "$F" --append x --data-file "$H_DIR/data"
expect_rc 2 "unknown flag" "$FW" --epoch 9 --state "$F" --bogus

# Four concurrent writers, epochs 1-4, 12 appends each.
C=$H_DIR/c.state
writers=()
for e in 1 2 3 4; do
    (
        ok=0
        for i in $(seq 1 12); do
            "$FW" --epoch "$e" --state "$C" --append "$e $i" 2>/dev/null && ok=$((ok + 1))
        done
        echo "$ok" >"$H_DIR/ok.$e"
    ) &
    writers+=($!)
done
wait "${writers[@]}" # by pid: a bare wait would wait for the harness's reaper too
accepted=$(($(<"$H_DIR/ok.1") + $(<"$H_DIR/ok.2") + $(<"$H_DIR/ok.3") + $(<"$H_DIR/ok.4")))
(($(tail -n +2 "$C" | wc -l) == accepted)) || h_fail "$accepted appends accepted, $(tail -n +2 "$C" | wc -l) lines in the file"
(($(<"$H_DIR/ok.4") == 12)) || h_fail "the highest epoch was refused $((12 - $(<"$H_DIR/ok.4"))) times"
tail -n +2 "$C" | awk 'NR > 1 && $1 < prev { bad = 1 } { prev = $1 } END { exit bad }' ||
    h_fail "an older epoch wrote after a newer one"
[[ $(head -n 1 "$C") == "baton-fence epoch=4" ]] || h_fail "concurrent header: $(head -n 1 "$C")"
# Four concurrent writers with one epoch (one owner's threads): no append lost.
Q=$H_DIR/q.state
writers=()
for w in 1 2 3 4; do
    (for i in $(seq 1 15); do "$FW" --epoch 10 --state "$Q" --append "$w $i" || exit 1; done) &
    writers+=($!)
done
for pid in "${writers[@]}"; do wait "$pid" || h_fail "a same-epoch writer was refused"; done
(($(tail -n +2 "$Q" | sort -u | wc -l) == 60)) || h_fail "$(tail -n +2 "$Q" | sort -u | wc -l) of 60 concurrent appends kept"
h_log "fence writer: refusals, replace, concurrency ($accepted appends accepted; 60 of 60 same-epoch) ok"

# --- baton-run bad input ------------------------------------------------------
RUN=$BATON_BIN/baton-run
expect_rc 0 "--help" "$RUN" --help
grep -q '^examples:' "$H_DIR/last.out" || h_fail "--help has no examples"
expect_rc 2 "unknown flag" "$RUN" --zk 127.0.0.1:1 --group g --key k --bogus -- true
expect_rc 2 "bad key" "$RUN" --zk 127.0.0.1:1 --group g --key 'a/b' -- true
grep -q "key: 'a/b' is not a key name" "$H_DIR/last.err" || h_fail "bad key message: $(cat "$H_DIR/last.err")"
expect_rc 2 "bad run id" "$RUN" --zk 127.0.0.1:1 --group g --key k --once 'x y' -- true
expect_rc 2 "missing --" "$RUN" --zk 127.0.0.1:1 --group g --key k true
grep -q "missing '-- COMMAND" "$H_DIR/last.err" || h_fail "missing -- message: $(cat "$H_DIR/last.err")"
expect_rc 2 "missing command" "$RUN" --zk 127.0.0.1:1 --group g --key k --
expect_rc 2 "no --key" "$RUN" --zk 127.0.0.1:1 --group g -- true
expect_rc 2 "bad --kill-after-ms" "$RUN" --zk 127.0.0.1:1 --group g --key k --kill-after-ms -1 -- true
expect_rc 127 "command not found" "$RUN" --zk 127.0.0.1:1 --group g --key k -- no-such-command-here
port=$(h_free_port)
expect_rc 1 "ZooKeeper unreachable" "$RUN" --zk "127.0.0.1:$port" --connect-timeout-ms 1000 \
    --group g --key k -- true
grep -q "cannot connect" "$H_DIR/last.err" || h_fail "unreachable message: $(cat "$H_DIR/last.err")"

h_zk_start
b_ctl init --keys counter >/dev/null
expect_rc 1 "no such key" "$RUN" --zk "$ZK" --group "$B_GROUP" --key nokey -- true
grep -q "key 'nokey' does not exist" "$H_DIR/last.err" || h_fail "no key message: $(cat "$H_DIR/last.err")"
expect_rc 1 "no such group" "$RUN" --zk "$ZK" --group nogroup --key counter -- true
h_log "baton-run bad input ok"

# --- member_counter -----------------------------------------------------------
b_coord c1
M=$H_DIR/counter.state
for n in m1 m2; do
    h_spawn "$n" "$BATON_BIN/member_counter" --zk "$ZK" --group "$B_GROUP" --key counter --id "$n" \
        --state "$M" --count 10 --interval-ms 30 --session-timeout-ms 2000
done
for n in m1 m2; do
    rc=0; h_wait_exit "$n" 30 || rc=$?
    ((rc == 0)) || h_fail "$n exited $rc"
done
[[ $(tail -n +2 "$M") == 20 ]] || h_fail "counter is $(tail -n +2 "$M"), wanted 20"
second=$(grep -l 'acquired key=counter .* value=10$' "$H_DIR"/m1.log "$H_DIR"/m2.log) ||
    h_fail "no member continued from 10"
first=$(grep -l 'acquired key=counter .* value=0$' "$H_DIR"/m1.log "$H_DIR"/m2.log) ||
    h_fail "no member started from 0"
e_first=$(sed -n 's/^acquired key=counter epoch=\([0-9]*\) .*/\1/p' "$first")
e_second=$(sed -n 's/^acquired key=counter epoch=\([0-9]*\) .*/\1/p' "$second")
((e_second > e_first)) || h_fail "the second owner's epoch $e_second is not above $e_first"
[[ $(head -n 1 "$M") == "baton-fence epoch=$e_second" ]] || h_fail "counter header: $(head -n 1 "$M")"
h_pass "fence writer, baton-run bad input, member_counter (0 -> 10 @ $e_first, -> 20 @ $e_second)"
