"""The JSON the web pages read, export and the public_url setting, against
the real gradwatchd (docs/web.md).

- GET /v1/runs/{run}/records: every record of the example trace without
  downsampling, the pre-crash copies flagged superseded; a downsampled
  answer that keeps a one-step spike and a NaN; paging; precise 400s.
- GET /v1/alerts/{id}.
- gradwatch export: CSV and JSON lines through the daemon and from the
  database give the same rows; the JSON lines replay to the same alerts.
- public_url: validated at start-up with a message naming the problem.
"""
import csv
import io
import json
import os
import subprocess
import tempfile
import unittest

import gwtest
from gwtest import Daemon, GRADWATCH, GRADWATCHD

EXAMPLE = os.path.join(gwtest.SOURCE_ROOT, 'examples', 'resume-without-optimizer.jsonl')
RUN = 'example-gpt-1b'


def tool(*args):
    return subprocess.run([GRADWATCH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)


class WebApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon().start()
        with open(EXAMPLE, 'rb') as f:
            status, body = cls.d.post('/v1/ingest', f.read())
        assert status == 200, body
        # a second run: 20,000 steps, a spike of 50 at step 12,345, NaN at 17,000
        recs = []
        for s in range(20000):
            loss = 50.0 if s == 12345 else 2.0 + (s % 7) * 0.01
            recs.append('{"run": "long", "step": %d, "loss": %s, "grad_norm": 1.0}'
                        % (s, 'NaN' if s == 17000 else repr(loss)))
        status, body = cls.d.post('/v1/ingest', ('\n'.join(recs) + '\n').encode())
        assert status == 200, body

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def records(self, run, query=''):
        return self.d.get('/v1/runs/%s/records%s' % (run, query))

    def test_every_record_and_superseded_copies(self):
        status, r = self.records(RUN)
        self.assertEqual(status, 200)
        self.assertEqual(len(r['step']), 1640)
        self.assertEqual(r['total'], 1640)
        self.assertFalse(r['downsampled'])
        # the resume from step 1,000 logged 1,001..1,040 again: the first
        # copies are superseded, the second current
        sup = [(g, s) for g, s, x in zip(r['segment'], r['step'], r['superseded']) if x]
        self.assertEqual(sup, [(1, s) for s in range(1001, 1041)])
        self.assertEqual([s['segment'] for s in r['segments']], [1, 2])
        self.assertEqual(r['segments'][0]['superseded_from'], 1001)
        self.assertEqual(r['segments'][1]['restart_step'], 1000)
        self.assertEqual(r['steps'] if 'steps' in r else sorted(r['step']), r['step'])
        # NaN at step 1,420: null with its bit
        i = r['step'].index(1420)
        self.assertIsNone(r['loss'][i])
        self.assertEqual(r['nonfinite'][i] & 1, 1)

    def test_downsampled_keeps_spike_and_nan(self):
        status, r = self.records('long', '?max_points=500')
        self.assertEqual(status, 200)
        self.assertTrue(r['downsampled'])
        self.assertEqual(r['total'], 20000)
        self.assertLessEqual(len(r['step']), 700)
        self.assertEqual(r['loss'][r['step'].index(12345)], 50.0)
        self.assertEqual(r['nonfinite'][r['step'].index(17000)], 1)
        # a zoomed range is exact again
        status, z = self.records('long', '?from=12000&to=12399&max_points=500')
        self.assertEqual(z['step'], list(range(12000, 12400)))
        self.assertFalse(z['downsampled'])

    def test_paging(self):
        got, cursor = [], None
        while True:
            q = '?max_points=0&limit=3000&extra=1' + ('&cursor=' + cursor if cursor else '')
            status, r = self.records('long', q)
            self.assertEqual(status, 200)
            got += r['step']
            self.assertEqual(len(r['line']), len(r['step']))
            cursor = r.get('next')
            if not cursor:
                break
        self.assertEqual(got, list(range(20000)))

    def test_bad_requests_are_precise(self):
        cases = [('?max_points=lots', 'max_points=lots'), ('?from=10&to=5', 'from (10) is after to (5)'),
                 ('?max_points=999999999', 'max_points'), ('?cursor=nope', 'cursor'),
                 ('?extra=1', 'extra=1 needs max_points=0')]
        for q, msg in cases:
            status, r = self.records(RUN, q)
            self.assertEqual(status, 400, q)
            self.assertIn(msg, r['error'], q)
        status, r = self.records('no-such-run')
        self.assertEqual(status, 404)
        self.assertIn('no-such-run', r['error'])

    def test_alert_by_id(self):
        status, al = self.d.get('/v1/runs/%s/alerts' % RUN)
        a = [x for x in al['alerts'] if x['detector'] == 'optimizer_reset'][0]
        status, one = self.d.get('/v1/alerts/' + a['id'])
        self.assertEqual(status, 200)
        self.assertEqual((one['run'], one['step'], one['summary']), (RUN, a['step'], a['summary']))
        status, r = self.d.get('/v1/alerts/gw-nope')
        self.assertEqual(status, 404)

    def test_export_csv_and_jsonl(self):
        url = 'http://127.0.0.1:%d' % self.d.http_port
        via_url = tool('export', RUN, '--format', 'csv', '--url', url)
        self.assertEqual(via_url.returncode, 0, via_url.stderr)
        rows = list(csv.DictReader(io.StringIO(via_url.stdout.decode())))
        self.assertEqual(len(rows), 1640)
        self.assertEqual(list(rows[0]), ['segment', 'step', 'superseded', 'ts', 'loss', 'grad_norm',
                                         'lr', 'throughput', 'extra'])
        nan_row = [r for r in rows if r['step'] == '1420'][0]
        self.assertEqual(nan_row['loss'], 'nan')
        self.assertEqual(sum(r['superseded'] == '1' for r in rows), 40)
        # the same from the database (the API writes numbers with 12
        # significant digits: ts to 10 ms)
        via_db = tool('export', RUN, '--format', 'csv', '--db', self.d.db)
        db_rows = list(csv.DictReader(io.StringIO(via_db.stdout.decode())))
        self.assertEqual(len(db_rows), len(rows))
        for a, b in zip(rows, db_rows):
            self.assertAlmostEqual(float(a.pop('ts')), float(b.pop('ts')), delta=0.01)
            self.assertEqual(a, b)
        # JSON lines replay to the same alerts as the original trace
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'x.jsonl')
            r = tool('export', RUN, '--format', 'jsonl', '--url', url, '-o', out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                lines = f.read().splitlines()
            self.assertEqual(len(lines), 1640)
            first = json.loads(lines[0])
            self.assertEqual((first['run'], first['step'], first['segment']), (RUN, 1, 1))

            def alerts(path):
                p = tool('replay', '--format', 'jsonl', path)
                return sorted((a['detector'], a['step'], a['segment']) for a in
                              map(json.loads, p.stdout.decode().splitlines()))
            self.assertEqual(alerts(out), alerts(EXAMPLE))
        bad = tool('export', RUN, '--format', 'xml', '--db', self.d.db)
        self.assertEqual(bad.returncode, 2)
        self.assertIn('csv or jsonl', bad.stderr.decode())


class PublicUrlTest(unittest.TestCase):
    def check(self, url):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'c.json')
            with open(path, 'w') as f:
                json.dump({'public_url': url}, f)
            return subprocess.run([GRADWATCHD, '--config', path, '--check-config'], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=30)

    def test_valid_url_is_kept_without_trailing_slash(self):
        r = self.check('https://node17.example:7471/')
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg, _ = json.JSONDecoder().raw_decode(r.stdout.decode())
        self.assertEqual(cfg['public_url'], 'https://node17.example:7471')

    def test_bad_urls_are_refused_with_the_reason(self):
        for url, why in [('node17:7471', 'http:// or https://'), ('https://', 'no host'),
                         ('https://a b', 'not allowed'), ('https://x/?q=1', 'not allowed'),
                         ('javascript:alert(1)', 'http:// or https://')]:
            r = self.check(url)
            self.assertNotEqual(r.returncode, 0, url)
            err = r.stderr.decode()
            self.assertIn('public_url', err, url)
            self.assertIn(why, err, url)


if __name__ == '__main__':
    unittest.main(verbosity=2)
