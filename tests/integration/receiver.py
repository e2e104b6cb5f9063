"""Test helpers for alert delivery (standard library only).

Receiver: a small HTTP/1.1 server on 127.0.0.1 (ephemeral port) that records
every request (path, headers, body, arrival time on the monotonic clock) and
can be told how to answer: "ok" (200), "fail" (500), "429" (with
Retry-After), "400", "echo" (404 quoting the request path, 300 bytes more), "hang" (read the request, never answer), "reset" (read the
request, then reset the connection).  It can be stopped and started again
on the same port to play a receiver that is down for a while.

Daemon: starts build/daemon/gradwatchd in a temporary directory with free
ports and a config file, waits for /healthz, sends NDJSON lines over TCP,
stops it with SIGTERM or SIGKILL, and reads its database.

The lead's tests/integration/gwtest.py has a similar daemon helper; the two
are to be merged.
"""

import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import sqlite3
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

import gwtest


free_port = gwtest.free_port


wait_for = gwtest.wait_for


def http_ok(url, timeout=1.0):
    """True if GET url answers 200 (False on any connection error)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        with self.server.conns_lock:
            self.server.conns.add(self.connection)

    def finish(self):
        with self.server.conns_lock:
            self.server.conns.discard(self.connection)
        super().finish()

    def do_POST(self):
        rcv = self.server.receiver
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        t = time.monotonic()
        mode, retry_after = rcv._next_mode()
        rec = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "t": t,
            "answered": mode,
        }
        try:
            rec["json"] = json.loads(body)
        except ValueError:
            rec["json"] = None
        with rcv.cv:
            rcv.requests.append(rec)
            rcv.cv.notify_all()
        if mode == "hang":
            rcv.hang_event.wait(60)
            self.close_connection = True
            return
        if mode == "reset":
            # RST instead of FIN: linger on, timeout 0
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if mode == "ok":
            code, payload = 200, b"ok"
        elif mode == "429":
            code, payload = 429, b"slow down"
        elif mode == "400":
            code, payload = 400, b"invalid_payload"
        elif mode == "echo":
            # a receiver that repeats its request, as some frameworks' 404 pages do
            code, payload = 404, ("no route for POST %s (signature %s) %s\nmore" % (
                self.path, self.headers.get("X-Gradwatch-Signature-256"), "x" * 300)).encode()
        else:
            code, payload = 500, b"boom"
        self.send_response(code)
        if mode == "429":
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, *args):
        # the connections being served: stop() cuts them too, or a
        # keep-alive connection accepted before would go on being answered
        self.conns = set()
        self.conns_lock = threading.Lock()
        super().__init__(*args)


class Receiver:
    def __init__(self, port=0, tls=None):
        self.tls = tls            # (certfile, keyfile): serve HTTPS
        self.requests = []
        self.cv = threading.Condition()
        self.mode = "ok"
        self.script = []          # modes for the next requests, then self.mode
        self.retry_after = 1
        self.hang_event = threading.Event()
        self.port = port
        self.srv = None
        self.start()

    def _next_mode(self):
        with self.cv:
            if self.script:
                return self.script.pop(0), self.retry_after
            return self.mode, self.retry_after

    def start(self):
        self.srv = _Server(("127.0.0.1", self.port), _Handler)
        self.srv.receiver = self
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        """Stop listening and cut the connections already accepted: after
        this nothing answers on the port (a receiver that is down)."""
        if self.srv:
            self.srv.shutdown()
            self.srv.server_close()
            with self.srv.conns_lock:
                for c in list(self.srv.conns):
                    try:
                        c.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            self.srv = None

    def close(self):
        self.hang_event.set()
        self.stop()

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def wait(self, n, timeout=60.0, pred=None):
        """Wait until n requests (matching pred, if given) arrived; return them."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                got = [r for r in self.requests if pred is None or pred(r)]
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("receiver: %d of %d requests after %.1fs: %r" % (
                        len(got), n, timeout, [r["headers"].get("x-gradwatch-delivery")
                                              for r in self.requests]))
                self.cv.wait(left)

    def ok_requests(self):
        with self.cv:
            return [r for r in self.requests if r["answered"] == "ok"]


class Daemon(gwtest.Daemon):
    """gwtest's daemon with alert sinks configured, a TCP connection to send
    lines on, and the names the alert tests use."""

    def __init__(self, sinks, extra_config=None, tmp=None, env=None):
        # the tests resolve a NaN incident with 50 finite lines
        cfg = {"sinks": sinks, "tick_ms": 1000, "thresholds": {"nonfinite_quiet_steps": 50}}
        cfg.update(extra_config or {})
        super().__init__(workdir=tmp, config=cfg, env=env)
        self.conn = None

    tmp = property(lambda self: self.dir)
    http = property(lambda self: self.http_port)
    tcp = property(lambda self: self.port)

    def start(self):
        super().start()
        self.conn = socket.create_connection(("127.0.0.1", self.port))
        return self

    def send(self, *lines):
        data = "".join(l if l.endswith("\n") else l + "\n" for l in lines)
        self.conn.sendall(data.encode())

    def sink_stats(self):
        return {s["name"]: s for s in self.get("/v1/sinks")[1]["sinks"]}

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.conn:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None
        return super().stop(sig, timeout)

    def remove(self):
        """Stop if running, then delete the temporary directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, sql, *args):
        return self.sql(sql, args)


def nan_incident(run, first_step=1, finite=3):
    """Lines that make the nonfinite detector open a critical alert on run."""
    lines = ['{"run":"%s","step":%d,"loss":%.3f,"grad_norm":1}' % (run, first_step + i, 2.0 - 0.1 * i)
             for i in range(finite)]
    lines.append('{"run":"%s","step":%d,"loss":NaN,"grad_norm":1}' % (run, first_step + finite))
    return lines


def finite_lines(run, first_step, n):
    # the loss moves a little: one value repeated exactly is a frozen loss
    # (short_context), which these quiet lines are not meant to be
    return ['{"run":"%s","step":%d,"loss":%.3f,"grad_norm":1}'
            % (run, first_step + i, 1.5 + 0.001 * (i % 2)) for i in range(n)]


class SinkTestCase(unittest.TestCase):
    """A test with one Receiver (self.rcv) and the daemons self.daemon()
    started, all stopped and removed after it."""

    def setUp(self):
        self.rcv = Receiver()
        self.daemons = []

    def tearDown(self):
        try:
            for d in self.daemons:
                if d.proc:
                    d.stop()
        finally:
            self.rcv.close()
            for d in self.daemons:
                d.remove()

    def daemon(self, sinks, **kw):
        d = Daemon(sinks, **kw)
        self.daemons.append(d)
        return d.start()
