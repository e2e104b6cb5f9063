"""Benchmark: a sink that is down does not slow ingest as its backlog grows.

One run flaps (a NaN every 6 lines opens an alert, the 5 finite lines after
it resolve it) into a gradwatchd whose two webhook sinks point at a port
nobody listens on: every attempt fails at once and is retried with
back-off, so each sink's queue grows by about two deliveries every 6 lines
(GW_OB_SECONDS, 40 s: ~240,000 by the end).  One client streams 20 lines
every 2 ms (~10,000 lines/s at most).  First, for reference, the same
stream into a gradwatchd with no sink, 10 s (its rate: the second 5 s).
Printed: the lines committed in each 5 s, the undelivered deliveries then,
and the ratio of the last 5 s's rate to the reference's (goal: at least
0.8).

Before the pump's walk stopped once it had met every queued run's first
delivery (alerts/outbox_send.c), it walked every committed delivery of the
queue for each alert event: 3,300-5,900 lines/s from the first seconds on
against ~9,200 with the walk stopped, once down to 117 lines/s by 40 s, and
14 s to over 30 s to stop on SIGTERM.

A benchmark, not a test: it measures, so it runs under `meson test
--benchmark` (bench/meson.build); that every queued event is still
delivered, in order per run, once the sink is back is test_crash's
AlertsAcrossACrash and test_alert_delivery.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
import gwtest  # noqa: E402

SECONDS = int(os.environ.get('GW_OB_SECONDS', '40'))
GOAL = 0.8


def flapping_lines(run):
    step = 1
    while True:
        for i in range(6):
            loss = 'NaN' if i == 0 else '%.3f' % (2.0 - 0.01 * (step % 50))
            yield ('{"run":"%s","step":%d,"loss":%s,"grad_norm":1}\n' % (run, step, loss)).encode()
            step += 1


def stream(port, stop):
    lines = flapping_lines('flap')
    with socket.create_connection(('127.0.0.1', port)) as s:
        while not stop.is_set():
            s.sendall(b''.join(next(lines) for _ in range(20)))
            time.sleep(0.002)


def measure(d, periods, report):
    """Stream into d for periods x 5 s; the rate of each 5 s."""
    stop = threading.Event()
    t = threading.Thread(target=stream, args=(d.port, stop), daemon=True)
    t.start()
    rates = []
    prev = 0
    try:
        for k in range(periods):
            time.sleep(5)
            n = d.sql("SELECT count(*) FROM records")[0][0]
            rates.append((n - prev) / 5.0)
            prev = n
            if report:
                q = d.sql("SELECT count(*) FROM deliveries WHERE state != 'delivered'")[0][0]
                print('  %3d s: %7.0f lines/s committed, %7d deliveries not delivered'
                      % (5 * (k + 1), rates[-1], q), flush=True)
    finally:
        stop.set()
        t.join(10)
    return rates


def main():
    ref = gwtest.Daemon()
    ref.start()
    try:
        base = measure(ref, 2, False)[-1]
    finally:
        ref.close()
    print('  no sink (reference): %.0f lines/s committed' % base)
    down = gwtest.free_port()
    cfg = {'sinks': [dict(type='webhook', name=n, url='http://127.0.0.1:%d/%s' % (down, n),
                          retry_initial='100ms', retry_max='400ms') for n in ('hook-1', 'hook-2')],
           'thresholds': {'nonfinite_quiet_steps': 5}}
    d = gwtest.Daemon(config=cfg)
    d.start()
    try:
        rates = measure(d, SECONDS // 5, True)
    finally:
        t0 = time.time()
        d.close()
        print('  stopped on SIGTERM in %.1f s' % (time.time() - t0))
    ratio = rates[-1] / base if rates and base else 0.0
    print('outbox backlog: rate over the last 5 s / the rate with no sink = %.2f (goal >= %.1f): %s'
          % (ratio, GOAL, 'met' if ratio >= GOAL else 'NOT met'))


if __name__ == '__main__':
    main()
