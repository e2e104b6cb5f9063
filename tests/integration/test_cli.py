"""Command-line conventions of gradwatch and gradwatchd, checked on the real
binaries: --help on every command, one-line usage errors that exit 2,
-V/--version with the kernel variant in use, runs/alerts --json the same
from --url and --db, one alert schema across replay, the report, the API and
a webhook, --check-config's round trip, the XDG default paths, and that the
man pages list exactly the options --help prints.
"""
import json
import math
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import gwtest  # noqa: E402
from gwtest import GRADWATCH, GRADWATCHD, CORPUS, Daemon, wait_for  # noqa: E402
from receiver import Receiver  # noqa: E402

SRC = os.path.join(os.path.dirname(__file__), '..', '..')
MAN = os.path.join(SRC, 'docs', 'man')

COMMANDS = ['replay', 'report', 'export', 'convert', 'formats', 'send', 'runs', 'alerts',
            'prune', 'thresholds', 'version', 'help']


def run(args, env=None, cwd=None, stdin=subprocess.DEVNULL):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=cwd,
                          stdin=stdin, timeout=120)


def usage_error(test, r, prog):
    """Exit 2, nothing on stdout, one line on stderr ending in (PROG --help)."""
    err = r.stderr.decode()
    test.assertEqual(r.returncode, 2, err)
    test.assertEqual(r.stdout, b'')
    test.assertEqual(len(err.splitlines()), 1, err)
    test.assertTrue(err.rstrip('\n').endswith('(%s --help)' % prog), err)
    test.assertTrue(err.startswith(prog + ': '), err)
    return err


class HelpAndUsageErrors(unittest.TestCase):
    def test_help_on_every_command(self):
        for cmd in COMMANDS:
            for flag in ('--help', '-h'):
                r = run([GRADWATCH, cmd, flag])
                self.assertEqual(r.returncode, 0, (cmd, flag, r.stderr))
                self.assertTrue(r.stdout.startswith(b'usage: gradwatch'), (cmd, r.stdout[:80]))
                self.assertEqual(r.stderr, b'', cmd)
        for args in ([GRADWATCH, '--help'], [GRADWATCH, '-h'], [GRADWATCHD, '--help'], [GRADWATCHD, '-h']):
            r = run(args)
            self.assertEqual(r.returncode, 0, args)
            self.assertTrue(r.stdout.startswith(b'usage: gradwatch'), args)

    def test_unknown_option_on_every_command(self):
        for cmd in COMMANDS:
            err = usage_error(self, run([GRADWATCH, cmd, '--no-such-option']), 'gradwatch ' + cmd)
            self.assertIn('unknown option "--no-such-option"', err)
            err = usage_error(self, run([GRADWATCH, cmd, '-Z']), 'gradwatch ' + cmd)
            self.assertIn('"-Z"', err)
        usage_error(self, run([GRADWATCH, '--bogus', 'runs']), 'gradwatch')
        err = usage_error(self, run([GRADWATCHD, '--bogus']), 'gradwatchd')
        self.assertIn('"--bogus"', err)
        usage_error(self, run([GRADWATCHD, 'stray']), 'gradwatchd')

    def test_missing_and_bad_values(self):
        cases = [
            (['replay', '--format'], 'needs a value'),
            (['replay', '--format', 'xml', 'x'], '"xml"'),
            (['replay', '--min-severity', 'loud', 'x'], '"loud"'),
            (['replay', '--input-format', 'nope', 'x'], '"nope"'),
            (['replay'], 'no file given'),
            (['report', '--max-points', '5', 'x'], '"5"'),
            (['convert', '--input-format', 'nope', 'x'], '"nope"'),
            (['convert'], 'no file given'),
            (['send', '--batch', '0'], '"0"'),
            (['send', '--timeout', '-1'], '"-1"'),
            (['send', '--retries', 'many'], '"many"'),
            (['send', '--url', 'ftp://x'], '"ftp://x"'),
            (['runs', '--timeout', 'x'], '"x"'),
            (['runs', 'a', 'b'], '"b"'),
            (['alerts', '--url', 'http://127.0.0.1:1', '--db', 'x.db'], 'exclude'),
            (['export'], 'which run'),
            (['export', 'r', '--format', 'xls'], '"xls"'),
            (['export', 'r', '--from', 'ten'], '"ten"'),
            (['formats', 'extra'], '"extra"'),
            # checked before any request: no daemon listens at this address
            (['prune', '--url', 'http://127.0.0.1:1', '--older-than', '3x'], '"3x"'),
            (['prune', '--url', 'http://127.0.0.1:1', '--older-than', '-5'], '"-5"'),
            (['version', 'extra'], '"extra"'),
            (['resolved', '--x'], 'unknown command'),
        ]
        for args, what in cases:
            prog = 'gradwatch' if args[0] == 'resolved' else 'gradwatch ' + args[0]
            err = usage_error(self, run([GRADWATCH] + args), prog)
            self.assertIn(what, err, args)
        usage_error(self, run([GRADWATCH]), 'gradwatch')
        for args, what in [(['--tcp'], 'needs a value'), (['--tcp', 'x:y'], 'port'),
                           (['--log-level', 'loud'], '"loud"'), (['--run', 'r'], 'after the --follow'),
                           (['--http', '1.2.3.4.5:1'], 'not a numeric')]:
            err = usage_error(self, run([GRADWATCHD] + args), 'gradwatchd')
            self.assertIn(what, err, args)

    def test_start_up_errors_say_what_to_fix(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, 'no-such-dir')
            r = run([GRADWATCHD, '--state-dir', missing, '--socket', 'off', '--tcp', 'off',
                     '--udp', 'off', '--http', 'off'])
            self.assertEqual(r.returncode, 1, r.stderr)
            err = r.stderr.decode()
            self.assertIn("the database's directory %s does not exist" % missing, err)
            self.assertFalse(os.path.exists(missing))
            conf = os.path.join(tmp, 'gradwatchd.json')
            for prog in (GRADWATCHD, GRADWATCH):
                args = [prog, '--config', conf] + (['runs'] if prog == GRADWATCH else [])
                r = run(args)
                self.assertNotEqual(r.returncode, 0)
                err = r.stderr.decode()
                self.assertIn('cannot read the configuration: unable to open %s' % conf, err)
                self.assertNotIn(':-1:', err)

    def test_send_prints_no_zero_accepted_after_a_connect_error(self):
        port = gwtest.free_port()
        r = subprocess.run([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % port, '--retries', '0'],
                           input=b'{"run":"r","step":1,"loss":1}\n', stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertNotIn(b'0 line(s) accepted', r.stderr)
        self.assertIn(b'is gradwatchd running?', r.stderr)


class Version(unittest.TestCase):
    def test_version_names_the_kernels_in_use(self):
        forms = [[GRADWATCH, '--version'], [GRADWATCH, '-V'], [GRADWATCH, 'version']]
        outs = [run(a) for a in forms]
        for r in outs:
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(outs[0].stdout, outs[1].stdout)
        self.assertEqual(outs[0].stdout, outs[2].stdout)
        text = outs[0].stdout.decode()
        kern = re.search(r'^kernels: (\S+)$', text, re.M).group(1)
        if os.uname().machine in ('x86_64', 'aarch64') and not os.environ.get('GRADWATCH_KERNELS'):
            # the best the CPU has, never the scalar placeholder of before init
            self.assertNotEqual(kern, 'scalar')
        for prog in (GRADWATCH, GRADWATCHD):
            r = run([prog, '-V'], env={'GRADWATCH_KERNELS': 'scalar'})
            self.assertIn('kernels: scalar\n', r.stdout.decode())
            r = run([prog, '--kernels', 'scalar', '--version'])
            self.assertIn('kernels: scalar\n', r.stdout.decode())
        d = run([GRADWATCHD, '--version']).stdout.decode()
        self.assertIn('kernels: %s\n' % kern, d)
        formats = [line.split()[0] for line in run([GRADWATCH, 'formats']).stdout.decode().splitlines()]
        for out in (text, d):
            self.assertEqual(re.search(r'^formats: (.*)$', out, re.M).group(1).split(), formats)
            self.assertIn('detectors: nonfinite ', out)


def close(a, b, path=''):
    """Equal, floats to 1e-9 relative."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), path
        return False, path
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return False, '%s keys %s' % (path, sorted(set(a) ^ set(b)))
        for k in a:
            ok, where = close(a[k], b[k], path + '.' + k)
            if not ok:
                return False, where
        return True, ''
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False, path
        for i, (x, y) in enumerate(zip(a, b)):
            ok, where = close(x, y, '%s[%d]' % (path, i))
            if not ok:
                return False, where
        return True, ''
    return a == b, path


WALL = {'raised_at', 'opened_at', 'resolved_at'}


class OneShapeOneSchema(unittest.TestCase):
    """A real trace sent to a daemon with a webhook receiver, and replayed."""

    @classmethod
    def setUpClass(cls):
        cls.traces = [os.path.join(CORPUS, 'd03.jsonl'), os.path.join(CORPUS, 'd01.jsonl')]
        cls.rcv = Receiver()
        cls.d = Daemon(config={'sinks': [{'type': 'webhook', 'name': 'hook',
                                          'url': 'http://127.0.0.1:%d/hook' % cls.rcv.port}]})
        cls.d.start()
        cls.url = 'http://127.0.0.1:%d' % cls.d.http_port
        for t in cls.traces:
            r = run([GRADWATCH, 'send', '--url', cls.url, t])
            assert r.returncode == 0, r.stderr
        r = run([GRADWATCH, 'replay', '--format', 'jsonl', '--resolved'] + cls.traces)
        cls.replayed = [json.loads(line) for line in r.stdout.decode().splitlines()]
        assert cls.replayed, r.stderr
        cls.ids = sorted({a['id'] for a in cls.replayed})
        # every event delivered: one request per replayed event
        cls.hooks = cls.rcv.wait(len(cls.replayed), timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.d.close()
        cls.rcv.close()

    def cli(self, *args):
        r = run([GRADWATCH] + list(args))
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_runs_and_alerts_json_are_the_api_from_url_and_db(self):
        run_name = self.replayed[0]['run']
        for cmd in (['runs'], ['alerts'], ['runs', run_name], ['alerts', run_name]):
            via_url = self.cli(*cmd, '--json', '--url', self.url)
            via_db = self.cli(*cmd, '--json', '--db', self.d.db)
            path = {'runs': '/v1/runs', 'alerts': '/v1/alerts'}[cmd[0]]
            if len(cmd) > 1:
                path = '/v1/runs/' + run_name + ('/alerts' if cmd[0] == 'alerts' else '')
            status, api = self.d.get(path)
            self.assertEqual(status, 200)
            self.assertEqual(via_url, api, cmd)
            self.assertEqual(via_db, api, cmd)
        # GRADWATCH_URL is the default address
        r = run([GRADWATCH, 'alerts', '--json'], env={'GRADWATCH_URL': self.url})
        self.assertEqual(json.loads(r.stdout), self.d.get('/v1/alerts')[1])

    def test_alerts_of_a_run_named_like_a_subcommand(self):
        # "gradwatch alerts ack" is the subcommand; --run NAME reaches a run
        # of that name (and any other), from the daemon and from the file
        with Daemon() as d:
            url = 'http://127.0.0.1:%d' % d.http_port
            for name in ('ack', 'unack'):
                d.post('/v1/ingest', ''.join('{"run":"%s","step":%d,"loss":%s,"grad_norm":1}\n'
                                             % (name, s, 'NaN' if s == 4 else '1.5')
                                             for s in range(1, 5)).encode())
            wait_for(lambda: len(d.get('/v1/alerts')[1]['alerts']) == 2, 60, 'two alerts')
            for name in ('ack', 'unack'):
                api = d.get('/v1/runs/%s/alerts' % name)[1]
                self.assertEqual([a['run'] for a in api['alerts']], [name])
                for where in (['--url', url], ['--db', d.db]):
                    self.assertEqual(self.cli('alerts', '--run', name, '--json', *where), api)
                    self.assertEqual(self.cli('alerts', '--json', *where, '--run=' + name), api)
                    r = run([GRADWATCH, 'alerts', '--run', name] + where)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn(b'nonfinite', r.stdout)
                self.assertEqual(self.cli('runs', '--run', name, '--json', '--url', url),
                                 d.get('/v1/runs/' + name)[1])
            # the subcommand is still the subcommand
            r = run([GRADWATCH, 'alerts', 'ack', '--url', url])
            self.assertEqual(r.returncode, 2, r.stderr)
            # a run named twice is a usage error, not one of them silently
            r = run([GRADWATCH, 'alerts', '--run', 'ack', 'unack', '--url', url])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(b'--run', r.stderr)
            r = run([GRADWATCH, 'alerts', '--help'])
            self.assertIn(b'--run NAME', r.stdout)

    def test_alerts_of_a_misspelt_run_is_no_such_run_not_no_alerts(self):
        # "no alerts" for a run that does not exist reads as "all well"
        self.assertEqual(self.d.get('/v1/runs/no-such-run/alerts')[0], 404)
        for where in (['--url', self.url], ['--db', self.d.db]):
            r = run([GRADWATCH, 'alerts'] + where + ['no-such-run'])
            self.assertEqual(r.returncode, 2, (where, r.stdout, r.stderr))
            self.assertIn(b'no run named "no-such-run"', r.stderr, where)
            self.assertNotIn(b'no alerts', r.stdout, where)

    def test_one_alert_schema_for_replay_report_api_and_webhook(self):
        last = {}
        for a in self.replayed:
            self.assertEqual(a.pop('file') in self.traces, True)
            last[a['id']] = a
        api = {a['id']: a for a in self.d.get('/v1/alerts')[1]['alerts']}
        hook = {}
        for req in self.hooks:
            hook[req['json']['alert']['id']] = req['json']['alert']
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'r.html')
            r = run([GRADWATCH, 'report', '-o', out] + self.traces)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                html = f.read()
        data = json.loads(re.search(r'<script type="application/json" id="gw-data">(.*?)</script>',
                                    html, re.S).group(1))
        report = {a['id']: a for run_ in data['runs'] for a in run_['alerts']}
        self.assertEqual(set(api), set(last))
        self.assertEqual(set(hook), set(last))
        self.assertEqual(set(report), set(last))
        kinds = set()
        for i in last:
            kinds.add(last[i]['kind'])
            self.assertEqual(last[i]['schema'], 'gradwatch.alert.v2')
            for name, other in (('api', api[i]), ('webhook', hook[i])):
                self.assertEqual(set(other) - WALL, set(last[i]), (name, i))
                self.assertTrue(WALL & set(other), name)
                ok, where = close({k: v for k, v in other.items() if k not in WALL}, last[i])
                self.assertTrue(ok, (name, i, where))
            for k in WALL & set(api[i]):
                # the API prints reals to 11 digits: a tenth of a second here
                self.assertLess(abs(api[i][k] - hook[i][k]), 0.1, k)
            self.assertEqual(set(api[i]), set(hook[i]))
            rep = {k: v for k, v in report[i].items() if k not in ('url',)}
            ok, where = close(rep, last[i])
            self.assertTrue(ok, ('report', i, where))
            for k in ('detector', 'step', 'line', 'severity'):   # what score.py reads
                self.assertIn(k, last[i])
        self.assertIn('resolve', kinds)   # a resolved alert was compared too

    def test_a_failed_command_leaves_its_output_file_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'keep.txt')
            junk = os.path.join(tmp, 'notes.txt')
            with open(junk, 'w') as f:
                f.write('no training log here\n')
            for args in (['export', 'no-such-run', '--url', self.url, '-o', out],
                         ['export', 'no-such-run', '--db', self.d.db, '-o', out],
                         ['report', '-o', out, junk]):
                with open(out, 'w') as f:
                    f.write('an earlier report\n')
                r = run([GRADWATCH] + args)
                self.assertEqual(r.returncode, 2, (args, r.stderr))
                with open(out) as f:
                    self.assertEqual(f.read(), 'an earlier report\n', args)
                self.assertTrue(r.stderr.decode().startswith('gradwatch %s: ' % args[0]),
                                (args, r.stderr))
            self.assertEqual(sorted(os.listdir(tmp)), ['keep.txt', 'notes.txt'])
        # to standard output: nothing at all, not a CSV header with no rows
        for where in (['--url', self.url], ['--db', self.d.db]):
            r = run([GRADWATCH, 'export', 'no-such-run'] + where)
            self.assertEqual((r.returncode, r.stdout), (2, b''), (where, r.stderr))

    def test_prune_of_a_run_that_does_not_exist_is_an_error(self):
        r = run([GRADWATCH, 'prune', '--url', self.url, '--run', 'no-such-run'])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stdout, b'')
        self.assertIn('no run named "no-such-run"', r.stderr.decode())

    def test_text_listing(self):
        r = run([GRADWATCH, 'alerts', '--db', self.d.db])
        self.assertEqual(r.returncode, 0)
        self.assertIn(self.ids[0], r.stdout.decode())

    def test_runs_listing_columns_line_up_with_accented_run_names(self):
        # a run name with non-ASCII letters: its row's columns start where
        # the header's do (characters counted, not bytes; a double-width
        # East Asian character still counts as one)
        name = 'ünïcödé-ρun'
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, 'r.jsonl')
            with open(p, 'w', encoding='utf-8') as f:
                for step in range(1, 4):
                    f.write(json.dumps({'run': name, 'step': step, 'loss': 2.0}) + '\n')
            r = run([GRADWATCH, 'send', '--url', self.url, p])
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run([GRADWATCH, 'runs', '--url', self.url])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.decode().splitlines()
        head = lines[0]
        row = [l for l in lines if l.startswith(name)][0]
        col = head.index('segment') + len('segment')   # right-aligned numbers end here
        self.assertEqual(row[col - 1], '1', (head, row))
        self.assertEqual(row[col], ' ', (head, row))


class CheckConfig(unittest.TestCase):
    def test_stdout_is_the_configuration_and_it_round_trips(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, 'in.json')
            with open(src, 'w') as f:
                json.dump({'state_dir': tmp, 'database': 'x.db', 'http': '127.0.0.1:7999',
                           'udp': False, 'log_level': 'debug', 'limits': {'max_runs': 7},
                           'storage': {'synchronous': 'normal'},
                           'aliases': {'loss': ['my_loss']},
                           'thresholds': {'gap_min_seconds': 120},
                           'runs': [{'match': 'big-*', 'thresholds': {'gap_min_seconds': 30}}],
                           'detectors': {'disabled': ['stall']},
                           'follow': [{'path': 'train.log', 'run': 'r'}],
                           'retention': {'max_age': '90d', 'max_bytes': 21474836480,
                                         'check_every': '90s'}}, f)
            first = run([GRADWATCHD, '--config', src, '--tcp', '127.0.0.1:7998', '--check-config'], cwd=tmp)
            self.assertEqual(first.returncode, 0, first.stderr)
            self.assertIn(b'configuration OK', first.stderr)
            cfg = json.loads(first.stdout)      # only JSON on stdout
            self.assertEqual(cfg['database'], 'x.db')
            self.assertEqual(cfg['tcp'], '127.0.0.1:7998')
            self.assertIs(cfg['udp'], False)
            self.assertEqual(cfg['limits']['max_runs'], 7)
            self.assertEqual(cfg['storage']['synchronous'], 'normal')
            self.assertEqual(cfg['thresholds']['gap_min_seconds'], 120)
            self.assertEqual(cfg['runs'][0]['thresholds']['gap_min_seconds'], 30)
            self.assertEqual(cfg['detectors'], {'disabled': ['stall']})
            self.assertEqual(cfg['aliases'], {'loss': ['my_loss']})
            # retention was left out, so the output fed back kept every run for ever
            self.assertEqual(cfg['retention'], {'max_age': '90d', 'max_bytes': 21474836480,
                                                'check_every': '90s'})
            again = os.path.join(tmp, 'again.json')
            with open(again, 'wb') as f:
                f.write(first.stdout)
            second = run([GRADWATCHD, '--config', again, '--check-config'], cwd=tmp)
            self.assertEqual(second.returncode, 0, second.stderr)
            self.assertEqual(json.loads(second.stdout), cfg)
            # the defaults round-trip too
            plain = run([GRADWATCHD, '--check-config'], cwd=tmp)
            with open(again, 'wb') as f:
                f.write(plain.stdout)
            self.assertEqual(json.loads(run([GRADWATCHD, '--config', again, '--check-config'],
                                            cwd=tmp).stdout), json.loads(plain.stdout))

    def test_inline_secrets_are_redacted(self):
        # issue 22 item 12: the printed configuration gets pasted into
        # tickets; an inline webhook token or signing key must not be in it
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, 'in.json')
            with open(src, 'w') as f:
                json.dump({'state_dir': tmp, 'udp': False, 'sinks': [
                    {'type': 'webhook', 'name': 'hook',
                     'url': 'http://user:pw-SECRET1@127.0.0.1:9/hooks/tok-SECRET2?key=SECRET3',
                     'secret': 'sign-SECRET4'},
                    {'type': 'alertmanager', 'name': 'am', 'url_path_public': True,
                     'url': 'http://127.0.0.1:9/am/base?token=SECRET5'}],
                    'fleet': {'postgresql': 'postgresql://gw:pg-SECRET6@127.0.0.1:9/fleet'
                                            '?sslpassword=SECRET7'}}, f)
            out = run([GRADWATCHD, '--config', src, '--check-config'], cwd=tmp)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertNotIn(b'SECRET', out.stdout + out.stderr)
            sinks = json.loads(out.stdout)['sinks']
            self.assertEqual(sinks[0]['url'], 'http://127.0.0.1:9/REDACTED')
            self.assertEqual(sinks[0]['secret'], 'REDACTED')
            self.assertEqual(sinks[1]['url'], 'http://127.0.0.1:9/am/base/REDACTED')
            self.assertEqual(sinks[0]['name'], 'hook')
            self.assertEqual(json.loads(out.stdout)['fleet']['postgresql'],
                             'postgresql://127.0.0.1:9/REDACTED')


class XdgDefaults(unittest.TestCase):
    def test_paths_outside_systemd(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = {'XDG_STATE_HOME': tmp + '/state', 'XDG_RUNTIME_DIR': tmp + '/run',
                   'STATE_DIRECTORY': '', 'RUNTIME_DIRECTORY': ''}
            os.mkdir(tmp + '/run', 0o700)
            cfg = json.loads(run([GRADWATCHD, '--check-config'], env=env).stdout)
            self.assertEqual(cfg['state_dir'], tmp + '/state/gradwatch')
            self.assertEqual(cfg['database'], 'gradwatch.db')
            self.assertEqual(cfg['socket'], tmp + '/run/gradwatch/gradwatch.sock')
            self.assertFalse(os.path.exists(tmp + '/state'))   # --check-config creates nothing
            # no runtime directory: the socket goes beside the database
            cfg = json.loads(run([GRADWATCHD, '--check-config'],
                                 env=dict(env, XDG_RUNTIME_DIR='')).stdout)
            self.assertEqual(cfg['socket'], tmp + '/state/gradwatch/gradwatch.sock')
            # HOME without XDG_STATE_HOME
            cfg = json.loads(run([GRADWATCHD, '--check-config'],
                                 env=dict(env, XDG_STATE_HOME='', HOME=tmp + '/home')).stdout)
            self.assertEqual(cfg['state_dir'], tmp + '/home/.local/state/gradwatch')
            # under systemd: its directories
            cfg = json.loads(run([GRADWATCHD, '--check-config'],
                                 env=dict(env, STATE_DIRECTORY=tmp + '/s', RUNTIME_DIRECTORY=tmp + '/r')).stdout)
            self.assertEqual((cfg['state_dir'], cfg['socket']), (tmp + '/s', tmp + '/r/gradwatch.sock'))

            # the daemon creates them, 0700, and the CLI finds the same database
            d = Daemon(workdir=tmp, env=env)
            d.command = lambda: [GRADWATCHD, '--tcp', '127.0.0.1:%d' % d.port, '--udp', 'off',
                                 '--http', '127.0.0.1:%d' % d.http_port]
            d.start()
            try:
                state, sock = tmp + '/state/gradwatch', tmp + '/run/gradwatch/gradwatch.sock'
                wait_for(lambda: os.path.exists(sock), what='the socket')
                for p in (tmp + '/state', state, tmp + '/run/gradwatch'):
                    self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o700, p)
                self.assertTrue(os.path.exists(state + '/gradwatch.db.lock'))
                d.sock = sock
                d.send_unix(b'{"run":"xdg","step":1,"loss":1.0}\n')
                url = 'http://127.0.0.1:%d' % d.http_port
                wait_for(lambda: b'xdg' in run([GRADWATCH, 'runs', '--url', url], env=env).stdout,
                         what='the run')
                db = json.loads(run([GRADWATCH, 'runs', '--json', '--db', state + '/gradwatch.db'],
                                    env=env).stdout)
                self.assertEqual([x['run'] for x in db['runs']], ['xdg'])
                # the Python client finds the same socket
                r = run([sys.executable, '-c', 'from gradwatch.client import default_address as d; print(d())'],
                        env=dict(env, GRADWATCH_SOCKET='', GRADWATCH_ADDRESS='',
                                 PYTHONPATH=os.path.join(SRC, 'contrib', 'python')), cwd=tmp)
                self.assertEqual(r.stdout.decode().strip(), sock, r.stderr)
            finally:
                d.stop()


def help_options(prog_args):
    r = run(prog_args)
    return set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*[a-z])', r.stdout.decode()))


def man_options(page):
    with open(os.path.join(MAN, page)) as f:
        text = f.read()
    plain = re.sub(r'\\f[BIRP]', ' ', text.replace('\\-', '-'))    # roff: \- is -, no fonts
    return set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*[a-z])', plain)), text


class ManPages(unittest.TestCase):
    def test_gradwatchd_page_lists_exactly_the_help_options(self):
        helped = help_options([GRADWATCHD, '--help'])
        manned, text = man_options('gradwatchd.8')
        self.assertEqual(helped - manned, set(), 'in --help, not in gradwatchd.8')
        self.assertEqual(manned - helped, set(), 'in gradwatchd.8, not in --help')
        self.check_sections(text)

    def test_gradwatch_page_lists_exactly_the_help_options(self):
        helped = help_options([GRADWATCH, '--help'])
        for cmd in COMMANDS:
            helped |= help_options([GRADWATCH, cmd, '--help'])
        manned, text = man_options('gradwatch.1')
        self.assertEqual(helped - manned, set(), 'in --help, not in gradwatch.1')
        self.assertEqual(manned - helped, set(), 'in gradwatch.1, not in --help')
        for cmd in COMMANDS:
            self.assertIn('.SS %s' % cmd, text.replace('\\-', '-'))
        self.check_sections(text)

    def check_sections(self, text):
        for sec in ('EXIT STATUS', 'ENVIRONMENT', 'FILES'):
            self.assertIn('.SH ' + sec, text)
        for var in ('GRADWATCH_URL', 'GRADWATCH_TOKEN', 'GRADWATCH_KERNELS', 'XDG_STATE_HOME',
                    'XDG_RUNTIME_DIR', 'STATE_DIRECTORY'):
            self.assertIn(var, text)


if __name__ == '__main__':
    unittest.main(verbosity=2)
