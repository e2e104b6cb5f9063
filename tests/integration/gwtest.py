"""Helpers for gradwatch's integration tests: start the real gradwatchd in a
temporary directory on free loopback ports, talk to it over its real sockets,
and read its real SQLite file.  Standard library only.

The build tells the tests where the binaries are through the environment
(GRADWATCHD, GRADWATCH) and where ../shared is (GW_SHARED).
"""
import contextlib
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

GRADWATCHD = os.environ.get('GRADWATCHD', 'build/daemon/gradwatchd')
GRADWATCH = os.environ.get('GRADWATCH', 'build/cli/gradwatch')
SHARED = os.environ.get('GW_SHARED', os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared'))
CORPUS = os.path.join(SHARED, 'corpus', 'dev')
REALWORLD = os.path.join(SHARED, 'realworld')


_fault_hooks = None


def fault_hooks():
    """Whether this gradwatchd has the test hooks (GRADWATCH_FAULT_*, built
    with -Dfault_hooks=true: its --version says so)."""
    global _fault_hooks
    if _fault_hooks is None:
        out = subprocess.run([GRADWATCHD, '--version'], capture_output=True, text=True,
                             timeout=60).stdout
        _fault_hooks = 'test hooks: compiled in' in out
    return _fault_hooks


def need_fault_hooks(test):
    """A test that forces a fault through a hook: skipped, saying why, in a
    build without them; in CI (CI=1), where the test builds have them, a
    failure instead, so a CI that lost the option does not pass quietly."""
    if fault_hooks():
        return
    why = ('this gradwatchd has no test hooks (GRADWATCH_FAULT_*): configure the build '
           'with -Dfault_hooks=true (dev.sh test does) to run it')
    if os.environ.get('CI'):
        test.fail(why)
    test.skipTest(why)


def wait_for(pred, timeout=60.0, what='condition', interval=0.02):
    """Poll pred() until it returns something true and return that; fail
    after timeout seconds.  How tests wait for something to happen: never a
    bare sleep that hopes it has happened by then.  The deadline is only
    for a failure, so it is generous (60 s unless a caller gives more): the
    suite must pass on a busy machine (tests/load.sh)."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError('timed out after %.1fs waiting for %s' % (timeout, what))
        time.sleep(interval)


_ports_given = set()


def free_port(kind=socket.SOCK_STREAM):
    """A port that is free for both TCP and UDP right now, and not one this
    process was given before (the kernel may hand the same free port out
    twice in a row: a daemon's TCP and HTTP ports were once the same)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        if port in _ports_given:
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(('127.0.0.1', port))
            _ports_given.add(port)
            return port
        except OSError:
            continue
    raise RuntimeError('no free port')


class Daemon:
    """A gradwatchd process in its own temporary directory."""

    def __init__(self, workdir=None, args=(), config=None, env=None):
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix='gwtest-')
        self.db = os.path.join(self.dir, 'gradwatch.db')
        self.sock = os.path.join(self.dir, 'gw.sock')
        self.port = free_port()
        self.http_port = free_port()
        self.extra_args = list(args)
        self.config = config
        self.env = env
        self.proc = None
        self.log_path = os.path.join(self.dir, 'gradwatchd.log')

    def command(self):
        cmd = [GRADWATCHD, '--db', self.db, '--socket', self.sock,
               '--tcp', '127.0.0.1:%d' % self.port, '--udp', '127.0.0.1:%d' % self.port,
               '--http', '127.0.0.1:%d' % self.http_port, '--log-level', 'debug']
        if self.config is not None:
            path = os.path.join(self.dir, 'config.json')
            with open(path, 'w') as f:
                json.dump(self.config, f)
            cmd += ['--config', path]
        return cmd + self.extra_args

    def start(self, wait=True):
        env = dict(os.environ)
        env.update(self.env or {})
        self.log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen(self.command(), cwd=self.dir, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('gradwatchd exited with %s:\n%s' % (self.proc.returncode, self.logtext()))
            try:
                status, _ = self.get('/healthz')
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError('gradwatchd did not become ready:\n' + self.logtext())

    def logtext(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')[-6000:]
        except OSError:
            return ''

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stop the daemon; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise AssertionError('gradwatchd did not stop on %s:\n%s' % (sig, self.logtext()))
        self.log.close()
        self.proc = None
        text = self.logtext()
        for marker in ('AddressSanitizer', 'LeakSanitizer', 'runtime error:', 'invariant failed'):
            if marker in text:
                raise AssertionError('sanitizer report in gradwatchd log:\n' + text)
        if sig == signal.SIGTERM and rc != 0:
            raise AssertionError('gradwatchd exited %s after SIGTERM:\n%s' % (rc, text))
        if 'handles still open' in text:
            raise AssertionError('gradwatchd left libuv handles open:\n' + text)
        return rc

    def kill(self):
        return self.stop(signal.SIGKILL)

    def close(self, quiet=False):
        """Stop the daemon (if it still runs) and remove its directory.  What
        stop() finds (a sanitizer report, a non-zero exit after SIGTERM,
        handles left open) fails the caller unless quiet: a test that only
        uses `with Daemon()` or close() in tearDown must still fail on it."""
        try:
            if quiet:
                with contextlib.suppress(Exception):
                    self.stop()
            else:
                self.stop()
        finally:
            if self.own_dir:
                subprocess.run(['rm', '-rf', self.dir])

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        # an exception already on its way out is the one to report
        self.close(quiet=exc_type is not None)

    # ---- transports ----------------------------------------------------------------------

    def send_unix(self, data, read_errors=False):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(self.sock)
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            return read_all(s) if read_errors else None

    def send_tcp(self, data, read_errors=False):
        with socket.create_connection(('127.0.0.1', self.port)) as s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            return read_all(s) if read_errors else None

    def send_udp(self, datagrams):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            for d in datagrams:
                u.sendto(d, ('127.0.0.1', self.port))

    def post(self, path, body, headers=None):
        c = http.client.HTTPConnection('127.0.0.1', self.http_port, timeout=30)
        try:
            c.request('POST', path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, json.loads(r.read() or b'null')
        finally:
            c.close()

    def get(self, path):
        c = http.client.HTTPConnection('127.0.0.1', self.http_port, timeout=30)
        try:
            c.request('GET', path)
            r = c.getresponse()
            data = r.read()
            ctype = r.getheader('Content-Type', '')
            return r.status, json.loads(data) if 'json' in ctype else data.decode()
        finally:
            c.close()

    def stats(self):
        return self.get('/v1/stats')[1]

    def wait_committed(self, count_sql, expected, timeout=60):
        """Poll the database until count_sql returns expected; fails the test
        (AssertionError) when it does not within timeout (a deadline, not a
        speed requirement)."""
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            got = self.sql(count_sql)[0][0]
            if got == expected:
                return got
            time.sleep(0.02)
        raise AssertionError('%s: %r after %.0f s, expected %r' % (count_sql, got, timeout, expected))

    def sql(self, query, args=()):
        con = sqlite3.connect('file:%s?mode=ro' % self.db, uri=True, timeout=10)
        try:
            return con.execute(query, args).fetchall()
        finally:
            con.close()


def read_all(s, timeout=5, must_close=False):
    """What the peer sends until it closes, or until timeout seconds pass
    without a byte (then what came so far; with must_close, a failure: the
    peer closing is what the caller checks, however long it takes)."""
    s.settimeout(timeout)
    out = b''
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        if must_close:
            raise AssertionError('the peer did not close the connection within %.0fs; it sent %r'
                                 % (timeout, out[:200]))
    return out


def lines(run, steps, **fixed):
    """NDJSON metric lines for steps, loss/grad_norm made up."""
    out = []
    for s in steps:
        rec = {'run': run, 'step': s, 'loss': 2.0 + 0.001 * s, 'grad_norm': 0.5, 'lr': 1e-3}
        rec.update(fixed)
        out.append(json.dumps(rec))
    return ('\n'.join(out) + '\n').encode()


def replay(*args, timeout=120):
    return subprocess.run([GRADWATCH] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


# ---- the Python side (contrib/python) and real PyTorch -----------------------------------

SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CONTRIB_PYTHON = os.path.join(SOURCE_ROOT, 'contrib', 'python')


def torch_python():
    """An interpreter that imports torch: $GW_TORCH_PYTHON, Debian's
    /usr/bin/python3 (python3-torch), or the one running the tests; None if
    none does."""
    seen = []
    for p in (os.environ.get('GW_TORCH_PYTHON'), '/usr/bin/python3', sys.executable):
        if not p or p in seen or not os.path.exists(p):
            continue
        seen.append(p)
        if subprocess.run([p, '-c', 'import torch'], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            return p
    return None


def client_venv(python, where):
    """A venv over `python` (--system-site-packages, so Debian's torch stays
    visible) with contrib/python installed by pip, offline
    (--no-build-isolation --no-index: Debian's setuptools builds it), the
    way docs/integrations.md says; the build writes nothing into the source
    tree (contrib/python/setup.py).  Returns the venv's interpreter."""
    venv = os.path.join(where, 'venv')
    subprocess.run([python, '-m', 'venv', '--system-site-packages', venv], check=True)
    py = os.path.join(venv, 'bin', 'python')
    r = subprocess.run([py, '-m', 'pip', 'install', '--quiet', '--no-build-isolation', '--no-index',
                        '--disable-pip-version-check', CONTRIB_PYTHON],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=where)
    if r.returncode != 0:
        raise RuntimeError('pip install contrib/python failed:\n' + r.stdout.decode())
    return py


class WebhookReceiver:
    """A local HTTP server that records every POST body (parsed as JSON when
    it is JSON) -- the webhook sink's far end."""

    def __init__(self):
        import http.server
        import threading
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n)
                try:
                    received.append(json.loads(body))
                except ValueError:
                    received.append(body.decode('utf-8', 'replace'))
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d/hook' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def alerts(self):
        """Every alert object found in the bodies received so far (a body may
        be one alert, a list, or an envelope with an "alerts" list)."""
        out = []

        def walk(x):
            if isinstance(x, dict):
                if 'detector' in x:
                    out.append(x)
                    return
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(list(self.received))
        return out

    def close(self):
        self.server.shutdown()
        self.server.server_close()
