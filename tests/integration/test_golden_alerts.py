"""Golden alerts: `gradwatch replay` of the dev corpus, realworld, raw/,
raw-more/ and the committed holdout (tests/data/holdout, seeds 101 and
202), at the default and at loose thresholds, prints byte for byte the
alerts committed under tests/data/golden/ (golden.py says how they are made).
The first difference is printed with its input file and line.

When detection changes on purpose, regenerate them in a commit of their own:

    python3 tests/integration/golden.py update --gradwatch build/cli/gradwatch

(the same files come out with every kernel variant: GRADWATCH_KERNELS=scalar,
sse2 and avx2 were checked on the development machine)."""
import json
import os
import unittest

import golden
from gwtest import GRADWATCH, SHARED


class GoldenAlerts(unittest.TestCase):
    def test_every_set_is_identical(self):
        sets = list(golden.golden_sets(SHARED))
        self.assertEqual(len(sets), 12)
        for gname, directory, names, config in sets:
            with self.subTest(golden=gname):
                self.assertTrue(names, directory)
                with open(os.path.join(golden.GOLDEN_DIR, gname), 'rb') as f:
                    want = f.read()
                got = golden.replay_set(GRADWATCH, directory, names, config)
                diff = golden.first_difference(want, got)
                self.assertIsNone(diff, '%s differs from the golden alerts at %s' % (gname, diff))

    def test_loose_thresholds_make_every_rule_fire(self):
        # the loose sets are there to reach the statistics of every rule:
        # a threshold change that silenced one would make them a weaker check
        rules = set()
        for gname in os.listdir(golden.GOLDEN_DIR):
            if not gname.endswith('-loose.jsonl'):
                continue
            with open(os.path.join(golden.GOLDEN_DIR, gname), 'rb') as f:
                for line in f:
                    if line.startswith(b'{'):
                        a = json.loads(line)
                        ev = a.get('evidence')
                        rules.add((a['detector'], ev.get('rule') if isinstance(ev, dict) else None))
        for want in [('optimizer_reset', 'midrun'), ('optimizer_reset', 'signature'),
                     ('optimizer_reset', 'replay_divergence'), ('resume_regression', 'level'),
                     ('resume_regression', 'climb'), ('loss_spike', None),
                     ('grad_explosion', None), ('stall', 'throughput'), ('lr_schedule', None),
                     ('nonfinite', None), ('resume_mismatch', None)]:
            self.assertIn(want, rules)


if __name__ == '__main__':
    unittest.main()
