"""A finished log sent after the fact is history, not a live run (issue 19,
item 5): `gradwatch convert LOG | gradwatch send` of a real finished log
gets no `stall` alert once the stall window has passed.

- A log whose lines carry no time (llm.c's stdout): convert ends each run
  it wrote with run_finished (reason end_of_log), so the daemon does not
  watch its silence.
- A log whose lines carry their times (a logger's timestamp before each
  nanoGPT line, Megatron's own stamp), sent without that end: the times
  are kept as the records' ts, and lines whose ts lie far behind their
  arrival are a backlog, not a job that can hang (det_stall.c).

Timing: the daemon ticks every 50 ms and a `stall-*` run stalls after
max(1 s, 5 x its interval).  A control run, fed live after the logs and
then silent, must raise its stall alert: once it has, the logs were silent
longer than the window, and their having none means something.  No fixed
sleeps, only generous deadlines.
"""
import json
import os
import subprocess
import tempfile
import time
import unittest

from gwtest import GRADWATCH, Daemon, wait_for

RAW = os.path.join(os.environ.get('GW_SHARED', os.path.join(os.path.dirname(__file__), '..', '..',
                                                            '..', 'shared')), 'realworld')
STALL = {'stall_min_seconds': 1.0, 'stall_factor': 5, 'stall_min_records': 20}
CONFIG = {'tick_ms': 50, 'runs': [{'match': 'stall-*', 'thresholds': STALL}]}


def stalls(d, run):
    return d.sql("SELECT a.step, a.state, a.summary FROM alerts a JOIN runs u ON u.id = a.run_id "
                 "WHERE u.name = ? AND a.detector = 'stall'", (run,))


def records(d, run):
    return d.sql("SELECT count(*) FROM records r JOIN runs u ON u.id = r.run_id WHERE u.name = ?",
                 (run,))[0][0]


def convert(path, run, keep_end=True):
    r = subprocess.run([GRADWATCH, 'convert', '--run', run, path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines(keepends=True)
    assert '"reason":"end_of_log"' in lines[-1], lines[-1]
    return ''.join(lines if keep_end else lines[:-1]).encode()


def send(d, data):
    r = subprocess.run([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % d.http_port],
                       input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr


def control(d, run='stall-control'):
    """A live run that logs 30 steps and goes silent: its stall alert."""
    lines = []
    for step in range(1, 31):
        lines.append(json.dumps({'run': run, 'step': step, 'ts': time.time(), 'loss': 2.0,
                                 'grad_norm': 0.5}) + '\n')
        send(d, lines[-1].encode())
    wait_for(lambda: stalls(d, run), 60, 'the control run to stall', interval=0.1)


class History(unittest.TestCase):
    def test_a_finished_log_without_times(self):
        # llm.c's stdout of a job the time limit ended at step 750: no
        # line carries a time
        data = convert(os.path.join(RAW, 'raw', 'llmc-gpt2-124m-hector-killed.log'), 'stall-llmc')
        with Daemon(config=CONFIG) as d:
            send(d, data)
            self.assertEqual(records(d, 'stall-llmc'), 750)
            control(d)
            self.assertEqual(stalls(d, 'stall-llmc'), [], d.logtext())

    def test_a_finished_log_with_times_and_no_end(self):
        # the lines' own times are the records' ts: far behind their
        # arrival, a backlog (here without convert's end, to show the
        # times alone tell)
        with tempfile.TemporaryDirectory() as tmp:
            # nanoGPT's stdout (a real NaN run) with a logger's timestamp
            # before each line, as a job's log wrapper writes it
            with open(os.path.join(RAW, 'raw-more', 'nanogpt-shakespeare-char-nan.train.log')) as f:
                src = f.read().splitlines()
            t0 = 1679477439   # 2023-03-22 09:30:39
            path = os.path.join(tmp, 'shakespeare.log')
            with open(path, 'w') as f:
                for i, text in enumerate(src):
                    f.write('%s %s\n' % (time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(t0 + 2 * i)),
                                         text))
            nano = convert(path, 'stall-nanogpt', keep_end=False)
            first = json.loads(nano.splitlines()[0])
            self.assertEqual(first['ts'], t0 + 2 * next(i for i, t in enumerate(src)
                                                         if t.startswith('iter ')))
            meg = convert(os.path.join(RAW, 'raw-more', 'megatron-core-llama3-1b-ranked.out'),
                          'stall-megatron', keep_end=False)
            with Daemon(config=CONFIG) as d:
                send(d, nano)
                send(d, meg)
                self.assertEqual(records(d, 'stall-nanogpt'), 91)
                control(d)
                self.assertEqual(stalls(d, 'stall-nanogpt'), [], d.logtext())
                self.assertEqual(stalls(d, 'stall-megatron'), [], d.logtext())
                self.assertEqual(stalls(d, 'stall-megatron#2'), [], d.logtext())


if __name__ == '__main__':
    unittest.main()
