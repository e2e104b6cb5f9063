"""One run written by every rank of a distributed job (detectors/engine.h
"Ranks", "Interleaved writers"), through the real gradwatchd and
`gradwatch send`: 4 ranks each sending steps 1..399 of run "ddp" with a
"rank" field give one segment, rank 0's 399 records and the other ranks'
lines stored apart (their summary in /v1/runs/{run}, their lines in
/v1/runs/{run}/ranks?rank=N); without a rank field the interleaving is
recognised after a few repeats, said once in the log and on the run (also
after a daemon restart), the repeats stored apart as rank -1, and no
longer opens segments, while a real restart of the job still does; a bad
rank is rejected with its column."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCH, Daemon


def ddp_lines(ranks=4, steps=range(1, 400), with_rank=True, ts0=None, hang=None):
    out = []
    for s in steps:
        for k in range(ranks):
            if hang and k == hang[0] and s > hang[1]:
                continue
            rec = {'run': 'ddp', 'step': s, 'loss': 2.0 + 0.01 * k - 0.001 * s, 'grad_norm': 0.5}
            if with_rank:
                rec['rank'] = k
            if ts0 is not None:
                rec['ts'] = ts0 + s + 0.001 * k
            out.append(json.dumps(rec))
    return ('\n'.join(out) + '\n').encode()


class Ranks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwranks-')

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def send(self, d, data):
        p = os.path.join(self.tmp, 'ranks.jsonl')
        with open(p, 'wb') as f:
            f.write(data)
        r = subprocess.run([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % d.http_port, p],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return r.returncode, r.stderr.decode()

    def segments(self, d, run='ddp'):
        return d.sql("SELECT count(*) FROM segments s JOIN runs r ON r.id = s.run_id "
                     "WHERE r.name = ?", (run,))[0][0]

    def records(self, d, run='ddp'):
        return d.sql("SELECT count(*) FROM records x JOIN runs r ON r.id = x.run_id "
                     "WHERE r.name = ?", (run,))[0][0]

    def test_four_ranks_with_a_rank_field_are_one_run(self):
        with Daemon() as d:
            rc, err = self.send(d, ddp_lines(hang=(2, 350)))
            self.assertEqual(rc, 0, err)
            self.assertIn('%d line(s) accepted' % (4 * 399 - 49), err)
            self.assertEqual(self.segments(d), 1)
            self.assertEqual(self.records(d), 399)
            st, run = d.get('/v1/runs/ddp')
            self.assertEqual(st, 200)
            self.assertEqual(run['last_step'], 399)
            self.assertEqual(len(run['segments']), 1)
            self.assertIsNone(run['writers'])
            ranks = {k['rank']: k for k in run['ranks']}
            self.assertEqual(sorted(ranks), [1, 2, 3])
            self.assertEqual(ranks[1]['lines'], 399)
            self.assertEqual(ranks[2]['last_step'], 350)     # the one behind
            self.assertEqual(ranks[3]['last_step'], 399)
            # the last values are rank 0's
            self.assertAlmostEqual(run['last_values']['loss'], 2.0 - 0.399)
            st, page = d.get('/v1/runs/ddp/ranks?rank=3&limit=2')
            self.assertEqual(st, 200, page)
            self.assertEqual([x['step'] for x in page['lines']], [398, 399])
            line = json.loads(page['lines'][1]['text'])
            self.assertEqual(line['rank'], 3)
            self.assertAlmostEqual(line['loss'], 2.03 - 0.399)
            st, page = d.get('/v1/runs/ddp/ranks')
            self.assertEqual(st, 200)
            self.assertEqual(len(page['ranks']), 3)
            st, page = d.get('/v1/runs/ddp/ranks?rank=x')
            self.assertEqual(st, 400)
            self.assertIn('rank', page['error'])
            st, page = d.get('/v1/runs/nope/ranks?rank=1')
            self.assertEqual(st, 404)
            # rank 0 restarting from its checkpoint is a restart; the
            # other ranks' lines of it are not
            rc, err = self.send(d, ddp_lines(steps=range(301, 311), ts0=1e6))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.segments(d), 2)
            # and the other ranks' lines of it are stored apart too
            d.wait_committed("SELECT count(*) FROM rank_lines", 3 * 399 - 49 + 30)

    @staticmethod
    def said(d):
        """How often the daemon's whole log says the run looks interleaved."""
        with open(d.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace').count('look like several processes')

    def apart(self, d, run='ddp'):
        return d.sql("SELECT count(*) FROM rank_lines x JOIN runs r ON r.id = x.run_id "
                     "WHERE r.name = ? AND x.rank = -1", (run,))[0][0]

    def test_without_a_rank_field_interleaving_is_recognised_once(self):
        d = Daemon().start()
        try:
            rc, err = self.send(d, ddp_lines(with_rank=False))
            self.assertEqual(rc, 0, err)
            self.assertIn('%d line(s) accepted' % (4 * 399), err)
            # what was acknowledged is stored: the repeats apart, as rank -1
            records, apart = self.records(d), self.apart(d)
            self.assertEqual(records + apart, 4 * 399)
            self.assertLessEqual(records, 399 + 4)
            self.assertLessEqual(self.segments(d), 4)        # not 1,198
            st, run = d.get('/v1/runs/ddp')
            self.assertTrue(run['writers']['interleaved'])
            self.assertEqual(run['writers']['step'], 2)
            self.assertEqual([(k['rank'], k['lines']) for k in run['ranks']], [(-1, apart)])
            self.assertEqual(self.said(d), 1)
            # the job restarts from its checkpoint at 300: one segment more
            before = self.segments(d)
            rc, err = self.send(d, ddp_lines(with_rank=False, steps=range(301, 321)))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.segments(d), before + 1)
            self.assertEqual(self.said(d), 1)
            # after a daemon restart the run is still known as interleaved:
            # its next steps open no segment and are not said again
            d.stop()
            d.start()
            rc, err = self.send(d, ddp_lines(with_rank=False, steps=range(321, 341)))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.segments(d), before + 1)
            self.assertEqual(self.said(d), 1)
            self.assertEqual(self.records(d) + self.apart(d), 4 * 439)
        finally:
            d.close()

    def test_a_bad_rank_is_rejected_precisely(self):
        with Daemon() as d:
            data = b'{"run":"ddp","step":1,"rank":-1,"loss":1}\n{"run":"ddp","step":2,"rank":"3","loss":1}\n'
            rc, err = self.send(d, data)
            self.assertEqual(rc, 1, err)
            self.assertIn(':1: bad_rank', err)
            self.assertIn(':2: bad_rank', err)
            self.assertIn('column 30', err)


if __name__ == '__main__':
    unittest.main()
