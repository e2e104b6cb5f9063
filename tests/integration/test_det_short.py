"""Issue 19's detection side, on real files through `gradwatch replay`:
short runs judged on their own points (detectors/det_short.c) and fp16
loss scaling (detectors/det_loss_scale.c).

- the six BLOOM incident excerpts of ../shared/realworld (3-11 points) each
  raise a warning or critical alert whose summary names what happened;
- every excerpt of tests/data/incidents is read, at least MIN_FAULT_RECALL
  of its faults alert
  and none of its healthy ones (the test prints which);
- a running daemon that meets those excerpts' lines raises the alerts
  replay prints (one engine: live == replay);
- every window of 5, 10, 20 and 40 points of every healthy real log
  (tests/integration/windows.py) replays with no warning or critical alert
  outside the spans its labels allow.
"""
import json
import os
import subprocess
import unittest

import windows
from gwtest import Daemon, GRADWATCH, REALWORLD, SHARED
from test_replay import replay_alerts

HERE = os.path.dirname(os.path.abspath(__file__))
INCIDENTS = os.path.join(HERE, '..', 'data', 'incidents')
# Issue 19 asks for 0.90; 36 of 42 (0.86) is where the rules stand with zero
# false alerts on the windows (docs/detectors.md "Short context" lists the
# faults still missed: resumes judged on a few points, a 3-point spike).
MIN_FAULT_RECALL = 0.90


def alerts(path):
    r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl', '--min-severity', 'warning',
                        path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    opened = [json.loads(l) for l in r.stdout.decode().splitlines() if l.strip()]
    return r.returncode, [a for a in opened if a.get('kind') == 'open'], r.stderr.decode()


class Bloom(unittest.TestCase):
    WHAT = {
        'bs-tr1-13B-huge-spike-excerpt.jsonl': 'loss jumped',
        'bs-tr11-176B-first-spike-excerpt.jsonl': 'loss jumped',
        'bs-tr8-104B-glitch2-excerpt.jsonl': 'loss climbed',
        'bs-tr8-104B-spike-11447-excerpt.jsonl': 'loss jumped',
        'bs-tr8-104B-spike-8740-diverge-excerpt.jsonl': 'loss jumped',
        'bs-tr8b-104B-restart-spike-excerpt.jsonl': 'loss rose',
    }

    def test_each_excerpt_alerts_naming_what_happened(self):
        for name, what in self.WHAT.items():
            with self.subTest(name):
                rc, al, err = alerts(os.path.join(REALWORLD, name))
                self.assertEqual(rc, 1, err)
                self.assertTrue(al, name)
                a = al[0]
                self.assertIn(a['severity'], ('warning', 'critical'))
                self.assertEqual(a['detector'], 'short_context')
                self.assertIn(what, a['summary'])
                self.assertIn('short context', a['summary'])
                self.assertTrue(a['evidence']['short_context'])
                self.assertGreaterEqual(a['evidence']['points'], 3)

    def test_scale_collapse_with_the_spike_is_said(self):
        _, al, _ = alerts(os.path.join(REALWORLD, 'bs-tr8b-104B-restart-spike-excerpt.jsonl'))
        self.assertIn('fp16 loss scale fell', al[0]['summary'])


class Resumed(unittest.TestCase):
    """BLOOM's reshaped checkpoint, resumed under seven layouts: only the
    layout whose first step went off the curve (grad norm x8.7 on the same
    samples) is named, at its restart, with the points before it."""

    def test_the_reshape_that_went_wrong_is_named(self):
        rc, al, err = alerts(os.path.join(INCIDENTS, 'bs-tr11-176B-reshape-resume.md'))
        self.assertEqual(rc, 1, err)
        self.assertEqual(len(al), 1, al)
        a = al[0]
        self.assertEqual((a['detector'], a['evidence']['rule']), ('short_context', 'resumed'))
        self.assertEqual(a['step'], 94768)
        self.assertEqual(a['evidence']['value'], 1.335)
        self.assertGreaterEqual(a['evidence']['prior_points'], 3)
        self.assertIn('after the restart from step 94,767', a['summary'])

    def test_a_loop_that_stopped_on_inf_is_nonfinite(self):
        rc, al, err = alerts(os.path.join(INCIDENTS, 'torchvision-1631-loss-inf-stop.log'))
        self.assertEqual(rc, 1, err)
        self.assertEqual([(x['detector'], x['severity'], x['step']) for x in al],
                         [('nonfinite', 'critical', 21)])


class LiveEqualsReplay(unittest.TestCase):
    def test_daemon_judges_short_runs_as_replay_does(self):
        names = sorted(Bloom.WHAT)
        with Daemon() as d:
            expected = {}
            total = 0
            for name in names:
                path = os.path.join(REALWORLD, name)
                expected.update(replay_alerts(path))
                with open(path, 'rb') as f:
                    data = f.read()
                total += data.count(b'\n')
                d.send_unix(data)
            got = d.wait_committed('SELECT count(*) FROM records', total, timeout=30)
            self.assertEqual(got, total)
            rows = d.sql('SELECT id, detector, step, line, severity, seg FROM alerts')
            self.assertEqual({r[0]: list(r[1:]) for r in rows}, expected)
            self.assertEqual(len(expected), len(names))


class Incidents(unittest.TestCase):
    def test_faults_alert_healthy_stay_quiet(self):
        with open(os.path.join(INCIDENTS, 'incidents.json')) as f:
            entries = json.load(f)
        faults = caught = 0
        false = []
        report = []
        for e in entries:
            rc, al, err = alerts(os.path.join(INCIDENTS, e['file']))
            self.assertNotEqual(rc, 2, '%s not read: %s' % (e['file'], err))
            names = sorted({a['detector'] for a in al})
            if e['label'] == 'fault':
                faults += 1
                caught += bool(al)
                report.append('%s fault %-17s %s' % ('caught' if al else 'MISSED', e['kind'],
                                                      e['file']))
            elif al:
                false.append('%s: %s' % (e['file'], al[0]['summary']))
            else:
                report.append('quiet  healthy %-15s %s' % (e['kind'], e['file']))
        print('\n'.join(report))
        print('faults caught %d/%d, healthy alerting %d' % (caught, faults, len(false)))
        self.assertEqual(false, [])
        self.assertGreaterEqual(caught / faults, MIN_FAULT_RECALL)

    def test_loss_scale_rules_on_real_overflow_logs(self):
        for name, rule in (('fairseq-512-loss-scale-to-minimum.md', 'floor'),
                           ('chinese-llama-alpaca-534-deepspeed-overflow-storm.txt', 'storm'),
                           ('deepspeed-697-loss-scale-pinned-at-1.log', 'pinned')):
            with self.subTest(name):
                _, al, _ = alerts(os.path.join(INCIDENTS, name))
                self.assertEqual([(a['detector'], a['evidence']['rule']) for a in al],
                                 [('loss_scale', rule)])
        for name in ('cogvideo-233-deepspeed-overflow-recovered.md',
                     'fairseq-1143-myleott-reference-overflow.txt',
                     'fairseq-1895-after-fix-scale-floor.md'):
            with self.subTest(name):
                self.assertEqual(alerts(os.path.join(INCIDENTS, name))[1], [])


class Windows(unittest.TestCase):
    def test_no_false_alert_on_healthy_windows(self):
        al, n = windows.run_windows(GRADWATCH, SHARED)
        bad = ['%s %d@%d %s: %s' % (lab, size, s, windows.rule_of(a), a['summary'])
               for lab, size, s, a, ok in al if not ok]
        print('%d windows, %d alerts outside allowed spans' % (n, len(bad)))
        self.assertGreater(n, 100000)
        self.assertEqual(bad[:20], [])


if __name__ == '__main__':
    unittest.main(verbosity=2)
