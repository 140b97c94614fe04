# shellcheck shell=bash
# harness.sh: the integration-test harness, sourced by tests/integration/*.sh
# and by deploy/demo.sh. It owns a temp work dir, starts a standalone
# ZooKeeper and the embedded Kafka (baton-devkafka) on free loopback ports,
# runs background processes with one log file each, and on exit stops every
# process it started -- by recorded pid only, never by name.
#
# Usage:
#   source "$BATON_SRC/tests/lib/harness.sh"
#   h_init my_test
#   h_zk_start                 # exports ZK=127.0.0.1:PORT
#   h_kafka_start in 3         # exports BOOTSTRAP=127.0.0.1:PORT
#   h_spawn w1 "$BATON_BIN/baton-worker" ...
#   h_wait_for 10 "w1 claims p0" h_zk exists /baton/g/partitions/0/claims
#   h_pass "all good"
#
# Functions (timeouts in whole seconds):
#   h_init NAME                      work dir H_DIR, EXIT trap, BATON_BIN/SRC
#   h_free_port                      prints a free loopback port
#   h_closer NAME PORT | h_closer_first NAME   a listener that closes every
#                                    connection; the time of its first accept
#   h_zk_start [TICK_MS]             ZooKeeper; exports ZK (restart: same port)
#   h_zk_stop                        stops it (data kept)
#   h_zk CMD ARGS...                 baton-zk --zk "$ZK" CMD ARGS...
#   h_kafka_start TOPIC[,TOPIC2...] PARTITIONS [BROKERS]   baton-devkafka; exports BOOTSTRAP
#   h_kafka_stop
#   h_spawn NAME CMD...              background, log $H_DIR/NAME.log
#   h_pid NAME | h_alive NAME | h_kill NAME [SIG] | h_stop NAME [TIMEOUT_S]
#   h_wait_exit NAME TIMEOUT_S       returns NAME's exit code (124: timeout)
#   h_wait_for TIMEOUT_S DESC CMD... polls CMD every 0.1 s; 1 on timeout
#   h_fail MSG | h_pass MSG | h_log MSG | h_dump_logs [LINES] | h_cleanup
# Set BATON_KEEP=1 to keep H_DIR after a passing run.
#
# Works under `set -euo pipefail`. Functions that report through their
# status (h_wait_exit, h_wait_for, h_alive) must then be called as
# `rc=0; h_wait_exit w1 10 || rc=$?` or inside `if`. Call h_spawn and
# h_*_start in the test's main shell, not inside $( ): the pids must be
# children of that shell. Every wait is bounded.

H_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Seconds h_stop and h_cleanup wait after SIGTERM before SIGKILL.
: "${H_STOP_TIMEOUT:=10}"
# Seconds to wait for ZooKeeper (JVM start) and the embedded Kafka.
: "${H_ZK_START_TIMEOUT:=30}"
: "${H_KAFKA_START_TIMEOUT:=15}"

declare -gA H_PIDS=()  # name -> pid of the latest process of that name
declare -gA H_RC=()    # pid -> exit code, once collected
declare -ga H_ALL=()   # every pid ever spawned, in spawn order
declare -gA H_INFRA=() # pid -> 1 for ZooKeeper/Kafka (stopped last)
H_FAILED=0
H_CLEANED=0
H_LAST_DUMP_MS=0
H_REAPER_PID=

# --- time -------------------------------------------------------------------

# Milliseconds since the epoch, without forking.
_h_now_ms() {
    local t=${EPOCHREALTIME/./}
    echo $((t / 1000))
}

# _h_clock VAR: VAR = milliseconds since the epoch. Unlike $(_h_now_ms),
# no subshell: the waiting loops below run on the cores a benchmark
# measures, and each fork of this script's shell cost 4-15 ms of CPU there
# (perf, 48 x 6 rolling restart, 2026-12-07: the harness's subshells,
# sleeps and pipes took 40% of a core during the roll).
_h_clock() {
    local _hc_t=${EPOCHREALTIME/./} # a name no caller passes as VAR
    printf -v "$1" '%d' $((_hc_t / 1000))
}

# _h_stamp VAR: VAR = the time of day as HH:MM:SS.mmm (date +%H:%M:%S.%3N),
# without a process.
_h_stamp() {
    local _hs_t=$EPOCHREALTIME _hs_frac # names no caller passes as VAR
    _hs_frac=${_hs_t#*.}
    printf -v "$1" '%(%H:%M:%S)T.%s' "${_hs_t%.*}" "${_hs_frac:0:3}"
}

# _h_nap SECONDS: sleeps without starting a process: read's timeout on a
# FIFO that nobody writes to (this shell holds it open for writing too, so
# it never sees an end of file; made once per shell, in H_DIR, and
# unlinked at once). sleep(1) before h_init, or if the FIFO cannot be had.
# Not a process substitution: bash 5.2's wait for a spawned process then
# hung now and then (it_bench_input, 2026-12-07).
_H_NAP_FD=
_H_NAP_PID=
_h_nap() {
    if [[ $_H_NAP_PID != "$BASHPID" && -n ${H_DIR:-} && -d $H_DIR ]]; then
        local fifo=$H_DIR/.nap.$BASHPID
        _H_NAP_FD=-1
        if mkfifo "$fifo" 2>/dev/null; then
            exec {_H_NAP_FD}<>"$fifo" || _H_NAP_FD=-1
            rm -f "$fifo"
        fi
        _H_NAP_PID=$BASHPID
    fi
    if [[ $_H_NAP_PID == "$BASHPID" ]] && ((_H_NAP_FD >= 0)); then
        read -r -t "$1" -u "$_H_NAP_FD" _ || true
    else
        sleep "$1"
    fi
}

# --- setup and teardown -----------------------------------------------------

# h_init NAME: creates H_DIR, resolves BATON_SRC / BATON_BIN, installs the
# EXIT trap that runs h_cleanup.
h_init() {
    H_NAME=${1:?h_init NAME}
    : "${BATON_SRC:=$(cd "$H_LIB_DIR/../.." && pwd)}"
    : "${BATON_BIN:=$BATON_SRC/build/bin}"
    export BATON_SRC BATON_BIN
    H_DIR=$(mktemp -d "${TMPDIR:-/tmp}/baton-it.XXXXXX") ||
        { echo "h_init: cannot create a work dir in ${TMPDIR:-/tmp}" >&2; exit 1; }
    export H_DIR
    # Every member's lock file (--state-dir, baton_incarnation.h) in the
    # test's own directory: tests running side by side never share one, and
    # a worker restarted by the test finds its previous incarnation's.
    export BATON_STATE_DIR=$H_DIR/state
    echo "$H_NAME" >"$H_DIR/test-name"
    H_SHELL_PID=$BASHPID
    trap 'h_cleanup' EXIT
    # Turn signals into an exit so the EXIT trap stops what we started.
    trap 'exit 130' INT
    trap 'exit 143' TERM
    _h_reaper_start
    if [[ ! -d $BATON_BIN ]]; then
        h_fail "BATON_BIN=$BATON_BIN is not a directory (build first)"
    fi
    echo "== $H_NAME: work dir $H_DIR" >&2
}

# h_log MSG...: a timestamped harness line on stderr.
h_log() {
    local t
    _h_stamp t
    printf '[%s] %s\n' "$t" "$*" >&2
}

# h_dump_logs [LINES]: the tail of every log in H_DIR, on stderr.
h_dump_logs() {
    local n=${1:-40} f
    [[ -n ${H_DIR:-} && -d $H_DIR ]] || return 0
    H_LAST_DUMP_MS=$(_h_now_ms)
    for f in "$H_DIR"/*.log; do
        [[ -f $f ]] || continue
        echo "----- tail -n $n $f" >&2
        tail -n "$n" "$f" >&2 || true
    done
    echo "----- end of logs" >&2
}

# h_fail MSG: prints the logs' tails (unless h_wait_for printed them in the
# last two seconds) and FAIL, and exits 1 (the EXIT trap then stops
# everything and keeps H_DIR).
h_fail() {
    H_FAILED=1
    (($(_h_now_ms) - H_LAST_DUMP_MS < 2000)) || h_dump_logs 40
    echo "FAIL: ${H_NAME:-test}: $*" >&2
    exit 1
}

# h_pass MSG: prints PASS. Does not exit: a test ends by reaching its end.
h_pass() {
    echo "PASS: ${H_NAME:-test}: $*" >&2
}

# h_cleanup: stops every spawned process (applications first, then ZooKeeper
# and Kafka, so applications can still leave gracefully), then removes
# H_DIR unless the test failed or BATON_KEEP=1. Runs from the EXIT trap;
# safe to call twice.
h_cleanup() {
    local rc=$?
    ((H_CLEANED)) && return 0
    H_CLEANED=1
    set +e
    local -a apps=() infra=()
    local pid
    for pid in "${H_ALL[@]}"; do
        if [[ -n ${H_INFRA[$pid]:-} ]]; then infra+=("$pid"); else apps+=("$pid"); fi
    done
    _h_stop_pids "${apps[@]}"
    _h_stop_pids "${infra[@]}"
    if [[ -n $H_REAPER_PID ]]; then
        kill -TERM "$H_REAPER_PID" 2>/dev/null
        wait "$H_REAPER_PID" 2>/dev/null
    fi
    if [[ -n ${H_DIR:-} && -d $H_DIR ]]; then
        if ((rc != 0 || H_FAILED)) || [[ ${BATON_KEEP:-0} == 1 ]]; then
            echo "== ${H_NAME:-test}: logs kept in $H_DIR (exit $rc)" >&2
        else
            rm -rf "$H_DIR"
        fi
    fi
    return "$rc"
}

# --- processes --------------------------------------------------------------

# _h_alive PID: true if PID is a live child of the harness shell (a zombie
# or a pid reused by someone else does not count).
_h_alive() {
    local pid=$1 st rest
    read -r st 2>/dev/null <"/proc/$pid/stat" || return 1
    rest=${st##*) } # fields after "(comm) ": state ppid ...
    # Parameter expansion, not a here-string: bash writes a here-string to
    # a temporary file (1-4 ms a call on these machines).
    local state=${rest%% *} ppid
    rest=${rest#* }
    ppid=${rest%% *}
    [[ $state != Z && $ppid == "$H_SHELL_PID" ]]
}

# _h_starttime PID: the process's start time (clock ticks since boot), which
# tells a process from a later one that reuses its pid.
_h_starttime() {
    local t
    _h_starttime_to t "$1" || return 1
    echo "$t"
}

# _h_starttime_to VAR PID: the same into VAR, without a subshell (or the
# temporary file of a here-string).
_h_starttime_to() {
    local _hst_st # names no caller passes as VAR
    read -r _hst_st 2>/dev/null <"/proc/$2/stat" || return 1
    local -a _hst_f
    # shellcheck disable=SC2206 # numbers and a state letter: split on blanks
    _hst_f=(${_hst_st##*) })
    printf -v "$1" '%s' "${_hst_f[19]}"
}

# _h_reaper_start: a background watchdog for the case the EXIT trap never
# runs (the test shell killed with SIGKILL, e.g. by a CTest timeout): once
# the shell is gone it stops every process listed in $H_DIR/spawned whose
# start time still matches, so no JVM outlives its test.
_h_reaper_start() {
    local parent=$H_SHELL_PID dir=$H_DIR
    (
        while kill -0 "$parent" 2>/dev/null && [[ -d $dir ]]; do
            sleep 1
        done
        [[ -f $dir/spawned ]] || exit 0
        local sig pid start
        for sig in CONT TERM; do
            while read -r pid start; do
                [[ $(_h_starttime "$pid") == "$start" ]] && kill -s "$sig" "$pid"
            done <"$dir/spawned"
        done
        sleep 3
        while read -r pid start; do
            [[ $(_h_starttime "$pid") == "$start" ]] && kill -KILL "$pid"
        done <"$dir/spawned"
    ) </dev/null >/dev/null 2>&1 &
    H_REAPER_PID=$!
}

# _h_collect PID: records PID's exit code once it has exited (wait only
# works once per pid, and only in the shell that started it).
_h_collect() {
    local pid=$1 rc=0
    [[ -n ${H_RC[$pid]:-} ]] && return 0
    wait "$pid" 2>/dev/null || rc=$?
    H_RC[$pid]=$rc
}

# _h_stop_pids PID...: SIGCONT (in case one is stopped) and SIGTERM to all,
# wait up to H_STOP_TIMEOUT s in total, SIGKILL the rest, reap all.
_h_stop_pids() {
    local pid any deadline
    (($# > 0)) || return 0
    for pid in "$@"; do
        if _h_alive "$pid"; then
            kill -CONT "$pid" 2>/dev/null || true
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    local now
    _h_clock now
    deadline=$((now + H_STOP_TIMEOUT * 1000))
    while :; do
        any=0
        for pid in "$@"; do
            if _h_alive "$pid"; then any=1; fi
        done
        ((any)) || break
        _h_clock now
        ((now < deadline)) || break
        _h_nap 0.05
    done
    for pid in "$@"; do
        if _h_alive "$pid"; then
            h_log "pid $pid ignored SIGTERM for ${H_STOP_TIMEOUT}s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    for pid in "$@"; do
        _h_collect "$pid"
    done
}

# _h_spawn_io NAME OUT ERR CMD...: the body of h_spawn with separate stdout
# and stderr files. Records the pid; fails the test if NAME is running.
_h_spawn_io() {
    local name=$1 out=$2 err=$3
    shift 3
    [[ -n ${H_DIR:-} ]] || { echo "h_spawn: call h_init first" >&2; exit 1; }
    local old=${H_PIDS[$name]:-}
    if [[ -n $old ]] && _h_alive "$old"; then
        h_fail "h_spawn: '$name' is already running (pid $old)"
    fi
    local stamp
    _h_stamp stamp
    printf '=== %s spawn %s: %s\n' "$stamp" "$name" "$*" >>"$err"
    # The subshell restores SIGINT/SIGQUIT, which bash ignores for
    # background commands of a non-interactive shell, then becomes CMD.
    (
        trap - INT QUIT TERM
        exec "$@"
    ) </dev/null >>"$out" 2>>"$err" &
    local pid=$!
    # The kernel reuses pids (pid_max is 32768 on these machines, and an
    # hour of chaos forks far more): a new process must not inherit the
    # exit code collected for an earlier one with its pid (a soak counted
    # an aborted worker as "killed by a signal the harness did not send"
    # with the 137 of a process killed half an hour before).
    unset "H_RC[$pid]"
    H_PIDS[$name]=$pid
    H_ALL+=("$pid")
    echo "$pid" >"$H_DIR/$name.pid"
    local start=""
    _h_starttime_to start "$pid" || true
    echo "$pid $start" >>"$H_DIR/spawned"
}

# h_spawn NAME CMD...: runs CMD in the background, stdout and stderr
# appended to $H_DIR/NAME.log, pid in $H_DIR/NAME.pid and h_pid NAME. A
# name can be reused once its previous process has exited.
h_spawn() {
    local name=${1:?h_spawn NAME CMD...}
    shift
    (($# > 0)) || h_fail "h_spawn $name: no command"
    _h_spawn_io "$name" "$H_DIR/$name.log" "$H_DIR/$name.log" "$@"
}

# h_pid NAME: prints the pid of NAME's latest process.
h_pid() {
    local pid=${H_PIDS[${1:?h_pid NAME}]:-}
    [[ -n $pid ]] || { echo "h_pid: no process named '$1'" >&2; return 1; }
    echo "$pid"
}

# h_alive NAME: true while NAME's process runs.
h_alive() {
    local pid=${H_PIDS[${1:?h_alive NAME}]:-}
    [[ -n $pid ]] && _h_alive "$pid"
}

# h_stopped NAME: true while NAME's process is stopped (SIGSTOP, or a
# failpoint's stop action).
h_stopped() {
    local pid=${H_PIDS[${1:?h_stopped NAME}]:-} st
    [[ -n $pid ]] && read -r st 2>/dev/null <"/proc/$pid/stat" && st=${st##*) } && [[ ${st%% *} == T ]]
}

# h_at_failpoint NAME FAILPOINT: true once NAME's log says it reached
# FAILPOINT (event=failpoint name=FAILPOINT) and its process is stopped
# there (a failpoint's stop action).
h_at_failpoint() {
    grep -q "event=failpoint name=${2:?h_at_failpoint NAME FAILPOINT}\b" "$H_DIR/${1:?}.log" 2>/dev/null &&
        h_stopped "$1"
}

# h_kill NAME [SIG]: sends SIG (default TERM; e.g. STOP, CONT, KILL, INT)
# to NAME's process, by pid. Fails if it is not running.
h_kill() {
    local name=${1:?h_kill NAME [SIG]} sig=${2:-TERM}
    local pid=${H_PIDS[$name]:-}
    if [[ -z $pid ]] || ! _h_alive "$pid"; then
        echo "h_kill: '$name' is not running" >&2
        return 1
    fi
    kill -s "$sig" "$pid"
}

# h_stop NAME [TIMEOUT_S]: SIGTERM (and SIGCONT, in case it is stopped),
# waits up to TIMEOUT_S (default H_STOP_TIMEOUT), then SIGKILL. Returns 0;
# the exit code is then available from h_wait_exit NAME 0.
h_stop() {
    local name=${1:?h_stop NAME [TIMEOUT_S]}
    local pid=${H_PIDS[$name]:-}
    [[ -n $pid ]] || return 0
    local H_STOP_TIMEOUT=${2:-$H_STOP_TIMEOUT}
    _h_stop_pids "$pid"
}

# h_wait_exit NAME TIMEOUT_S: waits up to TIMEOUT_S for NAME to exit and
# returns its exit code (128+N if killed by signal N). Returns 124 with a
# message if it is still running at the deadline.
h_wait_exit() {
    local name=${1:?h_wait_exit NAME TIMEOUT_S} timeout=${2:?h_wait_exit NAME TIMEOUT_S}
    local pid=${H_PIDS[$name]:-}
    [[ -n $pid ]] || { echo "h_wait_exit: no process named '$name'" >&2; return 127; }
    local now deadline
    _h_clock now
    deadline=$((now + timeout * 1000))
    while _h_alive "$pid"; do
        _h_clock now
        if ((now >= deadline)); then
            echo "h_wait_exit: '$name' (pid $pid) still running after ${timeout}s" >&2
            return 124
        fi
        _h_nap 0.05
    done
    _h_collect "$pid"
    return "${H_RC[$pid]}"
}

# h_wait_for TIMEOUT_S DESCRIPTION CMD...: runs CMD (output discarded) every
# 0.1 s until it succeeds (return 0) or TIMEOUT_S passes (then prints the
# description and the logs' tails, returns 1). CMD must itself be bounded.
h_wait_for() {
    local timeout=${1:?h_wait_for TIMEOUT_S DESCRIPTION CMD...} desc=${2:?}
    shift 2
    local _hw_now deadline
    _h_clock _hw_now
    deadline=$((_hw_now + timeout * 1000))
    while :; do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        _h_clock _hw_now
        if ((_hw_now >= deadline)); then
            echo "TIMEOUT: ${H_NAME:-test}: after ${timeout}s waiting for: $desc" >&2
            echo "  (polled: $*)" >&2
            h_dump_logs 40
            return 1
        fi
        _h_nap 0.1
    done
}

# --- ports ------------------------------------------------------------------

# _h_port_listening PORT: true if something accepts on 127.0.0.1:PORT.
_h_port_listening() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# h_free_port: prints a loopback TCP port nobody listens on and this test has
# not handed out yet (remembered in $H_DIR/ports, since callers run it
# inside $( )). Picks from 20000-60000, avoiding the kernel's ephemeral
# range when it can (outgoing connections and the mock cluster's listeners
# take ports from there).
h_free_port() {
    local lo=20000 hi=60000 elo ehi
    if read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null; then
        if ((elo > lo + 1000 && elo <= hi)); then
            hi=$((elo - 1))
        elif ((ehi >= lo && ehi < hi - 1000)); then
            lo=$((ehi + 1))
        fi
    fi
    local i p used="" ports=${H_DIR:?h_free_port: call h_init first}/ports
    [[ -f $ports ]] && used=$(<"$ports")
    for ((i = 0; i < 200; i++)); do
        p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
        [[ $'\n'$used$'\n' == *$'\n'$p$'\n'* ]] && continue
        _h_port_listening "$p" && continue
        echo "$p" >>"$ports"
        echo "$p"
        return 0
    done
    echo "h_free_port: no free port found in $lo-$hi" >&2
    return 1
}

# h_closer NAME PORT: a listener on 127.0.0.1:PORT (the process NAME) that
# accepts every connection and closes it at once, logging "accepted PID MS"
# (its pid, epoch ms) for each; returns once it listens. A client with a
# timeout that gets nowhere with it is timed from its first attempt
# (h_closer_first), which comes as its own clock starts: timed from its
# spawn, a loaded machine's slow process start counts too (seconds, once).
# Its lines carry its pid, so a second h_closer of the same NAME (the log
# is appended to) is not answered with the first one's lines; a listener
# that cannot bind (another process took the port) fails at once.
h_closer() {
    local name=${1:?h_closer NAME PORT} port=${2:?h_closer NAME PORT} pid
    h_spawn "$name" python3 -u -c '
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
print("ready", os.getpid(), flush=True)
while True:
    c, _ = s.accept()
    print("accepted", os.getpid(), time.time_ns() // 1000000, flush=True)
    c.close()
' "$port"
    pid=$(h_pid "$name")
    # The line, not a connect: a connect of ours would be the first accept.
    h_wait_for 15 "the closing listener $name on port $port" _h_closer_up "$name" "$pid" ||
        h_fail "the closing listener $name did not start"
    grep -qx "ready $pid" "$H_DIR/$name.log" ||
        h_fail "the closing listener $name on port $port exited: $(tail -n 3 "$H_DIR/$name.log")"
}

# _h_closer_up NAME PID: true once the listener PID says it listens, or
# has exited.
_h_closer_up() {
    grep -qx "ready $2" "$H_DIR/$1.log" || ! _h_alive "$2"
}

# h_closer_first NAME: the time (epoch ms) of the latest h_closer NAME's
# first accept; empty if none.
h_closer_first() {
    local name=${1:?h_closer_first NAME} pid
    pid=$(h_pid "$name") || return 0
    sed -n "/^accepted $pid [0-9]*\$/ { s/^accepted $pid //p; q; }" "$H_DIR/$name.log"
}

# --- ZooKeeper --------------------------------------------------------------

# _h_4lw PORT WORD: sends a ZooKeeper four-letter word, prints the answer.
_h_4lw() {
    (
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf '%s' "$2" >&3
        # The server closes after answering; cap the read anyway.
        timeout 2 cat <&3
    ) 2>/dev/null
}

# h_zk_start [TICK_MS]: starts a standalone ZooKeeper (tickTime TICK_MS,
# default 200: sessions of 0.4-20 s) and waits until it serves. Exports
# ZK=127.0.0.1:PORT. Calling it again after h_zk_stop restarts the same
# server: same port, same data dir, so sessions can survive a restart.
h_zk_start() {
    local tick=${1:-200}
    if [[ -n ${H_PIDS[zk]:-} ]] && _h_alive "${H_PIDS[zk]}"; then
        h_fail "h_zk_start: ZooKeeper already running (pid ${H_PIDS[zk]})"
    fi
    local zdir=$H_DIR/zk
    mkdir -p "$zdir/data"
    cat >"$zdir/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
EOF
    H_SERVE_PORT=${H_ZK_PORT:-}
    _h_zk_tick=$tick
    h_serve zk "$H_ZK_START_TIMEOUT" 'Address already in use' _h_zk_launch _h_zk_ready
    H_ZK_PORT=$H_SERVE_PORT
    export ZK=127.0.0.1:$H_ZK_PORT
    h_log "zookeeper ready at $ZK in $H_SERVE_MS ms (tick ${tick} ms, pid ${H_PIDS[zk]})"
}

# h_zk_classpath: the standalone server's class path. log4j and its slf4j
# binding are not on the jar's manifest class path; without them the
# server logs nothing at all. No directory (each server is given its
# log4j.properties by -Dlog4j.configuration): a class-data sharing archive
# refuses a class path with a non-empty directory in it.
h_zk_classpath() {
    local cp=/usr/share/java/zookeeper.jar j
    for j in /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar; do
        [[ -f $j ]] && cp+=":$j"
    done
    echo "$cp"
}

# h_zk_java: the java command line every ZooKeeper server of the tests
# starts with (its class path and main class follow). A server's start is
# mostly the JVM loading and checking classes; with a class-data sharing
# archive of the server's classes (JDK 17's -XX:SharedArchiveFile) it
# serves about a fifth sooner (docs/testing.md). The
# archive lives in the build directory ($BATON_BIN/../zk-classes.jsa) and
# the first server start of a build makes it, under a lock
# (_h_zk_cds_dump); if that fails, zk-classes.jsa.failed says why and the
# servers start without it. H_ZK_CDS=0 turns it off.
h_zk_java() {
    # shellcheck disable=SC2046 # an option, or none
    echo "${_H_ZK_JVM[@]}" $(_h_zk_cds)
}

# The JVM and flags of every server, and of the run that makes the archive
# (an archive is used only by a JVM started the way it was made).
_H_ZK_JVM=(java -XX:+UseSerialGC -XX:TieredStopAtLevel=1)

_h_zk_cds() {
    [[ ${H_ZK_CDS:-1} == 1 && -n ${BATON_BIN:-} && -d $BATON_BIN/.. ]] || return 0
    local jsa
    jsa=$(cd "$BATON_BIN/.." && pwd)/zk-classes.jsa
    if [[ ! -s $jsa && ! -e $jsa.failed ]]; then
        (
            flock -w 60 9 || exit 0
            [[ -s $jsa || -e $jsa.failed ]] || _h_zk_cds_dump "$jsa"
        ) 9>"$jsa.lock" >/dev/null 2>&1
    fi
    [[ -s $jsa ]] && echo "-XX:SharedArchiveFile=$jsa"
    return 0
}

# _h_zk_cds_dump JSA: runs a standalone server on a free port until it
# serves, stops it (by its pid; bounded), and keeps the classes it loaded
# in JSA (written to JSA.tmp at the JVM's exit, then renamed).
_h_zk_cds_dump() {
    local jsa=$1 d port pid ok=0 i
    d=$(mktemp -d "${TMPDIR:-/tmp}/baton-zkcds.XXXXXX")
    port=$(h_free_port) || { echo "no free port" >"$jsa.failed"; rm -rf "$d"; return; }
    printf 'tickTime=200\ndataDir=%s/data\nclientPortAddress=127.0.0.1\nclientPort=%s\nadmin.enableServer=false\n4lw.commands.whitelist=*\n' \
        "$d" "$port" >"$d/zoo.cfg"
    rm -f "$jsa.tmp"
    "${_H_ZK_JVM[@]}" -XX:ArchiveClassesAtExit="$jsa.tmp" -Xmx256m \
        -Dzookeeper.jmx.log4j.disable=true -cp "$(h_zk_classpath)" \
        org.apache.zookeeper.server.ZooKeeperServerMain "$d/zoo.cfg" >"$d/zk.log" 2>&1 &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        if _h_zk_ready "$port"; then ok=1; break; fi
        sleep 0.05
    done
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 200; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if ((ok)) && [[ -s $jsa.tmp ]]; then
        mv -f "$jsa.tmp" "$jsa"
    else
        { echo "the archiving server did not serve or wrote no archive:"; tail -n 5 "$d/zk.log"; } >"$jsa.failed"
        rm -f "$jsa.tmp"
    fi
    rm -rf "$d"
}

# _h_zk_launch PORT: h_zk_start's server on PORT (tick $_h_zk_tick).
_h_zk_launch() {
    local port=$1 tick=$_h_zk_tick zdir=$H_DIR/zk
    cat >"$zdir/zoo.cfg" <<EOF
tickTime=$tick
initLimit=10
syncLimit=5
dataDir=$zdir/data
clientPortAddress=127.0.0.1
clientPort=$port
maxClientCnxns=0
minSessionTimeout=$((2 * tick))
maxSessionTimeout=20000
4lw.commands.whitelist=*
admin.enableServer=false
autopurge.purgeInterval=0
EOF
    _h_spawn_io zk "$H_DIR/zk.log" "$H_DIR/zk.log" \
        $(h_zk_java) -Xmx256m ${H_ZK_JAVA_OPTS:-} \
        -Dzookeeper.log.dir="$zdir" -Dzookeeper.root.logger=INFO,CONSOLE \
        -Dlog4j.configuration="file:$zdir/log4j.properties" \
        -Dzookeeper.jmx.log4j.disable=true \
        -cp "$(h_zk_classpath)" org.apache.zookeeper.server.ZooKeeperServerMain "$zdir/zoo.cfg"
}

# _h_zk_ready PORT: "ruok" answers "imok" and "srvr" reports "Mode:
# standalone" (imok alone comes before the server loads its data).
_h_zk_ready() {
    [[ $(_h_4lw "$1" ruok) == imok ]] && [[ $(_h_4lw "$1" srvr) == *"Mode: standalone"* ]]
}

# h_serve NAME TIMEOUT_S BUSY_RE LAUNCH READY: starts the infrastructure
# server NAME (stopped after the applications) and waits until it answers.
# Its port is $H_SERVE_PORT if set (a restart keeps its port), else a free
# one. `LAUNCH PORT` spawns it through _h_spawn_io NAME with its log in
# $H_DIR/NAME.log; `READY PORT` succeeds once it serves (polled every 50 ms
# for TIMEOUT_S s). A server that dies at startup with BUSY_RE in its log
# lost its port between check and bind: it is tried again on a fresh port,
# up to 3 times (never when the port was given: a restart fails instead). Sets H_SERVE_PORT, and H_SERVE_MS to the time it took.
h_serve() {
    local name=$1 timeout=$2 busy=$3 launch=$4 ready=$5 attempt t0 deadline
    local fixed=${H_SERVE_PORT:-}
    t0=$(_h_now_ms)
    for ((attempt = 1; attempt <= 3; attempt++)); do
        if [[ -z ${H_SERVE_PORT:-} ]]; then
            H_SERVE_PORT=$(h_free_port) || h_fail "$name: no free port"
        fi
        "$launch" "$H_SERVE_PORT"
        H_INFRA[${H_PIDS[$name]}]=1
        deadline=$(($(_h_now_ms) + timeout * 1000))
        while (($(_h_now_ms) < deadline)); do
            _h_alive "${H_PIDS[$name]}" || break
            if "$ready" "$H_SERVE_PORT"; then
                H_SERVE_MS=$(($(_h_now_ms) - t0))
                return 0
            fi
            sleep 0.05
        done
        _h_alive "${H_PIDS[$name]}" &&
            h_fail "$name on port $H_SERVE_PORT not ready after ${timeout}s"
        h_log "$name exited during startup on port $H_SERVE_PORT (attempt $attempt)"
        if [[ -n $fixed ]] || ! grep -q -- "$busy" "$H_DIR/$name.log" 2>/dev/null; then
            h_fail "$name exited during startup: $(tail -n 5 "$H_DIR/$name.log")"
        fi
        H_SERVE_PORT=
    done
    h_fail "$name did not start"
}

# h_zk_stop: stops ZooKeeper (SIGTERM, then SIGKILL). Keeps port and data
# for a later h_zk_start.
h_zk_stop() {
    h_stop zk
}

# h_zk CMD ARGS...: baton-zk against $ZK (see baton-zk --help).
h_zk() {
    "$BATON_BIN/baton-zk" --zk "${ZK:?h_zk: ZooKeeper not started}" "$@"
}

# --- Kafka ------------------------------------------------------------------

# h_kafka_start TOPIC[,TOPIC2...] PARTITIONS [BROKERS [RACKS]]: starts
# baton-devkafka (logs in $H_DIR/kafka.log, stdout in $H_DIR/kafka.out) with
# those topics (no other exists: devkafka creates none on demand), the
# brokers in RACKS (r1,r2,..: devkafka --racks) if given, and exports
# BOOTSTRAP=HOST:PORT[,...] from its first stdout line, H_KAFKA_TOPIC=TOPIC.
h_kafka_start() {
    local topic=${1:?h_kafka_start TOPIC PARTITIONS [BROKERS [RACKS]]}
    local parts=${2:?h_kafka_start TOPIC PARTITIONS [BROKERS [RACKS]]} brokers=${3:-1}
    local out=$H_DIR/kafka.out line="" t0 deadline t
    local -a topic_args=()
    for t in ${topic//,/ }; do topic_args+=(--topic "$t"); done
    if [[ -n ${4:-} ]]; then topic_args+=(--racks "$4"); fi
    : >"$out"
    t0=$(_h_now_ms)
    _h_spawn_io kafka "$out" "$H_DIR/kafka.log" \
        "$BATON_BIN/baton-devkafka" "${topic_args[@]}" --partitions "$parts" --brokers "$brokers"
    H_INFRA[${H_PIDS[kafka]}]=1
    deadline=$((t0 + H_KAFKA_START_TIMEOUT * 1000))
    local ok=0
    while (($(_h_now_ms) < deadline)); do
        # read succeeds only on a whole line, never on a half-written one.
        if IFS= read -r line <"$out" && [[ $line == bootstrap=* ]]; then
            ok=1
            break
        fi
        _h_alive "${H_PIDS[kafka]}" || break
        sleep 0.05
    done
    if ((!ok)); then
        h_fail "h_kafka_start: baton-devkafka gave no bootstrap line (first line: '$line')"
    fi
    export BOOTSTRAP=${line#bootstrap=}
    export H_KAFKA_TOPIC=${topic%%,*}
    h_log "kafka ready at $BOOTSTRAP in $(($(_h_now_ms) - t0)) ms (topic $topic, $parts partitions, pid ${H_PIDS[kafka]})"
}

# h_kafka_stop: stops baton-devkafka; its records are gone with it.
h_kafka_stop() {
    h_stop kafka
}
