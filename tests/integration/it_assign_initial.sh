#!/usr/bin/env bash
# it_assign_initial: while nothing is assigned yet (the group forms), joins
# that keep coming hold the first rebalance past --max-rebalance-delay-ms,
# up to --initial-max-rebalance-delay-ms (default 10000): a fleet started
# at once is assigned once, to all of it, instead of to its first members
# and then moved. Once something is assigned, the usual bound applies.
#
# Twelve probes join 150 ms apart (1.65 s and more, past the 1 s bound),
# each well within the forming group's quiet period of the one before
# (--initial-rebalance-delay-ms, 2.5 s here): the first publish names all
# twelve, and nothing moves after it. Twelve more joined 300 ms apart
# after that are rebalanced at the 1 s bound, in the middle of the burst: some publish names more than twelve workers and fewer than
# 24. The coordinator's debug log says which bound each scheduled
# rebalance used (event=rebalance_scheduled ... forming=1|0).
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_assign_initial
h_zk_start
b_init 48
# The forming group's quiet period is 2.5 s: a probe that starts slowly
# (a loaded machine, a sanitizer build) must not end the burst early.
b_coord c1 --rebalance-delay-ms 1000 --max-rebalance-delay-ms 1000 --handoff-timeout-ms 0 \
    --initial-rebalance-delay-ms 2500 --log-level debug
h_wait_for 30 "c1 elected" b_log_has c1 "event=elected"
assigned_to() {
    b_jq --argjson n "$1" '(.partitions | length == 48) and all(.partitions[]; .assigned != null) and ([.partitions[].assigned] | unique | length == $n)'
}
published() { grep 'event=published ' "$H_DIR/c1.log" | sed 's/.*event=published //' || true; }
workers_of() { grep -o ' workers=[0-9]*' | cut -d= -f2; }

for i in $(seq -w 1 12); do
    b_probe "p$i"
    sleep 0.15
done
h_wait_for 30 "every partition assigned, over the 12 probes" assigned_to 12
sleep 1.5 # any later churn rebalance (there should be none) has run
published >"$H_DIR/first.txt"
h_log "publishes: $(awk '{ print $1, $3, $5 }' "$H_DIR/first.txt" | tr '\n' ';')"
first=$(head -n 1 "$H_DIR/first.txt")
[[ $(workers_of <<<"$first") == 12 ]] ||
    h_fail "the first publish did not wait for the joins: $first"
if tail -n +2 "$H_DIR/first.txt" | grep -v ' moved=0 ' | grep . >/dev/null; then
    h_fail "partitions moved after the first publish: $(tail -n +2 "$H_DIR/first.txt" | tr '\n' ';')"
fi
grep -q 'event=rebalance_scheduled .*forming=1' "$H_DIR/c1.log" ||
    h_fail "no rebalance was scheduled with the initial bound (forming=1)"
n0=$(wc -l <"$H_DIR/first.txt")
s0=$(wc -l <"$H_DIR/c1.log")

# Formed: the same burst is rebalanced at the usual bound, mid-burst.
# 0.3 s apart: 3.3 s and more, so a slow first start cannot squeeze the
# burst under the 1 s bound.
for i in $(seq 13 24); do
    b_probe "p$i"
    sleep 0.3
done
h_wait_for 30 "every partition assigned, over the 24 probes" assigned_to 24
published | tail -n +$((n0 + 1)) >"$H_DIR/second.txt"
h_log "publishes after: $(awk '{ print $1, $3, $5 }' "$H_DIR/second.txt" | tr '\n' ';')"
mid=0
while read -r n; do
    ((n > 12 && n < 24)) && mid=1
done < <(workers_of <"$H_DIR/second.txt")
((mid)) || h_fail "no publish during the second burst: the initial bound applied to a formed group"
if tail -n +"$s0" "$H_DIR/c1.log" | grep 'event=rebalance_scheduled .*forming=1' >/dev/null; then
    h_fail "a formed group's join was scheduled with the initial bound"
fi
h_pass "the first assignment waited for the joins; a formed group's joins kept the usual bound"
