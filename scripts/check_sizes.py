#!/usr/bin/env python3
"""Reports library functions longer than --max-function lines and library
files longer than --max-file lines (issue 19's limits: 80 and 600).

A function is a brace block opened at namespace or class level by a line
that looks like a definition (it has a parameter list); its length counts
from the line with the name to the closing brace. Exit status 1 when any
limit is exceeded. Usage: scripts/check_sizes.py [paths...] (default:
src include benchmarks/baselines)."""
import argparse
import pathlib
import re
import sys

SCOPE = re.compile(r'^\s*(namespace\b|(class|struct|union|enum)\b[^;(]*$|extern\s+"C")')


def strip(text):
    """Removes comments and string/char literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i)
            out.append('""' + '\n' * text.count('\n', i, end))
            i = end + len(m.group(1)) + 2
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(path):
    lines = strip(path.read_text()).split('\n')
    stack = []  # per open brace: ('scope'|'func'|'other', start line, name)
    found = []
    header, header_line = '', 0  # text since the last ; { or }, and where it starts
    for no, line in enumerate(lines, 1):
        if line.lstrip().startswith('#'):
            continue
        for ch in line + '\n':
            if ch == '{':
                in_scope = all(k == 'scope' for k, _, _ in stack)
                text = ' '.join(header.split())
                if in_scope and SCOPE.match(text or ' '):
                    stack.append(('scope', no, ''))
                elif in_scope and '(' in text and not text.endswith('='):
                    name = re.findall(r'([\w:~]+)\s*\(', text)
                    stack.append(('func', header_line or no, name[0] if name else '?'))
                else:
                    stack.append(('other', no, ''))
                header, header_line = '', 0
            elif ch == '}':
                if stack:
                    kind, start, name = stack.pop()
                    if kind == 'func':
                        found.append((name, start, no))
                header, header_line = '', 0
            elif ch == ';':
                header, header_line = '', 0
            else:
                if not header_line and not ch.isspace():
                    header_line = no
                header += ch
    return found, len(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('paths', nargs='*', default=['src', 'include', 'benchmarks/baselines'])
    ap.add_argument('--max-function', type=int, default=80)
    ap.add_argument('--max-file', type=int, default=600)
    a = ap.parse_args()
    bad = 0
    files = []
    for p in map(pathlib.Path, a.paths):
        files += [p] if p.is_file() else sorted(f for f in p.rglob('*') if f.suffix in ('.cc', '.h', '.cu', '.cuh'))
    for f in files:
        found, total = functions(f)
        if total > a.max_file:
            print(f'{f}: {total} lines (file limit {a.max_file})')
            bad += 1
        for name, b, e in found:
            if e - b + 1 > a.max_function:
                print(f'{f}:{b}: {name} is {e - b + 1} lines (function limit {a.max_function})')
                bad += 1
    print(f'check_sizes: {len(files)} files, {bad} over the limits')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
