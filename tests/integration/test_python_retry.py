"""The Python client when gradwatchd says "not now" (issue 22, item 9):

- a Unix socket whose transport is full answers a new connection
  {"error": "too_many_connections"} and closes it: the client says so once,
  carries the lines over UDP, and counts no line as rejected (it counted
  one line sent and rejected, and fell back to UDP without a word);
- the in-flight Idempotency-Key 409 carries Retry-After, as docs/api.md
  says, and the client retries the batch with the same key after it
  (it dropped the batch).
Every case checks that the counters add up.
"""
import contextlib
import http.client
import io
import json
import logging
import socket
import sys
import unittest

from gwtest import CONTRIB_PYTHON, Daemon, wait_for
from ingest_receiver import IngestReceiver

sys.path.insert(0, CONTRIB_PYTHON)
import gradwatch  # noqa: E402


def settled(st):
    return (st['sent'] + st['sent_unconfirmed'] + st['dropped'] + st['lost'] + st['invalid'] +
            st['queued'] + st['in_flight'])


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


class NotNow(unittest.TestCase):
    def test_too_many_connections_is_said_once_and_udp_carries_the_lines(self):
        cfg = {'limits': {'max_connections': 1, 'stream_evict_idle_ms': 86400000}}
        with Daemon(config=cfg) as d:
            holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            holder.connect(d.sock)
            holder.sendall(b'{"run":"holder","step":1,"loss":1}\n')
            d.wait_committed("SELECT count(*) FROM records", 1)
            with captured_log() as buf:
                c = gradwatch.Client(run='full', address=d.sock, udp='127.0.0.1:%d' % d.port)
                for step in range(1, 41):
                    c.log(step, loss=1.0)
                    if step % 10 == 0:
                        self.assertTrue(c.flush(timeout=60))
                        c._tr.next_connect = 0      # try the socket again at once
                c.close(finished=False)
            holder.close()
            st = c.stats()
            log = buf.getvalue()
            self.assertEqual(log.count('refused the connection'), 1, log)
            self.assertIn('too many unix connections', log)
            self.assertIn('sending over UDP to 127.0.0.1:%d' % d.port, log)
            self.assertEqual(st['rejected'], 0, st)
            self.assertEqual(settled(st), st['logged'])
            self.assertEqual(st['sent_unconfirmed'] + st['lost'], 40, st)
            got = wait_for(lambda: d.sql("SELECT count(*) FROM records r JOIN runs u ON "
                                         "u.id = r.run_id WHERE u.name = 'full'")[0][0]
                           == st['sent_unconfirmed'], 60, 'the UDP lines in the database')
            self.assertTrue(got)

    def test_the_daemon_sends_retry_after_with_the_in_flight_409(self):
        with Daemon() as d:
            body = b''.join(b'{"run":"k","step":%d,"loss":1}\n' % s for s in range(1, 101))
            first = socket.create_connection(('127.0.0.1', d.http_port))
            first.sendall(b'POST /v1/ingest HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k-1\r\n'
                          b'Content-Length: %d\r\n\r\n' % len(body) + body[:500])

            def repeat():
                c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=60)
                try:
                    c.request('POST', '/v1/ingest', body=body, headers={'Idempotency-Key': 'k-1'})
                    r = c.getresponse()
                    r.read()
                    return r.status == 409 and r
                finally:
                    c.close()
            r = wait_for(repeat, 30, 'a 409 while the first body is still arriving')
            self.assertEqual(r.getheader('Retry-After'), '1')
            first.close()

    def test_the_client_retries_a_409_after_retry_after(self):
        rcv = IngestReceiver(script=['409'])
        try:
            with captured_log() as buf:
                c = gradwatch.Client(run='busy', url=rcv.url)
                c.log(1, loss=1.0)
                self.assertTrue(c.flush(timeout=60))
                c.close(finished=False)
        finally:
            rcv.close()
        r = rcv.requests
        self.assertEqual([x['mode'] for x in r], ['409', 'ok'])
        self.assertEqual(r[0]['headers']['idempotency-key'], r[1]['headers']['idempotency-key'])
        self.assertGreaterEqual(r[1]['t'] - r[0]['t'], 0.9)     # Retry-After: 1
        st = c.stats()
        self.assertEqual((st['sent'], st['lost']), (1, 0), st)
        self.assertEqual(buf.getvalue().count('answered 409'), 1)


if __name__ == '__main__':
    unittest.main()
