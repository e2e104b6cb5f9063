"""contrib/systemd and `meson install`: both services and both sockets pass
`systemd-analyze verify` (with ExecStart pointed at the built binary and the
man pages found on a MANPATH of docs/man: nothing else of the real units is
changed), `systemd-analyze security --offline=true` rates each service 2.0
or lower ("OK"), the sockets are 0660 for the group gradwatch, which the
sysusers.d file creates (run through the real systemd-sysusers into a
scratch root), and `meson install` puts the binaries, units, sysusers.d
file, man pages and the example configuration in place (the configuration
passes --check-config).  SocketActivation runs the real gradwatchd with a
listening socket passed the way systemd passes it (fd 3, LISTEN_FDS=1,
LISTEN_PID): lines queued before it started, sent while it ran and sent
while it was restarting all arrive; it binds nothing itself and leaves the
socket file alone.  The watchdog petting itself is tested in
test_ingest.py (Lifecycle)."""
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCHD, SOURCE_ROOT, Daemon, lines, wait_for

ANALYZE = shutil.which('systemd-analyze') or '/usr/bin/systemd-analyze'
SYSUSERS = shutil.which('systemd-sysusers') or '/usr/bin/systemd-sysusers'
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(GRADWATCHD)))
UNITS = os.path.join(BUILD, 'contrib', 'systemd')
SRC_UNITS = os.path.join(SOURCE_ROOT, 'contrib', 'systemd')
CONFIG = os.path.join(SRC_UNITS, 'gradwatchd.json')
MAX_EXPOSURE = 2.0


def test_copy(src, dst):
    """The built unit with ExecStart at the built binary and the example config."""
    with open(src) as f:
        text = f.read()
    text = re.sub(r'^ExecStart=\S+ --config \S+', 'ExecStart=%s --config %s' % (os.path.abspath(GRADWATCHD), CONFIG),
                  text, count=1, flags=re.M)
    with open(dst, 'w') as f:
        f.write(text)


@unittest.skipUnless(os.path.exists(ANALYZE) or os.environ.get('CI'), 'systemd-analyze not installed')
class Units(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='gwsd-')
        cls.units = {}
        for built, name in (('gradwatchd.service', 'gradwatchd.service'),
                            ('gradwatchd@.service', 'gradwatchd@ci-job.service')):
            dst = os.path.join(cls.tmp, name)
            test_copy(os.path.join(UNITS, built), dst)
            cls.units[name] = dst
        cls.sockets = {}
        for src, name in (('gradwatchd.socket', 'gradwatchd.socket'),
                          ('gradwatchd@.socket', 'gradwatchd@ci-job.socket')):
            dst = os.path.join(cls.tmp, name)
            shutil.copy(os.path.join(SRC_UNITS, src), dst)
            cls.sockets[name] = dst
        man = os.path.join(cls.tmp, 'man')
        for sec, page in (('8', 'gradwatchd.8'), ('1', 'gradwatch.1')):
            os.makedirs(os.path.join(man, 'man' + sec))
            shutil.copy(os.path.join(SOURCE_ROOT, 'docs', 'man', page), os.path.join(man, 'man' + sec))
        cls.env = dict(os.environ, MANPATH=man, SYSTEMD_LOG_LEVEL='notice')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_verify(self):
        for name, path in list(self.units.items()) + list(self.sockets.items()):
            r = subprocess.run([ANALYZE, 'verify', path], env=self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=120)
            out = r.stdout.decode()
            # warnings about other units of this machine are not ours
            ours = [l for l in out.splitlines() if 'gradwatch' in l]
            self.assertEqual((r.returncode, ours), (0, []), out)

    def test_security_exposure_is_ok(self):
        scores = {}
        for name, path in self.units.items():
            r = subprocess.run([ANALYZE, 'security', '--offline=true', '--no-pager', path], env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            out = r.stdout.decode()
            m = re.search(r'Overall exposure level for \S+: (\d+\.\d+) (\w+)', out)
            self.assertTrue(m, out)
            scores[name] = (float(m.group(1)), m.group(2))
        print('\nsystemd-analyze security --offline=true: ' +
              ', '.join('%s %.1f %s' % (n, s, w) for n, (s, w) in scores.items()))
        for name, (score, word) in scores.items():
            self.assertLessEqual(score, MAX_EXPOSURE, name)
            self.assertEqual(word, 'OK', name)

    def test_units_speak_the_protocol_the_daemon_speaks(self):
        for path in self.units.values():
            with open(path) as f:
                text = f.read()
            for want in ('Type=notify', 'WatchdogSec=', 'StateDirectory=gradwatch', 'DynamicUser=yes',
                         'ProtectSystem=strict'):
                self.assertIn(want, text, path)
            # the socket is the socket unit's: a RuntimeDirectory would be
            # chowned to the dynamic user and removed, socket and all, on stop
            self.assertNotIn('RuntimeDirectory=', text, path)
        for name, sock in (('gradwatchd.service', 'gradwatchd.socket'),
                           ('gradwatchd@ci-job.service', 'gradwatchd@%i.socket')):
            with open(self.units[name]) as f:
                text = f.read()
            self.assertIn('Requires=%s' % sock, text)
            self.assertIn('Also=%s' % sock, text)

    def test_sockets_are_for_the_gradwatch_group(self):
        paths = {'gradwatchd.socket': '/run/gradwatch/gradwatch.sock',
                 'gradwatchd@ci-job.socket': '/run/gradwatch/%i/gradwatch.sock'}
        for name, path in self.sockets.items():
            with open(path) as f:
                text = f.read()
            for want in ('ListenStream=' + paths[name], 'SocketMode=0660', 'SocketGroup=gradwatch',
                         'WantedBy=sockets.target'):
                self.assertIn(want, text, name)
        # the Python client looks for the host-wide one by default
        with open(os.path.join(SOURCE_ROOT, 'contrib', 'python', 'gradwatch', 'client.py')) as f:
            self.assertIn("'/run/gradwatch/gradwatch.sock'", f.read())


@unittest.skipUnless(os.path.exists(SYSUSERS) or os.environ.get('CI'), 'systemd-sysusers not installed')
class Sysusers(unittest.TestCase):
    def test_creates_the_socket_group(self):
        root = tempfile.mkdtemp(prefix='gwsysusers-')
        try:
            os.makedirs(os.path.join(root, 'etc'))
            r = subprocess.run([SYSUSERS, '--root', root, os.path.join(SRC_UNITS, 'gradwatch.sysusers')],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            with open(os.path.join(root, 'etc', 'group')) as f:
                groups = [line.split(':')[0] for line in f]
            self.assertEqual(groups, ['gradwatch'])
        finally:
            shutil.rmtree(root, ignore_errors=True)


class Install(unittest.TestCase):
    def test_meson_install(self):
        dest = tempfile.mkdtemp(prefix='gwinst-')
        try:
            r = subprocess.run(['meson', 'install', '-C', BUILD, '--no-rebuild', '--destdir', dest,
                                '--quiet'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            found = set()
            for root, _, files in os.walk(dest):
                for f in files:
                    found.add(os.path.relpath(os.path.join(root, f), dest))
            names = {os.path.basename(f): f for f in found}
            for want in ('gradwatchd', 'gradwatch', 'gradwatchd.service', 'gradwatchd@.service',
                         'gradwatchd.socket', 'gradwatchd@.socket', 'gradwatch.conf',
                         'gradwatchd.8', 'gradwatch.1', 'gradwatchd.json'):
                self.assertIn(want, names, sorted(found))
            self.assertTrue(names['gradwatchd@.socket'].endswith('lib/systemd/system/gradwatchd@.socket'))
            self.assertTrue(names['gradwatch.conf'].endswith('lib/sysusers.d/gradwatch.conf'))
            self.assertTrue(names['gradwatchd'].endswith('sbin/gradwatchd'))
            self.assertTrue(names['gradwatchd.8'].endswith('man8/gradwatchd.8'))
            self.assertTrue(names['gradwatch.1'].endswith('man1/gradwatch.1'))
            self.assertTrue(names['gradwatchd.service'].endswith('lib/systemd/system/gradwatchd.service'))
            self.assertTrue(names['gradwatchd.json'].endswith('gradwatch/gradwatchd.json'))
            conf = next(os.path.join(root, f) for root, _, fs in os.walk(dest) for f in fs if f == 'gradwatchd.json')
            binary = next(os.path.join(root, f) for root, _, fs in os.walk(dest) for f in fs if f == 'gradwatchd')
            r = subprocess.run([binary, '--config', conf, '--check-config'], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            self.assertIn('configuration OK', r.stdout.decode())
        finally:
            shutil.rmtree(dest, ignore_errors=True)


# ---- socket activation ---------------------------------------------------------------------


class ActivatedDaemon(Daemon):
    """gradwatchd started the way systemd starts a socket-activated service:
    the listening socket as fd 3, LISTEN_FDS=1, LISTEN_PID its own pid (set
    in the child between fork and exec, as systemd does)."""

    def __init__(self, listener, workdir, listen_pid=None):
        super().__init__(workdir=workdir)
        self.listener = listener
        self.listen_pid = listen_pid

    def start(self, wait=True):
        lfd, listen_pid = self.listener.fileno(), self.listen_pid

        def as_systemd():
            os.dup2(lfd, 3)
            os.environ['LISTEN_FDS'] = '1'
            os.environ['LISTEN_PID'] = str(listen_pid or os.getpid())
            os.environ['LISTEN_FDNAMES'] = 'gradwatchd.socket'
        self.log = open(self.log_path, 'ab')
        # env=None: exec takes the environment as_systemd() left
        self.proc = subprocess.Popen(self.command(), cwd=self.dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     pass_fds=(3,), preexec_fn=as_systemd)
        if wait:
            self.wait_ready()
        return self


def rows(d, run):
    return d.sql("SELECT r.step FROM records r JOIN runs u ON u.id=r.run_id WHERE u.name=? ORDER BY r.step",
                 (run,))


def wait_steps(d, run, n):
    return wait_for(lambda: len(rows(d, run)) >= n and [x[0] for x in rows(d, run)], 60,
                    '%d rows of %s' % (n, run))


class SocketActivation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwsock-')
        rundir = os.path.join(self.tmp, 'run')
        os.mkdir(rundir)
        self.path = os.path.join(rundir, 'gradwatch.sock')
        # what gradwatchd.socket makes: a listening socket, 0660
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        os.chmod(self.path, 0o660)
        self.listener.listen(128)
        self.daemons = []

    def tearDown(self):
        for d in self.daemons:
            d.close()
        self.listener.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def daemon(self, **kw):
        d = ActivatedDaemon(self.listener, os.path.join(self.tmp, 'state'), **kw)
        os.makedirs(d.dir, exist_ok=True)
        self.daemons.append(d)
        return d

    def send(self, data):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(self.path)
            s.sendall(data)

    def test_the_daemon_serves_the_socket_it_is_given(self):
        # a job that connects before the daemon runs waits in the listen queue
        self.send(lines('early', range(1, 51)))
        d = self.daemon().start()
        self.assertEqual(wait_steps(d, 'early', 50), list(range(1, 51)))
        self.send(lines('running', range(1, 101)))
        self.assertEqual(wait_steps(d, 'running', 100), list(range(1, 101)))
        # it bound nothing itself and left systemd's socket as it was
        self.assertFalse(os.path.exists(d.sock), 'gradwatchd bound --socket although it was given one')
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o660)
        self.assertEqual(d.stop(signal.SIGTERM), 0)
        self.assertTrue(os.path.exists(self.path), 'gradwatchd removed the socket systemd owns')
        # a restart: lines sent meanwhile wait for the next daemon
        self.send(lines('restart', range(1, 31)))
        d2 = self.daemon().start()
        self.send(lines('restart', range(31, 61)))
        self.assertEqual(wait_steps(d2, 'restart', 60), list(range(1, 61)))

    def test_a_socket_meant_for_another_process_is_not_taken(self):
        # LISTEN_PID names someone else (the variables leaked to a child):
        # not ours, so gradwatchd binds its own --socket as usual
        d = self.daemon(listen_pid=1).start()
        self.assertTrue(os.path.exists(d.sock))
        d.send_unix(lines('own', range(1, 11)))
        self.assertEqual(wait_steps(d, 'own', 10), list(range(1, 11)))



class JournalStream(unittest.TestCase):
    """JOURNAL_STREAM is inherited by everything a service starts (a shell
    script, a terminal of a user service); systemd says to compare it with
    standard error's device and inode.  gradwatchd took any JOURNAL_STREAM
    for the journal, so `gradwatchd 2>>gw.log` started from such a shell
    wrote "<6>..." lines without timestamps."""

    def start_with(self, value_of):
        tmp = tempfile.mkdtemp(prefix='gwjournal-')
        self.addCleanup(shutil.rmtree, tmp, True)
        log = os.path.join(tmp, 'gw.log')
        with open(log, 'ab') as f:
            st = os.fstat(f.fileno())
            env = dict(os.environ, JOURNAL_STREAM=value_of(st))
            r = subprocess.run([GRADWATCHD, '--state-dir', tmp, '--socket', 'off', '--tcp', 'off',
                                '--udp', 'off', '--http', 'off', '--db', os.path.join(tmp, 'no', 'x.db')],
                               stderr=f, env=env, timeout=30)
        self.assertEqual(r.returncode, 1)        # the database's directory does not exist
        with open(log) as f:
            return f.read().splitlines()

    def test_an_inherited_journal_stream_is_not_the_journal(self):
        got = self.start_with(lambda st: '%d:%d' % (st.st_dev, st.st_ino + 1))
        self.assertTrue(got)
        for line in got:
            self.assertRegex(line, r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (crit|error|warn|info) ')

    def test_the_journal_gets_priorities(self):
        got = self.start_with(lambda st: '%d:%d' % (st.st_dev, st.st_ino))
        self.assertTrue(got)
        for line in got:
            self.assertRegex(line, r'^<[2-7]>')

if __name__ == '__main__':
    unittest.main()
