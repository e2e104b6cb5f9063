"""Integration tests of ingest and storage: the real gradwatchd in a temporary
directory, every transport, restarts, the durability contract, and every
bad-input case of docs/wire-format.md."""
import json
import os
import signal
import socket
import subprocess
import threading
import unittest

from gwtest import Daemon, lines, read_all, wait_for, GRADWATCHD, CORPUS


class Transports(unittest.TestCase):
    def setUp(self):
        self.d = Daemon().start()

    def tearDown(self):
        self.d.close()

    def test_every_transport_lands_in_sqlite(self):
        d = self.d
        d.send_unix(lines('via-unix', range(1, 501)))
        d.send_tcp(lines('via-tcp', range(1, 401)))
        # UDP: several lines per datagram, the last one without a newline
        data = lines('via-udp', range(1, 301)).split(b'\n')
        d.send_udp([b'\n'.join(data[i:i + 10]).rstrip(b'\n') for i in range(0, 300, 10)])
        status, body = d.post('/v1/ingest', lines('via-http', range(1, 201)))
        self.assertEqual(status, 200)
        self.assertEqual(body['accepted'], 200)
        self.assertEqual(body['rejected'], 0)
        self.assertTrue(body['committed'])
        # HTTP answered after the commit: its rows are there right now
        self.assertEqual(d.sql("SELECT count(*) FROM records r JOIN runs u ON u.id=r.run_id "
                               "WHERE u.name='via-http'")[0][0], 200)
        # streams are committed within the bounded delay (100 ms by default)
        q = ("SELECT count(*) FROM records r JOIN runs u ON u.id=r.run_id WHERE u.name='%s'")
        self.assertEqual(d.wait_committed(q % 'via-unix', 500), 500)
        self.assertEqual(d.wait_committed(q % 'via-tcp', 400), 400)
        self.assertEqual(d.wait_committed(q % 'via-udp', 300), 300)
        st = d.stats()['transports']
        self.assertEqual((st['unix']['accepted'], st['tcp']['accepted'], st['udp']['accepted'],
                          st['http']['accepted']), (500, 400, 300, 200))
        status, runs = d.get('/v1/runs')
        self.assertEqual(status, 200)
        self.assertEqual(sorted(r['run'] for r in runs['runs']),
                         ['via-http', 'via-tcp', 'via-udp', 'via-unix'])
        status, run = d.get('/v1/runs/via-tcp')
        self.assertEqual(status, 200)
        self.assertEqual(run['last_step'], 400)
        self.assertEqual(run['segments'][0]['reason'], 'start')
        self.assertAlmostEqual(run['last_values']['loss'], 2.4)

    def test_many_clients_at_once(self):
        socks = []
        for i in range(20):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.d.sock)
            socks.append(s)
        # interleave: every client sends its lines in pieces
        payloads = [lines('client-%d' % i, range(1, 201)) for i in range(20)]
        for off in range(0, max(map(len, payloads)), 997):
            for s, p in zip(socks, payloads):
                if off < len(p):
                    s.sendall(p[off:off + 997])
        for s in socks:
            s.close()
        self.assertEqual(self.d.wait_committed('SELECT count(*) FROM records', 4000), 4000)
        self.assertEqual(self.d.sql('SELECT count(DISTINCT run_id) FROM records')[0][0], 20)

    def test_run_names_need_encoding(self):
        name = 'team/exp 1+\u00e9'
        rec = json.dumps({'run': name, 'step': 1, 'loss': 1.0}).encode() + b'\n'
        self.assertEqual(self.d.post('/v1/ingest', rec)[0], 200)
        from urllib.parse import quote
        status, run = self.d.get('/v1/runs/' + quote(name, safe=''))
        self.assertEqual(status, 200, run)
        self.assertEqual(run['run'], name)
        self.assertEqual(self.d.get('/v1/runs/' + quote(name, safe='') + '/alerts')[0], 200)
        self.assertEqual(self.d.get('/v1/runs/nope')[0], 404)
        self.assertEqual(self.d.get('/v1/nothing')[0], 404)

    def test_http_keepalive_and_pipelining(self):
        body = lines('ka', range(1, 11))
        req = (b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n' % len(body)) + body
        req2 = b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
        with socket.create_connection(('127.0.0.1', self.d.http_port)) as s:
            s.sendall(req + req2 + req)   # three pipelined requests
            data = b''
            s.settimeout(30)
            while data.count(b'HTTP/1.1 ') < 3:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        parts = data.split(b'HTTP/1.1 ')[1:]
        self.assertEqual(len(parts), 3, data)
        self.assertTrue(parts[0].startswith(b'200'))
        self.assertIn(b'"accepted":10', parts[0])
        self.assertIn(b'"status":"ok"', parts[1])
        self.assertIn(b'"accepted":10', parts[2])
        # the second batch repeats steps 1..10: a rewind, kept as a new segment
        self.assertEqual(self.d.sql('SELECT count(*), max(seg) FROM records')[0], (20, 2))

    def test_expect_continue_chunked(self):
        body = lines('chunky', range(1, 1001))
        with socket.create_connection(('127.0.0.1', self.d.http_port)) as s:
            s.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n'
                      b'Expect: 100-continue\r\n\r\n')
            s.settimeout(30)
            self.assertTrue(s.recv(100).startswith(b'HTTP/1.1 100'))
            for i in range(0, len(body), 4096):
                part = body[i:i + 4096]
                s.sendall(b'%x\r\n' % len(part) + part + b'\r\n')
            s.sendall(b'0\r\n\r\n')
            resp = s.recv(65536)
        self.assertIn(b'200 OK', resp)
        self.assertIn(b'"accepted":1000', resp)


class Durability(unittest.TestCase):
    def test_http_ack_survives_sigkill(self):
        d = Daemon(config={'storage': {'commit_interval_ms': 5000}}).start()
        try:
            status, body = d.post('/v1/ingest', lines('acked', range(1, 3001)))
            self.assertEqual(status, 200)
            self.assertEqual(body['accepted'], 3000)
            d.kill()   # no chance to flush anything else
            self.assertEqual(d.sql('SELECT count(*) FROM records')[0][0], 3000)
        finally:
            d.close()

    def test_stream_bounded_delay(self):
        d = Daemon().start()
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(d.sock)
                s.sendall(lines('live', range(1, 101)))
                # committed while the stream stays open (no close, no
                # shutdown); how long it takes is bench/commit_delay.py's
                n = d.wait_committed('SELECT count(*) FROM records', 100, timeout=60)
            self.assertEqual(n, 100)
            d.kill()
            self.assertEqual(d.sql('SELECT count(*) FROM records')[0][0], 100)
        finally:
            d.close()

    def test_sigterm_flushes_everything_received(self):
        # a long commit interval: only the shutdown path can commit these
        d = Daemon(config={'storage': {'commit_interval_ms': 60000,
                                       'commit_max_records': 1000000}}).start()
        try:
            with socket.create_connection(('127.0.0.1', d.port)) as t, \
                    socket.socket(socket.AF_UNIX) as u:
                u.connect(d.sock)
                tcp = lines('term-tcp', range(1, 5001))
                # the last line has no newline yet: it ends with the connection
                unix = lines('term-unix', range(1, 5001)) + b'{"run":"term-unix","step":5001,"loss":1.0}'
                t.sendall(tcp)
                u.sendall(unix)
                wait_for(lambda: (d.stats()['transports']['tcp']['bytes'],
                                  d.stats()['transports']['unix']['bytes']) == (len(tcp), len(unix)),
                         60, 'the daemon to receive every byte')
                self.assertEqual(d.stop(signal.SIGTERM), 0)
            self.assertEqual(d.sql('SELECT count(*) FROM records')[0][0], 10001)
            self.assertIn('stopping', d.logtext())
        finally:
            d.close()


class Restarts(unittest.TestCase):
    def test_rewind_after_daemon_restart_is_a_new_segment(self):
        d = Daemon().start()
        try:
            self.assertEqual(d.post('/v1/ingest', lines('job', range(1, 301)))[0], 200)
            d.stop()
            d.start()
            # the job crashed after 300 and resumes from its checkpoint at 250
            self.assertEqual(d.post('/v1/ingest', lines('job', range(251, 401), loss=3.0))[0], 200)
            rows = d.sql("SELECT seg, count(*), min(step), max(step) FROM records GROUP BY seg ORDER BY seg")
            self.assertEqual(rows, [(1, 300, 1, 300), (2, 150, 251, 400)])
            seg = d.sql("SELECT reason, restart_step, first_step FROM segments WHERE seg = 2")
            self.assertEqual(seg, [('rewind', 250, 251)])
            # both copies of 251..300 are there, neither overwritten
            self.assertEqual(d.sql("SELECT count(*) FROM records WHERE step = 275")[0][0], 2)
            self.assertEqual(sorted(r[0] for r in d.sql("SELECT loss FROM records WHERE step = 275")),
                             [2.275, 3.0])
            # and the daemon restarting between segments does not open one
            d.stop()
            d.start()
            self.assertEqual(d.post('/v1/ingest', lines('job', range(401, 411)))[0], 200)
            self.assertEqual(d.sql("SELECT max(seg) FROM records")[0][0], 2)
        finally:
            d.close()

    def test_resumed_event_and_gap(self):
        with Daemon() as d:
            out = []
            t = 1.8e9
            for s in range(1, 101):
                out.append({'run': 'ev', 'step': s, 'ts': t + s * 0.1, 'loss': 2.0, 'grad_norm': 1.0})
                if s == 80:
                    out.append({'run': 'ev', 'step': 80, 'ts': t + 8.0, 'event': 'checkpoint_saved',
                                'optimizer': 'AdamW', 'optimizer_state_keys': ['exp_avg', 'exp_avg_sq', 'step']})
            out.append({'run': 'ev', 'step': 80, 'ts': t + 400, 'event': 'resumed', 'checkpoint_step': 80,
                        'optimizer': 'AdamW', 'optimizer_state_loaded': True})
            for s in range(81, 121):
                out.append({'run': 'ev', 'step': s, 'ts': t + 400 + s * 0.1, 'loss': 2.0, 'grad_norm': 1.0})
            # a restart exactly at a checkpoint: no rewind, only a 10-minute gap
            for s in range(121, 131):
                out.append({'run': 'ev', 'step': s, 'ts': t + 1000 + s * 0.1, 'loss': 2.0, 'grad_norm': 1.0})
            body = ''.join(json.dumps(o) + '\n' for o in out).encode()
            self.assertEqual(d.post('/v1/ingest', body)[0], 200)
            segs = d.sql("SELECT seg, reason, restart_step, first_step FROM segments ORDER BY seg")
            self.assertEqual(segs, [(1, 'start', None, 1), (2, 'resumed', 80, 80), (3, 'gap', 120, 121)])
            ev = d.sql("SELECT name, seg, json_extract(attrs, '$.optimizer') FROM events ORDER BY id")
            self.assertEqual(ev, [('checkpoint_saved', 1, 'AdamW'), ('resumed', 2, 'AdamW')])


class BadInput(unittest.TestCase):
    """Each bad line gets a precise error, is counted, and costs nothing else."""

    CASES = [
        (b'{"run":"b","step":1,"loss":1.0', 'malformed_json', 'loss'),
        (b'not json at all', 'malformed_json', None),
        (b'[1,2,3]', 'not_object', None),
        (b'{"step":5,"loss":1.0}', 'missing_run', None),
        (b'{"run":"b","loss":1.0}', 'missing_step', None),
        (b'{"run":"b","step":"x","loss":1.0}', 'bad_step', 'step'),
        (b'{"run":"b","step":-4,"loss":1.0}', 'bad_step', 'step'),
        (b'{"run":"b","step":1e18,"loss":1.0}', 'bad_step', 'step'),
        (b'{"run":"b","step":3,"loss":"high"}', 'bad_value', 'loss'),
        (b'{"run":"b","step":3,"grad_norm":[1]}', 'bad_value', 'grad_norm'),
        (b'{"run":"b\xff\xfe","step":3,"loss":1.0}', 'invalid_utf8', 'run'),
        (b'{"run":"b","step":3,"loss":1.0,"loss":2.0}', 'duplicate_field', 'loss'),
    ]

    def setUp(self):
        self.d = Daemon(config={'limits': {'max_line_bytes': 4096, 'max_body_bytes': 200000}}).start()

    def tearDown(self):
        self.d.close()

    def body(self):
        good = lines('good', range(1, 4)).split(b'\n')[:3]
        out = [good[0]]
        for bad, _, _ in self.CASES:
            out.append(bad)
        out.append(b'{"run":"b","step":9,"loss":1.0,"pad":"' + b'x' * 5000 + b'"}')  # too long
        out += good[1:]
        return b'\n'.join(out) + b'\n'

    def test_http_reports_each_error_with_line_and_field(self):
        status, resp = self.d.post('/v1/ingest', self.body())
        self.assertEqual(status, 422)
        self.assertEqual(resp['accepted'], 3)
        self.assertEqual(resp['rejected'], len(self.CASES) + 1)
        errs = resp['errors']
        for i, (line, reason, field) in enumerate(self.CASES):
            e = errs[i]
            self.assertEqual(e['line'], i + 2, e)
            self.assertEqual(e['reason'], reason, e)
            if field:
                self.assertEqual(e.get('field'), field, e)
            self.assertTrue(e['message'].startswith(reason), e)
        self.assertEqual(errs[-1]['reason'], 'line_too_long')
        self.assertEqual(errs[-1]['line'], len(self.CASES) + 2)
        self.assertEqual(self.d.sql("SELECT count(*) FROM records")[0][0], 3)
        rej = self.d.stats()['transports']['http']['rejected']
        self.assertEqual(rej['malformed_json'], 2)
        self.assertEqual(rej['bad_step'], 3)
        self.assertEqual(rej['line_too_long'], 1)

    def test_stream_answers_errors_and_keeps_good_lines(self):
        out = self.d.send_unix(self.body(), read_errors=True)
        answers = [json.loads(l) for l in out.splitlines()]
        self.assertEqual([a['error'] for a in answers],
                         [c[1] for c in self.CASES] + ['line_too_long'])
        self.assertEqual([a['line'] for a in answers], list(range(2, len(self.CASES) + 3)))
        self.assertEqual(self.d.wait_committed("SELECT count(*) FROM records", 3), 3)
        # TCP gets the same treatment, counted under its own transport
        self.d.send_tcp(self.body())
        self.assertEqual(self.d.wait_committed("SELECT count(*) FROM records", 6), 6)
        st = self.d.stats()['transports']
        self.assertEqual(sum(st['unix']['rejected'].values()), len(self.CASES) + 1)
        self.assertEqual(sum(st['tcp']['rejected'].values()), len(self.CASES) + 1)

    def test_udp_bad_datagrams_cost_nothing_else(self):
        self.d.send_udp([b'{"run":"u","step":1,"loss":1}\n{oops}\n{"run":"u","step":2,"loss":1}',
                         b'\xff\xfe garbage', b'{"run":"u","step":3,"loss":1}'])
        self.assertEqual(self.d.wait_committed("SELECT count(*) FROM records", 3), 3)
        self.assertGreaterEqual(sum(self.d.stats()['transports']['udp']['rejected'].values()), 2)

    def test_body_over_limit(self):
        big = lines('big', range(1, 10000))
        self.assertGreater(len(big), 200000)
        status, resp = self.d.post('/v1/ingest', big)
        self.assertEqual(status, 413)
        self.assertIn('max_body_bytes', resp['error'])
        # refused before reading: nothing stored
        self.assertEqual(self.d.sql("SELECT count(*) FROM records")[0][0], 0)
        # the daemon is fine afterwards
        self.assertEqual(self.d.post('/v1/ingest', lines('after', range(1, 4)))[0], 200)

    def test_client_stops_mid_line_and_mid_request(self):
        # stream: the connection closes inside a line that is not a whole object
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.d.sock)
            s.sendall(lines('mid', range(1, 6)) + b'{"run":"mid","step":6,"lo')
        # HTTP: a body shorter than its Content-Length, then the client leaves
        body = lines('midhttp', range(1, 6))
        with socket.create_connection(('127.0.0.1', self.d.http_port)) as s:
            s.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n'
                      % (len(body) + 100) + body + b'{"run":"midhttp","st')
        self.assertEqual(self.d.wait_committed("SELECT count(*) FROM records", 10), 10)
        st = wait_for(lambda: (lambda t: t['unix']['rejected'].get('truncated') and
                               t['http']['rejected'].get('truncated') and t)(self.d.stats()['transports']),
                      60, 'both cut-off lines to be counted')
        self.assertEqual(st['unix']['rejected'].get('truncated'), 1)
        self.assertEqual(st['http']['rejected'].get('truncated'), 1)
        # other clients are unaffected
        self.assertEqual(self.d.post('/v1/ingest', lines('other', range(1, 4)))[0], 200)

    def test_slow_client_timeouts(self):
        d2 = Daemon(config={'limits': {'http_header_timeout_ms': 300, 'http_body_timeout_ms': 300,
                                       'http_idle_timeout_ms': 300}}).start()
        try:
            with socket.create_connection(('127.0.0.1', d2.http_port)) as s:
                s.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\n')   # headers never end
                # answered and closed by the header deadline (without it,
                # never): however long a loaded machine takes to get there
                resp = read_all(s, timeout=60, must_close=True)
                self.assertIn(b'408', resp)
            with socket.create_connection(('127.0.0.1', d2.http_port)) as s:
                s.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n'
                          + lines('slow', range(1, 3)))
                resp = read_all(s, timeout=60, must_close=True)
                self.assertIn(b'408', resp)
            # what arrived before the timeout was kept
            self.assertEqual(d2.wait_committed("SELECT count(*) FROM records", 2), 2)
            # an idle keep-alive connection is closed
            with socket.create_connection(('127.0.0.1', d2.http_port)) as s:
                s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
                resp = read_all(s, timeout=60, must_close=True)
                self.assertIn(b'200 OK', resp)
        finally:
            d2.close()

    def test_bad_http_requests(self):
        with socket.create_connection(('127.0.0.1', self.d.http_port)) as s:
            s.sendall(b'GARBAGE\r\n\r\n')
            self.assertIn(b'400', read_all(s))
        self.assertEqual(self.d.get('/v1/ingest')[0], 405)


class SegmentFlood(unittest.TestCase):
    def test_a_run_that_rewinds_in_a_loop_is_capped(self):
        # issue 22 item 2: 50,000 identical lines opened 50,000 segments and
        # wrote a log line each
        cfg = {'limits': {'max_segments_per_minute': 20}}
        with Daemon(config=cfg) as d:
            d.send_unix(b'{"run":"loop","step":1,"loss":1}\n' * 5000)
            metric = 'gradwatch_lines_rejected_total{transport="unix",reason="segment_flood"}'

            def rejected():
                for line in d.get('/metrics')[1].splitlines():
                    if line.startswith(metric):
                        return int(float(line.split()[-1]))
                return 0
            wait_for(lambda: rejected() + d.sql("SELECT count(*) FROM records")[0][0] == 5000,
                     60, 'every line committed or rejected')
            segs = d.sql("SELECT count(*) FROM segments s JOIN runs r ON r.id = s.run_id "
                         "WHERE r.name = 'loop'")[0][0]
            self.assertEqual(segs, 21)          # the first, then 20 more, then the cap
            self.assertEqual(rejected(), 5000 - 21)
            # lines that go on are still taken
            d.send_unix(b''.join(b'{"run":"loop","step":%d,"loss":1}\n' % s for s in range(2, 12)))
            d.wait_committed("SELECT count(*) FROM records", 21 + 10)
            # another run is not affected
            d.send_unix(b'{"run":"other","step":1,"loss":1}\n{"run":"other","step":1,"loss":1}\n')
            d.wait_committed("SELECT count(*) FROM records", 21 + 10 + 2)
            d.stop()
            log = d.logtext()
            self.assertIn('run loop: 20 segments opened within a minute', log)
            starts = [l for l in log.splitlines() if ': segment ' in l and ' starts at step ' in l]
            self.assertLessEqual(len(starts), 30)
            self.assertLess(len(log.splitlines()), 120, log[-3000:])


    def test_segment_log_lines_have_a_budget(self):
        with Daemon(config={'limits': {'max_segments_per_minute': 0}}) as d:   # no cap
            d.send_unix(b'{"run":"loop","step":1,"loss":1}\n' * 200)
            d.wait_committed("SELECT count(*) FROM segments", 200)
            d.stop()
            log = d.logtext()
            starts = [l for l in log.splitlines() if ': segment ' in l and ' starts at step ' in l]
            self.assertEqual(len(starts), 30)
            self.assertIn('169 more "segment starts" line(s) were not logged', log)


class Lifecycle(unittest.TestCase):
    def test_defaults_in_the_xdg_state_directory(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            # no arguments but ports (the defaults may be taken on a shared box);
            # outside systemd and without $XDG_RUNTIME_DIR, the database and the
            # socket are in $XDG_STATE_HOME/gradwatch (test_cli.py: the rest)
            from gwtest import free_port
            p, h = free_port(), free_port()
            env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, 'state'), XDG_RUNTIME_DIR='',
                       STATE_DIRECTORY='', RUNTIME_DIRECTORY='')
            state = os.path.join(tmp, 'state', 'gradwatch')
            proc = subprocess.Popen([GRADWATCHD, '--tcp', '127.0.0.1:%d' % p, '--udp', '127.0.0.1:%d' % p,
                                     '--http', '127.0.0.1:%d' % h], cwd=tmp, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            def connects():
                # the socket's file is there from its bind, before its
                # listen: a connect refused then is no failure, only early
                try:
                    with socket.socket(socket.AF_UNIX) as s:
                        s.connect(os.path.join(state, 'gradwatch.sock'))
                    return True
                except OSError:
                    return False
            try:
                wait_for(connects, 60, 'the socket in the state directory to take a connection',
                         interval=0.05)
                self.assertTrue(os.path.exists(os.path.join(state, 'gradwatch.db')))
            finally:
                proc.send_signal(signal.SIGTERM)
                out = proc.communicate(timeout=20)[0].decode()
            self.assertEqual(proc.returncode, 0, out)
            self.assertIn('kernels', out)
            self.assertFalse(os.path.exists(os.path.join(state, 'gradwatch.sock')))
            self.assertEqual(sorted(os.listdir(tmp)), ['state'])   # nothing in the working directory

    def test_state_and_runtime_directory(self):
        import tempfile
        with tempfile.TemporaryDirectory() as state, tempfile.TemporaryDirectory() as rt:
            d = Daemon(env={'STATE_DIRECTORY': state, 'RUNTIME_DIRECTORY': rt})
            d.command = lambda: [GRADWATCHD, '--tcp', 'off', '--udp', 'off',
                                 '--http', '127.0.0.1:%d' % d.http_port]
            d.start()
            try:
                self.assertTrue(os.path.exists(os.path.join(state, 'gradwatch.db')))
                self.assertTrue(os.path.exists(os.path.join(rt, 'gradwatch.sock')))
            finally:
                d.close()

    def test_refuses_non_loopback_without_permission(self):
        r = subprocess.run([GRADWATCHD, '--tcp', '0.0.0.0:0', '--check-config'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b'not a loopback address', r.stderr)

    def test_check_config_reports_file_and_key(self):
        import tempfile
        with tempfile.NamedTemporaryFile('w', suffix='.json') as f:
            f.write('{"limits": {"max_line_bytez": 5}}')
            f.flush()
            r = subprocess.run([GRADWATCHD, '--config', f.name, '--check-config'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(r.returncode, 1)
            self.assertIn(b'unknown key "limits.max_line_bytez"', r.stderr)
            f.seek(0)
            f.truncate()
            f.write('{"thresholds": {"gap_min_seconds": 120}, "aliases": {"loss": ["my_loss"]}}')
            f.flush()
            r = subprocess.run([GRADWATCHD, '--config', f.name, '--check-config'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(b'"gap_min_seconds": 120', r.stdout)

    def test_version_reports_kernels(self):
        r = subprocess.run([GRADWATCHD, '--version'], stdout=subprocess.PIPE)
        self.assertIn(b'kernels: ', r.stdout)
        r = subprocess.run([GRADWATCHD, '--version', '--kernels', 'scalar'], stdout=subprocess.PIPE)
        self.assertIn(b'kernels: scalar', r.stdout)
        r = subprocess.run([GRADWATCHD, '--version', '--kernels', 'bogus'], stderr=subprocess.PIPE)
        self.assertNotEqual(r.returncode, 0)

    def test_sd_notify_and_sighup(self):
        import tempfile
        tmp = tempfile.mkdtemp(prefix='gwnotify-')
        path = os.path.join(tmp, 'notify')
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ns.bind(path)
        ns.settimeout(0.2)
        d = Daemon(env={'NOTIFY_SOCKET': path, 'WATCHDOG_USEC': '200000'},
                   config={'thresholds': {'gap_min_seconds': 60}})
        # read the socket all along, as systemd does: the daemon's
        # notifications block it once 10 lie unread (net.unix.
        # max_dgram_qlen), and with a ping every 100 ms a test that read
        # only between its steps could leave it stuck in sendto on a
        # loaded machine
        got, done = [], threading.Event()

        def drain():
            while not done.is_set():
                try:
                    got.append(ns.recv(100).decode())
                except socket.timeout:
                    pass
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            d.start()
            wait_for(lambda: 'READY=1' in got, 60, 'READY=1')
            wait_for(lambda: 'WATCHDOG=1' in got[got.index('READY=1'):], 60, 'a watchdog ping')
            with open(os.path.join(d.dir, 'config.json'), 'w') as f:
                json.dump({'thresholds': {'gap_min_seconds': 999}}, f)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'RELOADING=1' in got, 60, 'RELOADING=1')
            wait_for(lambda: 'reloaded thresholds' in d.logtext(), 60, 'the reload in the log')
            d.stop()
            wait_for(lambda: 'STOPPING=1' in got, 60, 'STOPPING=1')
        finally:
            done.set()
            reader.join()
            ns.close()
            d.close()


class Fairness(unittest.TestCase):
    def test_a_stream_flood_does_not_lock_out_http_ingest(self):
        # one TCP client writing as fast as it can kept the write queue at
        # storage.max_pending_bytes, so every HTTP batch was answered 503
        # (9,050 of 9,056 in 8 s); streams now stop reading at half the
        # limit, and the other half is HTTP's
        limit = 16 << 20
        with Daemon(config={'storage': {'max_pending_bytes': limit}}) as d:
            stop = threading.Event()

            def flood():
                line = b'{"run":"flood","step":%d,"loss":1}\n'
                with socket.create_connection(('127.0.0.1', d.port)) as s:
                    step = 0
                    while not stop.is_set():
                        s.sendall(b''.join(line % i for i in range(step, step + 2000)))
                        step += 2000

            t = threading.Thread(target=flood)
            t.start()
            try:
                wait_for(lambda: d.get('/healthz')[1]['pending_bytes'] > limit // 4, 60,
                         'the flood to fill the write queue')
                # the queue stays full while the flood goes on: HTTP's
                # batches go in anyway (and wait for their commit)
                statuses = []
                for i in range(20):
                    status, body = d.post('/v1/ingest', lines('job', range(i * 10, i * 10 + 10)))
                    statuses.append(status)
                self.assertEqual(statuses, [200] * 20)
                self.assertGreater(d.get('/healthz')[1]['pending_bytes'], 0)
            finally:
                stop.set()
                t.join()


if __name__ == '__main__':
    unittest.main()
