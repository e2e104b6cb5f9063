"""Benchmark: what a dormant run costs when it sends again.

A run whose detector state left memory (idle, or to make room under
limits.max_runs) has it rebuilt on its next line: its last 1,024 stored
records are read from SQLite (one indexed query) and re-fed to the
detectors quietly, on the loop thread, before the line.  This measures that
pause per run, as the daemon logs it, for runs of 2,000 records in a
database holding RUNS of them, next to the time the same line takes for an
active run (the round trip of one small HTTP ingest request).
"""
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
from gwtest import Daemon, wait_for  # noqa: E402

RUNS = int(os.environ.get('GW_REBUILD_RUNS', '200'))
RECORDS = 2000


def metric(text, name):
    m = re.search(r'^%s (\S+)$' % name, text, re.M)
    return float(m.group(1)) if m else None


def one_line(d, run, step):
    t0 = time.perf_counter()
    st, _ = d.post('/v1/ingest', json.dumps({'run': run, 'step': step, 'loss': 1.0,
                                             'grad_norm': 0.5}).encode() + b'\n')
    assert st == 200, st
    return (time.perf_counter() - t0) * 1000


def main():
    cfg = {'tick_ms': 100, 'limits': {'run_evict_idle_s': 1}}
    with Daemon(config=cfg, args=['--log-level', 'debug']) as d:
        for k in range(RUNS):
            # an old log (ts long past): not live, so no stall watch keeps
            # the run active after run_evict_idle_s (daemon/runs.c)
            body = ''.join(json.dumps({'run': 'run-%04d' % k, 'step': s, 'loss': 2.0 / s,
                                       'grad_norm': 0.5, 'lr': 1e-3, 'ts': 1e9 + s}) + '\n'
                           for s in range(1, RECORDS + 1))
            assert d.post('/v1/ingest', body.encode())[0] == 200
        wait_for(lambda: metric(d.get('/metrics')[1], 'gradwatch_runs_dormant') == RUNS,
                 timeout=120, what='every run to become dormant')
        cold = [one_line(d, 'run-%04d' % k, RECORDS + 1) for k in range(RUNS)]
        warm = [one_line(d, 'run-%04d' % k, RECORDS + 2) for k in range(RUNS)]
        log = d.logtext()
    rebuilt = [int(x) for x in re.findall(r'detector state rebuilt from \d+ stored line\(s\) in (\d+) ms',
                                          log)]
    print('%d runs of %d records; a dormant run sending again:' % (RUNS, RECORDS))
    if rebuilt:
        print('  rebuild (read 1,024 records + quiet re-feed), as logged: median %d ms, max %d ms '
              '(%d of them in the log tail)' % (statistics.median(rebuilt), max(rebuilt), len(rebuilt)))
    print('  one-line HTTP ingest round trip, dormant run: median %.2f ms, p99 %.2f ms'
          % (statistics.median(cold), sorted(cold)[int(len(cold) * 0.99) - 1]))
    print('  one-line HTTP ingest round trip, active run:  median %.2f ms, p99 %.2f ms'
          % (statistics.median(warm), sorted(warm)[int(len(warm) * 0.99) - 1]))
    print('  ratio dormant / active (medians): %.1f' % (statistics.median(cold) / statistics.median(warm)))


if __name__ == '__main__':
    main()
