"""Benchmark: what a dormant run costs when it sends again, and what the
runs that were live cost a restart.

A run whose detector state left memory (idle, or to make room under
limits.max_runs) has it rebuilt on its next line: its last 1,024 stored
records are read from SQLite (one indexed query) and re-fed to the
detectors quietly, on the loop thread, before the line.  This measures that
pause per run, as the daemon logs it, for runs of 2,000 records in a
database holding RUNS of them, next to the time the same line takes for an
active run (the round trip of one small HTTP ingest request).

Restart: RUNS runs of 2,000 records logging live until a clean stop; the
daemon's next start rebuilds each of them (the newest 256) to see whether
to watch its silence.  Printed: start to ready (/healthz answers), and the
rebuild as the daemon logs it ("N run(s) rebuilt at start in M ms", when
the build logs it), the median of RESTARTS restarts.
"""
import json
import os
import re
import shutil
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
            # the run active after run_evict_idle_s (core/runs.c)
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


RESTARTS = int(os.environ.get('GW_REBUILD_RESTARTS', '7'))


class Binary(Daemon):
    """A daemon of a given gradwatchd binary."""

    def __init__(self, binary, **kw):
        super().__init__(**kw)
        self.binary = binary

    def command(self):
        return [self.binary] + super().command()[1:]


def restart():
    """Restarts of the runs' database; with GRADWATCHD_BEFORE (another
    build's gradwatchd), its restarts alternate with this build's on a copy
    of the same database, so both see the same machine load."""
    before = os.environ.get('GRADWATCHD_BEFORE')
    fill = Binary(before or os.environ['GRADWATCHD'], args=['--log-level', 'debug'])
    with fill as d:
        for k in range(RUNS):
            now = time.time()
            body = ''.join(json.dumps({'run': 'live-%04d' % k, 'step': s, 'loss': 2.0 / s,
                                       'grad_norm': 0.5, 'lr': 1e-3,
                                       'ts': now - (RECORDS - s) * 0.001}) + '\n'
                           for s in range(1, RECORDS + 1))
            assert d.post('/v1/ingest', body.encode())[0] == 200
        d.stop()
        builds = [('this build', Binary(os.environ['GRADWATCHD'], args=['--log-level', 'debug']))]
        if before:
            builds.insert(0, ('before', Binary(before, args=['--log-level', 'debug'])))
        for _, b in builds:
            shutil.copy(d.db, b.db)
        ready = {name: [] for name, _ in builds}
        logged = []
        try:
            for _ in range(RESTARTS):
                for name, b in builds:
                    t0 = time.perf_counter()
                    b.start()
                    ready[name].append((time.perf_counter() - t0) * 1000)
                    b.stop()
            with open(builds[-1][1].log_path, encoding='utf-8', errors='replace') as f:
                m = re.findall(r'(\d+) run\(s\) rebuilt at start in (\d+) ms', f.read())
            logged = [int(x[1]) for x in m]
        finally:
            for _, b in builds:
                b.close()
    print('restart with %d runs logging until the stop (%d records each), %d restarts each:'
          % (RUNS, RECORDS, RESTARTS))
    for name, _ in builds:
        v = ready[name]
        print('  %-10s start to ready: median %.0f ms (min %.0f, max %.0f)'
              % (name, statistics.median(v), min(v), max(v)))
    if before:
        print('  ratio this build / before (medians): %.2f'
              % (statistics.median(ready['this build']) / statistics.median(ready['before'])))
    if logged:
        print('  this build, the runs rebuilt as logged: median %d ms (%.2f ms a run)'
              % (statistics.median(logged), statistics.median(logged) / min(RUNS, 256)))


if __name__ == '__main__':
    if os.environ.get('GW_REBUILD_ONLY') != 'restart':
        main()
    if os.environ.get('GW_REBUILD_ONLY') != 'dormant':
        restart()
