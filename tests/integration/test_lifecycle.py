"""Every libuv handle is closed through its owner (docs/architecture.md,
"Starting and stopping").  main.c checks uv_loop_close() at exit: a handle
left open is logged as "exit with libuv handles still open" and the exit
status is 1; a handle left active keeps the loop from ending, so the daemon
does not stop at all.  These tests give every part something to close:

- gradwatchd with every transport (Unix, TCP, UDP, HTTP), two followed
  files, two webhook sinks (one answering, one hanging with a request in
  flight) and retention on, with connections open on each transport at
  SIGTERM, stops with exit 0 and without that line;
- a start that fails half-way (the UDP port is taken, after the HTTP
  server, the outbox, retention and the other listeners started) exits 1
  with its reason, and closes what had started just as cleanly.
"""
import json
import os
import socket
import subprocess
import unittest

from gwtest import Daemon, free_port, lines, wait_for
from receiver import Receiver

LEAK = 'handles still open'


class Lifecycle(unittest.TestCase):
    def setUp(self):
        self.ok = Receiver()
        self.hang = Receiver()
        self.hang.mode = 'hang'

    def tearDown(self):
        self.ok.close()
        self.hang.close()

    def config(self, d):
        self.followed = [os.path.join(d.dir, 'job-a.log'), os.path.join(d.dir, 'job-b.log')]
        for p in self.followed:
            with open(p, 'wb') as f:
                f.write(lines('follow-' + os.path.basename(p), range(1, 21)))
        return {
            'follow': [{'path': p, 'run': 'follow-%d' % i, 'poll_ms': 50}
                       for i, p in enumerate(self.followed)],
            'sinks': [{'type': 'webhook', 'name': 'ok', 'url': self.ok.url + '/hook'},
                      {'type': 'webhook', 'name': 'hung', 'url': self.hang.url + '/hook',
                       'timeout_ms': 60000}],
            'retention': {'max_age': '30d', 'check_every': '1s'},
        }

    def test_everything_on_stops_clean(self):
        d = Daemon()
        d.config = self.config(d)
        with d:
            # every transport carries lines; a non-finite loss raises an
            # alert, so both sinks get a request (one never answered)
            d.send_unix(lines('unix', range(1, 11)))
            d.send_tcp(lines('tcp', range(1, 11)))
            d.send_udp([lines('udp', [s]) for s in range(1, 11)])
            status, _ = d.post('/v1/ingest', lines('http', range(1, 11)))
            self.assertEqual(status, 200)
            d.send_tcp(b'{"run":"alerting","step":1,"loss":NaN,"grad_norm":1.0}\n')
            self.ok.wait(1)
            self.hang.wait(1)
            wait_for(lambda: d.stats()['transports']['follow']['bytes'] > 0, 60,
                     what='the followed files to be read')
            # connections still open at SIGTERM: an idle TCP one, a Unix one
            # in the middle of a line, an HTTP keep-alive one
            tcp = socket.create_connection(('127.0.0.1', d.port))
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.connect(d.sock)
            unix.sendall(b'{"run":"unix","step":11,')
            http = socket.create_connection(('127.0.0.1', d.http_port))
            http.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
            self.assertIn(b'200', http.recv(65536))
            with open(self.followed[0], 'ab') as f:
                f.write(lines('follow-0', range(21, 31)))
            try:
                rc = d.stop()   # asserts exit 0 after SIGTERM
            finally:
                for s in (tcp, unix, http):
                    s.close()
            self.assertEqual(rc, 0)
            log = d.logtext()
            self.assertNotIn(LEAK, log)
            self.assertIn('stopped', log)
            # the run in the middle of a line was parsed at close, the alert
            # to the hung sink waits in the database for the next start
            self.assertEqual(d.sql("SELECT count(*) FROM deliveries WHERE sink = 'hung' "
                                   "AND state = 'pending'")[0][0], 1)

    def test_failed_start_closes_what_started(self):
        d = Daemon()
        d.config = self.config(d)
        taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        taken.bind(('127.0.0.1', d.port))
        try:
            d.start(wait=False)
            rc = d.proc.wait(30)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait()
            raise AssertionError('gradwatchd did not exit after a failed start:\n' + d.logtext())
        finally:
            taken.close()
            d.log.close()
            d.proc = None
        log = d.logtext()
        self.assertEqual(rc, 1, log)
        self.assertIn('udp 127.0.0.1:%d' % d.port, log)
        self.assertNotIn(LEAK, log)
        self.assertNotIn('AddressSanitizer', log)
        d.close()


if __name__ == '__main__':
    unittest.main()
