"""The false-alert count on windows of healthy real logs, per rule: every
window of 5, 10, 20 and 40 consecutive points of every healthy real log in
../shared/realworld replayed as a run of its own (tests/integration/windows.py
says which logs and windows).  docs/detectors.md ("Short context") carries
the table this prints.

    python3 bench/det_windows.py [--gradwatch build/cli/gradwatch] [--show N]
                                 [--config FILE]

Every rule of the short-context and loss-scale detectors is listed, fired
or not; --config replays with other thresholds (how far the windows are
from a false alert: e.g. the short rules' factors made looser).
"""
import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'integration'))
import windows  # noqa: E402


RULES = ['short_context/' + r for r in ('absurd', 'collapse', 'jump', 'level', 'climb',
                                        'frozen', 'resumed')] + \
        ['loss_scale/' + r for r in ('storm', 'floor', 'pinned', 'minimum',
                                                     'skipped')]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--gradwatch', default='build/cli/gradwatch')
    ap.add_argument('--shared', default=os.environ.get(
        'GW_SHARED', os.path.join(HERE, '..', '..', 'shared')))
    ap.add_argument('--show', type=int, default=10, help='alerts outside spans to print')
    ap.add_argument('--config', help='a gradwatch configuration (thresholds) to replay with')
    args = ap.parse_args()
    t0 = time.time()
    alerts, n = windows.run_windows(args.gradwatch, args.shared, config=args.config)
    per = collections.Counter()
    per_size = collections.Counter()
    allowed = collections.Counter()
    bad = []
    for label, size, s, a, ok in alerts:
        r = windows.rule_of(a)
        if ok:
            allowed[r] += 1
            continue
        per[r] += 1
        per_size[(r, size)] += 1
        bad.append((label, size, s, a))
    print('%d windows replayed in %.0f s' % (n, time.time() - t0))
    print('| rule | false alerts (5 / 10 / 20 / 40 points) | in allowed spans |')
    print('|---|---|---|')
    for r in sorted(set(per) | set(allowed) | set(RULES)):
        sizes = ' / '.join(str(per_size[(r, z)]) for z in windows.SIZES)
        print('| %s | %d (%s) | %d |' % (r, per[r], sizes, allowed[r]))
    print('total outside allowed spans: %d' % len(bad))
    for label, size, s, a in bad[:args.show]:
        print('  %s window %d@%d: %s %s: %s' % (label, size, s, a['detector'], a['severity'],
                                               a['summary']))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
