#!/usr/bin/env bash
# test_bench_lib.sh: bench/lib.sh's handoff measure on a made-up watcher log
# (bench_handoff_ms: written again under a new epoch; "fenced": the new
# epoch in the fence row, written or not), the figures the rebalance
# benchmark's RESULT line is made of.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../bench/lib.sh
source "$here/../../bench/lib.sh"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Partitions 0 and 1, owner epoch 5 until T0 = 1,000,000 us. Partition 0:
# fenced under 9 at +12 ms, written at +20. Partition 1: fenced under 8 at
# +15 ms, written at +31. Partition 2 is not watched.
cat >"$log" <<'W'
w 900000 0 5 100
w 900000 1 5 200
w 950000 2 5 300
w 1005000 0 5 101
w 1012000 0 9 101
w 1015000 1 8 200
w 1020000 0 9 103
w 1025000 2 7 300
w 1031000 1 8 202
W
fail=0
check() {
    local what=$1 want=$2 got=$3
    if [[ $got != "$want" ]]; then
        echo "FAIL $what: want $want, got $got"
        fail=1
    else
        echo "ok   $what: $got"
    fi
}
check "written, both partitions" 31 "$(bench_handoff_ms "$log" 1000000 2000000 "0 1")"
check "fenced, both partitions" 15 "$(bench_handoff_ms "$log" 1000000 2000000 "0 1" fenced)"
check "written, partition 0" 20 "$(bench_handoff_ms "$log" 1000000 2000000 "0")"
check "fenced, partition 0" 12 "$(bench_handoff_ms "$log" 1000000 2000000 "0" fenced)"
# The old owner's own write after T0 (partition 0 at +5 ms) is no handoff;
# a window that ends before partition 1's write: never written again.
check "written, cut off" -1 "$(bench_handoff_ms "$log" 1000000 1025000 "0 1")"
check "fenced, cut off" 15 "$(bench_handoff_ms "$log" 1000000 1025000 "0 1" fenced)"
# Partition 2 changed epoch without a write: fenced, not written.
check "written, epoch only" -1 "$(bench_handoff_ms "$log" 1000000 2000000 "2")"
check "fenced, epoch only" 25 "$(bench_handoff_ms "$log" 1000000 2000000 "2" fenced)"
exit $fail
