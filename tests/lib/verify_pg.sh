# shellcheck shell=bash
# verify_pg.sh: verify.sh's end-to-end check for the PostgreSQL sink. Sourced
# by integration tests after harness.sh and pg.sh. Needs kcat and psql.
#
#   verify_sink_pg BOOTSTRAP TOPIC PG_URI GROUP
#
# Reads every record of TOPIC (all partitions, each to its end), loads it
# into a temporary table of a psql session on PG_URI (password from
# PGPASSFILE / PGPASSWORD), and checks the sink's rows of GROUP exactly as
# verify_sink does: missing, duplicate, mismatched, extra, epoch_regressions,
# fence_behind, fence_epoch_below (see verify.sh). Prints a per-partition
# summary, then "verify: OK records=N" and returns 0, or "verify: FAIL ..."
# with the counts and a few examples, and returns 1. Values must be UTF-8
# without the bytes 0x1E or 0x1F. The session only reads the sink's tables.

verify_sink_pg() {
    local boot=${1:?verify_sink_pg BOOTSTRAP TOPIC PG_URI GROUP}
    local topic=${2:?verify_sink_pg BOOTSTRAP TOPIC PG_URI GROUP}
    local uri=${3:?verify_sink_pg BOOTSTRAP TOPIC PG_URI GROUP}
    local grp=${4:?verify_sink_pg BOOTSTRAP TOPIC PG_URI GROUP}
    local us=$'\x1f' rs=$'\x1e'
    local tmp
    tmp=$(mktemp -d "${H_DIR:-${TMPDIR:-/tmp}}/verify.XXXXXX") || return 1

    if ! timeout 120 kcat -b "$boot" -C -t "$topic" -o beginning -e -q \
        -f "%p${us}%o${us}%s${rs}" >"$tmp/kafka.asv" 2>"$tmp/kcat.err"; then
        echo "verify: FAIL cannot read topic '$topic' from $boot:" >&2
        cat "$tmp/kcat.err" >&2
        rm -rf "$tmp"
        return 1
    fi
    # ASCII-separated records to CSV with every value quoted (so an empty
    # value stays empty, not NULL), for psql's \copy.
    awk -v RS="$rs" -v FS="$us" 'NF >= 2 {
        v = $3; for (i = 4; i <= NF; i++) v = v FS $i
        gsub(/"/, "\"\"", v)
        printf "%s,%s,\"%s\"\n", $1, $2, v
    }' "$tmp/kafka.asv" >"$tmp/kafka.csv"

    local q_grp=${grp//\'/\'\'}
    local out rc=0
    out=$(timeout 120 psql "$uri" -X -q -At -F ' ' -v ON_ERROR_STOP=1 2>&1 <<EOF
SET client_min_messages = warning;
CREATE TEMP TABLE kafka(partition BIGINT, "offset" BIGINT, value TEXT);
\\copy kafka FROM '$tmp/kafka.csv' WITH (FORMAT csv)
CREATE TEMP VIEW o AS
  SELECT partition, "offset", epoch, COALESCE(value, ''::bytea) AS value
  FROM baton_output WHERE grp = '$q_grp';
CREATE TEMP VIEW f AS
  SELECT partition, epoch, next_offset, rejected FROM baton_fence WHERE grp = '$q_grp';
CREATE TEMP TABLE counts AS SELECT
  (SELECT count(*) FROM kafka) AS records,
  (SELECT count(*) FROM kafka k WHERE NOT EXISTS
     (SELECT 1 FROM o WHERE o.partition = k.partition AND o."offset" = k."offset")) AS missing,
  (SELECT count(*) FROM (SELECT 1 FROM o GROUP BY partition, "offset" HAVING count(*) > 1) d) AS duplicate,
  (SELECT count(*) FROM kafka k JOIN o ON o.partition = k.partition AND o."offset" = k."offset"
     WHERE o.value IS DISTINCT FROM convert_to(k.value, 'UTF8')) AS mismatched,
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
       COALESCE((SELECT max(epoch) FROM o WHERE o.partition = p.partition)::text, '-'),
       COALESCE((SELECT rejected FROM f WHERE f.partition = p.partition)::text, '-'),
       COALESCE((SELECT next_offset FROM f WHERE f.partition = p.partition)::text, '-')
FROM (SELECT partition FROM kafka UNION SELECT partition FROM o
      UNION SELECT partition FROM f) p ORDER BY p.partition;
SELECT 'counts', records, missing, duplicate, mismatched, extra, epoch_regressions,
       fence_behind, fence_epoch_below FROM counts;
SELECT 'example missing', k.partition, k."offset", k.value FROM kafka k WHERE NOT EXISTS
  (SELECT 1 FROM o WHERE o.partition = k.partition AND o."offset" = k."offset")
  ORDER BY 2, 3 LIMIT 5;
SELECT 'example duplicate', partition, "offset", count(*) FROM o GROUP BY partition, "offset"
  HAVING count(*) > 1 ORDER BY 2, 3 LIMIT 5;
SELECT 'example mismatched', k.partition, k."offset", 'kafka=' || k.value,
       'sink=' || encode(o.value, 'escape')
  FROM kafka k JOIN o ON o.partition = k.partition AND o."offset" = k."offset"
  WHERE o.value IS DISTINCT FROM convert_to(k.value, 'UTF8') ORDER BY 2, 3 LIMIT 5;
SELECT 'example extra', partition, "offset", encode(value, 'escape') FROM o WHERE NOT EXISTS
  (SELECT 1 FROM kafka k WHERE k.partition = o.partition AND k."offset" = o."offset")
  ORDER BY 2, 3 LIMIT 5;
SELECT 'example epoch_regression', partition, "offset", 'epoch=' || epoch, 'prev=' || prev FROM
  (SELECT partition, "offset", epoch, LAG(epoch) OVER (PARTITION BY partition ORDER BY "offset") AS prev
   FROM o) r WHERE epoch < prev ORDER BY 2, 3 LIMIT 5;
EOF
    ) || rc=$?
    if ((rc != 0)); then
        echo "verify: FAIL psql error (exit $rc):" >&2
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
