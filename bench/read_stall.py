"""Benchmark: how long large reads hold gradwatchd's event loop.

A run of RECORDS records (GW_RS_RECORDS, 200,000), then READS (GW_RS_READS,
100) clients at once each asking for GET /v1/runs/big/records
?max_points=0&limit=LIMIT (GW_RS_LIMIT, 100,000), every one retrying after
Retry-After when the daemon answers 503 (limits.max_reads_in_flight), until
all have their answer.  Meanwhile a probe asks /healthz every 10 ms on a
new connection, and the daemon pings a NOTIFY_SOCKET watchdog every 0.5 s
(WATCHDOG_USEC=1 s).  /healthz is answered on the loop, so its latency is
how long the loop was held: printed are the worst and the median while the
reads were in flight (goal: worst <= 50 ms), measured by a separate probe
process (in the readers' process the GIL would add its own waits), the
longest gap between two
watchdog pings, the reads' wall time, the answer's size and the daemon's
peak RSS.  Issue 22 measured 38.9 s for /healthz and a 39.8 s watchdog gap
with 96 such reads when the answers were written on the loop.

The reading clients run on the daemon's machine here, 100 threads taking
318 MB of JSON off their sockets: on 2 cores they compete with the loop for
a core, which remote readers (browsers, other hosts) do not.
GW_RS_READER_NICE=19 runs their threads at nice 19 (the probe stays at 0)
to see how long the daemon holds its own loop without that competition;
by default they run at the probe's priority (printed either way).
"""
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
from gwtest import Daemon  # noqa: E402
from readload import Watchdog, load, peak_rss_mb, reads_under_probe  # noqa: E402

RECORDS = int(os.environ.get('GW_RS_RECORDS', '200000'))
READS = int(os.environ.get('GW_RS_READS', '100'))
LIMIT = int(os.environ.get('GW_RS_LIMIT', '100000'))
READER_NICE = int(os.environ.get('GW_RS_READER_NICE', '0'))


def main():
    tmp = tempfile.mkdtemp(prefix='gw-readstall-')
    wd = Watchdog(tmp)
    d = Daemon(env={'NOTIFY_SOCKET': wd.path, 'WATCHDOG_USEC': '1000000'})
    try:
        d.start()
        load(d, 'big', RECORDS)
        out, probes, pings, secs = reads_under_probe(d, wd, READS, LIMIT, READER_NICE)
        lat = [p[2] * 1000 for p in probes if p[3] > 0]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        sizes = sorted({x[1] for x in out})
        print('reads: %d at once, %d records each of a %d-record run, answers of %s bytes; '
              'the readers at nice %d, the /healthz probe at 0'
              % (READS, LIMIT, RECORDS, '/'.join(str(s) for s in sizes), READER_NICE))
        print('statuses: %s; tries per read: max %d' % (
            json.dumps({str(s): sum(1 for x in out if x[0] == s) for s in {x[0] for x in out}}),
            max(x[2] for x in out)))
        print('all answered in %.1f s' % secs)
        lat.sort()
        print('/healthz while reads were in flight: %d probes, median %.1f ms, p99 %.1f ms, '
              'worst %.1f ms (the worst loop stall as a client sees it, scheduling of this '
              'machine included; goal <= 50 ms)' % (len(lat), statistics.median(lat),
                                                    lat[int(len(lat) * 0.99)], lat[-1]))
        print('watchdog pings in that time: %d, longest gap %.3f s (pinged every 0.5 s: the '
              'loop was late by at most %.0f ms)' % (len(pings), max(gaps) if gaps else float('nan'),
                                                     (max(gaps) - 0.5) * 1000 if gaps else float('nan')))
        print('load average while measured: %s' % open('/proc/loadavg').read().split()[0])
        print('daemon peak RSS: %.0f MB' % peak_rss_mb(d.proc.pid))
    finally:
        d.close(quiet=True)
        wd.close()


if __name__ == '__main__':
    main()
