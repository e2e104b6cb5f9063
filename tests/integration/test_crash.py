"""Crashes: what a gradwatchd killed with SIGKILL leaves behind, and what the
restarted daemon makes of it (docs/reliability.md).  Real daemon, real
sockets, real SQLite file, real HTTP receivers; no mocks.

1. Fault injection at every commit: the storage writer's test hook
   (GRADWATCH_FAULT_CRASH_COMMIT=N, storage/store.c; only in a build with
   -Dfault_hooks=true, else skipped, or failed under CI=1) kills the
   daemon right before its Nth COMMIT while alerts are being raised on
   several runs.  A build without the hooks ignores the variable
   (NoHooks).
   After each crash the restarted daemon's database must hold, for every
   alert row, the outbox row of each of its versions and a deliveries row
   per sink -- and no outbox row without its alert -- and the record the
   alert cites.  Item 5 of issue 11: an alert committed without its outbox
   rows is never delivered.
2. kill -9 under concurrent load: HTTP ingest (acknowledged), Unix socket and
   TCP clients write while the daemon is killed at a moment chosen at
   random (by the number of acknowledged requests, not by time); after each
   restart every acknowledged HTTP line is stored, integrity_check is ok,
   segment numbering continues, and the daemon restarts clean.
3. Alerts across a crash with the receiver down: alerts raised while the
   webhook receiver is down, the daemon killed, restarted, the receiver
   brought up: every alert event reaches it (at least once, delivery id
   "<alert id>-v<version>" as docs/alerts.md says).

The figures (trials, acknowledged vs stored) are printed for
docs/reliability.md.
"""

import collections
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
from receiver import Receiver  # noqa: E402

FAST_RETRY = {"retry_initial": "100ms", "retry_max": "400ms"}
SEED = int(os.environ.get("GW_CRASH_SEED", random.randrange(1 << 30)))


def log(msg):
    print("test_crash: " + msg, flush=True)


class Daemon(gwtest.Daemon):
    """gwtest's daemon, restartable in the same directory, with an optional
    environment per start (the fault hook)."""

    def start_with(self, env=None, wait=True):
        self.env = env
        return self.start(wait=wait)

    def wait_dead(self, timeout=60):
        """Wait for the daemon to die on its own (the fault hook); its status."""
        try:
            rc = self.proc.wait(timeout)
        except Exception:
            raise AssertionError("the daemon did not crash within %ss:\n%s" % (timeout, self.logtext()))
        self.log.close()
        self.proc = None
        return rc

    def integrity(self):
        return self.sql("PRAGMA integrity_check")[0][0]


class Streamer(threading.Thread):
    """Writes NDJSON lines to one stream transport until told to stop or the
    connection breaks; counts the lines it handed to the socket (some may
    still be in socket buffers when the daemon dies: streams get no
    acknowledgement)."""

    def __init__(self, connect, lines, pause=0.002):
        super().__init__(daemon=True)
        self.connect = connect
        self.lines = lines          # iterator of bytes
        self.pause = pause          # seconds between two chunks of 20 lines
        self.sent = 0
        self.stop = threading.Event()

    def run(self):
        try:
            with self.connect() as s:
                while not self.stop.is_set():
                    # 20 lines at a time with a short pause: a steady load,
                    # not a flood that only fills the disk
                    chunk = [next(self.lines) for _ in range(20)]
                    s.sendall(b"".join(chunk))
                    self.sent += len(chunk)
                    time.sleep(self.pause)
        except OSError:
            pass


def alert_lines(run, first_step):
    """Endless NDJSON lines of `run` that keep the nonfinite detector busy:
    a NaN opens an incident, 5 finite steps resolve it (the config's
    nonfinite_quiet_steps), the next NaN opens another."""
    step = first_step
    while True:
        for i in range(6):
            loss = "NaN" if i == 0 else "%.3f" % (2.0 - 0.01 * (step % 50))
            yield ('{"run":"%s","step":%d,"loss":%s,"grad_norm":1}\n' % (run, step, loss)).encode()
            step += 1


# ---- 1: the alert and its outbox rows, one transaction ------------------------------------

class AlertOutboxAtomicity(unittest.TestCase):
    RUNS = ["crash-a", "crash-b", "crash-c"]
    SINKS = ("hook-1", "hook-2")

    def test_every_alert_has_its_outbox_rows_after_a_crash_at_any_commit(self):
        gwtest.need_fault_hooks(self)
        rnd = random.Random(SEED)
        down = gwtest.free_port()   # nobody listens: deliveries stay pending
        cfg = {
            "sinks": [dict(type="webhook", name=n, url="http://127.0.0.1:%d/%s" % (down, n),
                           **FAST_RETRY) for n in self.SINKS],
            "thresholds": {"nonfinite_quiet_steps": 5},
            # one commit per wake-up of the writer, so commits are many and
            # small: the crash can fall between any two groups of rows
            "storage": {"commit_max_records": 1, "commit_interval_ms": 1},
        }
        d = Daemon(config=cfg)
        self.addCleanup(d.close)
        crash_points = list(range(2, 12)) + sorted(rnd.sample(range(12, 120), 10))
        steps = {r: 1 for r in self.RUNS}
        crashes = alerts_seen = 0
        for n in crash_points:
            # Usually nothing is written before the lines come, so it gets
            # ready; but the deliveries still pending from the last crash are
            # tried at once and their failed attempts are commits too, so on
            # a slow machine the hook may fire during start-up.  That is a
            # crash at commit n all the same: check what the restart finds.
            if not self.start_crashing_at(d, n):
                crashes += 1
                d.start_with(None)
                alerts_seen = self.check_consistent(d, "after a crash at start-up before commit %d" % n)
                d.stop()
                continue
            # 1,000 lines/s a run: a load an ASan build keeps up with, so
            # that commits stay many and small.  At 10,000 (the pause of
            # the other tests) the queue outgrew the writer once the loop
            # no longer slowed down with the sinks' backlog (the outbox's
            # walk), and a batch of ~100 MB took the writer past the
            # deadline below before its commit came
            streamers = []
            for run in self.RUNS:
                st = Streamer(lambda: socket.create_connection(("127.0.0.1", d.port)),
                              alert_lines(run, steps[run]), pause=0.02)
                st.start()
                streamers.append((run, st))
            rc = d.wait_dead()
            for run, st in streamers:
                st.stop.set()
                st.join(10)
                steps[run] += st.sent + 100     # forward, whatever was stored
            self.assertEqual(rc, -signal.SIGKILL, "the fault hook at commit %d:\n%s" % (n, d.logtext()))
            crashes += 1
            # the restarted daemon recovers the database; check what it holds
            d.start_with(None)
            alerts_seen = self.check_consistent(d, "after a crash before commit %d" % n)
            d.stop()
        log("alert/outbox atomicity: %d crashes at commits %s, %d alerts, every one with "
            "its outbox and delivery rows (seed %d)" % (crashes, crash_points, alerts_seen, SEED))
        self.assertGreater(alerts_seen, 0, "no alert was ever committed: the test proved nothing")

    def start_crashing_at(self, d, n):
        """Start with the fault hook at commit n: True once ready, False if
        the hook killed it before it was (anything else fails the test)."""
        try:
            d.start_with({"GRADWATCH_FAULT_CRASH_COMMIT": str(n)})
            return True
        except RuntimeError:
            if d.proc is None or d.proc.returncode != -signal.SIGKILL:
                raise
            d.log.close()
            d.proc = None
            return False

    def check_consistent(self, d, when):
        self.assertEqual(d.integrity(), "ok", when)
        alerts = dict(d.sql("SELECT id, version FROM alerts"))
        outbox = collections.defaultdict(set)
        for aid, ver in d.sql("SELECT alert_id, version FROM outbox"):
            outbox[aid].add(ver)
        for aid, ver in alerts.items():
            self.assertEqual(outbox.get(aid, set()), set(range(1, ver + 1)),
                             "%s: alert %s is at version %d but the outbox holds versions %s: "
                             "an alert event committed without its outbox row is never delivered"
                             % (when, aid, ver, sorted(outbox.get(aid, ()))))
        orphans = set(outbox) - set(alerts)
        self.assertFalse(orphans, "%s: outbox rows without an alert: %s" % (when, sorted(orphans)))
        per_event = collections.defaultdict(set)
        for aid, ver, sink in d.sql("SELECT alert_id, version, sink FROM deliveries"):
            per_event[(aid, ver)].add(sink)
        for aid, vers in outbox.items():
            for v in vers:
                self.assertEqual(per_event.get((aid, v), set()), set(self.SINKS),
                                 "%s: %s-v%d has deliveries for %s, not one per sink"
                                 % (when, aid, v, sorted(per_event.get((aid, v), ()))))
        stray = set(per_event) - {(a, v) for a, vs in outbox.items() for v in vs}
        self.assertFalse(stray, "%s: deliveries without an outbox row: %s" % (when, sorted(stray)))
        # an alert cites the record that raised it (nonfinite: the NaN line)
        uncited = d.sql("SELECT a.id, a.step FROM alerts a WHERE NOT EXISTS (SELECT 1 FROM records r "
                        "WHERE r.run_id = a.run_id AND r.seg = a.seg AND r.step = a.step)")
        self.assertFalse(uncited, "%s: alerts committed without the record that raised them: %s"
                         % (when, uncited))
        return len(alerts)


class NoHooks(unittest.TestCase):
    """The installed daemon: a build without -Dfault_hooks ignores the
    hook's variable (it used to kill itself before its first commit)."""

    def test_a_build_without_hooks_ignores_the_crash_variable(self):
        if gwtest.fault_hooks():
            self.skipTest("this gradwatchd has the test hooks (-Dfault_hooks=true); the "
                          "fault-off unit test covers a build without them")
        d = Daemon()
        try:
            d.start_with({"GRADWATCH_FAULT_CRASH_COMMIT": "1"})
            self.assertEqual(d.post("/v1/ingest", gwtest.lines("nohooks", range(1, 21)))[0], 200)
            self.assertNotIn("GRADWATCH_FAULT", d.logtext())
            self.assertEqual(d.stop(), 0)
            self.assertEqual(d.sql("SELECT count(*) FROM records"), [(20,)])
        finally:
            if d.proc:
                d.stop()


# ---- 2: kill -9 under concurrent load -------------------------------------------------------

class HttpIngester(threading.Thread):
    """POSTs batches of lines of one run to /v1/ingest, one connection per
    request, until told to stop or the daemon goes away; keeps the steps
    the daemon acknowledged (200, every line accepted: committed)."""

    BATCH = 25

    def __init__(self, port, run, first_step):
        super().__init__(daemon=True)
        self.port, self.run_name, self.step = port, run, first_step
        self.first_step = first_step
        self.acked = []            # steps acknowledged
        self.requests_acked = 0
        self.first_acked = False   # the first request of this client was acknowledged
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            steps = list(range(self.step, self.step + self.BATCH))
            body = "".join('{"run":"%s","step":%d,"loss":%.4f,"grad_norm":0.5,"lr":0.001}\n'
                           % (self.run_name, s, 3.0 / (1 + s)) for s in steps).encode()
            self.step += self.BATCH
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                c.request("POST", "/v1/ingest", body=body,
                          headers={"Content-Type": "application/x-ndjson"})
                r = c.getresponse()
                answer = r.read()
                c.close()
            except (OSError, http.client.HTTPException):
                return             # the daemon is gone
            if r.status == 200 and json.loads(answer).get("accepted") == len(steps):
                self.acked.extend(steps)
                self.requests_acked += 1
                if steps[0] == self.first_step:
                    self.first_acked = True


def stream_lines(run, first_step):
    step = first_step
    while True:
        yield ('{"run":"%s","step":%d,"loss":%.4f,"grad_norm":0.5}\n' % (run, step, 3.0 / (1 + step))).encode()
        step += 1


class KillUnderLoad(unittest.TestCase):
    TRIALS = 10
    HTTP_RUNS = ["http-a", "http-b"]
    RESUMING = "http-resume"   # restarts from an earlier step after every crash, as a job would

    def test_acknowledged_lines_survive_kill9_under_concurrent_load(self):
        rnd = random.Random(SEED + 1)
        d = Daemon()
        self.addCleanup(d.close)
        next_step = {r: 1 for r in self.HTTP_RUNS + [self.RESUMING]}
        acked = collections.defaultdict(set)
        stream_sent = {"unix": 0, "tcp": 0}
        stream_step = {"unix": 1, "tcp": 1}
        segments_before = 0
        rewinds = False            # this trial's resuming job starts with a rewind
        total_acked = 0
        for trial in range(self.TRIALS):
            d.start_with(None)
            clients = [HttpIngester(d.http_port, r, next_step[r]) for r in self.HTTP_RUNS + [self.RESUMING]]
            streams = {
                "unix": Streamer(lambda: unix_connect(d.sock), stream_lines("unix-0", stream_step["unix"])),
                "tcp": Streamer(lambda: socket.create_connection(("127.0.0.1", d.port)),
                                stream_lines("tcp-0", stream_step["tcp"])),
            }
            for c in clients + list(streams.values()):
                c.start()
            # the moment of the kill: after a random number of acknowledged
            # requests (never a time), while every client is still writing
            target = rnd.randint(1, 40)
            gwtest.wait_for(lambda: sum(c.requests_acked for c in clients) >= target, 120,
                            "%d acknowledged requests" % target)
            d.kill()
            for c in clients + list(streams.values()):
                c.stop.set()
            for c in clients + list(streams.values()):
                c.join(60)
            for c in clients:
                acked[c.run_name].update(c.acked)
                next_step[c.run_name] = c.step
            for name, st in streams.items():
                stream_sent[name] += st.sent
                stream_step[name] += st.sent + 1
            resumer = clients[-1]
            # the job restarts from a checkpoint 40 steps before its last
            # acknowledged line: a rewind, so a new segment (a job killed
            # before any of its requests was acknowledged goes on after what
            # it sent: no rewind, no new segment to expect)
            rewound, rewinds = rewinds, bool(resumer.acked)
            if resumer.acked:
                next_step[self.RESUMING] = max(1, max(resumer.acked) - 40)

            # restart: clean, and everything acknowledged is there
            d.start_with(None)
            self.assertEqual(d.integrity(), "ok", "trial %d" % trial)
            for run, steps in acked.items():
                stored = {s for (s,) in d.sql(
                    "SELECT DISTINCT step FROM records JOIN runs ON runs.id = records.run_id "
                    "WHERE runs.name = ?", (run,))}
                lost = steps - stored
                self.assertFalse(lost, "trial %d: %d acknowledged lines of %s are not stored "
                                 "(steps %s...)" % (trial, len(lost), run, sorted(lost)[:10]))
            # segment numbering continues from the database: 1..n without
            # gaps, and the resumed job's rewind got a new number
            for (run,) in d.sql("SELECT name FROM runs"):
                segs = [s for (s,) in d.sql(
                    "SELECT seg FROM segments JOIN runs ON runs.id = segments.run_id "
                    "WHERE runs.name = ? ORDER BY seg", (run,))]
                self.assertEqual(segs, list(range(1, len(segs) + 1)), "trial %d: %s" % (trial, run))
                orphan = d.sql("SELECT count(*) FROM records JOIN runs ON runs.id = records.run_id "
                               "WHERE runs.name = ? AND seg NOT IN (SELECT seg FROM segments "
                               "WHERE run_id = runs.id)", (run,))[0][0]
                self.assertEqual(orphan, 0, "trial %d: records of %s in a segment with no row" % (trial, run))
            nseg = d.sql("SELECT count(*) FROM segments JOIN runs ON runs.id = segments.run_id "
                         "WHERE runs.name = ?", (self.RESUMING,))[0][0]
            if rewound and resumer.first_acked:
                self.assertGreater(nseg, segments_before,
                                   "trial %d: the job's rewind after the restart opened no new "
                                   "segment (segment numbering did not continue)" % trial)
            segments_before = nseg
            total_acked = sum(len(s) for s in acked.values())
            self.assertEqual(d.stop(), 0)
        d.start_with(None)
        stored_http = d.sql("SELECT count(DISTINCT runs.name || ':' || step) FROM records "
                            "JOIN runs ON runs.id = records.run_id WHERE runs.name LIKE 'http-%'")[0][0]
        stored_stream = dict(d.sql("SELECT runs.name, count(*) FROM records JOIN runs "
                                   "ON runs.id = records.run_id WHERE runs.name IN ('unix-0', 'tcp-0') "
                                   "GROUP BY runs.name"))
        d.stop()
        log("kill -9 under load: %d trials, %d HTTP lines acknowledged, 0 lost (%d distinct "
            "HTTP steps stored, acknowledged or not); stream lines sent/stored: unix %d/%d, "
            "tcp %d/%d; the resumed job has %d segments (seed %d)"
            % (self.TRIALS, total_acked, stored_http, stream_sent["unix"],
               stored_stream.get("unix-0", 0), stream_sent["tcp"], stored_stream.get("tcp-0", 0),
               segments_before, SEED))


# ---- 3: alerts across a crash with the receiver down -----------------------------------------

class AlertsAcrossACrash(unittest.TestCase):
    RUNS = ["down-a", "down-b", "down-c"]

    def test_alerts_raised_while_the_receiver_is_down_arrive_after_kill9_and_restart(self):
        rnd = random.Random(SEED + 2)
        rcv = Receiver()
        self.addCleanup(rcv.close)
        port = rcv.port
        rcv.stop()
        cfg = {"sinks": [dict(type="webhook", name="hook", url="http://127.0.0.1:%d/h" % port,
                              max_in_flight=4, **FAST_RETRY)],
               "thresholds": {"nonfinite_quiet_steps": 5}}
        d = Daemon(config=cfg)
        self.addCleanup(d.close)
        d.start_with(None)
        streams = [Streamer(lambda: socket.create_connection(("127.0.0.1", d.port)),
                            alert_lines(run, 1)) for run in self.RUNS]
        for st in streams:
            st.start()
        # the kill: once a random number of alert events are committed and
        # failing to reach the receiver, while lines (and alerts) keep coming
        pending = rnd.randint(5, 60)
        # (a sink sends one event per run at a time: the others wait behind it)
        gwtest.wait_for(lambda: d.sql("SELECT count(*) >= ? AND max(attempts) > 0 FROM deliveries "
                                      "WHERE state = 'pending'", (pending,))[0][0], 60,
                        "%d alert events committed, the receiver failing" % pending)
        d.kill()
        for st in streams:
            st.stop.set()
            st.join(30)
        before = {x for (x,) in d.sql("SELECT alert_id || '-v' || version FROM outbox")}
        delivered_before = d.sql("SELECT count(*) FROM deliveries WHERE state = 'delivered'")[0][0]
        self.assertEqual(delivered_before, 0, "the receiver was down, nothing can be delivered")

        d.start_with(None)
        rcv.port = port
        rcv.start()

        def all_delivered():
            owed = {x for (x,) in d.sql("SELECT alert_id || '-v' || version FROM outbox")}
            got = {r["headers"].get("x-gradwatch-delivery") for r in rcv.ok_requests()}
            undelivered = d.sql("SELECT count(*) FROM deliveries WHERE state != 'delivered'")[0][0]
            return owed <= got and undelivered == 0 and owed
        try:
            owed = gwtest.wait_for(all_delivered, 120, "every alert event delivered after the restart")
        except AssertionError:
            owed = {x for (x,) in d.sql("SELECT alert_id || '-v' || version FROM outbox")}
            got = {r["headers"].get("x-gradwatch-delivery") for r in rcv.ok_requests()}
            raise AssertionError("not delivered: %s; deliveries rows not delivered: %s\n%s" % (
                sorted(owed - got)[:20], d.sql("SELECT * FROM deliveries WHERE state != 'delivered' "
                                               "LIMIT 20"), d.logtext()))
        self.assertTrue(before <= owed)
        self.assertEqual(d.integrity(), "ok")
        # every version of every alert was an event that got delivered
        for aid, ver in d.sql("SELECT id, version FROM alerts"):
            for v in range(1, ver + 1):
                self.assertIn("%s-v%d" % (aid, v), owed)
        # ids and versions as docs/alerts.md documents them
        reqs = rcv.ok_requests()
        for r in reqs:
            body = r["json"]
            did = r["headers"]["x-gradwatch-delivery"]
            self.assertEqual(body["delivery_id"], did)
            self.assertEqual(did, "%s-v%d" % (body["alert"]["id"], body["version"]))
            self.assertEqual(body["alert"]["version"], body["version"])
            self.assertEqual(r["headers"]["x-gradwatch-event"], body["event"])
        # per run, the events arrive in the order they happened
        for run in self.RUNS:
            seen = collections.defaultdict(list)
            for r in reqs:
                if r["json"]["alert"]["run"] == run:
                    seen[r["json"]["alert"]["id"]].append(r["json"]["version"])
            for aid, versions in seen.items():
                firsts = sorted(set(versions), key=versions.index)
                self.assertEqual(firsts, sorted(firsts), "%s: versions of %s out of order: %s"
                                 % (run, aid, versions))
        dup = len(reqs) - len({r["headers"]["x-gradwatch-delivery"] for r in reqs})
        d.stop()
        log("alerts across a crash: %d alert events raised while the receiver was down, "
            "daemon killed, restarted: %d events delivered (%d of them duplicates, at least once) "
            "(seed %d)" % (len(before), len(owed), dup, SEED))


def unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        raise
    return s


if __name__ == "__main__":
    unittest.main(verbosity=2)
