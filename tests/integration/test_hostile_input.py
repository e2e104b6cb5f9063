"""Hostile and careless run names and requests, on every entry point.

A run name is 1-256 bytes of UTF-8 without control characters, on every
path it can enter by (a line's "run", ?run=, a path segment, --follow
--run); whatever a client sends, nothing it sends can crash the daemon,
forge a log line, or break /metrics for Prometheus.  Valid but awkward
names (quotes, markup, slashes, non-ASCII) round-trip everywhere.
"""
import json
import os
import re
import socket
import unittest
import urllib.parse

from gwtest import Daemon, wait_for

CONTROL = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')

AWKWARD = ['quote"and\\back', '<img src=x onerror=alert(1)>', 'a/b c', 'ünïcödé-日本',
           '</script><script>x</script>', "it's", '{"run":"x"}', '%2F..%2F', 'x' * 256,
           'lr+warmup', 'a b+c']


def prometheus_ok(text):
    """Every line of the exposition is a comment or name{labels} value, and
    the whole text is UTF-8 (a scrape fails otherwise)."""
    line_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? \S+$')
    for line in text.split('\n'):
        if line and not line.startswith('#') and not line_re.match(line):
            return line
    return None


def exchange(d, data):
    """Send raw bytes to the HTTP port; what comes back until the daemon
    closes the connection."""
    s = socket.create_connection(('127.0.0.1', d.http_port), timeout=10)
    s.sendall(data)
    out = b''
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out


class HostileInput(unittest.TestCase):
    def test_resume_gate_with_a_non_utf8_run_name(self):
        # was a heap use-after-free: json_pack failed on the name and freed
        # the differences the cause text was then read from
        with Daemon() as d:
            for path in ('/v1/runs/%FF/resume-check', '/v1/runs/%C3%28/resume-check',
                         '/v1/runs/a%0Ab/resume-check', '/v1/runs/%1B%5B31m/resume-check'):
                status, body = d.post(path, b'{"optimizer_state_loaded":false}')
                self.assertEqual(status, 400, (path, body))
                self.assertIn('run name', body['error'])
            status, body = d.post('/v1/runs/ok/resume-check', b'{"optimizer_state_loaded":false}')
            self.assertEqual(status, 200)
            self.assertFalse(body['ok'])
            self.assertIn('cause', body)
            self.assertEqual(d.get('/healthz')[0], 200)

    def test_bad_names_are_refused_on_every_entry_point(self):
        with Daemon() as d:
            # ?run= on HTTP ingest
            for q in ('%FF%FE', '%00', 'a%0Ab', '%1B%5B2J', '%C2%85', '', 'x' * 300):
                status, body = d.post('/v1/ingest?run=' + q, b'{"step":1,"loss":1}\n')
                self.assertEqual(status, 400, (q, body))
            # a line's "run" on every transport: rejected with its reason
            bad = ['a\nb', '\u001b[31mred', 'tab\there', '\u0085next', 'del\u007f', '', 'x' * 257]
            body = ''.join(json.dumps({'run': r, 'step': 1, 'loss': 1.0}) + '\n' for r in bad)
            status, res = d.post('/v1/ingest', body.encode())
            self.assertEqual(status, 422)
            self.assertEqual(res['accepted'], 0)
            self.assertEqual({e['reason'] for e in res['errors']}, {'bad_run'})
            self.assertEqual(len(res['errors']), len(bad))
            errs = [json.loads(l) for l in d.send_unix(body.encode(), read_errors=True).splitlines()]
            self.assertEqual([e['error'] for e in errs], ['bad_run'] * len(bad))
            self.assertEqual(d.sql('SELECT count(*) FROM runs')[0][0], 0)
            # nothing a client sent made it into the log as a raw control character
            log = d.logtext()
            for line in log.splitlines():
                self.assertIsNone(CONTROL.search(line), repr(line))
            self.assertNotIn('\x1b', log)
            # /metrics stays valid for Prometheus
            status, text = d.get('/metrics')
            self.assertEqual(status, 200)
            self.assertIsNone(prometheus_ok(text))

    def test_awkward_valid_names_round_trip(self):
        with Daemon() as d:
            body = ''.join(json.dumps({'run': r, 'step': s, 'loss': 1.0 / s, 'grad_norm': 0.5}) + '\n'
                           for r in AWKWARD for s in (1, 2, 3))
            status, res = d.post('/v1/ingest', body.encode())
            self.assertEqual((status, res['accepted']), (200, 3 * len(AWKWARD)), res)
            status, runs = d.get('/v1/runs')
            self.assertEqual(sorted(r['run'] for r in runs['runs']), sorted(AWKWARD))
            for r in AWKWARD:
                status, one = d.get('/v1/runs/' + urllib.parse.quote(r, safe=''))
                self.assertEqual((status, one['run'], one['last_step']), (200, r, 3), r)
                # as a user types it: in a path only '/', '%', '?', '#' and
                # spaces need escaping; '+' is itself
                status, one = d.get('/v1/runs/' + urllib.parse.quote(r, safe='+'))
                self.assertEqual((status, one['run']), (200, r), r)
            status, text = d.get('/metrics')
            self.assertIsNone(prometheus_ok(text))
            # label values are escaped, so each name appears once, exactly
            for r in AWKWARD:
                esc = r.replace('\\', '\\\\').replace('"', '\\"')
                self.assertIn('gradwatch_run_last_step{run="%s"} 3' % esc, text)

    def test_invisible_and_bidi_characters_are_escaped_in_the_log(self):
        # issue 22 item 10: valid names, but written raw they reorder or hide
        # what a terminal shows (U+202E turns "gpj.exe" into "exe.jpg")
        names = ['spoof\u202egpj.exe', 'line\u2028break', 'zero\u200bwidth', 'iso\u2066x\u2069']
        with Daemon() as d:
            body = ''.join(json.dumps({'run': r, 'step': s, 'loss': 1.0}) + '\n'
                           for r in names for s in (1, 2, 1))   # a rewind: logged with the name
            status, res = d.post('/v1/ingest', body.encode())
            self.assertEqual(status, 200, res)
            status, runs = d.get('/v1/runs')
            self.assertEqual(sorted(r['run'] for r in runs['runs']), sorted(names))
            log = wait_for(lambda: (lambda t: 'iso\\u2066x\\u2069' in t and t)(d.logtext()),
                           what='the escaped name in the log')
            for raw in ('\u202e', '\u2028', '\u200b', '\u2066', '\u2069'):
                self.assertNotIn(raw, log)
            self.assertIn('spoof\\u202egpj.exe', log)
            self.assertIn('line\\u2028break', log)
            self.assertIn('zero\\u200bwidth', log)

    def test_every_method_on_every_route(self):
        """HEAD answers what GET would, without the body, so a pipelined
        request after it reads right; a 405 says which methods the path
        takes (Allow, RFC 9110 15.5.6)."""
        def responses(data):
            """Split a stream of responses by their Content-Length."""
            out = []
            while data:
                head, _, rest = data.partition(b'\r\n\r\n')
                lines = head.decode().split('\r\n')
                hdrs = dict(l.split(': ', 1) for l in lines[1:])
                n = int(hdrs['Content-Length'])
                out.append((int(lines[0].split()[1]), hdrs, rest[:n]))
                data = rest[n:]
            return out

        with Daemon() as d:
            d.post('/v1/ingest', b'{"run":"r","step":1,"loss":1}\n')
            for path in ('/healthz', '/metrics', '/v1/stats', '/v1/runs', '/v1/runs/r',
                         '/v1/runs/r/alerts', '/v1/runs/r/records', '/v1/alerts', '/', '/runs/r',
                         '/static/app.js', '/v1/runs/nope', '/v1/alerts/nope'):
                get = responses(exchange(d, b'GET %s HTTP/1.1\r\nConnection: close\r\n\r\n'
                                         % path.encode()))[0]
                raw = exchange(d, b'HEAD %s HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n'
                               b'Connection: close\r\n\r\n' % path.encode())
                head_end = raw.index(b'\r\n\r\n') + 4
                status = int(raw.split()[1])
                self.assertEqual(status, get[0], (path, raw[:300]))
                hdrs = dict(l.split(': ', 1) for l in raw[:head_end - 4].decode().split('\r\n')[1:])
                self.assertEqual(hdrs['Content-Type'], get[1]['Content-Type'], path)
                if path not in ('/healthz', '/metrics', '/v1/stats'):   # those change by the second
                    self.assertEqual(int(hdrs['Content-Length']), len(get[2]), path)
                # no body: the next bytes are the pipelined GET's answer
                self.assertTrue(raw[head_end:].startswith(b'HTTP/1.1 200 '), (path, raw[head_end:][:80]))
            # garbage after a HEAD: its 400 is no answer to a HEAD and has its
            # body (it went without, found by fuzz_http)
            raw = exchange(d, b'HEAD /healthz HTTP/1.1\r\n\r\nInfinity\r\n\r\n')
            answers = responses(raw[raw.index(b'\r\n\r\n') + 4:])
            self.assertEqual([a[0] for a in answers], [400], raw)
            self.assertIn('malformed', json.loads(answers[0][2])['error'])
            # refused before routing (URL too long): no body either
            raw = exchange(d, b'HEAD /' + b'a' * 5000 + b' HTTP/1.1\r\n\r\n')
            self.assertTrue(raw.startswith(b'HTTP/1.1 431 '), raw[:80])
            self.assertTrue(raw.endswith(b'\r\n\r\n'), raw[-80:])
            for method, path, allow in (('DELETE', '/healthz', 'GET, HEAD'),
                                        ('POST', '/v1/runs', 'GET, HEAD'),
                                        ('PUT', '/v1/runs/r', 'GET, HEAD, DELETE'),
                                        ('GET', '/v1/ingest', 'POST'),
                                        ('PATCH', '/v1/runs/r/resume-check', 'POST'),
                                        ('OPTIONS', '/static/app.js', 'GET, HEAD')):
                raw = exchange(d, b'%s %s HTTP/1.1\r\nContent-Length: 0\r\n\r\n'
                               % (method.encode(), path.encode()))
                status, hdrs, body = responses(raw)[0]
                self.assertEqual(status, 405, (method, path, raw))
                self.assertEqual(hdrs.get('Allow'), allow, (method, path, raw))
                self.assertIn(method, json.loads(body)['error'])
            self.assertEqual(d.get('/healthz')[0], 200)

    def test_refusals_say_what_was_refused(self):
        with Daemon() as d:
            cases = [('/v1/alerts/%FF', 'alert id', 'UTF-8'),
                     ('/alerts/' + 'a' * 300, 'alert id', '300'),
                     ('/static/app.js%00.html', 'file name', 'percent-encoding'),
                     ('/v1/runs/' + 'r' * 257, 'run name', '257'),
                     ('/v1/runs/a%0Ab/records', 'run name', 'control')]
            for path, what, why in cases:
                status, body = d.get(path)
                self.assertEqual(status, 400, path)
                self.assertIn('bad %s in the path' % what, body['error'], path)
                self.assertIn(why, body['error'], path)
            status, body = d.post('/v1/ingest?run=' + 'r' * 257, b'{"step":1,"loss":1}\n')
            self.assertEqual(status, 400)
            self.assertIn('257', body['error'])
            status, body = d.post('/v1/prune?older_than=-1d', b'')
            self.assertEqual(status, 400)
            self.assertIn('older_than=-1d', body['error'])

    def test_compressed_bodies_are_refused_with_the_reason(self):
        # a gzip body with Content-Encoding: gzip (as log shippers send)
        # was read as NDJSON: "malformed_json at column 1" and nothing
        # stored; a coding the daemon does not apply is now named
        import gzip
        with Daemon() as d:
            body = gzip.compress(b'{"run":"gz","step":1,"loss":1}\n')
            for hdr, value, status in (('Content-Encoding', 'gzip', 415),
                                       ('Content-Encoding', 'br', 415),
                                       ('Transfer-Encoding', 'gzip, chunked', 501)):
                s = socket.create_connection(('127.0.0.1', d.http_port), timeout=10)
                if hdr == 'Transfer-Encoding':
                    req = (b'POST /v1/ingest HTTP/1.1\r\nTransfer-Encoding: %s\r\n\r\n%x\r\n'
                           % (value.encode(), len(body)) + body + b'\r\n0\r\n\r\n')
                else:
                    req = (b'POST /v1/ingest HTTP/1.1\r\n%s: %s\r\nContent-Length: %d\r\n\r\n'
                           % (hdr.encode(), value.encode(), len(body)) + body)
                s.sendall(req)
                answer = b''
                while True:   # refused: the daemon answers and closes
                    b = s.recv(4096)
                    if not b:
                        break
                    answer += b
                s.close()
                self.assertTrue(answer.startswith(b'HTTP/1.1 %d ' % status), (value, answer[:200]))
                self.assertIn(value.split(',')[0].encode(), answer.split(b'\r\n\r\n', 1)[1])
            # a header that must come once, twice: its two values were
            # run together ("a" and "b" made the key "ab")
            for hdr in (b'Idempotency-Key: a\r\nIdempotency-Key: b', b'Authorization: Bearer x\r\n'
                        b'Authorization: Bearer y'):
                s = socket.create_connection(('127.0.0.1', d.http_port), timeout=10)
                s.sendall(b'POST /v1/ingest HTTP/1.1\r\n%s\r\nContent-Length: 0\r\n\r\n' % hdr)
                answer = s.recv(4096)
                s.close()
                self.assertTrue(answer.startswith(b'HTTP/1.1 400 '), answer)
                self.assertIn(hdr.split(b':')[0] + b' header appears twice', answer)
            # identity is no coding at all
            status, body = d.post('/v1/ingest', b'{"run":"id","step":1,"loss":1}\n',
                                  {'Content-Encoding': 'identity'})
            self.assertEqual((status, body['accepted']), (200, 1))
            self.assertEqual(d.get('/v1/runs/gz')[0], 404)

    def test_whitespace_before_a_header_colon_is_refused(self):
        """RFC 9112 5.1: a server MUST reject a request with whitespace
        between a field name and its colon with 400.  http-parser took
        "Content-Length : 5" as the length, where a proxy in front may
        have read another header: the request-smuggling shape."""
        with Daemon() as d:
            for hdr in (b'Content-Length : 31', b'Content-Length\t: 31',
                        b'Transfer-Encoding : chunked', b'Idempotency-Key : k1',
                        b'X-Other : y'):
                framing = b'' if hdr.startswith((b'Content-Length', b'Transfer-Encoding')) \
                    else b'Content-Length: 31\r\n'
                answer = exchange(d, b'POST /v1/ingest HTTP/1.1\r\n%s%s\r\n\r\n'
                                  b'{"run":"ws","step":1,"loss":1}\n' % (framing, hdr))
                self.assertTrue(answer.startswith(b'HTTP/1.1 400 '), (hdr, answer[:200]))
                if b'\t' in hdr:   # the parser refuses a tab itself
                    self.assertIn(b'invalid character in header', answer, hdr)
                    continue
                self.assertIn(b'whitespace', answer, hdr)
                self.assertIn(hdr.split(b':')[0], answer, hdr)
            self.assertEqual(d.get('/v1/runs/ws')[0], 404)
            self.assertEqual(d.get('/healthz')[0], 200)

    def test_garbage_requests_do_not_hurt(self):
        with Daemon() as d:
            garbage = [b'\x00\xff' * 100 + b'\r\n\r\n', b'GET /' + b'A' * 10000 + b' HTTP/1.1\r\n\r\n',
                       b'POST /v1/ingest HTTP/1.1\r\nContent-Length: -1\r\n\r\n',
                       b'POST /v1/ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n',
                       b'GET /v1/runs/%ZZ HTTP/1.1\r\n\r\n', b'BREW /coffee HTCPCP/1.0\r\n\r\n']
            for g in garbage:
                s = socket.create_connection(('127.0.0.1', d.http_port), timeout=5)
                s.sendall(g)
                try:
                    head = s.recv(4096)
                except OSError:
                    head = b''
                s.close()
                if head:
                    self.assertRegex(head, rb'^HTTP/1\.1 (400|404|405|413|431) ', g[:40])
            self.assertEqual(d.get('/healthz')[0], 200)

    def test_a_client_reconnecting_per_bad_line_cannot_flood_the_log(self):
        # each connection logs its first few errors; a sender that opens a
        # connection per line (a shell loop of nc, a client retrying) wrote
        # one warning per line: 1M bad lines, 1M log lines.  Warnings about
        # what peers send share one budget a minute, and what was held back
        # is said in one line (at the latest when the daemon stops).
        n = 600
        with Daemon() as d:
            for i in range(n):
                if i % 2:
                    d.send_tcp(b'not json %d\n' % i, read_errors=True)
                else:
                    d.send_unix(b'{"run":"r","step":%d,"loss":"x"}\n' % i, read_errors=True)
            metrics = d.get('/metrics')[1]
            rejected = sum(float(l.rsplit(' ', 1)[1]) for l in metrics.splitlines()
                           if l.startswith('gradwatch_lines_rejected_total{'))
            self.assertEqual(rejected, n)       # every one counted
            d.stop()
            with open(d.log_path, encoding='utf-8', errors='replace') as f:
                warns = [l for l in f if ' warn ' in l]
        per_line = [l for l in warns if ' connection ' in l and ' line 1: ' in l]
        self.assertGreater(len(per_line), 0)
        self.assertLess(len(per_line), n // 4, ''.join(warns[-5:]))
        held = [l for l in warns if 'not logged' in l and 'connection ' not in l]
        self.assertTrue(held, ''.join(warns[-5:]))
        said = sum(int(re.search(r'(\d+) (more )?warning', l).group(1)) for l in held)
        self.assertEqual(said + len(per_line), n, held)


if __name__ == '__main__':
    unittest.main()
