"""Every fuzz/*.dict is in libFuzzer's dictionary format, which fuzz/run.sh
(and so CI) hands to the fuzzer: a line is blank, a comment (#), or an
optional name= and a double-quoted string whose only escapes are \\\\, \\"
and \\xHH.  libFuzzer refuses the whole file at any other line ("\\t" made
every target of a run fail, not just the one with the word), and only when
the fuzzers run, at the end of CI: this check says so in the unit suite.

Usage: lint_fuzz_dict.py SOURCE_ROOT
"""
import os
import re
import sys

ENTRY = re.compile(r'^\s*(?:[A-Za-z0-9_]+\s*=\s*)?"((?:[^"\\]|\\\\|\\"|\\x[0-9A-Fa-f]{2})*)"\s*$')


def check(root):
    bad = []
    d = os.path.join(root, 'fuzz')
    for name in sorted(os.listdir(d)):
        if not name.endswith('.dict'):
            continue
        with open(os.path.join(d, name), encoding='utf-8', errors='replace') as f:
            for n, line in enumerate(f, 1):
                s = line.strip()
                if not s or s.startswith('#'):
                    continue
                if not ENTRY.match(line.rstrip('\n')):
                    bad.append('fuzz/%s:%d: not a libFuzzer dictionary entry (escapes: \\\\, '
                               '\\", \\xHH): %s' % (name, n, s))
    return bad


if __name__ == '__main__':
    bad = check(sys.argv[1])
    print('\n'.join(bad) if bad else 'every fuzz dictionary line is in libFuzzer\'s format')
    sys.exit(1 if bad else 0)
