"""One run written by every rank of a distributed job (detectors/engine.h
"Ranks", "Interleaved writers"), through the real gradwatchd and
`gradwatch send`: 4 ranks each sending steps 1..399 of run "ddp" with a
"rank" field give one segment, rank 0's 399 records and the other ranks'
lines stored apart (their summary in /v1/runs/{run} and `gradwatch runs`,
their lines in /v1/runs/{run}/ranks?rank=N and `gradwatch export --rank`); without a rank field the interleaving is
recognised after a few repeats, said once in the log and on the run (also
after a daemon restart), the repeats stored apart as rank -1, and no
longer opens segments, while a real restart of the job still does; a bad
rank is rejected with its column.

A log every rank printed to (build-nanoGPT's stdout under torchrun's
"[rank3]:" and "[default3]:" labels, srun --label's " 3: ") through
`gradwatch replay` raises the alerts the one-rank log raises, on one run
and one segment, and through `gradwatchd --follow` is one run of one
segment with the other ranks' lines stored apart.

Where the ranks meet the restart and eviction paths (RestartAndEviction):
an interleaved run and a run of ranked lines that were live at a kill -9
or a clean stop are rebuilt at start (gw_runs_restore), their silence is
watched, and their next lines open no segment; a log whose iterations only
rank 31 prints (Megatron), followed, keeps rank 31 as its primary writer
through eviction under limits.max_runs, a daemon restart and a rotation."""
import http.client
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from gwtest import GRADWATCH, Daemon, wait_for


def ddp_lines(ranks=4, steps=range(1, 400), with_rank=True, ts0=None, hang=None):
    out = []
    for s in steps:
        for k in range(ranks):
            if hang and k == hang[0] and s > hang[1]:
                continue
            rec = {'run': 'ddp', 'step': s, 'loss': 2.0 + 0.01 * k - 0.001 * s, 'grad_norm': 0.5}
            if with_rank:
                rec['rank'] = k
            if ts0 is not None:
                rec['ts'] = ts0 + s + 0.001 * k
            out.append(json.dumps(rec))
    return ('\n'.join(out) + '\n').encode()


class Ranks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwranks-')

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def send(self, d, data):
        p = os.path.join(self.tmp, 'ranks.jsonl')
        with open(p, 'wb') as f:
            f.write(data)
        r = subprocess.run([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % d.http_port, p],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return r.returncode, r.stderr.decode()

    def segments(self, d, run='ddp'):
        return d.sql("SELECT count(*) FROM segments s JOIN runs r ON r.id = s.run_id "
                     "WHERE r.name = ?", (run,))[0][0]

    def records(self, d, run='ddp'):
        return d.sql("SELECT count(*) FROM records x JOIN runs r ON r.id = x.run_id "
                     "WHERE r.name = ?", (run,))[0][0]

    def test_four_ranks_with_a_rank_field_are_one_run(self):
        with Daemon() as d:
            rc, err = self.send(d, ddp_lines(hang=(2, 350)))
            self.assertEqual(rc, 0, err)
            self.assertIn('%d line(s) accepted' % (4 * 399 - 49), err)
            self.assertEqual(self.segments(d), 1)
            self.assertEqual(self.records(d), 399)
            st, run = d.get('/v1/runs/ddp')
            self.assertEqual(st, 200)
            self.assertEqual(run['last_step'], 399)
            self.assertEqual(len(run['segments']), 1)
            self.assertIsNone(run['writers'])
            ranks = {k['rank']: k for k in run['ranks']}
            self.assertEqual(sorted(ranks), [1, 2, 3])
            self.assertEqual(ranks[1]['lines'], 399)
            self.assertEqual(ranks[2]['last_step'], 350)     # the one behind
            self.assertEqual(ranks[3]['last_step'], 399)
            # the last values are rank 0's
            self.assertAlmostEqual(run['last_values']['loss'], 2.0 - 0.399)
            st, page = d.get('/v1/runs/ddp/ranks?rank=3&limit=2')
            self.assertEqual(st, 200, page)
            self.assertEqual([x['step'] for x in page['lines']], [398, 399])
            line = json.loads(page['lines'][1]['text'])
            self.assertEqual(line['rank'], 3)
            self.assertAlmostEqual(line['loss'], 2.03 - 0.399)
            out = subprocess.run([GRADWATCH, 'runs', '--url', 'http://127.0.0.1:%d' % d.http_port,
                                  'ddp'], stdout=subprocess.PIPE, timeout=60).stdout.decode()
            self.assertIn('  rank 2: 350 lines kept apart, last step 350\n', out)
            # `gradwatch export --rank`: a rank's lines as they came, from
            # the daemon (paged by id) and from the file
            for where in (['--url', 'http://127.0.0.1:%d' % d.http_port], ['--db', d.db]):
                r = subprocess.run([GRADWATCH, 'export', 'ddp', '--rank', '2'] + where,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = [json.loads(x) for x in r.stdout.decode().splitlines()]
                self.assertEqual([(x['rank'], x['step']) for x in got], [(2, s) for s in range(1, 351)])
            st, page = d.get('/v1/runs/ddp/ranks?rank=2&after=%d&limit=2' % 0)
            self.assertEqual([x['step'] for x in page['lines']], [1, 2])
            st, page = d.get('/v1/runs/ddp/ranks?rank=2&after=%d&limit=2' % page['lines'][1]['id'])
            self.assertEqual([x['step'] for x in page['lines']], [3, 4])
            r = subprocess.run([GRADWATCH, 'export', 'ddp', '--rank', '2', '--format', 'csv'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn('--rank writes the lines as they came', r.stderr.decode())
            st, page = d.get('/v1/runs/ddp/ranks')
            self.assertEqual(st, 200)
            self.assertEqual(len(page['ranks']), 3)
            st, page = d.get('/v1/runs/ddp/ranks?rank=x')
            self.assertEqual(st, 400)
            self.assertIn('rank', page['error'])
            st, page = d.get('/v1/runs/nope/ranks?rank=1')
            self.assertEqual(st, 404)
            # rank 0 restarting from its checkpoint is a restart; the
            # other ranks' lines of it are not
            rc, err = self.send(d, ddp_lines(steps=range(301, 311), ts0=1e6))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.segments(d), 2)
            # and the other ranks' lines of it are stored apart too
            d.wait_committed("SELECT count(*) FROM rank_lines", 3 * 399 - 49 + 30)
            # deleting the run deletes them with it
            c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=30)
            c.request('DELETE', '/v1/runs/ddp')
            self.assertEqual(c.getresponse().status, 200)
            c.close()
            self.assertEqual(d.sql("SELECT count(*) FROM rank_lines")[0][0], 0)
            self.assertEqual(d.sql("SELECT count(*) FROM ranks")[0][0], 0)

    @staticmethod
    def said(d):
        """How often the daemon's whole log says the run looks interleaved."""
        with open(d.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace').count('look like several processes')

    def apart(self, d, run='ddp'):
        return d.sql("SELECT count(*) FROM rank_lines x JOIN runs r ON r.id = x.run_id "
                     "WHERE r.name = ? AND x.rank = -1", (run,))[0][0]

    def test_without_a_rank_field_interleaving_is_recognised_once(self):
        d = Daemon().start()
        try:
            rc, err = self.send(d, ddp_lines(with_rank=False))
            self.assertEqual(rc, 0, err)
            self.assertIn('%d line(s) accepted' % (4 * 399), err)
            # what was acknowledged is stored: the repeats apart, as rank -1
            records, apart = self.records(d), self.apart(d)
            self.assertEqual(records + apart, 4 * 399)
            self.assertLessEqual(records, 399 + 4)
            self.assertLessEqual(self.segments(d), 4)        # not 1,198
            st, run = d.get('/v1/runs/ddp')
            self.assertTrue(run['writers']['interleaved'])
            self.assertEqual(run['writers']['step'], 2)
            self.assertEqual([(k['rank'], k['lines']) for k in run['ranks']], [(-1, apart)])
            # `gradwatch runs RUN` says it too, from the daemon and from the file
            for where in (['--url', 'http://127.0.0.1:%d' % d.http_port], ['--db', d.db]):
                out = subprocess.run([GRADWATCH, 'runs'] + where + ['ddp'], stdout=subprocess.PIPE,
                                     timeout=60).stdout.decode()
                self.assertIn('several processes log this run (recognised at step 2)', out)
                self.assertIn('interleaved repeats (rank -1): %d lines kept apart, last step 399'
                              % apart, out)
            st, page = d.get('/v1/runs/ddp/ranks?rank=-1&limit=3')
            self.assertEqual(st, 200, page)
            self.assertEqual([x['step'] for x in page['lines']], [399, 399, 399])
            self.assertEqual(self.said(d), 1)
            # the job restarts from its checkpoint at 300: one segment more
            before = self.segments(d)
            rc, err = self.send(d, ddp_lines(with_rank=False, steps=range(301, 321)))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.segments(d), before + 1)
            self.assertEqual(self.said(d), 1)
            # after a daemon restart the run is still known as interleaved:
            # its next steps open no segment and are not said again
            d.stop()
            d.start()
            rc, err = self.send(d, ddp_lines(with_rank=False, steps=range(321, 341)))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.segments(d), before + 1)
            self.assertEqual(self.said(d), 1)
            self.assertEqual(self.records(d) + self.apart(d), 4 * 439)
        finally:
            d.close()

    def test_a_bad_rank_is_rejected_precisely(self):
        with Daemon() as d:
            data = b'{"run":"ddp","step":1,"rank":-1,"loss":1}\n{"run":"ddp","step":2,"rank":"3","loss":1}\n'
            rc, err = self.send(d, data)
            self.assertEqual(rc, 1, err)
            self.assertIn(':1: bad_rank', err)
            self.assertIn(':2: bad_rank', err)
            self.assertIn('column 30', err)


LABELS = {'rank': '[rank%d]: ', 'default': '[default%d]:', 'srun': '%2d: '}
LOG_STEPS, NAN_AT = 300, 250


def all_ranks_log(label, ranks=4):
    """build-nanoGPT stdout as every rank prints it, each line labelled;
    the loss is NaN from NAN_AT on (every rank)."""
    out = ['[rank0]: using device: cpu\n' if label == 'rank' else 'using device: cpu\n']
    for s in range(1, LOG_STEPS + 1):
        for k in range(ranks):
            loss = float('nan') if s >= NAN_AT else 6.0 * math.exp(-s / 200) + 0.01 * k
            line = ('step %5d | loss: %.6f | lr 6.0000e-04 | norm: %.4f | dt: 400.00ms | '
                    'tok/sec: 1306830.22\n' % (s, loss, 0.5 + 0.01 * k))
            out.append(((LABELS[label] % k) if label else '') + line)
    return ''.join(out).encode()


def replay_opens(path):
    r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl', '--run', 'job', path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return sorted((a['run'], a['detector'], a['step'], a['segment'])
                  for a in map(json.loads, r.stdout.decode().splitlines()) if a['kind'] == 'open')


class RankLabels(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gwlabels-')
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, 'wb') as f:
            f.write(data)
        return p

    def test_replay_of_an_all_ranks_log(self):
        one = replay_opens(self.write('one.log', all_ranks_log(None, ranks=1)))
        self.assertIn(('job', 'nonfinite', NAN_AT, 1), one)
        for label in LABELS:
            got = replay_opens(self.write('%s.log' % label, all_ranks_log(label)))
            self.assertEqual(got, one, label)

    def test_convert_of_an_all_ranks_log(self):
        # one rank's timeline, said on stderr; a label is not written as
        # "rank" (Megatron's points are rank 31's, and "rank" 31 would not
        # be the run's)
        path = self.write('srun.log', all_ranks_log('srun'))
        r = subprocess.run([GRADWATCH, 'convert', '--run', 'job', path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = [json.loads(x.replace('NaN', 'null')) for x in r.stdout.decode().splitlines()]
        self.assertEqual(out[-1], {'run': 'job', 'step': LOG_STEPS, 'event': 'run_finished',
                                   'reason': 'end_of_log'})   # the log ends: so does the run
        out = out[:-1]
        self.assertEqual([x['step'] for x in out], list(range(1, LOG_STEPS + 1)))
        self.assertFalse(any('rank' in x for x in out))
        self.assertIn('%d point(s) of other ranks left out' % (3 * LOG_STEPS), r.stderr.decode())

    def test_follow_of_an_all_ranks_log(self):
        for label in ('default', 'srun'):
            d = Daemon()
            log = os.path.join(d.dir, 'train.log')
            open(log, 'wb').close()
            d.extra_args += ['--follow', log, '--run', 'job']
            d.start()
            try:
                data = all_ranks_log(label)
                half = len(data) // 2
                with open(log, 'ab') as f:     # the job is still writing
                    f.write(data[:half])
                    f.flush()
                    f.write(data[half:])
                rows = "SELECT count(*) FROM records x JOIN runs r ON r.id = x.run_id"
                wait_for(lambda: d.sql(rows)[0][0] == LOG_STEPS, 60, 'rank 0\'s records')
                d.wait_committed("SELECT count(*) FROM rank_lines", 3 * LOG_STEPS)
                self.assertEqual(d.sql("SELECT name FROM runs"), [('job',)])
                self.assertEqual(d.sql("SELECT count(*) FROM segments")[0][0], 1)
                run = d.get('/v1/runs/job')[1]
                self.assertEqual([(k['rank'], k['lines']) for k in run['ranks']],
                                 [(1, LOG_STEPS), (2, LOG_STEPS), (3, LOG_STEPS)], label)
                alerts = d.get('/v1/runs/job/alerts')[1]['alerts']
                self.assertEqual([(a['detector'], a['step']) for a in alerts
                                  if a['detector'] == 'nonfinite'], [('nonfinite', NAN_AT)])
            finally:
                d.close()


def live_lines(steps):
    """Steps of run "iw" (four writers, no rank) and "rk" (four ranks with a
    "rank" field), with ts now."""
    out = []
    for s in steps:
        for k in range(4):
            for run, rank in (('iw', None), ('rk', k)):
                rec = {'run': run, 'step': s, 'loss': 2.0 - 1e-4 * s + 0.01 * k, 'grad_norm': 0.5,
                       'throughput': 1000.0, 'ts': time.time()}
                if rank is not None:
                    rec['rank'] = rank
                out.append(json.dumps(rec) + '\n')
    return ''.join(out).encode()


def megatron_lines(first, last, zero_first=False):
    """srun --label output where rank 31 prints the iterations (as Megatron's
    last pipeline rank does) and rank 0 a shorter copy of each, after it or
    (zero_first) before it: once rank 31's first line made it the run's,
    rank 0's lines are never the run's, whatever their order."""
    out = []
    for it in range(first, last):
        loss = 12.0 - 0.01 * it
        at = len(out)
        out.append('31:  [2026-08-18 03:14:%02d.592739] iteration %8d/%8d | consumed samples: %12d | '
                   'elapsed time per iteration (ms): 6260.5 | learning rate: 4.000000E-04 | global '
                   'batch size:   288 | lm loss: %.6E | loss scale: 1.0 | grad norm: %.3f | number of '
                   'skipped iterations:   0 | number of nan iterations:   0 |\n'
                   % (it % 60, it, 1000, it * 288, loss, 0.5 + 0.01 * (it % 5)))
        out.append(' 0:  [2026-08-18 03:14:%02d.600000] iteration %8d/%8d | lm loss: %.6E | '
                   'grad norm: 9.000 |\n' % (it % 60, it, 1000, loss + 5))
        if zero_first:
            out[at], out[at + 1] = out[at + 1], out[at]
    return ''.join(out).encode()


class RestartAndEviction(unittest.TestCase):
    STALL = {'stall_min_seconds': 3.0, 'stall_factor': 5, 'stall_min_records': 20}

    @staticmethod
    def segments(d, run):
        return d.sql("SELECT count(*) FROM segments s JOIN runs r ON r.id = s.run_id "
                     "WHERE r.name = ?", (run,))[0][0]

    @staticmethod
    def stored(d):
        return d.sql("SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM rank_lines)")[0][0]

    @staticmethod
    def restart_stalls(d, run):
        return d.sql("SELECT a.step, a.state FROM alerts a JOIN runs u ON u.id = a.run_id "
                     "WHERE u.name = ? AND a.detector = 'stall' AND a.summary LIKE "
                     "'%since gradwatchd restarted%'", (run,))

    def feed(self, d, steps):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(d.sock)
            for step in steps:   # live: a step every 30 ms
                s.sendall(live_lines([step]))
                time.sleep(0.03)

    def restart(self, sig):
        with Daemon(config={'tick_ms': 50, 'runs': [{'match': '*', 'thresholds': self.STALL}]}) as d:
            self.feed(d, range(1, 41))
            wait_for(lambda: self.stored(d) == 8 * 40, 60, 'every line stored')
            before = {run: self.segments(d, run) for run in ('iw', 'rk')}
            self.assertEqual(before['rk'], 1)
            self.assertLessEqual(before['iw'], 3)
            d.stop(sig)
            d.start()
            self.assertIn('2 run(s) were live when the daemon stopped', d.logtext())
            st, health = d.get('/healthz')
            self.assertEqual((st, health['status'], health['reasons']), (200, 'ok', []))
            # both are watched from the start: their silence is a stall
            for run in ('iw', 'rk'):
                wait_for(lambda: self.restart_stalls(d, run) == [(40, 'open')], 60,
                         'the stall of %s across the restart' % run, interval=0.1)
            # and the job goes on as before: no segment, repeats still apart
            self.feed(d, range(41, 61))
            wait_for(lambda: self.stored(d) == 8 * 60, 60, 'every line stored')
            for run in ('iw', 'rk'):
                wait_for(lambda: self.restart_stalls(d, run) == [(40, 'resolved')], 60,
                         'the resolve of %s' % run, interval=0.1)
            self.assertEqual({run: self.segments(d, run) for run in ('iw', 'rk')}, before)
            self.assertEqual(d.sql("SELECT rank, count(*) FROM rank_lines GROUP BY rank "
                                   "HAVING rank >= 0"), [(1, 60), (2, 60), (3, 60)])
            self.assertEqual(d.sql("SELECT count(*) FROM records x JOIN runs r ON r.id = x.run_id "
                                   "WHERE r.name = 'rk'")[0][0], 60)
            with open(d.log_path, 'rb') as f:
                self.assertEqual(f.read().count(b'look like several processes'), 1)
            st, health = d.get('/healthz')
            self.assertEqual((st, health['reasons']), (200, []))

    def test_live_ranks_and_interleaved_writers_across_kill_9(self):
        self.restart(signal.SIGKILL)

    def test_live_ranks_and_interleaved_writers_across_a_clean_stop(self):
        self.restart(signal.SIGTERM)

    def test_rank_31_stays_the_run_through_eviction_restart_and_rotation(self):
        d = Daemon(config={'limits': {'max_runs': 3}})
        log = os.path.join(d.dir, 'train.out')
        with open(log, 'wb') as f:
            f.write(megatron_lines(1, 101))
        d.extra_args += ['--follow', log, '--run', 'meg']
        d.start()

        def meg():
            return d.sql("SELECT count(*), max(step), min(rank), max(rank) FROM records x "
                         "JOIN runs r ON r.id = x.run_id WHERE r.name = 'meg'")[0]
        try:
            wait_for(lambda: meg()[0] == 100, 60, "rank 31's iterations")
            # ten runs more than max_runs: "meg" (old ts, not live) sleeps
            d.send_unix(b''.join(b'{"run":"other%d","step":1,"loss":1}\n' % k for k in range(10)))
            wait_for(lambda: d.sql("SELECT count(*) FROM runs")[0][0] == 11, 60, 'the other runs')
            with open(log, 'ab') as f:
                f.write(megatron_lines(101, 151, zero_first=True))
            wait_for(lambda: meg()[0] == 150, 60, 'the iterations after the eviction')
            self.assertIn('run meg: detector state rebuilt', d.logtext())
            d.kill()
            with open(log, 'ab') as f:
                f.write(megatron_lines(151, 201, zero_first=True))
            d.start()
            wait_for(lambda: meg()[0] == 200, 60, 'the iterations after the restart')
            os.rename(log, log + '.1')
            with open(log, 'wb') as f:
                f.write(megatron_lines(201, 251, zero_first=True))
            wait_for(lambda: meg()[0] == 250, 60, 'the iterations of the rotated log')
            d.wait_committed("SELECT count(*) FROM rank_lines", 250)
            self.assertEqual(meg(), (250, 250, 31, 31))
            self.assertEqual(self.segments(d, 'meg'), 1)
            self.assertEqual(d.sql("SELECT rank, count(*) FROM rank_lines GROUP BY rank"), [(0, 250)])
            self.assertEqual(d.sql("SELECT count(*) FROM alerts"), [(0,)])
        finally:
            d.close()


if __name__ == '__main__':
    unittest.main()
