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
import shutil
import signal
import sqlite3
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
            wait_for(lambda: 'keeping the old configuration' in d.logtext(), 60,
                     'the refused reload in the log')
            self.assertIn('%s is not a regular file' % path, d.logtext())
            self.assertEqual(d.get('/healthz')[0], 200)
            self.assertEqual(d.post('/v1/ingest?run=r', b'{"step":1,"loss":1}\n')[0], 200)
            # a regular file again reloads as before
            os.unlink(path)
            with open(path, 'w') as f:
                json.dump({'thresholds': {'gap_min_seconds': 60}}, f)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'SIGHUP: reloaded' in d.logtext(), 60, 'the reload in the log')


NOBODY = 65534


@unittest.skipUnless(os.geteuid() == 0 and shutil.which('setpriv'),
                     'needs root and setpriv to run the daemon as another user')
class ReadOnlyDatabase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gw-ro-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chown(self.tmp, NOBODY, NOBODY)
        self.db = os.path.join(self.tmp, 'gradwatch.db')
        # a database the daemon made (migrated, as after a first run)
        p = subprocess.Popen(self.cmd(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for line in p.stderr:
            if b' ready' in line:
                break
        p.send_signal(signal.SIGTERM)
        p.stderr.read()
        self.assertEqual(p.wait(30), 0)
        self.assertEqual(sqlite3.connect(self.db).execute('PRAGMA user_version').fetchone()[0] > 0,
                         True)

    def cmd(self, *extra):
        return ['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY, '--clear-groups',
                GRADWATCHD, '--db', self.db, '--socket', 'off', '--tcp', 'off', '--udp', 'off',
                '--http', '127.0.0.1:0'] + list(extra)

    def start(self, *extra):
        cmd = self.cmd(*extra)
        # before the fix the daemon said "ready" and ran: the timeout ends it
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=15)
        except subprocess.TimeoutExpired as e:
            self.fail('gradwatchd started on a database it cannot write: %r' % e.stderr)
        return r.returncode, r.stderr.decode()

    def test_a_database_of_mode_444_is_refused_with_the_reason(self):
        os.chmod(self.db, 0o444)
        for extra in ([], ['--check-config']):
            rc, err = self.start(*extra)
            self.assertNotEqual(rc, 0, err)
            self.assertIn('the database file %s (mode 0444, owner uid %d) is not writable by this '
                          'user (uid %d)' % (self.db, NOBODY, NOBODY), err)
            self.assertNotIn('ready', err)

    def test_a_wal_file_of_another_user_is_refused(self):
        with open(self.db + '-wal', 'wb'):
            pass
        os.chown(self.db + '-wal', 0, 0)       # root's, left by a run as root
        os.chmod(self.db + '-wal', 0o644)
        rc, err = self.start()
        self.assertNotEqual(rc, 0, err)
        self.assertIn('the database file %s-wal (mode 0644, owner uid 0) is not writable'
                      % self.db, err)


if __name__ == '__main__':
    unittest.main()
