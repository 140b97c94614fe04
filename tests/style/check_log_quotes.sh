#!/usr/bin/env bash
# check_log_quotes.sh: every quoted log value (key=\"%s\") in a BLOG_*() or
# BATON_LOG() call goes through baton_log_q(), which turns a '"' into '\''
# so that text baton did not write (a path, a library's or a server's error,
# a URI) cannot end the value early and forge fields (common/baton_log.h).
# The one other argument allowed there is a string literal, or a choice
# between two (COND ? "a" : "b"). Prints each offending call as FILE:LINE
# and its argument; exits 1 if any.
#
# Before it scans the tree it scans two samples of its own, one that breaks
# the rule and one that keeps it, and fails unless it flags exactly the
# first: a check that cannot fail proves nothing.
set -euo pipefail
src=${BATON_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$src"
python3 - <<'PY'
import os, re, sys

CALL = re.compile(r'\b(BLOG_(?:DEBUG|INFO|WARN|ERROR)|BATON_LOG)\s*\(')
# printf conversions; a '*' width or precision takes an argument of its own
CONV = re.compile(r'%(%|[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?(?:hh|h|ll|l|z|j|t)?([diouxXcspfgeE]))')
LIT = re.compile(r'"(?:[^"\\\n]|\\.)*"')

def end_of_literal(s, i):
    q, i = s[i], i + 1
    while s[i] != q:
        i += 2 if s[i] == '\\' else 1
    return i + 1

def call_args(s, i):
    """The top-level arguments of the call whose '(' is at s[i]."""
    depth, args, start, j = 0, [], i + 1, i
    while True:
        c = s[j]
        if c in '"\'':
            j = end_of_literal(s, j)
            continue
        if s.startswith('/*', j):
            j = s.index('*/', j) + 2
            continue
        if s.startswith('//', j):
            j = s.index('\n', j)
            continue
        if c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                args.append(s[start:j])
                return args
        elif c == ',' and depth == 1:
            args.append(s[start:j])
            start = j + 1
        j += 1

def format_text(arg):
    """The format's text (adjacent literals joined, a PRI macro read as its
    conversion), or None when it is not made of literals."""
    arg = re.sub(r'/\*.*?\*/', '', arg, flags=re.S)
    out = ''
    for t in re.findall(r'"(?:[^"\\]|\\.)*"|PRI[diouxX](?:8|16|32|64|MAX|PTR)|\S+', arg):
        if t.startswith('"'):
            out += t[1:-1]
        elif t.startswith('PRI'):
            out += t[3]
        else:
            return None
    return out

def allowed(arg):
    a = re.sub(r'/\*.*?\*/', '', arg, flags=re.S).strip()
    if a.startswith('baton_log_q('):
        return True
    bare = re.sub(r'\s+', ' ', LIT.sub('L', a)).replace('L L', 'L')
    return re.fullmatch(r'L( L)*|[^?"]*\? ?L ?: ?L', bare) is not None

def scan(name, s):
    bad = []
    for m in CALL.finditer(s):
        if s[:m.start()].rstrip().endswith('#define'):
            continue
        try:
            args = call_args(s, m.end() - 1)
        except (ValueError, IndexError):
            continue
        fi = 1 if m.group(1) == 'BATON_LOG' else 0
        ft = format_text(args[fi]) if len(args) > fi else None
        if ft is None:
            continue
        ai = fi + 1
        for c in CONV.finditer(ft):
            if c.group(1) == '%':
                continue
            ai += (c.group(2) == '*') + (c.group(3) == '*')
            if c.group(4) == 's' and ft[:c.start()].endswith('=\\"'):
                arg = args[ai] if ai < len(args) else '(missing)'
                if not allowed(arg):
                    line = s.count('\n', 0, m.start()) + 1
                    bad.append(f'{name}:{line}: {" ".join(arg.split())}')
            ai += 1
    return bad

BREAKS = r'''
void f(const char *path, const char *err) {
    BLOG_WARN("event=x path=\"%s\" n=%d error=\"%s\"", baton_log_q(path), 3,
              err);
}
'''
KEEPS = r'''
void f(const char *path, const char *err, int tls) {
    BLOG_WARN("event=x path=\"%s\" n=%" PRId32 " error=\"%.*s\" hint=\"%s\"", baton_log_q(path), 3,
              5, baton_log_q(err), tls ? "check the ca" : "check sasl");
    BATON_LOG(BATON_LOG_INFO, "event=y what=\"%s\" id=%s", "literal", id);
}
'''
if scan('breaks', BREAKS) != ['breaks:3: err'] or scan('keeps', KEEPS):
    print('check_log_quotes: the check itself is broken: sample results',
          scan('breaks', BREAKS), scan('keeps', KEEPS), file=sys.stderr)
    sys.exit(1)

dirs = 'assignment bench common coordinator ctl devkafka examples include lib run sink tests worker'.split()
bad, n = [], 0
for d in dirs:
    for root, _, names in os.walk(d):
        for f in sorted(names):
            if f.endswith(('.c', '.h')) and '/corpus' not in root:
                n += 1
                p = os.path.join(root, f)
                bad += scan(p, open(p, encoding='utf-8', errors='replace').read())
for b in bad:
    print(b)
if bad:
    print(f'check_log_quotes: {len(bad)} quoted log value(s) not passed through baton_log_q() '
          '(common/baton_log.h says why)', file=sys.stderr)
    sys.exit(1)
print(f'check_log_quotes: {n} files, every quoted log value passes through baton_log_q()')
PY
