#!/usr/bin/env bash
# run.sh: the chaos harness. Runs the real binaries -- 2 coordinators, 3-4
# workers with one SQLite sink, a continuous producer -- against a real
# 3-node ZooKeeper ensemble on loopback (tests/lib/ensemble.sh) and the
# embedded Kafka, and injects seeded random faults with fault-free stretches
# between them:
#   worker_kill       SIGKILL a worker, restart it 0-2 s later
#   worker_pause      SIGSTOP a worker below the session timeout, SIGCONT
#   worker_pause_long SIGSTOP a worker past the session timeout, SIGCONT
#   coord_kill        SIGKILL the leading coordinator, restart it
#   zk_leader_kill    SIGKILL the ZooKeeper ensemble's leader, restart it
#   worker_failpoint  SIGKILL a worker, restart it with BATON_FAILPOINTS set
#                     to worker.before_sink_write|before_fence|before_release
#                     = [SKIP:]stop|abort|sleep-MS
#   coord_failpoint   restart the standby coordinator with
#                     coordinator.before_publish=stop|abort|sleep-MS, then
#                     SIGKILL the leader so it takes over
# With --network (issue 18) every process reaches ZooKeeper, Kafka and (with
# --sink pg) the sink through its own netproxy per path, the ensemble's
# peers reach each other through one per pair (tests/lib/net.sh), and about
# half the faults are network faults instead, each healed before the next:
#   net_cut_worker_zk     a worker's ZooKeeper links go silent (both ways or
#                         one way), below or past the session timeout; Kafka
#                         and the sink stay reachable
#   net_cut_leader_zk     the same for the leading coordinator; one cut past
#                         2/3 of the session (+ CH_LEADER_TOL_MS, default
#                         500) must see it step down by then (its log)
#   net_cut_worker_kafka  a worker's Kafka links go silent
#   net_cut_worker_sink   a worker's sink link goes silent (--sink pg only)
#   net_isolate_zk_server one ensemble member loses the other two
#   net_slow_worker_zk    100 ms - 2 s of latency plus jitter on a worker's
#                         ZooKeeper links, below or above the self-suspension
#                         margin (a probe's round trip vs 2/3 of the session)
#   net_slow_worker_sink  the same on its sink link (--sink pg only)
# During each net_cut_worker_zk the harness counts the sink's rows of that
# worker's epochs (from its log) every ~100 ms; a count that rises after
# 2/3 of the session (+ CH_SUSPEND_TOL_MS, default 250) past the last bytes
# its proxy passed from ZooKeeper to it is a self-suspension violation. An
# isolated ZooKeeper server that still serves clients after
# CH_MINORITY_MS (default 5000) fails the run too: by its srvr mode, and by
# a read of the assignment through it alone at the isolation's end
# (tests/chaos/minority.sh: still_serving, or stale_assignment when its
# version is below the majority's; tests/chaos/minority_selftest.sh shows
# both failing).
# A failpoint `stop` is resumed by the harness (SIGCONT) after a seeded
# hold; an `abort` is restarted. Every fault and recovery is logged with a
# timestamp to $H_DIR/faults.log. When the faults are done the harness
# heals everything, lets the producer finish, waits (bounded) for the sink
# to catch up and every partition to be active, and runs the independent
# checker (check.sh) on the producer's delivery reports (what the topic
# holds, $H_DIR/deliveries/batch-N.asv; the topic is not read back), the
# sink, the fence samples taken during the run (sample.sh) and the final
# status. Exit 0 only if it finds nothing.
#
#   tests/chaos/run.sh [--seed S] [--faults N] [--duration SEC | --minutes M]
#                      [--workers 3|4] [--partitions P] [--rate R]
#                      [--session-ms MS] [--quiet-ms MIN:MAX]
#                      [--network] [--sink sqlite|pg] [--kinds K1,K2...]
# --sink pg writes to a throwaway PostgreSQL server (tests/lib/pg.sh) instead
# of SQLite; check.sh then reads a copy of it in the server's commit order.
# Without it the two sink faults are drawn as Kafka / ZooKeeper ones.
# --network --minutes M is the soak mode: faults until M minutes are over
# (unless --faults), quiet stretches of 0.2-1 s (unless --quiet-ms).
# --kinds draws only those fault kinds (names as logged), uniformly: for
# reproducing one kind of fault; the net_ ones need --network, the sink
# ones --sink pg.
# --seed defaults to a random one (printed); the same seed draws the same
# faults, targets and parameters (the system's timing still varies).
# --duration bounds the fault phase (default 600 s): fewer faults are injected
# if it runs out, and the run says so. BATON_KEEP=1 keeps the work dir.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${BATON_SRC:=$src}"
source "$BATON_SRC/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/ensemble.sh"
source "$BATON_SRC/tests/lib/net.sh"
source "$BATON_SRC/tests/chaos/minority.sh"

ch_usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
CH_ALL_KINDS="worker_kill worker_pause_short worker_pause_long coord_kill zk_leader_kill worker_failpoint coord_failpoint"
CH_NET_KINDS="net_cut_worker_zk net_cut_leader_zk net_cut_worker_kafka net_cut_worker_sink net_isolate_zk_server net_slow_worker_zk net_slow_worker_sink"
seed=$(((RANDOM << 15 | RANDOM) % 1000000000)) faults=20 duration=600 nworkers=4
B_PARTITIONS=12 rate=300 B_SESSION_MS=3000 quiet_min=1000 quiet_max=3000
settle_timeout=180 network=0 sink=sqlite kinds='' soak=0 faults_given=0 quiet_given=0
while (($#)); do
    case $1 in
    --kinds)
        (($# >= 2)) || { echo "run.sh: --kinds needs a value" >&2; exit 2; }
        kinds=$2
        shift 2
        continue ;;
    --network) network=1; shift; continue ;;
    --sink)
        (($# >= 2)) && [[ $2 == sqlite || $2 == pg ]] ||
            { echo "run.sh: --sink must be sqlite or pg" >&2; exit 2; }
        sink=$2
        shift 2
        continue ;;
    --seed | --faults | --duration | --minutes | --workers | --partitions | --rate | --session-ms | --quiet-ms)
        (($# >= 2)) || { echo "run.sh: $1 needs a value" >&2; exit 2; }
        v=$2
        case $1 in
        --quiet-ms) [[ $v =~ ^([0-9]+):([0-9]+)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])) ||
            { echo "run.sh: --quiet-ms: '$v' is not MIN:MAX milliseconds" >&2; exit 2; } ;;
        *) [[ $v =~ ^[0-9]{1,9}$ ]] || { echo "run.sh: $1: '$v' is not a non-negative integer" >&2; exit 2; } ;;
        esac
        case $1 in
        --seed) seed=$v ;;
        --faults) faults=$v faults_given=1 ;;
        --duration) duration=$v ;;
        --minutes) duration=$((v * 60)) soak=1 ;;
        --workers) ((v == 3 || v == 4)) || { echo "run.sh: --workers must be 3 or 4" >&2; exit 2; }
            nworkers=$v ;;
        --partitions) ((v >= 1 && v <= 256)) || { echo "run.sh: --partitions must be in [1, 256]" >&2; exit 2; }
            B_PARTITIONS=$v ;;
        --rate) ((v >= 1)) || { echo "run.sh: --rate must be at least 1" >&2; exit 2; }
            rate=$v ;;
        --session-ms) ((v >= 1000 && v <= 20000)) || { echo "run.sh: --session-ms must be in [1000, 20000]" >&2; exit 2; }
            B_SESSION_MS=$v ;;
        --quiet-ms) quiet_min=${BASH_REMATCH[1]} quiet_max=${BASH_REMATCH[2]} quiet_given=1 ;;
        esac
        shift 2 ;;
    -h | --help) ch_usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; ch_usage >&2; exit 2 ;;
    esac
done

# Soak (--network --minutes M): as many faults as M minutes hold, with
# shorter quiet stretches, unless --faults / --quiet-ms say otherwise.
if ((soak && network)); then
    ((faults_given)) || faults=999999999
    ((quiet_given)) || quiet_min=200 quiet_max=1000
fi
CH_KINDS=()
if [[ -n $kinds ]]; then
    IFS=, read -r -a CH_KINDS <<<"$kinds"
    for k in "${CH_KINDS[@]}"; do
        case " $CH_ALL_KINDS $CH_NET_KINDS " in *" $k "*) ;;
        *) echo "run.sh: --kinds: unknown fault kind '$k'" >&2; exit 2 ;; esac
        [[ $k == net_* ]] && ((!network)) && { echo "run.sh: --kinds $k needs --network" >&2; exit 2; }
        [[ $k == *_sink && $sink != pg ]] && { echo "run.sh: --kinds $k needs --sink pg" >&2; exit 2; }
    done
fi
h_init chaos
NET_SEED=$seed
ch_flags=
((network)) && ch_flags+=" --network"
[[ $sink == pg ]] && ch_flags+=" --sink pg"
[[ -n $kinds ]] && ch_flags+=" --kinds $kinds"
[[ $quiet_min:$quiet_max != 1000:3000 ]] && ch_flags+=" --quiet-ms $quiet_min:$quiet_max"
echo "== chaos: seed=$seed faults=$faults duration=${duration}s workers=$nworkers partitions=$B_PARTITIONS rate=$rate/s session=${B_SESSION_MS}ms network=$network sink=$sink" >&2
((B_SESSION_MS != 3000)) && ch_flags+=" --session-ms $B_SESSION_MS"
echo "== chaos: reproduce with: tests/chaos/run.sh --seed $seed --faults $faults --duration $duration --workers $nworkers$ch_flags" >&2
FLOG=$H_DIR/faults.log
: >"$FLOG"

# --- seeded choices ---------------------------------------------------------
# A private generator (31-bit LCG) so nothing else that uses $RANDOM (free
# ports, temp names) shifts the fault sequence. Call in the main shell.
CH_RNG=$((seed % 2147483648))
CH_R=0
ch_rand() { # N: sets CH_R to a draw in [0, N)
    CH_RNG=$(((CH_RNG * 1103515245 + 12345) % 2147483648))
    CH_R=$(((CH_RNG >> 8) % $1))
}
ch_range() { # LO HI: sets CH_R to a draw in [LO, HI]
    ch_rand $(($2 - $1 + 1))
    CH_R=$((CH_R + $1))
}

# --- the fault log ----------------------------------------------------------
CH_NFAULT=0
ch_flog() { # EVENT key=value...: one timestamped line in faults.log and on stderr
    local line
    line="ts=$(date +%H:%M:%S.%3N) ms=$(_h_now_ms) fault_no=$CH_NFAULT event=$*"
    echo "$line" >>"$FLOG"
    echo "[chaos] $line" >&2
}
ch_sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

# --- processes ----------------------------------------------------------------
WORKERS=()
for ((i = 1; i <= nworkers; i++)); do WORKERS+=("w$i"); done
COORDS=(c1 c2)
declare -A CH_FP=()      # name -> failpoint spec it was started with ("" if none)
declare -A CH_HOLD=()    # name -> ms a failpoint stop is held before SIGCONT
declare -A CH_STOP_T=()  # name -> when the harness first saw it stopped by a failpoint
declare -A CH_EXPECT=()  # name -> 1 while the harness expects it to be dead
declare -A CH_LOGOFF=()  # name -> size of its log when its latest process started
CH_CRASHES=0 CH_EXITS=0

# ch_paths NAME: sets CH_ZK (and, for a worker, CH_ENV and CH_SINK) to how
# NAME reaches ZooKeeper, Kafka and the sink: directly, or with --network
# through its own proxies (Kafka by connect() remapping: the brokers'
# addresses come from metadata).
ch_paths() {
    CH_ZK=$ZK CH_ENV=() CH_SINK=$B_SINK_URI
    ((network)) || return 0
    CH_ZK=${NET_ADDR[$1-zk]}
    [[ $1 == c* ]] && return 0
    read -r -a CH_ENV <<<"$(net_remap_env "$1-kafka")"
    [[ $sink == pg ]] && CH_SINK="postgresql://baton@${NET_ADDR[$1-sink]}/baton"
    return 0
}
ch_worker_start() { # NAME [FAILPOINTS] (use ch_start)
    local name=$1 fp=${2:-}
    CH_FP[$name]=$fp
    unset "CH_STOP_T[$name]"
    ch_paths "$name"
    # Half the workers (odd numbers) fetch their standby partitions ahead
    # (standby.prefetch, off by default), so the faults reach that path too.
    local prefetch=off
    [[ $name == *[13579] ]] && prefetch=on
    h_spawn "$name" env "${CH_ENV[@]}" BATON_FAILPOINTS="$fp" "$BATON_BIN/baton-worker" --zk "$CH_ZK" \
        --group "$B_GROUP" --id "$name" --brokers "$BOOTSTRAP" --sink "$CH_SINK" \
        --session-timeout-ms "$B_SESSION_MS" --linger-ms 10 --batch-size 200 --standby-prefetch "$prefetch"
}
ch_coord_start() { # NAME [FAILPOINTS] (use ch_start)
    local name=$1 fp=${2:-}
    CH_FP[$name]=$fp
    unset "CH_STOP_T[$name]"
    ch_paths "$name"
    h_spawn "$name" env BATON_FAILPOINTS="$fp" "$BATON_BIN/baton-coordinator" --zk "$CH_ZK" \
        --group "$B_GROUP" --id "$name" --session-timeout-ms "$B_SESSION_MS"
}
ch_start() { # NAME [FAILPOINTS]
    CH_LOGOFF[$1]=$(stat -c %s "$H_DIR/$1.log" 2>/dev/null || echo 0)
    if [[ $1 == c* ]]; then ch_coord_start "$@"; else ch_worker_start "$@"; fi
}

# ch_log_since NAME PATTERN: PATTERN (grep -E) is in the log of NAME's latest process.
ch_log_since() {
    tail -c +$((${CH_LOGOFF[$1]:-0} + 1)) "$H_DIR/$1.log" 2>/dev/null | grep -E -- "$2" >/dev/null
}

# ch_state NAME: R/S/D..., T if stopped, X if not running.
ch_state() {
    local pid=${H_PIDS[$1]:-} st
    [[ -n $pid ]] && _h_alive "$pid" || { echo X; return; }
    read -r st <"/proc/$pid/stat" 2>/dev/null || { echo X; return; }
    st=${st##*) }
    echo "${st%% *}"
}

# ch_heal: the harness's recovery duty, run between faults and while
# settling. Restarts a process that died without the harness killing it
# (a failpoint abort, or a crash: counted), and resumes a process stopped
# by a failpoint once its hold is over.
ch_heal() {
    local name st rc now
    for name in "${COORDS[@]}" "${WORKERS[@]}"; do
        st=$(ch_state "$name")
        if [[ $st == X ]]; then
            rc=0
            h_wait_exit "$name" 0 >/dev/null 2>&1 || rc=$?
            if [[ -z ${CH_EXPECT[$name]:-} ]]; then
                if [[ ${CH_FP[$name]:-} == *abort* ]] && ((rc == 134)); then
                    ch_flog "recover_restart target=$name reason=failpoint_abort rc=$rc"
                elif ((rc > 128)); then
                    CH_CRASHES=$((CH_CRASHES + 1))
                    ch_flog "crash target=$name rc=$rc (killed by signal $((rc - 128)) not sent by the harness)"
                    tail -n 30 "$H_DIR/$name.log" >&2
                else
                    CH_EXITS=$((CH_EXITS + 1))
                    ch_flog "unexpected_exit target=$name rc=$rc"
                    tail -n 15 "$H_DIR/$name.log" >&2
                fi
            fi
            unset "CH_EXPECT[$name]"
            ch_start "$name"
        elif [[ $st == T ]]; then
            now=$(_h_now_ms)
            if [[ -z ${CH_STOP_T[$name]:-} ]]; then
                CH_STOP_T[$name]=$now
                ch_flog "failpoint_stopped target=$name spec=${CH_FP[$name]:-none} hold_ms=${CH_HOLD[$name]:-0}"
            elif ((now - CH_STOP_T[$name] >= ${CH_HOLD[$name]:-0})); then
                h_kill "$name" CONT || true
                ch_flog "recover_cont target=$name held_ms=$((now - CH_STOP_T[$name]))"
                unset "CH_STOP_T[$name]"
                CH_HOLD[$name]=0
            fi
        fi
    done
    ch_producer_tick
}

# ch_heal_for MS: heals every 200 ms for MS milliseconds.
ch_heal_for() {
    local end=$(($(_h_now_ms) + $1))
    while (($(_h_now_ms) < end)); do
        ch_heal
        sleep 0.2
    done
}

# --- the producer -----------------------------------------------------------
# Batches of 20 s of records at --rate; a new batch starts when one ends,
# until the fault phase is over.
CH_BATCH_S=20 CH_PRODUCING=1 CH_BATCH=0 CH_PRODUCED=0 CH_PRODUCER_FAILED=0
ch_producer_start() {
    CH_BATCH=$((CH_BATCH + 1))
    mkdir -p "$H_DIR/deliveries"
    h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
        --partitions "$B_PARTITIONS" --count $((rate * CH_BATCH_S)) --rate "$rate" --prefix "b$CH_BATCH" \
        --deliveries "$H_DIR/deliveries/batch-$CH_BATCH.asv"
}
ch_producer_tick() {
    h_alive producer && return 0
    local rc=0
    h_wait_exit producer 0 >/dev/null 2>&1 || rc=$?
    if [[ -z ${CH_PRODUCER_DONE[$CH_BATCH]:-} ]]; then
        CH_PRODUCER_DONE[$CH_BATCH]=1
        if ((rc == 0)); then
            CH_PRODUCED=$((CH_PRODUCED + rate * CH_BATCH_S))
        else
            # What Kafka acknowledged before it failed is in the topic all
            # the same (its delivery reports): the sink must hold it too.
            local acked
            acked=$(perl -0777 -ne 's/[^\x1e]*\z//; print scalar grep { (split /\x1f/)[1] >= 0 } split /\x1e/' \
                "$H_DIR/deliveries/batch-$CH_BATCH.asv" 2>/dev/null || echo 0)
            [[ $acked =~ ^[0-9]+$ ]] || acked=0
            CH_PRODUCED=$((CH_PRODUCED + acked))
            CH_PRODUCER_FAILED=1
            h_log "producer batch $CH_BATCH failed (exit $rc) after $acked records acknowledged"
        fi
    fi
    ((CH_PRODUCING)) && ch_producer_start
    return 0
}
declare -A CH_PRODUCER_DONE=()

# --- fault helpers ----------------------------------------------------------
# ch_pick_worker: sets CH_T to a running, not stopped worker (or "" if none).
ch_pick_worker() {
    local -a ok=()
    local w
    for w in "${WORKERS[@]}"; do
        [[ $(ch_state "$w") =~ ^[RSD]$ ]] && ok+=("$w")
    done
    CH_T=
    ch_rand ${#WORKERS[@]} # always draw, so the sequence does not depend on timing
    ((${#ok[@]})) && CH_T=${ok[CH_R % ${#ok[@]}]}
    return 0
}
ch_leader_coord() { b_ctl status --json 2>/dev/null | jq -r '.coordinator.id // empty'; }
# ch_leading NAME: whether coordinator NAME's current process leads, by its
# own log since it started (CH_LOGOFF): its last election event is
# event=elected (a killed leader's lines stay in the same file). Status names the
# owner of the lowest candidate node, which may still be a killed
# incarnation's (its session not expired yet) while the restarted process
# is only a candidate behind it: cutting that one off is no leader cut.
ch_leading() {
    local last
    last=$(tail -c +$((${CH_LOGOFF[$1]:-0} + 1)) "$H_DIR/$1.log" 2>/dev/null |
        grep -oE 'event=(zk_connected|candidate|elected|step_down|session_expired)' | tail -1)
    [[ $last == event=elected ]]
}
# ch_leading_coord: sets CH_LEADER to the coordinator that leads now,
# waiting up to 5 s for one (healing meanwhile: not in a subshell); empty
# if none.
ch_leading_coord() {
    local end c
    CH_LEADER=
    end=$(($(_h_now_ms) + 5000))
    while (($(_h_now_ms) < end)); do
        c=$(ch_leader_coord) || c=
        if [[ -n $c ]] && h_alive "$c" && ch_leading "$c"; then
            CH_LEADER=$c
            return
        fi
        ch_heal
        sleep 0.2
    done
}

ch_kill9() { # NAME: SIGKILL by pid and reap
    CH_EXPECT[$1]=1
    h_kill "$1" KILL || true
    h_wait_exit "$1" 10 >/dev/null 2>&1 || true
    unset "CH_EXPECT[$1]"
}

# ch_failpoint_spec PREFIX: sets CH_SPEC to a random failpoint of PREFIX's points.
ch_failpoint_spec() {
    local -a points
    if [[ $1 == worker ]]; then
        points=(worker.before_sink_write worker.before_fence worker.before_release)
    else
        points=(coordinator.before_publish)
    fi
    ch_rand ${#points[@]}
    local point=${points[CH_R]} skip action
    ch_range 0 5
    skip=$CH_R
    ch_rand 3
    case $CH_R in
    0) action=stop ;;
    1) action=abort ;;
    2) ch_range 100 $((B_SESSION_MS * 2)); action=sleep-$CH_R ;;
    esac
    CH_SPEC="$point=$skip:$action"
    # How long a `stop` is held once it fires: sometimes past the session.
    ch_range 200 $((B_SESSION_MS * 2))
    CH_SPEC_HOLD=$CH_R
}

# --- the faults ---------------------------------------------------------------
ch_fault_worker_kill() {
    ch_pick_worker
    ch_range 0 2000
    local down=$CH_R
    [[ -n $CH_T ]] || { ch_flog "skipped fault=worker_kill reason=no_running_worker"; return; }
    ch_flog "fault=worker_kill target=$CH_T signal=KILL restart_after_ms=$down"
    ch_kill9 "$CH_T"
    ch_sleep_ms "$down"
    ch_start "$CH_T"
    ch_flog "restart target=$CH_T"
}
ch_fault_worker_pause() { # short|long
    ch_pick_worker
    local ms
    if [[ $1 == short ]]; then
        ch_range $((B_SESSION_MS / 10)) $((B_SESSION_MS / 2))
    else
        ch_range $((B_SESSION_MS * 3 / 2)) $((B_SESSION_MS * 5 / 2))
    fi
    ms=$CH_R
    [[ -n $CH_T ]] || { ch_flog "skipped fault=worker_pause_$1 reason=no_running_worker"; return; }
    ch_flog "fault=worker_pause_$1 target=$CH_T signal=STOP for_ms=$ms session_ms=$B_SESSION_MS"
    h_kill "$CH_T" STOP || true
    ch_sleep_ms "$ms"
    h_kill "$CH_T" CONT || true
    ch_flog "resume target=$CH_T signal=CONT"
}
ch_fault_coord_kill() {
    ch_range 0 2000
    local down=$CH_R leader
    leader=$(ch_leader_coord) || leader=
    [[ -n $leader ]] && h_alive "$leader" ||
        { ch_flog "skipped fault=coord_kill reason=no_leader_now"; return; }
    ch_flog "fault=coord_kill target=$leader signal=KILL restart_after_ms=$down"
    ch_kill9 "$leader"
    ch_sleep_ms "$down"
    ch_start "$leader"
    ch_flog "restart target=$leader"
}
ch_fault_zk_leader_kill() {
    ch_range 500 4000
    local down=$CH_R n
    n=$(ens_leader) || { ch_flog "skipped fault=zk_leader_kill reason=no_zk_leader_now"; return; }
    ch_flog "fault=zk_leader_kill target=zk$n signal=KILL restart_after_ms=$down"
    ens_kill "$n" KILL || true
    h_wait_exit "zk$n" 10 >/dev/null 2>&1 || true
    ch_heal_for "$down"
    ens_node_start "$n"
    if ! ens_wait_quorum 60; then
        ch_flog "ensemble_no_quorum after restart of zk$n"
        h_fail "the ZooKeeper ensemble did not recover (harness infrastructure)"
    fi
    ch_flog "restart target=zk$n zk_leader=zk$(ens_leader || echo none)"
}
ch_fault_worker_failpoint() {
    ch_pick_worker
    ch_failpoint_spec worker
    [[ -n $CH_T ]] || { ch_flog "skipped fault=worker_failpoint reason=no_running_worker"; return; }
    ch_flog "fault=worker_failpoint target=$CH_T signal=KILL restart_with=BATON_FAILPOINTS=$CH_SPEC stop_hold_ms=$CH_SPEC_HOLD"
    ch_kill9 "$CH_T"
    CH_HOLD[$CH_T]=$CH_SPEC_HOLD
    ch_start "$CH_T" "$CH_SPEC"
}
ch_fault_coord_failpoint() {
    ch_failpoint_spec coordinator
    local leader standby c
    leader=$(ch_leader_coord) || leader=
    [[ -n $leader ]] && h_alive "$leader" ||
        { ch_flog "skipped fault=coord_failpoint reason=no_leader_now"; return; }
    standby=
    for c in "${COORDS[@]}"; do [[ $c != "$leader" ]] && standby=$c; done
    ch_flog "fault=coord_failpoint target=$standby then_kill=$leader restart_with=BATON_FAILPOINTS=$CH_SPEC stop_hold_ms=$CH_SPEC_HOLD"
    [[ $(ch_state "$standby") != X ]] && ch_kill9 "$standby"
    CH_HOLD[$standby]=$CH_SPEC_HOLD
    ch_start "$standby" "$CH_SPEC"
    # Let it queue behind the leader before the leader goes.
    h_wait_for 10 "$standby registered" ch_log_since "$standby" 'event=(candidate|standby)' || true
    ch_kill9 "$leader"
    ch_start "$leader"
    ch_flog "restart target=$leader (now standby)"
}

# --- network faults (--network) -------------------------------------------
# ch_net_span: sets CH_R to a fault's length, half the draws below the
# session timeout, half past it; CH_PAST to 0 or 1.
# (Coins are drawn from 1000: the generator's low bits cycle.)
ch_net_span() {
    ch_rand 1000
    CH_PAST=$((CH_R >= 500))
    if ((CH_PAST)); then
        ch_range $((B_SESSION_MS * 6 / 5)) $((B_SESSION_MS * 5 / 2))
    else
        ch_range $((B_SESSION_MS / 5)) $((B_SESSION_MS * 9 / 10))
    fi
}
# ch_net_dir: sets CH_DIR to both (half the draws), up or down.
ch_net_dir() {
    local -a dirs=(both both up down)
    ch_rand 1000
    CH_DIR=${dirs[CH_R / 250]}
}
# ch_net_latency: sets CH_LAT and CH_JIT (ms, each way) below or above the
# self-suspension margin -- a probe's round trip against 2/3 of the session
# -- within 100 ms - 2 s; CH_MARGIN to below or above.
ch_net_latency() {
    local hi=$((B_SESSION_MS / 5)) top=$((B_SESSION_MS > 2000 ? 2000 : B_SESSION_MS))
    ((hi >= 100)) || hi=100
    ch_rand 1000
    if ((CH_R >= 500)); then
        CH_MARGIN=above
        ch_range $((B_SESSION_MS / 2 > top ? top : B_SESSION_MS / 2)) "$top"
    else
        CH_MARGIN=below
        ch_range 100 "$hi"
    fi
    CH_LAT=$CH_R
    ch_range 0 $((B_SESSION_MS / 10))
    CH_JIT=$CH_R
}

# ch_worker_epochs NAME: the epochs (claim czxids) NAME's processes logged,
# as an SQL list ("" if none).
ch_worker_epochs() {
    { grep -ohE 'event=claimed .*czxid=[0-9]+|event=fenced partition=[0-9]+ epoch=[0-9]+' \
        "$H_DIR/$1.log" || true; } | grep -oE '(czxid|epoch)=[0-9]+' | cut -d= -f2 | sort -un |
        paste -sd, -
}
# ch_epoch_rows LIST: the sink's rows of those epochs.
ch_epoch_rows() {
    local q="SELECT count(*) FROM baton_output WHERE grp = '$B_GROUP' AND epoch IN ($1)"
    if [[ $sink == pg ]]; then pg_psql "$q"; else sqlite3 -readonly "$B_SINK" ".timeout 2000" "$q"; fi
}
# ch_log_ts_ms LINE: a log line's ts= as epoch milliseconds.
ch_log_ts_ms() {
    [[ $1 =~ ts=([0-9T:.-]+)Z ]] && date -d "${BASH_REMATCH[1]}Z" +%s%3N
}

# ch_net_hold MS [WORKER]: heals (restarts, producer) for MS while a
# network fault lasts. With WORKER (a ZooKeeper cut of it), also watches the
# self-suspension promise: samples the sink's rows of WORKER's epochs
# every ~100 ms, and afterwards reports a count that rose after
# NET_LAST_DOWN + 2/3 session + CH_SUSPEND_TOL_MS (a write from a worker
# that should have suspended).
CH_SUSPEND_TOL_MS=${CH_SUSPEND_TOL_MS:-250}
CH_SUSPEND_CHECKED=0 CH_SUSPEND_VIOLATIONS=0 CH_SUSPEND_SEEN=""
CH_MINORITY_MS=${CH_MINORITY_MS:-5000} CH_MINORITY_SERVING=0 CH_MINORITY_STALE=0
# A leading coordinator cut from ZooKeeper must step down no later than 2/3
# of the session (+ CH_LEADER_TOL_MS, default 500: still before the server
# can expire the session) after the last bytes its proxy passed from
# ZooKeeper, by its own log.
CH_LEADER_TOL_MS=${CH_LEADER_TOL_MS:-500}
CH_LEADER_CHECKED=0 CH_LEADER_VIOLATIONS=0 CH_LEADER_SEEN=""
ch_net_hold() {
    local ms=$1 w=${2:-} end epochs="" t c limit base_c="" base_t=0 last_down=$NET_LAST_DOWN
    local off=0 bad=$CH_SUSPEND_VIOLATIONS
    end=$(($(_h_now_ms) + ms))
    if [[ -n $w ]]; then
        epochs=$(ch_worker_epochs "$w")
        off=$(stat -c %s "$H_DIR/$w.log" 2>/dev/null || echo 0)
    fi
    limit=$((last_down + B_SESSION_MS * 2 / 3 + CH_SUSPEND_TOL_MS))
    while (($(_h_now_ms) < end)); do
        ch_heal
        if [[ -n $epochs ]]; then
            t=$(_h_now_ms)
            if c=$(ch_epoch_rows "$epochs" 2>/dev/null) && [[ $c =~ ^[0-9]+$ ]]; then
                if [[ -n $base_c ]] && ((c > base_c)); then
                    CH_SUSPEND_VIOLATIONS=$((CH_SUSPEND_VIOLATIONS + 1))
                    ch_flog "suspend_violation target=$w last_zk_answer_ms=$last_down sampled_at_ms=$base_t rows=$base_c later_rows=$c limit_ms=$((limit - last_down))"
                    base_c=
                fi
                # The first sample taken past the limit is the baseline:
                # nothing of these epochs may commit after it.
                [[ -z $base_c ]] && ((t >= limit)) && base_c=$c base_t=$t
            fi
            sleep 0.1
        else
            sleep 0.2
        fi
    done
    if [[ -n $w && -n $base_c ]]; then
        CH_SUSPEND_CHECKED=$((CH_SUSPEND_CHECKED + 1))
        local line s after=none
        bad=$((CH_SUSPEND_VIOLATIONS - bad))
        line=$(tail -c +$((off + 1)) "$H_DIR/$w.log" | grep -m1 'event=zk_silent' || true)
        if [[ -n $line ]] && s=$(ch_log_ts_ms "$line"); then
            after=$((s - last_down))
            CH_SUSPEND_SEEN+=" $after"
        fi
        ch_flog "suspend_checked target=$w suspended_after_ms=$after of_session_ms=$B_SESSION_MS violations=$bad"
    fi
}

ch_fault_net_cut_leader_zk() {
    ch_net_span
    local ms=$CH_R past=$CH_PAST leader
    ch_net_dir
    ch_leading_coord
    leader=$CH_LEADER
    [[ -n $leader ]] || { ch_flog "skipped fault=net_cut_leader_zk reason=no_leader_now"; return; }
    local off line t last limit end
    off=$(stat -c %s "$H_DIR/$leader.log" 2>/dev/null || echo 0)
    net_cut "$leader-zk" "$CH_DIR"
    last=$NET_LAST_DOWN
    limit=$((last + B_SESSION_MS * 2 / 3 + CH_LEADER_TOL_MS))
    ch_flog "fault=net_cut_leader_zk target=$leader dir=$CH_DIR for_ms=$ms past_session=$past session_ms=$B_SESSION_MS last_zk_answer_ms=$last"
    ch_net_hold "$ms"
    # Whether (and when) the cut-off leader stepped down while still cut
    # off; judged when the cut outlasted the limit.
    end=$(_h_now_ms)
    line=$(tail -c +$((off + 1)) "$H_DIR/$leader.log" | grep -m1 'event=step_down' || true)
    t=
    if [[ -n $line ]] && t=$(ch_log_ts_ms "$line"); then
        ch_flog "leader_step_down target=$leader after_ms=$((t - NET_T)) after_last_answer_ms=$((t - last)) $(grep -o 'reason=[a-z_]*' <<<"$line")"
    else
        t=
        ch_flog "leader_step_down target=$leader after_ms=none"
    fi
    if ((end > limit)); then
        CH_LEADER_CHECKED=$((CH_LEADER_CHECKED + 1))
        if [[ -z $t ]] || ((t > limit)); then
            CH_LEADER_VIOLATIONS=$((CH_LEADER_VIOLATIONS + 1))
            ch_flog "leader_violation target=$leader last_zk_answer_ms=$last limit_ms=$((limit - last)) stepped_down_after_ms=$([[ -n $t ]] && echo $((t - last)) || echo none)"
        else
            CH_LEADER_SEEN+=" $((t - last))"
        fi
    fi
    net_heal "$leader-zk"
    ch_flog "heal target=$leader path=zk"
}
# ch_fault_net_cut_worker_path zk|kafka|sink: a worker's links on that path
# go silent; a ZooKeeper cut also watches its self-suspension.
ch_fault_net_cut_worker_path() {
    ch_pick_worker
    ch_net_span
    local ms=$CH_R past=$CH_PAST watch='' extra=''
    ch_net_dir
    [[ -n $CH_T ]] || { ch_flog "skipped fault=net_cut_worker_$1 reason=no_running_worker"; return; }
    net_cut "$CH_T-$1" "$CH_DIR"
    [[ $1 == zk ]] && watch=$CH_T extra=" last_zk_answer_ms=$NET_LAST_DOWN"
    ch_flog "fault=net_cut_worker_$1 target=$CH_T dir=$CH_DIR for_ms=$ms past_session=$past session_ms=$B_SESSION_MS$extra"
    ch_net_hold "$ms" ${watch:+"$watch"}
    net_heal "$CH_T-$1"
    ch_flog "heal target=$CH_T path=$1"
}
ch_fault_net_slow_worker() { # zk|sink
    ch_pick_worker
    ch_net_latency
    ch_range "$B_SESSION_MS" $((B_SESSION_MS * 3))
    local ms=$CH_R
    [[ -n $CH_T ]] || { ch_flog "skipped fault=net_slow_worker_$1 reason=no_running_worker"; return; }
    net_delay "$CH_T-$1" "$CH_LAT" "$CH_JIT"
    ch_flog "fault=net_slow_worker_$1 target=$CH_T latency_ms=$CH_LAT jitter_ms=$CH_JIT margin=$CH_MARGIN for_ms=$ms session_ms=$B_SESSION_MS"
    ch_net_hold "$ms"
    net_heal "$CH_T-$1"
    ch_flog "heal target=$CH_T path=$1"
}
ch_fault_net_isolate_zk_server() {
    ch_rand 3
    local n=$((CH_R + 1)) ms mode
    ch_net_span
    ms=$CH_R
    mode=$(ens_mode "$n")
    ens_isolate "$n"
    ch_flog "fault=net_isolate_zk_server target=zk$n was=$mode for_ms=$ms past_session=$CH_PAST session_ms=$B_SESSION_MS"
    # The minority must stop serving (its clients then move on): within
    # CH_MINORITY_MS (default 5 s; ZooKeeper gives up after syncLimit, 1 s).
    local t0 end down_after=
    t0=$(_h_now_ms)
    end=$((t0 + ms))
    while (($(_h_now_ms) < end)); do
        ch_net_hold 200
        [[ -z $down_after && $(ens_mode "$n") == down ]] && down_after=$(($(_h_now_ms) - t0))
    done
    local serving=0
    if [[ -n $down_after ]]; then
        ch_flog "minority_stopped_serving target=zk$n after_ms=$down_after"
    elif ((ms >= CH_MINORITY_MS)); then
        serving=1
        ch_flog "minority_still_serving target=zk$n isolated_ms=$ms mode=$(ens_mode "$n")"
    fi
    # Not trusting srvr: the assignment read through the isolated server
    # alone, against the majority's (tests/chaos/minority.sh).
    local m maj="" verdict
    for m in 1 2 3; do ((m == n)) || maj+="${maj:+,}127.0.0.1:${ENS_CLIENT[m]}"; done
    verdict=$(minority_judge "127.0.0.1:${ENS_CLIENT[n]}" "$maj" "/baton/$B_GROUP/assignment" \
        $(($(_h_now_ms) - t0)) "$CH_MINORITY_MS")
    ch_flog "minority_read target=zk$n verdict=$verdict"
    case ${verdict%% *} in
    still_serving) serving=1 ;;
    stale_assignment)
        serving=1
        CH_MINORITY_STALE=$((CH_MINORITY_STALE + 1))
        ;;
    esac
    CH_MINORITY_SERVING=$((CH_MINORITY_SERVING + serving))
    ens_rejoin "$n"
    if ! ens_wait_quorum 90; then
        ch_flog "ensemble_no_quorum after zk$n rejoined"
        h_fail "the ZooKeeper ensemble did not recover (harness infrastructure)"
    fi
    ch_flog "heal target=zk$n zk_leader=zk$(ens_leader || echo none)"
}

# ch_net_fault_once: draws one network fault kind (weights out of 100; the
# sink's two need --sink pg and become Kafka and ZooKeeper ones without it).
ch_net_fault_once() {
    ch_rand 100
    local r=$CH_R
    if ((r < 22)); then ch_fault_net_cut_worker_path zk
    elif ((r < 36)); then ch_fault_net_cut_leader_zk
    elif ((r < 50)); then ch_fault_net_cut_worker_path kafka
    elif ((r < 62)); then
        if [[ $sink == pg ]]; then ch_fault_net_cut_worker_path sink; else ch_fault_net_cut_worker_path kafka; fi
    elif ((r < 76)); then ch_fault_net_isolate_zk_server
    elif ((r < 90)); then ch_fault_net_slow_worker zk
    else
        if [[ $sink == pg ]]; then ch_fault_net_slow_worker sink; else ch_fault_net_slow_worker zk; fi
    fi
}

# ch_fault_kind NAME: runs the fault NAME (for --kinds).
ch_fault_kind() {
    case $1 in
    worker_kill) ch_fault_worker_kill ;;
    worker_pause_short) ch_fault_worker_pause short ;;
    worker_pause_long) ch_fault_worker_pause long ;;
    coord_kill) ch_fault_coord_kill ;;
    zk_leader_kill) ch_fault_zk_leader_kill ;;
    worker_failpoint) ch_fault_worker_failpoint ;;
    coord_failpoint) ch_fault_coord_failpoint ;;
    net_cut_worker_zk) ch_fault_net_cut_worker_path zk ;;
    net_cut_leader_zk) ch_fault_net_cut_leader_zk ;;
    net_cut_worker_kafka) ch_fault_net_cut_worker_path kafka ;;
    net_cut_worker_sink) ch_fault_net_cut_worker_path sink ;;
    net_isolate_zk_server) ch_fault_net_isolate_zk_server ;;
    net_slow_worker_zk) ch_fault_net_slow_worker zk ;;
    net_slow_worker_sink) ch_fault_net_slow_worker sink ;;
    esac
}

# ch_fault_once: draws one fault kind (weights out of 100) and runs it;
# with --network, first a coin: a network fault or a signal one. With
# --kinds, one of those, uniformly.
ch_fault_once() {
    if ((${#CH_KINDS[@]})); then
        ch_rand ${#CH_KINDS[@]}
        ch_fault_kind "${CH_KINDS[CH_R]}"
        return
    fi
    if ((network)); then
        ch_rand 100
        ((CH_R < 55)) && { ch_net_fault_once; return; }
    fi
    ch_rand 100
    local r=$CH_R
    if ((r < 18)); then ch_fault_worker_kill
    elif ((r < 30)); then ch_fault_worker_pause short
    elif ((r < 44)); then ch_fault_worker_pause long
    elif ((r < 56)); then ch_fault_coord_kill
    elif ((r < 68)); then ch_fault_zk_leader_kill
    elif ((r < 90)); then ch_fault_worker_failpoint
    else ch_fault_coord_failpoint
    fi
}

# ch_pg_export: copies the PostgreSQL sink into $B_SINK (SQLite, the same
# tables) for check.sh, the output rows inserted in the server's commit
# order (pg_xact_commit_timestamp, then xmin) so rowids are commit order as
# in an SQLite sink, and turns sample.sh's server-clock samples into
# "MS PARTITION EPOCH MAX_ROWID" lines (the rows committed by then).
ch_pg_export() {
    local d=$H_DIR/pg-export
    mkdir -p "$d"
    pg_psql "COPY (SELECT partition, \"offset\", epoch, convert_from(value, 'UTF8'),
               (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint
             FROM baton_output WHERE grp = '$B_GROUP'
             ORDER BY pg_xact_commit_timestamp(xmin), xmin::text::bigint, partition, \"offset\")
             TO STDOUT WITH (FORMAT csv)" >"$d/output.csv" || return 1
    pg_psql "COPY (SELECT partition, epoch, next_offset, rejected FROM baton_fence
             WHERE grp = '$B_GROUP') TO STDOUT WITH (FORMAT csv)" >"$d/fence.csv" || return 1
    rm -f "$B_SINK"
    sqlite3 -bail "$B_SINK" <<SQL || return 1
CREATE TABLE baton_fence(grp TEXT, partition INTEGER, epoch INTEGER, next_offset INTEGER,
  rejected INTEGER, PRIMARY KEY(grp, partition));
CREATE TABLE baton_output(grp TEXT, partition INTEGER, offset INTEGER, epoch INTEGER, key BLOB,
  value BLOB, commit_us INTEGER, PRIMARY KEY(grp, partition, offset));
CREATE TEMP TABLE o(partition INTEGER, offset INTEGER, epoch INTEGER, value TEXT, commit_us INTEGER);
CREATE TEMP TABLE f(partition INTEGER, epoch INTEGER, next_offset INTEGER, rejected INTEGER);
CREATE TEMP TABLE s(us INTEGER, partition INTEGER, epoch INTEGER, zero INTEGER);
.mode csv
.import '$d/output.csv' o
.import '$d/fence.csv' f
.mode list
.separator ' '
.import '$H_DIR/fence-samples.txt' s
INSERT INTO baton_output(grp, partition, offset, epoch, value, commit_us)
  SELECT '$B_GROUP', partition, offset, epoch, value, commit_us FROM o ORDER BY rowid;
INSERT INTO baton_fence SELECT '$B_GROUP', partition, epoch, next_offset, rejected FROM f;
CREATE INDEX out_commit ON baton_output(commit_us);
.output '$H_DIR/fence-samples-rowid.txt'
SELECT s.us / 1000, s.partition, s.epoch,
       coalesce((SELECT rowid FROM baton_output WHERE commit_us <= s.us
                 ORDER BY commit_us DESC, rowid DESC LIMIT 1), 0) FROM s;
SQL
}

# --- the run ------------------------------------------------------------------
ENS_NET=$network ens_start 200
h_kafka_start "$B_TOPIC" "$B_PARTITIONS"
B_SINK=$H_DIR/sink.db B_SINK_URI=sqlite:$H_DIR/sink.db
if [[ $sink == pg ]]; then
    source "$BATON_SRC/tests/lib/pg.sh"
    # The server's own record of commit order (there is no rowid): check.sh
    # gets the rows in that order (ch_pg_export).
    PG_SERVER_OPTS=(-c track_commit_timestamp=on)
    pg_start
    pg_use_sink
    B_SINK_URI=$PG_URI
fi
if ((network)); then
    IFS=, read -r -a zk_servers <<<"$ZK"
    IFS=, read -r -a brokers <<<"$BOOTSTRAP"
    for c in "${COORDS[@]}"; do net_proxy_start "$c-zk" "${zk_servers[@]}"; done
    for w in "${WORKERS[@]}"; do
        net_proxy_start "$w-zk" "${zk_servers[@]}"
        net_proxy_start "$w-kafka" "${brokers[@]}"
        [[ $sink == pg ]] && net_proxy_start "$w-sink" "127.0.0.1:$PG_PORT"
    done
fi
b_init "$B_PARTITIONS"
h_spawn sampler "$BATON_SRC/tests/chaos/sample.sh" "$([[ $sink == pg ]] && echo "$PG_URI" || echo "$B_SINK")" "$B_GROUP" "$H_DIR/fence-samples.txt" 200
for c in "${COORDS[@]}"; do ch_start "$c"; done
for w in "${WORKERS[@]}"; do ch_start "$w"; done
h_wait_for 60 "$nworkers workers own every partition" b_all_active "$nworkers" ||
    h_fail "the group never became active before any fault"
ch_producer_start
ch_flog "start seed=$seed faults=$faults workers=$nworkers partitions=$B_PARTITIONS zk=$ZK"

t_start=$(_h_now_ms)
deadline=$((t_start + duration * 1000))
while ((CH_NFAULT < faults)); do
    ch_range "$quiet_min" "$quiet_max"
    ch_heal_for "$CH_R"
    if (($(_h_now_ms) >= deadline)); then
        ch_flog "duration_reached after $CH_NFAULT of $faults faults"
        break
    fi
    CH_NFAULT=$((CH_NFAULT + 1))
    ch_fault_once
done
t_faults=$(($(_h_now_ms) - t_start))
ch_flog "faults_end injected=$CH_NFAULT in_ms=$t_faults"

# Settle: stop armed-but-unfired failpoints from firing later (graceful
# restart), keep healing, let the producer's last batch finish, then wait
# for the sink to hold everything and for every partition to be active.
CH_PRODUCING=0
ch_heal_for 500
for name in "${COORDS[@]}" "${WORKERS[@]}"; do
    if [[ -n ${CH_FP[$name]:-} ]] && ! ch_log_since "$name" "event=failpoint name="; then
        ch_flog "disarm target=$name spec=${CH_FP[$name]} (unfired; graceful restart)"
        CH_EXPECT[$name]=1
        h_stop "$name"
        unset "CH_EXPECT[$name]"
        ch_start "$name"
    fi
done
if ((network)); then
    for name in "${!NET_SEQ[@]}"; do net_heal "$name"; done
fi
settle_deadline=$(($(_h_now_ms) + settle_timeout * 1000))
settled=0
while (($(_h_now_ms) < settle_deadline)); do
    ch_heal
    if [[ -n ${CH_PRODUCER_DONE[$CH_BATCH]:-} ]] && b_sink_has "$CH_PRODUCED" &&
        b_all_active "$nworkers"; then
        settled=1
        break
    fi
    sleep 0.5
done
ch_flog "settle settled=$settled produced=$CH_PRODUCED sink_rows=$(b_sink_count 2>/dev/null || echo '?')"
b_status >"$H_DIR/final-status.json" 2>&1 || true
h_stop sampler
b_ctl status >&2 || true

echo "== chaos: fault log ($FLOG):" >&2
grep -c 'event=fault=' "$FLOG" | sed 's/^/   faults injected: /' >&2
sed -n 's/.* event=fault=\([a-z_]*\).*/\1/p' "$FLOG" | sort | uniq -c | sed 's/^/   /' >&2

rc=0
samples=$H_DIR/fence-samples.txt
if [[ $sink == pg ]]; then
    ch_pg_export || { echo "could not export the PostgreSQL sink for the checker" >&2; rc=1; }
    samples=$H_DIR/fence-samples-rowid.txt
fi
t_check=$(_h_now_ms)
"$BATON_SRC/tests/chaos/check.sh" --bootstrap "$BOOTSTRAP" --topic "$B_TOPIC" --sink "$B_SINK" \
    --group "$B_GROUP" --deliveries "$H_DIR/deliveries" --samples "$samples" --status "$H_DIR/final-status.json" \
    --workers "${WORKERS[*]}" || rc=$?
echo "== chaos: check took $(($(_h_now_ms) - t_check)) ms (topic from the delivery reports)" >&2
# CH_CHECK_READBACK=1 also runs the checker the old way, reading the topic
# back from Kafka, and says how long that took (for comparing the two).
if [[ ${CH_CHECK_READBACK:-0} == 1 ]]; then
    t_check=$(_h_now_ms)
    "$BATON_SRC/tests/chaos/check.sh" --bootstrap "$BOOTSTRAP" --topic "$B_TOPIC" --sink "$B_SINK" \
        --group "$B_GROUP" --samples "$samples" --status "$H_DIR/final-status.json" \
        --workers "${WORKERS[*]}" || rc=$?
    echo "== chaos: check reading the topic back took $(($(_h_now_ms) - t_check)) ms" >&2
fi
if ((network)); then
    echo "== chaos: self-suspension: $CH_SUSPEND_CHECKED ZooKeeper cut(s) past 2/3 of the session checked," \
        "$CH_SUSPEND_VIOLATIONS violation(s); suspended after (ms from the last answer):${CH_SUSPEND_SEEN:- none}" >&2
    ((CH_SUSPEND_VIOLATIONS == 0)) || { echo "a worker wrote to the sink after it should have suspended" >&2; rc=1; }
    ((CH_MINORITY_SERVING == 0)) ||
        { echo "$CH_MINORITY_SERVING isolated ZooKeeper server(s) still served after ${CH_MINORITY_MS} ms" \
            "($CH_MINORITY_STALE of them a stale assignment)" >&2; rc=1; }
    echo "== chaos: leader step-down: $CH_LEADER_CHECKED leader cut(s) past 2/3 of the session checked," \
        "$CH_LEADER_VIOLATIONS violation(s); stepped down after (ms from the last answer):${CH_LEADER_SEEN:- none}" >&2
    ((CH_LEADER_VIOLATIONS == 0)) ||
        { echo "a leading coordinator cut from ZooKeeper did not step down within 2/3 of its session" >&2; rc=1; }
fi
# Graceful leave of everything, so the sanitizers' exit-time reports (leaks)
# are in the logs before they are searched.
for name in "${WORKERS[@]}" "${COORDS[@]}"; do
    CH_EXPECT[$name]=1
    h_stop "$name"
    grc=0
    h_wait_exit "$name" 0 >/dev/null 2>&1 || grc=$?
    ((grc == 0)) || { echo "$name exited $grc on SIGTERM (expected a graceful 0)" >&2; rc=1; }
done
san=$(grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$H_DIR"/*.log 2>/dev/null || true)
[[ -z $san ]] || { echo "sanitizer reports in: $san" >&2; rc=1; }
((settled)) || { echo "did not settle within ${settle_timeout}s (see the check above)" >&2; rc=1; }
((CH_PRODUCER_FAILED == 0)) || { echo "a producer batch failed" >&2; rc=1; }
((CH_CRASHES == 0)) || { echo "$CH_CRASHES process(es) crashed" >&2; rc=1; }
summary="seed=$seed faults=$CH_NFAULT/$faults fault_phase_ms=$t_faults produced=$CH_PRODUCED unexpected_exits=$CH_EXITS crashes=$CH_CRASHES"
((network)) && summary+=" suspend_checked=$CH_SUSPEND_CHECKED suspend_violations=$CH_SUSPEND_VIOLATIONS minority_serving=$CH_MINORITY_SERVING minority_stale=$CH_MINORITY_STALE"
((network)) && summary+=" leader_checked=$CH_LEADER_CHECKED leader_violations=$CH_LEADER_VIOLATIONS"
((rc == 0)) || h_fail "$summary"
h_pass "$summary"
