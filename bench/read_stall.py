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
"""
import http.client
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
from gwtest import Daemon  # noqa: E402

RECORDS = int(os.environ.get('GW_RS_RECORDS', '200000'))
READS = int(os.environ.get('GW_RS_READS', '100'))
LIMIT = int(os.environ.get('GW_RS_LIMIT', '100000'))


def load(d, run, n):
    """n records of run over the Unix socket, committed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(d.sock)
        step = 1
        while step <= n:
            k = min(20000, n - step + 1)
            s.sendall(b''.join(b'{"run":"%s","step":%d,"loss":%.4f,"grad_norm":%.3f,"lr":0.001}\n'
                               % (run.encode(), i, 2.0 + (i % 97) / 100.0, 1.0 + (i % 13) / 10.0)
                               for i in range(step, step + k)))
            step += k
    d.wait_committed("SELECT count(*) FROM records", n, timeout=600)


def big_read(port, path, out):
    """GET path until it is answered 200 (503: after Retry-After)."""
    tries = 0
    while True:
        tries += 1
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=600)
        try:
            c.request('GET', path)
            r = c.getresponse()
            body = r.read()
            if r.status == 503:
                time.sleep(float(r.getheader('Retry-After') or 1))
                continue
            out.append((r.status, len(body), tries))
            return
        finally:
            c.close()


def healthz(port):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=600)
    try:
        c.request('GET', '/healthz')
        r = c.getresponse()
        r.read()
        return r.status, time.perf_counter() - t0
    finally:
        c.close()


def peak_rss_mb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


class Watchdog:
    """Collects the times of WATCHDOG=1 datagrams on a NOTIFY_SOCKET."""

    def __init__(self, tmp):
        self.path = os.path.join(tmp, 'notify')
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.5)
        self.pings = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                msg = self.sock.recv(256)
            except socket.timeout:
                continue
            except OSError:
                return
            if b'WATCHDOG=1' in msg:
                self.pings.append(time.monotonic())

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


PROBE = r'''
import http.client, os, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
while not os.path.exists(stop):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=600)
    c.request('GET', '/healthz')
    r = c.getresponse()
    r.read()
    c.close()
    print('%.6f %d %.6f' % (time.monotonic(), r.status, time.perf_counter() - t0), flush=True)
    time.sleep(0.01)
'''


def reads_under_probe(d, wd, reads, limit):
    """Run `reads` big reads at once while a probe process asks /healthz
    until they are done.  Returns (answers, probes, pings, seconds): probes
    are (t, status, latency, reads still outstanding at t), pings the
    watchdog times in that window."""
    import subprocess
    path = '/v1/runs/big/records?max_points=0&limit=%d' % limit
    stop = os.path.join(d.dir, 'probe.stop')
    probe = subprocess.Popen([sys.executable, '-c', PROBE, str(d.http_port), stop],
                             stdout=subprocess.PIPE, text=True)
    out, threads, done_at = [], [], []
    t0 = time.monotonic()
    for _ in range(reads):
        th = threading.Thread(target=big_read, args=(d.http_port, path, out), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
        done_at.append(time.monotonic())
    t1 = time.monotonic()
    open(stop, 'w').close()
    text, _ = probe.communicate(timeout=600)
    probes = []
    for line in text.split('\n'):
        if line:
            t, st, lat = line.split()
            t = float(t)
            if t0 <= t <= t1:
                probes.append((t, int(st), float(lat), sum(1 for x in done_at if x > t)))
    return out, probes, [p for p in wd.pings if t0 <= p <= t1], t1 - t0


def main():
    tmp = tempfile.mkdtemp(prefix='gw-readstall-')
    wd = Watchdog(tmp)
    d = Daemon(env={'NOTIFY_SOCKET': wd.path, 'WATCHDOG_USEC': '1000000'})
    try:
        d.start()
        load(d, 'big', RECORDS)
        out, probes, pings, secs = reads_under_probe(d, wd, READS, LIMIT)
        lat = [p[2] * 1000 for p in probes if p[3] > 0]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        sizes = sorted({n for _, n, _ in out})
        print('reads: %d at once, %d records each of a %d-record run, answers of %s bytes'
              % (READS, LIMIT, RECORDS, '/'.join(str(s) for s in sizes)))
        print('statuses: %s; tries per read: max %d' % (
            json.dumps({str(s): sum(1 for x in out if x[0] == s) for s in {x[0] for x in out}}),
            max(t for _, _, t in out)))
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
