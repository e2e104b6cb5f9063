"""Odd files where the daemon expects ordinary ones (issue 22, items 6 and 7).

- A named pipe (or any file that is not a regular file) as the
  configuration: the start, --check-config and a SIGHUP reload refuse it at
  once, naming the file, instead of waiting for a writer with the loop
  blocked; the running daemon keeps its configuration and keeps answering.
- A database file the daemon cannot write (mode 444, or its directory
  read-only with the WAL not there yet): the start is refused with the
  reason, instead of saying "ready" and answering 503 to every ingest.
"""
import json
import os
import signal
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCHD, Daemon, wait_for


def run(args, timeout=30):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=timeout)


class FifoConfig(unittest.TestCase):
    def test_start_and_check_config_refuse_a_named_pipe(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, 'gradwatchd.json')
            os.mkfifo(fifo)
            for extra in (['--check-config'], ['--socket', 'off', '--tcp', 'off', '--udp', 'off',
                                                '--http', 'off', '--state-dir', tmp]):
                # before the fix this waited for a writer for ever (timeout)
                r = run([GRADWATCHD, '--config', fifo] + extra)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn('%s is not a regular file' % fifo, r.stderr.decode())
            for dev in ('/dev/zero', '/dev/null'):
                r = run([GRADWATCHD, '--config', dev, '--check-config'])
                self.assertNotEqual(r.returncode, 0, dev)
                self.assertIn('%s is not a regular file' % dev, r.stderr.decode())

    def test_sighup_with_a_named_pipe_keeps_the_old_configuration(self):
        with Daemon(config={'thresholds': {'gap_min_seconds': 120}}) as d:
            path = os.path.join(d.dir, 'config.json')
            os.unlink(path)
            os.mkfifo(path)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'keeping the old configuration' in d.logtext(), 20,
                     'the refused reload in the log')
            self.assertIn('%s is not a regular file' % path, d.logtext())
            self.assertEqual(d.get('/healthz')[0], 200)
            self.assertEqual(d.post('/v1/ingest?run=r', b'{"step":1,"loss":1}\n')[0], 200)
            # a regular file again reloads as before
            os.unlink(path)
            with open(path, 'w') as f:
                json.dump({'thresholds': {'gap_min_seconds': 60}}, f)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'SIGHUP: reloaded' in d.logtext(), 20, 'the reload in the log')


if __name__ == '__main__':
    unittest.main()
