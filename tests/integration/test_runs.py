"""Memory stays bounded however many runs a daemon sees: at most
limits.max_runs runs keep their detector state in memory, idle runs give
theirs up, and a run's state is rebuilt from the database on its next line,
so a resume after a long pause (or after a daemon restart) is still judged
against the regime before it: the same alerts, with the same ids, as when
nothing was evicted."""
import json
import os
import re
import shutil
import tempfile
import time
import unittest

from gwtest import CORPUS, Daemon, wait_for


def rss_mb(pid):
    with open('/proc/%d/status' % pid) as f:
        return int(re.search(r'VmRSS:\s+(\d+) kB', f.read()).group(1)) / 1024


def metric(text, name):
    m = re.search(r'^%s (\S+)$' % name, text, re.M)
    return float(m.group(1)) if m else None


def alerts(d):
    # (line numbers are per request body, so they differ when a trace is
    # sent in two requests)
    return sorted(tuple(r) for r in d.sql(
        "SELECT id, detector, step, severity, seg, summary FROM alerts"))


class Runs(unittest.TestCase):
    def genesis(self):
        with open(os.path.join(CORPUS, 'genesis.jsonl'), 'rb') as f:
            lines = f.readlines()
        # the restarted process's first line: the step goes back
        steps = [json.loads(l)['step'] for l in lines]
        cut = next(i for i in range(1, len(steps)) if steps[i] <= steps[i - 1])
        return b''.join(lines[:cut]), b''.join(lines[cut:])

    def test_state_rebuilt_after_eviction_and_after_a_restart(self):
        before, after = self.genesis()
        with Daemon() as d:
            self.assertEqual(d.post('/v1/ingest', before + after)[0], 200)
            reference = alerts(d)
        self.assertTrue(any(a[1] == 'optimizer_reset' for a in reference), reference)
        # the same trace, with the run's state evicted while the job is down
        cfg = {'tick_ms': 50, 'limits': {'run_evict_idle_s': 1}}
        with Daemon(config=cfg) as d:
            self.assertEqual(d.post('/v1/ingest', before)[0], 200)
            wait_for(lambda: metric(d.get('/metrics')[1], 'gradwatch_runs_dormant') == 1,
                     timeout=60, what='the idle run to become dormant')
            self.assertEqual(metric(d.get('/metrics')[1], 'gradwatch_runs'), 0)
            self.assertEqual(d.post('/v1/ingest', after)[0], 200)
            self.assertEqual(metric(d.get('/metrics')[1], 'gradwatch_runs_rebuilt_total'), 1)
            self.assertEqual(alerts(d), reference)
        # and with the daemon restarted while the job is down
        tmp = tempfile.mkdtemp(prefix='gw-runs-')
        self.addCleanup(shutil.rmtree, tmp, True)
        with Daemon(workdir=tmp) as d:
            self.assertEqual(d.post('/v1/ingest', before)[0], 200)
        with Daemon(workdir=tmp) as d:
            self.assertEqual(d.post('/v1/ingest', after)[0], 200)
            self.assertEqual(alerts(d), reference)

    def test_many_runs_under_the_budget(self):
        n, budget = 100000, 1000
        tmp = tempfile.mkdtemp(prefix='gw-runs-')
        self.addCleanup(shutil.rmtree, tmp, True)
        cfg = {'limits': {'max_runs': budget}}
        with Daemon(workdir=tmp, config=cfg) as d:
            for k in range(0, n, 20000):
                body = ''.join('{"run":"r-%06d","step":1,"loss":1.5,"grad_norm":0.5}\n' % i
                               for i in range(k, k + 20000)).encode()
                status, res = d.post('/v1/ingest', body)
                # a new run is never refused: old ones make room
                self.assertEqual((status, res['accepted']), (200, 20000), res)
            self.assertEqual(d.sql('SELECT count(*) FROM runs')[0][0], n)
            status, text = d.get('/metrics')
            self.assertLessEqual(metric(text, 'gradwatch_runs'), budget)
            self.assertEqual(metric(text, 'gradwatch_runs') + metric(text, 'gradwatch_runs_dormant'), n)
            self.assertLessEqual(text.count('gradwatch_run_last_step{'), budget)
            rss = rss_mb(d.proc.pid)
            # without the budget: ~63 KB a run, 6 GB for 100,000 runs
            self.assertLess(rss, 1200, 'RSS %.0f MB for %d runs' % (rss, n))
            # an old run sends again: its state comes back, the line is taken
            self.assertEqual(d.post('/v1/ingest', b'{"run":"r-000001","step":2,"loss":1.4}\n')[0], 200)
        # a restart does not load 100,000 runs' state
        with Daemon(workdir=tmp, config=cfg) as d:
            status, text = d.get('/metrics')
            self.assertEqual(metric(text, 'gradwatch_runs'), 0)
            self.assertEqual(metric(text, 'gradwatch_runs_dormant'), n)
            self.assertLess(rss_mb(d.proc.pid), 600)


if __name__ == '__main__':
    unittest.main()
