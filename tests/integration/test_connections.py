"""Hostile and careless clients on the connection level: a flood of idle
stream connections cannot lock out a job (per-transport limits, idle
eviction, idle time-out), refused connections hear why, HTTP deadlines are
not extended by trickling bytes, and /healthz and /metrics answer from a
reserve when HTTP is full."""
import json
import resource
import selectors
import socket
import time
import unittest

from gwtest import Daemon, read_all, wait_for


def raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def http_get(port, path, timeout=10):
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % path).encode())
    head = s.recv(65536)
    s.close()
    return int(head.split(b' ')[1])


class Connections(unittest.TestCase):
    def test_idle_tcp_flood_does_not_lock_out_a_job(self):
        if raise_fd_limit(5000) < 4500:
            self.skipTest('cannot open 2,000 connections here (RLIMIT_NOFILE)')
        cfg = {'limits': {'max_connections': 1024, 'stream_evict_idle_ms': 1000}}
        with Daemon(config=cfg) as d:
            idle = []
            for _ in range(2000):
                idle.append(socket.create_connection(('127.0.0.1', d.port)))
            # the Unix socket has its own limit: a job there is unaffected
            d.send_unix(b'{"run":"job","step":1,"loss":1}\n')
            d.wait_committed("SELECT count(*) FROM records", 1)
            # beyond the limit, connections were told why, not dropped silently
            # (which ones is the kernel's accept order: look at all of them)
            sel = selectors.DefaultSelector()
            for s in idle:
                sel.register(s, selectors.EVENT_READ)
            told = {}
            deadline = time.monotonic() + 60
            while len(told) < 2000 - 1024 and time.monotonic() < deadline:
                for key, _ in sel.select(timeout=1):
                    told[key.fileobj] = key.fileobj.recv(4096)
                    sel.unregister(key.fileobj)
            sel.close()
            self.assertEqual(len(told), 2000 - 1024)
            for line in told.values():
                # refused, or an older idle one closed to make room for it
                self.assertIn(json.loads(line.splitlines()[0])['error'],
                              ('too_many_connections', 'idle_evicted'))
            # once the idle ones are old enough, a new TCP job gets in
            time.sleep(1.2)   # the eviction age under test (stream_evict_idle_ms)
            with socket.create_connection(('127.0.0.1', d.port)) as s:
                s.sendall(b'{"run":"job","step":2,"loss":1}\n')
                s.shutdown(socket.SHUT_WR)
                self.assertEqual(read_all(s), b'')
            d.wait_committed("SELECT count(*) FROM records", 2)
            self.assertEqual(d.get('/healthz')[0], 200)
            for s in idle:
                s.close()

    def test_idle_timeout(self):
        with Daemon(config={'limits': {'stream_idle_timeout_ms': 1000}}) as d:
            with socket.create_connection(('127.0.0.1', d.port)) as s:
                s.sendall(b'{"run":"r","step":1,"loss":1}\n')
                ans = read_all(s, timeout=30)
            self.assertEqual(json.loads(ans.splitlines()[0])['error'], 'idle_timeout')
            d.wait_committed("SELECT count(*) FROM records", 1)

    def test_trickling_an_unfinished_line_is_idle(self):
        # issue 22 item 4 (slowloris): connections that send a byte now and
        # then but never end a line held the transport full for good
        cfg = {'limits': {'max_connections': 8, 'stream_evict_idle_ms': 1000}}
        with Daemon(config=cfg) as d:
            slow = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(8)]
            for s in slow:
                s.connect(d.sock)
                s.sendall(b'{"run":"slow"')
            job_in = False
            deadline = time.monotonic() + 30
            while not job_in and time.monotonic() < deadline:
                for s in slow:
                    try:
                        s.sendall(b' ')        # a byte: not a line
                    except OSError:
                        pass
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as j:
                    j.connect(d.sock)
                    try:
                        j.sendall(b'{"run":"job","step":1,"loss":1}\n')
                        j.shutdown(socket.SHUT_WR)
                        job_in = read_all(j, timeout=30) == b''   # no error line: taken
                    except OSError:
                        pass                                      # refused and closed
                if not job_in:
                    time.sleep(0.3)
            self.assertTrue(job_in, 'a job stayed locked out by connections trickling bytes')
            d.wait_committed("SELECT count(*) FROM runs WHERE name = 'job'", 1)
            evicted = 0
            for s in slow:
                s.setblocking(False)
                try:
                    evicted += b'idle_evicted' in s.recv(4096)
                except OSError:
                    pass
                s.close()
            self.assertGreaterEqual(evicted, 1)

    def test_line_deadline(self):
        with Daemon(config={'limits': {'stream_line_timeout_ms': 1000}}) as d:
            # lines that end, slowly: never cut
            with socket.create_connection(('127.0.0.1', d.port)) as ok:
                with socket.create_connection(('127.0.0.1', d.port)) as bad:
                    bad.sendall(b'{"run":"r","step":2,')
                    bad.settimeout(0.3)
                    answer = b''
                    deadline = time.monotonic() + 30
                    step = 1
                    while not answer and time.monotonic() < deadline:
                        ok.sendall(b'{"run":"r","step":%d,"loss":1}\n' % step)
                        step += 1
                        try:
                            bad.sendall(b' ')
                            answer = bad.recv(4096)
                        except socket.timeout:
                            pass
                        except OSError:
                            break
                    self.assertEqual(json.loads(answer.splitlines()[0])['error'], 'line_timeout')
                ok.sendall(b'{"run":"r","step":%d,"loss":1}\n' % step)
                ok.shutdown(socket.SHUT_WR)
                self.assertEqual(read_all(ok, timeout=30), b'')   # never cut
            d.wait_committed("SELECT count(*) FROM records", step)
            self.assertIn('limits.stream_line_timeout_ms ago and not finished', d.logtext())

    def test_trickling_bytes_do_not_extend_the_header_deadline(self):
        with Daemon(config={'limits': {'http_header_timeout_ms': 1500}}) as d:
            s = socket.create_connection(('127.0.0.1', d.http_port), timeout=30)
            request = b'GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 200 + b'\r\n\r\n'
            answer = b''
            for i in range(len(request)):
                try:
                    s.sendall(request[i:i + 1])
                except OSError:
                    break
                s.settimeout(0.1)
                try:
                    answer = s.recv(4096)
                except socket.timeout:
                    continue
                if answer:
                    break
            s.close()
            # the whole header would take 20+ s at this pace; the deadline cut it
            self.assertTrue(answer.startswith(b'HTTP/1.1 408 '), answer[:80])
            self.assertLess(i, len(request) - 1)

    def test_http_full_keeps_healthz_and_metrics(self):
        # the held connections send nothing: the header timeout (10 s by
        # default) would close them if the test took that long
        cfg = {'limits': {'max_connections': 8, 'http_reserved_connections': 2,
                          'http_header_timeout_ms': 600000}}
        with Daemon(config=cfg) as d:
            held = [socket.create_connection(('127.0.0.1', d.http_port)) for _ in range(8)]
            # no request is sent on them: the daemon has accepted all eight
            # once an ordinary request is turned away
            wait_for(lambda: http_get(d.http_port, '/v1/runs') == 503, 60,
                     'the eight idle connections to fill the HTTP limit')
            self.assertEqual(http_get(d.http_port, '/healthz'), 200)
            self.assertEqual(http_get(d.http_port, '/metrics'), 200)
            self.assertEqual(http_get(d.http_port, '/v1/runs'), 503)
            more = [socket.create_connection(('127.0.0.1', d.http_port)) for _ in range(2)]
            s = socket.create_connection(('127.0.0.1', d.http_port), timeout=10)
            head = s.recv(4096)
            self.assertTrue(head.startswith(b'HTTP/1.1 503 '), head)
            self.assertIn(b'Retry-After', head)
            for x in held + more + [s]:
                x.close()
            # once they are gone, everything answers again
            wait_for(lambda: http_get(d.http_port, '/v1/runs') == 200, 60,
                     '/v1/runs to answer once the connections closed')

    def test_clients_that_never_read_their_answers_do_not_hold_http(self):
        # a client that asks and never reads held its connection for good
        # (the answer's write never finished; no deadline covered it): as
        # many as max_connections locked HTTP out for as long as they
        # liked; an answer now has http_body_timeout_ms to be taken
        cfg = {'limits': {'max_connections': 4, 'http_reserved_connections': 0,
                          'http_body_timeout_ms': 1000}}
        with Daemon(config=cfg) as d:
            held = []
            for _ in range(4):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
                s.connect(('127.0.0.1', d.http_port))
                s.sendall(b'GET /static/uPlot.iife.min.js HTTP/1.1\r\nHost: x\r\n\r\n' * 200)
                held.append(s)
            # until the deadline the server is full; then the stuck
            # answers are dropped and a new client is served
            def served():
                try:
                    return http_get(d.http_port, '/v1/runs', timeout=5) == 200
                except OSError:
                    return False
            wait_for(served, 60, 'a new client served once the stuck answers are dropped',
                     interval=0.1)
            self.assertIn('did not take', d.logtext())
            for s in held:
                s.close()

if __name__ == '__main__':
    unittest.main()
