"""The holdout's golden alerts: regenerate the independent holdout
(holdout_gen.py, seeds 101 and 202, as docs/detectors.md "An independent
holdout" makes it) and check that `gradwatch replay` still prints, byte for
byte, the alerts committed in tests/data/golden/holdout-<seed>.jsonl and
holdout-<seed>-loose.jsonl (the format of tests/integration/golden.py).
A benchmark-suite script, not a test: a set takes about 14 minutes of one
core to generate.

    python3 bench/golden_holdout.py check  [--dir DIR] [--reuse] [--gradwatch build/cli/gradwatch]
    python3 bench/golden_holdout.py update [--dir DIR] [--reuse] [--gradwatch ...]

--dir: where the traces go (default: a new temporary directory); --reuse:
take the traces already in DIR/<seed> instead of generating them.

loss, grad norm and LR are deterministic from the seed; ts and throughput
come from each step's CPU time, which varies a little between generations
(holdout_gen.py).  So each golden file also records the SHA-256 of every
trace it was made from (tests/data/golden/holdout-<seed>.sha256): when a
regenerated trace differs, its alerts are compared all the same and a
difference there is reported as "trace differs" -- a throughput alert may
move with the CPU time -- apart from the differences on identical traces,
which are the engine's.  Exit status 1 only for the latter.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'integration'))
import golden  # noqa: E402

SEEDS = (101, 202)
TORCH_PYTHON = '/usr/bin/python3'   # Debian's python3-torch (holdout_gen.py)


def generate(seed, out):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    subprocess.run(['nice', '-n', '10', TORCH_PYTHON, os.path.join(HERE, 'holdout_gen.py'),
                    '--seed', str(seed), '--out', out], check=True, env=env)


def traces(directory):
    return golden.files_of(directory, lambda f: f.endswith('.jsonl'))


def sha256(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('what', choices=['check', 'update'])
    ap.add_argument('--dir')
    ap.add_argument('--reuse', action='store_true')
    ap.add_argument('--gradwatch', default=os.environ.get('GRADWATCH', 'build/cli/gradwatch'))
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix='gw-holdout-')
    if args.what == 'check' and not all(
            os.path.exists(os.path.join(golden.GOLDEN_DIR, 'holdout-%d.jsonl' % s)) for s in SEEDS):
        print('no golden holdout alerts committed yet: make them once with '
              '`python3 bench/golden_holdout.py update --dir DIR` (before a change to detection '
              'or speed) and commit tests/data/golden/holdout-*')
        return 1
    engine_diffs = 0
    for seed in SEEDS:
        d = os.path.join(base, str(seed))
        if not (args.reuse and os.path.isdir(d) and traces(d)):
            generate(seed, d)
        names = traces(d)
        sums = {n: sha256(os.path.join(d, n)) for n in names}
        sums_path = os.path.join(golden.GOLDEN_DIR, 'holdout-%d.sha256' % seed)
        if args.what == 'update':
            with open(sums_path, 'w') as f:
                for n in names:
                    f.write('%s  %s\n' % (sums[n], n))
        with open(sums_path) as f:
            old_sums = {l.split()[1]: l.split()[0] for l in f if l.strip()}
        changed = {n for n in names if old_sums.get(n) != sums[n]}
        for suffix, config in (('', None), ('-loose', golden.LOOSE)):
            gname = 'holdout-%d%s.jsonl' % (seed, suffix)
            got = golden.replay_set(args.gradwatch, d, names, config)
            path = os.path.join(golden.GOLDEN_DIR, gname)
            if args.what == 'update':
                with open(path, 'wb') as f:
                    f.write(got)
                print('%s: %d traces, %d alert lines' % (gname, len(names),
                                                          got.count(b'\n') - len(names)))
                continue
            with open(path, 'rb') as f:
                want = f.read()
            wb, gb = split_by_file(want), split_by_file(got)
            same = [n for n in names if wb.get(n) == gb.get(n)]
            print('%s: %d of %d traces identical; %d traces regenerated differently from the '
                  'golden ones' % (gname, len(same), len(names), len(changed)))
            for n in sorted(set(wb) | set(gb)):
                if wb.get(n) == gb.get(n):
                    continue
                why = 'trace differs' if n in changed else 'ENGINE: same trace, other alerts'
                engine_diffs += n not in changed
                print('  %s (%s) at %s' % (n, why, golden.first_difference(
                    wb.get(n, b''), gb.get(n, b''))))
    print('traces in', base)
    return 1 if engine_diffs else 0


if __name__ == '__main__':
    sys.exit(main())
