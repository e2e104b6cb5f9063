"""A stuck sink never holds up ingest: with a webhook that accepts requests
and never answers, every line of a batch that raises hundreds of alerts is
committed and answered, the alerts wait in that sink's queue (none lost,
none delivered), and a healthy sink beside it delivers every one.

Accounting only: how fast ingest runs with a hung sink next to no sink is
measured by bench/alert_ingest_rate.py (a benchmark, not a test).
"""

import os
import sys
import unittest
import urllib.request
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import Daemon, Receiver, wait_for  # noqa: E402

RUNS = 20
STEPS = 1200
NAN_EVERY = 300


def batch():
    out = []
    for k in range(RUNS):
        run = "iso-%d" % k
        for s in range(1, STEPS + 1):
            if s % NAN_EVERY == 0:
                out.append('{"run":"%s","step":%d,"loss":NaN,"grad_norm":1}\n' % (run, s))
            else:
                out.append('{"run":"%s","step":%d,"loss":%.4f,"grad_norm":0.5}\n' % (run, s, 2.0 / s))
    return "".join(out).encode()


class SinkIsolation(unittest.TestCase):
    def test_hung_sink_holds_alerts_not_ingest(self):
        hung_rcv, ok_rcv = Receiver(), Receiver()
        hung_rcv.mode = "hang"
        d = Daemon([dict(type="webhook", name="hung", url=hung_rcv.url + "/h", timeout_ms=60000),
                    dict(type="webhook", name="ok", url=ok_rcv.url + "/h")]).start()
        try:
            req = urllib.request.Request("http://127.0.0.1:%d/v1/ingest" % d.http, data=batch(),
                                         method="POST",
                                         headers={"Content-Type": "application/x-ndjson"})
            with urllib.request.urlopen(req, timeout=120) as r:
                res = json.loads(r.read())
                self.assertEqual(r.status, 200)
            self.assertEqual(res["accepted"], RUNS * STEPS)
            self.assertEqual(d.sql("SELECT count(*) FROM records")[0][0], RUNS * STEPS)
            events = d.sql("SELECT count(*) FROM outbox")[0][0]
            # each NaN opens an alert and the next finite steps resolve it
            self.assertGreaterEqual(events, RUNS * (STEPS // NAN_EVERY))
            # the healthy sink gets every event although the other one is stuck
            wait_for(lambda: d.sink_stats()["ok"]["delivered"] >= events, timeout=60,
                     what="the healthy sink to deliver every alert event")
            st = d.sink_stats()["hung"]
            self.assertEqual(st["delivered"], 0)
            # every event is still held (queued counts the ones in flight), or was
            # replaced by a later version of its alert before it could be sent
            self.assertEqual(st["queued"] + st["superseded"], events, st)
            self.assertGreater(st["in_flight"], 0, st)
        finally:
            d.remove()
            hung_rcv.close()
            ok_rcv.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
