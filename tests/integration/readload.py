"""Large reads against a real gradwatchd, for tests/integration/
test_heavy_reads.py and bench/read_stall.py (issue 22, item 1): load a big
run, fire many large reads at once (each retrying after Retry-After on
503), watch /healthz from a separate probe process and the daemon's
WATCHDOG=1 pings on a NOTIFY_SOCKET while they are in flight.
"""
import http.client
import os
import socket
import subprocess
import sys
import threading
import time


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


def big_read(port, path, out, nice=0):
    """GET path until it is answered 200 (503: after Retry-After), from a
    thread at `nice` (Linux: a thread's own nice value)."""
    if nice:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
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
            out.append((r.status, len(body), tries, time.monotonic()))
            return
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


def reads_under_probe(d, wd, reads, limit, reader_nice=0):
    """Run `reads` big reads at once (their threads at `reader_nice`) while
    a probe process asks /healthz until they are done.  Returns (answers,
    probes, pings, seconds):
    answers are (status, bytes, tries, t answered), probes (t answered,
    status, latency, reads still unanswered at t), pings the watchdog's
    times in that window (t: time.monotonic())."""
    path = '/v1/runs/big/records?max_points=0&limit=%d' % limit
    stop = os.path.join(d.dir, 'probe.stop')
    probe = subprocess.Popen([sys.executable, '-c', PROBE, str(d.http_port), stop],
                             stdout=subprocess.PIPE, text=True)
    out, threads = [], []
    t0 = time.monotonic()
    for _ in range(reads):
        th = threading.Thread(target=big_read, args=(d.http_port, path, out, reader_nice),
                              daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    t1 = time.monotonic()
    open(stop, 'w').close()
    text, _ = probe.communicate(timeout=600)
    probes = []
    for line in text.split('\n'):
        if line:
            t, st, lat = line.split()
            t = float(t)
            if t0 <= t <= t1:
                probes.append((t, int(st), float(lat), sum(1 for x in out if x[3] > t)))
    return out, probes, [p for p in wd.pings if t0 <= p <= t1], t1 - t0
