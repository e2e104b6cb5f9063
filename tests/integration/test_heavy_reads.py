"""Large reads do not hold the event loop (issue 22, item 1).

100 clients at once ask for 50,000 records each of a 100,000-record run
(a 503 from limits.max_reads_in_flight is retried after its Retry-After,
as a client should).  Between the first answer and the answer that leaves
half of them outstanding, /healthz (a separate probe process, every 10 ms)
keeps answering and the daemon keeps pinging its watchdog (WATCHDOG_USEC
0.5 s): both are answered on the loop, so they come only if the reads do
not hold it.  When the answers were written on the loop, /healthz waited
up to 26 s behind them and the watchdog went silent as long (systemd
kills a daemon whose watchdog is silent for WatchdogSec, 30 s in the
shipped unit).  No duration is asserted: what is counted is that the loop
took other work while the reads were in flight; bench/read_stall.py
measures the worst stall.
"""
import shutil
import tempfile
import unittest

from gwtest import Daemon
from readload import Watchdog, load, reads_under_probe

READS = 100


class HeavyReads(unittest.TestCase):
    def test_healthz_and_the_watchdog_go_on_while_reads_are_in_flight(self):
        tmp = tempfile.mkdtemp(prefix='gw-heavy-')
        self.addCleanup(shutil.rmtree, tmp, True)
        wd = Watchdog(tmp)
        self.addCleanup(wd.close)
        with Daemon(env={'NOTIFY_SOCKET': wd.path, 'WATCHDOG_USEC': '500000'}) as d:
            load(d, 'big', 100000)
            out, probes, pings, _ = reads_under_probe(d, wd, READS, 50000)
            self.assertEqual([x[0] for x in out], [200] * READS)
            self.assertEqual(len({x[1] for x in out}), 1)   # every answer whole, the same
            done = sorted(x[3] for x in out)
            first, half = done[0], done[READS // 2]
            during = [p for p in probes if first < p[0] < half]
            self.assertTrue(all(p[1] == 200 for p in probes), probes[:5])
            self.assertGreaterEqual(len(during), 10,
                                    '/healthz answered %d times while reads %d..%d were answered'
                                    % (len(during), 1, READS // 2))
            pinged = [t for t in pings if first < t < half]
            self.assertGreaterEqual(len(pinged), 3, 'the watchdog was pinged %d times while '
                                    'reads were in flight' % len(pinged))
            # the limits answered: some reads waited their turn
            self.assertGreater(max(x[2] for x in out), 1)


if __name__ == '__main__':
    unittest.main()
