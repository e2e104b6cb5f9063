"""Benchmark: gradwatch.Client.log() latency (p50, p99, p99.9, max) in a
tight loop of 100,000 calls with a real gradwatchd up, down and slow
(contrib/python/bench_log.py), with what the client counted beside it.

Goal (docs/integrations.md): p50 under 5 us and p99 under 50 us, so that
logging never shows in a training step.  Printed, not asserted: a loaded
machine makes a slow number here, not a red build; the accounting (nothing
vanishes) is asserted by tests/integration/test_python_client.py.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
from gwtest import CONTRIB_PYTHON, Daemon  # noqa: E402


def main():
    with Daemon(args=['--log-level', 'warn']) as d:
        r = subprocess.run([sys.executable, os.path.join(CONTRIB_PYTHON, 'bench_log.py'), '--up',
                            d.sock, '--n', '100000'], stdout=subprocess.PIPE, timeout=600,
                           check=True)
    for line in r.stdout.decode().splitlines():
        x = json.loads(line)
        goal = x['p50_us'] < 5 and x['p99_us'] < 50
        print('%-5s p50 %6.2f us  p99 %7.2f us  p99.9 %8.2f us  max %8.0f us  '
              '(sent %d, dropped %d, lost %d)  goal %s' % (
                  x['case'], x['p50_us'], x['p99_us'], x['p999_us'], x['max_us'], x['sent'],
                  x['dropped'], x['lost'], 'met' if goal else 'NOT met'))


if __name__ == '__main__':
    main()
