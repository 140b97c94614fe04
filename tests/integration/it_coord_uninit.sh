#!/usr/bin/env bash
# it_coord_uninit: a coordinator started on a group that is not initialised
# (issue 13, item 6) retries every second but says so once
# (event=group_missing, level=error), then only every 30 s: after four
# attempts (its debug lines show those it did not say) the error line is
# still the only one.
# Once `batonctl init` runs, it says the group is found, with the attempts
# it did not log, and is elected.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_coord_uninit
# shellcheck disable=SC2119 # default tick
h_zk_start
b_coord c1 --log-level debug
LOG=$H_DIR/c1.log

count() { grep -c -- "$1" "$LOG" || true; }
at_least() { (($(count "$1") >= $2)); }
h_wait_for 15 "c1 says the group is missing" at_least 'level=error .*event=group_missing ' 1 ||
    h_fail "c1 did not say the group is missing"
# An attempt is logged either way: group_missing (error) or, when it is not
# said again, group_missing_again (debug).
attempts() { (($(count 'event=group_missing ') + $(count 'event=group_missing_again ') >= 4)); }
h_wait_for 15 "c1 tries four times" attempts || h_fail "c1 did not retry"
n=$(count 'event=group_missing ')
((n == 1)) || h_fail "c1 said the group is missing $n times in 4 attempts, wanted once"
grep -q 'event=group_missing .*msg="run batonctl init first"' "$LOG" ||
    h_fail "the group_missing line does not say what to do"
h_alive c1 || h_fail "c1 exited on a group not initialised"
h_log "4+ attempts, one group_missing line"

b_ctl init --topic in --partitions 2 >/dev/null
h_wait_for 15 "c1 finds the group" b_log_has c1 'event=group_found ' || h_fail "c1 never found the group"
h_wait_for 15 "c1 is elected" b_log_has c1 'event=elected ' || h_fail "c1 was not elected"
quiet=$(grep -o 'event=group_found .*attempts_since_last=[0-9]*' "$LOG" | grep -o '[0-9]*$')
((quiet >= 3)) || h_fail "group_found counts $quiet unlogged attempts, wanted at least 3"
n=$(count 'event=group_missing ')
((n == 1)) || h_fail "c1 said the group is missing $n times, wanted once"
h_pass "a coordinator on a group not initialised said so once in $((quiet + 1)) attempts, then found it"
