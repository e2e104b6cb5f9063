"""gradwatchd against a real Alertmanager (Debian's prometheus-alertmanager).

Alertmanager runs on a loopback port with a temporary config and storage
path, clustering off, and routes to a recording receiver with
send_resolved.  gradwatchd posts to it; the test reads the alert back
through Alertmanager's own API (GET /api/v2/alerts) with the right labels,
then resolves the incident and sees it resolved: gone from the active list
and announced as "resolved" by Alertmanager's own notification.

Fails when the binary is missing (apt-get install prometheus-alertmanager);
a developer without it can set GW_ALLOW_NO_ALERTMANAGER=1 to skip instead.
"""

import json
import os
import shutil
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


def am_get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return json.loads(r.read() or b"null")


@unittest.skipIf(not AM_BIN and os.environ.get("GW_ALLOW_NO_ALERTMANAGER") == "1",
                 "prometheus-alertmanager is not installed (GW_ALLOW_NO_ALERTMANAGER=1)")
class AlertmanagerTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(AM_BIN, "prometheus-alertmanager is not installed (apt-get install "
                                "prometheus-alertmanager)")
        self.tmp = tempfile.mkdtemp(prefix="gwam-")
        self.notify = Receiver()
        self.port = free_port()
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
        self.am_log = open(os.path.join(self.tmp, "alertmanager.log"), "wb")
        self.am = subprocess.Popen(
            [AM_BIN, "--config.file=" + cfg, "--storage.path=" + os.path.join(self.tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address="],
            stdout=self.am_log, stderr=self.am_log)
        wait_for(self._am_ready, 60, "alertmanager /-/ready")
        self.d = None

    def _am_ready(self):
        if self.am.poll() is not None:
            with open(os.path.join(self.tmp, "alertmanager.log"), "rb") as f:
                raise AssertionError("alertmanager exited:\n" + f.read().decode(errors="replace"))
        return http_ok("http://127.0.0.1:%d/-/ready" % self.port)

    def tearDown(self):
        if self.d:
            self.d.remove()
        self.am.terminate()
        try:
            self.am.wait(10)
        except subprocess.TimeoutExpired:
            self.am.kill()
            self.am.wait()
        self.am_log.close()
        self.notify.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def ours(self, run):
        return [a for a in am_get(self.port, "/api/v2/alerts")
                if a["labels"].get("run") == run]

    def test_fire_read_back_and_resolve(self):
        self.d = Daemon([dict(type="alertmanager", name="am", url="http://127.0.0.1:%d" % self.port,
                              repeat_interval="1s")]).start()
        self.d.send(*nan_incident("train-42"))
        [a] = wait_for(lambda: self.ours("train-42"), 60, "the alert in Alertmanager")
        self.assertEqual(a["labels"]["alertname"], "GradwatchNonfinite")
        self.assertEqual(a["labels"]["detector"], "nonfinite")
        self.assertEqual(a["labels"]["severity"], "critical")
        self.assertTrue(a["labels"]["alert_id"].startswith("gw-"))
        self.assertIn("NaN", a["annotations"]["summary"])
        self.assertIn("cause", a["annotations"])
        self.assertIn("description", a["annotations"])
        self.assertEqual(a["status"]["state"], "active")
        # the alert's page in gradwatchd, also as the runbook link
        page = "http://127.0.0.1:%d/alerts/%s" % (self.d.http, a["labels"]["alert_id"])
        self.assertEqual(a["generatorURL"], page)
        self.assertEqual(a["annotations"]["runbook_url"], page)
        # Alertmanager's own notification says it fires
        fired = self.notify.wait(1, pred=lambda r: r["json"]["status"] == "firing")[0]["json"]
        self.assertEqual(fired["alerts"][0]["labels"]["run"], "train-42")
        # resends keep it alive: endsAt moves forward
        ends = a["endsAt"]
        wait_for(lambda: [x for x in self.ours("train-42") if x["endsAt"] > ends], 60,
                 "a resend moving endsAt")
        # resolve the incident (50 finite steps)
        self.d.send(*finite_lines("train-42", 10, 60))
        wait_for(lambda: not self.ours("train-42"), 60, "the alert to leave the active list")
        res = self.notify.wait(1, timeout=60,
                               pred=lambda r: r["json"]["status"] == "resolved")[0]["json"]
        self.assertEqual(res["alerts"][0]["labels"]["alert_id"], a["labels"]["alert_id"])
        self.assertEqual(res["alerts"][0]["status"], "resolved")
        st = self.d.sink_stats()["am"]
        self.assertGreaterEqual(st["repeats"], 1)
        self.assertEqual(st["failed"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
