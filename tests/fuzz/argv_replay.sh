#!/usr/bin/env bash
# argv_replay.sh: command-line fuzzing of the programs themselves, replay
# style (no libFuzzer: each input is one exec). Every file in
# corpus/argv/ is a program name on its first line and then one argument
# per line; the script runs each as is, then RUNS seeded mutations of them
# (an argument dropped, duplicated, swapped, or replaced by a hostile value:
# empty, huge, negative, overflowing, non-UTF-8, format directives...).
# ZooKeeper and Kafka point at 127.0.0.1:1, where nothing listens. Every run
# must end within 30 s with exit 0, 1 or 2 (2 with a message on stderr),
# never by a signal, and with no sanitizer report.
#   BATON_BIN=build/bin tests/fuzz/argv_replay.sh [RUNS] [SEED]
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${BATON_BIN:-$src/build/bin}
runs=${1:-100}
seed=${2:-1}
[[ -d $bin ]] || { echo "argv_replay: BATON_BIN=$bin is not a directory" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-argv.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

rng=$((seed % 2147483648))
r=0
rnd() { rng=$(((rng * 1103515245 + 12345) % 2147483648)); r=$(((rng >> 8) % $1)); }
long=$(printf 'x%.0s' {1..5000})
hostile=("" "-1" "0" "99999999999999999999" "-9223372036854775808" "9223372036854775807" "1e3"
    " 5" "5 " "0x10" "--" "-" "=" "$long" $'\xff\xfe' '%s%s%n' "../../etc" "/" "//"
    "sqlite:" "sqlite://x" "sqlite:/nonexistent/dir/db" "127.0.0.1:1,,," "a=b=c" "w 1" ".." "/a/./b")

declare -a progs=() args=()
fail=0 total=0
run_one() { # PROG ARGS...
    local prog=$1 rc=0
    shift
    total=$((total + 1))
    (cd "$tmp" && timeout -s KILL 30 "$bin/$prog" "$@") >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
    local bad=""
    if ((rc == 137)); then bad="did not exit within 30 s"
    elif ((rc > 2)); then bad="exit $rc"
    elif ((rc == 2)) && [[ ! -s $tmp/err ]]; then bad="exit 2 without a message"
    elif grep -qE 'Sanitizer|runtime error:' "$tmp/err"; then bad="sanitizer report"
    fi
    if [[ -n $bad ]]; then
        fail=1
        printf 'argv_replay: FAIL %s: %s' "$bad" "$prog" >&2
        printf ' %q' "$@" >&2
        echo >&2
        head -c 2000 "$tmp/err" >&2
    fi
}

shopt -s nullglob
inputs=("$src"/tests/fuzz/corpus/argv/*)
((${#inputs[@]})) || { echo "argv_replay: no corpus in tests/fuzz/corpus/argv" >&2; exit 1; }
for f in "${inputs[@]}"; do
    mapfile -t lines <"$f"
    prog=${lines[0]}
    a=("${lines[@]:1}")
    a=("${a[@]//@TMP@/$tmp}")
    progs+=("$prog")
    args+=("$(printf '%q ' "${a[@]}")")
    run_one "$prog" "${a[@]}"
done
for ((i = 0; i < runs; i++)); do
    rnd ${#progs[@]}
    k=$r
    eval "a=(${args[k]})"
    n=${#a[@]}
    rnd 5
    case $r in
    0) ((n)) && { rnd "$n"; a=("${a[@]:0:r}" "${a[@]:r+1}"); } ;;
    1) ((n)) && { rnd "$n"; a=("${a[@]:0:r}" "${a[r]}" "${a[@]:r}"); } ;;
    2) ((n > 1)) && { rnd "$n"; j=$r; rnd "$n"; t=${a[j]}; a[j]=${a[r]}; a[r]=$t; } ;;
    *) ((n)) && { rnd "$n"; j=$r; rnd ${#hostile[@]}; a[j]=${hostile[r]}; } ;;
    esac
    run_one "${progs[k]}" "${a[@]}"
done
if ((fail)); then
    echo "argv_replay: FAIL (seed $seed, $total runs)" >&2
    exit 1
fi
echo "argv_replay: $total runs (seed $seed), every exit 0, 1 or 2 with a message, no signal"
