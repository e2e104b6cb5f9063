"""Benchmark: GET /metrics with every active run (limits.max_runs, 16,384 by
default) and 100,000 known runs: the time the loop spends rendering it (the
request's round trip, which is nearly all rendering) and its size.

Before runs had a budget, 100,000 runs meant 100,000 runs' series and 1.35 s
of a blocked loop per scrape; the per-run series are now those of the active
runs only.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
from gwtest import Daemon  # noqa: E402

KNOWN = int(os.environ.get('GW_METRICS_RUNS', '100000'))


def main():
    with Daemon() as d:
        for k in range(0, KNOWN, 10000):
            body = ''.join('{"run":"r-%06d","step":1,"loss":1.5,"grad_norm":0.5,"lr":0.001,'
                           '"throughput":10}\n' % i for i in range(k, min(KNOWN, k + 10000)))
            assert d.post('/v1/ingest', body.encode())[0] == 200
        times, size = [], 0
        for _ in range(5):
            t0 = time.perf_counter()
            status, text = d.get('/metrics')
            times.append((time.perf_counter() - t0) * 1000)
            size = len(text)
        active = [l for l in text.splitlines() if l.startswith('gradwatch_runs ')][0].split()[1]
    print('%d known runs, %s active: GET /metrics median %.0f ms (min %.0f, max %.0f), %.1f MB'
          % (KNOWN, active, statistics.median(times), min(times), max(times), size / 1e6))


if __name__ == '__main__':
    main()
