#!/usr/bin/env bash
# it_standby_notice: with --standby-notice (standby.notice) a graceful
# leaver tells its standbys directly which claims it released, and they
# take over without waiting for ZooKeeper (docs/design.md, "Release
# notices"):
#   1. Bad values are usage errors naming the flag (a wildcard, not an
#      address, a port out of range).
#   2. Every member node advertises its notice address; every standby
#      subscribes to its owner's notices (the owner logs each subscriber).
#   3. The leaver is frozen at worker.after_notice: its notices sent, its
#      claims still in ZooKeeper. Its standbys still own its partitions,
#      each at the czxid of the claim it had queued behind the leaver's,
#      promoted as its standby (by the notice, or by the leave mark if its
#      event came first), and write them (the epochs move in the sink)
#      while the leaver's claims are still there. Released, the leaver exits 0.
#   4. Sent to a standby, naming the very claim its own waits behind:
#      datagrams that are not notices, a notice of another group, one from a
#      member it does not stand by for, one naming another sequence, change
#      nothing: the worker keeps running, counts the malformed ones
#      (baton_worker_notices_malformed_total), and no fence moves. 300
#      SUBs from ids no member has are forgotten and leave no watch in
#      ZooKeeper.
#   5. Continuous input throughout: every record once, epochs never fall.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/verify.sh"
h_init it_standby_notice
h_zk_start
B_PARTITIONS=6
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS

# --- 1. bad values -----------------------------------------------------------
for bad in 0.0.0.0:0 localhost:1 127.0.0.1:70000 127.0.0.1 '[::]:0'; do
    rc=0
    "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id wbad --brokers "$BOOTSTRAP" \
        --sink "sqlite:$B_SINK" --standby-notice "$bad" >"$H_DIR/bad.out" 2>&1 || rc=$?
    ((rc == 2)) || h_fail "--standby-notice $bad should exit 2, got $rc: $(cat "$H_DIR/bad.out")"
    grep -qF -- "--standby-notice: '$bad'" "$H_DIR/bad.out" || h_fail "unclear error: $(cat "$H_DIR/bad.out")"
done

b_coord c1
declare -A MPORT=()
# start W: claims ahead, notices on a free loopback port, /metrics of its own.
start() {
    MPORT[$1]=$(h_free_port)
    b_worker "$1" --standby-claim ahead --standby-notice 127.0.0.1:0 --log-level debug \
        --metrics-addr "127.0.0.1:${MPORT[$1]}"
}
# metric W NAME: W's value of counter NAME (0 before the first).
metric() { b_counter "127.0.0.1:${MPORT[$1]}" "$2"; }
for w in w1 w2 w3; do start $w; done
h_wait_for 30 "three workers, each standby's claim queued behind its owner's" b_queued_ahead 3

# --- 2. advertised, subscribed -----------------------------------------------
declare -A ADDR=()
for w in w1 w2 w3; do
    ADDR[$w]=$(h_zk get "/baton/$B_GROUP/workers/$w" | jq -r .notice)
    [[ ${ADDR[$w]} =~ ^127\.0\.0\.1:[0-9]+$ ]] || h_fail "$w's member node advertises notice '${ADDR[$w]}'"
    b_log_has "$w" "event=notice_bound addr=${ADDR[$w]}" || h_fail "$w did not log its bound address"
done
# subscribed O S [FROM]: owner O heard standby S subscribe (after line
# FROM of O's log: a restarted process appends to the same log).
subscribed() { tail -n +"${3:-1}" "$H_DIR/$1.log" | grep -E "event=notice_subscriber id=$2 " >/dev/null; }
s=$(b_status)
for ((p = 0; p < B_PARTITIONS; p++)); do
    owner=$(jq -r --argjson p $p '.partitions[] | select(.partition == $p) | .owner' <<<"$s")
    sb=$(jq -r --argjson p $p '.partitions[] | select(.partition == $p) | .standby' <<<"$s")
    h_wait_for 10 "$sb subscribed to $owner's notices" subscribed "$owner" "$sb"
done

h_spawn producer "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 4000 --rate 400
h_wait_for 10 "records flowing" b_sink_has 300

# --- 3. the notice alone moves the partitions ---------------------------------
# Restart w1 with the failpoint armed: frozen after its notices, before
# its claims' delete.
h_kill w1 TERM
rc=0; h_wait_exit w1 10 || rc=$?
((rc == 0)) || h_fail "w1 exited $rc on SIGTERM"
MPORT[w1]=$(h_free_port)
w1from=$(wc -l <"$H_DIR/w1.log")
# A long session: frozen, w1 keeps its claims while the checks below run.
BATON_FAILPOINTS="worker.after_notice=stop" B_SESSION_MS=30000 b_worker w1 --standby-claim ahead \
    --standby-notice 127.0.0.1:0 --log-level debug --metrics-addr "127.0.0.1:${MPORT[w1]}"
h_wait_for 30 "w1 back: three share the partitions, standbys queued" b_queued_ahead 3
parts=$(b_partitions_of w1)
[[ -n $parts ]] || h_fail "w1 owns nothing"
declare -A SB=() CZ=() LEAVER=() LINES=()
for p in $parts; do
    read -r _ "SB[$p]" <<<"$(b_queue "$p")"
    [[ -n ${SB[$p]} ]] || h_fail "partition $p has no claim queued behind w1's"
    h_wait_for 10 "${SB[$p]} subscribed to w1's notices" subscribed w1 "${SB[$p]}" "$w1from"
    LEAVER[$p]=$(b_claims "$p" | sed -n 1p)
    c=$(b_claims "$p" | sed -n 2p)
    CZ[$p]=$(h_zk stat "$(b_claims_dir "$p")/$c" | sed -E 's/.*czxid=([0-9]+).*/\1/')
    LINES[$p]=$(wc -l <"$H_DIR/${SB[$p]}.log")
done
# fenced_written P E: the sink's fence of P is at epoch E, and P has
# output written at E. (batonctl status names the lowest claim's holder,
# w1 until its claims go: the sink is what the standby's takeover moved.)
fenced_written() {
    [[ $(b_sql "SELECT epoch FROM baton_fence WHERE grp='$B_GROUP' AND partition=$1") == "$2" ]] &&
        (($(b_sql "SELECT count(*) FROM baton_output WHERE grp='$B_GROUP' AND partition=$1 AND epoch=$2") > 0))
}
h_log "leave: w1's partitions ($parts), standbys (${SB[*]})"
# Records flow through the leave (the standbys' writes at their epochs are
# checked below), however much of its 4,000 the first producer has left:
# a second one (7.5 s of records), started now.
h_spawn producer2 "$BATON_BIN/baton-produce" --brokers "$BOOTSTRAP" --topic "$B_TOPIC" \
    --partitions $B_PARTITIONS --count 3000 --rate 400 --prefix leave
h_kill w1 TERM
h_wait_for 15 "w1 frozen after its notices" h_at_failpoint w1 worker.after_notice
tail -n +"$w1from" "$H_DIR/w1.log" | grep -E "event=notice_sent subscribers=[1-9]" >/dev/null ||
    h_fail "w1 logged no notice sent to a subscriber"
for p in $parts; do
    h_wait_for 15 "partition $p fenced and written by ${SB[$p]} at ${CZ[$p]}" fenced_written "$p" "${CZ[$p]}"
    b_claims "$p" | grep -x "${LEAVER[$p]}" >/dev/null ||
        h_fail "partition $p: w1's claim ${LEAVER[$p]} is gone; the notice was not what moved it"
    tail -n +"${LINES[$p]}" "$H_DIR/${SB[$p]}.log" | grep -E "event=notice_received owner=w1 .*taken=[1-9]" >/dev/null ||
        h_fail "${SB[$p]} logged no notice from w1 that freed a claim"
    tail -n +"${LINES[$p]}" "$H_DIR/${SB[$p]}.log" | grep -E "event=acquired partition=$p epoch=${CZ[$p]} " >/dev/null ||
        h_fail "${SB[$p]} did not acquire partition $p at ${CZ[$p]}"
done
# Promoted by the notice, or by the leave mark if its event came first:
# either way only the notice freed the claims (w1's are still there).
for p in $parts; do
    tail -n +"${LINES[$p]}" "$H_DIR/${SB[$p]}.log" | grep -E "event=standby_promoted owner=w1 " >/dev/null ||
        h_fail "${SB[$p]} was not promoted as w1's standby"
done
h_kill w1 CONT
rc=0; h_wait_exit w1 15 || rc=$?
((rc == 0)) || h_fail "w1 exited $rc after its leave"
for p in $parts; do
    b_claims "$p" | grep -x "${LEAVER[$p]}" >/dev/null && h_fail "w1's claim ${LEAVER[$p]} of partition $p outlived its leave"
done
start w1
h_wait_for 30 "w1 back again: three share the partitions, standbys queued" b_queued_ahead 3

# --- 4. what is not a notice changes nothing -----------------------------------
# Sent to partition 0's standby, naming its owner's claim, which that
# standby's claim waits right behind: only the checks keep it from moving.
read -r owner0 victim <<<"$(b_queue 0)"
[[ -n $victim ]] || h_fail "partition 0 has no standby queued"
port=$(h_zk get "/baton/$B_GROUP/workers/$victim" | jq -r .notice | sed 's/.*://')
m0=$(metric "$victim" baton_worker_notices_malformed_total)
vfrom=$(wc -l <"$H_DIR/$victim.log")
# fences: every partition's epoch at the sink (a standby that took over
# would have fenced there; the claims, and so status, would not show it).
fences() { b_sql "SELECT partition || ':' || epoch FROM baton_fence WHERE grp='$B_GROUP' ORDER BY partition" | tr '\n' ' '; }
before=$(fences)
wseq=$(b_claims 0 | sed -n 1p | sed 's/.*-0*//')
python3 - "$port" "$B_GROUP" "${wseq:-0}" "$owner0" <<'EOF'
import socket, sys
port, group, seq, owner = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
g = b"/baton/" + group.encode()
m = b"BATON-NOTICE 1\n"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for d in [b"hello", b"", m, m + b"REL\n", b"BATON-NOTICE 2\nREL\n" + g + b"\n" + owner + b"\n1\np0:" + seq + b"\n",
          m + b"REL\n" + g + b"\n" + owner + b"\x00\n1\np0:" + seq + b"\n",
          m + b"REL\n" + g + b"\n../../evil\n1\np0:" + seq + b"\n",
          # no generation line: dropped whole
          m + b"REL\n" + g + b"\n" + owner + b"\np0:" + seq + b"\n",
          # another group's, naming the claim the standby waits behind
          m + b"REL\n/baton/other\n" + owner + b"\n1\np0:" + seq + b"\n",
          # from a member it does not stand by for
          m + b"REL\n" + g + b"\nw9\n1\np0:" + seq + b"\n",
          # another claim of the owner's (no such sequence waits ahead)
          m + b"REL\n" + g + b"\n" + owner + b"\n1\np0:" + str(int(seq) + 1000).encode() + b"\n",
          m + b"REL\n" + g + b"\n" + owner + b"\n1\np-1:1\np99999999999999999999:1\nkbad key:1\nx\n:\n",
          m + b"SUB\n" + g + b"\n\n",
          bytes(range(256)) * 8]:
    s.sendto(d, ("127.0.0.1", port))
EOF
# counted V M0: V's malformed-datagram count passed M0.
counted() { (($(metric "$1" baton_worker_notices_malformed_total) > $2)); }
h_wait_for 10 "$victim counted the datagrams that were not notices" counted "$victim" "$m0"
took_none() {
    tail -n +"$vfrom" "$H_DIR/$victim.log" | grep -E "event=notice_received owner=$owner0 .*taken=0 " >/dev/null
}
h_wait_for 10 "$victim read $owner0's notices that name nothing it waits on" took_none
sleep 1 # not a wait: the window in which a wrongful take (checked below) would show
h_alive "$victim" || h_fail "$victim died on datagrams that were not notices"
[[ $(fences) == "$before" ]] || h_fail "a fence moved on a datagram that was no notice: $before -> $(fences)"
if tail -n +"$vfrom" "$H_DIR/$victim.log" | grep -E "event=acquired partition=0 " >/dev/null; then
    h_fail "$victim acquired partition 0 on a datagram that was no notice"
fi

# Forged SUBs: 300 ids no member has, as anyone on the network can send
# (1 ms apart; a slow worker's socket may still drop some: datagrams).
# Each one heard is forgotten once its member node is found missing twice,
# and no watch of it stays in ZooKeeper (an exists watch on a missing node
# stayed until the session ended: one per id, 300 more watches).
zk_watches() { _h_4lw "${ZK##*:}" wchs | sed -n 's/^Total watches:\([0-9]*\).*/\1/p'; }
w0=$(zk_watches)
[[ -n $w0 ]] || h_fail "ZooKeeper's wchs gave no watch count"
python3 - "$port" "$B_GROUP" <<'EOF'
import socket, sys, time
port, g = int(sys.argv[1]), b"/baton/" + sys.argv[2].encode()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(300):
    s.sendto(b"BATON-NOTICE 1\nSUB\n" + g + b"\nforged-" + str(i).encode() + b"\n", ("127.0.0.1", port))
    time.sleep(0.001)
EOF
# forgot: every forged subscriber heard (its debug line) is forgotten, and
# most were heard.
forgot() {
    local heard gone
    heard=$(grep -c "event=notice_subscriber id=forged-" "$H_DIR/$victim.log") || true
    gone=$(grep -c "event=notice_subscriber_gone id=forged-" "$H_DIR/$victim.log") || true
    ((heard >= 150 && gone == heard))
}
h_wait_for 20 "$victim forgot the forged subscribers it heard" forgot
w1=$(zk_watches)
[[ -n $w1 ]] || h_fail "ZooKeeper's wchs gave no watch count after the forged SUBs"
echo "ZooKeeper's watches: $w0 before the forged SUBs, $w1 after" \
    "($(grep -c "event=notice_subscriber_gone id=forged-" "$H_DIR/$victim.log") forgotten)"
((w1 < w0 + 30)) || h_fail "forged SUBs left watches in ZooKeeper: $w0 before, $w1 after"
h_alive "$victim" || h_fail "$victim died on forged SUBs"

for pr in producer producer2; do
    rc=0; h_wait_exit $pr 40 || rc=$?
    ((rc == 0)) || h_fail "$pr failed ($rc)"
done
h_wait_for 30 "all 7000 records in the sink" b_sink_has 7000
verify_sink "$BOOTSTRAP" "$B_TOPIC" "$B_SINK" "$B_GROUP" || h_fail "sink verification failed"
h_pass "release notices moved a leaver's partitions before its claims went; garbage changed nothing"
