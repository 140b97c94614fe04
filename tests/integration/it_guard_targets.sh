#!/usr/bin/env bash
# it_guard_targets: operator commands refuse workers the group never saw.
#   - drain, undrain, pin and evict of an id that is neither live nor known
#     exit 1 naming the live workers, and change no drain and no pin
#   - --force accepts it (a worker that is about to start) for drain and pin;
#     the human status then shows those drains and pins under "not live:"
#   - a worker that left is still known (the history names it, so does its
#     drain): drain and undrain of it need no --force
#   - --force is a usage error for unpin (it names no worker)
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_guard_targets
h_zk_start
B_PARTITIONS=4
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
b_coord c1
b_worker w1
b_worker w2
h_wait_for 20 "w1 and w2 own everything" b_all_active 2

# intents: the drains and the pins, as status --json shows them.
intents() { b_status | jq -c '{drains: (.drains | sort), pins: [.partitions[].pinned]}'; }
# refused OUT ARGS...: batonctl ARGS exits 1, its stderr (in OUT) names the
# unknown worker and the live ones, and no drain or pin changed.
refused() {
    local out=$1 rc=0 before after
    shift
    before=$(intents)
    b_ctl "$@" >"$out.stdout" 2>"$out" || rc=$?
    ((rc == 1)) || h_fail "batonctl $* exited $rc, wanted 1: $(cat "$out")"
    grep -q "live workers: w1, w2" "$out" || h_fail "batonctl $*: the live workers are not named: $(cat "$out")"
    after=$(intents)
    [[ $after == "$before" ]] || h_fail "batonctl $* changed the intents: $before -> $after"
}

refused "$H_DIR/drain.err" drain nosuch
grep -q "worker 'nosuch' is neither live nor known to group $B_GROUP" "$H_DIR/drain.err" ||
    h_fail "unclear drain refusal: $(cat "$H_DIR/drain.err")"
grep -q -- "--force" "$H_DIR/drain.err" || h_fail "the refusal does not mention --force"
refused "$H_DIR/pin.err" pin 0 nosuch
refused "$H_DIR/undrain.err" undrain nosuch
refused "$H_DIR/evict.err" evict nosuch
grep -q "worker 'nosuch' is not a live member of group $B_GROUP.*never known it" "$H_DIR/evict.err" ||
    h_fail "unclear evict refusal: $(cat "$H_DIR/evict.err")"
[[ $(intents) == '{"drains":[],"pins":[null,null,null,null]}' ]] ||
    h_fail "after the refusals the group has intents: $(intents)"
h_log "unknown targets refused, nothing written"

# --force: for a worker that is about to start.
b_ctl drain nosuch --force >"$H_DIR/force.out" 2>"$H_DIR/force.err" || h_fail "drain --force failed: $(cat "$H_DIR/force.err")"
grep -q "draining nosuch" "$H_DIR/force.out" || h_fail "drain --force did not confirm"
grep -q "worker nosuch is not live now" "$H_DIR/force.err" || h_fail "no note that nosuch is not live"
b_ctl pin 1 ghost --force >/dev/null 2>&1 || h_fail "pin --force failed"
b_ctl pin 3 ghost --force >/dev/null 2>&1 || h_fail "pin --force failed"
[[ $(intents) == '{"drains":["nosuch"],"pins":[null,"ghost",null,"ghost"]}' ]] ||
    h_fail "the forced drain and pins are not there: $(intents)"
# Once known (drained, pinned), no --force is needed.
b_ctl pin 2 nosuch >/dev/null 2>&1 || h_fail "pin to a drained worker was refused"
b_ctl unpin 2 >/dev/null || h_fail "unpin failed"

b_ctl status >"$H_DIR/status.txt" || h_fail "status failed"
cat "$H_DIR/status.txt" >&2
grep -q "^workers: *2 live, 0 draining" "$H_DIR/status.txt" || h_fail "unexpected workers line"
grep -q "^not live: *nosuch: drained; ghost: pinned 1,3$" "$H_DIR/status.txt" ||
    h_fail "the human status does not show the absent worker's drain and pins"
# The pins of an absent worker leave the partitions to the live ones.
h_wait_for 15 "the group stays all active" b_all_active 2
h_log "--force accepted; status shows the absent drain and pins"

# A worker that left is known (the history names it): no --force needed.
h_stop w2
h_wait_exit w2 0 || true
h_wait_for 20 "w1 owns everything" b_all_active 1
b_ctl drain w2 >/dev/null 2>"$H_DIR/w2.err" || h_fail "drain of a worker that left was refused: $(cat "$H_DIR/w2.err")"
grep -q "worker w2 is not live now" "$H_DIR/w2.err" || h_fail "no note that w2 is not live: $(cat "$H_DIR/w2.err")"
b_ctl undrain w2 >/dev/null 2>&1 || h_fail "undrain w2 failed"
b_ctl undrain nosuch | grep "undrained nosuch" >/dev/null || h_fail "undrain of a drained absent worker failed"
# Refused with one live worker: the list names it alone.
rc=0
b_ctl drain typo 2>"$H_DIR/typo.err" || rc=$?
((rc == 1)) && grep -q "live workers: w1)" "$H_DIR/typo.err" || h_fail "drain typo: rc $rc $(cat "$H_DIR/typo.err")"
[[ $(intents) == '{"drains":[],"pins":[null,"ghost",null,"ghost"]}' ]] ||
    h_fail "unexpected intents at the end: $(intents)"

# --force names no worker for unpin: a usage error.
rc=0
b_ctl unpin 1 --force 2>"$H_DIR/unpin.err" || rc=$?
((rc == 2)) && grep -q -- "--force" "$H_DIR/unpin.err" || h_fail "unpin --force: rc $rc $(cat "$H_DIR/unpin.err")"
h_pass "unknown targets refused naming the live workers; --force, status and known workers"
