"""The Python client's transports and accounting (contrib/python/gradwatch/
_transport.py) against the real gradwatchd and against small local servers
that misbehave on purpose:

- the environment names shared with `gradwatch` (GRADWATCH_SOCKET, _URL,
  _UDP, _TOKEN) and the old ones still working, with one warning each;
- the fallback from the Unix socket to UDP, announced once with its reason
  (no such file; permission denied, from a real non-root process when the
  tests run as root);
- UDP to a port where nothing listens: counted lost, never sent;
- the HTTP transport: an answer lost on the way makes the client send the
  same batch with the same Idempotency-Key again; 503 waits for
  Retry-After; 507 is given up after a bounded number of tries; 401 is not
  retried; a daemon that never answers does not block log(), and close()
  counts what it could not deliver;
- tokens on HTTP and TCP, and idempotent replays through the real daemon;
- `pip install` of contrib/python, offline, writing nothing into the
  source tree.
In every case the counters add up: sent + sent_unconfirmed + dropped + lost
+ invalid + queued + in_flight == logged.
"""
import contextlib
import io
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.request

from gwtest import CONTRIB_PYTHON, GRADWATCHD, Daemon, free_port, wait_for
from ingest_receiver import AnswerDropper, IngestReceiver

sys.path.insert(0, CONTRIB_PYTHON)
import gradwatch  # noqa: E402

INGEST = 'ingest-token-0123456789abcdef'     # tokens are 16 to 256 characters
READ = 'read-token-0123456789abcdef'


def settled(st):
    return (st['sent'] + st['sent_unconfirmed'] + st['dropped'] + st['lost'] + st['invalid'] +
            st['queued'] + st['in_flight'])


def rows(d, run):
    return d.sql("SELECT r.step FROM records r JOIN runs u ON u.id=r.run_id WHERE u.name=? "
                 "ORDER BY r.id", (run,))


def wait_rows(d, run, n, timeout=60):
    return wait_for(lambda: len(rows(d, run)) >= n and rows(d, run), timeout,
                    '%d rows of run %s' % (n, run))


@contextlib.contextmanager
def captured_log():
    buf = io.StringIO()
    h = logging.StreamHandler(buf)
    lg = logging.getLogger('gradwatch')
    lg.addHandler(h)
    old = lg.level
    lg.setLevel(logging.INFO)
    try:
        yield buf
    finally:
        lg.removeHandler(h)
        lg.setLevel(old)


def run_script(code, env, user=None, timeout=60):
    """Run a client script in a fresh interpreter (its own environment, its
    own one-time warnings), as another user (uid = gid, no other groups) if
    given; returns (rc, stdout, stderr)."""
    python = '/usr/bin/python3' if user is not None and os.path.exists('/usr/bin/python3') else sys.executable
    full = dict(os.environ)
    for k in list(full):
        if k.startswith('GRADWATCH_'):
            del full[k]
    full.update(env)
    full['PYTHONPATH'] = CONTRIB_PYTHON
    r = subprocess.run([python, '-c', code], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, cwd='/',
                       **({} if user is None else {'user': user, 'group': user, 'extra_groups': []}))
    return r.returncode, r.stdout.decode(), r.stderr.decode()


# ---- environment -----------------------------------------------------------------------------

class Environment(unittest.TestCase):
    def setUp(self):
        self.d = Daemon().start()

    def tearDown(self):
        self.d.close()

    SCRIPT = ('import json, gradwatch\n'
              'for k in range(2):\n'
              '    c = gradwatch.Client(run="env-%s-%d" % (RUN, k))\n'
              '    for s in range(1, 51): c.log(s, loss=1.0)\n'
              '    c.close(finished=False)\n'
              '    print(json.dumps(dict(c.stats(), url=c.url, address=c.address, token=c.token)))\n')

    def test_the_names_shared_with_the_gradwatch_command(self):
        d = self.d
        rc, out, err = run_script('RUN = "new"\n' + self.SCRIPT, {
            'GRADWATCH_SOCKET': d.sock, 'GRADWATCH_URL': 'http://127.0.0.1:%d/' % d.http_port,
            'GRADWATCH_UDP': '127.0.0.1:%d' % d.port, 'GRADWATCH_TOKEN': 'tok-1'})
        self.assertEqual(rc, 0, err)
        st = [json.loads(x) for x in out.splitlines()]
        self.assertEqual(st[0]['address'], d.sock)
        self.assertEqual(st[0]['url'], 'http://127.0.0.1:%d' % d.http_port)
        self.assertEqual(st[0]['token'], 'tok-1')
        self.assertEqual([s['transport'] for s in st], ['stream', 'stream'])
        self.assertEqual([s['sent'] for s in st], [50, 50])
        self.assertNotIn('deprecated', err)
        wait_rows(d, 'env-new-1', 50)

    def test_only_a_url_means_http_ingest(self):
        d = self.d
        rc, out, err = run_script('RUN = "url"\n' + self.SCRIPT,
                                  {'GRADWATCH_URL': 'http://127.0.0.1:%d' % d.http_port})
        self.assertEqual(rc, 0, err)
        st = [json.loads(x) for x in out.splitlines()]
        self.assertEqual([(s['transport'], s['sent']) for s in st], [('http', 50), ('http', 50)])
        # answered over HTTP means committed: the rows are there now
        self.assertEqual(len(rows(d, 'env-url-0')), 50)
        self.assertEqual(d.stats()['transports']['http']['accepted'], 100)

    def test_old_names_work_with_one_warning_each(self):
        d = self.d
        rc, out, err = run_script('RUN = "old"\n' + self.SCRIPT, {
            'GRADWATCH_ADDRESS': d.sock, 'GRADWATCH_HTTP': '127.0.0.1:%d' % d.http_port,
            'GRADWATCH_UDP': ''})
        self.assertEqual(rc, 0, err)
        st = [json.loads(x) for x in out.splitlines()]
        self.assertEqual(st[0]['address'], d.sock)
        self.assertEqual(st[0]['url'], 'http://127.0.0.1:%d' % d.http_port)
        self.assertEqual([s['sent'] for s in st], [50, 50])
        self.assertEqual(err.count('$GRADWATCH_ADDRESS is deprecated'), 1, err)
        self.assertEqual(err.count('$GRADWATCH_HTTP is deprecated'), 1, err)
        self.assertIn('use $GRADWATCH_SOCKET', err)
        wait_rows(d, 'env-old-1', 50)

    def test_the_ndjson_port_as_url_is_named(self):
        # GRADWATCH_URL at the TCP NDJSON port: the daemon answers there, not
        # in HTTP; the warning says which port is which, not "did not answer"
        rc, out, err = run_script(
            'import json, gradwatch\n'
            'c = gradwatch.Client(run="url-port")\n'
            'c.log(1, loss=1.0)\n'
            'c.close(timeout=2, finished=False)\n'
            'print(json.dumps(c.stats()))\n',
            {'GRADWATCH_URL': 'http://127.0.0.1:%d' % self.d.port})
        self.assertEqual(rc, 0, err)
        self.assertIn('answered, but not in HTTP', err)
        self.assertIn("is it gradwatchd's NDJSON port", err)
        self.assertNotIn('did not answer', err)
        self.assertEqual(json.loads(out)['lost'], 1, out)

    def test_bad_url_is_refused_at_construction(self):
        with self.assertRaisesRegex(ValueError, 'not an http'):
            gradwatch.Client(run='x', url='ftp://host/')
        with self.assertRaisesRegex(ValueError, 'transport'):
            gradwatch.Client(run='x', transport='carrier-pigeon')


# ---- the stream's fallback and UDP accounting --------------------------------------------------

FALLBACK_SCRIPT = '''
import json, gradwatch
c = gradwatch.Client(run=RUN, address=ADDR, udp=UDP)
for s in range(1, 101):
    c.log(s, loss=1.0)
c.flush()
c._tr.next_connect = 0          # the next batch tries the socket again
for s in range(101, 201):
    c.log(s, loss=1.0)
c.close(finished=False)
print(json.dumps(c.stats()))
'''


class Fallback(unittest.TestCase):
    def setUp(self):
        self.d = Daemon().start()

    def tearDown(self):
        self.d.close()

    def script(self, run, addr, **kw):
        return run_script('RUN, ADDR, UDP = %r, %r, %r\n' % (run, addr, '127.0.0.1:%d' % self.d.port) +
                          FALLBACK_SCRIPT, {}, **kw)

    def test_no_such_socket_is_said_once_and_udp_carries_the_lines(self):
        rc, out, err = self.script('fb-enoent', os.path.join(self.d.dir, 'nobody.sock'))
        self.assertEqual(rc, 0, err)
        st = json.loads(out)
        self.assertEqual(err.count('cannot connect'), 1, err)
        self.assertIn('cannot connect to %s: no such file' % os.path.join(self.d.dir, 'nobody.sock'), err)
        self.assertIn('sending over UDP to 127.0.0.1:%d' % self.d.port, err)
        self.assertEqual((st['sent'], st['sent_unconfirmed'], st['lost']), (0, 200, 0), st)
        self.assertEqual(settled(st), st['logged'])
        wait_rows(self.d, 'fb-enoent', 200)

    def test_no_socket_anywhere_says_where_it_looked(self):
        # no address, no $GRADWATCH_SOCKET, no daemon in the default places:
        # the warning says where the client looked and what to set
        if os.path.exists('/run/gradwatch/gradwatch.sock') or os.path.exists('/gradwatch.sock'):
            self.skipTest('a gradwatchd socket exists in a default place on this machine')
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = run_script(
                'import json, gradwatch\n'
                'c = gradwatch.Client(run="fb-nowhere", udp="")\n'
                'c.log(1, loss=1.0)\n'
                'c.close(finished=False)\n'
                'print(json.dumps(c.stats()))\n',
                {'XDG_STATE_HOME': tmp, 'XDG_RUNTIME_DIR': tmp})
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)['lost'], 1, out)
        self.assertIn('cannot connect to gradwatch.sock: no such file (is gradwatchd running? '
                      'no socket in /run/gradwatch/, $XDG_RUNTIME_DIR/gradwatch/ or '
                      '$XDG_STATE_HOME/gradwatch/ either; set $GRADWATCH_SOCKET', err)

    def test_permission_denied_is_said_once_with_what_to_do(self):
        d = self.d
        os.chmod(d.dir, 0o755)          # the socket file's own mode (0660) is what stops us
        if os.geteuid() == 0:
            kw = {'user': 65534}        # a real job user outside the socket's group
        else:
            os.chmod(d.sock, 0)
            kw = {}
        rc, out, err = self.script('fb-eacces', d.sock, **kw)
        self.assertEqual(rc, 0, err)
        st = json.loads(out)
        self.assertEqual(err.count('cannot connect'), 1, err)
        self.assertIn('cannot connect to %s: permission denied' % d.sock, err)
        self.assertIn("add this user to the socket's group", err)
        self.assertEqual((st['sent'], st['sent_unconfirmed']), (0, 200), st)
        wait_rows(d, 'fb-eacces', 200)

    def test_udp_to_a_closed_port_is_lost_never_sent(self):
        closed = free_port()
        with captured_log() as buf:
            c = gradwatch.Client(run='udp-closed', address=os.path.join(self.d.dir, 'nobody.sock'),
                                 udp='127.0.0.1:%d' % closed)
            for s in range(1, 1001):
                c.log(s, loss=1.0, grad_norm=0.5)
            c.close(finished=False)
        st = c.stats()
        self.assertEqual(st['sent'], 0, st)
        # each refusal is seen right after its datagram (loopback) or by the
        # next send; either way, some lines are known lost and none are "sent"
        self.assertGreater(st['lost'], 0, st)
        self.assertEqual(st['lost'] + st['sent_unconfirmed'], 1000, st)
        self.assertEqual(settled(st), st['logged'])
        self.assertIn('nothing receives UDP on 127.0.0.1:%d' % closed, buf.getvalue())
        self.assertIn('%d lost' % st['lost'], buf.getvalue())      # close() says so

    def test_a_token_for_a_daemon_without_tokens_is_said_not_counted(self):
        with captured_log() as buf:
            c = gradwatch.Client(run='tok-unneeded', address='127.0.0.1:%d' % self.d.port, token=INGEST,
                                 udp='')
            for s in range(1, 21):
                c.log(s, loss=1.0)
            c.flush()
            wait_for(lambda: 'has no tokens configured' in buf.getvalue(), 60, 'the warning')
            c.log(21, loss=1.0)
            c.close(finished=False)
        st = c.stats()
        self.assertEqual((st['sent'], st['rejected']), (21, 0), st)
        wait_rows(self.d, 'tok-unneeded', 21)

    def test_accounting_adds_up_with_bad_steps_and_a_full_queue(self):
        # (interval 60: the sender wakes only at close, so the drops are exact)
        c = gradwatch.Client(run='acct', address=self.d.sock, udp='', max_queue=50, interval=60)
        c.log('not-a-step', loss=1.0)
        for s in range(1, 201):
            c.log(s, loss=1.0)
        st = c.stats()
        self.assertEqual(st['logged'], 201)
        self.assertEqual(settled(st), 201, st)
        c.close()
        st = c.stats()
        # close()'s run_finished is a line too (an event: never dropped)
        self.assertEqual((st['logged'], settled(st)), (202, 202), st)
        self.assertEqual((st['queued'], st['in_flight']), (0, 0))
        self.assertEqual(st['dropped'], 151)
        self.assertEqual(st['invalid'], 1)
        self.assertEqual(st['sent'], 50)
        wait_rows(self.d, 'acct', 49)


# ---- HTTP transport against a misbehaving receiver --------------------------------------------

class HttpTransport(unittest.TestCase):
    def client(self, rcv, run, **kw):
        kw.setdefault('token', 'secret-token')
        return gradwatch.Client(run=run, url=rcv.url, **kw)

    def deliver(self, rcv, run, batches, log=None):
        """Log `batches` (lists of steps, each flushed before the next) to a
        client of rcv, close both; returns the client (its stats are final).
        The client closes without its run_finished line, which would be one
        more request: these tests count the transport's requests and lines."""
        try:
            with contextlib.ExitStack() as stack:
                if log is not None:
                    log.append(stack.enter_context(captured_log()))
                c = self.client(rcv, run)
                for steps in batches:
                    for s in steps:
                        c.log(s, loss=1.0)
                    self.assertTrue(c.flush(timeout=60))
                c.close(finished=False)
        finally:
            rcv.close()
        return c

    def test_a_lost_answer_is_retried_with_the_same_key(self):
        rcv = IngestReceiver(script=['drop'])
        st = self.deliver(rcv, 'retry', [range(1, 301)]).stats()
        keys = rcv.keys()
        self.assertEqual(len(keys), 2, keys)
        self.assertEqual(keys[0], keys[1])
        self.assertTrue(keys[0] and 1 <= len(keys[0]) <= 128 and keys[0].isprintable())
        self.assertEqual(rcv.requests[0]['body'], rcv.requests[1]['body'])
        self.assertEqual(rcv.requests[0]['body'].count(b'\n'), 300)
        self.assertEqual(rcv.requests[0]['path'], '/v1/ingest')
        h = rcv.requests[1]['headers']
        self.assertEqual(h['authorization'], 'Bearer secret-token')
        self.assertEqual(h['content-type'], 'application/x-ndjson')
        self.assertEqual((st['sent'], st['lost'], st['retries']), (300, 0, 1), st)
        self.assertEqual(settled(st), 300)

    def test_every_batch_has_its_own_key(self):
        rcv = IngestReceiver()
        self.deliver(rcv, 'keys', [[1], [2], [3]])
        keys = rcv.keys()
        self.assertEqual(len(keys), 3)
        self.assertEqual(len(set(keys)), 3, keys)

    def test_503_waits_for_retry_after(self):
        rcv = IngestReceiver(script=['503'])
        c = self.deliver(rcv, 'busy', [[1]])
        r = rcv.requests
        self.assertEqual([x['mode'] for x in r], ['503', 'ok'])
        self.assertEqual(r[0]['headers']['idempotency-key'], r[1]['headers']['idempotency-key'])
        self.assertGreaterEqual(r[1]['t'] - r[0]['t'], 0.9)     # Retry-After: 1
        self.assertEqual(c.stats()['sent'], 1)

    def test_disk_full_is_given_up_after_a_few_tries_loudly(self):
        rcv, log = IngestReceiver(mode='507'), []
        st = self.deliver(rcv, 'full', [range(1, 11)], log).stats()
        keys = rcv.keys()
        self.assertEqual(len(keys), 4, keys)
        self.assertEqual(len(set(keys)), 1)
        self.assertEqual((st['sent'], st['lost']), (0, 10), st)
        self.assertIn('no disk space left (507', log[0].getvalue())
        self.assertIn('10 lines lost after 4 tries', log[0].getvalue())

    def test_a_refused_token_is_not_retried(self):
        rcv, log = IngestReceiver(mode='401'), []
        c = self.deliver(rcv, 'denied', [[1, 2]], log)
        self.assertEqual(len(rcv.requests), 1)
        self.assertEqual(c.stats()['lost'], 2)
        self.assertIn('refused the token (401)', log[0].getvalue())

    def test_a_daemon_that_never_answers_blocks_neither_log_nor_close(self):
        rcv = IngestReceiver(mode='hang')
        try:
            c = self.client(rcv, 'hung', timeout=1, max_queue=1000)
            for s in range(1, 3001):
                c.log(s, loss=1.0)      # returns although nothing is answered
            wait_for(lambda: rcv.requests, 60, 'the first request')
            st = c.stats()
            self.assertEqual(st['sent'], 0)
            self.assertEqual(settled(st), 3000, st)
            self.assertGreater(st['dropped'], 0)
            c.close(timeout=3, finished=False)   # the request times out after 1 s, the retry hangs too
        finally:
            rcv.close()
        st = c.stats()
        self.assertEqual((st['sent'], st['queued'], st['in_flight']), (0, 0, 0), st)
        self.assertEqual(st['lost'] + st['dropped'], 3000, st)
        self.assertGreater(st['retries'], 0)        # the timed-out request was repeated


# ---- the real daemon: HTTP ingest, idempotent replays, tokens ---------------------------------

class RealDaemonHttp(unittest.TestCase):
    def test_http_ingest_and_the_gate(self):
        with Daemon() as d:
            c = gradwatch.Client(run='http-real', url='http://127.0.0.1:%d' % d.http_port)
            for s in range(1, 12001):
                c.log(s, loss=2.0 - s / 12000, grad_norm=0.5)
            self.assertTrue(c.flush(timeout=60))
            # answered means committed: no waiting for the rows
            self.assertEqual(len(rows(d, 'http-real')), 12000)
            c.log(12001, loss='oops')       # a value that is no number: the line goes without it
            c.close()
            st = c.stats()
            # and close()'s run_finished line
            self.assertEqual((st['sent'], st['rejected'], st['lost']), (12002, 0, 0), st)
            self.assertEqual(d.stats()['transports']['http']['accepted'], 12002)
            self.assertEqual(d.sql("SELECT e.name, e.step, e.attrs FROM events e JOIN runs u "
                                   "ON u.id=e.run_id WHERE u.name='http-real'"),
                             [('run_finished', 12001, '{"reason":"closed"}')])

    def test_a_lost_answer_stores_nothing_twice(self):
        with Daemon() as d:
            proxy = AnswerDropper(d.http_port)
            try:
                c = gradwatch.Client(run='idem', url='http://127.0.0.1:%d' % proxy.port)
                for s in range(1, 501):
                    c.log(s, loss=1.0)
                self.assertTrue(c.flush(timeout=60))
                c.close(finished=False)     # no run_finished request: this counts requests
            finally:
                proxy.close()
            st = c.stats()
            self.assertEqual((st['sent'], st['retries']), (500, 1), st)
            self.assertEqual([r[0] for r in rows(d, 'idem')], list(range(1, 501)))
            segs = d.get('/v1/runs/idem')[1]['segments']
            self.assertEqual(len(segs), 1, segs)


def auth_daemon(tmp):
    ing, rd = os.path.join(tmp, 'ingest.tokens'), os.path.join(tmp, 'read.tokens')
    with open(ing, 'w') as f:
        f.write(INGEST + '\n')
    with open(rd, 'w') as f:
        f.write(READ + '\n')
    return Daemon(config={'auth': {'ingest_tokens_file': ing, 'read_tokens_file': rd}})


class Tokens(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwtok-')
        self.d = auth_daemon(self.tmp).start()

    def tearDown(self):
        self.d.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_http_with_ingest_read_and_no_token(self):
        d = self.d
        url = 'http://127.0.0.1:%d' % d.http_port
        got = {}
        with captured_log() as buf:
            for name, tok in (('ingest', INGEST), ('read', READ), ('none', '')):
                c = gradwatch.Client(run='tok-' + name, url=url, token=tok)
                for s in range(1, 21):
                    c.log(s, loss=1.0)
                self.assertTrue(c.flush(timeout=30))
                c.close(finished=False)
                got[name] = c.stats()
        self.assertEqual(got['ingest']['sent'], 20)
        self.assertEqual(len(rows(d, 'tok-ingest')), 20)
        self.assertEqual((got['read']['sent'], got['read']['lost']), (0, 20))
        self.assertEqual((got['none']['sent'], got['none']['lost']), (0, 20))
        self.assertIn('(403)', buf.getvalue())
        self.assertIn('(401)', buf.getvalue())
        self.assertEqual(rows(d, 'tok-read') + rows(d, 'tok-none'), [])

    def test_the_gate_sends_the_token(self):
        d = self.d
        m = {'optimizer': 'AdamW', 'param_names_sha256': '0' * 64, 'optimizer_state_keys': ['exp_avg'],
             'hparams': {'lr': 0.001}}
        d.send_unix((json.dumps(dict(m, run='tok-gate', step=10, event='checkpoint_saved')) + '\n').encode())
        wait_for(lambda: d.sql("SELECT count(*) FROM events")[0][0] == 1, 60, 'the checkpoint event')
        kw = dict(run='tok-gate', url='http://127.0.0.1:%d' % d.http_port, address=d.sock, udp='')
        c = gradwatch.Client(token=READ, **kw)     # a read token may ask the gate
        self.assertTrue(c.check_resume(manifest=m, required=True)['ok'])
        c.close()
        c = gradwatch.Client(token='', **kw)
        with self.assertRaisesRegex(gradwatch.GateUnavailable, 'HTTP 401'):
            c.check_resume(manifest=m, required=True)
        c.close()

    def test_tcp_sends_the_token_first(self):
        d = self.d
        c = gradwatch.Client(run='tok-tcp', address='127.0.0.1:%d' % d.port, token=INGEST,
                             udp='')
        for s in range(1, 101):
            c.log(s, loss=1.0)
        c.close()
        self.assertEqual(c.stats()['sent'], 101)    # and close()'s run_finished
        wait_rows(d, 'tok-tcp', 100)

    def test_tcp_with_a_wrong_token_says_so(self):
        d = self.d
        with captured_log() as buf:
            c = gradwatch.Client(run='tok-tcp-bad', address='127.0.0.1:%d' % d.port, token='wrong-token-0123456789abcdef', udp='')
            c.log(1, loss=1.0)
            c.flush()
            wait_for(lambda: 'refused the token' in buf.getvalue(), 60, 'the refusal to be reported')
            c.close()
        self.assertEqual(rows(d, 'tok-tcp-bad'), [])

    def test_udp_datagrams_carry_the_token(self):
        d = self.d
        nobody = os.path.join(d.dir, 'nobody.sock')
        udp = '127.0.0.1:%d' % d.port
        with_token = gradwatch.Client(run='tok-udp', address=nobody, udp=udp, token=INGEST)
        without = gradwatch.Client(run='tok-udp-none', address=nobody, udp=udp, token='')
        for c in (with_token, without):
            for s in range(1, 201):
                c.log(s, loss=1.0)
            c.close(finished=False)
            self.assertEqual(c.stats()['sent_unconfirmed'], 200)
        wait_rows(d, 'tok-udp', 200)
        # what "unconfirmed" means: the daemon dropped every datagram without a token
        def refused():
            req = urllib.request.Request('http://127.0.0.1:%d/v1/stats' % d.http_port,
                                         headers={'Authorization': 'Bearer ' + READ})
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.load(r)['transports']['udp']['rejected'].get('unauthorized')
        wait_for(refused, 60, 'the datagrams without a token to be refused')
        self.assertEqual(rows(d, 'tok-udp-none'), [])

    def test_unix_socket_needs_no_token(self):
        c = gradwatch.Client(run='tok-unix', address=self.d.sock, udp='')
        for s in range(1, 11):
            c.log(s, loss=1.0)
        c.close()
        wait_rows(self.d, 'tok-unix', 10)


# ---- pip install ---------------------------------------------------------------------------------

def build_python():
    """An interpreter with setuptools and wheel (what an offline install
    needs): Debian's /usr/bin/python3 with python3-setuptools and
    python3-wheel, else the one running the tests."""
    for p in ('/usr/bin/python3', sys.executable):
        if os.path.exists(p) and subprocess.run([p, '-c', 'import setuptools, wheel, venv'],
                                                stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL).returncode == 0:
            return p
    return None


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != '__pycache__']
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = os.stat(p).st_mtime_ns
        for x in dirs:
            out[os.path.relpath(os.path.join(d, x), root) + '/'] = 0
    return out


class PipInstall(unittest.TestCase):
    @unittest.skipUnless(build_python() or os.environ.get('CI'),
                         'no Python with setuptools and wheel (python3-setuptools, python3-wheel)')
    def test_offline_install_leaves_the_source_tree_alone(self):
        before = tree(CONTRIB_PYTHON)
        tmp = tempfile.mkdtemp(prefix='gwpip-')
        try:
            venv = os.path.join(tmp, 'venv')
            subprocess.run([build_python(), '-m', 'venv', '--system-site-packages', venv], check=True)
            py = os.path.join(venv, 'bin', 'python')
            # the command of docs/integrations.md and contrib/python/pyproject.toml
            r = subprocess.run([py, '-m', 'pip', 'install', '--no-build-isolation', '--no-index',
                                '--disable-pip-version-check', CONTRIB_PYTHON],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            r = subprocess.run([py, '-c', 'import gradwatch, gradwatch._transport; print(gradwatch.__file__)'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            self.assertTrue(r.stdout.decode().startswith(venv), r.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        after = tree(CONTRIB_PYTHON)
        self.assertEqual(sorted(set(after) - set(before)), [])
        self.assertEqual(after, before)


if __name__ == '__main__':
    unittest.main()
