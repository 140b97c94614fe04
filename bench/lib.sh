# shellcheck shell=bash
# lib.sh: helpers shared by bench/run.sh's benchmarks, on top of
# tests/lib/harness.sh (processes by pid, ZooKeeper, embedded Kafka). The
# analysis reads baton-bench-watch's log ("w TS_US PARTITION EPOCH NEXT").

# bench_now_us: wall-clock microseconds, the watcher's clock.
bench_now_us() { echo "${EPOCHREALTIME/./}"; }

# bench_watch NAME SINK GROUP [EXTRA...]: starts a watcher on SINK.
bench_watch() {
    local name=$1 sink=$2 group=$3
    shift 3
    h_spawn "$name" "$BATON_BIN/baton-bench-watch" --sink "$sink" --group "$group" \
        --interval-us "${BENCH_WATCH_US:-1000}" "$@"
}

# bench_steady FILE NPARTS: every partition advanced in the last 400 ms and
# none changed epoch in the last 1500 ms.
bench_steady() {
    local now
    now=$(bench_now_us)
    tail -n 6000 "$1" | awk -v now="$now" -v np="$2" '
        $1 == "w" {
            if ($2 > now - 400000) fresh[$3] = 1
            if ($2 > now - 1500000) { if (($3 in ep) && ep[$3] != $4) moved = 1 }
            ep[$3] = $4
        }
        END {
            if (moved) exit 1
            for (p = 0; p < np; p++) if (!(p in fresh)) exit 1
            exit 0
        }'
}

# bench_settle FILE NPARTS MIN_MS MAX_S: waits at least MIN_MS, then until
# bench_steady holds (at most MAX_S more seconds). Returns 1 on timeout.
bench_settle() {
    sleep "$(awk -v m="$3" 'BEGIN { printf "%.3f", m / 1000 }')"
    h_wait_for "$4" "flow steady in $1" bench_steady "$1" "$2"
}

# bench_owned_by FILE EPOCH: partitions whose latest epoch is EPOCH.
bench_owned_by() {
    awk -v e="$2" '$1 == "w" { ep[$3] = $4 } END { for (p in ep) if (ep[p] == e) printf "%s ", p }' "$1"
}

# bench_handoff_ms FILE T0_US T_END_US "P..." [fenced]: the longest time,
# over the listed partitions, from T0 until a new owner (another epoch) has
# advanced next_offset; with "fenced", until the sink's fence row carries
# another epoch, written or not (a baton successor's fence: the part of a
# handoff that is coordination, before it waits for records to write).
# Prints -1 if one of them never got there.
bench_handoff_ms() {
    awk -v t0="$2" -v tend="$3" -v plist="$4" -v fenced="${5:-}" '
        BEGIN { n = split(plist, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        $1 != "w" || !($3 in want) { next }
        {
            t = $2; p = $3; e = $4; o = $5
            if (t <= t0) { e0[p] = e; last[p] = o; next }
            if (t > tend || (p in done)) next
            if (e != e0[p]) {
                if (!(p in base)) base[p] = last[p]
                if (o > base[p] || fenced != "") done[p] = t
            }
            last[p] = o
        }
        END {
            worst = 0
            for (p in want) {
                if (!(p in done)) { print -1; exit }
                d = done[p] - t0
                if (d > worst) worst = d
            }
            printf "%d\n", worst / 1000
        }' "$1"
}

# bench_input_ms WATCH ARRIVALS T0_US T_END_US "P...": a handoff taken
# apart at the input. For each listed partition, the first record its new
# owner had to write is the old owner's last next_offset (WATCH, as
# bench_handoff_ms reads it); ARRIVALS (baton-bench-arrivals: "a TS_US
# PARTITION LAST_OFFSET") says when that record reached a consumer of the
# same broker. Its input time is that arrival after T0, or 0 if it had
# arrived before (the old owner held it unwritten). Prints "INPUT AFTER":
# the longest input time over the partitions, and the longest time from a
# partition's input time until it was written (the part no faster input
# would have shortened); ms, floored like bench_handoff_ms. Prints "- -"
# if a partition was never written or its record never seen arriving.
bench_input_ms() {
    awk -v t0="$3" -v tend="$4" -v plist="$5" '
        BEGIN { n = split(plist, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        FNR == NR {
            if ($1 != "w" || !($3 in want)) next
            t = $2; p = $3; e = $4; o = $5
            if (t <= t0) { e0[p] = e; last[p] = o; next }
            if (t > tend || (p in done)) next
            if (e != e0[p]) {
                if (!(p in base)) base[p] = last[p]
                if (o > base[p]) done[p] = t
            }
            last[p] = o
            next
        }
        # An earlier run (appended to the same file, offsets from 0 again)
        # ended seconds before T0; a record held unwritten arrived at most
        # a linger before it.
        $1 != "a" || !($3 in base) || ($3 in seen) || $2 < t0 - 1000000 || $2 > tend { next }
        $4 >= base[$3] { seen[$3] = $2 }
        END {
            inp = 0; aft = 0
            for (p in want) {
                if (!(p in done) || !(p in seen)) { print "- -"; exit }
                s = seen[p] > t0 ? seen[p] : t0
                if (s - t0 > inp) inp = s - t0
                if (done[p] - s > aft) aft = done[p] - s
            }
            printf "%d %d\n", inp / 1000, aft / 1000
        }' "$1" "$2"
}

# bench_pause_ms FILE T0_US T_END_US: the pause of partitions that did not
# move between T0 and T_END (no epoch change): the longest gap between two
# advances in that window (the gap spanning T0 and the one up to T_END
# count) minus the longest such gap in an equally long steady window just
# before T0 (at most 3 s), floored at 0. Prints "PAUSE RAW BASELINE".
bench_pause_ms() {
    awk -v t0="$2" -v tend="$3" '
        BEGIN { w = tend - t0; if (w > 3000000) w = 3000000; b0 = t0 - w }
        $1 != "w" { next }
        {
            t = $2; p = $3; e = $4
            if (t > tend) next
            if ((p in ep) && ep[p] != e && t > t0) moved[p] = 1
            if (t >= b0 && t <= t0 && (p in last) && last[p] >= b0) {
                g = t - last[p]; if (g > bgap) bgap = g
            }
            if (t > t0 && (p in last)) {
                g = t - last[p]; if (g > gap[p]) gap[p] = g
            }
            ep[p] = e; last[p] = t
        }
        END {
            raw = 0
            for (p in last) {
                if (p in moved) continue
                g = gap[p]; if (tend - last[p] > g) g = tend - last[p]
                if (g > raw) raw = g
            }
            pause = raw - bgap; if (pause < 0) pause = 0
            printf "%d %d %d\n", pause / 1000, raw / 1000, bgap / 1000
        }' "$1"
}

# bench_stats V...: "median p99 n" of the numbers (nearest rank).
bench_stats() {
    if (($# == 0)); then
        echo "- - 0"
        return
    fi
    printf '%s\n' "$@" | sort -n | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "- - 0"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            r = int(0.99 * NR); if (r < 0.99 * NR) r++
            printf "%d %d %d\n", m, v[r], NR
        }'
}

# bench_cpu PID: the process's user + system CPU, in clock ticks.
bench_cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# bench_stall FILE T0_US T_END_US: each partition's stall in [T0, T_END]:
# the longest gap between two consecutive writes (next_offset advances)
# that ends after T0 and starts before T_END; a partition silent at T_END
# counts up to T_END. An epoch change alone is not a write. Prints "MAX
# MEDIAN PARTITION HANDOFF HANDOFF_MEDIAN" (ms; PARTITION is the one with
# MAX; HANDOFF and HANDOFF_MEDIAN are the longest and the median of the
# gaps that end in a write under another epoch than the write before, i.e.
# across a change of writer, 0 if none), then SAME: the longest gap between
# two writes under the same epoch (no change of writer: what the flow's own
# cadence, the sink and the broker made), 0 if none; "-1 -1 - 0 0 0" if no
# partition was written.
bench_stall() {
    awk -v t0="$2" -v tend="$3" '
        $1 != "w" { next }
        {
            t = $2; p = $3; e = $4; o = $5
            if (t > tend) next
            if ((p in nx) && o == nx[p]) next
            if (t > t0 && (p in last)) {
                g = t - last[p]; if (g > gap[p]) gap[p] = g
                if (e != ep[p]) { hv[++nh] = g; if (g > hand) hand = g }
                else if (g > same) same = g
            }
            last[p] = t; nx[p] = o; ep[p] = e
        }
        END {
            n = 0; worst = -1; wp = "-"
            for (p in last) {
                g = gap[p]; if (tend - last[p] > g) g = tend - last[p]
                v[++n] = g
                if (g > worst) { worst = g; wp = p }
            }
            if (n == 0) { print "-1 -1 - 0 0 0"; exit }
            printf "%d %d %s %d %d %d\n", worst / 1000, median(v, n) / 1000, wp, hand / 1000, median(hv, nh) / 1000,
                same / 1000
        }
        function median(a, n,    i, j, x) {
            if (n == 0) return 0
            for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }' "$1"
}

# bench_follow FILE ERE TIMEOUT_S: starts following FILE, from its size
# now, for a line matching ERE (grep -E): one tail, woken by inotify as
# FILE grows, and one grep, for the whole wait, where polling would start
# processes every 100 ms on the cores under measurement (a 48 x 6 roll's
# polls and their subshells took 40% of a core, perf, 2026-12-07).
# Returns at once; start it before what writes the line, then
# bench_follow_wait. One follow at a time.
bench_follow() {
    local size
    size=$(stat -c %s -- "$1" 2>/dev/null) || size=0
    exec {BENCH_FOLLOW_FD}< <(exec timeout "$3" bash -c \
        'tail -s 0.1 -c +"$3" -F -- "$1" 2>/dev/null | grep -m 1 -E -e "$2"' _ "$1" "$2" $((size + 1)))
    BENCH_FOLLOW_PID=$!
}

# bench_follow_wait: true once a matching line came (in BENCH_FOLLOW_LINE),
# false once the follow's TIMEOUT_S passed (timeout then stops tail and
# grep, and their pipe ends); either way nothing of the follow is left.
bench_follow_wait() {
    local rc=0
    BENCH_FOLLOW_LINE=
    IFS= read -r -u "$BENCH_FOLLOW_FD" BENCH_FOLLOW_LINE || rc=1
    # On a match timeout still runs (tail may not have noticed grep's exit):
    # it passes the TERM on to both. On a timeout it has exited already.
    ((rc != 0)) || kill -TERM "$BENCH_FOLLOW_PID" 2>/dev/null || true
    exec {BENCH_FOLLOW_FD}<&-
    return $rc
}

# bench_stall_trace FILE T0_US T_END_US KIND LOG...: where the longest gap
# of KIND ("same": between two writes under one epoch; "handoff": ending
# in a write under another epoch) in [T0, T_END] went, from the baton
# workers' debug logs (event=batch, worker.c): the write that ended the gap
# is found by its partition, epoch and next_offset in LOG..., and its first
# record's ages at that write tell the gap apart. Prints "GAP PARTITION
# TAKEN CREATED" (ms): TAKEN is how long the worker had held that record
# (its linger, the flush's turn, the commit); CREATED how old the record
# was (its Kafka timestamp, the producer's clock). GAP - TAKEN is the time
# the worker waited for that record; when CREATED >= GAP the record already
# existed when the gap began, so that wait was the input's delivery (the
# producer's batching, the embedded Kafka, the fetch). "- - - -" if no
# such gap or no matching line (a log not at debug).
bench_stall_trace() {
    local file=$1 t0=$2 tend=$3 kind=$4 g p e o
    shift 4
    read -r g p e o < <(awk -v t0="$t0" -v tend="$tend" -v kind="$kind" '
        $1 != "w" { next }
        {
            t = $2; p = $3; e = $4; o = $5
            if (t > tend) next
            if ((p in nx) && o == nx[p]) next
            if (t > t0 && (p in last)) {
                g = t - last[p]
                if ((kind == "same") == (e == ep[p]) && g > best) { best = g; bp = p; be = e; bo = o }
            }
            last[p] = t; nx[p] = o; ep[p] = e
        }
        END { if (best > 0) printf "%d %d %s %s\n", best / 1000, bp, be, bo; else print "- - - -" }' "$file")
    if [[ $g == - ]]; then
        echo "- - - -"
        return
    fi
    local line
    # No such line (a log not at debug) is an answer, not a failure: under
    # set -e a failed grep here would end the caller's read < <(...).
    line=$(grep -ah " event=batch partition=$p epoch=$e .* next_offset=$o " "$@" 2>/dev/null | head -n 1) || true
    if [[ $line =~ \ taken_ms=([0-9-]+)\ created_ms=([0-9-]+) ]]; then
        echo "$g $p ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
    else
        echo "$g $p - -"
    fi
}

# bench_steady_rps FILE N: records/s while the sink went from 20% to 80%
# of N records (the sum of next_offset over the watcher's lines): the
# rate once every writer is writing, without a start-up or the last
# partitions' tail. 0 if it never got there.
bench_steady_rps() {
    awk -v n="$2" '
        $1 != "w" { next }
        { tot += $5 - (($3 in nx) ? nx[$3] : 0); nx[$3] = $5 }
        !a && tot >= 0.2 * n { a = $2; ta = tot }
        a && !b && tot >= 0.8 * n { b = $2; tb = tot }
        END { printf "%d\n", (b > a) ? (tb - ta) / ((b - a) / 1e6) : 0 }' "$1"
}

# bench_rps FILE TA_US TB_US: records/s written between TA and TB (the sum
# over partitions of next_offset at TB minus at TA, per second).
bench_rps() {
    awk -v ta="$2" -v tb="$3" '
        $1 != "w" { next }
        $2 <= ta { a[$3] = $5 }
        $2 <= tb { b[$3] = $5 }
        END {
            s = 0
            for (p in b) s += b[p] - a[p]
            printf "%d\n", s / ((tb - ta) / 1e6)
        }' "$1"
}

# bench_rate_near FILE RATE: the records/s written over the last 2 s are
# within 15% of RATE (the writers keep up with the producer: no backlog).
bench_rate_near() {
    local now r
    now=$(bench_now_us)
    r=$(bench_rps "$1" $((now - 2000000)) "$now")
    awk -v r="$r" -v want="$2" 'BEGIN { exit !(r >= 0.85 * want && r <= 1.15 * want) }'
}
