# shellcheck shell=bash
# verify.sh: end-to-end check of a fenced sink against the Kafka topic it was
# fed from, for every backend. Sourced by integration and fault tests (after
# harness.sh, or alone). Needs kcat, and the store's client: sqlite3 for
# sqlite:, psql for postgresql: (password from PGPASSFILE / PGPASSWORD),
# redis-cli and sqlite3 for redis: (password in the URI or REDISCLI_AUTH).
#
#   verify_sink BOOTSTRAP TOPIC SINK GROUP
#
# SINK is the sink URI the workers were given (sqlite:PATH,
# postgresql://..., redis://...); a plain PATH is an SQLite file. Reads every
# record of TOPIC (all partitions, each to its end), loads it beside the
# sink's rows of GROUP (a temporary database attached to the file, temporary
# tables of a psql session, or for Redis a copy of the group's fence hashes
# and streams in an SQLite file: redis.sh's redis_mirror) and checks, with
# the same SQL on every backend:
#   missing            a Kafka (partition, offset) with no output row
#   duplicate          an (partition, offset) with more than one output row
#   mismatched         an output row whose value differs from Kafka's
#   extra              an output row with no Kafka record at that offset
#   epoch_regressions  within a partition, a row whose epoch is lower than
#                      the previous row's (ordered by offset)
#   fence_behind       baton_fence.next_offset <= the partition's last
#                      output offset (progress must move with the output)
#   fence_epoch_below  baton_fence.epoch < the partition's highest output
#                      epoch (the fence only ever rises)
# Prints a per-partition summary, then "verify: OK records=N" and returns 0,
# or "verify: FAIL ..." with the counts and a few examples, and returns 1.
# Record values must be UTF-8 without the bytes 0x1E or 0x1F (ASCII
# separators, used so that any other value, tabs and quotes included,
# imports intact). Verification only reads the sink's tables.

# _verify_sql GROUP: the checks, over views kafka(partition, "offset",
# value), o(partition, "offset", epoch, value) and f(partition, epoch,
# next_offset, rejected) that the backend's prelude made; SQL both SQLite
# and PostgreSQL run. Rows come out space separated.
_verify_sql() {
    cat <<'EOF'
CREATE TEMP TABLE counts AS SELECT
  (SELECT count(*) FROM kafka) AS records,
  (SELECT count(*) FROM kafka k WHERE NOT EXISTS
     (SELECT 1 FROM o WHERE o.partition = k.partition AND o."offset" = k."offset")) AS missing,
  (SELECT count(*) FROM (SELECT 1 FROM o GROUP BY partition, "offset" HAVING count(*) > 1) d) AS duplicate,
  (SELECT count(*) FROM kafka k JOIN o ON o.partition = k.partition AND o."offset" = k."offset"
     WHERE o.value <> k.value) AS mismatched,
  (SELECT count(*) FROM o WHERE NOT EXISTS
     (SELECT 1 FROM kafka k WHERE k.partition = o.partition AND k."offset" = o."offset")) AS extra,
  (SELECT count(*) FROM (SELECT epoch, LAG(epoch) OVER (PARTITION BY partition ORDER BY "offset") AS prev
     FROM o) r WHERE epoch < prev) AS epoch_regressions,
  (SELECT count(*) FROM (SELECT partition, max("offset") AS last FROM o GROUP BY partition) m
     JOIN f USING (partition) WHERE f.next_offset <= m.last) AS fence_behind,
  (SELECT count(*) FROM (SELECT partition, max(epoch) AS top FROM o GROUP BY partition) m
     JOIN f USING (partition) WHERE f.epoch < m.top) AS fence_epoch_below;
SELECT 'partition kafka sink epochs max_epoch rejected next_offset';
SELECT p.partition,
       (SELECT count(*) FROM kafka k WHERE k.partition = p.partition),
       (SELECT count(*) FROM o WHERE o.partition = p.partition),
       (SELECT count(DISTINCT epoch) FROM o WHERE o.partition = p.partition),
       COALESCE(CAST((SELECT max(epoch) FROM o WHERE o.partition = p.partition) AS TEXT), '-'),
       COALESCE(CAST((SELECT rejected FROM f WHERE f.partition = p.partition) AS TEXT), '-'),
       COALESCE(CAST((SELECT next_offset FROM f WHERE f.partition = p.partition) AS TEXT), '-')
FROM (SELECT partition FROM kafka UNION SELECT partition FROM o
      UNION SELECT partition FROM f) p ORDER BY p.partition;
SELECT 'counts', records, missing, duplicate, mismatched, extra, epoch_regressions,
       fence_behind, fence_epoch_below FROM counts;
SELECT 'example missing', k.partition, k."offset", k.value FROM kafka k WHERE NOT EXISTS
  (SELECT 1 FROM o WHERE o.partition = k.partition AND o."offset" = k."offset")
  ORDER BY 2, 3 LIMIT 5;
SELECT 'example duplicate', partition, "offset", count(*) FROM o GROUP BY partition, "offset"
  HAVING count(*) > 1 ORDER BY 2, 3 LIMIT 5;
SELECT 'example mismatched', k.partition, k."offset", 'kafka=' || k.value, 'sink=' || o.value
  FROM kafka k JOIN o ON o.partition = k.partition AND o."offset" = k."offset"
  WHERE o.value <> k.value ORDER BY 2, 3 LIMIT 5;
SELECT 'example extra', partition, "offset", value FROM o WHERE NOT EXISTS
  (SELECT 1 FROM kafka k WHERE k.partition = o.partition AND k."offset" = o."offset")
  ORDER BY 2, 3 LIMIT 5;
SELECT 'example epoch_regression', partition, "offset", 'epoch=' || epoch, 'prev=' || prev FROM
  (SELECT partition, "offset", epoch, LAG(epoch) OVER (PARTITION BY partition ORDER BY "offset") AS prev
   FROM o) r WHERE epoch < prev ORDER BY 2, 3 LIMIT 5;
EOF
}

# _verify_sqlite DIR PATH GROUP: the checks on an SQLite file, attached
# read-only (workers may still write; verification never changes it).
_verify_sqlite() {
    local tmp=$1 q_db=${2//\'/\'\'} q_grp=${3//\'/\'\'}
    {
        cat <<EOF
.timeout 10000
CREATE TABLE kafka(partition INTEGER, "offset" INTEGER, value TEXT);
.mode ascii
.import '$tmp/kafka.asv' kafka
.mode list
.separator ' '
.headers off
ATTACH 'file:$q_db?mode=ro' AS s;
CREATE TEMP VIEW o AS
  SELECT partition, "offset", epoch, COALESCE(CAST(value AS TEXT), '') AS value
  FROM s.baton_output WHERE grp = '$q_grp';
CREATE TEMP VIEW f AS
  SELECT partition, epoch, next_offset, rejected FROM s.baton_fence WHERE grp = '$q_grp';
EOF
        _verify_sql
    } | sqlite3 -batch -bail "$tmp/verify.db" 2>&1
}

# _verify_pg DIR URI GROUP: the checks in a psql session on URI; the Kafka
# records go to a temporary table through CSV (every value quoted, so an
# empty value stays empty, not NULL).
_verify_pg() {
    local tmp=$1 uri=$2 q_grp=${3//\'/\'\'} us=$'\x1f' rs=$'\x1e'
    awk -v RS="$rs" -v FS="$us" 'NF >= 2 {
        v = $3; for (i = 4; i <= NF; i++) v = v FS $i
        gsub(/"/, "\"\"", v)
        printf "%s,%s,\"%s\"\n", $1, $2, v
    }' "$tmp/kafka.asv" >"$tmp/kafka.csv"
    {
        cat <<EOF
SET client_min_messages = warning;
CREATE TEMP TABLE kafka(partition BIGINT, "offset" BIGINT, value TEXT);
\\copy kafka FROM '$tmp/kafka.csv' WITH (FORMAT csv)
CREATE TEMP VIEW o AS
  SELECT partition, "offset", epoch, convert_from(COALESCE(value, ''::bytea), 'UTF8') AS value
  FROM baton_output WHERE grp = '$q_grp';
CREATE TEMP VIEW f AS
  SELECT partition, epoch, next_offset, rejected FROM baton_fence WHERE grp = '$q_grp';
EOF
        _verify_sql
    } | timeout 120 psql "$uri" -X -q -At -F ' ' -v ON_ERROR_STOP=1 2>&1
}

verify_sink() {
    local usage="verify_sink BOOTSTRAP TOPIC SINK GROUP"
    local boot=${1:?$usage} topic=${2:?$usage} sink=${3:?$usage} grp=${4:?$usage}
    local us=$'\x1f' rs=$'\x1e' kind path=
    case ${sink,,} in
    postgresql:* | postgres:*) kind=pg ;;
    sqlite:*) kind=sqlite path=${sink#*:} ;;
    redis:*) kind=redis ;;
    *:*) echo "verify: FAIL no verifier for sink '$sink'" >&2 && return 1 ;;
    *) kind=sqlite path=$sink ;;
    esac
    [[ $path == ///* ]] && path=${path#//}
    if [[ $kind == sqlite && ! -f $path ]]; then
        echo "verify: FAIL sink database '$path' does not exist" >&2
        return 1
    fi
    local tmp
    tmp=$(mktemp -d "${H_DIR:-${TMPDIR:-/tmp}}/verify.XXXXXX") || return 1

    # -e: stop once every partition has been read to its end; timeout bounds
    # a broker that stopped answering.
    if ! timeout 120 kcat -b "$boot" -C -t "$topic" -o beginning -e -q \
        -f "%p${us}%o${us}%s${rs}" >"$tmp/kafka.asv" 2>"$tmp/kcat.err"; then
        echo "verify: FAIL cannot read topic '$topic' from $boot:" >&2
        cat "$tmp/kcat.err" >&2
        rm -rf "$tmp"
        return 1
    fi

    local out rc=0
    if [[ $kind == pg ]]; then
        out=$(_verify_pg "$tmp" "$sink" "$grp") || rc=$?
    elif [[ $kind == redis ]]; then
        declare -F redis_mirror >/dev/null || source "$(dirname "${BASH_SOURCE[0]}")/redis.sh"
        out=$(redis_mirror "$sink" "$grp" "$tmp/redis.db" 2>&1 &&
            _verify_sqlite "$tmp" "$tmp/redis.db" "$grp") || rc=$?
    else
        out=$(_verify_sqlite "$tmp" "$path" "$grp") || rc=$?
    fi
    if ((rc != 0)); then
        echo "verify: FAIL $kind error (exit $rc):" >&2
        echo "$out" >&2
        echo "verify: temp files kept in $tmp" >&2
        return 1
    fi
    rm -rf "$tmp"

    local line counts=""
    while IFS= read -r line; do
        case $line in
        counts\ *) counts=${line#counts } ;;
        example\ *) ;;
        *) echo "$line" ;;
        esac
    done <<<"$out"
    local records missing duplicate mismatched extra regress behind below
    read -r records missing duplicate mismatched extra regress behind below <<<"$counts"
    if [[ -z $below ]]; then
        echo "verify: FAIL could not compute counts:" >&2
        echo "$out" >&2
        return 1
    fi
    if ((missing + duplicate + mismatched + extra + regress + behind + below == 0)); then
        echo "verify: OK records=$records"
        return 0
    fi
    echo "verify: FAIL records=$records missing=$missing duplicate=$duplicate" \
        "mismatched=$mismatched extra=$extra epoch_regressions=$regress" \
        "fence_behind=$behind fence_epoch_below=$below"
    while IFS= read -r line; do
        [[ $line == example\ * ]] && echo "verify:   ${line#example }"
    done <<<"$out"
    return 1
}
