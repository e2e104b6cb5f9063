"""What an operator asks of a daemon before and while it runs.

--check-config checks the directories the daemon will need, not only the
file: the database's directory (state_dir) exists or is a default one the
start creates, is a directory, is writable by this user, on a writable
filesystem with space; the socket's directory exists.  Each problem is said
with its path, exit 2; the start says the same and stops.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCHD


def check(args, env=None, user=None):
    cmd = [GRADWATCHD] + args + ['--check-config']
    if user is not None:
        cmd = ['setpriv', '--reuid=%d' % user, '--regid=%d' % user, '--clear-groups'] + cmd
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                       env=dict(os.environ, **(env or {})))
    return r.returncode, r.stderr.decode()


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
        mnt = os.path.join(self.tmp, 'mnt')
        os.mkdir(mnt)
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt],
                          stderr=subprocess.DEVNULL).returncode != 0:
            self.skipTest('cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)')
        self.addCleanup(subprocess.run, ['umount', '-l', mnt])
        with open(os.path.join(mnt, 'fill'), 'wb') as f:
            try:
                f.write(b'\0' * (2 * 1024 * 1024))
            except OSError:
                pass
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


if __name__ == '__main__':
    unittest.main()
