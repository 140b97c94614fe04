#!/usr/bin/env bash
# it_assign_initial_quiet: while nothing is assigned yet (the group forms),
# the debounce's quiet period is --initial-rebalance-delay-ms (default
# 1000), not --rebalance-delay-ms (default 200): a lull in a fleet's joins
# (a ZooKeeper collection pause, a busy host) longer than the usual quiet
# period does not publish to a half-formed group, whose next rebalance
# would move what its first members had just claimed. Once something is
# assigned, the usual quiet period applies again.
#
# 1. Four probes join 100 ms apart, then nothing for 700 ms, then four more
#    (--initial-rebalance-delay-ms 2000: a margin for a loaded machine):
#    the first publish names all eight.
# 2. Formed: a probe joins; it is rebalanced alone (a publish names nine
#    workers), scheduled with the default 200 ms quiet period; then another.
# 3. A coordinator refuses an --initial-rebalance-delay-ms that is not a
#    number, naming the flag.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_initial_quiet
h_zk_start
b_init 40
b_coord c1 --initial-rebalance-delay-ms 2000 --handoff-timeout-ms 0 --log-level debug
h_wait_for 30 "c1 elected" b_log_has c1 "event=elected"
assigned_to() {
    b_jq --argjson n "$1" '(.partitions | length == 40) and all(.partitions[]; .assigned != null) and ([.partitions[].assigned] | unique | length == $n)'
}
published() { grep 'event=published ' "$H_DIR/c1.log" | sed 's/.*event=published //' || true; }
workers_of() { grep -o ' workers=[0-9]*' | cut -d= -f2; }

# --- 1. a lull while the group forms ------------------------------------------
for i in 1 2 3 4; do
    b_probe "p$i"
    sleep 0.1
done
sleep 0.6
for i in 5 6 7 8; do
    b_probe "p$i"
    sleep 0.1
done
h_wait_for 30 "every partition assigned, over the 8 probes" assigned_to 8
# The status can show a publish before its log line is written.
h_wait_for 10 "the first publish logged" grep -q 'event=published ' "$H_DIR/c1.log"
published >"$H_DIR/first.txt"
h_log "publishes: $(awk '{ print $1, $3, $5 }' "$H_DIR/first.txt" | tr '\n' ';')"
first=$(head -n 1 "$H_DIR/first.txt")
[[ $(workers_of <<<"$first") == 8 ]] ||
    h_fail "the first publish did not wait out the lull in the joins: $first"
grep -q 'event=rebalance_scheduled in_ms=2000 forming=1' "$H_DIR/c1.log" ||
    h_fail "no join was scheduled with the initial quiet period (in_ms=2000 forming=1)"
n0=$(wc -l <"$H_DIR/first.txt")

# --- 2. formed: the usual quiet period -----------------------------------------
s0=$(wc -l <"$H_DIR/c1.log")
b_probe p9
# Waited for, not slept on: p9 rebalanced alone (a publish names nine), and
# the rebalance its join scheduled used the usual quiet period.
nine_published() { published | tail -n +$((n0 + 1)) | workers_of | grep -x 9 >/dev/null; }
h_wait_for 30 "a publish naming p9 alone" nine_published
tail -n +"$((s0 + 1))" "$H_DIR/c1.log" | grep 'event=rebalance_scheduled in_ms=200 forming=0' >/dev/null ||
    h_fail "p9's join was not scheduled with the usual quiet period (in_ms=200 forming=0)"
b_probe p10
h_wait_for 30 "every partition assigned, over the 10 probes" assigned_to 10
published | tail -n +$((n0 + 1)) >"$H_DIR/second.txt"
h_log "publishes after: $(awk '{ print $1, $3, $5 }' "$H_DIR/second.txt" | tr '\n' ';')"

# --- 3. a bad value --------------------------------------------------------------
set +e
out=$("$BATON_BIN/baton-coordinator" --zk "$ZK" --group "$B_GROUP" --id bad \
    --initial-rebalance-delay-ms soon 2>&1)
rc=$?
set -e
((rc == 2)) || h_fail "--initial-rebalance-delay-ms soon: exit $rc, expected 2 ($out)"
grep -q -- "initial-rebalance-delay-ms" <<<"$out" || h_fail "the error does not name the flag: $out"
h_pass "a forming group's first publish waited out a 700 ms lull and named all 8; a formed group's join was rebalanced after 200 ms"
