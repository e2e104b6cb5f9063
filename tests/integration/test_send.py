"""`gradwatch send`, `runs` and `alerts` (cli/client.c) against the real
gradwatchd and against local servers that misbehave on purpose
(ingest_receiver.py): lines committed with the input's line numbers on
rejects; exit 0 / 1 (lines rejected) / 2 (an error); a connect error is an
error, never "0 line(s) accepted"; a request that is never answered times
out (--timeout) and is retried a bounded number of times with the same
Idempotency-Key; 503 waits for Retry-After; a full disk (507) is not
retried forever; an error after some batches says what was committed and
where to resume; $GRADWATCH_URL and $GRADWATCH_TOKEN; usage errors exit 2,
--help exits 0; tokens and idempotent replays through the real daemon."""
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCH, GRADWATCHD, REALWORLD, Daemon, free_port, lines
from ingest_receiver import AnswerDropper, IngestReceiver

INGEST = 'ingest-token-0123456789abcdef'     # tokens are 16 to 256 characters
READ = 'read-token-0123456789abcdef'


def gw(*args, stdin=None, env=None, timeout=120):
    full = {k: v for k, v in os.environ.items() if not k.startswith('GRADWATCH_')}
    full.update(env or {})
    r = subprocess.run([GRADWATCH] + list(args), input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=full, timeout=timeout)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def count(d, run):
    return d.sql("SELECT count(*) FROM records r JOIN runs u ON u.id=r.run_id WHERE u.name=?", (run,))[0][0]


class Send(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwsend-')

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def file(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, 'wb') as f:
            f.write(data)
        return p

    def test_committed_with_the_input_line_numbers_of_rejects(self):
        data = lines('s1', range(1, 26)).split(b'\n')
        data[6] = b'{"run":"s1","step":"seven"}'
        data[18] = b'not json'
        path = self.file('in.jsonl', b'\n'.join(data))
        with Daemon() as d:
            rc, out, err = gw('send', '--url', 'http://127.0.0.1:%d' % d.http_port, '--batch', '10', path)
            self.assertEqual(rc, 1, err)
            self.assertIn('%s:7: ' % path, err)
            self.assertIn('%s:19: ' % path, err)
            self.assertIn('23 line(s) accepted and committed, 2 rejected', err)
            self.assertEqual(count(d, 's1'), 23)      # committed when send returns

    def test_a_log_in_another_format_says_how_to_send_it(self):
        # a Megatron log (gzip'ed too) given to send, which takes NDJSON:
        # every line is rejected, and send says what the file is and how
        # to send it
        src = os.path.join(REALWORLD, 'raw-more', 'megatron-ds-qwen7b-500.log')
        with open(src, 'rb') as f:
            data = f.read()
        plain = self.file('qwen7b.log', data)   # (train.log would be named after its folder)
        packed = self.file('qwen7b.log.gz', gzip.compress(data))
        with Daemon() as d:
            url = 'http://127.0.0.1:%d' % d.http_port
            for path, what in ((plain, 'a megatron'), (packed, 'a compressed megatron')):
                rc, out, err = gw('send', '--url', url, path)
                self.assertEqual(rc, 1, err)
                self.assertIn('gradwatch send: %s is %s log, not gradwatch NDJSON: '
                              'gradwatch convert %s | gradwatch send' % (path, what, path), err)
                self.assertEqual(count(d, 'qwen7b'), 0)
            # gradwatch's own NDJSON, gzip'ed: the same advice
            nd = self.file('run.jsonl.gz', gzip.compress(lines('z', range(1, 11))))
            rc, out, err = gw('send', '--url', url, nd)
            self.assertEqual(rc, 1, err)
            self.assertIn('is a compressed ndjson log', err)
            self.assertIn('gradwatch convert %s | gradwatch send' % nd, err)
            # what it says works
            conv = subprocess.run([GRADWATCH, 'convert', plain], stdout=subprocess.PIPE, timeout=120)
            rc, out, err = gw('send', '--url', url, stdin=conv.stdout)
            self.assertEqual(rc, 0, err)
            self.assertEqual(count(d, 'qwen7b'), 500)
            # NDJSON with a bad line gets no such advice
            rc, out, err = gw('send', '--url', url, self.file('x.jsonl', b'not json\n'))
            self.assertEqual(rc, 1, err)
            self.assertNotIn('gradwatch convert', err)

    def test_url_from_the_environment_and_stdin(self):
        with Daemon() as d:
            rc, out, err = gw('send', '--run', 'from-env', stdin=b'{"step":1,"loss":1}\n{"step":2,"loss":1}\n',
                              env={'GRADWATCH_URL': 'http://127.0.0.1:%d/' % d.http_port})
            self.assertEqual(rc, 0, err)
            self.assertIn('2 line(s) accepted and committed, 0 rejected', err)
            self.assertEqual(count(d, 'from-env'), 2)
            rc, out, err = gw('runs', '--json', env={'GRADWATCH_URL': 'http://127.0.0.1:%d' % d.http_port})
            self.assertEqual(rc, 0, err)
            self.assertEqual([r['run'] for r in json.loads(out)['runs']], ['from-env'])

    def test_a_connect_error_is_an_error_not_a_count(self):
        url = 'http://127.0.0.1:%d' % free_port()
        rc, out, err = gw('send', '--url', url, '--retries', '1', stdin=lines('x', range(1, 4)))
        self.assertEqual(rc, 2, err)
        self.assertIn('is gradwatchd running?', err)
        self.assertIn('again in 0.5 s (same Idempotency-Key, retry 1 of 1)', err)
        self.assertNotIn('accepted', err)
        rc, out, err = gw('runs', '--url', url)
        self.assertEqual(rc, 2)
        self.assertIn('is gradwatchd running? or use --db PATH', err)

    def test_an_empty_input_says_nothing_was_sent(self):
        path = self.file('empty.jsonl', b'')
        with Daemon() as d:
            rc, out, err = gw('send', '--url', 'http://127.0.0.1:%d' % d.http_port, path)
        self.assertEqual(rc, 0, err)
        self.assertIn('%s is empty: nothing to send' % path, err)

    def test_a_trailing_slash_or_an_endpoint_in_the_url(self):
        # "http://host:7471/" is the address; ".../v1/ingest" is not: said so
        with Daemon() as d:
            base = 'http://127.0.0.1:%d' % d.http_port
            rc, out, err = gw('send', '--url', base + '/', stdin=lines('slash', range(1, 3)))
            self.assertEqual(rc, 0, err)
            rc, out, err = gw('runs', '--url', base + '//')
            self.assertEqual(rc, 0, err)
            self.assertIn('slash', out)
            rc, out, err = gw('send', '--url', base + '/v1/ingest', stdin=lines('slash', range(3, 4)))
            self.assertEqual(rc, 2, err)
            self.assertIn("is the daemon's address (http://HOST:PORT), not one of its endpoints", err)

    def test_the_ndjson_port_given_for_the_http_one_is_named(self):
        # a new user's likely mix-up: --url with the TCP NDJSON port
        with Daemon() as d:
            url = 'http://127.0.0.1:%d' % d.port
            for args in (['runs'], ['alerts'], ['export', 'r'], ['send', '--retries', '0']):
                rc, out, err = gw(*args, '--url', url, stdin=lines('r', range(1, 3)))
                self.assertEqual(rc, 2, (args, err))
                self.assertIn("the answer is not HTTP: is this gradwatchd's NDJSON port", err, args)
                self.assertNotIn('is gradwatchd running?', err, args)   # it is

    def test_a_receiver_that_never_answers_times_out(self):
        rcv = IngestReceiver(mode='hang')
        try:
            rc, out, err = gw('send', '--url', rcv.url, '--timeout', '1', '--retries', '1',
                              stdin=lines('hang', range(1, 6)))
            keys = rcv.keys()
        finally:
            rcv.close()
        self.assertEqual(rc, 2, err)
        self.assertIn('no answer within 1 s (--timeout)', err)
        self.assertNotIn('accepted', err)
        self.assertEqual(len(keys), 2, keys)
        self.assertEqual(keys[0], keys[1])

    def test_an_error_after_some_batches_says_where_to_resume(self):
        path = self.file('big.jsonl', lines('part', range(1, 26)))
        rcv = IngestReceiver(script=['ok'], mode='hang')
        try:
            rc, out, err = gw('send', '--url', rcv.url, '--batch', '10', '--timeout', '1', '--retries', '0',
                              path)
        finally:
            rcv.close()
        self.assertEqual(rc, 2, err)
        self.assertIn('before the error 10 line(s) were accepted and committed, 0 rejected', err)
        self.assertIn('%s from line 11 on is not known to be committed; to resume: tail -n +11 %s | '
                      'gradwatch send' % (path, path), err)

    def test_503_is_retried_after_retry_after_with_the_same_key(self):
        rcv = IngestReceiver(script=['503'])
        try:
            rc, out, err = gw('send', '--url', rcv.url, stdin=lines('busy', range(1, 4)))
            r = list(rcv.requests)
        finally:
            rcv.close()
        self.assertEqual(rc, 0, err)
        self.assertIn('the daemon answered 503; sending lines 1-3 of <stdin> again in 1.0 s', err)
        self.assertEqual([x['mode'] for x in r], ['503', 'ok'])
        self.assertEqual(r[0]['headers']['idempotency-key'], r[1]['headers']['idempotency-key'])
        self.assertGreaterEqual(r[1]['t'] - r[0]['t'], 0.9)

    def test_a_full_disk_is_not_retried_forever(self):
        rcv = IngestReceiver(mode='507')
        try:
            rc, out, err = gw('send', '--url', rcv.url, '--retries', '10', stdin=lines('full', range(1, 4)))
            keys = rcv.keys()
        finally:
            rcv.close()
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(keys), 3, keys)          # the first try and two retries
        self.assertEqual(len(set(keys)), 1)
        self.assertIn("the daemon's disk is full (507: scripted 507); gave up after 3 tries", err)

    def test_every_batch_and_every_invocation_has_its_own_key(self):
        path = self.file('k.jsonl', lines('keys', range(1, 26)))
        rcv = IngestReceiver()
        try:
            for _ in range(2):
                rc, out, err = gw('send', '--url', rcv.url, '--batch', '10', path)
                self.assertEqual(rc, 0, err)
            keys = rcv.keys()
        finally:
            rcv.close()
        self.assertEqual(len(keys), 6)
        self.assertEqual(len(set(keys)), 6, keys)
        for k in keys:
            self.assertTrue(1 <= len(k) <= 128 and k.isprintable() and ' ' not in k, k)

    def test_the_token_goes_to_every_command(self):
        rcv = IngestReceiver()
        env = {'GRADWATCH_URL': rcv.url, 'GRADWATCH_TOKEN': 'tok-abc'}
        try:
            self.assertEqual(gw('send', stdin=lines('t', [1]), env=env)[0], 0)
            self.assertEqual(gw('runs', env=env)[0], 0)
            self.assertEqual(gw('alerts', 'some-run', env=env)[0], 0)
            r = list(rcv.requests)
        finally:
            rcv.close()
        self.assertEqual([x['path'] for x in r], ['/v1/ingest', '/v1/runs', '/v1/runs/some-run/alerts'])
        self.assertEqual({x['headers'].get('authorization') for x in r}, {'Bearer tok-abc'})

    def test_usage(self):
        rc, out, err = gw('send', '--help')
        self.assertEqual(rc, 0)
        self.assertIn('usage: gradwatch send', out)
        self.assertIn('GRADWATCH_TOKEN', out)
        for cmd in ('runs', 'alerts'):
            rc, out, err = gw(cmd, '--help')
            self.assertEqual(rc, 0)
            self.assertIn('usage: gradwatch %s' % cmd, out)
        for args, says in ((['send', '--batch', '0'], '--batch wants'),
                           (['send', '--timeout', '-1'], '--timeout wants'),
                           (['send', '--timeout', 'soon'], '--timeout wants'),
                           (['send', '--retries', 'many'], '--retries wants'),
                           (['send', '--bogus'], 'unknown option "--bogus"'),
                           (['send', '--url'], 'needs a value: "--url"'),
                           (['send', '--url', 'ftp://x'], 'must start with http://'),
                           (['runs', '--frobnicate'], 'unknown option'),
                           (['alerts', 'a', 'b'], 'one RUN at most')):
            rc, out, err = gw(*args, stdin=b'')
            self.assertEqual(rc, 2, args)
            self.assertIn(says, err, args)
            self.assertIn('--help)', err, args)
        rc, out, err = gw('send', os.path.join(self.tmp, 'missing.jsonl'))
        self.assertEqual(rc, 2)
        self.assertIn('missing.jsonl: No such file or directory', err)
        self.assertNotIn('accepted', err)


class Idempotency(unittest.TestCase):
    def test_a_lost_answer_stores_nothing_twice(self):
        with Daemon() as d:
            proxy = AnswerDropper(d.http_port)
            try:
                rc, out, err = gw('send', '--url', 'http://127.0.0.1:%d' % proxy.port,
                                  stdin=lines('idem-send', range(1, 101)))
            finally:
                proxy.close()
            self.assertEqual(rc, 0, err)
            self.assertIn('same Idempotency-Key, retry 1 of 3', err)
            self.assertIn('100 line(s) accepted and committed', err)
            self.assertEqual(count(d, 'idem-send'), 100)


class Tokens(unittest.TestCase):
    def test_ingest_read_and_no_token(self):
        tmp = tempfile.mkdtemp(prefix='gwsendtok-')
        try:
            ing, rd = os.path.join(tmp, 'ingest.tokens'), os.path.join(tmp, 'read.tokens')
            with open(ing, 'w') as f:
                f.write(INGEST + '\n')
            with open(rd, 'w') as f:
                f.write(READ + '\n')
            with Daemon(config={'auth': {'ingest_tokens_file': ing, 'read_tokens_file': rd}}) as d:
                url = {'GRADWATCH_URL': 'http://127.0.0.1:%d' % d.http_port}
                rc, out, err = gw('send', stdin=lines('tok', [1]), env=url)
                self.assertEqual(rc, 2)
                self.assertIn('wants a token: set $GRADWATCH_TOKEN', err)
                rc, out, err = gw('send', stdin=lines('tok', [1]), env=dict(url, GRADWATCH_TOKEN=READ))
                self.assertEqual(rc, 2)
                self.assertIn('may only read', err)
                rc, out, err = gw('send', stdin=lines('tok', [1, 2]), env=dict(url, GRADWATCH_TOKEN=INGEST))
                self.assertEqual(rc, 0, err)
                self.assertEqual(count(d, 'tok'), 2)
                self.assertEqual(gw('runs', env=url)[0], 2)
                rc, out, err = gw('runs', '--json', env=dict(url, GRADWATCH_TOKEN=READ))
                self.assertEqual(rc, 0, err)
                self.assertEqual([r['run'] for r in json.loads(out)['runs']], ['tok'])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class Piped(unittest.TestCase):
    def test_a_live_job_piped_in_arrives_as_it_goes(self):
        # `train.py | gradwatch send`: lines are sent when the input pauses,
        # not once 10,000 have piled up or the job ends
        with Daemon() as d:
            p = subprocess.Popen([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % d.http_port,
                                  '--run', 'piped'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            try:
                for step in range(1, 4):
                    p.stdin.write(b'{"step":%d,"loss":1.0}\n' % step)
                    p.stdin.flush()
                    self.assertEqual(d.wait_committed("SELECT count(*) FROM records", step,
                                                      timeout=60), step)
            finally:
                p.stdin.close()
                p.wait(30)
            self.assertEqual(p.returncode, 0, p.stderr.read())

    def test_ctrl_c_says_what_was_committed(self):
        # Ctrl-C in the middle of a piped send: one line of what is stored and
        # from which input line on it is not known to be, then death by SIGINT
        with Daemon() as d:
            p = subprocess.Popen([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % d.http_port,
                                  '--run', 'interrupted'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            try:
                p.stdin.write(b''.join(b'{"step":%d,"loss":1.0}\n' % s for s in range(1, 4)))
                p.stdin.flush()
                d.wait_committed("SELECT count(*) FROM records", 3, timeout=60)
                p.send_signal(signal.SIGINT)
                p.wait(30)
            finally:
                p.stdin.close()
            err = p.stderr.read().decode()
            self.assertEqual(p.returncode, -signal.SIGINT, err)
            m = re.search(r'gradwatch send: interrupted: (\d+) line\(s\) accepted and committed, 0 '
                          r'rejected; <stdin> from line (\d+) on is not known to be committed', err)
            self.assertTrue(m, err)
            # the answer may still have been on its way: 0 or 3, never more than is stored
            acc = int(m.group(1))
            self.assertIn(acc, (0, 3), err)
            self.assertEqual(int(m.group(2)), acc + 1, err)


if __name__ == '__main__':
    unittest.main()
