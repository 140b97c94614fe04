#!/usr/bin/env bash
# run.sh: baton's benchmarks, one command each (see docs/benchmarks.md).
#
#   bench/run.sh rebalance    baton (its defaults, and hot standbys) vs a librdkafka consumer
#                             group (range, cooperative-sticky)
#   bench/run.sh throughput   records/s topic -> SQLite sink: baton-worker vs a plain consumer
#                             (BENCH_SINK=redis: baton-worker into SQLite vs into Redis)
#   bench/run.sh scale        10,000 partitions over 100 simulated workers on a real ZooKeeper
#   bench/run.sh rolling      rolling restart of every worker: baton vs cooperative-sticky and static
#   bench/run.sh bigworker    idle CPU of a baton-worker holding 1% of a 100,000-partition group
#                             vs a plain consumer assigned as many partitions of the same topic
#
# Each starts what it needs on loopback (tests/lib/harness.sh: ZooKeeper,
# the embedded Kafka, processes stopped by pid), prints a table and a final
# "RESULT key=value ..." line on stdout (progress goes to stderr), and
# cleans up after itself. BATON_BIN selects the binaries (default
# build/bin; measure a RelWithDebInfo build). Not run by ctest: these
# measure, the tests assert.
set -euo pipefail
BATON_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BATON_SRC
source "$BATON_SRC/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/bench/lib.sh"

usage() {
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    echo
    echo "environment: BENCH_RUNS (rebalance repetitions, default 5), BENCH_RATE (records/s"
    echo "  produced during rebalance, default 6000), BENCH_HOT_ARGS (the hot standbys' worker flags,"
    echo "  default \"$RB_HOT_DEFAULT\"), BENCH_WARMUP (rebalance: uncounted baton runs"
    echo "  first, default 1), BENCH_RECORDS and BENCH_TP_RUNS (throughput,"
    echo "  default 1000000 records, 5 runs of each: shorter runs vary too much to compare),"
    echo "  BENCH_PARTITIONS / BENCH_WORKERS (scale, default 10000 / 100; BENCH_STANDBY_CLAIM: the"
    echo "  members' standby.claim, takeover (the default) or ahead; BENCH_COORD_ARGS: extra"
    echo "  baton-coordinator flags; BENCH_SCALE_SESSION_MS: the members' session timeout;"
    echo "  BENCH_SCALE_THREADS: the member process's joining threads; BENCH_ZK_HEAP_MB: its"
    echo "  ZooKeeper's heap), BENCH_SYSTEMS"
    echo "  (rebalance, default \"baton hot range coop static\"), BENCH_REBALANCE_DELAY_MS (coordinator's"
    echo "  --rebalance-delay-ms; default: its own), BENCH_WORKER_ARGS (extra baton-worker flags),"
    echo "  BENCH_TP_WORKERS (throughput: baton-workers, and plain consumers splitting the partitions,"
    echo "  default 1), BENCH_TP_WORKER_ARGS (throughput: extra flags of those workers, e.g."
    echo "  \"--standby-prefetch on\"),"
    echo "  BENCH_SINK=redis (throughput: SQLite and Redis side by side), BENCH_REDIS_FSYNC (its"
    echo "  appendfsync: everysec, the default, or always), BENCH_SINK_DIR (rebalance: an existing"
    echo "  directory for every system's SQLite sink file instead of the run's own, e.g. /dev/shm to"
    echo "  take the disk's fsync out of the handoff; default: the run's directory),"
    echo "  BENCH_PRODUCER_LINGER_MS (rebalance: the producer's linger.ms, default 5),"
    echo "  BENCH_INPUT_NICE (rebalance and rolling: the nice value of the embedded Kafka and the"
    echo "  producer, default 0: unchanged),"
    echo "  BENCH_REBALANCE_SINK (rebalance: baton's sink, sqlite, the default, or postgresql: a"
    echo "  throwaway server with fsync on; the Kafka groups keep their SQLite files)"
    echo "  rolling: BENCH_ROLL_SETUPS (PARTITIONSxWORKERS, default \"12x3 48x6\"), BENCH_ROLL_SYSTEMS"
    echo "  (default \"baton coop static\"), BENCH_ROLL_RATE (records/s per partition, default 100),"
    echo "  BENCH_ROLL_STEADY_S (steady window before the roll, default 5), BENCH_ROLL_SINK (baton's"
    echo "  sink: sqlite, the default, or postgresql: a throwaway server with fsync on), BENCH_ROLL_TRACE"
    echo "  (1: baton's workers log at debug, and the longest gaps are taken apart; default 0)"
    echo "  bigworker: BENCH_BIG_PARTITIONS (default 100000), BENCH_BIG_MEMBERS (simulated members"
    echo "  beside the worker, default 99), BENCH_BIG_WINDOW_S (the idle window, default 10)"
    echo "  BENCH_WATCH_US (how often a sink watcher polls, in us, where the benchmark sets none;"
    echo "  default 1000)"
}

# --- rebalance -----------------------------------------------------------------

declare -gA KG_OWNER=()
KG_NEXT_ID=0
RB_PARTS=12
RB_SESSION_MS=3000
# The "hot" system: baton with hot standbys (docs/configuration.md,
# standby.claim, standby.prefetch and standby.notice). fetch.wait.max.ms=2: the embedded
# Kafka (librdkafka's mock broker) holds a fetch that found nothing for the
# whole of it, even when records arrive meanwhile, where a real broker
# answers as they arrive (docs/benchmarks.md).
RB_HOT_DEFAULT="--standby-claim ahead --standby-prefetch on --standby-notice 127.0.0.1:0 --kafka fetch.wait.max.ms=2"

# rb_baton SYS: SYS is baton run by baton (baton, or hot: with hot standbys).
rb_baton() { [[ $1 == baton || $1 == hot ]]; }

# rb_start SYS NAME: starts member NAME of system SYS (baton, range, coop).
rb_start() {
    local sys=$1 name=$2
    if rb_baton "$sys"; then
        local hot=""
        [[ $sys == hot ]] && hot=${BENCH_HOT_ARGS:-$RB_HOT_DEFAULT}
        # BENCH_WORKER_ARGS: extra baton-worker flags (e.g. --kafka k=v).
        # shellcheck disable=SC2086
        b_worker "$name" --batch-size 500 $hot ${BENCH_WORKER_ARGS:-}
    else
        KG_NEXT_ID=$((KG_NEXT_ID + 1))
        KG_OWNER[$name]=$KG_NEXT_ID
        local assignor=range
        local -a extra=()
        [[ $sys == coop || $sys == static ]] && assignor=cooperative-sticky
        # static: KIP-345 static membership (group.instance.id = the name).
        [[ $sys == static ]] && extra=(--instance-id "$name")
        h_spawn "$name" "$BATON_BIN/baton-bench-kgroup" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
            --partitions $RB_PARTS --group "kg-$sys" --id "$KG_NEXT_ID" --sink "$RB_SINK_DIR/$sys-$RB_RUN.db" \
            --assignor "$assignor" --session-timeout-ms $RB_SESSION_MS --batch-size 500 --linger-ms 10 \
            "${extra[@]}"
    fi
}

# rb_parts_of SYS NAME: the partitions NAME owns now.
rb_parts_of() {
    if rb_baton "$1"; then
        b_partitions_of "$2"
    else
        bench_owned_by "$H_DIR/watch-$1.log" "${KG_OWNER[$2]}"
    fi
}

# rb_owns SYS NAME: NAME owns (baton) or writes (Kafka) some partition.
rb_owns() { [[ -n $(rb_parts_of "$1" "$2" | tr -d ' ') ]]; }

# rb_min_ms SYS EVENT: how long an event takes at least before we look for
# a steady flow again (a Kafka member's rebalance starts at its next
# heartbeat; a crash is detected after the session timeout).
rb_min_ms() {
    case $1:$2 in
    baton:crash | hot:crash) echo $((RB_SESSION_MS + 1000)) ;;
    static:restart) echo $((RB_SESSION_MS + 3500)) ;;
    baton:* | hot:*) echo 1000 ;;
    *:leave) echo 3000 ;;
    *:join) echo 5000 ;;
    *:crash) echo $((RB_SESSION_MS + 3500)) ;;
    esac
}

# rb_loss SYS NAME SIG EVENT: stops NAME with SIG; appends the time until
# each of its partitions has a new owner writing to RB_<EVENT>_<SYS>.
rb_loss() {
    local sys=$1 name=$2 sig=$3 ev=$4 w=$H_DIR/watch-$1.log parts t0 tend v
    # A Kafka group's cooperative rebalance after the previous join can
    # still be handing partitions over when the flow looks steady (once,
    # 2026-12-02: "coop: m2 owns no partition before crash"): wait for
    # NAME to be writing some.
    h_wait_for 15 "$sys: $name writes partitions before $ev" rb_owns "$sys" "$name" ||
        h_fail "$sys: $name owns no partition before $ev"
    parts=$(rb_parts_of "$sys" "$name")
    # A baton leave is taken apart at the input (bench_input_ms): an
    # observer of the leaver's partitions only, and only around the leave
    # (another consumer fetching all along would load the embedded Kafka,
    # whose every fetch walks the log), caught up before the SIGTERM.
    local arr=""
    if [[ $ev == leave ]] && rb_baton "$sys"; then
        arr=$H_DIR/arrivals-$sys.log
        local from=1 only pl
        [[ -f $arr ]] && from=$(($(wc -l <"$arr") + 1))
        read -ra pl <<<"$parts"
        only=$(IFS=,; echo "${pl[*]}")
        h_spawn "arrivals-$sys" "$BATON_BIN/baton-bench-arrivals" --brokers "$BOOTSTRAP" \
            --topic "$B_TOPIC" --partitions $RB_PARTS --only "$only"
        # An extra measure: without it the leave is measured all the same.
        if h_wait_for 10 "$sys: the input's observer sees partitions $parts" \
            rb_arrivals_seen "$arr" "$from" "$parts"; then
            # Its start (threads, connection, the broker's new client) and
            # the wait's polling are over before the clock starts.
            sleep 0.5
        else
            h_log "$sys: baton-bench-arrivals saw no records of $parts: no input figures for this leave"
            h_stop "arrivals-$sys"
            arr=""
        fi
    fi
    # The clock starts right at the kill: no subshell or liveness check
    # (a few ms of bash on these machines) in between.
    local pid=${H_PIDS[$name]}
    _h_alive "$pid" || h_fail "$sys: $name is not running before $ev"
    t0=${EPOCHREALTIME/./}
    kill -s "$sig" "$pid"
    bench_settle "$w" $RB_PARTS "$(rb_min_ms "$sys" "$ev")" 30 || h_fail "$sys: no steady flow after $ev of $name"
    tend=$(bench_now_us)
    v=$(bench_handoff_ms "$w" "$t0" "$tend" "$parts")
    ((v >= 0)) || h_fail "$sys: a partition of $name ($parts) never got a new writer after $ev"
    # baton's successors fence the sink before their first write: the time
    # until every moved partition is fenced is the coordination's part, the
    # rest is waiting for records to write (the producer's next record and
    # the embedded Kafka's delivery of it). A Kafka group has no fence.
    local f=""
    if rb_baton "$sys"; then
        f=$(bench_handoff_ms "$w" "$t0" "$tend" "$parts" fenced)
        eval "RB_${ev}fenced_${sys}+=(\"\$f\")"
    fi
    # A leave taken apart at the input: when the first record each moved
    # partition's successor had to write reached a consumer, and how long
    # after that it was written.
    local inp="" aft=""
    if [[ -n $arr ]]; then
        h_stop "arrivals-$sys"
        # This run's lines only (the log is appended to across runs).
        read -r inp aft < <(bench_input_ms "$w" <(tail -n +"$from" "$arr") "$t0" "$tend" "$parts")
        if [[ -z $inp || $inp == - ]]; then inp=""; else eval "RB_leaveinput_${sys}+=(\"\$inp\"); RB_leaveafter_${sys}+=(\"\$aft\")"; fi
    fi
    local rc=0
    h_wait_exit "$name" 15 || rc=$?
    # A graceful leave's ZooKeeper part: until the leaver's claims were
    # deleted (its flush, then the multi), as its own log says; and when it
    # acted on the SIGTERM (its loop came round: event=stopping).
    local r="" s=""
    if [[ $ev == leave ]] && rb_baton "$sys"; then
        r=$(rb_released_ms "$H_DIR/$name.log" "$t0") && eval "RB_leavereleased_${sys}+=(\"\$r\")"
        s=$(rb_log_event_ms "$H_DIR/$name.log" "$t0" stopping) && eval "RB_leavestopping_${sys}+=(\"\$s\")"
    fi
    h_log "$sys $ev $name (partitions $parts): ${v} ms${f:+ (fenced after $f ms)}${s:+ (stopping after $s ms)}${r:+ (claims deleted after $r ms)}${inp:+ (input after $inp ms, written $aft ms after its input)} (exit $rc)"
    eval "RB_${ev}_${sys}+=(\"\$v\")"
}

# rb_arrivals_seen LOG FROM "P...": LOG, from line FROM on, has an arrival of
# every listed partition.
rb_arrivals_seen() {
    tail -n +"$2" "$1" 2>/dev/null | awk -v plist="$3" '
        BEGIN { n = split(plist, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        $1 == "a" && ($3 in want) { seen[$3] = 1 }
        END { for (p in want) if (!(p in seen)) exit 1 }'
}

# rb_released_ms LOG T0_US: ms from T0 (wall-clock us) until the last
# event=released a worker logged at or after it: called once the leaver has
# exited, that is its graceful leave's last claim deleted (all of them at
# once when the multi went through; one by one if it failed). Log stamps
# are whole ms (truncated) and the result is floored, as
# bench_handoff_ms's: up to 2 ms below the exact time. Fails if no such
# line (a JSON log, say).
rb_released_ms() { rb_log_event_ms "$1" "$2" released; }

# rb_log_event_ms LOG T0_US EVENT: the same for the last event=EVENT line.
rb_log_event_ms() {
    local log=$1 t0=$2 line ms
    line=$(grep -a " event=$3 " "$log" 2>/dev/null | tail -n 1) || return 1
    [[ $line =~ ^ts=([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+)Z ]] || return 1
    ms=$(date -u -d "${BASH_REMATCH[1]}" +%s%3N 2>/dev/null) || return 1
    ((ms * 1000 >= t0 - 999)) || return 1
    echo $(((ms * 1000 - t0) / 1000 < 0 ? 0 : (ms * 1000 - t0) / 1000))
}

# rb_join SYS NAME: starts NAME; appends the pause of partitions that did
# not move to RB_join_<SYS>.
rb_join() {
    local sys=$1 name=$2 w=$H_DIR/watch-$1.log t0 tend v
    t0=$(bench_now_us)
    rb_start "$sys" "$name"
    bench_settle "$w" $RB_PARTS "$(rb_min_ms "$sys" join)" 30 || h_fail "$sys: no steady flow after $name joined"
    tend=$(bench_now_us)
    read -r v raw base < <(bench_pause_ms "$w" "$t0" "$tend")
    h_log "$sys join $name: unaffected pause ${v} ms (longest gap ${raw} ms, steady ${base} ms)"
    eval "RB_join_${sys}+=(\"\$v\")"
}

# rb_restart SYS NAME: SIGKILLs NAME and starts it again at once with the
# same id (baton: the same id and state directory, so it takes over its dead
# incarnation; static: the same group.instance.id); appends the time from
# the kill until each of its partitions is written again (by anyone, with a
# new epoch or owner) to RB_restart_<SYS>.
rb_restart() {
    local sys=$1 name=$2 w=$H_DIR/watch-$1.log parts t0 tend v
    parts=$(rb_parts_of "$sys" "$name")
    [[ -n ${parts// /} ]] || h_fail "$sys: $name owns no partition before restart"
    local pid=${H_PIDS[$name]}
    _h_alive "$pid" || h_fail "$sys: $name is not running before restart"
    t0=${EPOCHREALTIME/./}
    kill -s KILL "$pid"
    h_wait_exit "$name" 10 >/dev/null 2>&1 || true
    rb_start "$sys" "$name"
    bench_settle "$w" $RB_PARTS "$(rb_min_ms "$sys" restart)" 30 || h_fail "$sys: no steady flow after restarting $name"
    tend=$(bench_now_us)
    v=$(bench_handoff_ms "$w" "$t0" "$tend" "$parts")
    ((v >= 0)) || h_fail "$sys: a partition of $name ($parts) was never written again after its restart"
    h_log "$sys restart $name (partitions $parts): ${v} ms"
    eval "RB_restart_${sys}+=(\"\$v\")"
}

# rb_run SYS RUN: one run of SYS (RUN names its group and sink).
rb_run() {
    local sys=$1
    rb_env_up "$sys" "$2"
    if [[ $sys == static ]]; then
        rb_restart "$sys" m2 # static membership is compared on restarts only
    else
        rb_loss "$sys" m1 TERM leave
        rb_join "$sys" m1
        rb_loss "$sys" m2 KILL crash
        rb_join "$sys" m2
        if rb_baton "$sys"; then rb_restart "$sys" m2; fi
    fi
}

# rb_warmup: BENCH_WARMUP (default 1) runs of baton before the first
# baton system's counted runs, not counted: the one process every run
# shares is the benchmark's ZooKeeper, a fresh JVM whose first leave was
# fenced in 8-14 ms where the later ones took 3-10 (2026-12-05; its code
# not yet compiled is the likeliest cause), where a production ensemble
# has long been warm. Their leaves are reported apart (RB_cold_handoff,
# RESULT zk_cold_handoff_ms: the first).
RB_WARM_DONE=0
RB_cold_handoff=()
rb_warmup() {
    ((RB_WARM_DONE)) && return 0
    RB_WARM_DONE=1
    local n=${BENCH_WARMUP:-1} i
    for ((i = 1; i <= n; i++)); do
        h_log "== baton warm-up run $i/$n (not counted)"
        RB_leave_baton=()
        rb_run baton "w$i"
        RB_cold_handoff+=("${RB_leave_baton[0]}")
        rb_env_down baton
    done
}

rb_system() {
    local sys=$1 runs=$2 i
    if rb_baton "$sys"; then rb_warmup; fi
    eval "RB_leave_${sys}=(); RB_crash_${sys}=(); RB_join_${sys}=(); RB_restart_${sys}=()"
    eval "RB_leavefenced_${sys}=(); RB_crashfenced_${sys}=(); RB_leavereleased_${sys}=(); RB_leavestopping_${sys}=()"
    eval "RB_leaveinput_${sys}=(); RB_leaveafter_${sys}=()"
    for ((i = 1; i <= runs; i++)); do
        h_log "== $sys run $i/$runs"
        rb_run "$sys" "$i"
        if rb_baton "$sys" && ((i == runs)); then rb_cost_rss "$sys"; fi
        rb_env_down "$sys"
    done
    if rb_baton "$sys"; then rb_cost_reads "$sys"; fi
    return 0
}

# rb_input_nice PID...: BENCH_INPUT_NICE (default 0: unchanged) for every
# thread of the input's processes, the embedded Kafka and the producer (nice
# is per thread on Linux; threads they start later inherit it).
rb_input_nice() {
    ((RB_INPUT_NICE != 0)) || return 0
    local pid
    local -a tids
    for pid in "$@"; do
        tids=("/proc/$pid/task/"*)
        renice -n "$RB_INPUT_NICE" -p "${tids[@]##*/}" >/dev/null ||
            h_fail "renice -n $RB_INPUT_NICE of pid $pid failed"
    done
}

# rb_env_up SYS RUN: everything run RUN of SYS measures on, started afresh:
# the embedded Kafka and its producer (librdkafka's mock broker finds a
# fetch's offset by walking its partition's log from the start, so its cost
# per fetch grows with the log: kept for a whole benchmark, it took a full
# core after a minute, and every process's latency with it), a sink, and
# for baton a group and its coordinator; then the three members, until the
# flow into the sink is steady.
rb_env_up() {
    local sys=$1
    RB_RUN=$2
    h_kafka_start "$B_TOPIC" $RB_PARTS
    h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
        --partitions $RB_PARTS --count $((RB_RATE * 1200)) --rate "$RB_RATE" --linger-ms "$RB_LINGER"
    rb_input_nice "${H_PIDS[kafka]}" "${H_PIDS[producer]}"
    if rb_baton "$sys"; then
        B_GROUP=g$sys$RB_RUN
        B_SINK=$RB_SINK_DIR/$sys-$RB_RUN.db
        b_init $RB_PARTS
        # The coordinator runs with its defaults: its churn debounce
        # (--rebalance-delay-ms, 200 ms) no longer delays a graceful leave
        # (the leaver's "leaving" mark is acted on at once) nor a lone crash
        # (the first churn after a quiet period is acted on at once).
        # BENCH_REBALANCE_DELAY_MS sets it explicitly.
        b_coord c1 ${BENCH_REBALANCE_DELAY_MS:+--rebalance-delay-ms "$BENCH_REBALANCE_DELAY_MS"}
        # On PostgreSQL every run's group has its rows in the one database.
        bench_watch "watch-$sys" "${RB_PG_URI:-$B_SINK}" "$B_GROUP"
    else
        bench_watch "watch-$sys" "$RB_SINK_DIR/$sys-$RB_RUN.db" "kg-$sys"
    fi
    rb_start "$sys" m1
    rb_start "$sys" m2
    rb_start "$sys" m3
    if rb_baton "$sys"; then
        h_wait_for 30 "baton: 3 workers own everything" b_all_active 3
    fi
    bench_settle "$H_DIR/watch-$sys.log" $RB_PARTS 3000 60 || h_fail "$sys: never steady"
}

# rb_env_down SYS: stops what rb_env_up started.
rb_env_down() {
    local name
    for name in m1 m2 m3 "watch-$1" producer; do h_stop "$name"; done
    if rb_baton "$1"; then h_stop c1; fi
    h_kafka_stop
}

# rb_cost_rss SYS: RB_RSS_KB[SYS], the baton workers' mean resident memory
# (kB) at the end of the last run (each worker at most one run old: every
# run starts afresh; standby.prefetch holds records: its memory cost).
declare -gA RB_RSS_KB=() RB_READ_RATIO=()
rb_cost_rss() {
    local m
    RB_RSS_KB[$1]=$(for m in m1 m2 m3; do awk '/^VmRSS:/ { print $2 }' "/proc/${H_PIDS[$m]}/status"; done |
        awk '{ s += $1 } END { printf "%d", NR ? s / NR : 0 }')
}

# rb_cost_reads SYS: RB_READ_RATIO[SYS], records the baton workers received
# from Kafka per record they wrote, over each one's last incarnation (from
# its exit line): about 1 without standby.prefetch, 2 with it (the standby
# reads what the owner reads).
rb_cost_reads() {
    local m
    RB_READ_RATIO[$1]=$(for m in m1 m2 m3; do grep 'event=stopped ' "$H_DIR/$m.log" | tail -n 1; done |
        awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "records_written") w += kv[2]; if (kv[1] == "records_fetched") f += kv[2] } }
             END { printf "%.2f", f / (w > 0 ? w : 1) }')
}

bench_rebalance() {
    local runs=${BENCH_RUNS:-5} rate=${BENCH_RATE:-6000}
    if [[ -n ${BENCH_SINK_DIR:-} && ! (-d $BENCH_SINK_DIR && -w $BENCH_SINK_DIR) ]]; then
        echo "bench/run.sh rebalance: BENCH_SINK_DIR: '$BENCH_SINK_DIR' is not a writable directory" >&2
        exit 2
    fi
    local rb_sink=${BENCH_REBALANCE_SINK:-sqlite}
    if [[ ! $rb_sink =~ ^(sqlite|postgresql)$ ]]; then
        echo "bench/run.sh rebalance: BENCH_REBALANCE_SINK: '$rb_sink' is not sqlite or postgresql" >&2
        exit 2
    fi
    h_init bench_rebalance
    # Every system's sink file: in the run's directory, or in a directory of
    # its own under BENCH_SINK_DIR, linked from the run's directory as
    # sink-files and kept or removed with it (kept on a failure or with
    # BATON_KEEP=1).
    RB_SINK_DIR=$H_DIR
    if [[ -n ${BENCH_SINK_DIR:-} ]]; then
        RB_SINK_DIR=$(mktemp -d "$BENCH_SINK_DIR/baton-bench.XXXXXX") || h_fail "no directory in $BENCH_SINK_DIR"
        ln -s "$RB_SINK_DIR" "$H_DIR/sink-files"
    fi
    local sink_fs
    sink_fs=$(df --output=fstype "$RB_SINK_DIR" 2>/dev/null | tail -n 1) || sink_fs=""
    h_log "sink files in $RB_SINK_DIR (${sink_fs:=unknown})"
    RB_RATE=$rate
    # The producer's linger.ms: how long each partition's records wait to
    # go in one request. A handoff is written again once the next record
    # comes, so this is part of what it measures (docs/benchmarks.md).
    RB_LINGER=${BENCH_PRODUCER_LINGER_MS:-5}
    [[ $RB_LINGER =~ ^[0-9]+$ ]] || h_fail "BENCH_PRODUCER_LINGER_MS: '$RB_LINGER' is not a number of ms"
    RB_INPUT_NICE=${BENCH_INPUT_NICE:-0}
    if ! [[ $RB_INPUT_NICE =~ ^-?[0-9]+$ ]] || ((RB_INPUT_NICE < -20 || RB_INPUT_NICE > 19)); then
        h_fail "BENCH_INPUT_NICE: '$RB_INPUT_NICE' is not a nice value in -20..19"
    fi
    h_zk_start
    RB_PG_URI=""
    if [[ $rb_sink == postgresql ]]; then
        # baton's workers write to PostgreSQL, durably (the test server's
        # fsync=off would flatter it); one database, a group per run.
        source "$BATON_SRC/tests/lib/pg.sh"
        PG_SERVER_OPTS=(-c fsync=on -c synchronous_commit=on)
        pg_start
        pg_use_sink
        RB_PG_URI=$PG_URI
    fi
    # The day's ZooKeeper, before anything else runs: a 1-byte set 500
    # times, 2 ms apart (its threads idle in between, as a handoff meets
    # them). A handoff waits for two or three such updates in a row, so
    # this bounds what the same code can reach on this machine today.
    local zkl
    zkl=$("$BATON_BIN/baton-zk" --zk "$ZK" latency /bench-zk-latency 500 2000) ||
        h_fail "the ZooKeeper latency probe failed"
    h_log "ZooKeeper alone: $zkl"
    [[ $zkl =~ p50=([0-9.]+).*p99=([0-9.]+) ]] || h_fail "the latency probe said: $zkl"
    local zk_p50=${BASH_REMATCH[1]} zk_p99=${BASH_REMATCH[2]}
    B_SESSION_MS=$RB_SESSION_MS
    B_PARTITIONS=$RB_PARTS
    local sys
    for sys in ${BENCH_SYSTEMS:-baton hot range coop static}; do
        rb_system "$sys" "$runs"
    done

    local -A med=() p99=() n=()
    local ev key
    for sys in baton hot range coop static; do
        for ev in leave crash join restart leavefenced crashfenced leavereleased leavestopping leaveinput leaveafter; do
            key=${ev}_${sys}
            eval "set -- \"\${RB_${key}[@]}\""
            read -r "med[$key]" "p99[$key]" "n[$key]" < <(bench_stats "$@")
        done
    done
    # ratio A B [DECIMALS]: A / B (B 0 counts as 1); - if either is missing.
    ratio() {
        if [[ $1 == - || $2 == - ]]; then echo -; else
            awk -v a="$1" -v b="$2" -v d="${3:-1}" 'BEGIN { printf "%.*f", d, a / (b > 0 ? b : 1) }'
        fi
    }
    # row LABEL EVENT SYSTEMS...: median / p99 of EVENT for each system.
    row() {
        local label=$1 ev=$2 s
        shift 2
        printf '%-44s' "$label"
        for s in "$@"; do printf ' %16s' "${med[${ev}_$s]} / ${p99[${ev}_$s]}"; done
        printf '\n'
    }
    {
        echo
        echo "rebalance: $RB_PARTS partitions, 3 members, ${rate} records/s, failure detection ${RB_SESSION_MS} ms"
        echo "(ZooKeeper session for baton, session.timeout.ms for Kafka), ${runs} runs; ms, median / p99"
        echo "(baton hot: ${BENCH_HOT_ARGS:-$RB_HOT_DEFAULT})"
        printf '%-44s %16s %16s %16s %16s\n' "" "baton" "baton hot" "kafka coop-sticky" "kafka eager range"
        row "graceful leave: leaver's partitions written" leave baton hot coop range
        row "  of which until every one is fenced" leavefenced baton hot
        row "  of which until the leaver's claims are gone" leavereleased baton hot
        row "  of which until the leaver took its SIGTERM" leavestopping baton hot
        row "  the input: until the records to write came" leaveinput baton hot
        row "  written after the records to write came" leaveafter baton hot
        row "crash (SIGKILL): dead member's partitions" crash baton hot coop range
        row "join: pause of partitions that did not move" join baton hot coop range
        row "SIGKILL + restart, same id: written again" restart baton hot static
        echo "(restart's third column is static: cooperative-sticky with group.instance.id on librdkafka's"
        echo "mock cluster, which ignores it: mock_static_membership=0)"
        echo "baton's first leave on a fresh ZooKeeper (warm-up runs, not counted): ${RB_cold_handoff[*]:--} ms"
        echo
        for sys in baton hot; do
            echo "$sys workers: ${RB_RSS_KB[$sys]:--} kB resident each (mean)," \
                "${RB_READ_RATIO[$sys]:--} records read from Kafka per record written"
        done
        echo
        echo "RESULT handoff_ms=${med[leave_baton]} kafka_coop_handoff_ms=${med[leave_coop]}" \
            "handoff_ratio=$(ratio "${med[leave_coop]}" "${med[leave_baton]}")" \
            "failover_ms=${med[crash_baton]} kafka_coop_failover_ms=${med[crash_coop]}" \
            "failover_ratio=$(ratio "${med[crash_coop]}" "${med[crash_baton]}" 2)" \
            "unaffected_pause_ms=${med[join_baton]} kafka_eager_unaffected_pause_ms=${med[join_range]}" \
            "restart_ms=${med[restart_baton]} kafka_static_restart_ms=${med[restart_static]}" \
            "restart_ratio=$(ratio "${med[restart_static]}" "${med[restart_baton]}")" \
            "mock_static_membership=0 handoff_p99_ms=${p99[leave_baton]}" \
            "worker_rss_kb=${RB_RSS_KB[baton]:--} kafka_read_ratio=${RB_READ_RATIO[baton]:--}" \
            "handoff_fenced_ms=${med[leavefenced_baton]} handoff_fenced_p99_ms=${p99[leavefenced_baton]}" \
            "failover_fenced_ms=${med[crashfenced_baton]}" \
            "hot_handoff_ms=${med[leave_hot]} hot_handoff_p99_ms=${p99[leave_hot]}" \
            "hot_handoff_ratio=$(ratio "${med[leave_coop]}" "${med[leave_hot]}")" \
            "hot_handoff_fenced_ms=${med[leavefenced_hot]} hot_handoff_fenced_p99_ms=${p99[leavefenced_hot]}" \
            "handoff_released_ms=${med[leavereleased_baton]} hot_handoff_released_ms=${med[leavereleased_hot]}" \
            "hot_handoff_released_p99_ms=${p99[leavereleased_hot]}" \
            "hot_handoff_stopping_ms=${med[leavestopping_hot]} hot_handoff_stopping_p99_ms=${p99[leavestopping_hot]}" \
            "hot_handoff_input_ms=${med[leaveinput_hot]} hot_handoff_input_p99_ms=${p99[leaveinput_hot]}" \
            "hot_handoff_after_input_ms=${med[leaveafter_hot]} hot_handoff_after_input_p99_ms=${p99[leaveafter_hot]}" \
            "handoff_input_p99_ms=${p99[leaveinput_baton]} handoff_after_input_p99_ms=${p99[leaveafter_baton]}" \
            "hot_failover_ms=${med[crash_hot]} hot_restart_ms=${med[restart_hot]}" \
            "hot_worker_rss_kb=${RB_RSS_KB[hot]:--} hot_kafka_read_ratio=${RB_READ_RATIO[hot]:--}" \
            "zk_cold_handoff_ms=${RB_cold_handoff[0]:--} rate=$rate producer_linger_ms=$RB_LINGER input_nice=$RB_INPUT_NICE" \
            "zk_set_p50_ms=$zk_p50 zk_set_p99_ms=$zk_p99 sink_fs=$sink_fs baton_sink=$rb_sink"
    }
    if [[ $RB_SINK_DIR != "$H_DIR" && ${BATON_KEEP:-0} != 1 ]]; then rm -rf "$RB_SINK_DIR"; fi
}

# --- throughput ----------------------------------------------------------------

# tp_run KIND I N: one run of TP_WORKERS baton-workers (KIND=baton) or
# baton-bench-plain consumers (KIND=plain; several split the partitions,
# --member) into a fresh sink; sets TP_RPS to records/s from spawn until the
# watcher sees N records in the sink, and for baton TP_READS to the records
# its workers received from Kafka per record written (their exit lines:
# standby.prefetch reads ahead for the partitions they stand by for).
# (Not in $( ): it spawns.)
tp_run() {
    local kind=$1 i=$2 n=$3 db=$H_DIR/tp-$1-$2.db t0 line j
    # Each baton run writes a fresh sink: move the group's binding to it
    # deliberately (the first run binds it; no worker is live in between).
    if [[ $kind == baton ]] && ((i > 1)); then
        b_ctl sink rebind --sink "sqlite:$db" >/dev/null || h_fail "throughput: sink rebind to $db failed"
    fi
    bench_watch "tpwatch" "$db" "$B_GROUP" --until-total "$n" --max-s 300 --interval-us 5000
    t0=$(bench_now_us)
    for ((j = 1; j <= TP_WORKERS; j++)); do
        if [[ $kind == baton ]]; then
            # shellcheck disable=SC2086 # flags, split on purpose
            B_SINK=$db b_worker "tp$j" --batch-size 500 --linger-ms 10 ${BENCH_TP_WORKER_ARGS:-}
        else
            h_spawn "tp$j" "$BATON_BIN/baton-bench-plain" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
                --partitions "$B_PARTITIONS" --sink "$db" --group "$B_GROUP" --count "$n" \
                --batch-size 500 --linger-ms 10 --member "$((j - 1))/$TP_WORKERS"
        fi
    done
    # A writer that exits with an error before the sink has every record
    # (a plain consumer alone exits 0 once it has written them) fails the
    # run at once, rather than after the watcher's 300 s.
    local rc=0 now deadline pid
    _h_clock now
    deadline=$((now + 300000))
    while _h_alive "${H_PIDS[tpwatch]}" && ((now < deadline)); do
        for ((j = 1; j <= TP_WORKERS; j++)); do
            pid=${H_PIDS[tp$j]}
            _h_alive "$pid" && continue
            _h_collect "$pid"
            ((H_RC[$pid] == 0)) ||
                h_fail "throughput: $kind run $i: tp$j exited ${H_RC[$pid]} before the sink had $n records: $(tail -n 2 "$H_DIR/tp$j.log")"
        done
        _h_nap 0.05
        _h_clock now
    done
    h_wait_exit tpwatch 5 || rc=$?
    ((rc == 0)) || h_fail "throughput: $kind run $i: watcher exited $rc"
    line=$(grep '^done ' "$H_DIR/tpwatch.log" | tail -n 1) || true
    [[ -n $line ]] || h_fail "throughput: $kind run $i never reached $n records"
    for ((j = 1; j <= TP_WORKERS; j++)); do h_stop "tp$j"; done
    if [[ $kind == baton ]]; then
        TP_READS=$(for ((j = 1; j <= TP_WORKERS; j++)); do grep 'event=stopped ' "$H_DIR/tp$j.log" | tail -n 1; done |
            awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "records_written") w += kv[2]; if (kv[1] == "records_fetched") f += kv[2] } }
                 END { printf "%.2f", f / (w > 0 ? w : 1) }')
    fi
    TP_STEADY=$(bench_steady_rps "$H_DIR/tpwatch.log" "$n")
    rm -f "$H_DIR/tpwatch.log"
    TP_RPS=$(awk -v t0="$t0" -v l="$line" -v n="$n" 'BEGIN { split(l, a, " "); printf "%d\n", n / ((a[2] - t0) / 1e6) }')
}

# tp_run_redis I N: one run of baton-worker into a fresh Redis database
# (number I, emptied), the group rebound to it; sets TP_RPS from spawn
# until the group's streams hold N entries (polled every 20 ms).
tp_run_redis() {
    local i=$1 n=$2 uri="redis://127.0.0.1:$REDIS_PORT/$1" t0 t1 count
    redis_cli -- -n "$i" FLUSHDB >/dev/null
    b_ctl sink rebind --sink "$uri" >/dev/null || h_fail "throughput: sink rebind to $uri failed"
    t0=$(bench_now_us)
    h_spawn tp "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "tpr$i" --brokers "$BOOTSTRAP" \
        --sink "$uri" --session-timeout-ms "$B_SESSION_MS" --batch-size 500 --linger-ms 10
    local deadline=$(($(_h_now_ms) + 300000))
    while :; do
        count=$(redis_uri_cli "$uri" EVAL 'local n = 0
            for _, k in ipairs(redis.call("KEYS", ARGV[1])) do n = n + redis.call("XLEN", k) end
            return n' 0 "baton:{$B_GROUP.*}:out")
        t1=$(bench_now_us)
        ((count >= n)) && break
        (($(_h_now_ms) < deadline)) || h_fail "throughput: redis run $i never reached $n records ($count)"
        sleep 0.02
    done
    h_stop tp
    TP_RPS=$(awk -v t0="$t0" -v t1="$t1" -v n="$n" 'BEGIN { printf "%d\n", n / ((t1 - t0) / 1e6) }')
}

# BENCH_SINK=redis: baton-worker into SQLite and into Redis (AOF on,
# appendfsync BENCH_REDIS_FSYNC), run after run, same topic.
bench_throughput_redis() {
    local n=${BENCH_RECORDS:-1000000} runs=${BENCH_TP_RUNS:-5} fsync=${BENCH_REDIS_FSYNC:-everysec} i
    source "$BATON_SRC/tests/lib/redis.sh"
    redis_start redis --appendonly yes --appendfsync "$fsync"
    local -a tsq=() trd=()
    for ((i = 1; i <= runs; i++)); do
        tp_run baton "$i" "$n"
        tsq+=("$TP_RPS")
        tp_run_redis "$i" "$n"
        trd+=("$TP_RPS")
        h_log "throughput run $i/$runs: sqlite ${tsq[-1]} records/s, redis ${trd[-1]} records/s"
    done
    local smed rmed sp99 rp99 x
    read -r smed x x < <(bench_stats "${tsq[@]}")
    read -r rmed x x < <(bench_stats "${trd[@]}")
    sp99=$(printf '%s\n' "${tsq[@]}" | sort -n | head -n 1)
    rp99=$(printf '%s\n' "${trd[@]}" | sort -n | head -n 1)
    echo
    echo "throughput: $n records, 12 partitions, one baton-worker, batches of 500, linger 10 ms;"
    echo "SQLite (WAL, synchronous=FULL) vs Redis $(redis-server --version | awk '{print $3}')" \
        "(appendonly yes, appendfsync $fsync); records/s from process start, $runs runs"
    printf '%-24s %14s %14s\n' "" "sqlite" "redis"
    printf '%-24s %14s %14s\n' "records/s (median)" "$smed" "$rmed"
    printf '%-24s %14s %14s\n' "records/s (slowest)" "$sp99" "$rp99"
    echo "runs, sqlite: ${tsq[*]}"
    echo "runs, redis:  ${trd[*]}"
    echo
    echo "RESULT sqlite_rps=$smed redis_rps=$rmed redis_ratio=$(awk -v a="$rmed" -v b="$smed" 'BEGIN { printf "%.2f", a / b }') redis_appendfsync=$fsync"
}

bench_throughput() {
    local n=${BENCH_RECORDS:-1000000} runs=${BENCH_TP_RUNS:-5} i
    TP_WORKERS=${BENCH_TP_WORKERS:-1}
    if ! [[ $TP_WORKERS =~ ^[1-9]$|^1[0-2]$ ]]; then
        echo "bench/run.sh throughput: BENCH_TP_WORKERS: '$TP_WORKERS' is not 1..12" >&2
        exit 2
    fi
    h_init bench_throughput
    h_zk_start
    B_PARTITIONS=12
    h_kafka_start "$B_TOPIC" $B_PARTITIONS
    b_init $B_PARTITIONS
    b_coord c1
    h_log "producing $n records"
    h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
        --partitions $B_PARTITIONS --count "$n"
    local rc=0
    h_wait_exit producer 300 || rc=$?
    ((rc == 0)) || h_fail "producer exited $rc"
    if [[ ${BENCH_SINK:-sqlite} == redis ]]; then
        bench_throughput_redis
        return
    fi
    local -a tb=() tpl=() trd=() tbs=() tps=()
    for ((i = 1; i <= runs; i++)); do
        tp_run baton "$i" "$n"
        tb+=("$TP_RPS")
        tbs+=("$TP_STEADY")
        trd+=("$TP_READS")
        tp_run plain "$i" "$n"
        tpl+=("$TP_RPS")
        tps+=("$TP_STEADY")
        h_log "throughput run $i/$runs: baton ${tb[-1]} records/s (${tbs[-1]} steady; ${trd[-1]} read per written)," \
            "plain ${tpl[-1]} records/s (${tps[-1]} steady)"
    done
    # The embedded Kafka keeps 5 MiB per partition (librdkafka's mock): past
    # about 1,600,000 records on 12 partitions the oldest are gone, both
    # systems start past them, and the rates (next_offset over time)
    # count records nobody wrote. Said in the output, not hidden.
    local truncated=0
    if grep -q 'event=retention_truncated' "$H_DIR/kafka.log" 2>/dev/null; then
        truncated=1
        h_log "WARNING: the embedded Kafka dropped the oldest records (retention): the rates below count them; use fewer BENCH_RECORDS"
    fi
    local micro
    micro=$("$BATON_BIN/baton-bench-plain" --micro --dir "$H_DIR" --batches 400 --batch-size 500 2>/dev/null)
    local bmed pmed bsmed psmed x
    read -r bmed x x < <(bench_stats "${tb[@]}")
    read -r pmed x x < <(bench_stats "${tpl[@]}")
    read -r bsmed x x < <(bench_stats "${tbs[@]}")
    read -r psmed x x < <(bench_stats "${tps[@]}")
    local ratio
    ratio=$(awk -v a="$bmed" -v b="$pmed" 'BEGIN { printf "%.2f", a / b }')
    local f_us p_us c_us
    f_us=$(sed -n 's/.*fenced_us_per_batch=\([0-9.]*\).*/\1/p' <<<"$micro")
    p_us=$(sed -n 's/.*plain_us_per_batch=\([0-9.]*\).*/\1/p' <<<"$micro")
    c_us=$(sed -n 's/.*fence_check_us=\([0-9.]*\).*/\1/p' <<<"$micro")
    echo
    echo "throughput: $n records, 12 partitions, topic -> SQLite sink (WAL, synchronous=FULL),"
    echo "batches of 500, linger 10 ms, $TP_WORKERS worker(s) on one sink file${BENCH_TP_WORKER_ARGS:+ ($BENCH_TP_WORKER_ARGS)};"
    echo "records/s from process start, $runs runs"
    printf '%-40s %12s %12s\n' "" "baton" "plain"
    printf '%-40s %12s %12s\n' "records/s (median)" "$bmed" "$pmed"
    printf '%-40s %12s %12s\n' "records/s (runs)" "${tb[*]}" "${tpl[*]}"
    printf '%-40s %12s %12s\n' "records/s from 20% to 80% (median)" "$bsmed" "$psmed"
    printf '%-40s %12s %12s\n' "records/s from 20% to 80% (runs)" "${tbs[*]}" "${tps[*]}"
    printf '%-40s %12s\n' "records read from Kafka per written" "${trd[*]}"
    printf '%-40s %12s %12s\n' "us per 500-record batch, sink alone" "$f_us" "$p_us"
    printf '%-40s %12s\n' "one fence check (read of the fence row)" "${c_us} us"
    echo
    echo "RESULT baton_rps=$bmed plain_rps=$pmed ratio=$ratio workers=$TP_WORKERS" \
        "baton_steady_rps=$bsmed plain_steady_rps=$psmed kafka_truncated=$truncated" \
        "steady_ratio=$(awk -v a="$bsmed" -v b="$psmed" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
        "kafka_read_ratio=$(printf '%s\n' "${trd[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
}

# --- scale ---------------------------------------------------------------------

# sc_owned_total LOG...: "TS_US SUM" where SUM is the partitions owned by
# the member processes logging to LOG... at their latest report, and TS_US
# the latest change.
sc_owned_total() {
    awk '$1 == "owned" { o[FILENAME] = $3; if ($2 > t) t = $2 } END { s = 0; for (f in o) s += o[f]; print t, s }' "$@"
}

# sc_converged P LOG...: every partition owned and nothing changed for 1.5 s.
sc_converged() {
    local t s p=$1
    shift
    read -r t s < <(sc_owned_total "$@")
    [[ $s == "$p" ]] && (($(bench_now_us) - t > 1500000))
}

# sc_cold_converged P LOG...: every member process has joined all its
# members (its "ready" line) and sc_converged. Without the first, a cold
# start looked converged while 470 of 1,000 members were still joining.
sc_cold_converged() {
    local p=$1 f
    shift
    for f in "$@"; do grep -q '^ready ' "$f" || return 1; done
    sc_converged "$p" "$@"
}

# sc_4lw WORD: a four-letter word's answer, asked again (up to 5 times)
# while a loaded server lets the harness's 2 s read time out.
sc_4lw() {
    local i out
    for ((i = 0; i < 5; i++)); do
        out=$(_h_4lw "$H_ZK_PORT" "$1" || true)
        [[ -n $out ]] && break
    done
    printf '%s\n' "$out"
}
# sc_mntr KEY: a ZooKeeper `mntr` counter.
sc_mntr() { sc_4lw mntr | awk -v k="$1" '$1 == k { print $2 }'; }
# sc_zxid: the server's last zxid (one per write transaction), decimal.
sc_zxid() { printf '%d\n' "$(sc_4lw srvr | sed -n 's/^Zxid: //p')"; }

# sc_cpu_ms PID: the process's CPU time so far (user + system), ms.
sc_cpu_ms() {
    awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / t }' "/proc/$1/stat"
}
# sc_mem_kb PID FIELD: VmRSS or VmHWM (peak) of the process, kB.
sc_mem_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
# sc_watches: "MEDIAN MAX" watches per ZooKeeper session (wchc; the
# median is a worker's, the coordinator and the observer are among the rest).
sc_watches() {
    sc_4lw wchc | awk '/^0x/ { s = $1; n[s] = 0; next } /^\t/ { n[s]++ } END { for (s in n) print n[s] }' |
        sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0, 0; else print v[int((NR + 1) / 2)], v[NR] }'
}
# sc_report [MAP]: baton-bench-scale --report's line (standby coverage, the
# largest znode); with MAP, every partition's owner and standby into MAP.
sc_report() { "$BATON_BIN/baton-bench-scale" --zk "$ZK" --group "$B_GROUP" --report ${1:+--standby-map "$1"}; }

# sc_churn BEFORE AFTER VICTIM: of the partitions whose owner is the same in
# both standby maps and whose standby before was named and not VICTIM, the
# fraction whose standby changed (a standby change costs a watch, with
# standby.prefetch a fetch restarted, with standby.claim=ahead a claim
# deleted and made again).
sc_churn() {
    awk -v v="$3" 'NR == FNR { o[$1] = $2; s[$1] = $3; next }
        $2 == o[$1] && $2 != "-" && s[$1] != "-" && s[$1] != v { n++; c += $3 != s[$1] }
        END { printf "%.4f", n ? c / n : 0 }' "$1" "$2"
}
# sc_field LINE KEY: the value of KEY=... in LINE.
sc_field() { sed -n "s/.*[ ]$2=\([^ ]*\).*/\1/p" <<<" $1"; }

bench_scale() {
    local P=${BENCH_PARTITIONS:-10000} W=${BENCH_WORKERS:-100} session=${BENCH_SCALE_SESSION_MS:-10000}
    [[ ${BENCH_STANDBY_CLAIM:-takeover} =~ ^(ahead|takeover)$ ]] ||
        { echo "bench/run.sh: BENCH_STANDBY_CLAIM: '$BENCH_STANDBY_CLAIM' is not ahead or takeover" >&2; return 2; }
    h_init bench_scale
    # The harness's ZooKeeper has a 256 MB heap (enough for every test). At
    # 100,000 partitions (partition, claims directory and claim nodes, a
    # watch or two each) that heap filled: the server spent 100 s of its
    # first 150 in full collections and every session expired. The bench
    # gives it 256 MB + 16 kB per partition (1.8 GB at 100,000); a later
    # -Xmx wins. BENCH_ZK_HEAP_MB sets it.
    local zk_heap=${BENCH_ZK_HEAP_MB:-$((256 + P / 64))}
    H_ZK_JAVA_OPTS="-Xmx${zk_heap}m ${H_ZK_JAVA_OPTS:-}" h_zk_start
    h_log "zookeeper heap: ${zk_heap} MB"
    local t
    t=$(bench_now_us)
    b_ctl init --topic "$B_TOPIC" --partitions "$P" >/dev/null || h_fail "batonctl init $P partitions failed"
    h_log "batonctl init: $P partitions in $((($(bench_now_us) - t) / 1000)) ms"
    # BENCH_COORD_ARGS: extra baton-coordinator flags (word-split on purpose).
    # shellcheck disable=SC2086
    B_SESSION_MS=$session b_coord c1 ${BENCH_COORD_ARGS:-}
    h_wait_for 30 "coordinator elected" b_log_has c1 "event=elected"
    local victim cpid
    victim=$(printf 'w%03d' $((W - 1)))
    cpid=$(h_pid c1)
    local cpu0 cpu1 cpu2
    cpu0=$(sc_cpu_ms "$cpid")

    # Cold start: the coordinator is up; all W workers start at once.
    local t0 ck0
    ck0=$(sc_mntr zk_packets_received)
    t0=$(bench_now_us)
    # One thread joins its members one after another, polling those it
    # has joined between joins: 4 threads up to 200 workers. Beyond, that
    # polling (synchronous reads and claims of every member joined so far,
    # while the group rebalances at each join) made the joins take minutes
    # on this loaded machine, so there each thread joins all of its members
    # first (--join-first; their sessions live on the client's own
    # threads meanwhile), one thread per 5 members (BENCH_SCALE_THREADS
    # sets it). A thread's members claim one after another, each waiting
    # for its round trips, where real workers claim side by side: at
    # 100,000 x 1,000, 10 members a thread gave a cold start of 12.0-14.1 s
    # and 5 gave 8.1-9.5 s (2026-12-04); one thread per member (3,000
    # threads) did not converge. cold_join_s reports when the last member
    # had joined.
    local threads=${BENCH_SCALE_THREADS:-$((W > 200 ? W / 5 : 4))} join_first=()
    ((W > 200)) && join_first=(--join-first)
    # BENCH_STANDBY_CLAIM=ahead: every member with standby.claim=ahead.
    local claim=(--standby-claim "${BENCH_STANDBY_CLAIM:-takeover}")
    h_spawn members "$BATON_BIN/baton-bench-scale" --zk "$ZK" --group "$B_GROUP" --members $((W - 1)) \
        --threads "$threads" --session-timeout-ms "$session" --watch-member "$victim" "${join_first[@]}" \
        "${claim[@]}"
    h_spawn victim "$BATON_BIN/baton-bench-scale" --zk "$ZK" --group "$B_GROUP" --members 1 \
        --first $((W - 1)) --threads 1 --session-timeout-ms "$session" "${claim[@]}"
    h_wait_for 300 "all $P partitions owned by $W workers" sc_cold_converged "$P" "$H_DIR/members.log" "$H_DIR/victim.log" ||
        h_fail "cold start did not converge"
    local tc s
    read -r tc s < <(sc_owned_total "$H_DIR/members.log" "$H_DIR/victim.log")
    local cold_ms=$(((tc - t0) / 1000))
    local gens
    gens=$(grep -c 'event=published' "$H_DIR/c1.log" || true)
    # When the last member's session and node were made (the bench's own
    # joining: part of the cold start, not the coordinator's).
    local tr joined_ms
    tr=$(awk '$1 == "ready" { print $2; exit }' "$H_DIR/members.log")
    joined_ms=$(((${tr:-$tc} - t0) / 1000))
    # ZooKeeper's requests over the cold start (the members' joins and
    # pings included), per partition.
    local ck1 cold_req
    ck1=$(sc_mntr zk_packets_received)
    cold_req=$(awk -v d="$((ck1 - ck0))" -v p="$P" 'BEGIN { printf "%.2f", d / p }')
    h_log "cold start: $P partitions owned after $cold_ms ms ($gens assignment generations); every member joined after $joined_ms ms; $((ck1 - ck0)) ZooKeeper requests ($cold_req per partition)"
    cpu1=$(sc_cpu_ms "$cpid")
    local cold_cpu_ms=$((cpu1 - cpu0))

    # Idle rate of packets (session pings) for the baseline.
    local p0 p1 ta tb
    local ic0 ic1
    ta=$(bench_now_us); p0=$(sc_mntr zk_packets_received); ic0=$(sc_cpu_ms "$cpid")
    sleep 3
    tb=$(bench_now_us); p1=$(sc_mntr zk_packets_received); ic1=$(sc_cpu_ms "$cpid")
    local idle_rate
    idle_rate=$(awk -v d="$((p1 - p0))" -v t="$((tb - ta))" 'BEGIN { printf "%.3f", d / (t / 1e6) }')

    # The standbys named before the failover, to count how many change.
    sc_report "$H_DIR/standby-before.map" >/dev/null || h_fail "baton-bench-scale --report failed"
    # Failover: SIGKILL the process holding the last worker; its session
    # expires after $session ms; the others take its partitions.
    local moved
    moved=$(awk '$1 == "owned" { o = $3 } END { print o }' "$H_DIR/victim.log")
    local z0 k0 tk g0
    z0=$(sc_zxid); k0=$(sc_mntr zk_packets_received); tk=$(bench_now_us)
    g0=$(grep -c 'event=published' "$H_DIR/c1.log" || true)
    cpu1=$(sc_cpu_ms "$cpid")
    h_kill victim KILL
    h_wait_for $((session / 1000 + 60)) "expiry of $victim seen" grep -q '^expired ' "$H_DIR/members.log" ||
        h_fail "no expiry of $victim"
    h_wait_for 60 "all $P partitions owned again" sc_converged "$P" "$H_DIR/members.log" || h_fail "failover did not converge"
    local z1 k1 te
    z1=$(sc_zxid); k1=$(sc_mntr zk_packets_received); te=$(bench_now_us)
    local texp tdone
    texp=$(awk '$1 == "expired" { print $2; exit }' "$H_DIR/members.log")
    tdone=$(awk -v p="$P" '$1 == "owned" && $3 == p { t = $2 } END { print t }' "$H_DIR/members.log")
    local fo_ms=$(((tdone - texp) / 1000))
    local ops writes
    ops=$(awk -v d="$((k1 - k0))" -v r="$idle_rate" -v t="$((te - tk))" -v m="$moved" \
        'BEGIN { x = (d - r * t / 1e6) / m; printf "%.1f", x < 0 ? 0 : x }')
    writes=$(awk -v d="$((z1 - z0))" -v m="$moved" 'BEGIN { printf "%.2f", d / m }')
    # The coordinator's cost per rebalance of the failover (CPU over the
    # publishes it made; its memory: resident now and peak), its last
    # publish's own timings, the watches a worker holds, and the group as
    # published: standby coverage and the largest znode.
    cpu2=$(sc_cpu_ms "$cpid")
    local g1 nreb fo_cpu rss hwm publine wmed wmax rep
    g1=$(grep -c 'event=published' "$H_DIR/c1.log" || true)
    nreb=$((g1 - g0))
    # The coordinator's idle CPU (its watchdog sweeps, pings) over the
    # failover's window, at the rate of the idle window above, is taken out.
    fo_cpu=$(awk -v c="$((cpu2 - cpu1))" -v i="$((ic1 - ic0))" -v it="$((tb - ta))" -v t="$((te - tk))" -v n="$nreb" \
        'BEGIN { x = (c - i * t / it) / (n > 0 ? n : 1); printf "%d", x < 0 ? 0 : x }')
    rss=$(sc_mem_kb "$cpid" VmRSS)
    hwm=$(sc_mem_kb "$cpid" VmHWM)
    publine=$(grep 'event=published' "$H_DIR/c1.log" | tail -n 1)
    read -r wmed wmax < <(sc_watches)
    rep=$(sc_report "$H_DIR/standby-after.map") || h_fail "baton-bench-scale --report failed"
    local churn
    churn=$(sc_churn "$H_DIR/standby-before.map" "$H_DIR/standby-after.map" "$victim")
    h_log "coordinator: $nreb rebalances in the failover, $((cpu2 - cpu1)) ms CPU (idle: $((ic1 - ic0)) ms in $(((tb - ta) / 1000)) ms); cold start $cold_cpu_ms ms CPU over $gens; RSS $rss kB, peak $hwm kB"
    h_log "last publish: compute_ms=$(sc_field "$publine" compute_ms) standby_ms=$(sc_field "$publine" standby_ms); $rep"
    local cov big bigpath
    cov=$(sc_field "$rep" standby_coverage)
    big=$(sc_field "$rep" largest_znode_bytes)
    bigpath=$(sc_field "$rep" largest_znode)
    h_log "failover: $moved partitions re-owned ${fo_ms} ms after expiry; packets $((k1 - k0)) (idle ${idle_rate}/s), write txns $((z1 - z0))"
    echo
    echo "scale: $P partitions, $W simulated workers (real members, ZooKeeper sessions of ${session} ms;"
    echo "$((W - 1)) in one process on $threads threads, 1 in another), one coordinator, standalone ZooKeeper"
    printf '%-60s %s\n' "cold start: all started at once -> every partition owned" "$(awk -v m="$cold_ms" 'BEGIN { printf "%.2f s", m / 1000 }') ($gens generations)"
    printf '%-60s %s\n' "  of which: until the last member had joined" "$(awk -v m="$joined_ms" 'BEGIN { printf "%.2f s", m / 1000 }')"
    printf '%-60s %s\n' "  ZooKeeper requests per partition (joins and pings included)" "$cold_req"
    printf '%-60s %s\n' "failover: worker's session expired -> its $moved partitions owned" "$fo_ms ms"
    printf '%-60s %s\n' "ZooKeeper requests per moved partition (all clients, pings removed)" "$ops"
    printf '%-60s %s\n' "ZooKeeper write transactions per moved partition" "$writes"
    printf '%-60s %s\n' "partitions with a standby named, at the end" "$cov ($(sc_field "$rep" standby_named) of $P)"
    printf '%-60s %s\n' "standbys changed by the failover (owner kept, standby not the victim)" "$churn"
    printf '%-60s %s\n' "largest znode (ZooKeeper's jute.maxbuffer: 1 MB)" "$big bytes ($bigpath)"
    printf '%-60s %s\n' "coordinator CPU per rebalance (idle removed) / cold start" "$fo_cpu ms ($nreb) / $((cold_cpu_ms / (gens > 0 ? gens : 1))) ms ($gens)"
    printf '%-60s %s\n' "coordinator memory: resident / peak" "$rss / $hwm kB"
    printf '%-60s %s\n' "last publish: compute / standbys (coordinator's log)" "$(sc_field "$publine" compute_ms) / $(sc_field "$publine" standby_ms) ms"
    printf '%-60s %s\n' "watches per ZooKeeper session: median (a worker) / max" "$wmed / $wmax"
    echo
    # zk_ops_per_moved_partition counts write transactions (the server's
    # zxid: exact). Requests are batched now (claims in multis, queue checks
    # pipelined), so the failover's few hundred requests are below the noise
    # of 10 s of idle probes that the packet count has to subtract.
    echo "RESULT cold_start_s=$(awk -v m="$cold_ms" 'BEGIN { printf "%.2f", m / 1000 }') failover_after_expiry_ms=$fo_ms zk_ops_per_moved_partition=$writes zk_requests_per_moved_partition=$ops" \
        "standby_coverage=$cov largest_znode_bytes=$big coord_cpu_ms_per_rebalance=$fo_cpu coord_rss_kb=$rss coord_peak_rss_kb=$hwm" \
        "coord_standby_ms=$(sc_field "$publine" standby_ms) worker_watches=$wmed cold_zk_requests_per_partition=$cold_req cold_join_s=$(awk -v m="$joined_ms" 'BEGIN { printf "%.2f", m / 1000 }')" \
        "standby_claim=${BENCH_STANDBY_CLAIM:-takeover} standby_churn=$churn"
}

# --- rolling -------------------------------------------------------------------

RO_SESSION_MS=3000
declare -gA RO_KG_ID=() # member name -> member number of its latest incarnation
declare -gA RO_RES=()   # "MEASURE:PxW:SYS" -> its value

# ro_start SYS P NAME: starts (or restarts, same id) member NAME of system
# SYS (baton; coop: cooperative-sticky; static: cooperative-sticky with
# group.instance.id=NAME) on topic in-SYS of P partitions. A Kafka member
# gets a new member number per incarnation (the epoch column of its writes).
ro_start() {
    local sys=$1 P=$2 name=$3
    if [[ $sys == baton ]]; then
        local -a trace=()
        ((RO_TRACE)) && trace=(--log-level debug)
        # shellcheck disable=SC2086
        b_worker "$name" --batch-size 500 "${trace[@]}" ${BENCH_WORKER_ARGS:-}
        return
    fi
    local -a extra=()
    [[ $sys == static ]] && extra=(--instance-id "$name")
    h_spawn "$name" "$BATON_BIN/baton-bench-kgroup" --brokers "$BOOTSTRAP" --topic "in-$sys" \
        --partitions "$P" --group "kg-$sys-$P" --id "${RO_KG_ID[$name]:?ro_new_member first}" --sink "$H_DIR/p$P-$sys.db" \
        --assignor cooperative-sticky --session-timeout-ms $RO_SESSION_MS --batch-size 500 \
        --linger-ms 10 "${extra[@]}"
}

# ro_new_member NAME: the member number NAME's next incarnation writes
# under (the Kafka groups' epoch column), known before it starts.
ro_new_member() {
    KG_NEXT_ID=$((KG_NEXT_ID + 1))
    RO_KG_ID[$1]=$KG_NEXT_ID
}

# ro_follow_owns SYS P NAME: starts following for the first sign that
# NAME's next incarnation owns a partition (bench_follow): baton, an
# acquired claim in its log; Kafka, a write with its member number in the
# watcher's log. Then bench_follow_wait.
ro_follow_owns() {
    if [[ $1 == baton ]]; then
        bench_follow "$H_DIR/$3.log" ' event=acquired ' 60
    else
        bench_follow "$H_DIR/watch-p$2-$1.log" "^w [0-9]+ [0-9]+ ${RO_KG_ID[$3]} " 60
    fi
}

# ro_system SYS P W: the producer on topic in-SYS, W members of SYS; once
# the flow is steady and keeps up with the producer, a steady window, then
# the roll: each member in turn SIGTERMed, started again with the same id,
# waited on until it owns partitions again. Stores its measures in RO_RES.
ro_system() {
    local sys=$1 P=$2 W=$3 steady_s=${BENCH_ROLL_STEADY_S:-5} i name
    local rate=$(($2 * ${BENCH_ROLL_RATE:-100})) w=$H_DIR/watch-p$2-$1.log k=$2x$3:$1
    local group=kg-$sys-$P sink=$H_DIR/p$P-$sys.db
    if [[ $sys == baton ]]; then
        group=$B_GROUP
        [[ ${BENCH_ROLL_SINK:-sqlite} == postgresql ]] && sink=$PG_URI
    fi
    bench_watch "watch-p$P-$sys" "$sink" "$group"
    h_spawn "p$P-$sys-producer" "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "in-$sys" \
        --partitions "$P" --count $((rate * 3600)) --rate "$rate"
    rb_input_nice "$(h_pid "p$P-$sys-producer")"
    for ((i = 1; i <= W; i++)); do
        ro_new_member "p$P-$sys-m$i"
        ro_start "$sys" "$P" "p$P-$sys-m$i"
    done
    if [[ $sys == baton ]]; then
        h_wait_for 60 "baton: $W workers own everything" b_all_active "$W" || h_fail "baton: $W workers never owned $P partitions"
    fi
    bench_settle "$w" "$P" 3000 90 || h_fail "$sys ($P partitions): never steady"
    h_wait_for 90 "$sys: writes keep up with the producer ($rate records/s)" bench_rate_near "$w" "$rate" ||
        h_fail "$sys ($P partitions): never kept up with $rate records/s"
    # The steady window the roll is compared with: a measuring window, not a wait for an event.
    sleep "$steady_s"
    local t0 t1 t2 ts td rc
    local kcpu0
    kcpu0=$(bench_cpu "$(h_pid kafka)")
    t0=$(bench_now_us)
    h_log "== $sys, $P partitions, $W members: rolling restart"
    for ((i = 1; i <= W; i++)); do
        name=p$P-$sys-m$i
        ts=${EPOCHREALTIME/./}
        h_kill "$name" TERM || h_fail "$sys: $name is not running before its restart"
        rc=0
        h_wait_exit "$name" 30 || rc=$?
        if ((rc != 0)); then
            # A comparator crashing in librdkafka's close (seen once: exit
            # 139, static membership, 48 partitions) is counted and the roll
            # goes on; baton's workers must exit cleanly.
            [[ $sys != baton ]] || h_fail "$sys: $name exited $rc on SIGTERM"
            h_log "$sys $name: exited $rc on SIGTERM (counted in ${sys}_${P}x${W}_bad_exits)"
            RO_RES[bad:$k]=$((${RO_RES[bad:$k]:-0} + 1))
        fi
        td=${EPOCHREALTIME/./}
        ro_new_member "$name"
        ro_follow_owns "$sys" "$P" "$name"
        ro_start "$sys" "$P" "$name"
        bench_follow_wait || h_fail "$sys: restarted $name owned no partition within 60 s"
        h_log "$sys $name: exited $(((td - ts) / 1000)) ms after SIGTERM, owns partitions again $(((${EPOCHREALTIME/./} - ts) / 1000)) ms after"
    done
    t1=$(bench_now_us)
    # The embedded Kafka's CPU during the roll, in % of one core: its fetch
    # walks a partition's log from the oldest batch, so it grows with the
    # log (docs/benchmarks.md, "The embedded Kafka's log walk").
    RO_RES[kcpu:$k]=$(awk -v c="$(($(bench_cpu "$(h_pid kafka)") - kcpu0))" -v hz="$(getconf CLK_TCK)" -v d=$((t1 - t0)) \
        'BEGIN { printf "%d", 100 * c / hz / (d / 1e6) }')
    bench_settle "$w" "$P" 1000 90 || h_fail "$sys ($P partitions): no steady flow after the roll"
    t2=$(bench_now_us)
    local max med wp hand hmed same bmax x ts0=$((t0 - steady_s * 1000000))
    read -r max med wp hand hmed same < <(bench_stall "$w" "$t0" "$t2")
    read -r bmax x x x x x < <(bench_stall "$w" "$ts0" "$t0")
    RO_RES[max:$k]=$max
    RO_RES[med:$k]=$med
    RO_RES[hand:$k]=$hand
    RO_RES[hmed:$k]=$hmed
    RO_RES[same:$k]=$same
    RO_RES[steadygap:$k]=$bmax
    if [[ $sys == baton ]] && ((RO_TRACE)); then
        # Where the longest gaps went (BENCH_ROLL_TRACE=1: the workers'
        # debug logs): the worker's part, and the record's age.
        local kind g tp held age
        for kind in same handoff; do
            read -r g tp held age < <(bench_stall_trace "$w" "$t0" "$t2" "$kind" "$H_DIR/p$P-baton-m"*.log)
            RO_RES[${kind}held:$k]=$held
            RO_RES[${kind}age:$k]=$age
            h_log "$sys $P partitions: longest $kind-writer gap $g ms (partition $tp): its first record" \
                "held by the worker $held ms, $age ms old when written"
        done
    fi
    RO_RES[roll_s:$k]=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e6 }')
    RO_RES[rps:$k]=$(bench_rps "$w" "$t0" "$t1")
    RO_RES[steady_rps:$k]=$(bench_rps "$w" "$ts0" "$t0")
    RO_RES[ratio:$k]=$(awk -v a="${RO_RES[rps:$k]}" -v b="${RO_RES[steady_rps:$k]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    h_log "$sys $P partitions: max stall $max ms (partition $wp), median $med, across a change of writer $hand (median $hmed)," \
        "without one $same, steady max gap $bmax; embedded Kafka ${RO_RES[kcpu:$k]}% of a core during the roll;" \
        "roll ${RO_RES[roll_s:$k]} s, ${RO_RES[rps:$k]} records/s against ${RO_RES[steady_rps:$k]} steady"
    for ((i = 1; i <= W; i++)); do h_stop "p$P-$sys-m$i"; done
    h_stop "p$P-$sys-producer"
    h_stop "watch-p$P-$sys"
}

# ro_setup P W: one setup: an embedded Kafka with a topic of P partitions
# per system (in-baton, in-coop, in-static: each system starts with an
# empty topic, so none has a backlog to catch up), baton's group on
# in-baton, then the systems one after the other.
ro_setup() {
    local P=$1 W=$2 sys topics=""
    for sys in $RO_SYSTEMS; do topics+=${topics:+,}in-$sys; done
    B_GROUP=roll$P
    B_TOPIC=in-baton
    B_PARTITIONS=$P
    B_SINK=$H_DIR/p$P-baton.db
    h_kafka_start "$topics" "$P"
    rb_input_nice "$(h_pid kafka)"
    if [[ " $RO_SYSTEMS " == *" baton "* ]]; then
        b_init "$P"
        b_coord "p$P-c1"
    fi
    for sys in $RO_SYSTEMS; do
        ro_system "$sys" "$P" "$W"
    done
    h_stop "p$P-c1"
    h_kafka_stop
}

bench_rolling() {
    local setups=${BENCH_ROLL_SETUPS:-12x3 48x6} s sys k
    RO_SYSTEMS=${BENCH_ROLL_SYSTEMS:-baton coop static}
    local bad=""
    for s in $setups; do
        [[ $s =~ ^[1-9][0-9]{0,4}x[1-9][0-9]{0,2}$ ]] || bad+="BENCH_ROLL_SETUPS: '$s' is not PARTITIONSxWORKERS (e.g. 12x3); "
    done
    for sys in $RO_SYSTEMS; do
        [[ $sys =~ ^(baton|coop|static)$ ]] || bad+="BENCH_ROLL_SYSTEMS: '$sys' is not baton, coop or static; "
    done
    [[ ${BENCH_ROLL_RATE:-100} =~ ^[1-9][0-9]{0,5}$ ]] || bad+="BENCH_ROLL_RATE: '$BENCH_ROLL_RATE' is not a positive number; "
    [[ ${BENCH_ROLL_STEADY_S:-5} =~ ^[1-9][0-9]{0,2}$ ]] || bad+="BENCH_ROLL_STEADY_S: '$BENCH_ROLL_STEADY_S' is not a positive number; "
    [[ ${BENCH_ROLL_SINK:-sqlite} =~ ^(sqlite|postgresql)$ ]] || bad+="BENCH_ROLL_SINK: '$BENCH_ROLL_SINK' is not sqlite or postgresql; "
    RO_TRACE=${BENCH_ROLL_TRACE:-0}
    [[ $RO_TRACE =~ ^[01]$ ]] || bad+="BENCH_ROLL_TRACE: '$RO_TRACE' is not 0 or 1; "
    RB_INPUT_NICE=${BENCH_INPUT_NICE:-0}
    if ! [[ $RB_INPUT_NICE =~ ^-?[0-9]+$ ]] || ((RB_INPUT_NICE < -20 || RB_INPUT_NICE > 19)); then
        bad+="BENCH_INPUT_NICE: '$RB_INPUT_NICE' is not a nice value in -20..19; "
    fi
    if [[ -n $bad ]]; then
        echo "bench/run.sh rolling: ${bad%; }" >&2
        exit 2
    fi
    h_init bench_rolling
    h_zk_start
    if [[ ${BENCH_ROLL_SINK:-sqlite} == postgresql ]]; then
        # baton's workers write to PostgreSQL, durably (the test server's
        # fsync=off would flatter it against SQLite's synchronous=FULL); the
        # Kafka comparators keep their SQLite files.
        source "$BATON_SRC/tests/lib/pg.sh"
        PG_SERVER_OPTS=(-c fsync=on -c synchronous_commit=on)
        pg_start
        pg_use_sink
    fi
    B_SESSION_MS=$RO_SESSION_MS
    for s in $setups; do
        ro_setup "${s%x*}" "${s#*x}"
    done
    local -A worst=() low=()
    echo
    echo "rolling restart: each member in turn SIGTERMed, started again with the same id, waited on until"
    echo "it owns partitions again; ${BENCH_ROLL_RATE:-100} records/s per partition throughout; failure detection"
    echo "${RO_SESSION_MS} ms for all. stall: a partition's longest gap between two writes to the sink, from the"
    echo "first SIGTERM until the flow is steady again (max and median over partitions; 'handoff': the"
    echo "longest gap ending in a write by another writer, and the median of those; 'same': the longest gap between"
    echo "two writes of one writer); steady: the longest gap of the ${BENCH_ROLL_STEADY_S:-5} s before; kafka%: the"
    echo "embedded Kafka's CPU during the roll. coop: cooperative-sticky; static: the same with group.instance.id."
    echo "baton's sink: ${BENCH_ROLL_SINK:-sqlite}."
    printf '%-6s %-7s %10s %8s %8s %8s %6s %8s %7s %7s %9s %9s %6s\n' setup system "max stall" median handoff "ho med" same \
        steady kafka% "roll s" "roll r/s" "stdy r/s" ratio
    for s in $setups; do
        for sys in $RO_SYSTEMS; do
            k=$s:$sys
            printf '%-6s %-7s %10s %8s %8s %8s %6s %8s %7s %7s %9s %9s %6s\n' "$s" "$sys" "${RO_RES[max:$k]}" \
                "${RO_RES[med:$k]}" "${RO_RES[hand:$k]}" "${RO_RES[hmed:$k]}" "${RO_RES[same:$k]}" "${RO_RES[steadygap:$k]}" \
                "${RO_RES[kcpu:$k]}" "${RO_RES[roll_s:$k]}" "${RO_RES[rps:$k]}" "${RO_RES[steady_rps:$k]}" "${RO_RES[ratio:$k]}"
            ((${RO_RES[max:$k]} > ${worst[$sys]:--1})) && worst[$sys]=${RO_RES[max:$k]}
            if [[ -z ${low[$sys]:-} ]] || awk -v a="${RO_RES[ratio:$k]}" -v b="${low[$sys]}" 'BEGIN { exit !(a < b) }'; then
                low[$sys]=${RO_RES[ratio:$k]}
            fi
        done
    done
    echo "(ms; records/s; ratio: records/s during the roll over the steady window's)"
    echo
    local keys="" r
    for s in $setups; do
        for sys in $RO_SYSTEMS; do
            k=$s:$sys
            keys+=" ${sys}_${s}_max_stall_ms=${RO_RES[max:$k]} ${sys}_${s}_handoff_stall_ms=${RO_RES[hand:$k]}"
            keys+=" ${sys}_${s}_handoff_median_ms=${RO_RES[hmed:$k]}"
            keys+=" ${sys}_${s}_steady_gap_ms=${RO_RES[steadygap:$k]} ${sys}_${s}_roll_rps_ratio=${RO_RES[ratio:$k]}"
            if [[ $sys == baton ]] && ((RO_TRACE)); then
                keys+=" baton_${s}_same_writer_stall_held_ms=${RO_RES[sameheld:$k]} baton_${s}_same_writer_stall_record_age_ms=${RO_RES[sameage:$k]}"
                keys+=" baton_${s}_handoff_stall_held_ms=${RO_RES[handoffheld:$k]} baton_${s}_handoff_stall_record_age_ms=${RO_RES[handoffage:$k]}"
            fi
            keys+=" ${sys}_${s}_same_writer_stall_ms=${RO_RES[same:$k]} ${sys}_${s}_kafka_cpu_pct=${RO_RES[kcpu:$k]}"
            [[ -z ${RO_RES[bad:$k]:-} ]] || keys+=" ${sys}_${s}_bad_exits=${RO_RES[bad:$k]}"
        done
    done
    for sys in coop static; do
        [[ -n ${worst[$sys]:-} && -n ${worst[baton]:-} ]] || continue
        r=$(awk -v a="${worst[$sys]:-0}" -v b="${worst[baton]:-0}" 'BEGIN { printf "%.1f", a / (b > 0 ? b : 1) }')
        keys+=" kafka_${sys}_stall_ratio=$r"
    done
    # mock_static_membership=0: librdkafka 2.0.2's mock cluster reads
    # group.instance.id but does not keep it (bench_kgroup.c).
    echo "RESULT baton_max_stall_ms=${worst[baton]:-} kafka_coop_max_stall_ms=${worst[coop]:-}" \
        "kafka_static_max_stall_ms=${worst[static]:-} baton_roll_rps_ratio=${low[baton]:-}$keys" \
        "kafka_coop_roll_rps_ratio=${low[coop]:-} kafka_static_roll_rps_ratio=${low[static]:-} mock_static_membership=0" \
        "baton_sink=${BENCH_ROLL_SINK:-sqlite} input_nice=$RB_INPUT_NICE roll_trace=$RO_TRACE"
}

# --- bigworker ------------------------------------------------------------------

# One baton-worker among BENCH_BIG_MEMBERS simulated members (baton-bench-scale)
# of a BENCH_BIG_PARTITIONS-partition group on the embedded Kafka, nothing
# produced: its CPU over an idle window, side by side with a plain
# librdkafka consumer (baton-bench-plain) assigned as many partitions of the
# same topic in the same window. What the worker spends beyond the plain
# consumer is its own per-turn work; the rest is librdkafka's with a topic
# that large. (Producing to 100,000 partitions overwhelms the embedded
# Kafka's one thread, so the window is idle.)
bench_bigworker() {
    local P=${BENCH_BIG_PARTITIONS:-100000} S=${BENCH_BIG_MEMBERS:-99} win=${BENCH_BIG_WINDOW_S:-10}
    h_init bench_bigworker
    H_ZK_JAVA_OPTS="-Xmx$((256 + P / 64))m ${H_ZK_JAVA_OPTS:-}" h_zk_start
    h_kafka_start "$B_TOPIC" "$P"
    B_SESSION_MS=10000
    b_init "$P"
    b_coord c1
    h_wait_for 30 "coordinator elected" b_log_has c1 "event=elected"
    h_spawn members "$BATON_BIN/baton-bench-scale" --zk "$ZK" --group "$B_GROUP" --members "$S" \
        --threads 4 --session-timeout-ms "$B_SESSION_MS"
    B_SINK=$H_DIR/sink.db b_worker w1
    h_wait_for 120 "w1 fenced its partitions" b_log_has w1 "event=fenced"
    local owned
    owned=$(grep -m1 'event=assignment ' "$H_DIR/w1.log" | sed -n 's/.* partitions=\([0-9]*\).*/\1/p')
    [[ -n $owned && $owned -gt 0 ]] || h_fail "w1 was assigned nothing"
    h_spawn plain "$BATON_BIN/baton-bench-plain" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
        --partitions "$owned" --sink "$H_DIR/plain.db" --count 1000000000
    sleep 5 # the fences, the first fetches, the group's publishes settle
    local wp pp w0 w1c p0 p1 tck
    wp=$(h_pid w1)
    pp=$(h_pid plain)
    tck=$(getconf CLK_TCK)
    w0=$(bench_cpu "$wp")
    p0=$(bench_cpu "$pp")
    sleep "$win"
    w1c=$(bench_cpu "$wp")
    p1=$(bench_cpu "$pp")
    local wms=$(((w1c - w0) * 1000 / tck / win)) pms=$(((p1 - p0) * 1000 / tck / win))
    echo "baton-worker holding $owned of $P partitions ($((S + 1)) members), idle ${win} s: $wms ms CPU/s;" \
        "plain consumer assigned $owned partitions: $pms ms CPU/s"
    echo "RESULT bigworker_partitions=$P bigworker_owned=$owned worker_idle_cpu_ms_per_s=$wms" \
        "plain_idle_cpu_ms_per_s=$pms idle_cpu_ratio=$(awk -v a="$wms" -v b="$pms" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }')"
    h_pass
}

case ${1:-} in
rebalance) bench_rebalance ;;
throughput) bench_throughput ;;
scale) bench_scale ;;
rolling) bench_rolling ;;
bigworker) bench_bigworker ;;
-h | --help | help) usage ;;
*)
    usage >&2
    exit 2
    ;;
esac
