#!/usr/bin/env bash
# check_links.sh: every relative link in the repository's Markdown files
# resolves: the file exists and, for a #fragment, the target has a heading
# with that anchor (GitHub's rule: lower case, punctuation dropped, spaces
# to hyphens). Nothing may point outside the repository (../shared...).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
python3 - <<'PY'
import os, re, subprocess, sys
try:
    files = subprocess.run(['git', 'ls-files', '*.md'], capture_output=True, text=True, check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):  # not a git checkout: every .md outside build trees
    files = [os.path.relpath(os.path.join(d, n)) for d, _, ns in os.walk('.') for n in ns
             if n.endswith('.md') and not d.startswith(('./build', './.git'))]
root = os.path.realpath('.')
def anchors(path):
    out, code = set(), False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'):
            code = not code
        m = None if code else re.match(r'#{1,6} (.*)', line)
        if m:
            a = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-')
            n, base = 1, a
            while a in out:
                a, n = f'{base}-{n}', n + 1
            out.add(a)
    return out
bad = []
for f in files:
    text, code = [], False
    for line in open(f, encoding='utf-8'):
        if line.startswith('```'):
            code = not code
        text.append('' if code else line)
    for n, line in enumerate(text, 1):
        for target in re.findall(r'\]\(([^)\s]+)\)', line):
            if re.match(r'[a-z]+:', target):
                continue
            path, _, frag = target.partition('#')
            dest = os.path.realpath(os.path.join(os.path.dirname(f), path)) if path else os.path.realpath(f)
            if not (dest + os.sep).startswith(root + os.sep) and dest != root:
                bad.append(f'{f}:{n}: {target} points outside the repository')
            elif not os.path.exists(dest):
                bad.append(f'{f}:{n}: {target}: no such file')
            elif frag and dest.endswith('.md') and frag not in anchors(dest):
                bad.append(f'{f}:{n}: {target}: no heading #{frag} in {os.path.relpath(dest, root)}')
        if '../shared' in line:
            bad.append(f'{f}:{n}: refers to ../shared, outside the repository')
for b in bad:
    print(b)
print(f'check_links: {len(files)} Markdown files, {len(bad)} broken link(s)')
sys.exit(1 if bad else 0)
PY
