#!/usr/bin/env bash
# subcommands.sh BATONCTL OUT: writes a help2man include file (OUT) with a
# COMMANDS section that holds every batonctl subcommand's own --help,
# verbatim, so that batonctl.1 documents each subcommand from the same text
# the program prints (it_man checks the page against --help).
set -euo pipefail
ctl=$1 out=$2
# roff: a backslash is \e; a line starting with . or ' is protected by \&.
esc() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
cmds=$("$ctl" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
[[ -n $cmds ]] || { echo "subcommands.sh: no commands in '$ctl --help'" >&2; exit 1; }
{
    echo "[COMMANDS]"
    echo "Each command's own help, as \\fBbatonctl\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR prints it."
    for c in $cmds; do
        echo ".SS \"$c\""
        echo ".nf"
        "$ctl" "$c" --help 2>&1 | esc
        echo ".fi"
    done
    echo "[SEE ALSO]"
    echo "baton-coordinator(1), baton-worker(1), baton-run(1), baton-devkafka(1), baton-fence-write(1)."
    echo "The guides in the source tree's docs/ directory: operating, configuration, metrics, sinks, design."
} >"$out.tmp"
mv "$out.tmp" "$out"
