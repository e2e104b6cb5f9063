"""Acknowledging an alert (docs/alerts.md, "Acknowledging"), against the real
daemon, real HTTP receivers and the real CLI.

The API (bad bodies, unknown id, resolved alert, idempotent repeats, undo),
auth on (read token, token limited to other runs, ingest token), a webhook
and a Slack receiver that stop getting repeats after the ack and get one
`ack` event, Alertmanager's resends carrying the acknowledgement, a
SIGKILL right after the daemon answered the ack (the ack is on disk and its
event is delivered after the restart), and `gradwatch alerts ack/unack`.

Timing: repeat_interval is 300 ms and every wait polls; the only sleeps
are quiet windows in which a repeat must NOT come, where slowness can only
hide a repeat, never fail the test.
"""

import http.client
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
from receiver import SinkTestCase, finite_lines, nan_incident, wait_for  # noqa: E402
from test_alert_delivery import check_slack_payload  # noqa: E402

GRADWATCH = os.environ.get("GRADWATCH", "gradwatch")
INGEST = "ingest-token-0123456789abcdef"
TEAM = "team-a-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"
FAST = {"retry_initial": "100ms", "retry_max": "300ms"}


def request(port, method, path, body=None, token=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": "Bearer " + token} if token else {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data
    finally:
        c.close()


def events(rcv, path=None):
    return [r["headers"].get("x-gradwatch-event") for r in rcv.ok_requests()
            if path is None or r["path"] == path]


class AckTest(SinkTestCase):
    def open_alert(self, d, run):
        d.send(*nan_incident(run))
        return wait_for(lambda: (d.get("/v1/runs/%s/alerts" % run)[1].get("alerts") or [None])[0],
                        60, "the alert of " + run)

    # ---- the API ---------------------------------------------------------------------

    def test_api_without_auth(self):
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h",
                              repeat_interval="300ms", **FAST)])
        a = self.open_alert(d, "r1")
        aid = a["id"]
        self.assertNotIn("acked_at", a)
        # repeats happen before the ack (else "no repeats after" proves nothing)
        self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "repeat")

        # bad input: precise 400s, nothing acknowledged
        path = "/v1/alerts/%s/ack" % aid
        for body, want in [("{", "not JSON"), ("[1]", "must be a JSON object"),
                           ({"who": "x"}, 'unknown field "who"'),
                           ({"by": 7}, '"by" must be a string'),
                           ({"by": "x" * 129}, '"by" is 129 bytes; at most 128'),
                           ({"note": "n" * 1025}, '"note" is 1025 bytes; at most 1024'),
                           ({"by": "a\u0007b"}, '"by" contains a control character'),
                           (b'{"note":"\xff"}', "not JSON")]:
            st, j = request(d.http, "POST", path, body)
            self.assertEqual(st, 400, (body, j))
            self.assertIn(want, j["error"])
        st, j = request(d.http, "POST", path, '{"note":"%s"}' % ("x" * 9000))
        self.assertEqual(st, 413)
        # unknown id
        st, j = request(d.http, "POST", "/v1/alerts/gw-0000000000000000/ack")
        self.assertEqual(st, 404)
        self.assertIn("no alert with id", j["error"])
        st, _ = request(d.http, "DELETE", "/v1/alerts/gw-0000000000000000/ack")
        self.assertEqual(st, 404)
        self.assertNotIn("acked_at", d.get("/v1/alerts/" + aid)[1])

        # the ack: 200 with the alert as it now is; a note may have newlines
        st, j = request(d.http, "POST", path, {"by": "alice", "note": "intended switch\nto Adam"})
        self.assertEqual(st, 200, j)
        self.assertEqual((j["kind"], j["acked_by"], j["ack_note"]),
                         ("ack", "alice", "intended switch\nto Adam"))
        self.assertEqual(j["version"], a["version"] + 1)
        # the same everywhere the alert is read
        for got in (d.get("/v1/alerts/" + aid)[1], d.get("/v1/alerts")[1]["alerts"][0],
                    d.get("/v1/runs/r1/alerts")[1]["alerts"][0]):
            self.assertEqual((got["acked_by"], got["ack_note"], got["acked_at"], got["version"]),
                             ("alice", "intended switch\nto Adam", j["acked_at"], j["version"]))
        # one ack event, signed like every event, then no more repeats
        [ev] = self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "ack")
        self.assertEqual(ev["headers"]["x-gradwatch-delivery"], "%s-v%d" % (aid, j["version"]))
        self.assertEqual(ev["json"]["event"], "ack")
        self.assertEqual(ev["json"]["alert"]["acked_by"], "alice")
        self.assertEqual(ev["json"]["alert"]["ack_note"], "intended switch\nto Adam")
        self.assertEqual(ev["json"]["alert"]["schema"], "gradwatch.alert.v2")
        metrics = d.get("/metrics")[1]
        self.assertIn('gradwatch_alerts_open{acked="true"} 1\n', metrics)
        self.assertIn('gradwatch_alerts_open{acked="false"} 0\n', metrics)
        n = len(self.rcv.requests)
        # idempotent: the same answer, nothing new written or sent
        st, j2 = request(d.http, "POST", path, {"by": "bob"})
        self.assertEqual(st, 200)
        self.assertEqual((j2["acked_by"], j2["version"]), ("alice", j["version"]))
        time.sleep(1.5)        # a quiet window of 5 repeat intervals: no repeat, no second ack
        self.assertEqual(len(self.rcv.requests), n, events(self.rcv)[-5:])
        self.assertEqual(d.query("SELECT count(*) FROM outbox WHERE kind = 'ack'"), [(1,)])

        # undo: one unack event, repeats start again
        st, j3 = request(d.http, "DELETE", path)
        self.assertEqual(st, 200, j3)
        self.assertEqual(j3["kind"], "unack")
        self.assertNotIn("acked_at", j3)
        self.assertNotIn("acked_at", d.get("/v1/alerts/" + aid)[1])
        self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "unack")
        self.assertIn('gradwatch_alerts_open{acked="false"} 1\n', d.get("/metrics")[1])
        k = len(self.rcv.requests)
        self.rcv.wait(k + 1)
        self.assertEqual(events(self.rcv)[-1], "repeat")
        st, _ = request(d.http, "DELETE", path)   # idempotent too
        self.assertEqual(st, 200)

        # a resolved alert: 409, for both
        d.send(*finite_lines("r1", 10, 60))
        wait_for(lambda: d.get("/v1/alerts/" + aid)[1]["state"] == "resolved", 60, "the resolve")
        for method in ("POST", "DELETE"):
            st, j = request(d.http, method, path)
            self.assertEqual(st, 409)
            self.assertIn("is resolved", j["error"])

    def test_api_with_auth(self):
        d = gwtest.Daemon(config={"auth": {"ingest_tokens_file": "ingest.tokens",
                                           "read_tokens_file": "read.tokens"}})
        with open(os.path.join(d.dir, "ingest.tokens"), "w") as f:
            f.write("%s\n%s team-a-*\n" % (INGEST, TEAM))
        with open(os.path.join(d.dir, "read.tokens"), "w") as f:
            f.write("%s\n" % READ)
        with d:
            body = "\n".join(nan_incident("team-b-1")) + "\n"
            self.assertEqual(request(d.http_port, "POST", "/v1/ingest", body, INGEST)[0], 200)
            st, j = request(d.http_port, "GET", "/v1/runs/team-b-1/alerts", token=READ)
            path = "/v1/alerts/%s/ack" % j["alerts"][0]["id"]
            self.assertEqual(request(d.http_port, "POST", path)[0], 401)
            self.assertEqual(request(d.http_port, "POST", path, token=READ)[0], 403)
            self.assertEqual(request(d.http_port, "DELETE", path, token=READ)[0], 403)
            st, j = request(d.http_port, "POST", path, token=TEAM)
            self.assertEqual(st, 403)
            self.assertIn("may write only runs matching team-a-*", j["error"])
            st, j = request(d.http_port, "POST", path, {"by": "ops"}, token=INGEST)
            self.assertEqual((st, j.get("acked_by")), (200, "ops"))
            st, j = request(d.http_port, "DELETE", path, token=INGEST)
            self.assertEqual(st, 200)
            self.assertNotIn("acked_at", j)
            # an empty "by" or "note" is no "by" or "note"
            st, j = request(d.http_port, "POST", path, {"by": "", "note": None}, token=INGEST)
            self.assertEqual(st, 200)
            self.assertNotIn("acked_by", j)
            self.assertNotIn("ack_note", j)
            st, j = request(d.http_port, "GET", path[:-4], token=READ)
            self.assertEqual((j["kind"], "acked_by" in j, "ack_note" in j), ("ack", False, False))

    # ---- the sinks ---------------------------------------------------------------------

    def test_slack_gets_one_short_ack_message_and_no_reminders(self):
        d = self.daemon([dict(type="slack", name="team", url=self.rcv.url + "/services/T/B/x",
                              repeat_interval="300ms", rate_limit="off", **FAST)])
        aid = self.open_alert(d, "prod-<1>")["id"]
        self.rcv.wait(2)   # the open and a reminder
        st, _ = request(d.http, "POST", "/v1/alerts/%s/ack" % aid,
                        {"by": "carol <on-call>", "note": "known bad run, kept for the A/B"})
        self.assertEqual(st, 200)
        [ack] = self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "ack")
        check_slack_payload(ack["json"])
        self.assertIn("Acknowledged", ack["json"]["blocks"][0]["text"]["text"])
        text = json.dumps(ack["json"])
        self.assertIn("carol &lt;on-call&gt;", text)
        self.assertIn("known bad run, kept for the A/B", text)
        n = len(self.rcv.requests)
        time.sleep(1.5)        # quiet window: no reminder after the ack
        self.assertEqual(len(self.rcv.requests), n)

    def test_an_ack_inside_the_group_wait_does_not_swallow_the_alert(self):
        # acknowledged (from the web page's link, say) while the open still
        # waits in group_wait: both go, the alert first
        d = self.daemon([dict(type="slack", name="team", url=self.rcv.url + "/s",
                              group_wait="3s", rate_limit="off")])
        aid = self.open_alert(d, "gw-1")["id"]
        st, _ = request(d.http, "POST", "/v1/alerts/%s/ack" % aid, {"by": "hal"})
        self.assertEqual(st, 200)
        reqs = self.rcv.wait(2, timeout=60)
        self.assertEqual([r["headers"]["x-gradwatch-event"] for r in reqs], ["open", "ack"])
        self.assertEqual(d.query("SELECT count(*) FROM deliveries WHERE state = 'superseded'"),
                         [(0,)])

    def test_alertmanager_keeps_resending_with_the_acknowledgement(self):
        d = self.daemon([dict(type="alertmanager", name="am", url=self.rcv.url,
                              repeat_interval="1s")])
        aid = self.open_alert(d, "am-1")["id"]
        self.rcv.wait(1)
        st, _ = request(d.http, "POST", "/v1/alerts/%s/ack" % aid, {"by": "dan", "note": "ok"})
        self.assertEqual(st, 200)
        [ack] = self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "ack")
        self.assertRegex(ack["json"][0]["annotations"]["acknowledged"],
                         r"^acknowledged by dan at \d{4}-\d\d-\d\dT.*: ok$")
        # resends go on (else Alertmanager expires it as resolved), annotated
        later = self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "repeat"
                              and "acknowledged" in r["json"][0]["annotations"])
        self.assertGreater(later[0]["json"][0]["endsAt"], ack["json"][0]["startsAt"])

    def test_sigkill_right_after_the_ack_answer(self):
        # the receiver is down from now on: the ack event cannot be
        # delivered before the kill.  (Not a receiver answering 500 and
        # then 200 after the kill: a request of the killed daemon still in
        # the receiver's hands, a busy machine's slow thread, was answered
        # 200 once the mode had changed, and the ack event came twice.)
        sinks = [dict(type="webhook", name="hook", url=self.rcv.url + "/h", **FAST)]
        d = self.daemon(sinks)
        aid = self.open_alert(d, "k1")["id"]
        self.rcv.wait(1)
        self.rcv.stop()
        st, j = request(d.http, "POST", "/v1/alerts/%s/ack" % aid, {"by": "erin", "note": "seen"})
        self.assertEqual(st, 200)
        d.kill()
        # what the daemon answered 200 for is on disk, with its outbox row
        self.assertEqual(d.query("SELECT acked_by, ack_note, kind FROM alerts WHERE id = ?", aid),
                         [("erin", "seen", "ack")])
        self.assertEqual(d.query("SELECT o.kind, d.state FROM outbox o JOIN deliveries d "
                                 "USING (alert_id, version) WHERE o.version = ?", j["version"]),
                         [("ack", "pending")])
        self.rcv.start()
        d2 = self.daemon(sinks, tmp=d.tmp)
        ok = lambda r: r["answered"] == "ok" and r["headers"]["x-gradwatch-event"] == "ack"
        [ev] = self.rcv.wait(1, timeout=60, pred=ok)
        self.assertEqual(ev["headers"]["x-gradwatch-delivery"], "%s-v%d" % (aid, j["version"]))
        self.assertEqual(ev["json"]["alert"]["acked_by"], "erin")
        self.assertEqual(d2.get("/v1/alerts/" + aid)[1]["acked_by"], "erin")
        wait_for(lambda: d2.query("SELECT d.state FROM deliveries d WHERE version = ?",
                                  j["version"]) == [("delivered",)], 60, "the delivered row")
        # and the restarted daemon still knows it is acknowledged
        st, j2 = request(d2.http, "POST", "/v1/alerts/%s/ack" % aid)
        self.assertEqual((st, j2["version"]), (200, j["version"]))

    # ---- the CLI ---------------------------------------------------------------------

    def open_gauge(self, d):
        """gradwatch_alerts_open by its acked label, as /metrics says."""
        got = dict(re.findall(r'^gradwatch_alerts_open\{acked="(true|false)"\} (\d+)$',
                              d.get("/metrics")[1], re.M))
        return {k: int(v) for k, v in got.items()}

    def test_cli(self):
        # no sinks: an operator acknowledges all the same, and /metrics
        # counts open and acknowledged alerts all the same
        d = self.daemon([])
        aid = self.open_alert(d, "cli-1")["id"]
        self.assertEqual(self.open_gauge(d), {"false": 1, "true": 0})
        url = "http://127.0.0.1:%d" % d.http
        env = dict(os.environ, USER="frank")
        env.pop("GRADWATCH_TOKEN", None)

        def run(*args):
            return subprocess.run([GRADWATCH] + list(args), capture_output=True, text=True,
                                  env=env, timeout=60)
        p = run("alerts", "ack", aid, "--note", "looking into it", "--url", url)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "%s acknowledged by frank: looking into it" % aid)
        p = run("alerts", "--url", url)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"acknowledged by frank at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: "
                                   r"looking into it")
        p = run("alerts", "--db", d.db, "--json")
        self.assertEqual(json.loads(p.stdout)["alerts"][0]["acked_by"], "frank")
        self.assertEqual(self.open_gauge(d), {"false": 0, "true": 1})
        p = run("alerts", "unack", aid, "--url", url)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "%s: not acknowledged" % aid))
        self.assertEqual(self.open_gauge(d), {"false": 1, "true": 0})
        self.assertNotIn("acknowledged", run("alerts", "--url", url).stdout)
        p = run("alerts", "ack", "gw-0000000000000000", "--url", url)
        self.assertEqual(p.returncode, 2)
        self.assertIn("answered 404: no alert with id", p.stderr)
        p = run("alerts", "ack", "--url", url)
        self.assertEqual(p.returncode, 2)
        self.assertIn("the alert ID is missing", p.stderr)
        p = run("alerts", "unack", aid, "--note", "x", "--url", url)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--note is for ack", p.stderr)


if __name__ == "__main__":
    unittest.main()
