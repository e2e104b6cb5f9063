"""A full disk, for real: the database on a small tmpfs.

What the daemon acknowledged is on disk; what it could not commit is
answered with the cause (507, SQLITE_FULL), never with a hang; reads say
why they cannot be answered; /healthz turns degraded; once space is back,
commits resume by themselves and nothing acknowledged is missing; a
shutdown that has to give up queued lines says so loudly and exits
non-zero.  Needs root to mount a tmpfs (skipped with a message
otherwise)."""
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import tempfile
import unittest

from gwtest import Daemon


def mount_tmpfs(path, size):
    return subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%s' % size, 'tmpfs', path],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT).returncode == 0


def post(d, body, timeout=60):
    c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=timeout)
    try:
        c.request('POST', '/v1/ingest', body=body)
        r = c.getresponse()
        return r.status, json.loads(r.read() or b'{}')
    finally:
        c.close()


def batch(k, n=2000):
    return ''.join('{"run":"r%d","step":%d,"loss":%f,"grad_norm":0.5,"pad":"%s"}\n'
                   % (k, s, 1.0 / s, 'x' * 0) for s in range(1, n + 1)).encode()


class DiskFull(unittest.TestCase):
    def setUp(self):
        self.mnt = tempfile.mkdtemp(prefix='gw-tmpfs-')
        if not mount_tmpfs(self.mnt, '3m'):
            os.rmdir(self.mnt)
            self.skipTest('cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)')

    def tearDown(self):
        subprocess.run(['umount', '-l', self.mnt])
        os.rmdir(self.mnt)

    def test_full_disk_then_space_again(self):
        d = Daemon(args=['--db', os.path.join(self.mnt, 'gw.db')])
        with d:
            acked = {}
            full = None
            for k in range(200):
                status, res = post(d, batch(k))
                if status == 200:
                    acked[k] = res['accepted']
                    continue
                full = (status, res)
                break
            self.assertIsNotNone(full, 'the 3 MiB disk never filled')
            self.assertEqual(full[0], 507, full)
            self.assertIn('SQLITE_FULL', full[1]['error'])
            self.assertGreater(len(acked), 0)
            # everything now is answered with the cause, nothing hangs
            self.assertEqual(post(d, batch(999, 10))[0], 507)
            status, health = d.get('/healthz')
            self.assertEqual((status, health['status']), (503, 'degraded'))
            self.assertIn('full', health['store'])
            status, body = d.get('/v1/runs')
            self.assertEqual(status, 503)
            self.assertIn('cannot be written', body['error'])
            # space again: commits resume on their own
            self.assertEqual(subprocess.run(['mount', '-o', 'remount,size=64m', self.mnt]).returncode, 0)
            for _ in range(300):
                if d.get('/healthz')[0] == 200:
                    break
                import time
                time.sleep(0.1)
            self.assertEqual(d.get('/healthz')[0], 200)
            status, res = post(d, batch(1000, 10))
            self.assertEqual(status, 200, res)
            acked[1000] = 10
            d.stop()
        con = sqlite3.connect(os.path.join(self.mnt, 'gw.db'))
        self.assertEqual(con.execute('PRAGMA integrity_check').fetchone()[0], 'ok')
        for k, n in acked.items():
            got = con.execute("SELECT count(*) FROM records r JOIN runs n ON n.id = r.run_id "
                              "WHERE n.name = ?", ('r%d' % k,)).fetchone()[0]
            self.assertGreaterEqual(got, n, 'run r%d: %d acknowledged, %d stored' % (k, n, got))
        con.close()

    def test_shutdown_that_must_give_up_says_so(self):
        d = Daemon(args=['--db', os.path.join(self.mnt, 'gw.db')])
        d.start()
        try:
            for k in range(200):
                if post(d, batch(k))[0] != 200:
                    break
            # lines on the stream socket are queued, never acknowledged
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(d.sock)
                s.sendall(batch(5000, 50))
            rc = d.stop(signal.SIGTERM) if False else None
        finally:
            if d.proc and d.proc.poll() is None:
                d.proc.send_signal(signal.SIGTERM)
                rc = d.proc.wait(60)
                d.log.close()
                d.proc = None
        self.assertNotEqual(rc, 0)
        log = d.logtext()
        self.assertIn('LOST', log)
        self.assertIn('SQLITE_FULL', log)
        d.close()


if __name__ == '__main__':
    unittest.main()
