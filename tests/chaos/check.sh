#!/usr/bin/env bash
# check.sh: the chaos run's independent checker. It shares no code with
# baton: it takes what the input topic holds from the producer's delivery
# reports (--deliveries) or else reads the topic with kcat, reads the sink
# with the sqlite3 CLI (read-only), and optionally the fence samples of sample.sh and a final
# `batonctl status --json` snapshot, and reports per partition:
#   lost          a topic (partition, offset) with no output row
#   dup           an (partition, offset) with more than one output row
#   mismatched    an output row whose value differs from the topic's
#   extra         an output row with no topic record at that offset (and,
#                 with --deliveries, not a possibly persisted record)
#   epoch_regr    ordered by offset, a row whose epoch is below an earlier
#                 offset's epoch
#   apply_order   ordered by commit (rowid), a row whose offset does not rise
#                 or whose epoch falls: a write accepted from an epoch lower
#                 than one applied before it
#   fenced_writes a row committed after a sample saw the fence above the
#                 row's epoch (see sample.sh): a write from a fenced epoch
#   rejected      the sink's own count of refused stale fences and batches
#                 (reported, not a violation: it is fencing at work)
# With --status: every partition is active, owned by its assigned worker,
# the owner is a live worker (one of --workers, if given), and the sink's
# fence epoch equals the owner's epoch (the owner has fenced).
# Prints "check: OK ..." and exits 0, or "check: FAIL ..." and exits 1.
#   check.sh --bootstrap B --topic T --sink DB --group G
#            [--samples FILE] [--status FILE] [--workers "w1 w2 ..."]
#            [--topic-dump FILE] [--kcat-timeout S] [--deliveries DIR]
# --deliveries DIR takes the topic's records from the *.asv files in DIR,
# each written by `baton-produce --deliveries` from Kafka's delivery reports
# (partition, offset, value of every record Kafka acknowledged), instead of
# reading the topic back: the embedded mock Kafka serves a long partition
# too slowly for that (issue 18's soak). The reports are the truth of what
# Kafka holds whatever the producer's exit status (a batch killed after its
# records were acknowledged still has them reported). A record reported
# failed but possibly persisted (offset -1 in the file) may be in the sink
# once at an offset no report names: counted as maybe_delivered, not extra.
# A sink row at an offset no report names (a kill can lose the last
# reports) is looked up in the topic by that offset alone (up to 200:
# read_back= in the summary); a DIR with no *.asv file falls back to
# reading the whole topic.
# --topic-dump reads the topic from FILE instead of Kafka (kcat -f
# '%p\x1f%o\x1f%s\x1e' output, e.g. the topic.asv a run keeps); --bootstrap
# is then unused. --kcat-timeout bounds the topic read (default 900 s).
set -euo pipefail

boot= topic= db= grp= samples= status= workers= dump= kcat_timeout=900 deliveries=
while (($#)); do
    case $1 in
    --bootstrap) boot=${2:?}; shift 2 ;;
    --topic) topic=${2:?}; shift 2 ;;
    --sink) db=${2:?}; shift 2 ;;
    --group) grp=${2:?}; shift 2 ;;
    --samples) samples=${2:?}; shift 2 ;;
    --status) status=${2:?}; shift 2 ;;
    --workers) workers=${2?}; shift 2 ;;
    --topic-dump) dump=${2:?}; shift 2 ;;
    --kcat-timeout) kcat_timeout=${2:?}; shift 2 ;;
    --deliveries) deliveries=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
if [[ -n $deliveries ]]; then
    [[ -d $deliveries ]] || { echo "check: FAIL --deliveries '$deliveries' is not a directory"; exit 1; }
    shopt -s nullglob
    dfiles=("$deliveries"/*.asv)
    shopt -u nullglob
    if ((${#dfiles[@]} == 0)); then
        echo "check: no delivery file in '$deliveries': reading the topic back" >&2
        deliveries=
    else
        boot=${boot:-unused}
    fi
fi
[[ -n $dump ]] && boot=${boot:-unused}
[[ -n $boot && -n $topic && -n $db && -n $grp ]] ||
    { echo "check: --bootstrap, --topic, --sink and --group are required" >&2; exit 2; }
[[ -f $db ]] || { echo "check: FAIL sink '$db' does not exist"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
us=$'\x1f' rs=$'\x1e'
if [[ -n $deliveries ]]; then
    # A report cut short by a kill mid-write has no final \x1e: dropped.
    for f in "${dfiles[@]}"; do
        perl -0777 -pe 's/[^\x1e]*\z//' -- "$f" || { echo "check: FAIL cannot read '$f'"; exit 1; }
    done >"$tmp/topic.asv" || exit 1
    echo "check: topic from ${#dfiles[@]} delivery file(s) in $deliveries" >&2
elif [[ -n $dump ]]; then
    cp "$dump" "$tmp/topic.asv" || { echo "check: FAIL cannot read '$dump'"; exit 1; }
else
    krc=0
    timeout "$kcat_timeout" kcat -b "$boot" -C -t "$topic" -o beginning -e -q \
        -f "%p${us}%o${us}%s${rs}" >"$tmp/topic.asv" 2>"$tmp/kcat.err" || krc=$?
    if ((krc != 0)); then
        echo "check: FAIL cannot read topic '$topic' from $boot (exit $krc$( ((krc == 124)) &&
            echo ", timed out after ${kcat_timeout}s")): $(head -c 500 "$tmp/kcat.err")"
        exit 1
    fi
fi
q_grp=${grp//\'/\'\'} q_db=${db//\'/\'\'}
# Sink rows at an offset no delivery report names (a producer killed
# between Kafka's acknowledgement and its report's write) are looked up in
# the topic one by one, up to 200 (a targeted fetch, not a read of the
# whole topic); a record found there is what the topic holds.
read_back=0
if [[ -n $deliveries && $boot != unused ]]; then
    sqlite3 -batch -bail "$tmp/pre.db" >"$tmp/unreported.txt" 2>"$tmp/pre.err" <<SQL ||
CREATE TABLE reports(partition INTEGER, offset INTEGER, value TEXT);
.mode ascii
.import '$tmp/topic.asv' reports
CREATE INDEX r_po ON reports(partition, offset);
ATTACH 'file:$q_db?mode=ro' AS s;
.mode list
.separator ' '
SELECT partition, offset FROM s.baton_output o WHERE grp = '$q_grp' AND NOT EXISTS
  (SELECT 1 FROM reports r WHERE r.partition = o.partition AND r.offset = o.offset)
  ORDER BY 1, 2 LIMIT 201;
SQL
        { echo "check: FAIL sqlite3 error: $(head -c 500 "$tmp/pre.err")"; exit 1; }
    n_unrep=$(wc -l <"$tmp/unreported.txt")
    if ((n_unrep > 200)); then
        echo "check: over 200 sink rows at offsets no delivery report names: not read back" >&2
    elif ((n_unrep > 0)); then
        while read -r p o; do
            timeout 60 kcat -b "$boot" -C -t "$topic" -p "$p" -o "$o" -c 1 -e -q \
                -f "%p${us}%o${us}%s${rs}" >>"$tmp/readback.asv" 2>>"$tmp/kcat.err" || true
        done <"$tmp/unreported.txt"
        if [[ -f $tmp/readback.asv ]]; then
            perl -0777 -pe 's/[^\x1e]*\z//' "$tmp/readback.asv" >>"$tmp/topic.asv"
            read_back=$(tr -cd '\036' <"$tmp/readback.asv" | wc -c)
        fi
        echo "check: $n_unrep sink row(s) at offsets no delivery report names; $read_back found in the topic" >&2
    fi
fi
: >"$tmp/samples.txt"
[[ -n $samples && -f $samples ]] && cp "$samples" "$tmp/samples.txt"
: >"$tmp/final.txt"
if [[ -n $status ]]; then
    jq -r '.partitions[] | [.partition, (.epoch // -1)] | @tsv' "$status" >"$tmp/final.txt"
fi

out=$(sqlite3 -batch -bail "$tmp/check.db" 2>&1 <<SQL
.timeout 10000
CREATE TABLE reports(partition INTEGER, offset INTEGER, value TEXT);
CREATE TABLE samples(ms INTEGER, partition INTEGER, epoch INTEGER, max_rowid INTEGER);
CREATE TABLE final(partition INTEGER, epoch INTEGER);
.mode ascii
.import '$tmp/topic.asv' reports
-- Offset -1: a delivery report of a failure that may have been written.
CREATE TABLE topic AS SELECT partition, offset, value FROM reports WHERE offset >= 0;
CREATE TABLE maybe AS SELECT DISTINCT partition, value FROM reports WHERE offset < 0;
.mode list
.separator ' '
.import '$tmp/samples.txt' samples
.separator "\t"
.import '$tmp/final.txt' final
ATTACH 'file:$q_db?mode=ro' AS s;
CREATE TEMP TABLE o AS
  SELECT rowid AS rid, partition, offset, epoch, COALESCE(CAST(value AS TEXT), '') AS value
  FROM s.baton_output WHERE grp = '$q_grp';
CREATE TEMP TABLE f AS SELECT partition, epoch, next_offset, rejected
  FROM s.baton_fence WHERE grp = '$q_grp';
CREATE INDEX o_po ON o(partition, offset);
CREATE INDEX t_po ON topic(partition, offset);
CREATE INDEX m_pv ON maybe(partition, value);
CREATE TEMP TABLE unknown AS SELECT partition, offset, value FROM o WHERE NOT EXISTS
  (SELECT 1 FROM topic t WHERE t.partition = o.partition AND t.offset = o.offset);
CREATE TEMP TABLE extra AS SELECT partition, offset FROM unknown u WHERE NOT EXISTS
  (SELECT 1 FROM maybe m WHERE m.partition = u.partition AND m.value = u.value);
-- Merge rows (at their rowid) and samples (just after the rowid they saw)
-- in commit order; the running max of sample epochs before a row is the
-- highest fence known to have been in place before that row was committed.
CREATE TEMP TABLE fenced AS
  SELECT partition, offset, rid, epoch, fence FROM (
    SELECT partition, offset, rid, epoch, kind,
           max(CASE WHEN kind = 1 THEN epoch END) OVER (PARTITION BY partition ORDER BY pos, kind DESC
                                                       ROWS UNBOUNDED PRECEDING) AS fence
    FROM (SELECT partition, offset, rid, epoch, 0 AS kind, rid * 2 AS pos FROM o
          UNION ALL
          SELECT partition, NULL, NULL, epoch, 1, max_rowid * 2 + 1 FROM samples))
  WHERE kind = 0 AND epoch < fence;
CREATE TEMP TABLE by_offset AS
  SELECT partition, offset, epoch,
         max(epoch) OVER (PARTITION BY partition ORDER BY offset
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max
  FROM o;
CREATE TEMP TABLE by_commit AS
  SELECT partition, rid, offset, epoch,
         max(epoch) OVER w AS prev_epoch, max(offset) OVER w AS prev_offset
  FROM o WINDOW w AS (PARTITION BY partition ORDER BY rid
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING);
CREATE TEMP TABLE parts AS
  SELECT partition FROM topic UNION SELECT partition FROM o UNION SELECT partition FROM f;
.mode list
.separator ' '
SELECT 'row', p.partition,
  (SELECT count(*) FROM topic t WHERE t.partition = p.partition),
  (SELECT count(*) FROM o WHERE o.partition = p.partition),
  (SELECT count(*) FROM topic t WHERE t.partition = p.partition AND NOT EXISTS
     (SELECT 1 FROM o WHERE o.partition = t.partition AND o.offset = t.offset)),
  (SELECT count(*) FROM (SELECT 1 FROM o WHERE o.partition = p.partition
     GROUP BY offset HAVING count(*) > 1)),
  (SELECT count(*) FROM topic t JOIN o ON o.partition = t.partition AND o.offset = t.offset
     WHERE t.partition = p.partition AND o.value IS NOT t.value),
  (SELECT count(*) FROM extra x WHERE x.partition = p.partition),
  (SELECT count(*) FROM by_offset b WHERE b.partition = p.partition AND b.epoch < b.prev_max),
  (SELECT count(*) FROM by_commit c WHERE c.partition = p.partition
     AND (c.epoch < c.prev_epoch OR c.offset <= c.prev_offset)),
  (SELECT count(*) FROM fenced x WHERE x.partition = p.partition),
  coalesce((SELECT rejected FROM f WHERE f.partition = p.partition), 0),
  (SELECT count(DISTINCT epoch) FROM o WHERE o.partition = p.partition),
  coalesce((SELECT epoch FROM f WHERE f.partition = p.partition), 'null'),
  coalesce((SELECT epoch FROM final WHERE final.partition = p.partition), 'null'),
  (SELECT count(*) FROM samples sm WHERE sm.partition = p.partition),
  (SELECT count(*) FROM unknown u WHERE u.partition = p.partition)
    - (SELECT count(*) FROM extra x WHERE x.partition = p.partition)
FROM parts p ORDER BY p.partition;
SELECT 'example lost', t.partition, t.offset FROM topic t WHERE NOT EXISTS
  (SELECT 1 FROM o WHERE o.partition = t.partition AND o.offset = t.offset) ORDER BY 2, 3 LIMIT 5;
SELECT 'example mismatched', t.partition, t.offset, 'topic=' || t.value, 'sink=' || o.value
  FROM topic t JOIN o ON o.partition = t.partition AND o.offset = t.offset
  WHERE o.value IS NOT t.value ORDER BY 2, 3 LIMIT 5;
SELECT 'example extra', partition, offset FROM extra ORDER BY 2, 3 LIMIT 5;
SELECT 'example epoch_regr', partition, offset, 'epoch=' || epoch, 'earlier_max=' || prev_max
  FROM by_offset WHERE epoch < prev_max ORDER BY 2, 3 LIMIT 5;
SELECT 'example apply_order', partition, 'rowid=' || rid, 'offset=' || offset, 'epoch=' || epoch,
  'earlier_max_offset=' || prev_offset, 'earlier_max_epoch=' || prev_epoch
  FROM by_commit WHERE epoch < prev_epoch OR offset <= prev_offset ORDER BY 2, 3 LIMIT 5;
SELECT 'example fenced_write', partition, offset, 'rowid=' || rid, 'epoch=' || epoch,
  'fence_seen_before=' || fence FROM fenced ORDER BY 2, 3 LIMIT 5;
SQL
) || { echo "check: FAIL sqlite3 error: $out"; exit 1; }

fail=0
declare -A tot=()
keys=(topic sink lost dup mismatched extra epoch_regr apply_order fenced_writes rejected maybe)
printf '%-9s %7s %7s %5s %4s %10s %5s %10s %11s %13s %8s %6s %-22s\n' partition topic sink lost dup \
    mismatched extra epoch_regr apply_order fenced_writes rejected epochs final
final_bad=0
while read -r tag p t s lost dup mm ex er ao fw rej ne fe se ns mb; do
    [[ $tag == row ]] || continue
    vals=("$t" "$s" "$lost" "$dup" "$mm" "$ex" "$er" "$ao" "$fw" "$rej" "$mb")
    for i in "${!keys[@]}"; do tot[${keys[i]}]=$((${tot[${keys[i]}]:-0} + vals[i])); done
    fin="-"
    if [[ -n $status ]]; then
        if [[ $fe == "$se" && $se != null ]]; then fin="fence=owner($se)"; else
            fin="MISMATCH fence=$fe owner=$se"; final_bad=$((final_bad + 1)); fi
    fi
    printf '%-9s %7s %7s %5s %4s %10s %5s %10s %11s %13s %8s %6s %-22s\n' "$p" "$t" "$s" "$lost" "$dup" \
        "$mm" "$ex" "$er" "$ao" "$fw" "$rej" "$ne" "$fin"
done <<<"$out"
nsamples=$(wc -l <"$tmp/samples.txt")
for k in lost dup mismatched extra epoch_regr apply_order fenced_writes; do
    ((${tot[$k]:-0} == 0)) || fail=1
done

owner_msg=""
if [[ -n $status ]]; then
    want_workers=$(jq -cn --arg w "$workers" '$w | split(" ") | map(select(length > 0)) | sort')
    problems=$(jq -r --argjson want "$want_workers" '
      ([.workers[].id] | sort) as $live
      | [ (.partitions[] | select(.state != "active" or .owner != .assigned or .owner == null)
           | "partition \(.partition): state=\(.state) owner=\(.owner) assigned=\(.assigned)"),
          (.partitions[] | select(.owner != null and (.owner | IN($live[]) | not))
           | "partition \(.partition): owner \(.owner) is not a live worker"),
          (if ($want | length) > 0 and $live != $want
           then "live workers \($live) differ from the expected \($want)" else empty end),
          (if (.partitions | length) == 0 then "no partitions in status" else empty end)
        ] | .[]' "$status")
    if [[ -n $problems ]]; then
        fail=1
        owner_msg="final ownership: FAIL"$'\n'"$problems"
    else
        owner_msg="final ownership: every partition active with its assigned live owner"
    fi
    ((final_bad == 0)) || { fail=1; owner_msg+=$'\n'"final fence: $final_bad partition(s) whose fence epoch is not the owner's epoch"; }
fi

summary="records=${tot[topic]:-0} sink_rows=${tot[sink]:-0} lost=${tot[lost]:-0} dup=${tot[dup]:-0}"
summary+=" mismatched=${tot[mismatched]:-0} extra=${tot[extra]:-0} epoch_regr=${tot[epoch_regr]:-0}"
summary+=" apply_order=${tot[apply_order]:-0} fenced_writes=${tot[fenced_writes]:-0}"
summary+=" rejected_stale=${tot[rejected]:-0} fence_samples=$nsamples"
[[ -n $deliveries ]] && summary+=" maybe_delivered=${tot[maybe]:-0} read_back=$read_back topic_from=deliveries"
[[ -n $owner_msg ]] && echo "$owner_msg"
grep '^example ' <<<"$out" | sed 's/^example /check:   /' || true
if ((fail)); then
    echo "check: FAIL $summary"
    exit 1
fi
echo "check: OK $summary"
