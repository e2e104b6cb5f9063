"""Fleet shipping against a real PostgreSQL (pgserver.py: initdb in a
temporary directory, pg_ctl on a loopback port).

Three gradwatchd ship to one database; every record row in PostgreSQL is
compared with the row in its node's SQLite, column by column, and so are
the events, runs and alerts.  Then the faults: PostgreSQL stopped under
load and started again, a daemon killed with SIGKILL between a batch's
commit in PostgreSQL and its cursor in SQLite (the test hook
GRADWATCH_FAULT_CRASH_SHIP) and at a random moment, and the network to
PostgreSQL held by a proxy: after each, every committed record is in
PostgreSQL exactly once, and the node kept committing what it was sent
while PostgreSQL was away (the time each batch took to commit is printed,
beside the time without faults: measured, not asserted).
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
from gwtest import Daemon, lines, need_fault_hooks, wait_for  # noqa: E402
from pgserver import SKIP, PgServer, StallProxy, wait_pg  # noqa: E402

REC_COLS = ('id, run, seg, step, line, ts, recv, loss, grad_norm, lr, throughput, nonfinite, '
            'extra, rank')
SQLITE_RECORDS = ('SELECT r.id, n.name, r.seg, r.step, r.line, r.ts, r.recv, r.loss, r.grad_norm, '
                  'r.lr, r.throughput, r.nonfinite, r.extra, r.rank FROM records r '
                  'JOIN runs n ON n.id = r.run_id ORDER BY r.id')


def norm(v):
    """A value as text both sides agree on: numbers by their float value."""
    if v is None:
        return None
    try:
        f = float(v)
        return repr(f)
    except (TypeError, ValueError):
        return str(v)


def nan_run(run, n, at=None):
    """n lines of run with a NaN loss at step `at` (default: in the middle;
    an alert, resolved by the finite steps after it unless it is near the
    end), and a checkpoint event."""
    at = at or n // 2
    out = []
    for s in range(1, n + 1):
        loss = 'NaN' if s == at else '%.4f' % (2.0 - s * 1e-4)
        out.append('{"run":"%s","step":%d,"loss":%s,"grad_norm":0.5,"lr":0.001}' % (run, s, loss))
    out.append('{"run":"%s","step":%d,"event":"checkpoint_saved","path":"/ck/%d"}' % (run, n, n))
    return ('\n'.join(out) + '\n').encode()


@unittest.skipIf(SKIP, 'PostgreSQL is not installed (GW_ALLOW_NO_POSTGRESQL=1)')
class FleetTest(unittest.TestCase):
    def setUp(self):
        self.pg = PgServer()
        self.daemons = []
        self.proxy = None

    def tearDown(self):
        for d in self.daemons:
            d.close(quiet=True)
        if self.proxy:
            self.proxy.close()
        self.pg.close()

    def node(self, name, dsn=None, env=None, workdir=None, **fleet):
        fl = dict({'postgresql': dsn or self.pg.dsn, 'node': name, 'interval': '100ms'}, **fleet)
        cfg = {'fleet': {k: v for k, v in fl.items() if v is not None}}
        d = Daemon(workdir=workdir, config=cfg, env=env)
        self.daemons.append(d)
        return d.start()

    # ---- comparisons ------------------------------------------------------------------

    def assert_records_equal(self, d, name):
        mine = [tuple(norm(v) for v in row) for row in d.sql(SQLITE_RECORDS)]
        theirs = [tuple(norm(v) for v in row) for row in self.pg.psql(
            "SELECT %s FROM gw_records WHERE node = '%s' ORDER BY id" % (REC_COLS, name))]
        self.assertEqual(len(theirs), len(mine), '%s: records in PostgreSQL' % name)
        for a, b in zip(mine, theirs):
            self.assertEqual(a, b, '%s: record %s differs' % (name, a[0]))
        dup = self.pg.scalar("SELECT count(*) - count(DISTINCT (run, seg, step, line)) "
                             "FROM gw_records WHERE node = '%s'" % name)
        self.assertEqual(dup, '0', '%s: a record is in PostgreSQL twice' % name)

    def assert_rest_equal(self, d, name):
        ev = d.sql('SELECT e.id, n.name, e.step, e.name, e.attrs FROM events e '
                   'JOIN runs n ON n.id = e.run_id ORDER BY e.id')
        pev = self.pg.psql("SELECT id, run, step, name, attrs FROM gw_events WHERE node = '%s' "
                           "ORDER BY id" % name)
        self.assertEqual([tuple(norm(v) for v in r) for r in ev],
                         [tuple(norm(v) for v in r) for r in pev], '%s: events' % name)
        runs = d.sql('SELECT name, last_seg, last_step FROM runs ORDER BY name')
        pruns = self.pg.psql("SELECT name, last_seg, last_step FROM gw_runs WHERE node = '%s' "
                             "ORDER BY name" % name)
        self.assertEqual([tuple(norm(v) for v in r) for r in runs],
                         [tuple(norm(v) for v in r) for r in pruns], '%s: runs' % name)
        al = d.sql('SELECT a.id, n.name, a.detector, a.severity, a.state, a.version FROM alerts a '
                   'JOIN runs n ON n.id = a.run_id ORDER BY a.id')
        pal = self.pg.psql("SELECT id, run, detector, severity, state, version FROM gw_alerts "
                           "WHERE node = '%s' ORDER BY id" % name)
        self.assertEqual([tuple(norm(v) for v in r) for r in al],
                         [tuple(norm(v) for v in r) for r in pal], '%s: alerts' % name)

    def wait_shipped(self, d, name, timeout=120):
        n = d.sql('SELECT count(*) FROM records')[0][0]
        wait_pg(self.pg, "SELECT count(*) FROM gw_records WHERE node = '%s'" % name, n, timeout,
                '%d records of %s in PostgreSQL' % (n, name))

    def metric(self, d, name):
        for line in d.get('/metrics')[1].splitlines():
            if line.startswith(name + ' '):
                return float(line.split()[1])
        return None

    def runs_text(self, d):
        r = subprocess.run([gwtest.GRADWATCH, 'runs', '--url', 'http://127.0.0.1:%d' % d.http_port],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        return r.stdout.decode()

    def timed_batch(self, d, run, first, n):
        """Send n lines and wait until SQLite committed them: seconds taken."""
        want = d.sql('SELECT count(*) FROM records')[0][0] + n
        t0 = time.monotonic()
        d.send_tcp(lines(run, range(first, first + n)))
        d.wait_committed('SELECT count(*) FROM records', want, timeout=120)
        return time.monotonic() - t0

    # ---- the tests ----------------------------------------------------------------------

    def test_three_nodes_every_row(self):
        # one node reads its DSN from a file, with a password that must
        # never reach a log
        secret_dir = os.path.join(self.pg.tmp, 'secret')
        os.makedirs(secret_dir)
        dsn_file = os.path.join(secret_dir, 'dsn')
        with open(dsn_file, 'w') as f:
            f.write(self.pg.dsn.replace('postgres@', 'postgres:Sekr1tPw@') + '\n')
        ds = [self.node('node-a'), self.node('node-b'),
              self.node('node-c', postgresql_file=dsn_file, postgresql=None)]
        for i, d in enumerate(ds):
            d.send_tcp(nan_run('train-%d' % i, 400) + lines('eval-%d' % i, range(1, 301)))
        for i, d in enumerate(ds):
            d.wait_committed('SELECT count(*) FROM records', 700)
            wait_for(lambda d=d: d.sql('SELECT count(*) FROM alerts')[0][0] >= 1, 60, 'an alert')
        for i, d in enumerate(ds):
            name = 'node-%s' % 'abc'[i]
            self.wait_shipped(d, name)
            wait_pg(self.pg, "SELECT count(*) FROM gw_alerts WHERE node = '%s'" % name,
                    d.sql('SELECT count(*) FROM alerts')[0][0])
            wait_pg(self.pg, "SELECT count(*) FROM gw_events WHERE node = '%s'" % name,
                    d.sql('SELECT count(*) FROM events')[0][0])
            wait_for(lambda d=d: self.metric(d, 'gradwatch_fleet_backlog_rows') == 0, 60,
                     'backlog 0 in /metrics')
            self.assert_records_equal(d, name)
            self.assert_rest_equal(d, name)
            self.assertEqual(self.metric(d, 'gradwatch_fleet_up'), 1)
            self.assertGreaterEqual(self.metric(d, 'gradwatch_fleet_batches_total'), 1)
        self.assertEqual(self.pg.scalar('SELECT count(DISTINCT node) FROM gw_runs'), '3')
        self.assertNotIn('Sekr1tPw', ds[2].logtext())
        self.assertIn('credentials redacted', ds[2].logtext())

    def test_fleet_view_reads_every_node(self):
        ds = [self.node('node-%d' % i) for i in range(3)]
        for i, d in enumerate(ds):
            d.send_tcp(lines('steady-%d' % i, range(1, 301)))
        ds[1].send_tcp(nan_run('broken', 200, at=195))
        for i, d in enumerate(ds):
            d.wait_committed('SELECT count(*) FROM records', 300 + (200 if i == 1 else 0))
            self.wait_shipped(d, 'node-%d' % i)
        wait_pg(self.pg, "SELECT count(*) FROM gw_alerts WHERE state = 'open'", 1)
        v = Daemon(args=['--fleet-view', self.pg.dsn])
        self.daemons.append(v)
        v.start()
        st, body = v.get('/v1/runs')
        self.assertEqual(st, 200, body)
        runs = body['runs']
        self.assertEqual(sorted(r['run'] for r in runs),
                         ['node-0/steady-0', 'node-1/broken', 'node-1/steady-1', 'node-2/steady-2'])
        # newest trouble first: the run with the open alert leads
        self.assertEqual(runs[0]['run'], 'node-1/broken')
        self.assertEqual(runs[0]['open_alerts'], 1)
        self.assertEqual(runs[0]['open_critical'], 1)
        self.assertEqual({r['state'] for r in runs}, {'live'})
        st, body = v.get('/v1/runs?node=node-1')
        self.assertEqual(sorted(r['name'] for r in body['runs']), ['broken', 'steady-1'])
        self.assertEqual(v.get('/v1/runs?state=ended')[1]['runs'], [])
        self.assertEqual(v.get('/v1/runs?state=asleep')[0], 400)
        # one run: as a node's API answers it
        st, run = v.get('/v1/runs/node-1%2Fbroken')
        self.assertEqual(st, 200, run)
        self.assertEqual(run['last_step'], 200)
        self.assertEqual(run['segments'][0]['records'], 200)
        st, al = v.get('/v1/runs/node-1%2Fbroken/alerts')
        self.assertEqual(st, 200, al)
        [a] = al['alerts']
        self.assertEqual((a['detector'], a['state'], a['run']), ('nonfinite', 'open', 'node-1/broken'))
        self.assertEqual(v.get('/v1/alerts/' + a['id'])[1]['id'], a['id'])
        mine = ds[1].get('/v1/runs/broken/records?max_points=0')[1]
        st, rec = v.get('/v1/runs/node-1%2Fbroken/records?max_points=100000')
        self.assertEqual(st, 200, rec)
        self.assertEqual(rec['step'], mine['step'])
        self.assertEqual(rec['loss'], mine['loss'])
        self.assertEqual(rec['nonfinite'], mine['nonfinite'])
        self.assertEqual(v.get('/v1/runs/node-9%2Fnothing')[0], 404)
        st, nodes = v.get('/v1/nodes')
        self.assertEqual([n['node'] for n in nodes['nodes']], ['node-0', 'node-1', 'node-2'])
        # the pages are served as a node serves them
        st, page = v.get('/runs/node-1%2Fbroken')
        self.assertEqual(st, 200)
        self.assertIn('<script', page)
        # auth as the daemon's: a read token, or 401
        va = Daemon(args=['--fleet-view', 'env:GW_TEST_FLEET_DSN'],
                    config={'auth': {'read_tokens_file': 'read.tokens'}},
                    env={'GW_TEST_FLEET_DSN': self.pg.dsn})
        self.daemons.append(va)
        with open(os.path.join(va.dir, 'read.tokens'), 'w') as f:
            f.write('fleet-read-token-0123456789\n')
        va.start()
        c = http.client.HTTPConnection('127.0.0.1', va.http_port, timeout=30)
        c.request('GET', '/v1/runs')
        self.assertEqual(c.getresponse().status, 401)
        c.close()
        c = http.client.HTTPConnection('127.0.0.1', va.http_port, timeout=30)
        c.request('GET', '/v1/runs', headers={'Authorization': 'Bearer fleet-read-token-0123456789'})
        r = c.getresponse()
        self.assertEqual((r.status, len(json.loads(r.read())['runs'])), (200, 4))
        c.close()

    def alert_latency(self, d, run):
        """Seconds from sending a NaN to its alert committed in the node's SQLite."""
        want = d.sql('SELECT count(*) FROM alerts')[0][0] + 1
        t0 = time.monotonic()
        d.send_tcp(nan_run(run, 40, at=40))
        d.wait_committed('SELECT count(*) FROM alerts', want, timeout=60)
        return time.monotonic() - t0

    def test_postgresql_stopped_under_load(self):
        d = self.node('node-a')
        base = [self.timed_batch(d, 'load', 1 + 500 * i, 500) for i in range(3)]
        alert_up = self.alert_latency(d, 'nan-up')
        self.wait_shipped(d, 'node-a')
        self.pg.stop()
        down = [self.timed_batch(d, 'load', 1501 + 500 * i, 500) for i in range(6)]
        alert_down = self.alert_latency(d, 'nan-down')
        wait_for(lambda: self.metric(d, 'gradwatch_fleet_up') == 0, 60, 'fleet_up 0')
        wait_for(lambda: (self.metric(d, 'gradwatch_fleet_backlog_rows') or 0) >= 3000, 60,
                 'the backlog in /metrics')
        self.assertGreater(self.metric(d, 'gradwatch_fleet_lag_seconds'), 0)
        out = self.runs_text(d)
        self.assertRegex(out, r'shipping to PostgreSQL as node node-a: DOWN, \d+ rows behind, '
                              r'lag [0-9.]+ s; last error: ')
        self.pg.start()
        self.wait_shipped(d, 'node-a')
        wait_for(lambda: self.metric(d, 'gradwatch_fleet_backlog_rows') == 0, 60, 'backlog 0')
        self.assert_records_equal(d, 'node-a')
        self.assert_rest_equal(d, 'node-a')
        self.assertIn('shipping to PostgreSQL as node node-a: up, 0 rows behind, lag 0.0 s\n',
                      self.runs_text(d))
        print('\ncommit time per 500-line batch: PostgreSQL up %.3f s (median), down %.3f s; '
              'NaN to alert committed: up %.3f s, down %.3f s'
              % (sorted(base)[1], sorted(down)[3], alert_up, alert_down), file=sys.stderr)

    def test_sigkill_between_batch_and_cursor(self):
        need_fault_hooks(self)
        d = self.node('node-k', env={'GRADWATCH_FAULT_CRASH_SHIP': '2'}, batch_rows=300)
        d.send_tcp(lines('crash', range(1, 2001)))
        d.proc.wait(120)
        self.assertEqual(d.proc.returncode, -signal.SIGKILL, d.logtext())
        self.assertIn('GRADWATCH_FAULT_CRASH_SHIP', d.logtext())
        d.log.close()
        d.proc = None
        in_pg = int(self.pg.scalar("SELECT count(*) FROM gw_records WHERE node = 'node-k'"))
        self.assertGreater(in_pg, 0)
        # the same database again, without the hook: the rows of the batch
        # whose cursor was lost go again, and PostgreSQL drops them
        d2 = self.node('node-k', workdir=d.dir, batch_rows=300)
        d2.send_tcp(lines('crash', range(2001, 2501)))
        d2.wait_committed('SELECT count(*) FROM records', 2500)
        self.wait_shipped(d2, 'node-k')
        self.assert_records_equal(d2, 'node-k')

    def test_sigkill_at_random_under_load(self):
        d = self.node('node-r', batch_rows=200)
        stop = threading.Event()
        sent = [0]

        def feed():
            step = 1
            while not stop.is_set() and step < 20000:
                try:
                    d.send_tcp(lines('busy', range(step, step + 200)))
                except OSError:
                    return
                sent[0] = step + 199
                step += 200
        t = threading.Thread(target=feed)
        t.start()
        wait_for(lambda: int(self.pg.scalar("SELECT count(*) FROM gw_records", '0')) > 1000, 60,
                 'shipping under way', interval=0.2)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        stop.set()
        t.join()
        d.log.close()
        d.proc = None
        d2 = self.node('node-r', workdir=d.dir, batch_rows=200)
        self.wait_shipped(d2, 'node-r')
        self.assert_records_equal(d2, 'node-r')

    def test_a_new_database_under_an_old_node_name_is_told(self):
        d = self.node('node-x')
        d.send_tcp(lines('first', range(1, 301)))
        d.wait_committed('SELECT count(*) FROM records', 300)
        self.wait_shipped(d, 'node-x')
        d.stop()
        # the node set up again: a new database, the same name
        d2 = self.node('node-x')
        wait_for(lambda: 'another database under the same node name' in d2.logtext(), 60,
                 'the warning')
        self.assertEqual(self.pg.scalar("SELECT count(*) FROM gw_records WHERE node = 'node-x'"),
                         '300')

    def test_network_held(self):
        self.proxy = StallProxy(self.pg.port)
        dsn = 'postgresql://postgres@127.0.0.1:%d/gradwatch' % self.proxy.port
        d = self.node('node-h', dsn=dsn)
        self.timed_batch(d, 'held', 1, 500)
        self.wait_shipped(d, 'node-h')
        self.proxy.hold()
        # the node commits what it is sent while PostgreSQL is silent
        held = [self.timed_batch(d, 'held', 501 + 500 * i, 500) for i in range(4)]
        wait_for(lambda: (self.metric(d, 'gradwatch_fleet_backlog_rows') or 0) >= 2000, 60,
                 'the backlog while held')
        self.assertEqual(self.pg.scalar("SELECT count(*) FROM gw_records"), '500')
        self.proxy.release()
        self.wait_shipped(d, 'node-h')
        self.assert_records_equal(d, 'node-h')
        print('\ncommit time per 500-line batch while held: %.3f s (median)' % sorted(held)[2],
              file=sys.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
