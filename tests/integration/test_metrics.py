"""GET /metrics: the Prometheus text exposition format, checked line by line
here and then scraped by a real Prometheus (Debian's /usr/bin/prometheus)
whose own query API must return the daemon's values."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from gwtest import Daemon, free_port, wait_for

PROMETHEUS = shutil.which('prometheus') or '/usr/bin/prometheus'

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse(text):
    """{(name, frozenset(labels)): value}, checking HELP/TYPE come first."""
    out, typed = {}, {}
    for line in text.splitlines():
        if line.startswith('# TYPE '):
            _, _, name, kind = line.split(' ', 3)
            assert kind in ('counter', 'gauge'), line
            assert name not in typed, 'family twice: ' + name
            typed[name] = kind
            continue
        if line.startswith('#') or not line:
            continue
        m = SAMPLE.match(line)
        assert m, 'not a sample line: %r' % line
        name, labels = m.group(1), {}
        assert name in typed, 'sample before its TYPE: ' + line
        if typed[name] == 'counter':
            assert name.endswith('_total'), name
        if m.group(3):
            pos = 0
            body = m.group(3)
            while pos < len(body):
                lm = LABEL.match(body, pos)
                assert lm, 'bad labels in %r' % line
                labels[lm.group(1)] = re.sub(r'\\(.)', lambda x: {'n': '\n'}.get(x.group(1), x.group(1)),
                                             lm.group(2))
                pos = lm.end()
        out[(name, frozenset(labels.items()))] = float(m.group(4))
    return out


def val(samples, name, **labels):
    return samples[(name, frozenset(labels.items()))]


class Metrics(unittest.TestCase):
    def feed(self, d):
        run = 'job "a"\\b'
        body = ''.join(json.dumps({'run': run, 'step': s, 'loss': 3.0 - s / 100, 'grad_norm': 0.5,
                                   'lr': 2e-3, 'throughput': 100.0}) + '\n' for s in range(1, 41))
        body += json.dumps({'run': run, 'step': 41, 'loss': float('nan'), 'grad_norm': 0.5}) + '\n'
        body += '{"run": broken\n'
        status, res = d.post('/v1/ingest', body.encode())
        self.assertEqual(status, 422, res)
        d.send_unix(b''.join(json.dumps({'run': 'other', 'step': s, 'loss': 1.0}).encode() + b'\n'
                             for s in range(1, 6)))
        return run

    def test_exposition(self):
        with Daemon() as d:
            run = self.feed(d)
            wait_for(lambda: d.stats()['transports']['unix']['accepted'] == 5, 60,
                     'the Unix socket lines to be ingested')
            status, text = d.get('/metrics')
            self.assertEqual(status, 200)
            c = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % d.http_port, timeout=10)
            self.assertEqual(c.headers['Content-Type'], 'text/plain; version=0.0.4; charset=utf-8')
            s = parse(text)
            self.assertEqual(val(s, 'gradwatch_lines_ingested_total', transport='http'), 41)
            self.assertEqual(val(s, 'gradwatch_lines_ingested_total', transport='unix'), 5)
            self.assertEqual(val(s, 'gradwatch_lines_ingested_total', transport='follow'), 0)
            self.assertEqual(val(s, 'gradwatch_lines_rejected_total', transport='http',
                                 reason='malformed_json'), 1)
            self.assertEqual(val(s, 'gradwatch_lines_rejected_total', transport='udp',
                                 reason='line_too_long'), 0)
            self.assertEqual(sum(v for (n, l), v in s.items() if n == 'gradwatch_alerts_total'
                                 and dict(l)['detector'] == 'nonfinite'), 1)
            self.assertEqual(val(s, 'gradwatch_run_last_step', run=run), 41)
            self.assertEqual(val(s, 'gradwatch_run_grad_norm', run=run), 0.5)
            self.assertEqual(val(s, 'gradwatch_run_lr', run=run), 2e-3)
            self.assertEqual(val(s, 'gradwatch_run_throughput', run=run), 100.0)
            self.assertTrue(val(s, 'gradwatch_run_loss', run=run) != val(s, 'gradwatch_run_loss', run=run),
                            'the NaN loss is exported as NaN')
            self.assertEqual(val(s, 'gradwatch_run_loss', run='other'), 1.0)
            self.assertNotIn(('gradwatch_run_grad_norm', frozenset({'run': 'other'}.items())), s)
            self.assertEqual(val(s, 'gradwatch_run_open_alerts', run=run), 1)
            age = val(s, 'gradwatch_run_seconds_since_last_record', run='other')
            self.assertTrue(0 <= age < 30, age)
            self.assertEqual(val(s, 'gradwatch_runs'), 2)
            self.assertEqual(val(s, 'gradwatch_store_up'), 1)
            self.assertGreaterEqual(val(s, 'gradwatch_store_commits_total'), 1)
            # the database's size, for retention.max_bytes and the disk: it
            # was in no metric, no stats and no log
            db = val(s, 'gradwatch_store_file_bytes', file='database')
            self.assertGreaterEqual(db, 4096)
            self.assertEqual(db % 4096, 0)
            self.assertGreaterEqual(val(s, 'gradwatch_store_file_bytes', file='wal'), 0)

    @unittest.skipUnless(shutil.which('promtool') or os.environ.get('CI'),
                         'Debian package prometheus (promtool) not installed')
    def test_promtool_lints_it_clean(self):
        # Prometheus's own linter: counter names, units, HELP and TYPE
        sinks = [{'type': 'webhook', 'url': 'http://127.0.0.1:9/h', 'name': 'hook'}]
        with Daemon(config={'sinks': sinks}) as d:
            self.feed(d)
            text = d.get('/metrics')[1]
        r = subprocess.run(['promtool', 'check', 'metrics'], input=text.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout.decode())
        self.assertEqual(r.stdout.decode().strip(), '')

    @unittest.skipUnless(os.path.exists(PROMETHEUS) or os.environ.get('CI'),
                         'Debian package prometheus not installed')
    def test_real_prometheus_scrapes_it(self):
        tmp = tempfile.mkdtemp(prefix='gwprom-')
        prom = None
        try:
            with Daemon() as d:
                run = self.feed(d)
                port = free_port()
                cfg = os.path.join(tmp, 'prometheus.yml')
                with open(cfg, 'w') as f:
                    f.write('global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n'
                            'scrape_configs:\n  - job_name: gradwatch\n'
                            '    static_configs:\n      - targets: ["127.0.0.1:%d"]\n' % d.http_port)
                log = open(os.path.join(tmp, 'prometheus.log'), 'wb')
                prom = subprocess.Popen([PROMETHEUS, '--config.file=' + cfg,
                                         '--storage.tsdb.path=' + os.path.join(tmp, 'data'),
                                         '--web.listen-address=127.0.0.1:%d' % port],
                                        stdout=log, stderr=subprocess.STDOUT, cwd=tmp)

                def query(q):
                    url = 'http://127.0.0.1:%d/api/v1/query?query=%s' % (port, urllib.parse.quote(q))
                    with urllib.request.urlopen(url, timeout=5) as r:
                        res = json.load(r)
                    return {tuple(sorted(x['metric'].items())): float(x['value'][1])
                            for x in res['data']['result']}

                want = {
                    'up{job="gradwatch"}': 1.0,
                    'gradwatch_run_last_step{run="job \\"a\\"\\\\b"}': 41.0,
                    'gradwatch_lines_ingested_total{transport="http"}': 41.0,
                    'gradwatch_lines_rejected_total{transport="http",reason="malformed_json"}': 1.0,
                    'sum(gradwatch_alerts_total{detector="nonfinite"})': 1.0,
                }
                got = {}
                deadline = time.time() + 90
                while time.time() < deadline and got != want:
                    if prom.poll() is not None:
                        break
                    for q in want:
                        try:
                            r = query(q)
                        except OSError:
                            continue
                        if len(r) == 1:
                            got[q] = list(r.values())[0]
                    time.sleep(0.5)
                with open(os.path.join(tmp, 'prometheus.log'), 'rb') as f:
                    plog = f.read().decode('utf-8', 'replace')[-3000:]
                self.assertEqual(got, want, plog)
                # the label value with a quote and a backslash arrived intact
                r = query('gradwatch_run_lr')
                self.assertIn(('__name__', 'gradwatch_run_lr'), list(r)[0])
                self.assertEqual(sorted(dict(k)['run'] for k in r), ['job "a"\\b'])
        finally:
            if prom and prom.poll() is None:
                prom.terminate()
                try:
                    prom.wait(20)
                except subprocess.TimeoutExpired:
                    prom.kill()
                    prom.wait()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    unittest.main()
