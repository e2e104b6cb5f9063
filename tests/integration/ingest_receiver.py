"""Servers that stand where gradwatchd's HTTP API would, for testing its
clients (the Python client's HTTP transport, `gradwatch send`, `runs`):

IngestReceiver  a local /v1/ingest that records every request and answers
                from a script: the daemon's answer, no answer at all, a
                connection closed before the answer, or any status;
AnswerDropper   a TCP proxy in front of the real daemon that loses the
                first answer(s) on the way back, as a network would.
Standard library only.
"""
import contextlib
import http.server
import json
import socket
import socketserver
import threading
import time


class IngestReceiver:
    """Records every POST (headers, body, arrival on the monotonic clock) and
    answers from `script` (then `mode`): "ok" (200 with the daemon's answer),
    "drop" (read the request, close without answering), "hang" (never
    answer), or a status code (503 and 409 come with Retry-After: 1, as the
    daemon sends them)."""

    def __init__(self, script=(), mode='ok'):
        self.script = list(script)
        self.mode = mode
        self.requests = []
        self.cv = threading.Condition()
        self.release = threading.Event()
        rcv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                with rcv.cv:
                    mode = rcv.script.pop(0) if rcv.script else rcv.mode
                    rcv.requests.append({'headers': {k.lower(): v for k, v in self.headers.items()},
                                         'body': body, 't': time.monotonic(), 'mode': mode,
                                         'path': self.path})
                    rcv.cv.notify_all()
                if mode == 'drop':
                    self.close_connection = True
                    return
                if mode == 'hang':
                    rcv.release.wait(60)
                    self.close_connection = True
                    return
                n = body.count(b'\n')
                if mode == 'ok':
                    code, ans = 200, {'accepted': n, 'rejected': 0, 'committed': True, 'errors': []}
                else:
                    code, ans = int(mode), {'error': 'scripted %s' % mode}
                self._answer(code, ans)

            def do_GET(self):
                with rcv.cv:
                    rcv.requests.append({'headers': {k.lower(): v for k, v in self.headers.items()},
                                         'body': b'', 't': time.monotonic(), 'mode': 'get',
                                         'path': self.path})
                    rcv.cv.notify_all()
                self._answer(200, {'runs': [], 'alerts': []})

            def _answer(self, code, ans):
                data = json.dumps(ans).encode()
                self.send_response(code)
                if code in (503, 409):
                    self.send_header('Retry-After', '1')
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.srv = Server(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, args=(0.05,), daemon=True).start()

    def keys(self):
        with self.cv:
            return [r['headers'].get('idempotency-key') for r in self.requests]

    def close(self):
        self.release.set()
        self.srv.shutdown()
        self.srv.server_close()


class AnswerDropper:
    """A TCP proxy in front of the real daemon's HTTP port that forwards the
    first request and throws its answer away (closing the connection), and
    forwards everything after that both ways: an answer lost on the way."""

    def __init__(self, upstream_port, drop=1):
        self.upstream = upstream_port
        self.drop = drop
        self.lsock = socket.create_server(('127.0.0.1', 0))
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(('127.0.0.1', self.upstream))
            drop = self.drop > 0
            self.drop -= 1
            threading.Thread(target=self._pump, args=(c, u, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, drop), daemon=True).start()

    @staticmethod
    def _pump(src, dst, drop):
        try:
            while True:
                data = src.recv(65536)
                if not data or drop:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self):
        self.lsock.close()
