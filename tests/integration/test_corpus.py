"""Detection quality, measured with the evaluation scorer (../shared/eval/score.py)
on the dev corpus and on the real-world logs, through `gradwatch replay
--format jsonl`.  The scorer's exit status decides the recall and false-alert
targets; the latency targets are read from its per-trace lines.

Targets (issue: detectors):
- dev: >= 95 % recall over detectable positives, zero false alerts, every
  detectable optimizer_reset trace caught, median latency <= 20 lines and
  none over 100, genesis.jsonl within 10 lines of the resume;
- realworld: no false alert at all, and nonfinite on the NaN run.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import unittest

from gwtest import CORPUS, REALWORLD, SHARED, GRADWATCH

SCORE = os.path.join(SHARED, 'eval', 'score.py')


def score(corpus, *opts):
    cmd = [sys.executable, SCORE, corpus, '--max-errors', '0'] + list(opts) + \
          ['--', GRADWATCH, 'replay', '--format', 'jsonl']
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    return r.returncode, r.stdout.decode()


def trace_lines(out):
    """{file: (PASS|FAIL, fault, detector, latency or None)} from the scorer's table."""
    res = {}
    for line in out.splitlines():
        m = re.match(r'(PASS|FAIL)\s+(\S+)\s+(\S+)\s+(?:detected=(\S+) latency=(\S+))?', line)
        if m:
            lat = m.group(5)
            res[m.group(2)] = (m.group(1), m.group(3), m.group(4),
                               int(lat) if lat and lat != '-' else None)
    return res


class Dev(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rc, cls.out = score(CORPUS, '--min-recall', '0.95', '--max-false', '0')
        cls.traces = trace_lines(cls.out)
        with open(os.path.join(CORPUS, 'labels.json')) as f:
            cls.labels = {e['file']: e for e in json.load(f)}

    def test_recall_and_no_false_alert(self):
        self.assertEqual(self.rc, 0, self.out)
        self.assertIn('false alerts: 0 total', self.out)
        self.assertRegex(self.out, r'\n(\d+) passed, 0 failed')

    def test_every_detectable_optimizer_reset(self):
        for f, lab in self.labels.items():
            if lab['fault'] == 'optimizer_reset' and lab['detectable']:
                st, _, det, lat = self.traces[f]
                self.assertEqual(st, 'PASS', (f, self.out))
                self.assertIsNotNone(lat, f)

    def test_latency(self):
        lats = [t[3] for f, t in self.traces.items()
                if t[3] is not None and self.labels[f]['detectable']]
        self.assertTrue(lats)
        self.assertLessEqual(statistics.median(lats), 20, lats)
        self.assertLessEqual(max(lats), 100, lats)
        st, _, det, lat = self.traces['genesis.jsonl']
        self.assertEqual(det, 'optimizer_reset')
        self.assertLessEqual(lat, 10)


class AlertContent(unittest.TestCase):
    def test_every_alert_has_numbers_evidence_cause_and_action(self):
        for corpus in (CORPUS, REALWORLD):
            for f in sorted(os.listdir(corpus)):
                if not f.endswith('.jsonl'):
                    continue
                r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl', os.path.join(corpus, f)],
                                   stdout=subprocess.PIPE)
                for line in r.stdout.decode().splitlines():
                    a = json.loads(line)
                    if a['kind'] == 'resolve':
                        continue
                    where = (f, a['detector'], a['line'])
                    self.assertTrue(a['evidence'], where)
                    self.assertRegex(a['summary'], r'\d', where)
                    self.assertTrue(a['cause'] and a['action'], where)
                    self.assertIn(a['severity'], ('info', 'warning', 'critical'), where)


class RealWorld(unittest.TestCase):
    def test_no_false_alert_and_nonfinite_on_the_nan_run(self):
        rc, out = score(REALWORLD, '--max-false', '0')
        self.assertEqual(rc, 0, out)
        self.assertIn('false alerts: 0 total', out)
        r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl',
                            os.path.join(REALWORLD, 'llmc-gpt2-124m-hector-nan.jsonl')],
                           stdout=subprocess.PIPE)
        first = json.loads(r.stdout.splitlines()[0])
        self.assertEqual((first['detector'], first['line']), ('nonfinite', 1))


if __name__ == '__main__':
    unittest.main()
