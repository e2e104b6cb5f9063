"""Numbers go into JSON through gw_json_num (lib/util.h) only.

json_pack's "f" and json_real() fail on NaN and infinities, and the whole
object built with them (an alert's evidence, a record, an API answer) is
lost.  gw_json_num writes those as null.  This check fails on any json_pack
format with an "f" and any json_real() call in the C sources of the program
(lib/util.c, which defines gw_json_num, excepted), so a new detector or
endpoint cannot bring the failure back.

Usage: lint_json_num.py SOURCE_ROOT
"""
import os
import re
import sys

DIRS = ('lib', 'detectors', 'daemon', 'alerts', 'storage', 'readers', 'kernels', 'web')
ALLOWED = {os.path.join('lib', 'util.c')}


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text,
                  flags=re.S)


def pack_formats(text):
    """(offset, format) of every json_pack/json_pack_ex format literal."""
    for m in re.finditer(r'\bjson_pack(?:_ex)?\s*\(', text):
        rest = text[m.end():]
        if m.group(0).startswith('json_pack_ex'):
            rest = rest.split(',', 2)[-1] if rest.count(',') >= 2 else rest
        lit = re.match(r'\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', rest)
        if lit:
            yield m.start(), ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', lit.group(1)))


def main():
    root = sys.argv[1]
    bad = []
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if not name.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED:
                    continue
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = strip_comments(f.read())
                for off, fmt in pack_formats(text):
                    if 'f' in fmt:
                        bad.append('%s:%d: json_pack format "%s" has "f": use "o" with gw_json_num()'
                                   % (rel, text.count('\n', 0, off) + 1, fmt))
                for m in re.finditer(r'\bjson_real\s*\(', text):
                    bad.append('%s:%d: json_real(): use gw_json_num() (NaN/inf become null)'
                               % (rel, text.count('\n', 0, m.start()) + 1))
    for b in bad:
        print(b)
    print('%d place(s) that can lose JSON on a non-finite number' % len(bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
