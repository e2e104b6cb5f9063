"""gradwatchd against an Alertmanager cluster: two real peers gossiping on loopback.

An alertmanager sink with "urls": [peer1, peer2] posts every alert to each
peer (as Prometheus does); the peers share a notification log over their
cluster port, so the webhook receiver behind them hears of each alert once.
Then one peer is killed with SIGKILL in the middle of an incident: the
survivor still delivers the next alert and the resolution, each once.

Fails when the binary is missing (apt-get install prometheus-alertmanager);
a developer without it can set GW_ALLOW_NO_ALERTMANAGER=1 to skip instead.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import (Daemon, Receiver, finite_lines, free_port, http_ok, nan_incident,
                      wait_for)  # noqa: E402

AM_BIN = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")

# How long a peer waits for the one ahead of it before notifying itself
# (Alertmanager's --cluster.peer-timeout); the quiet window that shows no
# second notification comes is several of these (3 s: gossip on a busy
# machine still arrives before the second peer would notify).
PEER_TIMEOUT_S = 3
QUIET_S = 4 * PEER_TIMEOUT_S


def am_get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return json.loads(r.read() or b"null")


@unittest.skipIf(not AM_BIN and os.environ.get("GW_ALLOW_NO_ALERTMANAGER") == "1",
                 "prometheus-alertmanager is not installed (GW_ALLOW_NO_ALERTMANAGER=1)")
class AlertmanagerClusterTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(AM_BIN, "prometheus-alertmanager is not installed (apt-get install "
                                "prometheus-alertmanager)")
        self.tmp = tempfile.mkdtemp(prefix="gwamc-")
        self.notify = Receiver()
        cfg = os.path.join(self.tmp, "alertmanager.yml")
        with open(cfg, "w") as f:
            f.write("""route:
  receiver: rec
  group_by: ['alert_id']
  group_wait: 100ms
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: rec
    webhook_configs:
      - url: 'http://127.0.0.1:%d/am'
        send_resolved: true
""" % self.notify.port)
        self.web = [free_port(), free_port()]
        gossip = [free_port(), free_port()]
        self.peers, self.logs = [], []
        for i in range(2):
            log = open(os.path.join(self.tmp, "am%d.log" % i), "wb")
            self.logs.append(log)
            self.peers.append(subprocess.Popen(
                [AM_BIN, "--config.file=" + cfg,
                 "--storage.path=" + os.path.join(self.tmp, "data%d" % i),
                 "--web.listen-address=127.0.0.1:%d" % self.web[i],
                 "--cluster.listen-address=127.0.0.1:%d" % gossip[i],
                 "--cluster.advertise-address=127.0.0.1:%d" % gossip[i],
                 "--cluster.peer=127.0.0.1:%d" % gossip[1 - i],
                 "--cluster.peer-timeout=%ds" % PEER_TIMEOUT_S,
                 "--cluster.gossip-interval=100ms", "--cluster.pushpull-interval=1s"],
                stdout=log, stderr=log))
        for i in range(2):
            wait_for(lambda i=i: self._ready(i), 60, "alertmanager peer %d ready" % i)
        # both see a cluster of two before gradwatchd talks to them
        for i in range(2):
            wait_for(lambda i=i: len(am_get(self.web[i], "/api/v2/status")["cluster"]["peers"]) == 2,
                     60, "peer %d to see both peers" % i)
        self.d = None

    def _ready(self, i):
        if self.peers[i].poll() is not None:
            with open(os.path.join(self.tmp, "am%d.log" % i), "rb") as f:
                raise AssertionError("alertmanager exited:\n" + f.read().decode(errors="replace"))
        return http_ok("http://127.0.0.1:%d/-/ready" % self.web[i])

    def tearDown(self):
        if self.d:
            self.d.remove()
        for p in self.peers:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for log in self.logs:
            log.close()
        self.notify.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def notes(self, alert_id, status):
        """Alertmanager's notifications to the receiver about alert_id with status."""
        out = []
        for r in list(self.notify.requests):
            body = r["json"]
            for a in body.get("alerts", []):
                if a["labels"].get("alert_id") == alert_id and a["status"] == status:
                    out.append(body)
        return out

    def once(self, alert_id, status, what):
        """Wait for the notification, then a quiet window: it came exactly once."""
        wait_for(lambda: self.notes(alert_id, status), 60, what)
        time.sleep(QUIET_S)
        self.assertEqual(len(self.notes(alert_id, status)), 1, "%s: %d notifications" % (
            what, len(self.notes(alert_id, status))))

    def alert_id(self, run):
        for i in range(2):
            if self.peers[i].poll() is not None:
                continue
            got = [a for a in am_get(self.web[i], "/api/v2/alerts") if a["labels"].get("run") == run]
            if got:
                return got[0]["labels"]["alert_id"]
        return None

    def test_each_alert_once_through_a_peer_loss(self):
        self.d = Daemon([dict(type="alertmanager", name="am", repeat_interval="1s",
                              urls=["http://127.0.0.1:%d" % p for p in self.web])]).start()
        st = self.d.sink_stats()
        self.assertEqual(sorted(st), ["am.1", "am.2"])
        # an incident: both peers hold the alert, the receiver hears it once
        self.d.send(*nan_incident("train-a"))
        first = wait_for(lambda: self.alert_id("train-a"), 60, "the first alert in Alertmanager")
        for i in range(2):
            wait_for(lambda i=i: [a for a in am_get(self.web[i], "/api/v2/alerts")
                                  if a["labels"].get("alert_id") == first], 60,
                     "the alert on peer %d" % i)
        self.once(first, "firing", "the first alert's notification")

        # one peer dies in the middle of a second incident
        self.d.send(*nan_incident("train-b"))
        self.peers[0].send_signal(signal.SIGKILL)
        self.peers[0].wait()
        second = wait_for(lambda: self.alert_id("train-b"), 60, "the second alert on the survivor")
        self.once(second, "firing", "the second alert's notification")
        # the first incident resolves: the survivor says so, once
        self.d.send(*finite_lines("train-a", 10, 60))
        self.once(first, "resolved", "the first alert's resolution")
        self.assertEqual(len(self.notes(first, "firing")), 1)
        # the live peer's sink delivered everything; the dead one's is retrying
        st = self.d.sink_stats()
        self.assertEqual(st["am.2"]["failed"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
