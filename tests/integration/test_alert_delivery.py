"""Alert delivery against real HTTP receivers (no mocks).

Happy path per sink (signed webhook, Slack's documented Block Kit shape,
Alertmanager's payload), filters, failures (500, 429 + Retry-After, reset,
hang), a receiver that is down for a while (everything arrives once, in
order), and a daemon killed with SIGKILL while alerts are pending (they
arrive after the restart, with the same delivery ids).
"""

import hashlib
import hmac
import socket
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import Receiver, SinkTestCase, finite_lines, nan_incident, wait_for  # noqa: E402

SECRET = "It's a Secret to Everybody"
FAST_RETRY = {"retry_initial": "100ms", "retry_max": "400ms"}


def delivery_ids(reqs):
    return [r["headers"].get("x-gradwatch-delivery") for r in reqs]


# ---- Slack's documented shape (api.slack.com Block Kit reference) -------------------

TEXT_TYPES = ("plain_text", "mrkdwn")


def check_text_obj(t, max_len, where, plain_only=False):
    assert isinstance(t, dict), where
    assert t.get("type") in (("plain_text",) if plain_only else TEXT_TYPES), where
    assert set(t) <= {"type", "text", "emoji", "verbatim"}, (where, t.keys())
    s = t["text"]
    assert isinstance(s, str) and 1 <= len(s) <= max_len, (where, len(s))
    if t["type"] == "mrkdwn":
        # control characters are escaped; Slack's link syntax is not used
        assert "<" not in s and ">" not in s, (where, s)
        for i, ch in enumerate(s):
            if ch == "&":
                assert s[i:i + 5] == "&amp;" or s[i:i + 4] in ("&lt;", "&gt;"), (where, s)


def check_slack_payload(p):
    assert set(p) <= {"text", "blocks", "thread_ts", "mrkdwn"}, p.keys()
    assert isinstance(p.get("text"), str) and p["text"], "text fallback missing"
    blocks = p["blocks"]
    assert isinstance(blocks, list) and 1 <= len(blocks) <= 50
    for i, b in enumerate(blocks):
        where = "blocks[%d]" % i
        t = b.get("type")
        if t == "header":
            assert set(b) <= {"type", "text", "block_id"}, where
            check_text_obj(b["text"], 150, where, plain_only=True)
        elif t == "section":
            assert set(b) <= {"type", "text", "fields", "block_id", "accessory"}, where
            assert "text" in b or "fields" in b, where
            if "text" in b:
                check_text_obj(b["text"], 3000, where)
            if "fields" in b:
                assert 1 <= len(b["fields"]) <= 10, where
                for f in b["fields"]:
                    check_text_obj(f, 2000, where + ".fields")
        elif t == "context":
            assert set(b) <= {"type", "elements", "block_id"}, where
            assert 1 <= len(b["elements"]) <= 10, where
            for e in b["elements"]:
                check_text_obj(e, 3000, where + ".elements")
        elif t == "actions":
            assert set(b) <= {"type", "elements", "block_id"}, where
            assert 1 <= len(b["elements"]) <= 25, where
            for e in b["elements"]:
                assert e["type"] == "button", where
                check_text_obj(e["text"], 75, where + ".button", plain_only=True)
                assert e["url"].startswith(("http://", "https://")) and len(e["url"]) <= 3000, where
                assert 1 <= len(e["action_id"]) <= 255, where
        elif t == "divider":
            pass
        else:
            raise AssertionError("%s: unexpected block type %r" % (where, t))
    assert blocks[0]["type"] == "header"


class DeliveryTest(SinkTestCase):
    # ---- happy paths ------------------------------------------------------------------

    def test_webhook_signed_open_and_resolve(self):
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/hook?token=abc",
                              secret_env="GW_TEST_SECRET")],
                        env={"GW_TEST_SECRET": SECRET})
        d.send(*nan_incident("run-a"))
        d.send(*finite_lines("run-a", 10, 60))   # 50 finite steps resolve it
        reqs = self.rcv.wait(2)
        self.assertEqual(len(self.rcv.requests), 2)
        for r in reqs:
            self.assertEqual(r["path"], "/hook?token=abc")
            h = r["headers"]
            self.assertEqual(h["content-type"], "application/json")
            want = hmac.new(SECRET.encode(), r["body"], hashlib.sha256).hexdigest()
            self.assertEqual(h["x-gradwatch-signature-256"], "sha256=" + want)
            body = r["json"]
            self.assertEqual(body["schema"], "gradwatch.alert.v2")
            self.assertEqual(h["x-gradwatch-delivery"], body["delivery_id"])
            self.assertEqual(int(h["x-gradwatch-timestamp"]), body["timestamp"])
            self.assertLess(abs(time.time() - body["timestamp"]), 60)
            self.assertEqual(h["x-gradwatch-event"], body["event"])
            self.assertTrue(h["user-agent"].startswith("gradwatch/"))
        o, z = reqs[0]["json"], reqs[1]["json"]
        self.assertEqual([o["event"], z["event"]], ["open", "resolve"])
        a = o["alert"]
        # links: without public_url, the daemon's own (loopback) address
        base = "http://127.0.0.1:%d" % d.http
        self.assertEqual(o["url"], base + "/alerts/" + a["id"])
        self.assertEqual(o["run_url"], base + "/runs/run-a")
        self.assertEqual(z["url"], o["url"])
        self.assertEqual(o["host"], socket.gethostname())
        # ... which serves the alert, and the page that shows it
        self.assertEqual(d.get("/v1/alerts/" + a["id"])[1]["detector"], "nonfinite")
        status, page = d.get("/alerts/" + a["id"])
        self.assertEqual(status, 200)
        self.assertIn("/static/app.js", page)
        self.assertEqual(o["delivery_id"], a["id"] + "-v1")
        self.assertEqual(z["delivery_id"], a["id"] + "-v2")
        self.assertEqual(z["alert"]["id"], a["id"])          # stable across events
        self.assertEqual((a["run"], a["detector"], a["severity"], a["state"]),
                         ("run-a", "nonfinite", "critical", "open"))
        self.assertIn("NaN", a["summary"])
        self.assertEqual(a["evidence"]["loss"], "NaN")
        self.assertEqual(z["alert"]["state"], "resolved")
        self.assertEqual(z["alert"]["summary"], a["summary"])  # carried into the resolve
        self.assertIn("resolved_at", z["alert"])
        # the token in the URL never reaches the log
        wait_for(lambda: d.query("SELECT count(*) FROM deliveries WHERE state='delivered'")[0][0] == 2,
                 60, "delivered rows")
        d.stop()
        self.assertNotIn("token=abc", d.logtext())
        self.assertNotIn(SECRET, d.logtext())

    def test_slack_payload_shape(self):
        d = self.daemon([dict(type="slack", name="team", url=self.rcv.url + "/services/T0/B0/SECRETTOKEN")],
                        extra_config={"public_url": "https://node17.example:7471/"})
        d.send(*nan_incident("prod-<7>&x"))
        d.send(*finite_lines("prod-<7>&x", 10, 60))
        reqs = self.rcv.wait(2)
        for r in reqs:
            self.assertEqual(r["path"], "/services/T0/B0/SECRETTOKEN")
            check_slack_payload(r["json"])
        p = reqs[0]["json"]
        alltext = json.dumps(p)
        self.assertIn("prod-&lt;7&gt;&amp;x", alltext)
        kinds = [b["type"] for b in p["blocks"]]
        self.assertEqual(kinds[:3], ["header", "section", "section"])
        self.assertIn("context", kinds)
        fields = [f["text"] for f in p["blocks"][2]["fields"]]
        self.assertEqual([f.split("*\n")[0] for f in fields], ["*Run", "*Step", "*Detector", "*Severity"])
        self.assertIn("*Evidence*", alltext)
        self.assertIn("*Likely cause*", alltext)
        self.assertIn("*What to check*", alltext)
        self.assertIn("Resolved", reqs[1]["json"]["blocks"][0]["text"]["text"])
        # a "View run" button to the alert's page under public_url (its
        # trailing slash dropped), the run name percent-encoded; the host
        # name in the context line
        [act] = [b for b in p["blocks"] if b["type"] == "actions"]
        [btn] = act["elements"]
        self.assertEqual(btn["text"]["text"], "View run")
        alert_id = d.get("/v1/runs/prod-%3C7%3E%26x/alerts")[1]["alerts"][0]["id"]
        self.assertEqual(btn["url"], "https://node17.example:7471/alerts/" + alert_id)
        ctx = [b for b in p["blocks"] if b["type"] == "context"][0]["elements"][0]["text"]
        self.assertIn("host " + socket.gethostname(), ctx)
        d.stop()
        self.assertNotIn("SECRETTOKEN", d.logtext())

    def test_alertmanager_payload(self):
        d = self.daemon([dict(type="alertmanager", name="am", url=self.rcv.url, repeat_interval="1s")])
        d.send(*nan_incident("run-am"))
        first = self.rcv.wait(1)[0]
        self.assertEqual(first["path"], "/api/v2/alerts")
        [al] = first["json"]
        self.assertEqual(al["labels"]["alertname"], "GradwatchNonfinite")
        self.assertEqual(al["labels"]["run"], "run-am")
        self.assertEqual(al["labels"]["severity"], "critical")
        self.assertEqual(set(al["annotations"]), {"summary", "description", "cause", "runbook_url"})
        page = "http://127.0.0.1:%d/alerts/%s" % (d.http, al["labels"]["alert_id"])
        self.assertEqual(al["generatorURL"], page)
        self.assertEqual(al["annotations"]["runbook_url"], page)
        # resend convention: re-posted while open, endsAt 4 intervals ahead
        reqs = self.rcv.wait(3, timeout=60)
        self.assertEqual(reqs[1]["headers"]["x-gradwatch-event"], "repeat")
        self.assertEqual(reqs[1]["json"][0]["startsAt"], al["startsAt"])
        self.assertGreater(reqs[2]["json"][0]["endsAt"], al["endsAt"])
        d.send(*finite_lines("run-am", 10, 60))
        last = self.rcv.wait(1, pred=lambda r: r["headers"]["x-gradwatch-event"] == "resolve")[0]
        self.assertLess(last["json"][0]["endsAt"], reqs[2]["json"][0]["endsAt"])
        n = len(self.rcv.requests)
        # resolved: no more resends.  A quiet window is the thing under test
        # (no event marks "a resend did not happen"); slowness can only hide
        # a resend, never fail the test
        time.sleep(1.5)
        self.assertEqual(len(self.rcv.requests), n)

    def test_filters(self):
        d = self.daemon([
            dict(type="webhook", name="prod", url=self.rcv.url + "/prod", runs="prod-*"),
            dict(type="webhook", name="other-det", url=self.rcv.url + "/det", detectors=["stall"]),
            dict(type="webhook", name="all", url=self.rcv.url + "/all", min_severity="critical"),
        ])
        d.send(*nan_incident("dev-1"))
        d.send(*nan_incident("prod-1"))
        self.rcv.wait(3)
        time.sleep(0.5)        # a quiet window: no fourth request (the thing under test)
        paths = sorted(r["path"] for r in self.rcv.requests)
        self.assertEqual(paths, ["/all", "/all", "/prod"])

    # ---- failures ---------------------------------------------------------------------

    def test_errors_are_retried_and_delivered_once(self):
        self.rcv.script = ["fail", "reset", "fail"]
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h", **FAST_RETRY)])
        d.send(*nan_incident("r"))
        self.rcv.wait(1, pred=lambda r: r["answered"] == "ok")
        ids = delivery_ids(self.rcv.requests)
        self.assertEqual([r["answered"] for r in self.rcv.requests], ["fail", "reset", "fail", "ok"])
        self.assertEqual(len(set(ids)), 1, ids)   # the same delivery id on every attempt
        st = wait_for(lambda: d.sink_stats()["hook"]["delivered"] == 1 and d.sink_stats()["hook"],
                      60, "delivered count")
        # libcurl itself re-sends once when a reused keep-alive connection is
        # reset before any answer, so the reset may not count as our attempt
        self.assertIn(st["retries"], (2, 3))
        wait_for(lambda: d.query("SELECT state, attempts, last_status FROM deliveries") ==
                 [("delivered", st["retries"] + 1, 200)], 60, "the delivered row")

    def test_429_retry_after_is_honoured(self):
        self.rcv.script = ["429"]
        self.rcv.retry_after = 2
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h", **FAST_RETRY)])
        d.send(*nan_incident("r"))
        reqs = self.rcv.wait(2, timeout=60)
        gap = reqs[1]["t"] - reqs[0]["t"]
        self.assertGreaterEqual(gap, 1.9, "Retry-After: 2 not honoured (%.2fs)" % gap)
        self.assertEqual(reqs[1]["answered"], "ok")

    def test_hung_receiver_times_out_and_retries(self):
        self.rcv.script = ["hang"]
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h",
                              timeout_ms=500, **FAST_RETRY)])
        d.send(*nan_incident("r"))
        reqs = self.rcv.wait(2, timeout=60)
        self.assertGreaterEqual(reqs[1]["t"] - reqs[0]["t"], 0.45)
        self.assertEqual(delivery_ids(reqs[:2])[0], delivery_ids(reqs[:2])[1])
        self.assertIn("timed out", d.sink_stats()["hook"]["last_error"] or "timed out")

    def test_a_receivers_answer_is_capped_and_redacted(self):
        # issue 22 item 11: a receiver echoing its request URL put the
        # webhook token into the log and into /v1/sinks for read tokens
        self.rcv.script = ["echo"]
        d = self.daemon([dict(type="webhook", name="hook",
                              url=self.rcv.url + "/hooks/tok-SECRETPATH?key=SECRETQUERY",
                              secret="sign-SECRETKEY", **FAST_RETRY)])
        d.send(*nan_incident("r"))
        self.rcv.wait(1, timeout=60)
        err = wait_for(lambda: d.sink_stats()["hook"]["last_error"], 60, "last_error")
        self.assertTrue(err.startswith("HTTP 404: no route for POST /REDACTED/REDACTED?key=REDACTED"), err)
        self.assertNotIn("SECRET", err)
        self.assertLessEqual(len(err), 128)
        self.assertTrue(err.endswith("..."), err)
        log = wait_for(lambda: (lambda t: "giving up" in t and t)(d.logtext()), 60, "the log line")
        self.assertIn("HTTP 404: no route for POST /REDACTED/REDACTED", log)
        self.assertNotIn("SECRET", log)
        self.assertNotIn("x" * 100, log)

    def test_permanent_4xx_is_not_retried(self):
        self.rcv.script = ["400"]
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h", **FAST_RETRY)])
        d.send(*nan_incident("r1"))
        self.rcv.wait(1)
        d.send(*nan_incident("r2"))               # the next alert still goes
        self.rcv.wait(2)
        wait_for(lambda: d.query("SELECT state FROM deliveries ORDER BY state") ==
                 [("delivered",), ("failed",)], 60, "failed + delivered rows")

    def test_delivery_outcomes_are_in_metrics(self):
        # on-call watches Prometheus, not the log: a sink whose every event
        # fails (a revoked Slack URL answers 404) must show there.  Only
        # gradwatch_outbox_depth (all sinks together) was exported.
        self.rcv.script = ["400", "500"]
        d = self.daemon([dict(type="webhook", name="hook", url=self.rcv.url + "/h", **FAST_RETRY)])
        d.send(*nan_incident("r1"))
        self.rcv.wait(1)
        d.send(*nan_incident("r2"))               # 500 first, then delivered
        self.rcv.wait(3)

        def sample(name, **labels):
            text = d.get("/metrics")[1]
            want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
            for line in text.splitlines():
                head, _, val = line.rpartition(" ")
                if head.startswith(name + "{"):
                    got = ",".join(sorted(head[len(name) + 1:-1].split(",")))
                    if got == want:
                        return float(val)
            return None

        wait_for(lambda: sample("gradwatch_alert_deliveries_total", sink="hook", type="webhook",
                                result="delivered") == 1, 60, "one delivered")
        self.assertEqual(sample("gradwatch_alert_deliveries_total", sink="hook", type="webhook", result="failed"), 1)
        self.assertEqual(sample("gradwatch_alert_delivery_retries_total", sink="hook", type="webhook"), 1)
        self.assertEqual(sample("gradwatch_alert_deliveries_pending", sink="hook", type="webhook"), 0)
        text = d.get("/metrics")[1]
        for fam, typ in (("gradwatch_alert_deliveries_total", "counter"),
                         ("gradwatch_alert_delivery_retries_total", "counter"),
                         ("gradwatch_alert_deliveries_pending", "gauge")):
            self.assertIn("# TYPE %s %s\n" % (fam, typ), text)
            self.assertIn("# HELP %s " % fam, text)

    def test_a_receiver_down_does_not_flood_the_log(self):
        # every failed attempt of every pending event was a warning: a
        # receiver down for 20 s with 30 alerts pending wrote 879 lines
        # (with the default back-off, about 18 an event an hour).  A sink
        # logs a few a minute and says how many it held back, at the latest
        # when it delivers again.
        port = self.rcv.port
        self.rcv.stop()
        d = self.daemon([dict(type="webhook", name="hook", url="http://127.0.0.1:%d/h" % port,
                              **FAST_RETRY)])
        for i in range(30):
            d.send(*nan_incident("down%d" % i))
        wait_for(lambda: d.sink_stats()["hook"]["retries"] >= 150, 60, "150 failed attempts")
        self.rcv.port = port
        self.rcv.start()
        wait_for(lambda: d.sink_stats()["hook"]["delivered"] == 30, 60, "all 30 delivered")
        retries = d.sink_stats()["hook"]["retries"]
        d.stop()
        with open(d.log_path, encoding="utf-8", errors="replace") as f:
            log = f.read().splitlines()
        attempts = [l for l in log if "attempt " in l and "failed:" in l and " warn " in l]
        self.assertLess(len(attempts), 30, "\n".join(attempts[-5:]))
        said = [l for l in log if "not logged" in l and "hook" in l]
        self.assertTrue(said, "\n".join(log[-10:]))
        held = sum(int(re.search(r"(\d+) more failed attempt", l).group(1)) for l in said)
        self.assertEqual(held + len(attempts), retries)
        after = [l for l in log if "delivered" in l and "after" in l and " info " in l]
        self.assertLess(len(after), 30, "\n".join(after[-5:]))

    def test_tls_is_verified_by_default(self):
        tmp = tempfile.mkdtemp(prefix="gwtls-")
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        tls = Receiver(tls=(cert, key))
        try:
            # a self-signed certificate is refused (and retried) by default ...
            d = self.daemon([dict(type="webhook", name="tls", url=tls.url + "/h", **FAST_RETRY)])
            d.send(*nan_incident("t"))
            wait_for(lambda: d.sink_stats()["tls"]["retries"] >= 2, 60, "refused TLS attempts")
            st = d.sink_stats()["tls"]
            self.assertEqual(st["delivered"], 0)
            self.assertRegex(st["last_error"], "(?i)certificate|SSL")
            self.assertEqual(tls.requests, [])
            # ... and accepted with that certificate as the CA
            d2 = self.daemon([dict(type="webhook", name="tls", url=tls.url + "/h", ca_file=cert,
                                   **FAST_RETRY)])
            d2.send(*nan_incident("t"))
            self.assertEqual(tls.wait(1)[0]["json"]["alert"]["run"], "t")
        finally:
            tls.close()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_receiver_down_then_up_everything_once_in_order(self):
        port = self.rcv.port
        self.rcv.stop()
        d = self.daemon([dict(type="webhook", name="hook", url="http://127.0.0.1:%d/h" % port,
                              max_in_flight=2, **FAST_RETRY)])
        runs = ["ra", "rb", "rc"]
        for run in runs:      # per run: open A, resolve A, open B
            d.send(*nan_incident(run))
            d.send(*finite_lines(run, 10, 55))
            d.send(*nan_incident(run, first_step=100))
        wait_for(lambda: d.sink_stats()["hook"]["retries"] >= 3, 60, "retries while down")
        time.sleep(1.0)        # the receiver stays down a while longer: the thing under test
        self.rcv.port = port
        self.rcv.start()
        reqs = self.rcv.wait(9, timeout=60)
        time.sleep(1.0)        # a quiet window: no duplicate delivery (the thing under test)
        self.assertEqual(len(self.rcv.requests), 9, delivery_ids(self.rcv.requests))
        ids = delivery_ids(reqs)
        self.assertEqual(len(set(ids)), 9, ids)   # once each
        for run in runs:
            mine = [r["json"] for r in reqs if r["json"]["alert"]["run"] == run]
            self.assertEqual([m["event"] for m in mine], ["open", "resolve", "open"], run)
            self.assertEqual(mine[0]["alert"]["id"], mine[1]["alert"]["id"])
            self.assertNotEqual(mine[0]["alert"]["id"], mine[2]["alert"]["id"])
        self.assertEqual(d.query("SELECT count(*) FROM deliveries WHERE state != 'delivered'")[0][0], 0)

    def test_sigkill_while_pending_delivers_after_restart(self):
        port = self.rcv.port
        self.rcv.stop()
        sinks = [dict(type="webhook", name="hook", url="http://127.0.0.1:%d/h" % port, **FAST_RETRY),
                 dict(type="slack", name="team", url="http://127.0.0.1:%d/services/T/B/x" % port,
                      **FAST_RETRY)]
        d = self.daemon(sinks)
        d.send(*nan_incident("k1"))
        d.send(*nan_incident("k2"))
        wait_for(lambda: d.query("SELECT count(*) FROM deliveries WHERE state='pending'")[0][0] == 4,
                 60, "4 pending deliveries committed")
        wait_for(lambda: d.sink_stats()["hook"]["retries"] >= 1, 60, "a failed attempt")
        d.kill()
        pending = sorted(d.query("SELECT alert_id || '-v' || version, sink FROM deliveries"))
        self.rcv.port = port
        self.rcv.start()
        d2 = self.daemon(sinks, tmp=d.tmp)
        reqs = self.rcv.wait(4, timeout=60)
        time.sleep(0.5)        # a quiet window: no duplicate delivery (the thing under test)
        self.assertEqual(len(self.rcv.requests), 4)
        got = sorted((r["headers"]["x-gradwatch-delivery"],
                      "hook" if r["path"] == "/h" else "team") for r in reqs)
        self.assertEqual(got, pending)
        wait_for(lambda: d2.query("SELECT count(*) FROM deliveries WHERE state='delivered'")[0][0] == 4,
                 60, "delivered rows after restart")
        self.assertIn("undelivered alert event(s) from before the restart", d2.logtext())

    def test_group_wait_collapses_a_burst_and_rate_limit_spaces_messages(self):
        d = self.daemon([dict(type="slack", name="team", url=self.rcv.url + "/s",
                              group_wait="5s", rate_limit="1/s")])
        # open and resolve within the group wait: one message, the resolve
        # (5 s: the resolve is sent apart, and under ASan on a loaded
        # machine it can come more than 1 s after the open)
        d.send(*nan_incident("g"))
        d.send(*finite_lines("g", 10, 55))
        # two more incidents on other runs: rate-limited to one a second
        d.send(*nan_incident("h"))
        d.send(*nan_incident("i"))
        reqs = self.rcv.wait(3, timeout=60)
        time.sleep(1.2)        # a quiet window: nothing beyond the three (the thing under test)
        self.assertEqual(len(self.rcv.requests), 3)
        by_run = {r["json"]["text"].split(" on run ")[1].split(",")[0]: r for r in reqs}
        self.assertIn("resolved", by_run["g"]["json"]["text"])
        ts = sorted(r["t"] for r in reqs)
        self.assertGreaterEqual(ts[2] - ts[1], 0.9)
        states = dict(((s, v), n) for s, v, n in d.query(
            "SELECT state, version, count(*) FROM deliveries GROUP BY state, version"))
        self.assertEqual(states.get(("superseded", 1)), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
