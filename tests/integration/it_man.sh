#!/usr/bin/env bash
# it_man: every program has a man page generated from its --help, with a
# real NAME line, and the page documents every option --help lists; the
# batonctl page documents every subcommand, each with every option of its
# own --help. A page that falls behind the program fails here.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_man
build=$(cd "$BATON_BIN/.." && pwd)
man=$build/deploy/man
command -v help2man >/dev/null || h_fail "help2man is not installed (deploy/setup.sh installs it)"

# The page's text with roff's escapes undone: \- is -, fonts dropped.
page_text() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(em/-/g' -e 's/\\e/\\/g' -e 's/\\&//g' "$1"; }
# The long options a --help text names (--zk, --partition...).
options_of() { grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }

check_options() { # PAGE_TEXT_FILE WHAT HELP_TEXT
    local opt missing=()
    while read -r opt; do
        grep -qF -- "$opt" "$1" || missing+=("$opt")
    done < <(options_of <<<"$3")
    ((${#missing[@]} == 0)) || h_fail "$2: the man page lacks ${missing[*]}"
}

for prog in baton-coordinator baton-worker batonctl baton-devkafka baton-run baton-fence-write; do
    page=$man/$prog.1
    [[ -s $page ]] || h_fail "no man page for $prog ($page)"
    page_text "$page" >"$H_DIR/$prog.txt"
    name=$(sed -n '/^\.SH NAME/{n;p;q}' "$page" | sed 's/\\-/-/g')
    [[ $name == "$prog - "* && $name != "$prog - $prog" ]] || h_fail "$prog.1's NAME says '$name'"
    check_options "$H_DIR/$prog.txt" "$prog" "$("$BATON_BIN/$prog" --help 2>&1)"
done

cmds=$("$BATON_BIN/batonctl" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
(($(wc -w <<<"$cmds") >= 10)) || h_fail "batonctl --help lists too few commands: $cmds"
for c in $cmds; do
    grep -q "^\.SS \"$c\"\$" "$man/batonctl.1" || h_fail "batonctl.1 has no section for '$c'"
    help=$("$BATON_BIN/batonctl" "$c" --help 2>&1)
    usage=$(head -1 <<<"$help")
    grep -qF -- "$usage" "$H_DIR/batonctl.txt" || h_fail "batonctl.1 lacks '$c''s usage line: $usage"
    check_options "$H_DIR/batonctl.txt" "batonctl $c" "$help"
done
h_pass "$(wc -w <<<"$cmds") batonctl subcommands and 6 programs documented as their --help says"
