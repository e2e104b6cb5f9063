"""The Python client under a real multi-process job: tests/e2e/train_ddp.py
(3 processes by torch.multiprocessing.spawn, a gloo process group on CPU,
DistributedDataParallel) through a real gradwatchd.  By default only rank 0
sends: one segment, one record per step, one checkpoint_saved and one
run_finished; ranks 1 and 2 sent nothing and say why (stats "skipped",
repr).  With all_ranks=True every rank sends with its rank: still one
segment and one record per step in the run, and the other ranks' lines
kept apart (/v1/runs/{run} "ranks").  Without a Python that imports torch
the test is skipped, except in CI."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gwtest import CONTRIB_PYTHON, SOURCE_ROOT, Daemon, free_port, torch_python

TRAIN = os.path.join(SOURCE_ROOT, 'tests', 'e2e', 'train_ddp.py')
STEPS, SAVE, PROCS = 60, 40, 3


@unittest.skipUnless(torch_python() or os.environ.get('CI'), 'no Python with torch (python3-torch)')
class DistributedJob(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwddp-')
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def train(self, d, run, *extra):
        out = os.path.join(self.tmp, run)
        os.makedirs(out)
        env = dict(os.environ, PYTHONPATH=CONTRIB_PYTHON, OMP_NUM_THREADS='1')
        for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'SLURM_PROCID', 'PMI_RANK',
                  'OMPI_COMM_WORLD_RANK'):
            env.pop(k, None)
        r = subprocess.run([torch_python(), TRAIN, '--run', run, '--address', d.sock,
                            '--http', '127.0.0.1:%d' % d.http_port, '--out', out,
                            '--port', str(free_port()), '--procs', str(PROCS),
                            '--steps', str(STEPS), '--save-at', str(SAVE)] + list(extra),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout.decode()[-3000:])
        stats = {}
        for k in range(PROCS):
            with open(os.path.join(out, 'stats-%d.json' % k)) as f:
                stats[k] = json.load(f)
        return stats

    def count(self, d, table, run):
        return d.sql("SELECT count(*) FROM %s x JOIN runs r ON r.id = x.run_id WHERE r.name = ?"
                     % table, (run,))[0][0]

    def test_only_rank_zero_sends_by_default(self):
        with Daemon() as d:
            stats = self.train(d, 'ddp-zero')
            self.assertEqual(stats[0]['stats']['sent'], STEPS + 2, stats[0])
            self.assertEqual(stats[0]['stats']['rank'], 0)
            for k in (1, 2):
                st = stats[k]['stats']
                self.assertEqual(st['rank'], k)
                self.assertEqual(st['sent'], 0, st)
                self.assertEqual(st['skipped'], STEPS + 1, st)     # the steps and the checkpoint
                self.assertEqual(st['logged'], st['skipped'])
                self.assertIn('not sending: only rank 0 sends', stats[k]['repr'])
            d.wait_committed("SELECT count(*) FROM events", 2)
            self.assertEqual(self.count(d, 'segments', 'ddp-zero'), 1)
            self.assertEqual(self.count(d, 'records', 'ddp-zero'), STEPS)
            self.assertEqual(self.count(d, 'rank_lines', 'ddp-zero'), 0)
            self.assertEqual(d.sql("SELECT name, step FROM events ORDER BY id"),
                             [('checkpoint_saved', SAVE), ('run_finished', STEPS)])
            self.assertEqual(d.get('/v1/runs/ddp-zero/alerts')[1]['alerts'], [])

    def test_all_ranks_send_with_their_rank(self):
        with Daemon() as d:
            stats = self.train(d, 'ddp-all', '--all-ranks')
            for k in range(PROCS):
                self.assertEqual(stats[k]['stats']['sent'], STEPS + (2 if k == 0 else 2), stats[k])
                self.assertEqual(stats[k]['stats']['skipped'], 0)
            d.wait_committed("SELECT count(*) FROM rank_lines", 2 * (STEPS + 2))
            # rank 0's lines come over a connection of their own
            d.wait_committed("SELECT count(*) FROM records", STEPS)
            self.assertEqual(self.count(d, 'segments', 'ddp-all'), 1)
            self.assertEqual(self.count(d, 'records', 'ddp-all'), STEPS)
            run = d.get('/v1/runs/ddp-all')[1]
            self.assertEqual([(k['rank'], k['lines'], k['last_step']) for k in run['ranks']],
                             [(1, STEPS + 2, STEPS), (2, STEPS + 2, STEPS)])
            self.assertIsNone(run['writers'])
            self.assertEqual(d.get('/v1/runs/ddp-all/alerts')[1]['alerts'], [])


if __name__ == '__main__':
    unittest.main()
