# shellcheck shell=bash
# baton.sh: helpers for tests and the demo that drive baton's own binaries,
# on top of harness.sh (source that first). They read ownership from
# `batonctl status --json` and the sink with the sqlite3 CLI.

: "${B_GROUP:=g}"
: "${B_TOPIC:=in}"
: "${B_SESSION_MS:=2000}"

# b_ctl ARGS...: batonctl against this test's ZooKeeper and group.
b_ctl() { "$BATON_BIN/batonctl" --zk "$ZK" --group "$B_GROUP" --timeout 5000 "$@"; }

# b_init PARTITIONS: initialises the group on topic $B_TOPIC.
b_init() { b_ctl init --topic "$B_TOPIC" --partitions "${1:?b_init PARTITIONS}" >/dev/null; }

# b_coord NAME [EXTRA...]: starts a coordinator with id NAME.
b_coord() {
    local name=${1:?b_coord NAME}
    shift
    h_spawn "$name" "$BATON_BIN/baton-coordinator" --zk "$ZK" --group "$B_GROUP" --id "$name" \
        --session-timeout-ms "$B_SESSION_MS" "$@"
}

# b_probe NAME [EXTRA...]: starts tests/integration/member_probe (a
# member-library client printing its callbacks) with id NAME.
b_probe() {
    local name=${1:?b_probe NAME}
    shift
    h_spawn "$name" "${BATON_TESTS_BIN:?}/member_probe" --zk "$ZK" --group "$B_GROUP" --id "$name" \
        --session-timeout-ms "$B_SESSION_MS" "$@"
}

# b_worker NAME [EXTRA...]: starts a worker with id NAME writing to $B_SINK.
b_worker() { b_worker_as "${1:?b_worker NAME}" "$@"; }

# b_worker_as NAME ID [EXTRA...]: the same, the process named NAME (its
# log: NAME.log) with worker id ID (a second process with a taken id).
b_worker_as() {
    local name=${1:?b_worker_as NAME ID} id=${2:?b_worker_as NAME ID}
    shift 2
    h_spawn "$name" "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "$id" \
        --brokers "$BOOTSTRAP" --sink "sqlite:$B_SINK" --session-timeout-ms "$B_SESSION_MS" \
        --linger-ms 10 "$@"
}

# b_expect_refused NAME ID PATTERN [EXTRA...]: starts a worker NAME with id
# ID (b_worker_as) and fails the test unless it exits 1 within B_REFUSE_S
# seconds (default 20) with PATTERN (grep -E) in its log. Another
# environment for it goes before the call:
#   BATON_STATE_DIR=$H_DIR/other-host b_expect_refused dup w2 'held by' --member-wait-ms 1500
b_expect_refused() {
    local name=${1:?b_expect_refused NAME ID PATTERN} id=${2:?b_expect_refused NAME ID PATTERN}
    local pattern=${3:?b_expect_refused NAME ID PATTERN} rc=0
    shift 3
    b_worker_as "$name" "$id" "$@"
    h_wait_exit "$name" "${B_REFUSE_S:-20}" || rc=$?
    ((rc == 1)) || h_fail "$name, a second worker '$id': exit $rc, want 1 (refused)"
    b_log_has "$name" "$pattern" || h_fail "$name, a second worker '$id': no refusal matching: $pattern"
}

# b_status: the status JSON on stdout.
b_status() { b_ctl status --json; }

# b_jq FILTER: runs a jq filter on the current status (-e: false/null fails).
b_jq() { b_status | jq -e "$@"; }

# b_all_active [N_WORKERS]: every partition active with its assigned owner
# (and, if given, exactly N live workers holding them).
b_all_active() {
    local s
    s=$(b_status) || return 1
    jq -e '(.partitions | length > 0) and all(.partitions[]; .state == "active" and .owner == .assigned)' \
        <<<"$s" >/dev/null || return 1
    if [[ -n ${1:-} ]]; then
        jq -e --argjson n "$1" '(.workers | length == $n) and ([.partitions[].owner] | unique | length == $n)' \
            <<<"$s" >/dev/null || return 1
    fi
}

# b_owner P: the current owner of partition P ("null" if none).
b_owner() { b_status | jq -r --argjson p "${1:?}" '.partitions[] | select(.partition == $p) | .owner'; }
# b_epoch P: the current epoch of partition P.
b_epoch() { b_status | jq -r --argjson p "${1:?}" '.partitions[] | select(.partition == $p) | .epoch'; }
# b_partitions_of W: the partitions W owns, space separated.
b_partitions_of() {
    b_status | jq -r --arg w "${1:?}" '[.partitions[] | select(.owner == $w) | .partition] | map(tostring) | join(" ")'
}

# b_sql SQL: a query on the sink.
b_sql() { sqlite3 -bail "$B_SINK" ".timeout 5000" "$1"; }

# b_sink_count: rows in baton_output for the group.
b_sink_count() { b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP'"; }

# b_sink_has N: true once the sink holds at least N rows.
b_sink_has() { (($(b_sink_count 2>/dev/null || echo 0) >= ${1:?})); }

# b_log_has NAME PATTERN: true if NAME's log matches PATTERN (grep -E).
b_log_has() { grep -Eq -- "${2:?}" "$H_DIR/${1:?}.log"; }

# b_log_since NAME LINE PATTERN: the first line of NAME's log after line
# LINE (a count taken before the event: wc -l) matching PATTERN (grep -E);
# false if none.
b_log_since() { tail -n +$((${2:?} + 1)) "$H_DIR/${1:?}.log" | grep -m1 -E -- "${3:?}"; }

# b_heard_ms LINE: for an event=zk_silent line, when the worker's latest
# answered ZooKeeper request was sent (its ts= less silent_ms, epoch ms):
# the server heard it last no earlier, so its session lives at least the
# session timeout after that.
b_heard_ms() {
    local t
    t=$(b_ts_ms "$1") && [[ $1 =~ " silent_ms="([0-9]+) ]] && echo $((t - BASH_REMATCH[1]))
}

# b_ts_ms LINE: a log line's ts= as epoch milliseconds.
b_ts_ms() { [[ $1 =~ ts=([0-9T:.-]+)Z ]] && date -d "${BASH_REMATCH[1]}Z" +%s%3N; }

# b_ts_of NAME PATTERN [AFTER_MS]: the time (epoch ms) of NAME's first log
# line matching PATTERN (grep -E) at or after AFTER_MS; empty if none.
b_ts_of() {
    local line t
    while IFS= read -r line; do
        t=$(b_ts_ms "$line") || continue
        ((t >= ${3:-0})) && { echo "$t"; return 0; }
    done < <(grep -E -- "$2" "$H_DIR/$1.log")
    return 0
}

# b_scrape ADDR: the /metrics page at ADDR. b_metric ADDR NAME[{LABELS}]:
# one sample's value ("" if absent); b_metric_is ADDR NAME VALUE: it equals VALUE.
b_scrape() { curl -sS --max-time 5 "http://$1/metrics"; }
b_metric() { b_scrape "$1" | b_metric_in "$2"; }
# b_metric_in NAME[{LABELS}]: the same, from a page on stdin (one scrape,
# several samples read from it).
b_metric_in() { awk -v n="$1" '$1 == n { print $2 }'; }
b_metric_is() { [[ $(b_metric "$1" "$2") == "$3" ]]; }
# b_counter ADDR NAME: a counter's value, 0 before its first increment.
b_counter() {
    local v
    v=$(b_metric "$1" "$2")
    echo "${v:-0}"
}

# Claims queues (standby.claim=ahead): b_claims_dir P: P's claims
# directory; b_claims P: its claims, lowest first (claim-SESSION-SEQUENCE:
# by sequence); b_queue P: the workers of P's claims, lowest first, space
# separated; b_queued_ahead N: N workers share every partition and each
# queue is "owner standby" as status names them.
b_claims_dir() { echo "/baton/$B_GROUP/partitions/${1:?}/claims"; }
b_claims() { h_zk ls "$(b_claims_dir "$1")" | sort -t- -k3,3; }
b_queue() {
    local c out=""
    for c in $(b_claims "$1"); do
        out+="$(h_zk get "$(b_claims_dir "$1")/$c" | jq -r .worker) "
    done
    echo "${out% }"
}
b_queued_ahead() {
    local s p owner sb
    b_all_active "$@" || return 1
    s=$(b_status) || return 1
    for ((p = 0; p < B_PARTITIONS; p++)); do
        owner=$(jq -r --argjson p $p '.partitions[] | select(.partition == $p) | .owner' <<<"$s")
        sb=$(jq -r --argjson p $p '.partitions[] | select(.partition == $p) | .standby' <<<"$s")
        [[ $sb != null && $(b_queue $p) == "$owner $sb" ]] || return 1
    done
}

# b_part_states NAME P: the partition states worker NAME logged for
# partition P (it must run with --log-level debug), one "from>to:reason "
# per transition, oldest first; empty if none.
b_part_states() {
    { grep -E "event=partition_state partition=${2:?} " "$H_DIR/${1:?}.log" || true; } |
        sed -E 's/.* from=([a-z_]+) to=([a-z_]+) reason=([a-z_]+).*/\1>\2:\3/' | tr '\n' ' '
}

# b_member_states NAME LABEL: the resource states NAME's member library
# logged (event=member_state, at debug) for LABEL ("partition=3",
# "key=nightly"), as b_part_states does.
b_member_states() {
    { grep -E "event=member_state ${2:?} " "$H_DIR/${1:?}.log" || true; } |
        sed -E 's/.* from=([a-z_]+) to=([a-z_]+) reason=([a-z_]+).*/\1>\2:\3/' | tr '\n' ' '
}

# b_produce COUNT [PREFIX] [RATE]: produces COUNT records round robin.
b_produce() {
    "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
        --partitions "${B_PARTITIONS:?set B_PARTITIONS}" --count "${1:?}" --prefix "${2:-v}" \
        --rate "${3:-0}" >/dev/null
}
