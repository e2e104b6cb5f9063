"""The stall detector: a live run that goes silent (wall clock, the daemon's
tick) and a throughput collapse (also in replay)."""
import json
import os
import socket
import tempfile
import time
import unittest

from gwtest import Daemon, replay, wait_for


def line(run, step, thr=1000.0):
    return (json.dumps({'run': run, 'step': step, 'loss': 2.0 - 1e-4 * step,
                        'grad_norm': 0.5 + 0.01 * (step % 3), 'throughput': thr}) + '\n').encode()


class Silence(unittest.TestCase):
    def test_silent_run_alerts_and_resolves(self):
        cfg = {'tick_ms': 100,
               'thresholds': {'stall_min_seconds': 1.0, 'stall_factor': 5, 'stall_min_records': 20}}
        with Daemon(config=cfg) as d:
            s = socket.socket(socket.AF_UNIX)
            s.connect(d.sock)
            for step in range(1, 31):
                s.sendall(line('quiet', step))
                time.sleep(0.02)    # the run's cadence: the thing under test
            # nothing for a while: much longer than 5 x 20 ms and than 1 s
            rows = wait_for(lambda: d.sql("SELECT state, severity, step, summary FROM alerts "
                                          "WHERE detector = 'stall'"), 10, 'the stall alert', interval=0.2)
            self.assertEqual(len(rows), 1, d.logtext())
            state, sev, step, summary = rows[0]
            self.assertEqual((state, sev, step), ('open', 'warning', 30))
            self.assertIn('logged nothing', summary)
            # the run speaks again: resolved
            s.sendall(line('quiet', 31))
            s.close()
            wait_for(lambda: d.sql("SELECT state FROM alerts WHERE detector = 'stall'")[0][0] == 'resolved',
                     5, 'the stall alert to resolve', interval=0.1)
            self.assertEqual(d.sql("SELECT state FROM alerts WHERE detector = 'stall'")[0][0], 'resolved')

    def test_a_steady_run_does_not_alert(self):
        cfg = {'tick_ms': 100,
               'thresholds': {'stall_min_seconds': 1.0, 'stall_factor': 5, 'stall_min_records': 20}}
        with Daemon(config=cfg) as d:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(d.sock)
                for step in range(1, 80):
                    s.sendall(line('steady', step))
                    time.sleep(0.02)    # the run's cadence: the thing under test
            self.assertEqual(d.sql("SELECT count(*) FROM alerts")[0][0], 0)


class Throughput(unittest.TestCase):
    def test_collapse_in_replay(self):
        with tempfile.NamedTemporaryFile('wb', suffix='.jsonl') as f:
            for step in range(1, 301):
                f.write(line('slow', step, 1000.0 + (step % 7)))
            for step in range(301, 341):
                f.write(line('slow', step, 150.0 + (step % 5)))
            f.flush()
            r = replay('replay', '--format', 'jsonl', f.name)
            alerts = [json.loads(l) for l in r.stdout.splitlines()]
            stall = [a for a in alerts if a['detector'] == 'stall']
            self.assertEqual(len(stall), 1, alerts)
            self.assertEqual(stall[0]['evidence']['rule'], 'throughput')
            # the median of the last 16 crosses 30 % at the 9th slow step
            self.assertEqual(stall[0]['step'], 309)
            self.assertIn('throughput collapsed', stall[0]['summary'])

    def test_a_dip_does_not_alert(self):
        with tempfile.NamedTemporaryFile('wb', suffix='.jsonl') as f:
            for step in range(1, 401):
                thr = 150.0 if step % 50 < 6 else 1000.0   # short dips (eval, checkpoint)
                f.write(line('dips', step, thr))
            f.flush()
            r = replay('replay', '--format', 'jsonl', f.name)
            self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == '__main__':
    unittest.main()
