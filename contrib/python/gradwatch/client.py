"""The gradwatch client: hands a training loop's per-step metrics to a
background sender, which delivers them to gradwatchd.

`Client.log()` only appends a tuple to a bounded deque (no lock, no
syscall, no formatting): a few microseconds, whatever the daemon is doing.
It never raises into the training loop.  A daemon thread wakes every
`interval` seconds (or on flush), formats the queued items and hands them
to one transport (_transport.py):

- "stream" (the default): NDJSON to the daemon's Unix socket (or TCP
  "host:port"); while that is unreachable, UDP datagrams to a loopback
  daemon (counted `sent_unconfirmed`, and `lost` when refused), with one
  warning saying why the socket could not be used;
- "http": batches POSTed to a (remote) daemon's /v1/ingest with an
  Idempotency-Key each, retried with the same key until the daemon answers,
  so a retry never stores a line twice.

Where the daemon is comes from the arguments, else the environment shared
with the `gradwatch` command: $GRADWATCH_SOCKET, $GRADWATCH_URL,
$GRADWATCH_UDP, $GRADWATCH_TOKEN (the old $GRADWATCH_ADDRESS and
$GRADWATCH_HTTP still work, with a warning once).

When the queue is full (the daemon is slow or gone) new metric lines are
dropped and counted; the count is reported in `stats()`, in a warning at
close, and to the daemon itself as the extra field `gw_client_dropped` of
the next line that gets through.  Events (`checkpoint_saved`, `resumed`,
`run_finished`) are never dropped for a full queue.  Every line ends in
exactly one counter of stats() (see there).

The end of a run is said on the wire: `close()` sends a `run_finished`
event (with a reason: "closed", "exited" at interpreter exit, "crashed:
<exception>" when an exception ended the `with` block or the program), so
the daemon knows the silence that follows is no hang and raises no stall
alert; `run_finished()` says it without closing (the framework callbacks'
train end).  A job killed by a signal says nothing, and its silence is a
stall, as it should be.

A distributed job (DDP, torchrun, DeepSpeed, SLURM) runs this code in every
process, and every process would log the same run.  By default only global
rank 0 sends (its rank from torch.distributed when torch is already
imported and the process group is initialised, else $RANK, $OMPI_COMM_WORLD_RANK,
$PMI_RANK, $SLURM_PROCID; $LOCAL_RANK alone is not the global rank and is
not used); on the other ranks the client is a cheap no-op, without a
thread or a socket, that says so once (a log line, `stats()["skipped"]`,
`repr`).  `all_ranks=True` sends from every rank, each line with its
"rank": the daemon keeps rank 0's as the run and the others apart
(docs/integrations.md, "Distributed jobs").  The resume gate asks on every
rank: each rank compares what it loaded itself.

Optionally every line is also appended to a local JSONL file (`jsonl=`),
in the sender thread, so `gradwatch replay` can re-run the detectors later.

The resume gate (`check_resume`) is the one synchronous call: it flushes
what is queued and asks the daemon over HTTP whether the live manifest
matches the run's last checkpoint, raising ResumeError when it does not.

(About 640 lines: the Client's methods share its queue and counters, so it
stays one class; the transports are in _transport.py.)
"""
import atexit
import collections
import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref

from . import _transport
from . import manifest as _manifest

log = logging.getLogger('gradwatch')

_METRIC, _EVENT = 0, 1
DEFAULT_URL = 'http://127.0.0.1:7471'
DEFAULT_UDP = '127.0.0.1:7470'
SYSTEM_SOCKETS = ('/run/gradwatch/gradwatch.sock',)

_env_warned = set()


def _old_env(old, new):
    """$old's value, with a warning once per process that it is deprecated."""
    v = os.environ.get(old)
    if v and old not in _env_warned:
        _env_warned.add(old)
        log.warning('gradwatch: $%s is deprecated and will go away; use $%s', old, new)
    return v


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


def default_address():
    """The stream address: $GRADWATCH_SOCKET, else the deprecated
    $GRADWATCH_ADDRESS, else the first that exists of the systemd socket
    /run/gradwatch/gradwatch.sock and gradwatchd's per-user defaults
    ($XDG_RUNTIME_DIR/gradwatch/gradwatch.sock, else
    $XDG_STATE_HOME/gradwatch/gradwatch.sock), else ./gradwatch.sock."""
    env = os.environ.get('GRADWATCH_SOCKET') or _old_env('GRADWATCH_ADDRESS', 'GRADWATCH_SOCKET')
    if env:
        return env
    for p in SYSTEM_SOCKETS + _user_sockets():
        if os.path.exists(p):
            return p
    return 'gradwatch.sock'


def _user_sockets():
    """gradwatchd's defaults outside systemd: $XDG_RUNTIME_DIR/gradwatch/,
    else beside the database in $XDG_STATE_HOME/gradwatch/
    (~/.local/state/gradwatch/)."""
    out = []
    run = os.environ.get('XDG_RUNTIME_DIR')
    if run and run.startswith('/'):
        out.append(os.path.join(run, 'gradwatch', 'gradwatch.sock'))
    state = os.environ.get('XDG_STATE_HOME')
    if not (state and state.startswith('/')):
        home = os.environ.get('HOME')
        state = os.path.join(home, '.local', 'state') if home and home.startswith('/') else None
    if state:
        out.append(os.path.join(state, 'gradwatch', 'gradwatch.sock'))
    return tuple(out)


def default_url():
    """The HTTP API's base URL: $GRADWATCH_URL, else the deprecated
    $GRADWATCH_HTTP ("host:port"), else http://127.0.0.1:7471."""
    env = os.environ.get('GRADWATCH_URL')
    if env:
        return env.rstrip('/')
    old = _old_env('GRADWATCH_HTTP', 'GRADWATCH_URL')
    if old:
        return (old if '://' in old else 'http://' + old).rstrip('/')
    return DEFAULT_URL


def _choose_transport(address, url):
    """stream unless only an HTTP URL says where the daemon is."""
    if address:
        return 'stream'
    if url:
        return 'http'
    if os.environ.get('GRADWATCH_SOCKET') or os.environ.get('GRADWATCH_ADDRESS'):
        return 'stream'
    return 'http' if os.environ.get('GRADWATCH_URL') else 'stream'


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


def _exit_reason():
    """Why the interpreter is exiting: "crashed: <type>" after an uncaught
    exception (sys.last_type is set before atexit handlers run), else
    "exited"."""
    t = getattr(sys, 'last_type', None)
    return 'crashed: %s' % t.__name__ if t is not None else 'exited'


_RANK_ENV = ('RANK', 'OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'SLURM_PROCID')


def global_rank():
    """This process's global rank in a distributed job: torch.distributed's
    when torch is already imported (it is never imported here) and the
    default process group is initialised, else the first of $RANK,
    $OMPI_COMM_WORLD_RANK, $PMI_RANK, $SLURM_PROCID that is an integer; None
    when nothing says (a single process, or a process group not initialised
    yet).  $LOCAL_RANK is the rank on one node, not the global one."""
    torch = sys.modules.get('torch')
    try:
        dist = getattr(torch, 'distributed', None) if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # noqa: BLE001 - a half-imported torch is no rank
        pass
    for name in _RANK_ENV:
        v = os.environ.get(name, '').strip()
        if v.isdigit():
            return int(v)
    return None


def _dumps(obj):
    # NaN/Infinity as bare tokens, as the wire format accepts
    return json.dumps(obj, separators=(',', ':'), allow_nan=True)


class Client:
    """A connection to gradwatchd for one run.

    run        the run name (one per training job; keep it across restarts)
    address    the daemon's Unix socket path, or "host:port" for TCP
               (default: default_address())
    url        the daemon's HTTP API, e.g. "http://gpu-host:7471"
               (default: default_url()); used by the resume gate, and for
               ingest when transport is "http"
    token      a bearer token (default $GRADWATCH_TOKEN): sent on HTTP, as
               the first line on TCP and of every UDP datagram; the Unix
               socket needs none
    transport  "stream" (Unix socket/TCP, UDP fallback) or "http" (POST to
               url/v1/ingest, retried with an Idempotency-Key).  Default:
               "http" when url= is given and address= is not, or when only
               $GRADWATCH_URL (no $GRADWATCH_SOCKET) is set; else "stream"
    udp        "host:port" of the stream's UDP fallback, or "" to turn it
               off ($GRADWATCH_UDP, default 127.0.0.1:7470)
    http       the old spelling of url, as "host:port"
    timeout    seconds an HTTP request may take (ingest and the gate)
    jsonl      also append every line to this file (for gradwatch replay)
    events     False: no checkpoint_saved/resumed events (no manifests); the
               run_finished of close() is still sent
    max_queue  metric lines waiting to be sent before new ones are dropped
    interval   seconds between the sender's wake-ups
    all_ranks  False (default): in a distributed job only global rank 0
               sends; True: every rank sends, each line with its "rank"
    rank       this process's global rank (default: global_rank(), looked
               up again at the first line while it says nothing)

    Raises ValueError for a bad run name, URL or transport; nothing after
    construction raises into the training loop.
    """

    def __init__(self, run, address=None, udp=None, http=None, jsonl=None, events=True,
                 max_queue=100000, interval=0.02, url=None, token=None, transport=None,
                 timeout=30.0, all_ranks=False, rank=None):
        if not run or not isinstance(run, str):
            raise ValueError('gradwatch.Client: run must be a non-empty string')
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise ValueError('gradwatch.Client: rank must be an integer >= 0, not %r' % (rank,))
        self.run = run
        self.all_ranks = bool(all_ranks)
        self.rank = rank if rank is not None else global_rank()
        self._rank_known = self.rank is not None
        self._skipped = 0           # lines not sent: not rank 0 (written by log() only)
        self._skip_said = False
        self.transport = transport or _choose_transport(address, url)
        if self.transport not in ('stream', 'http'):
            raise ValueError('gradwatch.Client: transport must be "stream" or "http", not %r' % transport)
        self.address = address or default_address()
        if url is None and http:
            url = http if '://' in http else 'http://' + http
        self.url = (url or default_url()).rstrip('/')
        _transport.parse_url(self.url)
        self.http = self.url        # the old attribute name
        self.token = token if token is not None else os.environ.get('GRADWATCH_TOKEN') or None
        udp = os.environ.get('GRADWATCH_UDP', DEFAULT_UDP) if udp is None else udp
        self.udp = _transport.split_hostport(udp, 7470) if udp else None
        self.timeout = float(timeout)
        self.events = events
        self._max = int(max_queue)
        self._interval = interval
        self._q = collections.deque()
        self._wake = threading.Event()
        self._halt = threading.Event()     # close() stopped waiting: give up retries
        self._stop = False
        self._closed = False
        self._enqueued = 0          # items put in the queue (by the training thread)
        self._last_step = None      # the last step logged (written by log() only)
        self._finish_mark = -1      # _enqueued after the last run_finished
        self._dropped = 0           # (written by log() only)
        self._dropped_reported = 0
        self._errors = 0
        self._c = _transport.Counters()
        self._warn = _transport.Warner(run)
        if self.transport == 'http':
            self._tr = _transport.HttpTransport(self.url, self.token, self.timeout, self._c, self._warn,
                                                self._halt)
            self._batch = _transport.HttpTransport.MAX_LINES
        else:
            self._tr = _transport.StreamTransport(self.address, self.token, udp, self._c, self._warn)
            self._batch = 100
        self._jsonl = None
        self._thread = None
        if self.rank and not self.all_ranks:
            return          # a no-op on this rank: no file, no thread, no socket
        self._jsonl = open(jsonl, 'a', buffering=1 << 16) if jsonl else None
        self._thread = threading.Thread(target=self._run, name='gradwatch-sender', daemon=True)
        self._thread.start()
        ref = weakref.ref(self)
        atexit.register(lambda: ref() and ref().close(timeout=2, reason=_exit_reason()))

    # ---- ranks ------------------------------------------------------------------------

    def _skipping(self):
        """Is this a rank other than 0 that does not send (all_ranks False)?
        If so the line is counted as skipped, and the first time says why."""
        if self._rank_known and not self.rank:
            return False        # rank 0 or a single process: the common case
        if not self._rank_known:
            # the process group may have been set up since the client was
            # made (torch.multiprocessing.spawn): look once more
            self._rank_known = True
            r = global_rank()
            if r is not None:
                self.rank = r
        if not self.rank or self.all_ranks:
            return False
        self._skipped += 1
        if not self._skip_said:
            self._skip_said = True
            log.info('gradwatch: run %s: this process is rank %d of a distributed job; only '
                     'rank 0 sends (Client(all_ranks=True) sends from every rank)',
                     self.run, self.rank)
        return True

    def __repr__(self):
        who = '' if self.rank is None else ' rank=%d' % self.rank
        if self.rank and not self.all_ranks:
            who += ' (not sending: only rank 0 sends)'
        return '<gradwatch.Client run=%r%s transport=%s>' % (self.run, who, self.transport)

    # ---- the training loop's side: cheap, never raises ------------------------------

    def log(self, step, **metrics):
        """Queue one step's metrics (loss=, grad_norm=, lr=, throughput=, any
        other numbers).  Values may be Python numbers or 0-d tensors (they are
        converted in the sender thread).  Returns at once; never raises."""
        try:
            if self._skipping():
                return
            if len(self._q) >= self._max:
                self._dropped += 1
                return
            self._q.append((_METRIC, step, time.time(), metrics))
            self._enqueued += 1
            self._last_step = step
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

    def run_finished(self, step=None, reason='completed'):
        """Tell the daemon the run has ended: the silence after it is no
        hang, so no stall alert (and an open one resolves).  step: the last
        step (default: the last one logged).  close() calls it; call it
        yourself when the client lives on after training (a framework's
        train end).  Logging again afterwards starts the run again.  Does
        nothing before anything was logged; never raises."""
        try:
            if step is None:
                step = self._last_step
            if step is None:
                return
            if self._skipping():
                return
            attrs = {'event': 'run_finished'}
            if reason:
                attrs['reason'] = str(reason)
            self._q.append((_EVENT, step, time.time(), attrs))
            self._enqueued += 1
            self._finish_mark = self._enqueued
            self._wake.set()
        except Exception as e:  # noqa: BLE001
            self._errors += 1
            log.warning('gradwatch: could not record run_finished: %s', e)

    def _event(self, name, step, model, optimizer, scheduler, extra=None):
        if not self.events:
            return
        if self._skipping():
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
        url = '%s/v1/runs/%s/resume-check' % (self.url, urllib.parse.quote(self.run, safe=''))
        hdr = {'Content-Type': 'application/json', 'User-Agent': _transport.USER_AGENT}
        if self.token:
            hdr['Authorization'] = 'Bearer ' + self.token
        req = urllib.request.Request(url, data=json.dumps(m).encode(), method='POST', headers=hdr)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                answer = json.load(r)
        except urllib.error.HTTPError as e:
            # 200 with ok=false is a mismatch; anything else: no answer
            why = 'HTTP %d %s' % (e.code, _transport._error_text(e.read()))
            return self._gate_unavailable(why, required, e)
        except (OSError, ValueError) as e:
            return self._gate_unavailable(e, required, e)
        if not answer.get('ok'):
            raise ResumeError(answer, self.run)
        return answer

    def _gate_unavailable(self, why, required, exc):
        if required:
            raise GateUnavailable('gradwatch resume gate at %s: %s' % (self.url, why)) from exc
        log.warning('gradwatch: the resume gate at %s did not answer (%s); resuming unchecked',
                    self.url, why)
        return None

    # ---- control -----------------------------------------------------------------

    def flush(self, timeout=5.0):
        """Wait until everything queued so far was settled: handed to the
        stream or UDP, or (http) answered by the daemon, or counted lost.
        Returns True if that happened within timeout."""
        if self._thread is None:
            return True     # a rank that does not send
        target = self._enqueued
        deadline = time.monotonic() + timeout
        self._wake.set()
        while self._c.handled < target and self._thread.is_alive():
            if time.monotonic() > deadline:
                return False
            self._wake.set()
            time.sleep(0.001)
        return True

    def stats(self):
        """What became of every line logged so far.  Each line is in exactly
        one of these, so they add up to `logged`:

        queued            waiting in the client's queue
        in_flight         taken by the sender, not settled yet (http: being
                          posted or retried)
        sent              the daemon has it: written to its stream connection,
                          or (http) answered as committed
        sent_unconfirmed  handed to UDP with no refusal seen; UDP has no
                          acknowledgement, so it may still have been lost
        dropped           not queued: the queue was full (metrics only)
        skipped           not sent: this process is not rank 0 of its job
                          (and all_ranks is off); `rank` says which it is
        lost              no transport took it (socket and UDP down, UDP
                          refused, http given up: refused, disk full, close)
        invalid           could not be formatted (a step that is no integer)

        Also: rejected (of `sent`, lines the daemon refused; last_reject is
        the latest reason), retries (http requests repeated), errors
        (values that are no numbers, events whose manifest failed, local
        JSONL write errors), transport.  Exact when read from the thread
        that calls log(), or after flush()/close()."""
        c = self._c
        with c.lock:
            st = {'transport': self.transport, 'queued': len(self._q), 'in_flight': c.in_flight,
                  'sent': c.sent, 'sent_unconfirmed': c.unconfirmed, 'lost': c.lost,
                  'invalid': c.invalid, 'rejected': c.rejected, 'retries': c.retries,
                  'last_reject': c.last_reject}
        st['dropped'] = self._dropped
        st['skipped'] = self._skipped
        st['rank'] = self.rank
        st['logged'] = self._enqueued + self._dropped + self._skipped
        st['errors'] = self._errors
        return st

    def close(self, timeout=5.0, finished=True, reason=None):
        """Send run_finished (unless finished=False, or it was sent after
        the last line logged), flush (waiting up to timeout), then stop the
        sender: what is still queued or being retried after that is counted
        lost.  reason goes with run_finished (default "closed").  Warns if
        lines were dropped or lost.  Blocks for at most timeout + 5 seconds;
        a sender still stuck in a request then (a daemon that never answers,
        a socket nobody reads) is left behind, its lines reported as not
        delivered."""
        if self._closed:
            return
        self._closed = True
        if self._thread is None:
            return          # a rank that does not send: nothing to flush or stop
        if finished and self._finish_mark != self._enqueued:
            self.run_finished(reason=reason or 'closed')
        self.flush(timeout)
        self._halt.set()
        self._stop = True
        self._wake.set()
        self._thread.join(timeout + 5)
        if self._thread.is_alive():
            st = self.stats()
            log.warning('gradwatch: run %s: the sender is still blocked after close(); %d lines not '
                        'delivered', self.run, st['queued'] + st['in_flight'])
            return
        self._tr.close()
        if self._jsonl:
            try:
                self._jsonl.close()
            except OSError:
                pass
        st = self.stats()
        if st['dropped'] or st['lost']:
            log.warning('gradwatch: run %s: %d metric lines dropped (queue full), %d lost '
                        '(daemon unreachable or refusing)', self.run, st['dropped'], st['lost'])

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(reason='crashed: %s' % exc_type.__name__ if exc_type else None)

    # ---- the sender thread --------------------------------------------------------------

    def _run(self):
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            stopping = self._stop
            try:
                self._drain()
                self._tr.poll()
            except Exception as e:  # noqa: BLE001 - keep the sender alive
                self._errors += 1
                log.debug('gradwatch sender: %s', e)
            if stopping and not self._q:
                return

    def _format(self, item):
        kind, step, ts, fields = item
        rec = {'run': self.run, 'step': int(step), 'ts': ts}
        if self.all_ranks and self.rank is not None:
            rec['rank'] = self.rank
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

    def _take(self, n):
        """Move up to n items from the queue to in flight."""
        c = self._c
        with c.lock:
            items = []
            q = self._q
            while q and len(items) < n:
                items.append(q.popleft())
            c.in_flight += len(items)
        return items

    def _drain(self):
        while self._q:
            if self._halt.is_set() and self.transport == 'http':
                # close() stopped waiting: the daemon did not answer in time
                items = self._take(len(self._q))
                self._c.settle(lost=len(items))
                continue
            items = self._take(self._batch)
            lines = []
            for i, item in enumerate(items):
                try:
                    lines.append(self._format(item).encode())
                except Exception:  # noqa: BLE001
                    self._c.settle(invalid=1)
                if i % 100 == 99:
                    time.sleep(0)   # let the training thread have the GIL
            if not lines:
                continue
            data = b'\n'.join(lines) + b'\n'
            if self._jsonl:
                try:
                    self._jsonl.write(data.decode())
                    self._jsonl.flush()
                except OSError:
                    self._errors += 1
            if self.transport == 'http':
                self._tr.send(data, len(lines), lines)
            else:
                self._tr.send(data, len(lines))
            time.sleep(0)   # let the training thread have the GIL between batches
