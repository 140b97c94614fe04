#!/usr/bin/env bash
# sample.sh: the checker's witness of fences over time, started by run.sh
# for the whole chaos run. Every INTERVAL_MS it reads, in one read
# transaction of the sink (so one consistent snapshot), each partition's
# fence epoch together with the highest rowid of baton_output, and appends
# "SAMPLE_MS PARTITION EPOCH MAX_ROWID" lines to OUT. Since SQLite assigns
# rowids in commit order, any row of a partition with a rowid above a
# sample's MAX_ROWID and an epoch below that sample's EPOCH was accepted
# after the fence had risen past it: a write from a fenced epoch.
# Reads only (the sink is opened read-only); runs until SIGTERM.
#   sample.sh SINK_DB GROUP OUT [INTERVAL_MS]
# With a postgresql:// URI for SINK_DB (run.sh --sink pg) there is no rowid:
# each line is "SAMPLE_US PARTITION EPOCH 0", SAMPLE_US the server's clock
# (microseconds) read after the query's snapshot, and run.sh later turns it
# into the rows committed by then (pg_xact_commit_timestamp) for check.sh.
set -uo pipefail
db=${1:?sample.sh SINK_DB GROUP OUT [INTERVAL_MS]}
grp=${2:?}
out=${3:?}
interval=${4:-200}
q_grp=${grp//\'/\'\'}
trap 'exit 0' TERM INT
sleep_s=$(printf '%d.%03d' $((interval / 1000)) $((interval % 1000)))
while :; do
    if [[ $db == postgresql://* ]]; then
        # Whole answers only: a psql cut short by the timeout adds nothing.
        if lines=$(timeout 5 psql "$db" -X -q -At -F ' ' -c \
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, partition, epoch, 0
             FROM baton_fence WHERE grp = '$q_grp'" 2>/dev/null) && [[ -n $lines ]]; then
            echo "$lines" >>"$out"
        fi
    elif [[ -f $db ]]; then
        t=${EPOCHREALTIME/./}
        t=$((t / 1000))
        sqlite3 -readonly -batch -separator ' ' "$db" ".timeout 2000" \
            "SELECT $t, partition, epoch, (SELECT coalesce(max(rowid), 0) FROM baton_output)
             FROM baton_fence WHERE grp = '$q_grp'" >>"$out" 2>/dev/null || true
    fi
    sleep "$sleep_s"
done
