"""contrib/systemd and `meson install`: both units pass `systemd-analyze
verify` (with their ExecStart pointed at the built binary and their man page
found on a MANPATH of docs/man: nothing else of the real units is changed),
`systemd-analyze security --offline=true` rates each 2.0 or lower ("OK"),
and `meson install` puts the binaries, units, man pages and the example
configuration in place (the configuration passes --check-config).
The watchdog petting itself is tested in test_ingest.py (Lifecycle)."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCHD, SOURCE_ROOT

ANALYZE = shutil.which('systemd-analyze') or '/usr/bin/systemd-analyze'
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(GRADWATCHD)))
UNITS = os.path.join(BUILD, 'contrib', 'systemd')
CONFIG = os.path.join(SOURCE_ROOT, 'contrib', 'systemd', 'gradwatchd.json')
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
        man = os.path.join(cls.tmp, 'man')
        for sec, page in (('8', 'gradwatchd.8'), ('1', 'gradwatch.1')):
            os.makedirs(os.path.join(man, 'man' + sec))
            shutil.copy(os.path.join(SOURCE_ROOT, 'docs', 'man', page), os.path.join(man, 'man' + sec))
        cls.env = dict(os.environ, MANPATH=man, SYSTEMD_LOG_LEVEL='notice')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_verify(self):
        for name, path in self.units.items():
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
            for want in ('Type=notify', 'WatchdogSec=', 'StateDirectory=gradwatch', 'RuntimeDirectory=gradwatch',
                         'DynamicUser=yes', 'ProtectSystem=strict'):
                self.assertIn(want, text, path)


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
                         'gradwatchd.8', 'gradwatch.1', 'gradwatchd.json'):
                self.assertIn(want, names, sorted(found))
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


if __name__ == '__main__':
    unittest.main()
