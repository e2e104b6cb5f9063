"""Time gradwatch.Client.log() in a tight loop with the daemon up, down and
slow, and print the latency distribution as one JSON line per case.

    python3 bench_log.py --up SOCKET [--udp HOST:PORT] [--n 100000]

up    the daemon's Unix socket (a running gradwatchd)
down  a socket path nobody listens on and no UDP fallback: everything is
      dropped or lost, and counted
slow  a Unix socket whose server accepts and never reads: the sender thread
      blocks in sendall, the queue fills, log() drops and counts
Each case also reports what the client counted (sent, sent_unconfirmed,
dropped, lost, invalid, queued), so a fast log() that silently lost lines
would show.
"""
import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradwatch  # noqa: E402


def measure(client, n, gap_every=1000):
    lat = []
    pc = time.perf_counter_ns
    for step in range(1, n + 1):
        t0 = pc()
        client.log(step, loss=2.0, grad_norm=0.5, lr=1e-3)
        lat.append(pc() - t0)
        if step % gap_every == 0:
            time.sleep(0.001)   # a training loop does other things between steps
    lat.sort()

    def q(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] / 1000.0
    return {'n': n, 'p50_us': q(0.5), 'p99_us': q(0.99), 'p999_us': q(0.999), 'max_us': lat[-1] / 1000.0}


def slow_server(path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    held = []

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            held.append(c)      # never read
    threading.Thread(target=accept, daemon=True).start()
    return srv, held


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--up', help="a running gradwatchd's Unix socket")
    ap.add_argument('--udp', default='')
    ap.add_argument('--n', type=int, default=100000)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='gwbench-')
    results = []
    cases = []
    if a.up:
        cases.append(('up', dict(address=a.up, udp=a.udp or None)))
    cases.append(('down', dict(address=os.path.join(tmp, 'nobody.sock'), udp='')))
    slow_path = os.path.join(tmp, 'slow.sock')
    srv, held = slow_server(slow_path)
    cases.append(('slow', dict(address=slow_path, udp='', max_queue=10000)))
    for name, kw in cases:
        c = gradwatch.Client(run='bench-' + name, **kw)
        r = measure(c, a.n)
        c.flush(timeout=5 if name == 'up' else 0.5)
        st = c.stats()
        r.update(case=name, sent=st['sent'], sent_unconfirmed=st['sent_unconfirmed'],
                 dropped=st['dropped'], lost=st['lost'], invalid=st['invalid'],
                 queued=st['queued'] + st['in_flight'], logged=st['logged'])
        if name != 'slow':
            c.close(timeout=5)
        results.append(r)
        print(json.dumps(r), flush=True)
    srv.close()
    for h in held:
        h.close()


if __name__ == '__main__':
    main()
