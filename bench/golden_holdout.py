"""The holdout against its generator: regenerate the independent holdout
(holdout_gen.py, seeds 101 and 202, as docs/detectors.md "An independent
holdout" makes it) and compare it with the traces committed in
tests/data/holdout/<seed>/, whose alerts the golden_alerts test holds byte
for byte (tests/data/golden/holdout-<seed>*.jsonl, golden.py).
A benchmark-suite script, not a test: a set takes about 14 minutes of one
core to generate.

    python3 bench/golden_holdout.py check  [--dir DIR] [--reuse] [--gradwatch build/cli/gradwatch]
    python3 bench/golden_holdout.py update [--dir DIR] [--reuse]

check: loss, grad norm and LR are deterministic from the seed; ts and
throughput come from each step's CPU time, which varies a little between
generations (holdout_gen.py).  So it says which regenerated traces are
byte for byte the committed ones, then replays the regenerated traces
(compressed as the committed ones are, so the file names match) and
compares their alerts with the golden ones: a difference on an identical
trace is the engine's (exit status 1), one on a differing trace is
reported as "trace differs" (a throughput alert may move with the CPU
time).

update: replace the committed traces with the regenerated ones (zstd -19,
with labels.json); then run `python3 tests/integration/golden.py update`
in the same commit and say why.

--dir: where the traces go (default: a new temporary directory); --reuse:
take the traces already in DIR/<seed> instead of generating them.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'integration'))
import golden  # noqa: E402

TORCH_PYTHON = '/usr/bin/python3'   # Debian's python3-torch (holdout_gen.py)


def generate(seed, out):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    subprocess.run(['nice', '-n', '10', TORCH_PYTHON, os.path.join(HERE, 'holdout_gen.py'),
                    '--seed', str(seed), '--out', out], check=True, env=env)


def traces(directory):
    return golden.files_of(directory, lambda f: f.endswith('.jsonl'))


def compress(src, dst):
    subprocess.run(['zstd', '-q', '-f', '-19', '-o', dst, src], check=True)


def digest(data):
    return hashlib.sha256(data).hexdigest()


def split_by_file(text):
    """golden text -> {file: its block}"""
    out, cur = {}, None
    for line in text.split(b'\n'):
        if line.startswith(b'# '):
            cur = line[2:].split(b' exit ')[0].decode()
            out[cur] = []
        if cur is not None and line:
            out[cur].append(line)
    return {k: b'\n'.join(v) + b'\n' for k, v in out.items()}


def check(seed, d, gradwatch):
    """Prints how the regenerated set d compares; returns the engine's
    differences (alerts that differ on a trace that did not)."""
    committed = os.path.join(golden.HOLDOUT_DIR, str(seed))
    names = traces(d)
    changed = set()
    for n in names:
        with open(os.path.join(d, n), 'rb') as f:
            now = digest(f.read())
        was = subprocess.run(['zstd', '-dcq', os.path.join(committed, n + '.zst')],
                             stdout=subprocess.PIPE).stdout
        if digest(was) != now:
            changed.add(n + '.zst')
    zdir = d + '-zst'
    os.makedirs(zdir, exist_ok=True)
    for n in names:
        compress(os.path.join(d, n), os.path.join(zdir, n + '.zst'))
    znames = [n + '.zst' for n in names]
    engine_diffs = 0
    for suffix, config in (('', None), ('-loose', golden.LOOSE)):
        gname = 'holdout-%d%s.jsonl' % (seed, suffix)
        got = golden.replay_set(gradwatch, zdir, znames, config)
        with open(os.path.join(golden.GOLDEN_DIR, gname), 'rb') as f:
            want = f.read()
        wb, gb = split_by_file(want), split_by_file(got)
        same = [n for n in znames if wb.get(n) == gb.get(n)]
        print('%s: %d of %d traces with the same alerts; %d traces regenerated differently from '
              'the committed ones' % (gname, len(same), len(znames), len(changed)))
        for n in sorted(set(wb) | set(gb)):
            if wb.get(n) == gb.get(n):
                continue
            why = 'trace differs' if n in changed else 'ENGINE: same trace, other alerts'
            engine_diffs += n not in changed
            print('  %s (%s) at %s' % (n, why, golden.first_difference(
                wb.get(n, b''), gb.get(n, b''))))
    return engine_diffs


def update(seed, d):
    committed = os.path.join(golden.HOLDOUT_DIR, str(seed))
    shutil.rmtree(committed, ignore_errors=True)
    os.makedirs(committed)
    names = traces(d)
    for n in names:
        compress(os.path.join(d, n), os.path.join(committed, n + '.zst'))
    shutil.copy(os.path.join(d, 'labels.json'), committed)
    print('%s: %d traces' % (committed, len(names)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('what', choices=['check', 'update'])
    ap.add_argument('--dir')
    ap.add_argument('--reuse', action='store_true')
    ap.add_argument('--gradwatch', default=os.environ.get('GRADWATCH', 'build/cli/gradwatch'))
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix='gw-holdout-')
    engine_diffs = 0
    for seed in golden.HOLDOUT_SEEDS:
        d = os.path.join(base, str(seed))
        if not (args.reuse and os.path.isdir(d) and traces(d)):
            generate(seed, d)
        if args.what == 'update':
            update(seed, d)
        else:
            engine_diffs += check(seed, d, args.gradwatch)
    print('traces in', base)
    return 1 if engine_diffs else 0


if __name__ == '__main__':
    sys.exit(main())
