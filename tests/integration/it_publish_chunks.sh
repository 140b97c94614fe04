#!/usr/bin/env bash
# it_publish_chunks: a generation is never written twice (issue 20, defect
# 5). A leader that publishes in several multis (--max-multi-bytes 256:
# one node each) dies between them (failpoint coordinator.between_chunks):
# a worker's node already says generation G+1 while /assignment still says
# G. The next leader must publish past every generation already written
# (G+2), never G+1 again: a standby's promotion made at G+1 ends only on a
# newer generation.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_publish_chunks
h_zk_start
B_PARTITIONS=8
h_kafka_start "$B_TOPIC" $B_PARTITIONS
B_SINK=$H_DIR/sink.db
b_init $B_PARTITIONS
BATON_FAILPOINTS="coordinator.between_chunks=exit" b_coord c1 --max-multi-bytes 256
b_worker w1
h_wait_for 15 "w1 owns everything" b_all_active 1
# w2's join changes two nodes: two multis, and c1 dies between them.
b_worker w2
rc=0; h_wait_exit c1 15 || rc=$?
((rc == 99)) || h_fail "c1 should have died at the failpoint (exit 99), got $rc"
meta=$(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation)
max=$meta
for w in $(h_zk ls "/baton/$B_GROUP/assignment"); do
    g=$(h_zk get "/baton/$B_GROUP/assignment/$w" | jq -r .generation)
    ((g > max)) && max=$g
done
((max > meta)) || h_fail "no node was written past /assignment's generation $meta: the test tested nothing"
h_log "c1 died between chunks: /assignment at $meta, a node at $max"
b_coord c2 --max-multi-bytes 256
h_wait_for 20 "c2 leads and w1 and w2 share the partitions" b_all_active 2
now=$(h_zk get "/baton/$B_GROUP/assignment" | jq -r .generation)
((now > max)) || h_fail "c2 published generation $now, already written by c1's partial publish (max $max)"
b_log_has c2 "event=published generation=$now " || h_fail "c2's publish log names no generation $now"
h_pass "a publish cut between multis (/assignment $meta, a node at $max): the next leader published $now"
