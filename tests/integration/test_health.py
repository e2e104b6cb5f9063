"""What an operator asks of a daemon before and while it runs.

--check-config checks the directories the daemon will need, not only the
file: the database's directory (state_dir) exists or is a default one the
start creates, is a directory, is writable by this user, on a writable
filesystem with space; the socket's directory exists.  Each problem is said
with its path, exit 2; the start says the same and stops.

/healthz says "degraded" (503) with its reasons when the oldest uncommitted
line has waited too long (a writer stuck behind another process's lock), a
sink has failed alerts older than a bound, or the disk under the database
is below its floor -- and "ok" on a daemon that is merely idle for longer
than all those bounds.  Waits poll; the one sleep is the idle time itself.
"""
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

from gwtest import GRADWATCHD, Daemon, wait_for
from receiver import Receiver, nan_incident


def check(args, env=None, user=None):
    cmd = [GRADWATCHD] + args + ['--check-config']
    if user is not None:
        cmd = ['setpriv', '--reuid=%d' % user, '--regid=%d' % user, '--clear-groups'] + cmd
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                       env=dict(os.environ, **(env or {})))
    return r.returncode, r.stderr.decode()


def small_disk(test, size_mb, fill_bytes):
    """A tmpfs of size_mb with fill_bytes taken (what fits); its path.
    Skips the test where no tmpfs can be mounted (needs root)."""
    tmp = tempfile.mkdtemp(prefix='gw-health-')
    test.addCleanup(shutil.rmtree, tmp, True)
    mnt = os.path.join(tmp, 'mnt')
    os.mkdir(mnt)
    if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%dm' % size_mb, 'tmpfs', mnt],
                      stderr=subprocess.DEVNULL).returncode != 0:
        test.skipTest('cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)')
    test.addCleanup(subprocess.run, ['umount', '-l', mnt])
    with open(os.path.join(mnt, 'fill'), 'wb') as f:
        try:
            f.write(b'\0' * fill_bytes)
        except OSError:
            pass   # full
    return mnt


def config(tmp, **cfg):
    path = os.path.join(tmp, 'config.json')
    with open(path, 'w') as f:
        json.dump(cfg, f)
    return ['--config', path]


class CheckConfigDirs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gw-health-')
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_a_good_state_dir_passes(self):
        rc, err = check(config(self.tmp, state_dir=self.tmp, socket=self.tmp + '/gw.sock'))
        self.assertEqual(rc, 0, err)
        self.assertIn('configuration OK', err)

    def test_state_dir_missing(self):
        missing = self.tmp + '/nope'
        rc, err = check(config(self.tmp, state_dir=missing, socket=self.tmp + '/gw.sock'))
        self.assertEqual(rc, 2, err)
        self.assertIn("state_dir: the database's directory %s does not exist: a directory given "
                      "with --state-dir, --db, --socket or the configuration must exist" % missing, err)
        self.assertFalse(os.path.exists(missing))

    def test_state_dir_is_a_file(self):
        path = self.tmp + '/file'
        open(path, 'w').close()
        rc, err = check(config(self.tmp, state_dir=path, socket=self.tmp + '/gw.sock'))
        self.assertEqual(rc, 2, err)
        self.assertIn("state_dir: the database's directory %s: not a directory" % path, err)

    def test_database_elsewhere_is_named_so(self):
        rc, err = check(config(self.tmp, state_dir=self.tmp, database='/nonexistent-gw/x.db',
                               socket=self.tmp + '/gw.sock'))
        self.assertEqual(rc, 2, err)
        self.assertIn("the database's directory /nonexistent-gw does not exist", err)
        self.assertNotIn('state_dir', err)

    def test_socket_directory_missing(self):
        rc, err = check(config(self.tmp, state_dir=self.tmp, socket=self.tmp + '/run/gw.sock'))
        self.assertEqual(rc, 2, err)
        self.assertIn("the socket's directory %s/run does not exist" % self.tmp, err)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which('setpriv'),
                         'needs root and setpriv to check as another user')
    def test_state_dir_not_writable_by_this_user(self):
        os.chmod(self.tmp, 0o755)
        cfg = config(self.tmp, state_dir=self.tmp, socket=self.tmp + '/gw.sock')
        os.chmod(cfg[1], 0o644)
        rc, err = check(cfg, user=65534)
        self.assertEqual(rc, 2, err)
        self.assertIn("state_dir: the database's directory %s: not writable by this user "
                      "(uid 65534)" % self.tmp, err)

    def test_default_dirs_are_fine_when_their_parent_is(self):
        # the XDG default does not exist yet: the start creates it
        env = {'XDG_STATE_HOME': self.tmp + '/state', 'XDG_RUNTIME_DIR': self.tmp + '/run',
               'STATE_DIRECTORY': '', 'RUNTIME_DIRECTORY': ''}
        rc, err = check([], env=env)
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.exists(self.tmp + '/state'))
        # ... unless its parent is a file
        open(self.tmp + '/state', 'w').close()
        rc, err = check([], env=env)
        self.assertEqual(rc, 2, err)
        self.assertIn("state_dir: the database's directory %s/state/gradwatch cannot be created: "
                      "%s/state is not a directory" % (self.tmp, self.tmp), err)

    def test_a_filesystem_without_space(self):
        mnt = small_disk(self, 2, 2 * 1024 * 1024)
        rc, err = check(config(self.tmp, state_dir=mnt, socket=self.tmp + '/gw.sock'))
        self.assertEqual(rc, 2, err)
        self.assertRegex(err, r"state_dir: the database's directory %s: its filesystem has \d+ KiB "
                              r'free, less than the '
                              r'1024 KiB the database needs to start' % mnt)

    def test_the_start_says_the_same(self):
        path = self.tmp + '/file'
        open(path, 'w').close()
        cmd = [GRADWATCHD, '--config', os.path.join(self.tmp, 'config.json'),
               '--socket', self.tmp + '/gw.sock', '--http', '127.0.0.1:0']
        with open(os.path.join(self.tmp, 'config.json'), 'w') as f:
            json.dump({'state_dir': path}, f)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("state_dir: the database's directory %s: not a directory" % path,
                      r.stdout.decode())


HEALTH = {'health': {'commit_stall_s': 1, 'undelivered_s': 1}}


def send(d, lines):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(d.sock)
        s.sendall(''.join(l + '\n' for l in lines).encode())


def health(d):
    return d.get('/healthz')


def checks(d):
    status, body = health(d)
    return status, [r['check'] for r in body['reasons']], body


class Healthz(unittest.TestCase):
    def test_an_idle_daemon_is_ok_past_every_bound(self):
        with Daemon(config=HEALTH) as d:
            send(d, ['{"run":"idle","step":%d,"loss":1.5,"grad_norm":1}' % i for i in range(1, 11)])
            wait_for(lambda: d.sql('SELECT count(*) FROM records')[0][0] == 10, 60, 'the commit')
            time.sleep(2.5)   # idle for longer than commit_stall_s and undelivered_s
            status, body = health(d)
            self.assertEqual((status, body['status'], body['reasons']), (200, 'ok', []), body)

    def test_a_writer_stuck_behind_a_lock(self):
        with Daemon(config=HEALTH) as d:
            send(d, ['{"run":"w","step":1,"loss":1.5,"grad_norm":1}'])
            wait_for(lambda: d.sql('SELECT count(*) FROM records')[0][0] == 1, 60, 'the commit')
            con = sqlite3.connect(d.db, isolation_level=None, timeout=30)
            con.execute('BEGIN IMMEDIATE')   # another process holds the write lock
            try:
                send(d, ['{"run":"w","step":2,"loss":1.5,"grad_norm":1}'])
                status, got, body = wait_for(
                    lambda: (lambda c: 'commit_stalled' in c[1] and c)(checks(d)), 60,
                    'degraded: commit_stalled', interval=0.1)
                self.assertEqual((status, body['status']), (503, 'degraded'))
                r = [r for r in body['reasons'] if r['check'] == 'commit_stalled'][0]
                self.assertRegex(r['message'], r'^nothing committed for \d+ s with \d+ bytes '
                                               r'waiting \(health.commit_stall_s 1\)$')
                self.assertGreater(r['pending_bytes'], 0)
            finally:
                con.rollback()
                con.close()
            wait_for(lambda: health(d)[0] == 200, 60, 'ok again once the lock is gone',
                     interval=0.1)
            self.assertEqual(d.sql('SELECT count(*) FROM records')[0][0], 2)

    def test_alerts_a_sink_cannot_take(self):
        rcv = Receiver()
        rcv.mode = 'fail'
        try:
            cfg = dict(HEALTH, sinks=[{'type': 'webhook', 'name': 'pager', 'url': rcv.url + '/hook',
                                       'retry_initial': '200ms', 'retry_max': '1s'}])
            with Daemon(config=cfg) as d:
                send(d, nan_incident('sick'))
                status, got, body = wait_for(
                    lambda: (lambda c: 'undelivered_alerts' in c[1] and c)(checks(d)), 60,
                    'degraded: undelivered_alerts', interval=0.1)
                self.assertEqual(status, 503)
                r = [r for r in body['reasons'] if r['check'] == 'undelivered_alerts'][0]
                self.assertEqual((r['sink'], r['undelivered']), ('pager', 1))
                self.assertRegex(r['message'], r'^sink pager: 1 alert event\(s\) not delivered, '
                                               r'the oldest raised \d+ s ago \(health.undelivered_s '
                                               r'1\); last error: .*500')
                rcv.mode = 'ok'   # the receiver is back: delivered, ok again
                wait_for(lambda: health(d)[0] == 200, 60, 'ok once delivered', interval=0.1)
        finally:
            rcv.close()

    def test_disk_below_its_floor(self):
        # below both health.min_free_mb (32) and 5 % of the filesystem: a
        # 40 MiB tmpfs with about 1.5 MiB left (enough to start on)
        mnt = small_disk(self, 40, 38 * 1024 * 1024 + 512 * 1024)
        # --check-config warns (the daemon can start, /healthz will say so)
        rc, err = check(['--db', mnt + '/gradwatch.db', '--socket', mnt + '/gw.sock'])
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"gradwatchd: warning: the database's directory %s: \d MB free on its "
                              r"filesystem of 40 MB, below health.min_free_mb 32 and 5%% of its "
                              r"size: /healthz says degraded \(disk_low\)" % mnt)
        d = Daemon(workdir=mnt, config={})
        self.addCleanup(d.close)
        d.start(wait=False)   # never "ready": /healthz answers 503 from the start

        def answered():
            try:
                return checks(d)
            except OSError:
                return None
        status, got, body = wait_for(answered, 60, '/healthz to answer', interval=0.05)
        self.assertEqual((status, got), (503, ['disk_low']), body)
        r = body['reasons'][0]
        self.assertEqual((r['path'], r['size_mb']), (mnt, 40))
        self.assertRegex(r['message'], r'^%s: \d MB free on its filesystem of 40 MB, below '
                                       r'health.min_free_mb 32 and 5%% of its size$' % mnt)
        d.stop()
        # 0: not checked
        d = Daemon(workdir=mnt, config={'health': {'min_free_mb': 0}})
        self.addCleanup(d.close)
        d.start()
        self.assertEqual(health(d)[0], 200)
        d.stop()

    def test_plenty_of_space_is_ok(self):
        with Daemon(config={'health': {'min_free_mb': 1}}) as d:
            self.assertEqual(health(d)[1]['reasons'], [])

if __name__ == '__main__':
    unittest.main()
