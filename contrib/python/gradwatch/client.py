"""The gradwatch client: hands a training loop's per-step metrics to a
background sender, which writes them as NDJSON to gradwatchd.

`Client.log()` only appends a tuple to a bounded deque (no lock, no
syscall, no formatting): a few microseconds, whatever the daemon is doing.
It never raises into the training loop.  A daemon thread wakes every
`interval` seconds (or on flush), formats the queued items and writes them
to the daemon's Unix socket (or a TCP "host:port"); while that is
unreachable it sends UDP datagrams instead and retries the stream once a
second.  When the queue is full (the daemon is slow or gone and the UDP
path is off) new metric lines are dropped and counted; the count is
reported in `stats()`, in a warning at close, and to the daemon itself as
the extra field `gw_client_dropped` of the next line that gets through.
Events (`checkpoint_saved`, `resumed`) are never dropped for a full queue.

Optionally every line is also appended to a local JSONL file (`jsonl=`),
in the sender thread, so `gradwatch replay` can re-run the detectors later.

The resume gate (`check_resume`) is the one synchronous call: it flushes
what is queued and asks the daemon over HTTP whether the live manifest
matches the run's last checkpoint, raising ResumeError when it does not.
"""
import atexit
import collections
import json
import logging
import os
import select
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref

from . import manifest as _manifest

log = logging.getLogger('gradwatch')

_METRIC, _EVENT = 0, 1
_MAX_DATAGRAM = 8192


class ResumeError(RuntimeError):
    """The live resume manifest does not match the run's last checkpoint.

    Attributes: run, checkpoint_step, differences (a list of dicts with
    kind, field, checkpoint, live, message), cause, action, answer (the
    daemon's whole answer)."""

    def __init__(self, answer, run=None):
        self.answer = answer
        self.run = answer.get('run', run)
        self.checkpoint_step = answer.get('checkpoint_step')
        self.differences = answer.get('differences') or []
        self.cause = answer.get('cause')
        self.action = answer.get('action')
        where = ('the checkpoint at step %s' % self.checkpoint_step
                 if self.checkpoint_step is not None else 'its checkpoint')
        msg = 'run %s: this resume does not match %s: %s.' % (
            self.run, where, '; '.join(d.get('message', '?') for d in self.differences))
        if self.cause:
            msg += ' Likely cause: %s.' % self.cause.rstrip('.')
        if self.action:
            msg += ' Check: %s.' % self.action.rstrip('.')
        super().__init__(msg)


class GateUnavailable(RuntimeError):
    """The daemon could not answer the resume gate (check_resume(required=True))."""


def _split_hostport(s, default_port):
    host, _, port = s.rpartition(':')
    if not host:
        return s, default_port
    return host.strip('[]'), int(port)


def default_address():
    """$GRADWATCH_ADDRESS, else the systemd unit's socket if it exists,
    else ./gradwatch.sock (gradwatchd's default in its working directory)."""
    env = os.environ.get('GRADWATCH_ADDRESS')
    if env:
        return env
    for p in ('/run/gradwatch/gradwatch.sock',):
        if os.path.exists(p):
            return p
    return 'gradwatch.sock'


def _number(v):
    """float(v) for ints, floats, numpy and torch scalars; None otherwise."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        return float(v)
    except (TypeError, ValueError, RuntimeError):
        return None


def _dumps(obj):
    # NaN/Infinity as bare tokens, as the wire format accepts
    return json.dumps(obj, separators=(',', ':'), allow_nan=True)


class Client:
    """A connection to gradwatchd for one run.

    run       the run name (one per training job; keep it across restarts)
    address   the daemon's Unix socket path, or "host:port" for TCP
              (default: default_address())
    udp       "host:port" of the UDP fallback, or None to turn it off
              ($GRADWATCH_UDP, default 127.0.0.1:7470)
    http      "host:port" of the HTTP API used by the resume gate
              ($GRADWATCH_HTTP, default 127.0.0.1:7471)
    jsonl     also append every line to this file (for gradwatch replay)
    events    False: send metrics only (checkpoint_saved/resumed are no-ops)
    max_queue metric lines waiting to be sent before new ones are dropped
    interval  seconds between the sender's wake-ups
    """

    def __init__(self, run, address=None, udp=None, http=None, jsonl=None, events=True,
                 max_queue=100000, interval=0.02):
        if not run or not isinstance(run, str):
            raise ValueError('gradwatch.Client: run must be a non-empty string')
        self.run = run
        self.address = address or default_address()
        udp = os.environ.get('GRADWATCH_UDP', '127.0.0.1:7470') if udp is None else udp
        self.udp = _split_hostport(udp, 7470) if udp else None
        self.http = http or os.environ.get('GRADWATCH_HTTP', '127.0.0.1:7471')
        self.events = events
        self._max = int(max_queue)
        self._interval = interval
        self._q = collections.deque()
        self._wake = threading.Event()
        self._stop = False
        self._enqueued = 0          # items put in the queue (sender-visible order)
        self._handled = 0           # items the sender has finished with
        self._dropped = 0
        self._dropped_reported = 0
        self._errors = 0
        self._sent_stream = 0
        self._sent_udp = 0
        self._lost = 0              # formatted lines no transport took
        self._rejected = 0
        self._last_reject = None
        self._sock = None
        self._udp_sock = None
        self._next_connect = 0.0
        self._jsonl = open(jsonl, 'a', buffering=1 << 16) if jsonl else None
        self._thread = threading.Thread(target=self._run, name='gradwatch-sender', daemon=True)
        self._thread.start()
        ref = weakref.ref(self)
        atexit.register(lambda: ref() and ref().close(timeout=2))

    # ---- the training loop's side: cheap, never raises ------------------------------

    def log(self, step, **metrics):
        """Queue one step's metrics (loss=, grad_norm=, lr=, throughput=, any
        other numbers).  Values may be Python numbers or 0-d tensors (they are
        converted in the sender thread).  Returns at once; never raises."""
        try:
            if len(self._q) >= self._max:
                self._dropped += 1
                return
            self._q.append((_METRIC, step, time.time(), metrics))
            self._enqueued += 1
        except Exception:   # noqa: BLE001 - the training loop must go on
            self._errors += 1

    def checkpoint_saved(self, step, model, optimizer, scheduler=None):
        """Record that the checkpoint of `step` was saved, with the manifest of
        the live model and optimizer (call right after saving)."""
        self._event('checkpoint_saved', step, model, optimizer, scheduler)

    def resumed(self, step, model, optimizer, scheduler=None, optimizer_state_loaded=None,
                check=False):
        """Record that this process resumed from the checkpoint of `step` (call
        after loading it, before the first training step), with the manifest
        of what is live now.  optimizer_state_loaded: what your resume code
        believes (True/False), or None to leave it out.  check=True also asks
        the resume gate (check_resume) and raises ResumeError on a mismatch."""
        self._event('resumed', step, model, optimizer, scheduler,
                    {'checkpoint_step': step} if optimizer_state_loaded is None else
                    {'checkpoint_step': step, 'optimizer_state_loaded': bool(optimizer_state_loaded)})
        if check:
            return self.check_resume(model, optimizer, scheduler,
                                     optimizer_state_loaded=optimizer_state_loaded)
        return None

    def _event(self, name, step, model, optimizer, scheduler, extra=None):
        if not self.events:
            return
        try:
            attrs = _manifest.manifest(model, optimizer, scheduler)
            if extra:
                attrs.update(extra)
            attrs['event'] = name
            self._q.append((_EVENT, step, time.time(), attrs))
            self._enqueued += 1
            self._wake.set()
        except Exception as e:  # noqa: BLE001
            self._errors += 1
            log.warning('gradwatch: could not record %s at step %s: %s', name, step, e)

    # ---- the resume gate -------------------------------------------------------------

    def check_resume(self, model=None, optimizer=None, scheduler=None, optimizer_state_loaded=None,
                     manifest=None, timeout=10.0, required=False):
        """Ask the daemon whether the live manifest matches the run's last
        checkpoint.  Returns the daemon's answer (a dict with "ok") when it
        does; raises ResumeError with the exact differences when it does not.
        When the daemon cannot answer: warns and returns None, or raises
        GateUnavailable if required=True.  Blocks for at most ~2 x timeout."""
        m = dict(manifest) if manifest is not None else _manifest.manifest(model, optimizer, scheduler)
        if optimizer_state_loaded is not None:
            m['optimizer_state_loaded'] = bool(optimizer_state_loaded)
        self.flush(timeout)
        url = 'http://%s/v1/runs/%s/resume-check' % (self.http, urllib.parse.quote(self.run, safe=''))
        req = urllib.request.Request(url, data=json.dumps(m).encode(), method='POST',
                                     headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                answer = json.load(r)
        except (OSError, ValueError) as e:
            if required:
                raise GateUnavailable('gradwatch resume gate at %s: %s' % (self.http, e)) from e
            log.warning('gradwatch: the resume gate at %s did not answer (%s); resuming unchecked',
                        self.http, e)
            return None
        if not answer.get('ok'):
            raise ResumeError(answer, self.run)
        return answer

    # ---- control -----------------------------------------------------------------

    def flush(self, timeout=5.0):
        """Wait until everything queued so far was handed to a transport (or
        dropped).  Returns True if that happened within timeout."""
        target = self._enqueued
        deadline = time.monotonic() + timeout
        self._wake.set()
        while self._handled < target and self._thread.is_alive():
            if time.monotonic() > deadline:
                return False
            self._wake.set()
            time.sleep(0.001)
        return True

    def stats(self):
        """Counters: queued, in_flight (being written), sent (stream), sent_udp, dropped (queue full),
        lost (no transport took them), rejected (by the daemon), errors."""
        queued = len(self._q)
        return {'queued': queued, 'in_flight': max(0, self._enqueued - self._handled - queued),
                'sent': self._sent_stream, 'sent_udp': self._sent_udp,
                'dropped': self._dropped, 'lost': self._lost, 'rejected': self._rejected,
                'errors': self._errors, 'last_reject': self._last_reject}

    def close(self, timeout=5.0):
        """Flush, stop the sender, close the connection.  Warns if lines were
        dropped or lost."""
        if self._stop:
            return
        self.flush(timeout)
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)
        for s in (self._sock, self._udp_sock):
            if s:
                try:
                    s.close()
                except OSError:
                    pass
        if self._jsonl:
            try:
                self._jsonl.close()
            except OSError:
                pass
        st = self.stats()
        if st['dropped'] or st['lost']:
            log.warning('gradwatch: run %s: %d metric lines dropped (queue full), %d lost '
                        '(daemon unreachable)', self.run, st['dropped'], st['lost'])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the sender thread --------------------------------------------------------------

    def _run(self):
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            stopping = self._stop
            try:
                self._drain()
            except Exception as e:  # noqa: BLE001 - keep the sender alive
                self._errors += 1
                log.debug('gradwatch sender: %s', e)
            if stopping and not self._q:
                return

    def _format(self, item):
        kind, step, ts, fields = item
        rec = {'run': self.run, 'step': int(step), 'ts': ts}
        if kind == _EVENT:
            rec.update(fields)
            return _dumps(rec)
        for k, v in fields.items():
            x = _number(v)
            if x is None:
                self._errors += 1
                continue
            rec[k] = x
        if self._dropped != self._dropped_reported:
            self._dropped_reported = self._dropped
            rec['gw_client_dropped'] = self._dropped
        return _dumps(rec)

    def _drain(self):
        q = self._q
        while q:
            n = min(len(q), 100)
            lines = []
            for _ in range(n):
                try:
                    lines.append(self._format(q.popleft()))
                except Exception:  # noqa: BLE001
                    self._errors += 1
            data = ('\n'.join(lines) + '\n').encode() if lines else b''
            if self._jsonl and data:
                try:
                    self._jsonl.write(data.decode())
                    self._jsonl.flush()
                except OSError:
                    self._errors += 1
            if data:
                self._send(data, len(lines))
            self._handled += n
            time.sleep(0)   # let the training thread have the GIL between batches

    def _connect(self):
        if self._sock is not None:
            return True
        now = time.monotonic()
        if now < self._next_connect:
            return False
        self._next_connect = now + 1.0
        try:
            if '/' in self.address or ':' not in self.address:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                s.connect(self.address)
            else:
                s = socket.create_connection(_split_hostport(self.address, 7470), timeout=5)
            self._sock = s
            return True
        except OSError:
            return False

    def _read_errors(self):
        """The daemon answers a rejected line with one JSON error line."""
        try:
            # (a socket with a timeout would wait in recv even with MSG_DONTWAIT)
            if not select.select([self._sock], [], [], 0)[0]:
                return
            data = self._sock.recv(65536)
        except OSError:
            return
        for line in data.decode('utf-8', 'replace').splitlines():
            if '"error"' in line:
                self._rejected += 1
                self._last_reject = line[:300]

    def _send(self, data, nlines):
        if self._connect():
            try:
                self._sock.sendall(data)
                self._sent_stream += nlines
                self._read_errors()
                return
            except OSError:
                try:
                    self._sock.close()
                except OSError:
                    pass
                self._sock = None
        if not self.udp:
            self._lost += nlines
            return
        try:
            if self._udp_sock is None:
                self._udp_sock = socket.socket(socket.AF_INET6 if ':' in self.udp[0] else socket.AF_INET,
                                               socket.SOCK_DGRAM)
            # whole lines per datagram, each datagram at most _MAX_DATAGRAM bytes
            chunk, size, count = [], 0, 0
            for line in data.split(b'\n'):
                if not line:
                    continue
                if size + len(line) + 1 > _MAX_DATAGRAM and chunk:
                    self._udp_sock.sendto(b'\n'.join(chunk), self.udp)
                    count += len(chunk)
                    chunk, size = [], 0
                chunk.append(line)
                size += len(line) + 1
            if chunk:
                self._udp_sock.sendto(b'\n'.join(chunk), self.udp)
                count += len(chunk)
            self._sent_udp += count
            self._lost += nlines - count
        except OSError:
            self._lost += nlines

