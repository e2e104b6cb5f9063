"""A step of the system clock while gradwatchd runs (issue 22, item 5).

Stepping the wall clock forward 2 h made retention (max_age 1 h) delete
five runs written seconds before and raised five stall alerts.  The
daemon's time is now the system's at its start advanced by the monotonic
clock: the step is logged, and no run looks older or stalled for it.  The
step is made with the test hook GRADWATCH_FAULT_CLOCK_STEP (a build with
-Dfault_hooks=true), which adds seconds to the system clock as the daemon
reads it: no root, and no other process on the machine sees it.
"""
import os
import shutil
import tempfile
import unittest

from gwtest import Daemon, need_fault_hooks, wait_for


def metric(d, name):
    for line in d.get('/metrics')[1].splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return None


class ClockStep(unittest.TestCase):
    def test_a_forward_step_deletes_nothing_and_stalls_nothing(self):
        need_fault_hooks(self)
        tmp = tempfile.mkdtemp(prefix='gw-clock-')
        self.addCleanup(shutil.rmtree, tmp, True)
        step = os.path.join(tmp, 'step')
        cfg = {'retention': {'max_age': '1h', 'check_every': 1}, 'tick_ms': 200,
               'thresholds': {'stall_min_seconds': 60}}
        with Daemon(config=cfg, env={'GRADWATCH_FAULT_CLOCK_STEP': step}) as d:
            runs = ['live-%d' % i for i in range(5)]
            d.send_unix(b''.join(b'{"run":"%s","step":%d,"loss":1,"grad_norm":1}\n'
                                 % (r.encode(), s) for r in runs for s in range(1, 31)))
            d.wait_committed("SELECT count(*) FROM records", 150)
            with open(step, 'w') as f:
                f.write('7200\n')
            wait_for(lambda: 'the system clock was set forward by 7200.0 s' in d.logtext(), 60,
                     'the step in the log')
            passes = metric(d, 'gradwatch_retention_passes_total')
            wait_for(lambda: metric(d, 'gradwatch_retention_passes_total') >= passes + 3, 60,
                     'three retention passes after the step')
            self.assertEqual(sorted(r for (r,) in d.sql("SELECT name FROM runs")), runs)
            self.assertEqual(d.sql("SELECT count(*) FROM records")[0][0], 150)
            self.assertEqual(d.sql("SELECT count(*) FROM alerts WHERE detector = 'stall'")[0][0], 0)
            self.assertNotIn('retention: run live-', d.logtext())


if __name__ == '__main__':
    unittest.main()
