#!/usr/bin/env bash
# check_log_quotes.sh: every log value whose text baton may not have
# written is made safe for its field, in every BLOG_*() and BATON_LOG()
# call of the tree (common/baton_log.h):
#   - a %s in a quoted value (key=\"%s\", msg=\"at %s\") goes through
#     baton_log_q(), which turns a '"' into '\'', so that the value cannot
#     end early;
#   - an unquoted one (key=%s) goes through baton_log_v(), which quotes it
#     when it is not one plain word (a blank, a '"' or an '=' in a path, a
#     URI, a library's error), so that it cannot read as several fields.
# Also allowed in either: a string literal, or a choice among them
# (COND ? "a" : "b", and chains of those); unquoted, a call of one of
# TOKENS below, functions that return one of baton's own fixed words (a
# state, an error name). Not checked: a %.*s (a length, maybe no NUL to
# scan), and a %s that is no field's value (a piece of format like
# " run_id="): keep outside text out of those. Refused, as no wrapper fits
# them: an unquoted value of several parts (path=%s/coordinators: compose
# it first) or with a precision; a call that needs more copies than
# baton_log_q's ring holds (8), or whose conversions do not match its
# arguments. Prints each offending argument as FILE:LINE; exits 1 if any.
# With --fix it wraps each one it can in place instead (then run
# clang-format).
#
# Before it scans the tree it scans two samples of its own, one that breaks
# every rule and one that keeps them, and fails unless it flags exactly
# the first's: a check that cannot fail proves nothing.
set -euo pipefail
src=${BATON_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$src"
FIX=0
[[ ${1:-} == --fix ]] && FIX=1
FIX=$FIX python3 - <<'PY'
import os, re, sys

CALL = re.compile(r'\b(BLOG_(?:DEBUG|INFO|WARN|ERROR)|BATON_LOG)\s*\(')
# printf conversions; a '*' width or precision takes an argument of its own
CONV = re.compile(r"%(%|[-+ #0']*(\*|\d+)?(?:\.(\*|\d*))?(?:hh|h|ll|l|L|q|z|j|t)?([diouxXcspfFgGeEaAn]))")
LIT = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# Functions that return one of baton's (or a library's) own fixed words.
TOKENS = ('baton_err_name', 'rd_kafka_err2name', 'mstate_name', 'wpart_state_name',
          'baton_bad_key_reason', 'baton_release_reason_name',
          'sigabbrev_np', 'baton_strategy_name', 'baton_metrics_server_addr')

def end_of_literal(s, i):
    q, i = s[i], i + 1
    while s[i] != q:
        i += 2 if s[i] == '\\' else 1
    return i + 1

def call_args(s, i):
    """The spans (start, end) of the top-level arguments of the call whose
    '(' is at s[i]."""
    depth, spans, start, j = 0, [], i + 1, i
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
                spans.append((start, j))
                return spans
        elif c == ',' and depth == 1:
            spans.append((start, j))
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

def literal(a):
    bare = re.sub(r'\s+', ' ', LIT.sub('L', a)).replace('L L', 'L')
    return re.fullmatch(r'L( L)*|([^?"]*\? ?L ?: ?)+L', bare) is not None

def clean(arg):
    """arg without its comments (a // or /* inside a literal stays)."""
    out, j = '', 0
    while j < len(arg):
        if arg[j] in '"\'':
            k = end_of_literal(arg, j)
            out, j = out + arg[j:k], k
        elif arg.startswith('/*', j):
            j = arg.index('*/', j) + 2
        elif arg.startswith('//', j):
            j = arg.find('\n', j) if '\n' in arg[j:] else len(arg)
        else:
            out, j = out + arg[j], j + 1
    return out.strip()

def scan(name, s):
    """[(line, start, end, what)] of each argument that breaks a rule; what
    is the wrapper it wants, or why no wrapper can fix it."""
    bad = []
    for m in CALL.finditer(s):
        if s[:m.start()].rstrip().endswith('#define'):
            continue
        try:
            spans = call_args(s, m.end() - 1)
        except (ValueError, IndexError):
            continue
        line = s.count('\n', 0, m.start()) + 1
        fi = 1 if m.group(1) == 'BATON_LOG' else 0
        ft = format_text(s[spans[fi][0]:spans[fi][1]]) if len(spans) > fi else None
        if ft is None:
            continue
        args = [clean(s[a:b]) for a, b in spans]
        wrapped = sum(a.startswith(('baton_log_q(', 'baton_log_v(')) for a in args)
        if wrapped > 8:  # BATON_LOG_Q_SLOTS: a ninth copy reuses the first's buffer
            bad.append((line, spans[0][0], spans[0][0], f'at most 8 wrapped values, not {wrapped}'))
        ai = fi + 1
        for c in CONV.finditer(ft):
            if c.group(1) == '%':
                continue
            ai += (c.group(2) == '*') + (c.group(3) == '*')
            if c.group(4) == 's' and ai < len(spans):
                a, want = args[ai], None
                before = ft[:c.start()]
                quoted = len(re.findall(r'\\"', before)) % 2 == 1
                token = a.startswith(tuple(t + '(' for t in TOKENS)) or literal(a)
                if c.group(3) == '*':
                    pass  # %.*s: a length, maybe no NUL to scan
                elif quoted:
                    if not a.startswith('baton_log_q(') and not literal(a):
                        want = 'baton_log_q'
                elif re.search(r'[A-Za-z0-9_]=$', before):
                    whole = c.end() == len(ft) or ft[c.end()] == ' '
                    if c.group(3) is not None and not token:
                        want = 'no precision'  # key=%.5s would cut baton_log_v's quote
                    elif not whole and not token:
                        want = 'compose'  # key=%s/more: no wrapper can fix it
                    elif not token and not a.startswith('baton_log_v('):
                        want = 'baton_log_v'
                if want:
                    bad.append((line, spans[ai][0], spans[ai][1], want))
            ai += 1
        if ai != len(spans):
            bad.append((line, spans[0][0], spans[0][0],
                        f'{ai - fi - 1} conversions for {len(spans) - fi - 1} arguments'))
    return bad

BREAKS = r'''
void f(const char *path, const char *err, const char *uri) {
    BLOG_WARN("event=x path=\"%s\" n=%d error=\"%s\" uri=%s dir=%s/x", baton_log_q(path), 3,
              err, uri, baton_log_v(dir));
    BLOG_WARN("event=y msg=\"at %s now\" k=%.5s v=%Lf w=%s", where, name, (long double)1, who);
    BLOG_INFO("event=z n=%d", 1, 2);
}
'''
KEEPS = r'''
void f(const char *path, const char *err, int tls, int e) {
    BLOG_WARN("event=x path=\"%s\" n=%" PRId32 " error=\"%.*s\" hint=\"%s\" e=%s", baton_log_q(path),
              3, 5, err, tls ? "check the ca" : "check sasl", baton_err_name(e));
    BATON_LOG(BATON_LOG_INFO, "event=y what=\"%s\" id=%s k=%.*s %s u=%s", "literal", baton_log_v(id),
              2, key, mb_row_label(m, 0), "redis://h" /* a literal */);
}
'''
got = [(l, w) for l, _, _, w in scan('breaks', BREAKS)]
want = [(3, 'baton_log_q'), (3, 'baton_log_v'), (3, 'compose'), (5, 'baton_log_q'),
        (5, 'no precision'), (5, 'baton_log_v'), (6, '1 conversions for 2 arguments')]
if got != want or scan('keeps', KEEPS):
    print('check_log_quotes: the check itself is broken: sample results', got,
          scan('keeps', KEEPS), file=sys.stderr)
    sys.exit(1)

fix = os.environ.get('FIX') == '1'
dirs = 'assignment bench common coordinator ctl devkafka examples include lib run sink tests worker'.split()
n, nbad = 0, 0
for d in dirs:
    for root, _, names in os.walk(d):
        for f in sorted(names):
            if not f.endswith(('.c', '.h')) or '/corpus' in root:
                continue
            n += 1
            p = os.path.join(root, f)
            s = open(p, encoding='utf-8', errors='replace').read()
            bad = scan(p, s)
            nbad += len(bad)
            for line, a, b, want in bad:
                print(f'{p}:{line}: {" ".join(s[a:b].split())} ({want})')
            if fix and bad:
                for line, a, b, want in sorted(bad, key=lambda x: -x[1]):
                    if not want.startswith('baton_log_') or clean(s[a:b]) != s[a:b].strip():
                        continue  # by hand: no wrapper fits, or a comment inside
                    lead = len(s[a:b]) - len(s[a:b].lstrip())
                    s = s[:a + lead] + want + '(' + s[a + lead:b].strip() + ')' + s[b:]
                open(p, 'w', encoding='utf-8').write(s)
if nbad and not fix:
    print(f'check_log_quotes: {nbad} log value(s) not made safe for their field '
          '(common/baton_log.h says why; --fix wraps them)', file=sys.stderr)
    sys.exit(1)
print(f'check_log_quotes: {n} files, {nbad} value(s) {"to wrap (compose ones by hand)" if fix else "unsafe"}')
PY
