"""The stall detector against the real daemon: a live run that goes silent
raises one alert, which resolves when lines come back (saying for how long
it was silent) and is re-posted to Alertmanager only until then; a run
that ended -- a run_finished line, the Python client's close(), its
max_steps reached, the plain PyTorch loop -- raises none, nor does
`gradwatch send` of an old log; a throughput collapse (also in replay).
Across a daemon restart (a clean stop or kill -9) a run that was live is
watched from the daemon's start, and the alert gives the downtime; a run
that finished or an old backlog still raises none.

The daemon ticks every 50 ms and stalls after max(1 s, 5 x the interval)
(a per-run override).  Tests that expect silence to stay quiet run a
control run beside it that stopped logging later and has no reason not to
alert: once the control's alert is in, the run under test was silent long
enough, and its absence means something -- no fixed sleeps, only
generous deadlines.
"""
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from gwtest import CONTRIB_PYTHON, GRADWATCH, SOURCE_ROOT, Daemon, replay, torch_python, wait_for
from receiver import Receiver

STALL = {'stall_min_seconds': 1.0, 'stall_factor': 5, 'stall_min_records': 20}
CONFIG = {'tick_ms': 50, 'runs': [{'match': 'stall-*', 'thresholds': STALL}]}


def line(run, step, thr=1000.0, ts='now', **extra):
    """A metric line; ts 'now' (the wall clock), a number, or None (none)."""
    rec = {'run': run, 'step': step, 'loss': 2.0 - 1e-4 * step,
           'grad_norm': 0.5 + 0.01 * (step % 3), 'throughput': thr}
    if ts is not None:
        rec['ts'] = time.time() if ts == 'now' else ts
    rec.update(extra)
    return (json.dumps(rec) + '\n').encode()


def feed(s, run, steps, cadence=0.02, **extra):
    for step in steps:
        s.sendall(line(run, step, **extra))
        time.sleep(cadence)     # the run's cadence: the thing under test


def connect(d):
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    return s


def stalls(d, run):
    """The run's silence alerts: (step, state, summary)."""
    return d.sql("SELECT a.step, a.state, a.summary FROM alerts a JOIN runs u ON u.id = a.run_id "
                 "WHERE u.name = ? AND a.detector = 'stall' AND a.summary LIKE '%logged nothing%' "
                 "ORDER BY a.created", (run,))


def after_control(test, d, control_sock, control, runs):
    """Silence a control run (it stops now, after the runs under test) and
    wait for its stall alert; then none of `runs` may have one."""
    feed(control_sock, control, range(1, 31))
    wait_for(lambda: stalls(d, control), 60, 'the control run %s to stall' % control, interval=0.1)
    for run in runs:
        test.assertEqual(stalls(d, run), [], '%s stalled:\n%s' % (run, d.logtext()))


class Silence(unittest.TestCase):
    def test_alert_resolves_with_its_length_and_alertmanager_stops_repeating(self):
        am = Receiver()
        cfg = dict(CONFIG, sinks=[{'type': 'alertmanager', 'name': 'am', 'url': am.url,
                                   'repeat_interval': '1s'}])
        try:
            with Daemon(config=cfg) as d, connect(d) as s:
                feed(s, 'stall-quiet', range(1, 31))
                feed(s, 'stall-other', range(1, 31))   # stays silent: its resends go on
                [(step, state, summary)] = wait_for(lambda: stalls(d, 'stall-quiet'), 60,
                                                    'the stall alert', interval=0.1)
                self.assertEqual((step, state), (30, 'open'))

                def posts(run):
                    return [(r['t'], a) for r in am.requests for a in (r['json'] or [])
                            if a['labels']['run'] == run]
                # Alertmanager's resend convention while it is open: endsAt ahead
                wait_for(lambda: len(posts('stall-quiet')) >= 2, 60, 'a resend', interval=0.1)
                t, first = posts('stall-quiet')[0]
                self.assertEqual(first['labels']['alertname'], 'GradwatchStall')
                self.assertGreater(first['endsAt'], first['startsAt'])
                # the run logs again
                s.sendall(line('stall-quiet', 31))
                wait_for(lambda: stalls(d, 'stall-quiet')[0][1] == 'resolved', 60,
                         'the stall alert to resolve', interval=0.1)
                resolved = wait_for(lambda: [(t, a) for t, a in posts('stall-quiet')
                                             if 'logged again' in a['annotations']['summary']],
                                    60, 'the resolve at Alertmanager', interval=0.1)
                t_res, res = resolved[0]
                self.assertRegex(res['annotations']['summary'],
                                 r'^the run logged again at step 31 after \d+ s of silence '
                                 r'\(last step before it 30\)$')
                self.assertLessEqual(res['endsAt'], time.strftime('%Y-%m-%dT%H:%M:%S.999Z',
                                                                  time.gmtime(time.time() + 1)))
                self.assertEqual(res['labels'], first['labels'])
                # no repeat of the resolved alert while the other one's go on
                # (the run went silent again after line 31: that is another
                # incident, with another alert_id)
                n_other = len(posts('stall-other'))
                wait_for(lambda: len(posts('stall-other')) >= n_other + 3, 60,
                         'three more resends of the other alert', interval=0.1)
                same = first['labels']['alert_id']
                self.assertEqual([a['endsAt'] for t, a in posts('stall-quiet')
                                  if t > t_res and a['labels']['alert_id'] == same], [])
        finally:
            am.close()

    def test_a_steady_run_does_not_alert(self):
        with Daemon(config=CONFIG) as d, connect(d) as s:
            feed(s, 'stall-steady', range(1, 80))
            self.assertEqual(d.sql("SELECT count(*) FROM alerts")[0][0], 0)

    def test_an_idle_run_keeps_its_state_until_its_silence_is_a_stall(self):
        # a run logging every 30 s stalls after 15 minutes, later than the 10 after which
        # an idle run gives up its detector state (limits.run_evict_idle_s); here 3 s
        # and 1 s.  Its state, and the watch on its silence, must stay until the stall.
        cfg = dict(CONFIG, limits={'run_evict_idle_s': 1},
                   runs=[{'match': 'stall-*', 'thresholds': dict(STALL, stall_min_seconds=3.0)}])
        with Daemon(config=cfg) as d, connect(d) as s:
            feed(s, 'stall-slow', range(1, 31))
            [(step, state, _)] = wait_for(lambda: stalls(d, 'stall-slow'), 60,
                                          'the stall alert of a run idle past run_evict_idle_s',
                                          interval=0.1)
            self.assertEqual((step, state), (30, 'open'))
            # a run that cannot stall (it said it finished) still gives its state up
            feed(s, 'stall-ended', range(1, 31))
            s.sendall(b'{"run": "stall-ended", "step": 30, "event": "run_finished"}\n')

            def dormant():
                m = d.get('/metrics')[1]
                return 'gradwatch_runs_dormant 1' in m.splitlines() and m
            wait_for(dormant, 60, 'the finished run made dormant', interval=0.1)
            self.assertEqual(stalls(d, 'stall-ended'), [])

def states(d):
    return {r['run']: (r['state'], r['ended_reason'])
            for r in d.get('/v1/runs')[1]['runs']}


class States(unittest.TestCase):
    def test_the_runs_list_tells_live_stalled_ended_and_idle_apart(self):
        with Daemon(config=CONFIG) as d, connect(d) as s:
            feed(s, 'stall-done', range(1, 31))
            s.sendall(b'{"run":"stall-done","step":30,"event":"run_finished","reason":"completed"}\n')
            feed(s, 'stall-quiet', range(1, 31))
            wait_for(lambda: stalls(d, 'stall-quiet'), 60, 'the stall alert', interval=0.1)
            feed(s, 'other-live', range(1, 4))
            got = wait_for(lambda: states(d).get('stall-done', (None,))[0] == 'ended' and states(d),
                           60, 'the finished run to be ended', interval=0.1)
            self.assertEqual(got['stall-done'], ('ended', 'run_finished'))
            self.assertEqual(got['stall-quiet'], ('stalled', None))
            self.assertEqual(got['other-live'], ('live', None))
            d.stop()
            # a run whose last line is older than 2 minutes, no stall open: idle
            con = sqlite3.connect(d.db)
            con.execute("UPDATE runs SET last_seen = last_seen - 600 WHERE name = 'other-live'")
            con.commit()
            con.close()
            r = subprocess.run([GRADWATCH, 'runs', '--db', d.db], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = {l.split()[0]: l.split()[-1] for l in r.stdout.decode().splitlines()[1:]}
            self.assertEqual(rows, {'stall-done': 'ended', 'stall-quiet': 'stalled',
                                    'other-live': 'idle'})


class Endings(unittest.TestCase):
    def test_run_finished_line(self):
        with Daemon(config=CONFIG) as d, connect(d) as s, connect(d) as c:
            feed(s, 'stall-done', range(1, 31))
            s.sendall(b'{"run":"stall-done","step":30,"event":"run_finished","reason":"completed"}\n')
            after_control(self, d, c, 'stall-control', ['stall-done'])

    def test_run_finished_resolves_an_open_alert(self):
        with Daemon(config=CONFIG) as d, connect(d) as s:
            feed(s, 'stall-late', range(1, 31))
            wait_for(lambda: stalls(d, 'stall-late'), 60, 'the stall alert', interval=0.1)
            s.sendall(b'{"run":"stall-late","step":30,"event":"run_finished","reason":"killed"}\n')
            wait_for(lambda: stalls(d, 'stall-late')[0][1] == 'resolved', 60, 'the resolve',
                     interval=0.1)

    def test_max_steps_reached(self):
        with Daemon(config=CONFIG) as d, connect(d) as s, connect(d) as c:
            feed(s, 'stall-max', range(1, 31), max_steps=30)
            feed(s, 'stall-short', range(1, 31), total_steps=1000)   # expected to go on
            after_control(self, d, c, 'stall-control', ['stall-max'])
            wait_for(lambda: stalls(d, 'stall-short'), 60, 'the run short of its length to stall')

    def test_python_client_close(self):
        sys.path.insert(0, CONTRIB_PYTHON)
        try:
            import gradwatch
        finally:
            sys.path.remove(CONTRIB_PYTHON)
        with Daemon(config=CONFIG) as d:
            done = gradwatch.Client(run='stall-client', address=d.sock, udp='')
            alive = gradwatch.Client(run='stall-client-alive', address=d.sock, udp='')
            for step in range(1, 31):
                done.log(step, loss=2.0, grad_norm=0.5)
                time.sleep(0.02)        # the run's cadence
            done.close()
            for step in range(1, 31):
                alive.log(step, loss=2.0, grad_norm=0.5)
                time.sleep(0.02)
            alive.close(finished=False)     # a job that dies without a word
            wait_for(lambda: stalls(d, 'stall-client-alive'), 60, 'the control to stall', interval=0.1)
            self.assertEqual(stalls(d, 'stall-client'), [])

    def test_send_of_an_old_log(self):
        with Daemon(config=CONFIG) as d, connect(d) as c, tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'old.jsonl')
            t0 = time.time() - 2 * 86400
            with open(path, 'wb') as f:
                for step in range(1, 301):
                    f.write(line('stall-old', step, ts=t0 + 2.0 * step))
            r = subprocess.run([GRADWATCH, 'send', '--url', 'http://127.0.0.1:%d' % d.http_port, path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(d.sql("SELECT count(*) FROM records")[0][0], 300)
            after_control(self, d, c, 'stall-control', ['stall-old'])


def alerts_json(d, run):
    return [(state, summary, json.loads(ev)) for state, summary, ev in d.sql(
        "SELECT a.state, a.summary, a.evidence FROM alerts a JOIN runs u ON u.id = a.run_id "
        "WHERE u.name = ? AND a.detector = 'stall' ORDER BY a.created", (run,))]


def records(d):
    return d.sql("SELECT count(*) FROM records")[0][0]


# the runs under test stall 3 s after their last line (or the restart), so
# a clean stop comes inside that window; the control after 1 s
RESTART = dict(CONFIG, runs=[{'match': 'restart-*', 'thresholds': dict(STALL, stall_min_seconds=3.0)},
                             {'match': 'stall-*', 'thresholds': STALL}])


class Restart(unittest.TestCase):
    def restarted_alert(self, d, run):
        def got():
            return [a for a in alerts_json(d, run) if 'since gradwatchd restarted' in a[1]]
        return wait_for(got, 60, 'the stall of %s after the restart' % run, interval=0.1)[0]

    def test_a_live_run_stalls_after_a_clean_restart_a_finished_one_or_a_backlog_does_not(self):
        with Daemon(config=RESTART) as d:
            with connect(d) as s:
                feed(s, 'restart-done', range(1, 31))
                s.sendall(b'{"run":"restart-done","step":30,"event":"run_finished"}\n')
                t0 = time.time() - 2 * 86400   # an old log sent just before the stop
                s.sendall(b''.join(line('restart-old', i, ts=t0 + 2.0 * i) for i in range(1, 301)))
                feed(s, 'restart-live', range(1, 31))
            wait_for(lambda: records(d) == 360, 60, 'every line committed')
            t_stop = time.time()
            d.stop()
            t_start = time.time()
            d.start()
            state, summary, ev = self.restarted_alert(d, 'restart-live')
            self.assertEqual(state, 'open')
            self.assertRegex(summary, r'^the run has logged nothing for \d+ s since gradwatchd '
                                      r'restarted \(it was down \d+ s; the run\'s last line came '
                                      r'\d+ s before it stopped\)')
            self.assertLessEqual(t_stop - 1, ev['daemon_down_from'])
            self.assertLessEqual(ev['daemon_down_from'], ev['daemon_down_to'])
            self.assertLessEqual(t_start, ev['daemon_down_to'])
            self.assertEqual(ev['last_step'], 30)
            # the job was alive after all: it logs again, and the alert resolves
            with connect(d) as s, connect(d) as c:
                s.sendall(line('restart-live', 31))
                wait_for(lambda: alerts_json(d, 'restart-live')[-1][0] == 'resolved', 60,
                         'the resolve', interval=0.1)
                after_control(self, d, c, 'stall-control', ['restart-done', 'restart-old'])

    def test_after_kill_9_and_a_job_that_dies_just_after_the_restart(self):
        with Daemon(config=RESTART) as d:
            with connect(d) as s:
                feed(s, 'restart-crash', range(1, 31))
                feed(s, 'restart-few', range(1, 31))
            wait_for(lambda: records(d) == 60, 60, 'every line committed')
            last_commit = time.time()
            d.kill()
            d.start()
            with connect(d) as s:
                # three lines after the restart, then the job dies: fewer than
                # stall_min_records since, but its cadence is known from before
                feed(s, 'restart-few', range(31, 34))
            state, summary, ev = self.restarted_alert(d, 'restart-crash')
            self.assertEqual(state, 'open')
            # (stored evidence keeps 12 significant digits: hundredths of a second)
            self.assertLessEqual(ev['daemon_down_from'], last_commit + 1)
            # (a machine slow enough to take over 3 s from the restart to
            # the first of these lines rightly raises and resolves a stall
            # "since gradwatchd restarted" at step 30 first: not this one)
            [(step, state, summary)] = wait_for(
                lambda: [a for a in stalls(d, 'restart-few') if 'restarted' not in a[2]], 60,
                'the stall of the job that died after the restart', interval=0.1)
            self.assertEqual((step, state), (33, 'open'))


class RestartAfterAnEnding(unittest.TestCase):
    """Every way a run ends survives a restart (the ending is kept on the
    run's row, not only in the engine's memory): no stall watch for it
    after the restart, while a live run beside it gets one."""

    def restarted(self, d, run):
        return [a for a in alerts_json(d, run) if 'since gradwatchd restarted' in a[1]]

    def restart_until_stalled(self, d, live):
        """Stop, start, wait for the live run's stall after the restart
        and a control's: the runs under test had as long to stall."""
        d.stop()
        d.start()
        wait_for(lambda: self.restarted(d, live), 60, 'the live run %s to stall after the restart'
                 % live, interval=0.1)
        with connect(d) as c:
            after_control(self, d, c, 'stall-control', [])

    def test_finished_closed_max_steps_and_a_rotated_file(self):
        sys.path.insert(0, CONTRIB_PYTHON)
        try:
            import gradwatch
        finally:
            sys.path.remove(CONTRIB_PYTHON)
        tmp = tempfile.mkdtemp(prefix='gwfollow-')
        self.addCleanup(subprocess.run, ['rm', '-rf', tmp])
        log = os.path.join(tmp, 'train.jsonl')
        open(log, 'wb').close()
        cfg = dict(RESTART, follow=[{'path': log, 'run': 'restart-follow', 'poll_ms': 50}])
        with Daemon(config=cfg) as d:
            with connect(d) as s:
                feed(s, 'restart-done', range(1, 31))
                s.sendall(b'{"run":"restart-done","step":30,"event":"run_finished"}\n')
                # its length declared once, on its first line, 1,100 lines
                # before it is reached: more than a rebuilt run re-reads
                s.sendall(line('restart-max', 1, max_steps=1100) +
                          b''.join(line('restart-max', i) for i in range(2, 1101)))
            client = gradwatch.Client(run='restart-client', address=d.sock, udp='')
            for step in range(1, 31):
                client.log(step, loss=2.0, grad_norm=0.5)
                time.sleep(0.02)
            client.close()
            with open(log, 'ab') as f:
                for step in range(1, 31):
                    f.write(line('restart-follow', step))
                    f.flush()
                    time.sleep(0.02)
            wait_for(lambda: records(d) == 1190, 60, 'every line committed')
            # the followed file is rotated away: the run it fed ended there
            os.rename(log, log + '.1')
            open(log, 'wb').close()
            wait_for(lambda: 'finished the rotated file' in d.logtext(), 60, 'the rotation')
            with connect(d) as s:
                feed(s, 'restart-live', range(1, 31))
            wait_for(lambda: records(d) == 1220, 60, 'every line committed')
            ended = dict(d.sql("SELECT name, ended_reason FROM runs WHERE ended_reason IS NOT NULL"))
            self.assertEqual(ended, {'restart-done': 'run_finished', 'restart-max': 'max_steps',
                                     'restart-client': 'run_finished',
                                     'restart-follow': 'file_rotated'})
            self.restart_until_stalled(d, 'restart-live')
            for run in ('restart-done', 'restart-max', 'restart-client', 'restart-follow'):
                self.assertEqual(alerts_json(d, run), [], '%s stalled:\n%s' % (run, d.logtext()))

    def test_a_followed_log_deleted_or_moved_away_ends_its_run(self):
        """A job's torchtitan log deleted after the job, another moved away
        with nothing in its place: their runs ended ("file_closed", a last
        line without its newline read), no stall before or after a
        restart; a file that takes the path later is read as a new one."""
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import logshapes
        tmp = tempfile.mkdtemp(prefix='gwfollow-')
        self.addCleanup(subprocess.run, ['rm', '-rf', tmp])
        gone, moved = os.path.join(tmp, 'gone.log'), os.path.join(tmp, 'moved.log')
        cfg = dict(RESTART, follow=[{'path': gone, 'run': 'restart-gone', 'poll_ms': 50},
                                    {'path': moved, 'run': 'restart-moved', 'poll_ms': 50}])
        trace = [{'step': s, 'loss': 2.0 - 1e-4 * s, 'grad_norm': 0.5, 'throughput': 1000.0}
                 for s in range(1, 31)]
        text = logshapes.torchtitan(trace).splitlines(keepends=True)
        with Daemon(config=cfg) as d:
            with open(gone, 'wb') as a, open(moved, 'wb') as b:
                for piece in text:
                    for f in (a, b):
                        f.write(piece[:-1] if piece is text[-1] else piece)   # no last newline
                        f.flush()
                    time.sleep(0.02)
            wait_for(lambda: records(d) == 58, 60, 'all but the unterminated lines committed')
            os.remove(gone)
            os.rename(moved, os.path.join(tmp, 'archive.log'))
            wait_for(lambda: records(d) == 60, 60, 'the last lines read once the paths went')
            self.assertEqual(dict(d.sql("SELECT name, ended_reason FROM runs")),
                             {'restart-gone': 'file_closed', 'restart-moved': 'file_closed'})
            with connect(d) as c:
                after_control(self, d, c, 'stall-control', ['restart-gone', 'restart-moved'])
                feed(c, 'restart-live', range(1, 31))
            self.restart_until_stalled(d, 'restart-live')
            for run in ('restart-gone', 'restart-moved'):
                self.assertEqual(alerts_json(d, run), [], '%s stalled:\n%s' % (run, d.logtext()))
            # a new file at the path: read from its start, its run going on
            with open(gone, 'wb') as f:
                f.write(logshapes.torchtitan([dict(trace[0], step=s) for s in range(31, 41)]))
            # a line past the ending: the run went on (storage/read.c's rule)
            wait_for(lambda: d.sql("SELECT ended_seg = last_seg AND last_step <= ended_step "
                                   "FROM runs WHERE name = 'restart-gone'") == [(0,)], 60,
                     'the new file\'s lines in run restart-gone, past its ending')

    def test_a_run_evicted_with_its_stall_open(self):
        cfg = dict(RESTART, limits={'max_runs': 2})
        with Daemon(config=cfg) as d:
            with connect(d) as s:
                feed(s, 'restart-evicted', range(1, 31))
                feed(s, 'restart-kept', range(1, 31))
            wait_for(lambda: stalls(d, 'restart-evicted') and stalls(d, 'restart-kept'), 60,
                     'both runs to stall', interval=0.1)
            # a third run: the least recently active of the two makes room
            # for it, its open stall resolved
            d.send_unix(line('restart-new', 1))
            wait_for(lambda: stalls(d, 'restart-evicted')[0][1] == 'resolved', 60,
                     'the evicted run\'s stall to resolve', interval=0.1)
            self.assertEqual(d.sql("SELECT ended_reason FROM runs WHERE name = 'restart-evicted'"),
                             [('evicted: too many runs for limits.max_runs',)])
            self.assertEqual(stalls(d, 'restart-kept')[0][1], 'open')
            self.restart_until_stalled(d, 'restart-kept')
            self.assertEqual(self.restarted(d, 'restart-evicted'), [], d.logtext())


TORCH = torch_python()


@unittest.skipUnless(TORCH or os.environ.get('CI'), 'no Python with torch (python3-torch)')
class PlainLoop(unittest.TestCase):
    def test_the_plain_pytorch_loop_ends_without_a_stall(self):
        with Daemon(config=CONFIG) as d, connect(d) as c:
            env = dict(os.environ, PYTHONPATH=CONTRIB_PYTHON, GRADWATCH_SOCKET=d.sock, GRADWATCH_UDP='')
            ex = os.path.join(CONTRIB_PYTHON, 'examples', 'plain_loop.py')
            r = subprocess.run([TORCH, ex, '--run', 'stall-plain', '--steps', '120',
                                '--ckpt', os.path.join(d.dir, 'ck.pt')], env=env, cwd=d.dir,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout.decode()[-3000:])
            wait_for(lambda: d.sql("SELECT count(*) FROM events WHERE name = 'run_finished'")[0][0],
                     60, 'the run_finished line')
            after_control(self, d, c, 'stall-control', ['stall-plain'])

    def test_the_e2e_job_crashes_resumes_and_ends(self):
        """tests/e2e/train_tiny.py: a process that dies without a word is a
        stall; the restarted process resolves it and, ending with close(),
        raises no other."""
        with Daemon(config=CONFIG) as d, connect(d) as c:
            env = dict(os.environ, PYTHONPATH=CONTRIB_PYTHON)
            common = [TORCH, os.path.join(SOURCE_ROOT, 'tests', 'e2e', 'train_tiny.py'),
                      '--run', 'stall-e2e', '--address', d.sock, '--http', '127.0.0.1:%d' % d.http_port,
                      '--ckpt', os.path.join(d.dir, 'e2e.pt'), '--text',
                      os.path.join(SOURCE_ROOT, 'README.md')]
            r = subprocess.run(common + ['--steps', '60', '--save-at', '40', '--crash-at', '60'],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            self.assertEqual(r.returncode, 3, r.stdout.decode()[-3000:])
            wait_for(lambda: stalls(d, 'stall-e2e'), 60, 'the crashed job to stall', interval=0.1)
            r = subprocess.run(common + ['--steps', '90', '--resume', 'full'],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout.decode()[-3000:])
            [(step, state, _)] = stalls(d, 'stall-e2e')
            self.assertEqual((step, state), (60, 'resolved'))
            after_control(self, d, c, 'stall-control', [])
            self.assertEqual(len(stalls(d, 'stall-e2e')), 1, d.logtext())


class Throughput(unittest.TestCase):
    def test_collapse_in_replay(self):
        with tempfile.NamedTemporaryFile('wb', suffix='.jsonl') as f:
            for step in range(1, 301):
                f.write(line('slow', step, 1000.0 + (step % 7), ts=None))
            for step in range(301, 341):
                f.write(line('slow', step, 150.0 + (step % 5), ts=None))
            f.flush()
            r = replay('replay', '--format', 'jsonl', f.name)
            alerts = [json.loads(l) for l in r.stdout.splitlines()]
            stall = [a for a in alerts if a['detector'] == 'stall']
            self.assertEqual(len(stall), 1, alerts)
            self.assertEqual(stall[0]['evidence']['rule'], 'throughput')
            # the median of the last 16 crosses 30 % at the 9th slow step
            self.assertEqual(stall[0]['step'], 309)
            self.assertIn('throughput collapsed', stall[0]['summary'])

    def test_a_dip_does_not_alert(self):
        with tempfile.NamedTemporaryFile('wb', suffix='.jsonl') as f:
            for step in range(1, 401):
                thr = 150.0 if step % 50 < 6 else 1000.0   # short dips (eval, checkpoint)
                f.write(line('dips', step, thr, ts=None))
            f.flush()
            r = replay('replay', '--format', 'jsonl', f.name)
            self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == '__main__':
    unittest.main()
