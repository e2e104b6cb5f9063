"""Runs leave the database: DELETE /v1/runs/{run}, POST /v1/prune and
`gradwatch prune` (older than a duration), retention.max_bytes (the oldest
idle runs go when the database is too big); a deleted run can be written
again from scratch; the ingest scope is needed when tokens are on."""
import json
import os
import sqlite3
import subprocess
import unittest

from gwtest import GRADWATCH, Daemon, wait_for
from receiver import SinkTestCase, nan_incident


def body(run, n, start=1, extras=0):
    def line(s):
        o = {'run': run, 'step': s, 'loss': 1.0 / s, 'grad_norm': 0.5}
        o.update(('metric_%d' % k, s * 1.000001 + k) for k in range(extras))
        return json.dumps(o) + '\n'
    return ''.join(line(s) for s in range(start, start + n)).encode()


def request(d, method, path):
    import http.client
    c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=60)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


def metric(d, name):
    for line in d.get('/metrics')[1].splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return None


class Retention(unittest.TestCase):
    def count(self, d, run):
        return d.sql("SELECT count(*) FROM records r JOIN runs n ON n.id = r.run_id WHERE n.name = ?",
                     (run,))[0][0]

    def test_delete_and_write_again(self):
        with Daemon() as d:
            d.post('/v1/ingest', body('gone', 100) + body('kept', 10))
            # an alert so the run has rows in every table
            d.post('/v1/ingest', b'{"run":"gone","step":101,"loss":NaN,"grad_norm":1}\n')
            self.assertEqual(request(d, 'DELETE', '/v1/runs/gone'), (200, {'deleted': ['gone']}))
            for table in ('records', 'events', 'segments', 'alerts'):
                self.assertEqual(d.sql("SELECT count(*) FROM %s t JOIN runs r ON r.id = t.run_id "
                                       "WHERE r.name = 'gone'" % table)[0][0], 0, table)
            self.assertEqual(d.sql("SELECT count(*) FROM runs WHERE name = 'gone'")[0][0], 0)
            self.assertEqual(d.get('/v1/runs/gone')[0], 404)
            self.assertEqual(self.count(d, 'kept'), 10)
            # a run the daemon does not have is a 404, not 'deleted'
            self.assertEqual(request(d, 'DELETE', '/v1/runs/gone'),
                             (404, {'error': 'no run named "gone"'}))
            self.assertEqual(request(d, 'DELETE', '/v1/runs/never-seen')[0], 404)
            # written again: a new run from segment 1, not a rewind of the old one
            self.assertEqual(d.post('/v1/ingest', body('gone', 5))[0], 200)
            self.assertEqual(self.count(d, 'gone'), 5)
            self.assertEqual(d.sql("SELECT max(seg) FROM records r JOIN runs n ON n.id = r.run_id "
                                   "WHERE n.name = 'gone'")[0][0], 1)
            # after a restart every run is dormant (its detector state not in
            # memory): it is still known and deleted
            d.stop()
            d.start()
            self.assertEqual(request(d, 'DELETE', '/v1/runs/kept'), (200, {'deleted': ['kept']}))
            self.assertEqual(self.count(d, 'kept'), 0)

    def test_prune_older_than(self):
        with Daemon() as d:
            d.post('/v1/ingest', body('old-1', 10) + body('old-2', 10))
            # the age under test, an hour, put into the database while the
            # daemon is stopped (a sleep and a cut-off of a second failed
            # when the machine took over a second to run the CLI)
            d.stop()
            con = sqlite3.connect(d.db)
            con.execute("UPDATE runs SET last_seen = last_seen - 3600 WHERE name LIKE 'old-%'")
            con.commit()
            con.close()
            d.start()
            d.post('/v1/ingest', body('new', 10))
            r = subprocess.run([GRADWATCH, 'prune', '--url', 'http://127.0.0.1:%d' % d.http_port,
                                '--older-than', '30m'], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(r.stdout.decode().split()), ['deleted', 'deleted', 'old-1', 'old-2'])
            self.assertEqual([self.count(d, x) for x in ('old-1', 'old-2', 'new')], [0, 0, 10])
            self.assertEqual(request(d, 'POST', '/v1/prune')[0], 400)
            r = subprocess.run([GRADWATCH, 'prune', '--url', 'http://127.0.0.1:%d' % d.http_port,
                                '--run', 'new'], stdout=subprocess.PIPE, timeout=60)
            self.assertEqual((r.returncode, r.stdout), (0, b'deleted new\n'))

    def test_max_bytes(self):
        cfg = {'tick_ms': 100,
               'limits': {'run_evict_idle_s': 1},
               'retention': {'max_bytes': 2 << 20, 'check_every': 1}}
        with Daemon(config=cfg) as d:
            for k in range(8):
                self.assertEqual(d.post('/v1/ingest', body('r%d' % k, 2000, extras=10))[0], 200)
            def used():
                pc, fc, ps = (d.sql('PRAGMA %s' % p)[0][0] for p in ('page_count', 'freelist_count', 'page_size'))
                return (pc - fc) * ps
            self.assertGreater(used(), 2 << 20)
            # once the runs are idle, the oldest go until the database fits
            wait_for(lambda: used() <= 2 << 20, timeout=120, what='retention to shrink the database')
            left = [r[0] for r in d.sql('SELECT name FROM runs ORDER BY name')]
            self.assertTrue(left and left == ['r%d' % k for k in range(8 - len(left), 8)], left)
            self.assertIn('retention.max_bytes', d.logtext())
            self.assertEqual(metric(d, 'gradwatch_retention_runs_deleted_total'), 8 - len(left))
            self.assertGreaterEqual(metric(d, 'gradwatch_retention_passes_total'), 1)

    def test_over_max_bytes_with_every_run_active_is_said_once(self):
        # nothing can go while every run is active; that was a warning on
        # every pass (each check_every: 1,440 a day by default) for as long
        # as it lasted
        cfg = {'limits': {'run_evict_idle_s': 3600},
               'retention': {'max_bytes': 1 << 20, 'check_every': 1}}
        with Daemon(config=cfg) as d:
            for k in range(3):
                self.assertEqual(d.post('/v1/ingest', body('busy%d' % k, 2000, extras=10))[0], 200)
            said = 'but every run left was active'
            wait_for(lambda: said in d.logtext(), 60, 'the warning')
            passes = metric(d, 'gradwatch_retention_passes_total')
            wait_for(lambda: metric(d, 'gradwatch_retention_passes_total') >= passes + 3, 60,
                     'three more passes')
            with open(d.log_path, encoding='utf-8', errors='replace') as f:
                self.assertEqual(f.read().count(said), 1)
            self.assertEqual(metric(d, 'gradwatch_retention_runs_deleted_total'), 0)
            self.assertEqual(len(d.sql('SELECT name FROM runs')), 3)



def outbox_rows(d, run):
    """(outbox rows, deliveries rows by state) of the run's alert events."""
    ob = d.sql("SELECT count(*) FROM outbox WHERE run = ?", (run,))[0][0]
    dv = dict(d.sql("SELECT d.state, count(*) FROM deliveries d JOIN outbox o ON "
                    "o.alert_id = d.alert_id AND o.version = d.version WHERE o.run = ? "
                    "GROUP BY d.state", (run,)))
    return ob, dv


class OutboxPruned(SinkTestCase):
    """The alert outbox's rows (one per alert event, one per event and
    sink) go with their run, but for what at-least-once delivery still
    needs: an event not delivered yet is delivered (after a restart too),
    then its rows go."""

    SINKS = [dict(type='webhook', name='hook', retry_initial='100ms', retry_max='200ms')]

    def sinks(self, port):
        return [dict(s, url='http://127.0.0.1:%d/h' % port) for s in self.SINKS]

    def test_delete_prunes_delivered_rows_and_keeps_pending_ones_until_delivered(self):
        port = self.rcv.port
        d = self.daemon(self.sinks(port))
        for run in ('gone', 'kept'):
            d.send(*nan_incident(run))
        for run in ('gone', 'kept'):
            wait_for(lambda: outbox_rows(d, run) == (1, {'delivered': 1}), 60,
                     'the alert of %s delivered' % run)
        # the receiver down: the next alert's delivery stays pending
        self.rcv.stop()
        d.send(*nan_incident('pend'))
        wait_for(lambda: d.sink_stats()['hook']['retries'] >= 1, 60, 'a failed attempt')
        self.assertEqual(metric(d, 'gradwatch_alerts_open{acked="false"}'), 3)
        for run in ('gone', 'pend'):
            self.assertEqual(request(d, 'DELETE', '/v1/runs/' + run), (200, {'deleted': [run]}))
        self.assertEqual(outbox_rows(d, 'gone'), (0, {}))
        self.assertEqual(outbox_rows(d, 'kept'), (1, {'delivered': 1}))
        ob, dv = outbox_rows(d, 'pend')
        self.assertEqual((ob, list(dv)), (1, ['pending']))
        # their alerts are no longer open
        self.assertEqual(metric(d, 'gradwatch_alerts_open{acked="false"}'), 1)
        # across a restart the pending one goes out once, then its rows go
        d.stop()
        self.rcv.port = port
        self.rcv.start()
        d.start()
        wait_for(lambda: outbox_rows(d, 'pend') == (0, {}), 60, "the pending event's rows to go")
        got = [r['json']['alert']['run'] for r in self.rcv.ok_requests()]
        self.assertEqual(got.count('pend'), 1, got)
        self.assertEqual(outbox_rows(d, 'kept'), (1, {'delivered': 1}))
        self.assertEqual(d.sql('PRAGMA integrity_check'), [('ok',)])

    def test_rows_left_by_runs_deleted_before_the_upgrade_go_at_the_migration(self):
        d = self.daemon(self.sinks(self.rcv.port))
        d.send(*nan_incident('old'))
        wait_for(lambda: outbox_rows(d, 'old') == (1, {'delivered': 1}), 60, 'the alert delivered')
        d.stop()
        # as a gradwatchd before outbox schema 2 deleted a run: its alerts
        # went, its outbox rows stayed
        import sqlite3
        con = sqlite3.connect(d.db)
        con.execute("DROP TRIGGER deliveries_of_deleted_alerts")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema:outbox'")
        con.execute("DELETE FROM alerts")
        con.commit()
        con.close()
        self.assertEqual(outbox_rows(d, 'old'), (1, {'delivered': 1}))
        d.start()
        self.assertEqual(outbox_rows(d, 'old'), (0, {}))
        self.assertEqual(d.sql("SELECT value FROM meta WHERE key = 'schema:outbox'"), [('2',)])


if __name__ == '__main__':
    unittest.main()
