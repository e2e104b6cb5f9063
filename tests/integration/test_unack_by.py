"""Who withdrew an acknowledgement (docs/alerts.md, "Acknowledging"):
DELETE /v1/alerts/{id}/ack takes {"by": ...} as POST does, and the `unack`
event carries it as `unacked_by` -- in the answer, to a webhook, in the
Slack message -- and `gradwatch alerts unack ID --by NAME` sends it
(default $USER).  Against the real daemon, real receivers, the real CLI.
"""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import SinkTestCase  # noqa: E402
from test_ack import FAST, request  # noqa: E402
from test_http_defer import open_alert  # noqa: E402
from test_alert_delivery import check_slack_payload  # noqa: E402

GRADWATCH = os.environ.get("GRADWATCH", "gradwatch")


def event(r):
    return r["headers"]["x-gradwatch-event"]


class UnackBy(SinkTestCase):
    def test_webhook_and_answer_say_who_withdrew(self):
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h", **FAST)])
        aid = open_alert(d, "r1")["id"]
        path = "/v1/alerts/%s/ack" % aid
        self.assertEqual(request(d.http, "POST", path, {"by": "alice"})[0], 200)
        st, j = request(d.http, "DELETE", path, {"by": "bob"})
        self.assertEqual(st, 200, j)
        self.assertEqual((j["kind"], j["unacked_by"]), ("unack", "bob"))
        self.assertNotIn("acked_by", j)
        [ev] = self.rcv.wait(1, pred=lambda r: event(r) == "unack")
        self.assertEqual(ev["json"]["alert"]["unacked_by"], "bob", ev["json"])
        self.assertNotIn("acked_by", ev["json"]["alert"])
        # the same checks as POST: a bad "by" is a 400, nothing withdrawn
        request(d.http, "POST", path, {"by": "alice"})
        st, j = request(d.http, "DELETE", path, {"by": 7})
        self.assertEqual(st, 400, j)
        self.assertIn('"by" must be a string', j["error"])
        self.assertEqual(d.get("/v1/alerts/" + aid)[1]["acked_by"], "alice")
        # without a body: no unacked_by, as before
        st, j = request(d.http, "DELETE", path)
        self.assertEqual(st, 200, j)
        self.assertNotIn("unacked_by", j)

        # the CLI: --by on unack, $USER by default
        url = "http://127.0.0.1:%d" % d.http
        env = dict(os.environ, USER="dana")

        def cli(*args):
            return subprocess.run([GRADWATCH, "alerts"] + list(args) + ["--url", url, "--json"],
                                  env=env, capture_output=True, text=True, timeout=60)
        for by, args in (("erin", ["--by", "erin"]), ("dana", [])):
            self.assertEqual(cli("ack", aid).returncode, 0)
            p = cli("unack", aid, *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)["unacked_by"], by)
            evs = self.rcv.wait(1, pred=lambda r: event(r) == "unack"
                                and r["json"]["alert"].get("unacked_by") == by)
            self.assertEqual(len(evs), 1)

    def test_slack_message_says_who_withdrew(self):
        d = self.daemon([dict(type="slack", name="team", url=self.rcv.url + "/services/T/B/x",
                              rate_limit="off", **FAST)])
        aid = open_alert(d, "prod")["id"]
        path = "/v1/alerts/%s/ack" % aid
        self.assertEqual(request(d.http, "POST", path, {"by": "alice"})[0], 200)
        self.assertEqual(request(d.http, "DELETE", path, {"by": "bob <sre>"})[0], 200)
        [msg] = self.rcv.wait(1, pred=lambda r: event(r) == "unack")
        check_slack_payload(msg["json"])
        text = json.dumps(msg["json"])
        self.assertIn("withdrawn by bob &lt;sre&gt;", text)


if __name__ == "__main__":
    unittest.main()
