"""No C source file over 600 lines, but for a short allowlist with reasons.

A file over 600 lines does more than one job (docs/architecture.md, "Files
and faces"): split it by job, with an internal header beside the parts
(X_impl.h), not the parent's public header.  This check walks every .c and
.h file of the tree (build directories, node_modules and .git aside) and
fails on one over MAX_LINES lines that is not in ALLOW below, each entry
with a one-line reason.  It fails too on an entry of ALLOW whose file is no
longer over the limit, or no longer there: the list only ever gets shorter.

Usage: lint_file_size.py SOURCE_ROOT
       lint_file_size.py --self-test   (the check on a tree it makes)
"""
import os
import sys
import tempfile

MAX_LINES = 600

# path (from the source root) -> why it may be longer, for now
ALLOW = {
}

SKIP_DIRS = {'.git', 'node_modules', 'demo'}


def sources(root):
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith('build'))
        for name in sorted(names):
            if name.endswith(('.c', '.h')):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, root).replace(os.sep, '/'), path


def count_lines(path):
    with open(path, 'rb') as f:
        return f.read().count(b'\n')


def check(root, allow):
    bad = []
    seen = set()
    for rel, path in sources(root):
        n = count_lines(path)
        if rel in allow:
            seen.add(rel)
            if n <= MAX_LINES:
                bad.append('%s: %d lines, no longer over %d: take it off the allowlist (%s)'
                           % (rel, n, MAX_LINES, os.path.basename(__file__)))
        elif n > MAX_LINES:
            bad.append('%s: %d lines, over %d: split it by job (an internal header beside the '
                       'parts), or, for one job that cannot be cut, add it to the allowlist '
                       'with its reason' % (rel, n, MAX_LINES))
    for rel in sorted(set(allow) - seen):
        bad.append('%s: on the allowlist but not in the tree: take it off' % rel)
    return bad


def self_test():
    """The check on a tree it makes: it must pass and fail where it should."""
    with tempfile.TemporaryDirectory() as root:
        def write(rel, lines):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write('x\n' * lines)
        write('a/ok.c', MAX_LINES)
        write('a/long.h', MAX_LINES + 1)
        write('b/allowed.c', MAX_LINES + 50)
        write('build-x/generated.c', 5000)
        write('web/node_modules/dep.c', 5000)
        bad = check(root, {'b/allowed.c': 'a reason', 'b/gone.c': 'a reason'})
        want = ['a/long.h: %d lines' % (MAX_LINES + 1), 'b/gone.c: on the allowlist']
        for w in want:
            assert any(b.startswith(w) for b in bad), (w, bad)
        assert len(bad) == len(want), bad
        write('b/allowed.c', MAX_LINES)
        bad = check(root, {'b/allowed.c': 'a reason'})
        assert any(b.startswith('b/allowed.c: %d lines, no longer' % MAX_LINES) for b in bad), bad
    print('lint_file_size: the check fails on a long file, a stale entry and a gone one, '
          'and passes the rest')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    bad = check(sys.argv[1], ALLOW)
    for b in bad:
        print(b)
    print('%d file(s) over %d lines outside the allowlist (%d on it), or stale entries'
          % (len(bad), MAX_LINES, len(ALLOW)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
