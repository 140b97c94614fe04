# shellcheck shell=bash
# minority.sh: the chaos run's check that an isolated ZooKeeper server (a
# minority of one) does not go on serving the group's assignment as current
# (issue 18, net_isolate_zk_server). It trusts neither baton nor the
# server's account of its own mode: it reads the assignment node's stat
# through a client connected to the isolated server alone, and through the
# majority, and compares.
#   minority_read HOSTS PATH   "version=V mzxid=M" if HOSTS serves a read of
#                              PATH within 1.5 s; "down" if not; "none" if
#                              it serves but PATH does not exist
#   minority_judge ISOLATED MAJORITY PATH ELAPSED_MS WINDOW_MS
#                              one verdict on stdout, and its reads:
#     down              the isolated server serves no read: what it must do
#     in_window         it served, ELAPSED_MS < WINDOW_MS (ZooKeeper lets a
#                       follower serve until it notices, syncLimit)
#     stale_in_window   the same, with a version below the majority's
#                       (reported, not a violation)
#     still_serving     it served past the window (a violation)
#     stale_assignment  it served past the window a version below the
#                       majority's: a stale assignment as current (a
#                       violation)
# Needs $BATON_BIN/baton-zk. tests/chaos/minority_selftest.sh shows each
# verdict on fabricated views (two chroots of one server).

minority_read() {
    local out rc=0
    out=$("$BATON_BIN/baton-zk" --zk "${1:?minority_read HOSTS PATH}" --timeout-ms 1500 \
        stat "${2:?}" 2>/dev/null) || rc=$?
    if ((rc == 0)) && [[ $out =~ mzxid=([0-9]+).*\ version=([0-9]+) ]]; then
        echo "version=${BASH_REMATCH[2]} mzxid=${BASH_REMATCH[1]}"
    elif ((rc == 1)) && "$BATON_BIN/baton-zk" --zk "$1" --timeout-ms 1500 exists / >/dev/null 2>&1; then
        echo none
    else
        echo down
    fi
}

minority_judge() {
    local iso=${1:?minority_judge ISOLATED MAJORITY PATH ELAPSED_MS WINDOW_MS} maj=${2:?}
    local path=${3:?} elapsed=${4:?} window=${5:?} r m verdict stale=0
    r=$(minority_read "$iso" "$path")
    if [[ $r == down ]]; then
        echo "down isolated=down"
        return
    fi
    m=$(minority_read "$maj" "$path")
    if [[ $r =~ version=([0-9]+) ]]; then
        local v=${BASH_REMATCH[1]}
        [[ $m =~ version=([0-9]+) ]] && ((v < BASH_REMATCH[1])) && stale=1
    elif [[ $r == none && $m == version=* ]]; then
        stale=1 # it serves "no assignment" where the majority has one
    fi
    if ((elapsed < window)); then
        verdict=$( ((stale)) && echo stale_in_window || echo in_window)
    else
        verdict=$( ((stale)) && echo stale_assignment || echo still_serving)
    fi
    echo "$verdict isolated=${r// /,} majority=${m// /,}"
}
