"""Keep the documents true, and the first hour's mistakes explained.

ConfigurationTable: every key in docs/configuration.md's table is one the
daemon takes and prints back with --check-config, and every key it prints is
in the table; the defaults the table states (numbers, sizes, names) are the
ones --check-config prints with no file.  It reads the table's first two
columns, not its prose, so rewording a row does not break it.

CommandExamples: every --option of a gradwatch or gradwatchd command line in
the documents' code blocks and the man pages' EXAMPLES is one that command's
--help lists, and every subcommand exists.

Links: every relative link of the documents names a file that exists and,
with #anchor, a heading in it.

ApiRoutes: every GET route docs/api.md lists answers.  MetricNames: the
metric families docs/integrations.md lists are the ones /metrics exports.

DetectorThresholds: every threshold default docs/detectors.md states in
parentheses after the threshold's name is the default the daemon has.

FirstHourErrors: what a new user gets wrong first -- a typo in a key, a
listen address without its port, a directory or an empty file given as the
configuration, a port another program holds, a --db that is no gradwatch
database or is a directory, a socket in a directory that does not exist, an
unknown --input-format -- is answered with what is wrong and what to do, and
exits 1 (gradwatchd's configuration), or 2 (gradwatch; a usage error).
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gwtest import GRADWATCH, GRADWATCHD, Daemon  # noqa: E402

SRC = os.path.join(os.path.dirname(__file__), '..', '..')
CONFIG_MD = os.path.join(SRC, 'docs', 'configuration.md')

# keys whose value is a free-form object or a list of entries: the table
# documents them as one row (their insides are documented elsewhere)
OPAQUE = {'aliases', 'thresholds', 'runs', 'sinks', 'follow', 'fleet'}


def run(args, cwd=None, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=e,
                          stdin=subprocess.DEVNULL, timeout=60)


def table_rows():
    """(names, default cell, meaning cell) of the configuration table: the
    rows whose first cell is backticked key names.  `limits.a`, `b` means
    limits.a and limits.b."""
    rows = []
    with open(CONFIG_MD, encoding='utf-8') as f:
        for line in f:
            if not line.startswith('| `'):
                continue
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) < 3:
                continue
            names = re.findall(r'`([^`]+)`', cells[0])
            prefix = names[0].rsplit('.', 1)[0] + '.' if '.' in names[0] else ''
            names = [n if '.' in n else prefix + n for n in names]
            rows.append((names, cells[1], cells[2]))
    return rows


def flatten(cfg):
    """The keys of a --check-config output as the table names them."""
    out = set()
    for k, v in cfg.items():
        if isinstance(v, dict) and k not in OPAQUE:
            out |= {k + '.' + kk for kk in v}
        else:
            out.add(k)
    return out


def value_of(cfg, name):
    cur = cfg
    for part in name.split('.'):
        cur = cur[part]
    return cur


def parse_default(cell):
    """A default as the table writes it, or None when it is prose: 1024,
    `full`, 64 KiB, 256 MiB."""
    cell = cell.strip()
    m = re.fullmatch(r'(\d+)\s*(KiB|MiB|GiB)', cell)
    if m:
        return int(m.group(1)) << {'KiB': 10, 'MiB': 20, 'GiB': 30}[m.group(2)]
    if re.fullmatch(r'\d+', cell):
        return int(cell)
    m = re.fullmatch(r'`"?([\w.:]+)"?`', cell)
    if m:
        return m.group(1)
    return None


class ConfigurationTable(unittest.TestCase):
    def full_config(self, tmp):
        """A file that sets every optional key the table lists."""
        for name in ('ingest.tokens', 'read.tokens'):
            with open(os.path.join(tmp, name), 'w') as f:
                f.write('t-%s-0123456789abcdef\n' % name[0])
        with open(os.path.join(tmp, 'train.log'), 'w'):
            pass
        path = os.path.join(tmp, 'full.json')
        with open(path, 'w') as f:
            json.dump({'public_url': 'https://node17:7471', 'kernels': 'scalar',
                       'auth': {'ingest_tokens_file': 'ingest.tokens',
                                'read_tokens_file': 'read.tokens'},
                       'retention': {'max_age': '90d', 'max_bytes': 1 << 30},
                       'follow': [{'path': 'train.log', 'run': 'r', 'poll_ms': 500,
                                   'format': 'ndjson'}],
                       'fleet': {'postgresql': 'postgresql://127.0.0.1:9/gradwatch',
                                 'node': 'node17', 'interval': '1s', 'batch_rows': 20000}}, f)
        return path

    def test_every_key_documented_and_accepted(self):
        documented = {n for names, _, _ in table_rows() for n in names}
        self.assertIn('limits.max_body_bytes', documented)   # the table was read
        with tempfile.TemporaryDirectory() as tmp:
            r = run([GRADWATCHD, '--config', self.full_config(tmp), '--check-config'], cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            cfg = json.loads(r.stdout)
        printed = flatten(cfg)
        self.assertEqual(sorted(printed - documented), [],
                         'keys --check-config prints that docs/configuration.md does not list')
        self.assertEqual(sorted(documented - printed), [],
                         'keys docs/configuration.md lists that the daemon does not take')
        # the keys of a follow entry, as the table's follow row names them
        follow_row = [m for names, _, m in table_rows() if names == ['follow']][0]
        for key in cfg['follow'][0]:
            self.assertIn('"%s"' % key, follow_row, 'follow entry key %s not in the table' % key)
        fleet_row = [m for names, _, m in table_rows() if names == ['fleet']][0]
        for key in cfg['fleet']:
            self.assertIn('"%s"' % key, fleet_row, 'fleet key %s not in the table' % key)

    def test_stated_defaults_are_the_defaults(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([GRADWATCHD, '--check-config'], cwd=tmp,
                    env={'XDG_STATE_HOME': tmp + '/state', 'XDG_RUNTIME_DIR': tmp + '/run'})
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            cfg = json.loads(r.stdout)
        checked = 0
        for names, default, _ in table_rows():
            parts = [p.strip() for p in default.split(',')]
            if len(parts) != len(names):
                parts = [default] * len(names)
            for name, part in zip(names, parts):
                want = parse_default(part)
                if want is None:
                    continue
                got = value_of(cfg, name)
                if isinstance(want, str) and not isinstance(got, str):
                    continue   # e.g. `0660` stands for a string, compared below
                self.assertEqual(got, want, 'docs/configuration.md: default of %s' % name)
                checked += 1
        self.assertGreater(checked, 15)   # the table's defaults were read


def command_lines():
    """(where, line) of every shell command line in the documents: the
    lines of README.md's, docs/*.md's and contrib/python/README.md's code
    blocks, and the man pages' EXAMPLES."""
    out = []
    md = [os.path.join(SRC, 'README.md'), os.path.join(SRC, 'contrib', 'python', 'README.md')]
    md += sorted(os.path.join(SRC, 'docs', f) for f in os.listdir(os.path.join(SRC, 'docs'))
                 if f.endswith('.md'))
    for path in md:
        fence = None   # the opening line of the code block we are in
        with open(path, encoding='utf-8') as f:
            for n, line in enumerate(f, 1):
                if line.startswith('```'):
                    fence = None if fence else line.strip()
                    continue
                if fence in ('```', '```sh', '```bash', '```console'):
                    out.append(('%s:%d' % (os.path.relpath(path, SRC), n), line.rstrip('\n')))
    for man in ('gradwatch.1', 'gradwatchd.8'):
        path = os.path.join(SRC, 'docs', 'man', man)
        with open(path, encoding='utf-8') as f:
            text = f.read()
        m = re.search(r'^\.SH EXAMPLES\n(.*?)^\.SH ', text, re.S | re.M)
        for n, line in enumerate(m.group(1).splitlines() if m else []):
            if not line.startswith('.'):
                out.append(('docs/man/%s EXAMPLES' % man, line.replace('\\-', '-')))
    return out


def invocations(line):
    """(program, subcommand or None, [--options]) for every gradwatch or
    gradwatchd the shell line runs."""
    line = line.split('  #')[0].split(' # ')[0]
    line = re.sub(r'\$\([^)]*\)', 'X', line)   # VAR=$(cat file) gradwatch ...
    for seg in re.split(r'\|\||&&|[|;&]', line):
        words = [w for w in re.split(r'\s+', seg.strip()) if w]
        while words and re.match(r'[A-Z_]+=', words[0]):   # VAR=value gradwatch ...
            words = words[1:]
        for i, w in enumerate(words[:1]):
            prog = os.path.basename(w)
            if prog not in ('gradwatch', 'gradwatchd'):
                continue
            rest = [x.strip('[]()') for x in words[i + 1:]]
            sub = None
            if prog == 'gradwatch':
                k = 0
                while k < len(rest) and rest[k].startswith('-'):
                    k += 2 if rest[k] in ('-c', '--config', '--kernels') else 1
                sub = rest[k] if k < len(rest) else None
                rest = rest[k + 1:]
            opts = [x.split('=')[0] for x in rest if re.match(r'--[a-z]', x)]
            yield prog, sub, opts
            break


class CommandExamples(unittest.TestCase):
    def test_every_documented_option_exists(self):
        # a renamed or removed option leaves examples that fail as written:
        # every --option of a gradwatch/gradwatchd command in the documents
        # is one that command's --help lists
        helps = {}

        def help_of(prog, sub):
            if (prog, sub) not in helps:
                args = [GRADWATCH if prog == 'gradwatch' else GRADWATCHD] + ([sub] if sub else []) + ['--help']
                r = run(args)
                helps[prog, sub] = r.stdout.decode() if r.returncode == 0 else None
            return helps[prog, sub]

        seen = 0
        bad = []
        for where, line in command_lines():
            for prog, sub, opts in invocations(line):
                if prog == 'gradwatch' and sub is None:
                    continue
                text = help_of(prog, sub)
                if text is None:
                    bad.append('%s: %s: no command "%s"' % (where, line, sub))
                    continue
                seen += 1
                for o in opts:
                    if not re.search(r'(^|[\s\[|,(])%s\b' % re.escape(o), text):
                        bad.append('%s: %s: %s %s has no option %s' % (where, line, prog, sub or '', o))
        self.assertGreater(seen, 25)   # the documents' examples were found
        self.assertEqual(bad, [])


def anchors(path):
    """The anchors of a Markdown file's headings, as GitHub makes them."""
    out = set()
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = re.match(r'#+\s+(.*)', line)
            if m:
                out.add(re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-'))
    return out


class Links(unittest.TestCase):
    def test_every_relative_link_and_anchor_exists(self):
        files = [os.path.join(SRC, 'README.md'), os.path.join(SRC, 'contrib', 'python', 'README.md')]
        files += sorted(os.path.join(SRC, 'docs', f) for f in os.listdir(os.path.join(SRC, 'docs'))
                        if f.endswith('.md'))
        bad = []
        for f in files:
            with open(f, encoding='utf-8') as fh:
                for n, line in enumerate(fh, 1):
                    for m in re.finditer(r'\]\(([^)#\s]*)(#[^)\s]+)?\)', line):
                        target, anchor = m.groups()
                        if re.match(r'[a-z]+:', target):
                            continue
                        p = os.path.normpath(os.path.join(os.path.dirname(f), target)) if target else f
                        where = '%s:%d' % (os.path.relpath(f, SRC), n)
                        if not os.path.exists(p):
                            bad.append('%s: no file %s' % (where, target))
                        elif anchor and p.endswith('.md') and anchor[1:] not in anchors(p):
                            bad.append('%s: no heading for %s%s' % (where, target, anchor))
        self.assertEqual(bad, [])


class ApiRoutes(unittest.TestCase):
    def test_every_route_in_api_md_exists(self):
        # every GET route docs/api.md's table lists answers on a daemon with
        # no sinks, no tokens: never "no such endpoint" (GET /v1/sinks was
        # one until a sink was configured)
        with open(os.path.join(SRC, 'docs', 'api.md'), encoding='utf-8') as f:
            cells = [line.split('|')[1] for line in f if line.startswith('| `')]
        paths = []
        for cell in cells:
            for m in re.finditer(r'`(GET )?(/[^`\[]*)', cell):
                if cell.strip().startswith('`GET') or m.group(1):
                    paths.append(m.group(2).strip())
        self.assertIn('/v1/sinks', paths)
        with Daemon() as d:
            d.post('/v1/ingest', b'{"run":"r","step":1,"loss":1.0}\n')
            aid = 'gw-0000000000000000'
            for p in paths:
                url = p.replace('{run}', 'r').replace('{id}', aid).replace('{file}', 'app.js')
                status, body = d.get(url)
                self.assertNotIn('no such endpoint', str(body), p)
                self.assertIn(status, (200, 404) if '{id}' in p else (200,), (p, status, body))


class MetricNames(unittest.TestCase):
    def test_every_metric_is_documented_and_exists(self):
        # docs/integrations.md's Prometheus table against a real /metrics
        # with a run of every role and a sink (the outbox families)
        with open(os.path.join(SRC, 'docs', 'integrations.md'), encoding='utf-8') as f:
            text = f.read()
        table = text[text.index('## Prometheus'):text.index('## systemd')]
        documented = set(re.findall(r'`(gradwatch_[a-z_]+)', table))
        # and shipping to a PostgreSQL that is not there (the fleet families)
        d = Daemon(config={'sinks': [{'type': 'webhook', 'url': 'http://127.0.0.1:9/x'}],
                           'fleet': {'postgresql': 'postgresql://127.0.0.1:9/gradwatch'}})
        with d:
            d.post('/v1/ingest', b'{"run":"r","step":1,"loss":1.0,"grad_norm":0.5,"lr":0.001,'
                   b'"throughput":100}\n')
            status, body = d.get('/metrics')
        self.assertEqual(status, 200)
        exported = {line.split('{')[0].split(' ')[0] for line in body.splitlines()
                    if line and not line.startswith('#')}
        self.assertEqual(sorted(exported - documented), [], 'exported but not in docs/integrations.md')
        self.assertEqual(sorted(documented - exported), [], 'in docs/integrations.md but not exported')
        # the Prometheus rules use only metrics that exist (recording
        # rules' own names, level:metric:operation, are not metrics)
        rules_dir = os.path.join(SRC, 'contrib', 'prometheus', 'rules')
        for name in os.listdir(rules_dir):
            with open(os.path.join(rules_dir, name), encoding='utf-8') as f:
                used = set(re.findall(r'(?<![:\w])(gradwatch_[a-z_]+)(?![:\w*])', f.read()))
            self.assertTrue(used)
            self.assertEqual(sorted(used - exported), [], 'contrib/prometheus/rules/%s' % name)


class DetectorThresholds(unittest.TestCase):
    def test_defaults_in_detectors_md_are_the_defaults(self):
        # docs/detectors.md gives a threshold's default in parentheses after
        # its name: `gap_min_seconds` (30 s), `match_tol` (1 %), (1,000)
        with tempfile.TemporaryDirectory() as tmp:
            r = run([GRADWATCHD, '--check-config'], cwd=tmp,
                    env={'XDG_STATE_HOME': tmp + '/state', 'XDG_RUNTIME_DIR': tmp + '/run'})
        defaults = json.loads(r.stdout)['thresholds']
        with open(os.path.join(SRC, 'docs', 'detectors.md'), encoding='utf-8') as f:
            text = f.read()
        checked = 0
        for name, num, pct in re.findall(r'`([a-z_]+)` \((-?[0-9][0-9,]*(?:\.[0-9]+)?)( ?%)?', text):
            if name not in defaults:
                continue
            want = float(num.replace(',', '')) / (100 if pct else 1)
            self.assertAlmostEqual(defaults[name], want, msg='docs/detectors.md: default of ' + name)
            checked += 1
        self.assertGreater(checked, 25)


class FirstHourErrors(unittest.TestCase):
    def check(self, text, *want, name='gradwatchd.json'):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name)
            if text is None:
                os.mkdir(path)
            else:
                with open(path, 'w') as f:
                    f.write(text)
            r = run([GRADWATCHD, '--config', path, '--check-config'], cwd=tmp)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 1, err)
        self.assertEqual(r.stdout, b'')
        for w in want:
            self.assertIn(w, err)
        return err

    def test_typo_in_a_key_suggests_the_key(self):
        self.check('{"htpp": "127.0.0.1:7471"}', 'unknown key "htpp" (did you mean "http"?)')
        self.check('{"limits": {"max_conections": 10}}',
                   'unknown key "limits.max_conections" (did you mean "limits.max_connections"?)')
        self.check('{"runs": [{"match": "x", "thrsholds": {}}]}',
                   '(did you mean "runs[0].thresholds"?)')
        # nothing close: every key the object takes
        err = self.check('{"storage": {"fsync": true}}', 'unknown key "storage.fsync"; storage takes: ')
        self.assertIn('commit_interval_ms', err)

    def test_listen_address_without_a_port(self):
        self.check('{"http": "127.0.0.1"}', 'listen address "127.0.0.1": expected "host:port"')

    def test_directory_or_empty_file(self):
        self.check(None, 'is a directory, not a configuration file')
        self.check('', 'is empty: a configuration is a JSON object')

    def test_db_that_is_not_a_database(self):
        with tempfile.TemporaryDirectory() as tmp:
            empty = os.path.join(tmp, 'empty.db')
            open(empty, 'w').close()
            for path, want in ((os.path.join(tmp, 'nope.db'), 'cannot open %s/nope.db: No such file' % tmp),
                               (tmp, '%s is a directory, not a gradwatch database' % tmp),
                               (empty, '%s is not a gradwatch database' % empty)):
                for cmd in (['runs'], ['alerts'], ['export', 'some-run']):
                    r = run([GRADWATCH] + cmd + ['--db', path])
                    err = r.stderr.decode()
                    self.assertEqual(r.returncode, 2, err)
                    self.assertEqual(r.stdout, b'')
                    self.assertIn(want, err)

    def test_unknown_follow_format_is_a_usage_error(self):
        # a bad value of a flag is a usage error (2) naming the flag's value and
        # the formats there are, not a configuration error about follow[0].format
        r = run([GRADWATCHD, '--follow', 'train.log', '--input-format', 'megatrom', '--check-config'])
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 2, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn('unknown input format "megatrom"; known: ndjson', err)

    def test_db_or_socket_in_the_wrong_place(self):
        with tempfile.TemporaryDirectory() as tmp:
            off = ['--tcp', 'off', '--udp', 'off', '--http', 'off']
            # a directory as --db (SQLite said "unable to open database file")
            r = run([GRADWATCHD, '--db', tmp, '--socket', 'off'] + off, cwd=tmp)
            self.assertEqual(r.returncode, 1)
            self.assertIn('the database %s is a directory: name a file in it' % tmp, r.stderr.decode())
            # a socket in a directory that does not exist (libuv says EACCES)
            sock = os.path.join(tmp, 'no', 'such', 'gw.sock')
            r = run([GRADWATCHD, '--db', os.path.join(tmp, 'g.db'), '--socket', sock] + off, cwd=tmp)
            err = r.stderr.decode()
            self.assertEqual(r.returncode, 1, err)
            self.assertIn("the socket's directory %s does not exist" % os.path.dirname(sock), err)
            self.assertNotIn('permission denied', err)

    def test_port_in_use_says_what_to_do(self):
        with socket.socket() as s, tempfile.TemporaryDirectory() as tmp:
            s.bind(('127.0.0.1', 0))
            s.listen()
            port = s.getsockname()[1]
            r = run([GRADWATCHD, '--state-dir', tmp, '--socket', 'off', '--tcp', 'off', '--udp', 'off',
                     '--http', '127.0.0.1:%d' % port], cwd=tmp)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 1, err)
        self.assertIn('http 127.0.0.1:%d: address already in use' % port, err)
        self.assertIn('--http ADDR:PORT', err)
        self.assertIn('--http off', err)


if __name__ == '__main__':
    unittest.main()
