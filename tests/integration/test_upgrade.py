"""Upgrading and downgrading the database under a real gradwatchd.

Upgrade: a database as the gradwatchd before schema 4 left it (alerts
raised, their webhook deliveries still pending because the receiver was
down) is opened by this gradwatchd: it is migrated, nothing is lost, and
the pending deliveries go out once.  The old database is made from one this
daemon wrote, taken back two steps (the ranks' tables, runs.writers, records.rank and
alerts.resolution dropped, user_version 3), which is what the daemon before that step wrote (checked by hand
against a build of main before the step: same tables, same rows).

Downgrade: a database written by a newer gradwatchd (its user_version, or
a module's schema version in meta, above what this one knows) is refused
at start with exit status 1 and a message naming the file and both
versions, and is left as it was; `gradwatch runs/alerts --db` refuse to
read it (exit 2).
"""
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCH, GRADWATCHD
from receiver import Daemon, Receiver, nan_incident, wait_for

STORE_SCHEMA = 7     # storage/schema.c: GW_STORE_SCHEMA_VERSION


def table_rows(path, sql):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


class Upgrade(unittest.TestCase):
    def setUp(self):
        self.rcv = Receiver()
        self.tmp = tempfile.mkdtemp(prefix='gwupgrade-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.addCleanup(self.rcv.close)

    def test_a_schema_3_database_with_pending_deliveries(self):
        port = self.rcv.port
        self.rcv.stop()
        sinks = [dict(type='webhook', name='hook', url='http://127.0.0.1:%d/h' % port,
                      retry_initial='100ms', retry_max='200ms')]
        d = Daemon(sinks, tmp=self.tmp)
        d.start()
        for i in range(3):
            d.send(*nan_incident('old%d' % i))
        wait_for(lambda: d.sink_stats()['hook']['retries'] >= 3, 60, 'failed attempts')
        d.stop()
        db = d.db
        alerts = table_rows(db, 'SELECT id, version, state FROM alerts ORDER BY id')
        pending = table_rows(db, "SELECT alert_id, version FROM deliveries WHERE state = 'pending' "
                                 "ORDER BY alert_id, version")
        self.assertEqual(len(alerts), 3)
        self.assertGreaterEqual(len(pending), 3)
        # back to schema 3: before alerts.resolution (4), the ranks'
        # tables, runs.writers and records.rank (5), the alerts'
        # acknowledgement and kind (6) and the runs' endings (7)
        con = sqlite3.connect(db)
        for col in ('ended_seg', 'ended_step', 'ended_reason', 'ended_at'):
            con.execute('ALTER TABLE runs DROP COLUMN ' + col)
        for col in ('kind', 'acked_at', 'acked_by', 'ack_note'):
            con.execute('ALTER TABLE alerts DROP COLUMN ' + col)
        con.execute('DROP TRIGGER rank_lines_summary')
        con.execute('DROP TABLE rank_lines')
        con.execute('DROP TABLE ranks')
        con.execute('ALTER TABLE runs DROP COLUMN writers')
        con.execute('ALTER TABLE records DROP COLUMN rank')
        con.execute('ALTER TABLE alerts DROP COLUMN resolution')
        con.execute('PRAGMA user_version = 3')
        con.commit()
        con.close()

        self.rcv.port = port
        self.rcv.start()
        d2 = Daemon(sinks, tmp=self.tmp)
        d2.db = db
        d2.start()
        try:
            wait_for(lambda: d2.sink_stats()['hook']['delivered'] == len(pending), 60,
                     'the pending deliveries')
            self.assertIn('the schema migrated to version %d' % STORE_SCHEMA, d2.logtext())
            # new alerts still work on the migrated database
            d2.send(*nan_incident('new'))
            wait_for(lambda: d2.sink_stats()['hook']['delivered'] == len(pending) + 1, 60,
                     "the new alert's delivery")
        finally:
            d2.stop()
        self.assertEqual(table_rows(db, 'PRAGMA user_version'), [(STORE_SCHEMA,)])
        self.assertEqual(table_rows(db, "SELECT id, version, state FROM alerts "
                                        "WHERE id IN (%s) ORDER BY id" %
                                    ','.join("'%s'" % a[0] for a in alerts)), alerts)
        self.assertEqual(table_rows(db, "SELECT count(*) FROM deliveries WHERE state != 'delivered'"),
                         [(0,)])
        # each pending delivery arrived once, with its delivery id
        got = [r['headers']['x-gradwatch-delivery'] for r in self.rcv.requests
               if r['answered'] == 'ok']
        for a, v in pending:
            self.assertEqual(got.count('%s-v%d' % (a, v)), 1, (a, v, got))
        self.assertEqual(table_rows(db, 'PRAGMA integrity_check'), [('ok',)])


class Downgrade(unittest.TestCase):
    def start_on(self, db):
        return subprocess.run([GRADWATCHD, '--db', db, '--socket', 'off', '--tcp', 'off',
                               '--udp', 'off', '--http', 'off'], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=30)

    def test_a_newer_database_is_refused_and_left_alone(self):
        tmp = tempfile.mkdtemp(prefix='gwdowngrade-')
        self.addCleanup(shutil.rmtree, tmp, True)
        db = os.path.join(tmp, 'gradwatch.db')
        # a database this gradwatchd made, then "written by a newer one"
        r = subprocess.Popen([GRADWATCHD, '--db', db, '--socket', 'off', '--tcp', 'off',
                              '--udp', 'off', '--http', 'off'], stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(db) and
                 table_rows(db, 'PRAGMA user_version') == [(STORE_SCHEMA,)], 60, 'the database')
        r.terminate()
        self.assertEqual(r.wait(30), 0)
        con = sqlite3.connect(db)
        con.execute('PRAGMA user_version = %d' % (STORE_SCHEMA + 1))
        con.commit()
        con.close()
        before = open(db, 'rb').read()
        out = self.start_on(db)
        self.assertEqual(out.returncode, 1)
        self.assertIn('%s has schema version %d; this gradwatchd knows up to %d (a newer '
                      'gradwatch wrote it)' % (db, STORE_SCHEMA + 1, STORE_SCHEMA),
                      out.stdout.decode())
        self.assertEqual(open(db, 'rb').read(), before)
        # and `gradwatch runs/alerts --db` refuse it too: they read it as if
        # it were their own schema, and answered
        for cmd in ('runs', 'alerts'):
            out = subprocess.run([GRADWATCH, cmd, '--db', db], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, timeout=30)
            self.assertEqual(out.returncode, 2, (cmd, out.stdout))
            self.assertEqual(out.stdout, b'')
            self.assertIn('%s has schema version %d; this gradwatch knows up to %d' %
                          (db, STORE_SCHEMA + 1, STORE_SCHEMA), out.stderr.decode())
        # a module's tables (the outbox) newer than this daemon knows
        con = sqlite3.connect(db)
        con.execute('PRAGMA user_version = %d' % STORE_SCHEMA)
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema:outbox'")
        con.commit()
        con.close()
        out = self.start_on(db)
        self.assertEqual(out.returncode, 1)
        self.assertIn('the outbox tables have version 99', out.stdout.decode())


if __name__ == '__main__':
    unittest.main()
