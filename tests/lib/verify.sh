# shellcheck shell=bash
# verify.sh: end-to-end check of a fenced sink against the Kafka topic it was
# fed from. Sourced by integration and fault tests (after harness.sh, or
# alone). Needs kcat and sqlite3.
#
#   verify_sink BOOTSTRAP TOPIC SINK_DB GROUP
#
# Reads every record of TOPIC (all partitions, each to its end) and checks
# the sink's baton_output rows of GROUP:
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
# Record values must not contain the bytes 0x1E or 0x1F (ASCII separators,
# used so that any other value, tabs and quotes included, imports intact).

verify_sink() {
    local boot=${1:?verify_sink BOOTSTRAP TOPIC SINK_DB GROUP}
    local topic=${2:?verify_sink BOOTSTRAP TOPIC SINK_DB GROUP}
    local db=${3:?verify_sink BOOTSTRAP TOPIC SINK_DB GROUP}
    local grp=${4:?verify_sink BOOTSTRAP TOPIC SINK_DB GROUP}
    local us=$'\x1f' rs=$'\x1e'

    if [[ ! -f $db ]]; then
        echo "verify: FAIL sink database '$db' does not exist" >&2
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

    local q_grp=${grp//\'/\'\'} q_db=${db//\'/\'\'}
    local out rc=0
    # The sink is attached read-only: verification may run while workers
    # still write, and must never change what it checks.
    out=$(sqlite3 -batch -bail "$tmp/verify.db" 2>&1 <<EOF
.timeout 10000
CREATE TABLE kafka(partition INTEGER, offset INTEGER, value TEXT);
.mode ascii
.import '$tmp/kafka.asv' kafka
.mode list
.separator ' '
ATTACH 'file:$q_db?mode=ro' AS s;
CREATE TEMP VIEW o AS
  SELECT partition, offset, epoch, COALESCE(CAST(value AS TEXT), '') AS value
  FROM s.baton_output WHERE grp = '$q_grp';
CREATE TEMP VIEW f AS
  SELECT partition, epoch, next_offset, rejected
  FROM s.baton_fence WHERE grp = '$q_grp';
CREATE TEMP TABLE counts AS SELECT
  (SELECT count(*) FROM kafka) AS records,
  (SELECT count(*) FROM kafka k WHERE NOT EXISTS
     (SELECT 1 FROM o WHERE o.partition = k.partition AND o.offset = k.offset)) AS missing,
  (SELECT count(*) FROM (SELECT 1 FROM o GROUP BY partition, offset HAVING count(*) > 1)) AS duplicate,
  (SELECT count(*) FROM kafka k JOIN o ON o.partition = k.partition AND o.offset = k.offset
     WHERE o.value IS NOT k.value) AS mismatched,
  (SELECT count(*) FROM o WHERE NOT EXISTS
     (SELECT 1 FROM kafka k WHERE k.partition = o.partition AND k.offset = o.offset)) AS extra,
  (SELECT count(*) FROM (SELECT epoch, LAG(epoch) OVER (PARTITION BY partition ORDER BY offset) AS prev
     FROM o) WHERE epoch < prev) AS epoch_regressions,
  (SELECT count(*) FROM (SELECT partition, max(offset) AS last FROM o GROUP BY partition) m
     JOIN f USING (partition) WHERE f.next_offset <= m.last) AS fence_behind,
  (SELECT count(*) FROM (SELECT partition, max(epoch) AS top FROM o GROUP BY partition) m
     JOIN f USING (partition) WHERE f.epoch < m.top) AS fence_epoch_below;
.mode column
.headers on
SELECT p.partition AS partition,
       (SELECT count(*) FROM kafka k WHERE k.partition = p.partition) AS kafka,
       (SELECT count(*) FROM o WHERE o.partition = p.partition) AS sink,
       (SELECT count(DISTINCT epoch) FROM o WHERE o.partition = p.partition) AS epochs,
       (SELECT max(epoch) FROM o WHERE o.partition = p.partition) AS max_epoch,
       (SELECT rejected FROM f WHERE f.partition = p.partition) AS rejected,
       (SELECT next_offset FROM f WHERE f.partition = p.partition) AS next_offset
FROM (SELECT partition FROM kafka UNION SELECT partition FROM o
      UNION SELECT partition FROM f) p ORDER BY p.partition;
.mode list
.separator ' '
.headers off
SELECT 'counts', records, missing, duplicate, mismatched, extra, epoch_regressions,
       fence_behind, fence_epoch_below FROM counts;
SELECT 'example missing', k.partition, k.offset, k.value FROM kafka k WHERE NOT EXISTS
  (SELECT 1 FROM o WHERE o.partition = k.partition AND o.offset = k.offset)
  ORDER BY 2, 3 LIMIT 5;
SELECT 'example duplicate', partition, offset, count(*) FROM o GROUP BY partition, offset
  HAVING count(*) > 1 ORDER BY 2, 3 LIMIT 5;
SELECT 'example mismatched', k.partition, k.offset, 'kafka=' || k.value, 'sink=' || o.value
  FROM kafka k JOIN o ON o.partition = k.partition AND o.offset = k.offset
  WHERE o.value IS NOT k.value ORDER BY 2, 3 LIMIT 5;
SELECT 'example extra', partition, offset, value FROM o WHERE NOT EXISTS
  (SELECT 1 FROM kafka k WHERE k.partition = o.partition AND k.offset = o.offset)
  ORDER BY 2, 3 LIMIT 5;
SELECT 'example epoch_regression', partition, offset, 'epoch=' || epoch, 'prev=' || prev FROM
  (SELECT partition, offset, epoch, LAG(epoch) OVER (PARTITION BY partition ORDER BY offset) AS prev
   FROM o) WHERE epoch < prev ORDER BY 2, 3 LIMIT 5;
EOF
    ) || rc=$?
    if ((rc != 0)); then
        echo "verify: FAIL sqlite3 error (exit $rc):" >&2
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
