"""Idempotency-Key on POST /v1/ingest: a batch sent again after a lost
answer is stored once (no duplicate rows, no false restart segment), also
across a daemon restart; a repeat gets the first answer again, marked
Idempotent-Replayed; a repeat while the first body is still arriving gets
409; a first request cut off before its body ends leaves no key behind."""
import http.client
import json
import shutil
import socket
import tempfile
import unittest

from gwtest import Daemon, lines, wait_for


def post(d, body, key=None, run=None):
    c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=60)
    try:
        headers = {'Idempotency-Key': key} if key else {}
        c.request('POST', '/v1/ingest' + ('?run=' + run if run else ''), body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.getheader('Idempotent-Replayed'), json.loads(r.read())
    finally:
        c.close()


def batch(run, a, b):
    return ''.join(json.dumps({'run': run, 'step': s, 'loss': 2.0 / s, 'grad_norm': 0.5}) + '\n'
                   for s in range(a, b)).encode()


class Idempotency(unittest.TestCase):
    def counts(self, d, run):
        rows = d.sql("SELECT count(*), count(DISTINCT seg), max(seg) FROM records r JOIN runs n "
                     "ON n.id = r.run_id WHERE n.name = ?", (run,))[0]
        return rows

    def test_repeat_is_stored_once_and_answered_the_same(self):
        with Daemon() as d:
            body = batch('r', 1, 101) + b'{"run":"r","step":"x"}\n'
            first = post(d, body, key='batch-0001')
            self.assertEqual((first[0], first[1], first[2]['accepted']), (422, None, 100))
            again = post(d, body, key='batch-0001')
            self.assertEqual(again[0], first[0])
            self.assertEqual(again[1], 'true')
            self.assertEqual(again[2], first[2])
            self.assertEqual(self.counts(d, 'r'), (100, 1, 1))
            # the next batch with another key goes on normally: no false restart
            self.assertEqual(post(d, batch('r', 101, 201), key='batch-0002')[0], 200)
            self.assertEqual(self.counts(d, 'r'), (200, 1, 1))
            # without a key, a repeat is stored again (and is a rewind)
            self.assertEqual(post(d, batch('r', 101, 201))[0], 200)
            self.assertEqual(self.counts(d, 'r')[0], 300)

    def test_lost_answer_then_retry_even_after_a_restart(self):
        tmp = tempfile.mkdtemp(prefix='gw-idem-')
        self.addCleanup(shutil.rmtree, tmp, True)
        d = Daemon(workdir=tmp)
        with d:
            body = batch('lost', 1, 501)
            # the client sends, then goes away without reading the answer
            s = socket.create_connection(('127.0.0.1', d.http_port))
            s.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k-lost\r\n'
                      b'Content-Length: %d\r\n\r\n' % len(body) + body)
            s.close()
            d.wait_committed("SELECT count(*) FROM records", 500)
            st, replayed, res = post(d, body, key='k-lost')
            self.assertEqual((st, replayed, res['accepted']), (200, 'true', 500))
            self.assertEqual(self.counts(d, 'lost'), (500, 1, 1))
        # the key is on disk with the lines: a retry after a restart is a repeat too
        with Daemon(workdir=tmp) as d2:
            st, replayed, res = post(d2, body, key='k-lost')
            self.assertEqual((st, replayed), (200, 'true'))
            self.assertEqual(self.counts(d2, 'lost'), (500, 1, 1))

    def test_concurrent_repeat_and_cut_off_first(self):
        with Daemon() as d:
            body = batch('c', 1, 201)
            s = socket.create_connection(('127.0.0.1', d.http_port))
            s.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k-c\r\n'
                      b'Content-Length: %d\r\n\r\n' % len(body) + body[:1000])
            # the first body is still arriving: the repeat is told to wait
            def conflict():
                st, _, res = post(d, body, key='k-c')
                return st == 409 and 'still being sent' in res['error']
            wait_for(conflict, timeout=60, what='409 for a repeat during the first body')
            # the first request is cut off: nothing of it is stored, the key is free
            s.close()
            wait_for(lambda: post(d, body, key='k-c')[0] == 200, timeout=60,
                     what='the key to be free after the first request was cut off')
            self.assertEqual(self.counts(d, 'c'), (200, 1, 1))

    def test_key_reused_for_another_body_is_refused(self):
        """A key names one request: the same key with another body (or
        another ?run=) is a client bug, refused with 422 and not stored,
        rather than answered with the first batch's answer (as the IETF
        Idempotency-Key draft and payment APIs do); also after a restart."""
        tmp = tempfile.mkdtemp(prefix='gw-idem-')
        self.addCleanup(shutil.rmtree, tmp, True)
        first_body = batch('m', 1, 51)
        with Daemon(workdir=tmp) as d:
            self.assertEqual(post(d, first_body, key='k-m')[0], 200)
            for other, run in ((batch('m', 51, 101), None), (first_body + b'\n', None),
                               (b'', None), (first_body, 'elsewhere')):
                st, replayed, res = post(d, other, key='k-m', run=run)
                self.assertEqual((st, replayed), (422, None), (other[:40], run, res))
                self.assertIn('Idempotency-Key', res['error'])
                self.assertIn('different', res['error'])
            self.assertEqual(self.counts(d, 'm'), (50, 1, 1))
            # the same body again is still a repeat
            self.assertEqual(post(d, first_body, key='k-m')[:2], (200, 'true'))
        with Daemon(workdir=tmp) as d2:
            st, replayed, res = post(d2, batch('m', 51, 101), key='k-m')
            self.assertEqual((st, replayed), (422, None), res)
            self.assertEqual(post(d2, first_body, key='k-m')[:2], (200, 'true'))
            self.assertEqual(self.counts(d2, 'm'), (50, 1, 1))

    def test_bad_keys(self):
        with Daemon() as d:
            for key in ('', 'x' * 129, 'has space', 'tab\there'):
                c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=30)
                c.putrequest('POST', '/v1/ingest')
                c.putheader('Idempotency-Key', key)
                c.putheader('Content-Length', '0')
                c.endheaders()
                r = c.getresponse()
                self.assertIn(r.status, (400, 431) if len(key) > 128 else (400,), key)
                c.close()


if __name__ == '__main__':
    unittest.main()
