#!/usr/bin/env bash
# it_ctl_watch: `batonctl watch` prints a status per change, driven by
# ZooKeeper watches: joins, assignments, claims, a drain directory created
# later; nothing while nothing changes; --max-updates and --duration-ms
# bound it, SIGINT ends it with 0; on a terminal (a pty from script(1)) it
# redraws, quits on 'q' and on Ctrl-C, and restores the terminal mode.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_ctl_watch
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
OUT=$H_DIR/watch.jsonl
CTL=("$BATON_BIN/batonctl" --zk "$ZK" --group "$B_GROUP" --timeout 5000)
h_spawn watch bash -c 'exec "$@" >"'"$OUT"'"' _ "${CTL[@]}" watch --duration-ms 240000

# complete: the watch output's complete lines (a view being written is not).
complete() { head -n "$(wc -l <"$OUT")" "$OUT"; }
# seen FILTER: some complete line of the watch output satisfies FILTER.
seen() { complete | jq -e -s "any(.[]; $1)" >/dev/null; }
lines() { wc -l <"$OUT"; }

h_wait_for 15 "the first view: nothing owned" seen 'all(.partitions[]; .state == "unowned") and (.partitions | length) == 4'
b_worker w1
h_wait_for 15 "a view with w1 owning everything" seen 'all(.partitions[]; .state == "active" and .owner == "w1")'
h_wait_for 15 "the group is settled" b_all_active 1
# Nothing changes, nothing is printed: no view may look like the one
# before it but for its clock-driven fields (batonctl's watch_face), which
# a poller, or a refresh that found nothing new, would print.
faces_distinct() {
    complete | jq -s -e 'map(del(.time_ms, .generation)
        | .workers |= map(del(.session_age_ms, .state_age_ms))
        | .partitions |= map(del(.session_age_ms, .state_age_ms)))
        | . as $f | all(range(1; length); $f[.] != $f[. - 1])' >/dev/null
}
b_worker w2
h_wait_for 15 "a view with w1 and w2 sharing" seen '([.partitions[].owner] | unique) == ["w1","w2"] and all(.partitions[]; .state == "active")'
h_wait_for 15 "a view with a handoff or the w2 join" seen 'any(.workers[]; .id == "w2")'
# A refresh that shows nothing new prints no view: rewrite the config node
# with the same bytes (its watch fires, the coordinator may republish with
# nothing moved), then make one real change; no view repeats the one
# before it.
h_wait_for 15 "the join settled in the views" seen '.summary.active == 4 and ([.partitions[].owner] | unique) == ["w1","w2"] and ([.partitions[].standby] | all(. != null))'
# The join's follow-up publishes land first (their views would be taken
# for the rewrite's): a second with no new view, waited for.
views_quiet() {
    local a
    a=$(lines)
    sleep 1
    (($(lines) == a))
}
h_wait_for 20 "a second without a new view" views_quiet
h_zk set /baton/g/config "$(h_zk get /baton/g/config)"
sleep 0.5 # apart from the drain below, so the two are not folded into one refresh
# The drains directory does not exist yet: its creation is watched too.
if ! h_zk exists /baton/g/drains; then h_zk create /baton/g/drains '' >/dev/null; fi
h_zk create /baton/g/drains/w2 '' >/dev/null
h_wait_for 15 "a view with w2 draining" seen '.summary.draining == 1 and any(.workers[]; .id == "w2" and .draining)'
faces_distinct || h_fail "watch printed a view the same as the one before it (a refresh that changed nothing, or a poll)"
h_zk delete /baton/g/drains/w2
h_wait_for 15 "a view after the drain ends" seen '.summary.draining == 0 and (.workers | length) == 2'
h_stop w1
h_wait_for 15 "a view without w1" seen '(.workers | map(.id)) == ["w2"] and all(.partitions[]; .owner == "w2" and .state == "active")'
jq -s -e '[.[].generation // 0] | . == sort' "$OUT" >/dev/null || h_fail "generations went backwards across views"
faces_distinct || h_fail "watch printed a view the same as the one before it"
h_kill watch INT
rc=0; h_wait_exit watch 10 || rc=$?
((rc == 0)) || h_fail "watch should exit 0 on SIGINT, got $rc"
h_log "watch printed $(lines) views"

# Bounded runs. Quiet first: the coordinator's last publish of w1's leave
# (the one that deletes w1's assignment node, once w1's member node is gone)
# lands some 200 ms after w1 left, and with standbys the views above can be
# complete before it.
h_wait_for 15 "the coordinator published the group without w1" \
    grep -Eq "event=published .* workers=1 " "$H_DIR/c1.log"
[[ $("${CTL[@]}" watch --max-updates 1 | wc -l) == 1 ]] || h_fail "--max-updates 1 should print one line"
"${CTL[@]}" watch --worker w2 --max-updates 1 | jq -e '(.workers | map(.id)) == ["w2"]' >/dev/null || h_fail "watch --worker"
[[ $("${CTL[@]}" watch --duration-ms 300 | wc -l) == 1 ]] || h_fail "--duration-ms 300 with no change: one view"
rc=0; "${CTL[@]}" watch --max-updates 0 2>/dev/null || rc=$?
((rc == 2)) || h_fail "--max-updates 0 should be a usage error, got $rc"
rc=0; "$BATON_BIN/batonctl" --zk "127.0.0.1:$(h_free_port)" --group g --timeout 1000 watch --max-updates 1 2>/dev/null || rc=$?
((rc == 1)) || h_fail "watch with ZooKeeper unreachable should exit 1, got $rc"
"${CTL[@]}" watch --help | grep '^examples:' >/dev/null || h_fail "watch --help has no examples"

# On a terminal: redraw, 'q' quits, Ctrl-C quits, the terminal is restored.
for key in q ctrl-c; do
    fifo=$H_DIR/tty-$key.in ts=$H_DIR/tty-$key.out
    mkfifo "$fifo"
    : >"$ts"
    printf -v cmd '%q ' "${CTL[@]}"
    exec 3<>"$fifo" # read-write: never blocks, and keeps the pty's input open
    # script(1) runs the command with $SHELL: bash, whose wait survives the
    # pty's SIGINT when the child handles it (dash would die of it, and
    # never print watch-rc).
    h_spawn "tty-$key" env SHELL=/bin/bash bash -c 'exec script -q -f -e -c "$1" "$2" <"$3"' _ \
        "${cmd}watch --duration-ms 60000; echo watch-rc=\$?; stty -a" "$ts" "$fifo"
    h_wait_for 15 "the screen is drawn on the pty ($key)" grep -q '^states: ' "$ts"
    grep -q 'q to quit' "$ts" || h_fail "no title line on the terminal"
    if [[ $key == q ]]; then printf q >&3; else printf '\003' >&3; fi
    h_wait_for 15 "watch quits on $key" grep -q 'watch-rc=[0-9]' "$ts"
    grep -q 'watch-rc=0' "$ts" || h_fail "watch exit status on $key: $(grep -a watch-rc "$ts")"
    h_wait_for 10 "stty output" grep -q 'icanon' "$ts"
    grep -Eq '(^| )icanon( |$)' "$ts" && ! grep -Eq '(^| )-icanon( |$)' "$ts" || h_fail "terminal left without icanon after $key"
    grep -Eq '(^| )echo( |$)' "$ts" && ! grep -Eq '(^| )-echo( |$)' "$ts" || h_fail "terminal left without echo after $key"
    exec 3>&-
    rc=0; h_wait_exit "tty-$key" 10 || rc=$?
done
h_pass "views per change from watches, none while idle, bounds, SIGINT, q and Ctrl-C on a terminal"
