"""Benchmark: shipping to PostgreSQL (fleet/ship.c, docs/fleet.md).

1. Throughput.  One node's database with ROWS records (ingested once by a
   daemon without shipping).  Each round, on a fresh PostgreSQL database:
   a gradwatchd started on a copy of that file ships everything (time from
   the start of its process, start-up included, until /v1/stats says
   nothing is behind), then a plain COPY of
   the same rows, in the same text format, into an empty table like
   gw_records (its primary key and index included), through psql.  The
   ratio COPY time / shipping time per round, and its median (goal: at
   least 0.7).
2. Cost to ingest.  Two daemons, one shipping to PostgreSQL and one not,
   take turns posting the same batch of LINES lines (POST /v1/ingest
   answers once the last line is committed); the median of the per-round
   rate ratios shipping / not shipping (goal: at least 0.95, a cost of at
   most 5%).  Which daemon goes first alternates, so neither gets the
   other's warm caches every round; the shipping daemon ships each round's
   lines while the next round is posted.

A benchmark, not a test: it measures, so it runs under `meson test
--benchmark` (bench/meson.build); a busy machine shows as a worse number,
not a red build.  The tests of what shipping guarantees are
tests/integration/test_fleet.py.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from gwtest import Daemon, wait_for  # noqa: E402
from pgserver import PgServer  # noqa: E402

ROWS = int(os.environ.get("GW_FLEET_ROWS", "300000"))
LINES = int(os.environ.get("GW_FLEET_LINES", "100000"))
ROUNDS = int(os.environ.get("GW_FLEET_ROUNDS", "3"))
RUNS = 20

SELECT = ("SELECT r.id, n.name, r.seg, r.step, r.line, r.ts, r.recv, r.loss, r.grad_norm, r.lr,"
          " r.throughput, r.nonfinite, r.extra, r.rank FROM records r"
          " JOIN runs n ON n.id = r.run_id ORDER BY r.id")


def batch(n, tag, first=1):
    steps = n // RUNS
    out = []
    for s in range(first, first + steps):
        for k in range(RUNS):
            out.append('{"run":"%s-%d","step":%d,"loss":%.5f,"grad_norm":%.4f,"lr":0.0003,'
                       '"throughput":812.5}' % (tag, k, s, 2.0 + 1.0 / s, 0.5 + (s % 7) * 0.01))
    return ("\n".join(out) + "\n").encode()


def post(d, body):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/ingest" % d.http_port, data=body,
                                 headers={"Content-Type": "application/x-ndjson"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=600) as r:
        ans = json.loads(r.read())
    dt = time.monotonic() - t0
    assert ans.get("rejected", 0) == 0, ans
    return dt


def copy_text(db):
    """The rows as the shipper sends them: COPY text, node name first."""
    import sqlite3
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)

    def fmt(v):
        if v is None:
            return "\\N"
        if isinstance(v, float):
            return repr(v)
        return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    lines = ["\t".join(["bench"] + [fmt(v) for v in row]) for row in con.execute(SELECT)]
    con.close()
    return ("\n".join(lines) + "\n").encode()


def fresh_db(pg):
    pg.psql("DROP DATABASE IF EXISTS gradwatch WITH (FORCE)", db="postgres")
    pg.psql("CREATE DATABASE gradwatch", db="postgres")


def ship_round(pg, pristine, tmp):
    fresh_db(pg)
    work = tempfile.mkdtemp(dir=tmp)
    shutil.copy(pristine, os.path.join(work, "gradwatch.db"))
    d = Daemon(workdir=work, config={"fleet": {"postgresql": pg.dsn, "node": "bench",
                                               "interval": "50ms"}},
               args=["--log-level", "info"])
    t0 = time.monotonic()
    d.start(wait=False)
    d.wait_ready()

    def drained():
        f = d.stats().get("fleet", {})
        return f.get("up") and f.get("backlog") == 0 and f.get("shipped", {}).get("records", 0) >= ROWS
    wait_for(drained, 600, "shipping to drain", interval=0.02)
    ship_s = time.monotonic() - t0
    d.stop()
    n = int(pg.scalar("SELECT count(*) FROM gw_records"))
    assert n == ROWS, (n, ROWS)
    size = int(pg.scalar("SELECT pg_total_relation_size('gw_records')"))
    print("  gw_records with its indexes: %.0f bytes per record" % (size / ROWS))
    # the plain COPY of the same rows into an empty table like gw_records
    pg.psql("CREATE TABLE copy_target (LIKE gw_records INCLUDING ALL)")
    data = copy_text(pristine)
    t0 = time.monotonic()
    r = subprocess.run(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres",
                        "-d", "gradwatch", "-c", "COPY copy_target FROM STDIN"], input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    copy_s = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert int(pg.scalar("SELECT count(*) FROM copy_target")) == ROWS
    return ship_s, copy_s


def main():
    tmp = tempfile.mkdtemp(prefix="gw-fleet-bench-")
    pg = PgServer()
    daemons = []
    try:
        # the node's database, made once
        src = Daemon(workdir=tempfile.mkdtemp(dir=tmp))
        src.start()
        for i in range(0, ROWS, 50000):
            post(src, batch(min(50000, ROWS - i), "ship", first=1 + i // RUNS))
        src.stop()
        pristine = src.db
        print("throughput: %d records, %d rounds" % (ROWS, ROUNDS))
        ratios = []
        for k in range(ROUNDS):
            ship_s, copy_s = ship_round(pg, pristine, tmp)
            ratios.append(copy_s / ship_s)
            print("  round %d: shipping %.2f s (%.0f rows/s), plain COPY %.2f s (%.0f rows/s), "
                  "ratio %.2f" % (k + 1, ship_s, ROWS / ship_s, copy_s, ROWS / copy_s, ratios[-1]))
        print("shipping throughput / plain COPY: median %.2f (goal >= 0.7)" % statistics.median(ratios))

        fresh_db(pg)
        plain = Daemon(config={})   # a file too, as the other reads one
        shipping = Daemon(config={"fleet": {"postgresql": pg.dsn, "node": "rate"}})
        daemons = [plain, shipping]
        for d in daemons:
            d.start()
        print("ingest cost: %d lines per POST, %d rounds" % (LINES, ROUNDS + 2))
        rr = []
        step = 1
        for k in range(ROUNDS + 2):
            body = batch(LINES, "rate-%d" % k, first=step)
            step += LINES // RUNS
            if k % 2:
                t_ship = post(shipping, body)
                t_plain = post(plain, body)
            else:
                t_plain = post(plain, body)
                t_ship = post(shipping, body)
            rr.append(t_plain / t_ship)
            print("  round %d: not shipping %.0f lines/s, shipping %.0f lines/s, ratio %.3f"
                  % (k + 1, LINES / t_plain, LINES / t_ship, rr[-1]))
        wait_for(lambda: shipping.stats()["fleet"]["backlog"] == 0, 600, "the shipper to catch up",
                 interval=0.1)
        print("ingest rate shipping / not shipping: median %.3f (goal >= 0.95: cost <= 5%%)"
              % statistics.median(rr))
    finally:
        for d in daemons:
            d.close(quiet=True)
        pg.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
