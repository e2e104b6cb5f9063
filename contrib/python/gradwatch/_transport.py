"""How the client's sender thread hands lines to gradwatchd, and how every
line is accounted for.

Three transports, all used only from the sender thread:

StreamTransport  the daemon's Unix socket (or TCP "host:port"): NDJSON
                 written to one long-lived connection; on TCP with a token
                 the first line is {"auth": TOKEN}.  While the stream cannot
                 be reached (retried once a second) it hands the lines to
                 the UDP fallback, or counts them lost when there is none,
                 and says once why (no such file / permission denied /
                 nothing listening) -- a job that silently ends up on UDP is
                 the failure this avoids.  A daemon whose transport is full
                 answers a new connection {"error": "too_many_connections"}
                 and closes it: said once too, never counted as a rejected
                 line; the lines written into that connection are counted
                 lost (the daemon never read them).
UdpTransport     a *connected* datagram socket, so the kernel reports an
                 ICMP "port unreachable" back to us: a send that fails, or a
                 refusal seen right after a datagram left, counts that
                 datagram's lines as lost.  With a token, every datagram
                 starts with the {"auth": TOKEN} line.  Datagrams that left without a
                 refusal are counted `sent_unconfirmed`, never `sent`: UDP
                 has no acknowledgement.
HttpTransport    POST /v1/ingest on a remote daemon, one batch per request,
                 each with its own Idempotency-Key.  Connection errors,
                 timeouts, 500/502/503/504 are retried with the same key
                 (Retry-After honoured, else exponential back-off), as is a
                 409 (the same key still in flight: an earlier try's body
                 still arriving) after its Retry-After, so a
                 lost answer never stores a batch twice; 507 (disk full) is
                 retried a few times, then the batch is lost, loudly.  Lines
                 count as `sent` only once the daemon answered that it
                 committed them.

Accounting: every line the sender takes off the queue is "in flight" until
exactly one of Counters.settle()'s buckets takes it, so at any moment
sent + sent_unconfirmed + lost + invalid + in_flight + queued + dropped
== logged (rejected is the part of `sent` the daemon refused).
"""
import errno
import http.client
import json
import logging
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
import uuid

log = logging.getLogger('gradwatch')

MAX_DATAGRAM = 8192
USER_AGENT = 'gradwatch-python/0.1.0'


class Counters:
    """The sender's counters, read by stats() under the same lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = 0
        self.handled = 0            # lines settled in any bucket
        self.sent = 0
        self.unconfirmed = 0
        self.lost = 0
        self.invalid = 0
        self.rejected = 0
        self.retries = 0
        self.last_reject = None

    def settle(self, sent=0, unconfirmed=0, lost=0, invalid=0):
        """Move lines from in flight to their buckets."""
        with self.lock:
            n = sent + unconfirmed + lost + invalid
            self.in_flight -= n
            self.handled += n
            self.sent += sent
            self.unconfirmed += unconfirmed
            self.lost += lost
            self.invalid += invalid

    def unsend(self, n):
        """n lines counted sent turned out never read (their connection was
        refused): lost instead."""
        with self.lock:
            n = min(n, self.sent)
            self.sent -= n
            self.lost += n

    def reject(self, n, text):
        with self.lock:
            self.rejected += n
            if text:
                self.last_reject = text[:300]


class Warner:
    """One warning per (client, key): a fallback is announced once, not once
    per batch."""

    def __init__(self, run):
        self.run = run
        self.seen = set()

    def __call__(self, key, msg, *args, level=logging.WARNING):
        if key in self.seen:
            return
        self.seen.add(key)
        log.log(level, 'gradwatch: run %s: ' + msg, self.run, *args)


def split_hostport(s, default_port):
    host, _, port = s.rpartition(':')
    if not host:
        return s, default_port
    return host.strip('[]'), int(port)


def is_unix_address(address):
    return '/' in address or ':' not in address


# ---- UDP ------------------------------------------------------------------------------------

def auth_line(token):
    return (json.dumps({'auth': token}) + '\n').encode() if token else b''


class UdpTransport:
    def __init__(self, hostport, token, counters, warn):
        self.addr = split_hostport(hostport, 7470)
        self.auth = auth_line(token)
        self.c = counters
        self.warn = warn
        self.sock = None

    def _open(self):
        if self.sock is None:
            fam, typ, proto, _, sa = socket.getaddrinfo(self.addr[0], self.addr[1], 0, socket.SOCK_DGRAM)[0]
            s = socket.socket(fam, typ, proto)
            try:
                s.connect(sa)       # connected: ICMP refusals come back to us
            except OSError:
                s.close()
                raise
            self.sock = s
        return self.sock

    def _refused(self):
        self.warn('udp-refused', 'nothing receives UDP on %s:%s (connection refused): lines '
                  'sent there are counted lost', *self.addr)

    def send(self, data, nlines):
        """Send whole lines, at most MAX_DATAGRAM bytes a datagram (a longer
        line goes alone), each datagram after the auth line if there is a
        token; settles all nlines."""
        try:
            s = self._open()
        except OSError as e:
            self.warn('udp-open', 'cannot send UDP to %s:%s (%s): lines are lost', self.addr[0],
                      self.addr[1], e)
            self.c.settle(lost=nlines)
            return
        base = len(self.auth)
        chunk, size, done = [], base, 0
        for line in data.split(b'\n'):
            if not line:
                continue
            if chunk and size + len(line) + 1 > MAX_DATAGRAM:
                done += self._datagram(s, chunk)
                chunk, size = [], base
            chunk.append(line)
            size += len(line) + 1
        if chunk:
            done += self._datagram(s, chunk)
        if done < nlines:           # cannot happen: every line is in a datagram
            self.c.settle(lost=nlines - done)

    def _datagram(self, s, chunk):
        n = len(chunk)
        try:
            s.send(self.auth + b'\n'.join(chunk))
        except ConnectionRefusedError:
            # a refusal of an earlier datagram was pending: this one did not
            # leave (the kernel reports the error instead of sending)
            self._refused()
            self.c.settle(lost=n)
            return n
        except OSError as e:
            self.warn('udp-send', 'UDP send to %s:%s failed (%s): lines are lost', self.addr[0],
                      self.addr[1], e)
            self.c.settle(lost=n)
            return n
        # on loopback the refusal of this datagram is already here; elsewhere
        # it may come later and is then seen by the next send
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNREFUSED:
            self._refused()
            self.c.settle(lost=n)
        else:
            self.c.settle(unconfirmed=n)
        return n

    def close(self):
        if self.sock:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None


# ---- Unix socket / TCP stream ----------------------------------------------------------------

# What the daemon says when it closes a stream connection itself (then
# closes it): not about a line.
CONNECTION_ERRORS = ('too_many_connections', 'idle_evicted', 'idle_timeout', 'line_timeout')

def _why(e, address=None):
    if isinstance(e, FileNotFoundError):
        if address and not os.path.isabs(address) and not os.environ.get('GRADWATCH_SOCKET'):
            # the last resort of client.default_address(): nothing was found
            return ('no such file (is gradwatchd running? no socket in /run/gradwatch/, '
                    '$XDG_RUNTIME_DIR/gradwatch/ or $XDG_STATE_HOME/gradwatch/ either; '
                    'set $GRADWATCH_SOCKET to the path gradwatchd logs at start-up)')
        return 'no such file (is gradwatchd running? is $GRADWATCH_SOCKET right?)'
    if isinstance(e, PermissionError):
        return ("permission denied (the socket is for its group: add this user to the socket's "
                'group, e.g. `usermod -aG gradwatch $USER`, and log in again)')
    if isinstance(e, ConnectionRefusedError):
        return 'connection refused (is gradwatchd running?)'
    return str(e)


class StreamTransport:
    REFUSAL_WAIT = 0.05         # s after a connect for a too_many_connections answer

    def __init__(self, address, token, udp, counters, warn):
        self.address = address
        self.unix = is_unix_address(address)
        self.token = token
        self.udp = UdpTransport(udp, token, counters, warn) if udp else None
        self.c = counters
        self.warn = warn
        self.sock = None
        self.next_connect = 0.0
        self.was_connected = False
        self.sent_auth = False      # this connection began with an auth line
        self.conn_lines = 0         # lines written into this connection

    def _connect(self):
        if self.sock is not None:
            return True
        now = time.monotonic()
        if now < self.next_connect:
            return False
        self.next_connect = now + 1.0
        try:
            if self.unix:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                try:
                    s.connect(self.address)
                except OSError:
                    s.close()
                    raise
            else:
                s = socket.create_connection(split_hostport(self.address, 7470), timeout=5)
                if self.token:
                    try:
                        s.sendall(auth_line(self.token))
                    except OSError:
                        s.close()
                        raise
        except OSError as e:
            if self.udp:
                self.warn('fallback:' + type(e).__name__,
                          'cannot connect to %s: %s; sending over UDP to %s:%s instead until it '
                          'can (counted as sent_unconfirmed: UDP has no acknowledgement)',
                          self.address, _why(e, self.address), *self.udp.addr)
            else:
                self.warn('nostream:' + type(e).__name__,
                          'cannot connect to %s: %s; the UDP fallback is off, so lines are lost '
                          'until it can', self.address, _why(e, self.address))
            return False
        self.sock = s
        self.conn_lines = 0
        self.sent_auth = bool(self.token) and not self.unix
        # a full daemon refuses at once, as it accepts: look before writing,
        # so the first batch goes to the fallback instead of being lost
        if select.select([s], [], [], self.REFUSAL_WAIT)[0]:
            self._read_answers()
            if self.sock is None:
                return False
        if self.was_connected or self.warn.seen:
            log.info('gradwatch: run %s: connected to %s', self.warn.run, self.address)
        self.was_connected = True
        return True

    def _drop_connection(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.sock = None

    def _read_answers(self):
        """The daemon answers a rejected line with one JSON error line, and
        a refused token with an error line and a close."""
        try:
            # (a socket with a timeout would wait in recv even with MSG_DONTWAIT)
            if not select.select([self.sock], [], [], 0)[0]:
                return
            data = self.sock.recv(65536)
        except OSError:
            return
        if not data:
            self._drop_connection()     # the daemon closed it; reconnect next time
            return
        for line in data.decode('utf-8', 'replace').splitlines():
            if '"error"' not in line:
                continue
            try:
                ans = json.loads(line)
            except ValueError:
                ans = {}
            if not isinstance(ans, dict):
                ans = {}
            if ans.get('error') in CONNECTION_ERRORS:
                self._connection_closed(ans)
                return
            if ans.get('error') == 'unauthorized' or 'token' in line.lower():
                self.warn('tcp-auth', 'gradwatchd on %s refused the token: %s', self.address, line[:300],
                          level=logging.ERROR)
                continue
            if self.sent_auth and ans.get('line') == 1:
                # a daemon without tokens reads the auth line as a record
                self.warn('tcp-no-auth', 'gradwatchd on %s has no tokens configured and took the auth '
                          'line for a record (%s); give this client no token', self.address,
                          ans.get('error'))
                continue
            self.c.reject(1, line)

    def _connection_closed(self, ans):
        """The daemon closed the connection itself, saying why: not a line's
        rejection.  A refused one read nothing of what was written into it."""
        if ans.get('error') == 'too_many_connections':
            if self.udp:
                self.warn('too-many', 'gradwatchd on %s refused the connection: %s; sending over '
                          'UDP to %s:%s instead until it takes one (counted as sent_unconfirmed: '
                          'UDP has no acknowledgement)', self.address, ans.get('message', 'too many '
                          'connections'), *self.udp.addr)
            else:
                self.warn('too-many', 'gradwatchd on %s refused the connection: %s; the UDP '
                          'fallback is off, so lines are lost until it takes one', self.address,
                          ans.get('message', 'too many connections'))
            self.c.unsend(self.conn_lines)
        else:
            log.debug('gradwatch: run %s: gradwatchd closed the connection: %s', self.warn.run,
                      ans.get('error'))
        self._drop_connection()

    def send(self, data, nlines):
        if self._connect():
            try:
                self.sock.sendall(data)
                self.conn_lines += nlines
                self.c.settle(sent=nlines)
                self._read_answers()
                return
            except OSError:
                self._drop_connection()
        if self.udp:
            self.udp.send(data, nlines)
        else:
            self.c.settle(lost=nlines)

    def poll(self):
        """Between batches: read what the daemon said (rejections, a refused
        token, its end of the connection)."""
        if self.sock:
            self._read_answers()

    def close(self):
        if self.sock:
            self._drop_connection()
        if self.udp:
            self.udp.close()


# ---- HTTP ------------------------------------------------------------------------------------

def parse_url(url):
    """(scheme, host, port, path prefix) of an http(s) base URL; ValueError
    naming what is wrong."""
    p = urllib.parse.urlsplit(url)
    if p.scheme not in ('http', 'https') or not p.hostname:
        raise ValueError('gradwatch: %r is not an http:// or https:// URL (GRADWATCH_URL / url=)' % url)
    try:
        port = p.port or (443 if p.scheme == 'https' else 80)
    except ValueError as e:
        raise ValueError('gradwatch: %r: %s' % (url, e)) from None
    return p.scheme, p.hostname, port, p.path.rstrip('/')


def _retry_after(headers):
    v = headers.get('Retry-After') if headers else None
    try:
        return min(max(float(v), 0.0), 300.0) if v is not None else None
    except ValueError:
        return None


class HttpTransport:
    RETRY_STATUS = (500, 502, 503, 504)
    FULL_ATTEMPTS = 4           # 507: the first try and three retries
    MAX_LINES = 5000            # lines in one POST
    MAX_BYTES = 1 << 20

    def __init__(self, url, token, timeout, counters, warn, halt):
        self.url = url
        self.scheme, self.host, self.port, prefix = parse_url(url)
        self.path = prefix + '/v1/ingest'
        self.token = token
        self.timeout = timeout
        self.c = counters
        self.warn = warn
        self.halt = halt            # threading.Event: close() gave up waiting
        self.conn = None
        self.key_prefix = uuid.uuid4().hex
        self.seq = 0

    def _post(self, body, key):
        fresh = self.conn is None
        if fresh:
            if self.scheme == 'https':
                self.conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                        context=ssl.create_default_context())
            else:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        hdr = {'Content-Type': 'application/x-ndjson', 'Idempotency-Key': key,
               'User-Agent': USER_AGENT}
        if self.token:
            hdr['Authorization'] = 'Bearer ' + self.token
        try:
            self.conn.request('POST', self.path, body=body, headers=hdr)
            r = self.conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            self._close()
            e.gw_fresh = fresh
            raise
        if r.will_close:
            self._close()
        return r.status, r.headers, data

    def _close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def send(self, body, nlines, lines):
        """POST one batch until the daemon answers for it (or it is given up);
        settles all nlines.  Blocks the sender thread, never log()."""
        self.seq += 1
        key = '%s-%d' % (self.key_prefix, self.seq)
        delay, full, attempt = 0.2, 0, 0
        while True:
            if attempt and self.halt.is_set():
                self.c.settle(lost=nlines)
                return
            attempt += 1
            if attempt > 1:
                with self.c.lock:
                    self.c.retries += 1
            wait = None
            try:
                status, headers, data = self._post(body, key)
            except (OSError, http.client.HTTPException) as e:
                if not getattr(e, 'gw_fresh', True) and attempt == 1:
                    continue        # a kept-alive connection the server had closed: at once
                if (isinstance(e, http.client.BadStatusLine) and
                        not isinstance(e, http.client.RemoteDisconnected)):
                    # something answered, not in HTTP: most likely the NDJSON
                    # port given as the URL
                    self.warn('http-not-http', "%s answered, but not in HTTP (%.60s): is it "
                              "gradwatchd's NDJSON port (TCP, 7470 by default)? Its HTTP API "
                              'listens on 7471 by default; retrying with back-off', self.url,
                              str(e).strip())
                else:
                    self.warn('http-unreachable', 'gradwatchd at %s did not answer (%s); retrying '
                              'with back-off, the same batch with the same Idempotency-Key (log() '
                              'keeps queueing, up to max_queue lines)', self.url, e)
                status, headers, data = None, None, b''
            if status in (200, 413, 422):
                self._answered(status, data, nlines, lines)
                return
            if status is None or status in self.RETRY_STATUS:
                wait = _retry_after(headers)
                if status is not None:
                    self.warn('http-%d' % status, 'gradwatchd at %s answered %d (%s); retrying '
                              'the batch with the same Idempotency-Key', self.url, status,
                              _error_text(data))
            elif status == 409:
                # the same Idempotency-Key still in flight (an earlier try of
                # this batch whose body is still arriving): not a refusal
                wait = _retry_after(headers) or 1.0
                self.warn('http-409', 'gradwatchd at %s answered 409 (%s); retrying the batch '
                          'after %.0f s with the same Idempotency-Key', self.url,
                          _error_text(data), wait)
            elif status == 507:
                full += 1
                if full >= self.FULL_ATTEMPTS:
                    log.error('gradwatch: run %s: gradwatchd at %s has no disk space left (507: %s); '
                              '%d lines lost after %d tries', self.warn.run, self.url,
                              _error_text(data), nlines, full)
                    self.c.settle(lost=nlines)
                    return
                wait = max(_retry_after(headers) or 0, 1.0)
            else:
                self._refused(status, data, nlines)
                return
            if wait is None:
                wait = delay
                delay = min(delay * 2, 10.0)
            if self.halt.wait(wait):
                self.c.settle(lost=nlines)
                return

    def _answered(self, status, data, nlines, lines):
        try:
            ans = json.loads(data)
            accepted, rejected = int(ans['accepted']), int(ans.get('rejected') or 0)
        except (ValueError, TypeError, KeyError):
            # a 2xx without the daemon's answer (a proxy?): it took the batch
            if status == 200:
                self.c.settle(sent=nlines)
            else:
                self._refused(status, data, nlines)
            return
        done = min(nlines, max(0, accepted + rejected))
        self.c.settle(sent=done, lost=nlines - done)
        if rejected:
            errs = ans.get('errors') or []
            text = None
            if errs and isinstance(errs[0], dict):
                e = errs[0]
                i = e.get('line')
                line = lines[i - 1] if isinstance(i, int) and 0 < i <= len(lines) else None
                text = '%s%s' % (e.get('message', ''), ': ' + line.decode('utf-8', 'replace')[:200]
                                 if line else '')
            self.c.reject(rejected, text)
        if status == 413:
            self.warn('http-413', 'gradwatchd at %s: %s', self.url, _error_text(data))

    def _refused(self, status, data, nlines):
        if status == 401:
            what = 'refused the token (401): set token= or $GRADWATCH_TOKEN to an ingest token'
        elif status == 403:
            what = 'does not let this token ingest (403): it is a read token; use an ingest token'
        else:
            what = 'refused the batch (%d: %s)' % (status, _error_text(data))
        self.warn('http-refused-%d' % status, 'gradwatchd at %s %s; its lines are lost', self.url, what,
                  level=logging.ERROR)
        self.c.settle(lost=nlines)

    def poll(self):
        pass

    def close(self):
        self._close()


def _error_text(data):
    try:
        e = json.loads(data).get('error')
        if e:
            return str(e)[:300]
    except (ValueError, AttributeError, TypeError):
        pass
    return (data or b'').decode('utf-8', 'replace').strip()[:300] or 'no body'
