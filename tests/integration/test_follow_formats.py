"""`gradwatchd --follow` on the logs jobs already write, as they are being
written: a Megatron stdout log and an llm.c stdout log (and the genesis
trace as torchtitan, Composer, OLMo, fairseq, torchtune, a plain CSV,
YOLO, the TF OD API and SB3 print it: logshapes.py), appended by a test
writer in pieces of random size (lines cut anywhere), raise exactly the
alerts `gradwatch replay` raises on the finished file (detector, step,
line, severity, segment), and the stored points equal the file's.  Also
with every line rank-labelled by srun, two ranks interleaved: rank 0's
points are the run's, rank 3's kept apart, every one (fairseq dropped them
as progress-bar redraws before).

The Megatron log is the dev corpus's genesis trace (a resume without the
optimizer state) printed the way Megatron-LM prints iterations, with its
start-up banner and a wall-clock prefix; the llm.c log is a real one
(../shared/realworld/raw/llmc-gpt2-124m-hector-nan.log, NaN from step 1)."""
import datetime
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import logshapes
from gwtest import CORPUS, GRADWATCH, SHARED, Daemon, wait_for

RAW = os.path.join(SHARED, 'realworld', 'raw')


def megatron_text(trace):
    out = ['using world size: 8, data-parallel-size: 8, tensor-model-parallel size: 1\n',
           '------------------------ arguments ------------------------\n',
           '  lr .............................................. 0.00015\n',
           '-------------------- end of arguments ---------------------\n']
    with open(trace) as f:
        for line in f:
            r = json.loads(line)
            if 'event' in r:
                continue
            stamp = datetime.datetime.utcfromtimestamp(r['ts']).strftime('%Y-%m-%d %H:%M:%S.%f')
            out.append(' [%s] iteration %8d/   10000 | consumed samples: %12d | elapsed time per '
                       'iteration (ms): 412.3 | learning rate: %.6E | global batch size:   512 | '
                       'lm loss: %.6E | loss scale: 1.0 | grad norm: %.3f | number of skipped '
                       'iterations:   0 | number of nan iterations:   0 |\n'
                       % (stamp, r['step'], r['step'] * 512, r['lr'], r['loss'], r['grad_norm']))
    return ''.join(out).encode()


def replay_alerts(path, fmt):
    r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl', '--run', 'job', '--input-format',
                        fmt, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return sorted((a['detector'], a['step'], a['line'], a['severity'], a['segment'])
                  for a in map(json.loads, r.stdout.decode().splitlines()) if a['kind'] == 'open')


class FollowFormats(unittest.TestCase):
    @staticmethod
    def position(d):
        rows = d.sql("SELECT value FROM meta WHERE key LIKE 'follow:%'")
        return json.loads(rows[0][0])['offset'] if rows else 0

    def follow_and_compare(self, data, fmt, min_alerts, check=None):
        d = Daemon()
        log = os.path.join(d.dir, 'train.log')
        d.extra_args += ['--follow', log, '--run', 'job']
        with d:
            rnd = random.Random(7)
            i = 0
            with open(log, 'wb') as f:
                while i < len(data):
                    n = rnd.randint(1, 64 * 1024)
                    f.write(data[i:i + n])
                    f.flush()
                    i += n
                    # now and then, let the daemon catch up, so that it reads the
                    # log in the pieces it was written in (lines cut anywhere)
                    if i > 64 * 1024 and rnd.random() < 0.3:
                        last_nl = data.rfind(b'\n', 0, i) + 1
                        wait_for(lambda: self.position(d) >= last_nl, timeout=60,
                                 what='the follower to read up to byte %d' % last_nl)
            # everything read: the stored position is the end of the file
            wait_for(lambda: self.position(d) == len(data), timeout=120,
                     what='the follower to reach the end of the log')
            live = sorted(tuple(r) for r in d.sql(
                "SELECT detector, step, line, severity, seg FROM alerts"))
            stored = d.sql("SELECT count(*) FROM records")[0][0]
            if check:
                check(d)
        tmp = tempfile.mkdtemp(prefix='gw-follow-')
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, 'finished.log')
        with open(path, 'wb') as f:
            f.write(data)
        replayed = replay_alerts(path, fmt)
        self.assertGreaterEqual(len(replayed), min_alerts, replayed)
        self.assertEqual(live, replayed)
        r = subprocess.run([GRADWATCH, 'convert', '--run', 'job', path], stdout=subprocess.PIPE,
                           timeout=300)
        points = sum(1 for l in r.stdout.decode().splitlines() if '"event"' not in l)
        self.assertEqual(stored, points)

    def test_megatron(self):
        data = megatron_text(os.path.join(CORPUS, 'genesis.jsonl'))
        self.follow_and_compare(data, 'megatron', 2)

    def test_llmc(self):
        with open(os.path.join(RAW, 'llmc-gpt2-124m-hector-nan.log'), 'rb') as f:
            data = f.read()
        self.follow_and_compare(data, 'llmc', 1)

    def test_other_frameworks_logs(self):
        # The Composer and OLMo blocks end at the next line that is not
        # indented: the job's next message ("Training finished" here).
        trace = logshapes.points(os.path.join(CORPUS, 'genesis.jsonl'))
        for shape in ('torchtitan', 'composer', 'olmo', 'fairseq_json', 'torchtune', 'csv'):
            fmt, printer = logshapes.SHAPES[shape]
            with self.subTest(shape=shape):
                data = printer(trace)
                if fmt == 'composer':
                    data += b'Training finished.\n'
                self.follow_and_compare(data, fmt, 1)

    def test_vision_and_rl_logs(self):
        # YOLO's table, the TF OD API's dicts and SB3's tables carry the
        # loss (and LR) only: the genesis trace with a NaN loss at step
        # 8,000, which each must raise live as replay does
        trace = [dict(r, loss=float('nan')) if r['step'] == 8000 else r
                 for r in logshapes.points(os.path.join(CORPUS, 'genesis.jsonl'))]
        for shape in ('yolo', 'tfod', 'sb3'):
            fmt, printer = logshapes.SHAPES[shape]
            with self.subTest(shape=shape):
                self.follow_and_compare(printer(trace), fmt, 1)

    def test_ranked_stdout_of_other_frameworks(self):
        # every process prints (srun --label: " 0: ", " 3: "), the lines of
        # two ranks interleaved: rank 0's points are the run's (what
        # replay raises), rank 3's, the same steps with their own values,
        # are kept apart, each of them
        trace = logshapes.points(os.path.join(CORPUS, 'genesis.jsonl'))
        other = [dict(r, loss=r['loss'] * 1.01) for r in trace]
        for shape in ('fairseq_simple', 'torchtitan', 'torchtune'):
            fmt, printer = logshapes.SHAPES[shape]
            with self.subTest(shape=shape):
                mine = printer(trace).splitlines(keepends=True)
                theirs = printer(other).splitlines(keepends=True)
                data = b''.join(b' 0: ' + a + b' 3: ' + b for a, b in zip(mine, theirs))

                def check(d):
                    self.assertEqual(d.sql("SELECT rank, count(*) FROM records GROUP BY rank"),
                                     [(0, len(trace))])
                    self.assertEqual(d.sql("SELECT rank, lines FROM ranks"), [(3, len(trace))])
                self.follow_and_compare(data, fmt, 1, check)

    def test_logs_followed_without_run_are_runs_of_their_own(self):
        # two jobs' logs, no --run: each is its own run, named as replay
        # names it (the file name), and raises what replay raises on it
        logs = {'job-a.log': os.path.join(RAW, 'llmc-gpt2-124m-hector-killed.log'),
                'job-b.out': os.path.join(SHARED, 'realworld', 'raw-more',
                                          'megatron-ds-qwen7b-500.log')}
        d = Daemon()
        sizes = {}
        for name, src in logs.items():
            shutil.copy(src, os.path.join(d.dir, name))
            d.extra_args += ['--follow', os.path.join(d.dir, name)]
            sizes[name] = os.path.getsize(src)
        with d:
            def offsets():
                return sorted(json.loads(v)['offset'] for (v,) in
                              d.sql("SELECT value FROM meta WHERE key LIKE 'follow:%'"))
            wait_for(lambda: offsets() == sorted(sizes.values()), timeout=120,
                     what='the followers to reach the ends of both logs')
            runs = {r: n for r, n in d.sql(
                "SELECT runs.name, count(*) FROM records JOIN runs ON runs.id = records.run_id"
                " GROUP BY runs.name")}
            live = sorted(tuple(r) for r in d.sql(
                "SELECT runs.name, detector, step, severity FROM alerts"
                " JOIN runs ON runs.id = alerts.run_id"))
        want_runs, want_alerts = {}, []
        tmp = tempfile.mkdtemp(prefix='gw-follow-')
        self.addCleanup(shutil.rmtree, tmp)
        for name in logs:
            path = os.path.join(tmp, name)
            shutil.copy(logs[name], path)
            r = subprocess.run([GRADWATCH, 'convert', path], stdout=subprocess.PIPE, timeout=300)
            for line in r.stdout.decode().splitlines():
                o = json.loads(line)
                if 'event' not in o:
                    want_runs[o['run']] = want_runs.get(o['run'], 0) + 1
            r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl', path],
                               stdout=subprocess.PIPE, timeout=300)
            want_alerts += [(a['run'], a['detector'], a['step'], a['severity'])
                            for a in map(json.loads, r.stdout.decode().splitlines())
                            if a['kind'] == 'open']
        self.assertEqual(set(want_runs), {'job-a', 'job-b'})
        self.assertEqual(runs, want_runs)
        self.assertEqual(live, sorted(want_alerts))

    def test_a_log_every_run_names_alike_is_named_after_its_folder(self):
        # llm.c writes main.log in the run's log folder: followed before the
        # job created it, it is run "gpt2-run-7", as replay names it after
        d = Daemon()
        folder = os.path.join(d.dir, 'gpt2-run-7')
        log = os.path.join(folder, 'main.log')
        d.extra_args += ['--follow', log]
        with d:
            os.mkdir(folder)
            shutil.copy(os.path.join(RAW, 'llmc-gpt2-124m-siddanth.main.log'), log)
            wait_for(lambda: d.sql("SELECT count(*) FROM records")[0][0] == 19552, 120,
                     'the follower to read main.log')
            self.assertEqual([r[0] for r in d.sql("SELECT name FROM runs")], ['gpt2-run-7'])
            r = subprocess.run([GRADWATCH, 'convert', log], stdout=subprocess.PIPE, timeout=300)
            self.assertEqual(json.loads(r.stdout.decode().splitlines()[0])['run'], 'gpt2-run-7')

    def test_a_file_rewritten_whole_is_said_not_to_be_followable(self):
        # trainer_state.json and a Lightning metrics.csv are rewritten whole
        # while a job runs: following one says so (once each), reads nothing
        d = Daemon()
        for name, src in (('trainer_state.json', 'hf-nsllm-2178.trainer_state.json'),
                          ('metrics.csv', 'lightning-slm-wikitext-v0.metrics.csv')):
            shutil.copy(os.path.join(RAW, src), os.path.join(d.dir, name))
            d.extra_args += ['--follow', os.path.join(d.dir, name)]
        with d:
            for fmt in ('hf_trainer_state', 'lightning_csv'):
                wait_for(lambda: 'not a log that can be followed: %s' % fmt in d.logtext(), 60,
                         'the daemon to say %s cannot be followed' % fmt)
            self.assertEqual(d.sql("SELECT count(*) FROM records")[0][0], 0)
            self.assertEqual(d.logtext().count('replay the file instead'), 2)

    def test_a_log_not_recognised_yet_is_said_so_then_read_once_it_is(self):
        # only a banner so far (or the wrong file): nothing is ingested, and
        # the log says so once instead of staying silent; once iteration
        # lines follow, it is recognised and read
        d = Daemon()
        log = os.path.join(d.dir, 'train.log')
        text = megatron_text(os.path.join(CORPUS, 'd01.jsonl'))
        banner_end = text.index(b' [')
        with open(log, 'wb') as f:
            f.write(text[:banner_end])
        d.extra_args += ['--follow', log, '--run', 'job']
        with d:
            wait_for(lambda: 'not recognised as a log format yet' in d.logtext(), 60,
                     'the daemon to say it does not know the format yet')
            self.assertIn('--input-format NAME', d.logtext())
            with open(log, 'ab') as f:
                f.write(text[banner_end:])
            wait_for(lambda: 'recognised as megatron; reading it' in d.logtext(), 60,
                     'the daemon to recognise the log')
            n = sum(1 for line in text.splitlines() if line.startswith(b' ['))
            wait_for(lambda: d.sql("SELECT count(*) FROM records")[0][0] == n, 60, 'every point')
            self.assertEqual(d.logtext().count('not recognised as a log format yet'), 1)

    def test_several_runs_in_one_log_are_named_alike_across_daemon_restarts(self):
        # a Megatron log of four from-scratch runs (the job started again at
        # iteration 1, no checkpoint): replay names them job, job#2, job#3,
        # job#4, one segment each.  Followed by a daemon that is stopped and
        # started again in the middle of the second run, again just before
        # the third starts, and that sees the file truncated and rewritten
        # (copytruncate) before the fourth, the same four runs with the same
        # records and segments: before, the runs after a restart were read
        # as job again (a rewind segment of the first run, its points mixed
        # into it)
        src = os.path.join(SHARED, 'realworld', 'raw-more', 'megatron-ds-qwen-4runs-restart.log')
        with open(src, 'rb') as f:
            data = f.read()
        starts = [m for m in range(len(data)) if data.startswith(b' iteration        1/', m)]
        starts = [data.rfind(b'\n', 0, m) + 1 for m in starts]
        self.assertEqual(len(starts), 4)
        mid2 = data.rfind(b'\n', 0, starts[1] + (starts[2] - starts[1]) // 2) + 1
        cuts = [mid2, starts[2], starts[3], len(data)]
        d = Daemon()
        log = os.path.join(d.dir, 'train.log')
        d.extra_args += ['--follow', log, '--run', 'job']

        def stored():
            return d.sql("SELECT count(*) FROM records")[0][0]

        done = 0
        expected = 0
        tmp = tempfile.mkdtemp(prefix='gw-follow-')
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, 'finished.log')
        with open(path, 'wb') as f:
            f.write(data)
        r = subprocess.run([GRADWATCH, 'convert', '--run', 'job', path], stdout=subprocess.PIPE,
                           timeout=300)
        points = [json.loads(l) for l in r.stdout.decode().splitlines()]
        want = {}
        for p in points:
            if 'event' not in p:
                want[p['run']] = want.get(p['run'], 0) + 1
        self.assertEqual(sorted(want), ['job', 'job#2', 'job#3', 'job#4'])
        def said(what):
            with open(d.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace').count(what)

        try:
            for i, cut in enumerate(cuts):
                d.start()
                if i > 0:
                    # every start after the first waits for the follower to
                    # open the file at its stored position before it writes
                    # or stops: /healthz answers before the open and fstat
                    # are back from the thread pool.  A segment with no
                    # iteration line in it (the second cut can fall after
                    # the second run's last one) is otherwise stored at
                    # once, and the daemon was stopped before its follower
                    # said anything, so the count below never reached 3.
                    # Before the copytruncate this also matters: a
                    # truncation before the open is one "while gradwatchd
                    # was down", said otherwise.  (A busy machine once took
                    # longer than 60 s: the deadline is only for a failure,
                    # which shows the log.)
                    try:
                        wait_for(lambda: said('continuing after line') >= i, 240,
                                 'the follower to open the file at its stored position')
                    except AssertionError:
                        with open(d.log_path, 'rb') as f:
                            tail = f.read().decode('utf-8', 'replace')[-4000:]
                        raise AssertionError('the follower never said it continued at its '
                                             'stored position; the daemon log ends:\n' + tail)
                if i == 3:
                    # copytruncate while the daemon runs
                    with open(log, 'r+b') as f:
                        f.truncate(0)
                    wait_for(lambda: said('truncated (') == 1, 60,
                             'the follower to see the truncation')
                with open(log, 'ab') as f:
                    f.write(data[done:cut])
                done = cut
                expected = sum(1 for l in data[:cut].split(b'\n') if b' iteration ' in l
                               and b'/      50 |' in l)
                wait_for(lambda: stored() == expected, 120,
                         'the follower to store %d points' % expected)
                if i < 3:
                    d.stop()
            runs = {n: c for n, c in d.sql(
                "SELECT runs.name, count(*) FROM records JOIN runs ON runs.id = records.run_id"
                " GROUP BY runs.name")}
            segs = {n: c for n, c in d.sql(
                "SELECT runs.name, count(*) FROM segments JOIN runs ON runs.id = segments.run_id"
                " GROUP BY runs.name")}
        finally:
            d.close()
        self.assertEqual(runs, want)
        self.assertEqual(segs, {n: 1 for n in want})


if __name__ == '__main__':
    unittest.main()
