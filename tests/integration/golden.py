"""Golden alerts: every alert `gradwatch replay` prints for a corpus, kept
byte for byte, so that a change meant to be fast (streaming statistics, the
engine's layout) can be shown to leave detection alone.

A golden file (tests/data/golden/<set>.jsonl) holds, for every input file of
the set in name order, a line `# <file> exit <status>` and then the exact
output of

    gradwatch [--config tests/data/golden/loose.json] replay --format jsonl \
        --resolved <file>

run in the file's directory (so the "file" field is its bare name): opens,
updates and resolves, with their evidence.  The sets: the dev corpus, the
normalised realworld logs, raw/ and raw-more/ (the logs as their projects
wrote them) and the independent holdout of seeds 101 and 202 (committed,
tests/data/holdout), each at the default thresholds and at loose.json's
(thresholds far looser than the defaults, so that every rule fires often
and its statistics reach the evidence many times more than at the
defaults).

    python3 tests/integration/golden.py check  [--gradwatch build/cli/gradwatch]
    python3 tests/integration/golden.py update [--gradwatch build/cli/gradwatch]

`update` rewrites every golden file; do it in a commit of its own when
detection changes on purpose (a new rule, a threshold), saying why.
bench/golden_holdout.py regenerates the holdout and compares it with the
committed traces.  Standard library only.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
GOLDEN_DIR = os.path.join(SOURCE_ROOT, 'tests', 'data', 'golden')
HOLDOUT_DIR = os.path.join(SOURCE_ROOT, 'tests', 'data', 'holdout')
HOLDOUT_SEEDS = (101, 202)
LOOSE = os.path.join(GOLDEN_DIR, 'loose.json')
SHARED = os.environ.get('GW_SHARED', os.path.join(SOURCE_ROOT, '..', 'shared'))

# files of raw/ and raw-more/ that are no log: their documentation and truth
NOT_LOGS = {'README.md', 'truth.json', 'truth.py'}


def corpora(shared=SHARED):
    """name -> (directory, file filter) of the committed sets."""
    rw = os.path.join(shared, 'realworld')
    sets = {
        'dev': (os.path.join(shared, 'corpus', 'dev'), lambda f: f.endswith('.jsonl')),
        'realworld': (rw, lambda f: f.endswith('.jsonl')),
        'raw': (os.path.join(rw, 'raw'), lambda f: f not in NOT_LOGS),
        'raw-more': (os.path.join(rw, 'raw-more'), lambda f: f not in NOT_LOGS),
    }
    for seed in HOLDOUT_SEEDS:
        sets['holdout-%d' % seed] = (os.path.join(HOLDOUT_DIR, str(seed)),
                                     lambda f: f.endswith('.jsonl.zst'))
    return sets


def files_of(directory, keep):
    return sorted(f for f in os.listdir(directory)
                  if keep(f) and os.path.isfile(os.path.join(directory, f)))


def replay_set(gradwatch, directory, names, config=None):
    """The golden text of these files of directory (bytes)."""
    gw = os.path.abspath(gradwatch)
    out = []
    for name in names:
        cmd = [gw] + (['--config', config] if config else []) + \
              ['replay', '--format', 'jsonl', '--resolved', name]
        r = subprocess.run(cmd, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        out.append(b'# %s exit %d\n' % (name.encode(), r.returncode))
        out.append(r.stdout)
    return b''.join(out)


def golden_sets(shared=SHARED):
    """(golden file name, directory, files, config) of every committed set."""
    for name, (directory, keep) in corpora(shared).items():
        names = files_of(directory, keep)
        yield name + '.jsonl', directory, names, None
        yield name + '-loose.jsonl', directory, names, LOOSE


def first_difference(want, got):
    """A few lines saying where two golden texts first differ, or None."""
    if want == got:
        return None
    wl, gl = want.split(b'\n'), got.split(b'\n')
    current = '?'
    for i in range(max(len(wl), len(gl))):
        a = wl[i] if i < len(wl) else b'<end of file>'
        b = gl[i] if i < len(gl) else b'<end of file>'
        if a.startswith(b'# '):
            current = a[2:].decode(errors='replace')
        if a != b:
            j = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            return ('line %d (input %s), first differing byte %d:\n  golden: %s\n  now:    %s'
                    % (i + 1, current, j + 1, a[max(0, j - 60):j + 100].decode(errors='replace'),
                       b[max(0, j - 60):j + 100].decode(errors='replace')))
    return 'lengths differ'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('what', choices=['check', 'update'])
    ap.add_argument('--gradwatch', default=os.environ.get('GRADWATCH', 'build/cli/gradwatch'))
    args = ap.parse_args()
    bad = 0
    for gname, directory, names, config in golden_sets():
        got = replay_set(args.gradwatch, directory, names, config)
        path = os.path.join(GOLDEN_DIR, gname)
        if args.what == 'update':
            with open(path, 'wb') as f:
                f.write(got)
            print('%s: %d files, %d alert lines' % (gname, len(names), got.count(b'\n') - len(names)))
            continue
        with open(path, 'rb') as f:
            diff = first_difference(f.read(), got)
        print('%s: %s' % (gname, 'identical' if diff is None else 'DIFFERS at ' + diff))
        bad += diff is not None
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
