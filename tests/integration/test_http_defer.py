"""Deferred answers (http.c's one path: barrier, read on the thread pool,
back on the loop, answer after the commit), against the real daemon over
real sockets.

CommitWaits: a write whose commit fails (another process holds SQLite's
write lock) is answered 503 "not ... yet" with the cause, never 200, also
when the daemon is told to stop meanwhile; it goes in once the database can
be written.  GoneAway: acknowledgements, withdrawals, DELETE /v1/runs/{run}
and POST /v1/prune sent and their connections closed at once (a FIN or a
reset) while an ingest keeps the store busy, and a stop with such requests
waiting: the routes still work after, what was committed is consistent, and
the daemon stops cleanly (no sanitizer report, no handle left open:
Daemon.stop checks).  The daemon notices a client gone only when it writes
to it (it does not read while a request is answered), so most of these
requests run to their end; the stop is what closes connections mid-way.
"""

import contextlib
import http.client
import json
import os
import signal
import socket
import sqlite3
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
from receiver import finite_lines, nan_incident  # noqa: E402


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None)
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


def send_and_go(port, method, path, body=b"", reset=False):
    """Send one whole request and close without reading the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                  % (method.encode(), path.encode(), len(body), body))
        if reset:   # RST instead of FIN
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        s.close()


def hold_write_lock(d):
    """Take the database's write lock from outside (as another writer
    would): the daemon's commits wait for it, for SQLite's busy timeout,
    then fail and are retried.  Returns the connection; close() frees it."""
    con = sqlite3.connect(d.db, isolation_level=None, timeout=10)
    con.execute("BEGIN IMMEDIATE")
    return con


def open_alert(d, run):
    d.post("/v1/ingest", "\n".join(nan_incident(run)).encode() + b"\n")
    return gwtest.wait_for(lambda: (d.get("/v1/runs/%s/alerts" % run)[1].get("alerts")
                                    or [None])[0], 60, "the alert of " + run)


class BodyLimits(unittest.TestCase):
    def test_an_ack_body_too_large_is_refused_before_it_is_sent(self):
        # Content-Length over limits.max_body_bytes: 413 at once, the body is
        # not waited for; over the route's own 8 KiB: read, dropped, 413
        with gwtest.Daemon() as d:
            aid = open_alert(d, "r1")["id"]
            s = socket.create_connection(("127.0.0.1", d.http_port), timeout=30)
            s.sendall(b"POST /v1/alerts/%s/ack HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 10000000000\r\n\r\n" % aid.encode())
            answer = gwtest.read_all(s, timeout=30)
            s.close()
            self.assertTrue(answer.startswith(b"HTTP/1.1 413 "), answer)
            self.assertIn(b"the body has 10000000000 bytes; limits.max_body_bytes is", answer)
            st, j = request(d.http_port, "POST", "/v1/alerts/%s/ack" % aid, {"note": "x" * 9000})
            self.assertEqual(st, 413, j)
            self.assertIn("the body is over 8192 bytes", j["error"])
            self.assertNotIn("acked_at", d.get("/v1/alerts/" + aid)[1])
            self.assertEqual(d.stop(), 0)


class CommitWaits(unittest.TestCase):
    def test_a_write_that_cannot_commit_is_answered_503_not_200(self):
        # what was answered is on disk: an ack or a deletion whose commit
        # fails is not answered 200, and says why; it goes in once the
        # database can be written again
        with gwtest.Daemon() as d:
            aid = open_alert(d, "r1")["id"]
            d.post("/v1/ingest", "\n".join(finite_lines("old", 1, 3)).encode() + b"\n")
            lock = hold_write_lock(d)
            try:
                st, j = request(d.http_port, "POST", "/v1/alerts/%s/ack" % aid, {"by": "alice"})
                self.assertEqual(st, 503, j)
                self.assertTrue(j["error"].startswith("not acknowledged yet: the database "
                                                      "cannot be written (database is locked"),
                                j)
                st, j = request(d.http_port, "DELETE", "/v1/runs/old")
                self.assertEqual(st, 503, j)
                self.assertTrue(j["error"].startswith("not deleted yet: the database cannot be "
                                                      "written"), j)
            finally:
                lock.close()
            gwtest.wait_for(lambda: d.get("/v1/alerts/" + aid)[1].get("acked_by") == "alice",
                            60, "the ack committed once the lock is gone")
            gwtest.wait_for(lambda: d.get("/v1/runs/old")[0] == 404, 60, "the run deleted")
            self.assertEqual(d.stop(), 0)

    def test_stop_while_an_answer_waits_for_its_commit(self):
        # the daemon is told to stop while an ack waits for its commit: the
        # client is answered (503, not yet), never a false 200 or nothing;
        # the daemon stops cleanly, and the ack is in once the database
        # could be written (the store retries it before exiting)
        d = gwtest.Daemon().start()
        lock = None
        try:
            aid = open_alert(d, "r1")["id"]
            lock = hold_write_lock(d)
            s = socket.create_connection(("127.0.0.1", d.http_port), timeout=60)
            body = b'{"by":"alice"}'
            s.sendall(b"POST /v1/alerts/%s/ack HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                      b"\r\n%s" % (aid.encode(), len(body), body))
            gwtest.wait_for(lambda: "acknowledged by alice" in d.logtext(), 60,
                            "the ack queued, waiting for its commit")
            d.proc.send_signal(signal.SIGTERM)
            answer = gwtest.read_all(s, timeout=60)
            s.close()
            self.assertTrue(answer.startswith(b"HTTP/1.1 503 "), answer)
            self.assertIn(b"not acknowledged yet: the database cannot be written", answer)
            lock.close()
            lock = None
            self.assertEqual(d.stop(), 0)
            with gwtest.Daemon(workdir=d.dir) as again:
                self.assertEqual(again.get("/v1/alerts/" + aid)[1].get("acked_by"), "alice")
                self.assertEqual(again.stop(), 0)
        finally:
            if lock:
                lock.close()
            d.close()


class SameAlertAtOnce(unittest.TestCase):
    """Requests on one alert at the same time: each is read after the
    barrier, but another may decide (and queue its change) between that read
    and this one's decision.  Every answer must say the state it asked for:
    a withdrawal never answers 'acknowledged' (a stale row), and the final
    state is the last one decided."""

    def test_concurrent_acks_and_withdrawals_answer_what_they_did(self):
        with gwtest.Daemon() as d:
            port = d.http_port
            d.post("/v1/ingest", "\n".join(nan_incident("r1")).encode() + b"\n")
            alert = gwtest.wait_for(lambda: (d.get("/v1/runs/r1/alerts")[1].get("alerts")
                                             or [None])[0], 60, "the alert of r1")
            ack = "/v1/alerts/%s/ack" % alert["id"]
            answers = []

            def both(method, body):
                out = [None, None]

                def one(i):
                    out[i] = request(port, method, ack, body)
                ts = [threading.Thread(target=one, args=(i,)) for i in (0, 1)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                answers.extend((method, st, a) for st, a in out)

            for _ in range(15):
                both("DELETE", None)
                both("POST", {"by": "alice"})
            for method, st, a in answers:
                self.assertEqual(st, 200, a)
                if method == "POST":
                    self.assertEqual(a.get("acked_by"), "alice", a)
                else:
                    self.assertNotIn("acked_at", a)
            st, a = d.get("/v1/alerts/" + alert["id"])
            self.assertEqual(a.get("acked_by"), "alice", a)


class HeldBetweenReadAndDecision(unittest.TestCase):
    """A deferred request reads on the thread pool, then decides on the
    loop; what other requests and lines do in between must not make its
    answer wrong.  The test hook GRADWATCH_FAULT_HOLD_READS=PATH (http.c)
    holds each read, once done, until the test lets it go, so the
    in-between is forced, not hoped for."""

    def setUp(self):
        gwtest.need_fault_hooks(self)

    def arm(self, match=''):
        """Hold the reads of requests whose query string holds `match`."""
        self.hold = os.path.join(tempfile.mkdtemp(prefix='gwhold-'), 'hold')
        with open(self.hold, 'w') as f:
            f.write(match)
        return {'GRADWATCH_FAULT_HOLD_READS': self.hold}

    def held(self, d, n):
        gwtest.wait_for(lambda: os.path.exists('%s.held.%d' % (self.hold, n)), 60,
                        'read %d held' % n)

    def release(self, n):
        open('%s.go.%d' % (self.hold, n), 'w').close()

    def start(self, d, method, path, body=None):
        out = []
        t = threading.Thread(target=lambda: out.append(request(d.http_port, method, path, body)))
        t.start()
        return t, out

    def test_an_ack_whose_run_is_deleted_meanwhile_is_answered_404(self):
        with gwtest.Daemon(env=self.arm('hold-me')) as d:
            d.post("/v1/ingest", "\n".join(nan_incident("gone")).encode() + b"\n")
            alert = gwtest.wait_for(lambda: (d.get("/v1/runs/gone/alerts")[1].get("alerts")
                                             or [None])[0], 60, "the alert of gone")
            t, out = self.start(d, "POST", "/v1/alerts/%s/ack?hold-me" % alert["id"],
                                {"by": "alice"})
            self.held(d, 1)   # read: open, not acknowledged
            self.assertEqual(request(d.http_port, "DELETE", "/v1/runs/gone"),
                             (200, {"deleted": ["gone"]}))
            self.release(1)
            t.join()
            st, a = out[0]
            self.assertEqual(st, 404, a)
            self.assertIn("deleted", a["error"])
            self.assertEqual(d.get("/v1/alerts/" + alert["id"])[0], 404)

    def test_prune_spares_a_run_that_sent_a_line_after_it_was_picked(self):
        # both runs dormant (evicted after 1 s idle): "back" is rebuilt
        # from disk by its line while the prune is between its pick and
        # its deletions
        cfg = {'tick_ms': 50, 'limits': {'run_evict_idle_s': 1}}
        with gwtest.Daemon(config=cfg, env=self.arm('hold-me')) as d:
            for run in ("back", "stale"):
                d.post("/v1/ingest", "\n".join(finite_lines(run, 1, 5)).encode() + b"\n")
            gwtest.wait_for(lambda: 'idle run(s) made dormant' in d.logtext(), 60,
                            'the runs to go dormant')
            time.sleep(1.2)   # both last seen over 1 s ago
            t, out = self.start(d, "POST", "/v1/prune?older_than=1s&hold-me")
            self.held(d, 1)   # picked: both
            self.assertEqual(d.post("/v1/ingest", "\n".join(finite_lines("back", 6, 1)).encode()
                                    + b"\n")[0], 200)
            self.release(1)
            t.join()
            self.assertEqual(out[0], (200, {"deleted": ["stale"]}))
            st, run = d.get("/v1/runs/back")
            self.assertEqual(st, 200, run)
            self.assertEqual(d.sql("SELECT count(*), max(step) FROM records r JOIN runs u "
                                   "ON u.id = r.run_id WHERE u.name = 'back'"), [(6, 6)])
            self.assertEqual(d.get("/v1/runs/stale")[0], 404)

    def test_a_decision_behind_its_read_is_the_outboxs_and_waits_for_its_commit(self):
        """A withdrawal reads the alert acknowledged; another withdrawal
        decides meanwhile, its commit held back (another process holds the
        write lock).  The first decides on the outbox's table, which has
        the other's change: it is withdrawn already, so nothing is read
        again (no second read is ever held) and nothing is written; its
        answer says so once that change is committed, not before (it read
        the row again, up to 8 times, and then answered 409)."""
        with gwtest.Daemon(env=self.arm('hold-me')) as d:
            aid = open_alert(d, "r1")["id"]
            ack = "/v1/alerts/%s/ack" % aid
            self.assertEqual(request(d.http_port, "POST", ack, {"by": "alice"})[0], 200)
            t1, out1 = self.start(d, "DELETE", ack + "?hold-me")
            self.held(d, 1)                      # read: acknowledged
            lock = hold_write_lock(d)
            try:
                t2, out2 = self.start(d, "DELETE", ack)
                gwtest.wait_for(lambda: "acknowledgement withdrawn" in d.logtext(), 60,
                                "the second withdrawal decided")
                self.release(1)                  # the first decides now
                # not answered before the change it reports is committed
                # (0.5 s: well inside SQLite's 5 s busy timeout the writer
                # waits, which started before the log line above was polled
                # and the hold released: on a loaded machine those took
                # seconds, and a lock held past 5 s answers 503)
                deadline = time.time() + 0.5
                while time.time() < deadline and not out1:
                    time.sleep(0.02)
                self.assertEqual(out1, [], "answered before the change it reports was committed")
            finally:
                lock.close()
            t1.join()
            t2.join()
            self.assertEqual([o[0][0] for o in (out1, out2)], [200, 200], (out1, out2))
            for st, a in (out1[0], out2[0]):
                self.assertNotIn("acked_at", a)
                self.assertEqual(a["kind"], "unack", a)
            self.assertEqual(out1[0][1]["version"], out2[0][1]["version"])
            self.assertIsNone(d.get("/v1/alerts/" + aid)[1].get("acked_at"))
            self.assertFalse(os.path.exists(self.hold + '.held.2'), "the alert was read again")

    def test_a_withdrawal_outrun_by_other_requests_says_so(self):
        """While the withdrawal's read is held, another request
        acknowledges the alert (committed): the withdrawal decides on the
        outbox's table, which has that acknowledgement, so it withdraws
        it and the alert is as it says.  (Once it read the alert again
        after every change, up to 8 times, then answered 409; before
        that, it answered 200 'not acknowledged' from its stale read and
        wrote nothing, and the alert stayed acknowledged.)"""
        with gwtest.Daemon(env=self.arm('hold-me')) as d:
            d.post("/v1/ingest", "\n".join(nan_incident("r1")).encode() + b"\n")
            alert = gwtest.wait_for(lambda: (d.get("/v1/runs/r1/alerts")[1].get("alerts")
                                             or [None])[0], 60, "the alert of r1")
            ack = "/v1/alerts/%s/ack" % alert["id"]
            t, out = self.start(d, "DELETE", ack + "?hold-me")
            self.held(d, 1)   # read: open, not acknowledged
            st, a = request(d.http_port, "POST", ack, {"by": "alice"})
            self.assertEqual(st, 200, a)
            self.release(1)
            t.join()
            st, a = out[0]
            final = d.get("/v1/alerts/" + alert["id"])[1]
            self.assertEqual(st, 200, a)
            self.assertNotIn("acked_at", a)
            self.assertEqual(a["kind"], "unack", a)
            self.assertNotIn("acked_at", final)
            self.assertEqual(final["version"], a["version"])
            self.assertFalse(os.path.exists(self.hold + '.held.2'), "the alert was read again")


class GoneAway(unittest.TestCase):
    def test_clients_gone_at_every_stage(self):
        d = gwtest.Daemon().start()
        try:
            port = d.http_port
            d.post("/v1/ingest", "\n".join(nan_incident("r1")).encode() + b"\n")
            alert = gwtest.wait_for(lambda: (d.get("/v1/runs/r1/alerts")[1].get("alerts")
                                             or [None])[0], 60, "the alert of r1")
            ack = "/v1/alerts/%s/ack" % alert["id"]
            for i in range(8):
                d.post("/v1/ingest", "\n".join(finite_lines("old%d" % i, 1, 5)).encode() + b"\n")

            # a writer keeps the store committing while the requests come and go
            stop = threading.Event()

            def writer():
                step = 1
                while not stop.is_set():
                    with contextlib.suppress(OSError):   # the daemon stopped under it
                        d.post("/v1/ingest", "\n".join(finite_lines("busy", step, 2000))
                               .encode() + b"\n")
                    step += 2000

            t = threading.Thread(target=writer)
            t.start()
            try:
                for i in range(400):
                    reset = i % 2 == 1
                    kind = i % 4
                    if kind == 0:
                        send_and_go(port, "POST", ack, b'{"by":"alice"}', reset)
                    elif kind == 1:
                        send_and_go(port, "DELETE", ack, b"", reset)
                    elif kind == 2:
                        send_and_go(port, "DELETE", "/v1/runs/old%d" % (i // 4 % 8), b"", reset)
                    else:
                        send_and_go(port, "POST", "/v1/prune?older_than=30d", b"", reset)
            finally:
                stop.set()
                t.join()

            # the daemon answers, and each route still does its work
            self.assertEqual(d.get("/healthz")[0], 200)
            # (the abandoned requests may still be answered after ours: the
            # daemon notices a client gone only when it writes to it; until
            # then they may fill limits.max_reads_in_flight, and a request
            # is told 503 busy and to retry, as a client does)
            def settled(method, path, body=None):
                got = []

                def go():
                    st, j = request(port, method, path, body)
                    got.append((st, j))
                    return st != 503
                gwtest.wait_for(go, 60, "%s %s answered, not busy" % (method, path))
                return got[-1]

            def ack_by_bob():
                st, a = settled("DELETE", ack)
                self.assertEqual(st, 200, a)
                self.assertNotIn("acked_at", a)   # SameAlertAtOnce
                st, a = settled("POST", ack, {"by": "bob"})
                self.assertEqual(st, 200, a)
                return a.get("acked_by") == "bob" and \
                    settled("GET", "/v1/alerts/" + alert["id"])[1].get("acked_by") == "bob"
            gwtest.wait_for(ack_by_bob, 60, "an acknowledgement by bob that stays")
            self.assertEqual(settled("POST", "/v1/prune?older_than=30d"),
                             (200, {"deleted": []}))
            # every old run went (by a request whose client left) or goes now
            for i in range(8):
                st, j = settled("DELETE", "/v1/runs/old%d" % i)
                self.assertIn(st, (200, 404), j)
                self.assertEqual(settled("GET", "/v1/runs/old%d" % i)[0], 404)
            self.assertEqual(settled("GET", "/v1/runs/busy")[0], 200)

            # the daemon stops while requests wait for their barrier, read or
            # commit, their clients still there: it stops cleanly
            stop.clear()
            t = threading.Thread(target=writer)
            t.start()
            held = []
            try:
                for i in range(200):
                    s = socket.create_connection(("127.0.0.1", port), timeout=10)
                    held.append(s)
                    req = [("POST", ack, b'{"by":"carol"}'), ("DELETE", ack, b""),
                           ("POST", "/v1/prune?older_than=30d", b""),
                           ("DELETE", "/v1/runs/busy", b"")][i % 4]
                    s.sendall(b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                              % (req[0].encode(), req[1].encode(), len(req[2]), req[2]))
                self.assertEqual(d.stop(), 0)
            finally:
                stop.set()
                t.join()
                for s in held:
                    s.close()
        finally:
            if d.proc is not None:
                self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
