"""The text-log readers through the real `gradwatch` binary, on the real logs
of ../shared/realworld/raw/ and raw-more/ as their projects wrote them.

For every raw/ file that is a text format (all but *.tfevents and *.csv), the
expectation below was derived independently of gradwatch: by reading the file
with throwaway greps / Python's json module and cross-checking with the
normalised ../shared/realworld/*.jsonl and raw/README.md (counts per role,
first and last step, three values).  For raw-more/, the expectation is
raw-more/truth.json (independent parsers, truth.py).  Then: the NaN runs exit
1 with a `nonfinite` alert and every normal run replays without a warning or
critical alert; compression, stdin, --input-format, nothing readable, the
error cap.
"""
import gzip
import json
import math
import os
import shutil
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCH, REALWORLD
from logshapes import out_lines, without_end

RAW = os.path.join(REALWORLD, 'raw')
MORE = os.path.join(REALWORLD, 'raw-more')
NAN = float('nan')

# file: (loss points, grad-norm points, lr points, first step, last step,
#        [(role, step, value), ...])  -- derived by hand, see the docstring
RAW_EXPECT = {
    # iteration 10 is an fp16 skip (lr only), 20 has a loss but no grad norm
    'bs-gpt2-meg-n8-tp4-pp8.out': (19, 18, 20, 10, 200, [
        ('loss', 20, 12.10588), ('loss', 110, 8.005534), ('grad_norm', 200, 4.197)]),
    'bs-gpt2-perf-n16-ds-off.out': (62, 62, 62, 1, 62, [
        ('loss', 1, 12.44238), ('loss', 32, 11.83907), ('lr', 32, 0.0001497)]),
    'hf-kevin-compressor-1000.trainer_state.json': (100, 100, 100, 10, 1000, [
        ('loss', 10, 2.2538), ('lr', 510, 9.685892409218717e-05),
        ('grad_norm', 1000, 1.2177627086639404)]),
    'hf-llama-symptom-lora-bs2.trainer_state.json': (109, 109, 109, 10, 1090, [
        ('loss', 10, 1.6922), ('grad_norm', 10, 0.6133261919021606), ('loss', 550, 0.5207)]),
    # the end-of-run summary (train_loss, train_runtime) is not a point
    'hf-mistral-translator-8660.trainer_state.json': (866, 866, 866, 10, 8660, [
        ('loss', 10, 2.4977), ('lr', 4340, 2.9241930773365456e-05),
        ('grad_norm', 8660, 1.2880568504333496)]),
    'hf-nsllm-2178.trainer_state.json': (435, 435, 435, 5, 2175, [
        ('loss', 5, 2.3475), ('loss', 1090, 1.9839), ('grad_norm', 2175, 0.10451847314834595)]),
    # "lr", not "learning_rate"
    'hf-star-40k.trainer_state.json': (2000, 2000, 2000, 20, 40000, [
        ('loss', 20, 24.79317626953125), ('lr', 20020, 0.0001),
        ('grad_norm', 40000, 3.8961894218180566)]),
    # 216 entries, 186 of them evaluations
    'hf-trainer-state-viz-12030.trainer_state.json': (30, 30, 30, 401, 12030, [
        ('loss', 401, 1.1074), ('loss', 6416, 0.0636), ('grad_norm', 12030, 1.7071932554244995)]),
    'hf-viettel-phobert-1028.trainer_state.json': (1028, 1028, 1028, 1, 1028, [
        ('loss', 1, 1.3022977113723755), ('lr', 1, 0.0), ('grad_norm', 1028, 0.2506597638130188)]),
    # step 19528 is cut by a CUDA error after "norm" ("| lError: Token out of
    # vocabulary"): loss and grad norm, no lr
    'llmc-gpt2-124m-hector-full.log': (19560, 19560, 19559, 1, 19560, [
        ('loss', 1, 11.009662), ('loss', 9781, 3.395627), ('grad_norm', 19560, 0.2241)]),
    'llmc-gpt2-124m-hector-killed.log': (750, 750, 750, 1, 750, [
        ('loss', 1, 11.010252), ('loss', 376, 5.703047), ('grad_norm', 750, 0.5849)]),
    # the last line is cut after the loss by slurmstepd's CANCELLED message
    'llmc-gpt2-124m-hector-nan.log': (902, 901, 901, 1, 902, [
        ('loss', 1, NAN), ('lr', 451, 0.000387), ('loss', 902, NAN)]),
    'llmc-gpt2-124m-siddanth.main.log': (19552, 19552, 19552, 0, 19551, [
        ('loss', 0, 11.0116), ('lr', 9776, 0.000317), ('grad_norm', 19551, 0.23)]),
    # step only in "global_step/max_steps"; 5 eval lines, a summary, a state dump
    'swift-deepclima-qwen3-8b-lora.logging.jsonl': (44, 44, 44, 1, 430, [
        ('loss', 1, 20.53074074), ('loss', 220, 0.20984039), ('grad_norm', 430, 1.43617094)]),
}

# truth.json formats that are text formats (the others are TensorBoard/CSV)
MORE_FORMATS = {'hf_trainer_state', 'megatron_stdout', 'buildnanogpt_stdout',
                'buildnanogpt_logtxt', 'nanogpt_stdout', 'swift_stdout'}

ROLES = ('loss', 'grad_norm', 'lr')



def run(*args, stdin=None, cwd=None):
    return subprocess.run([os.path.abspath(GRADWATCH)] + list(args), stdin=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, cwd=cwd)


def convert(path, *opts):
    r = run('convert', *opts, path)
    if r.returncode != 0:
        raise AssertionError('convert %s: exit %d: %s' % (path, r.returncode, r.stderr.decode()))
    return without_end([json.loads(l) for l in r.stdout.decode().splitlines()])



def series(lines):
    """{role: [(step, value), ...]} in file order, over every run."""
    out = {k: [] for k in ROLES}
    for d in lines:
        if 'event' in d:
            continue
        for k in ROLES:
            if k in d:
                out[k].append((d['step'], d[k]))
    return out


def same(a, b):
    if isinstance(a, str) or isinstance(b, str):  # truth.json writes "NaN"
        a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b


def replay(path, *opts):
    r = run('replay', '--format', 'jsonl', '--min-severity', 'warning', *opts, path)
    alerts = [json.loads(l) for l in out_lines(r)]
    return r, [a for a in alerts if a['kind'] != 'resolve']


INCIDENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'incidents')
# the excerpts no reader takes, and why (each a form of one source only);
# none left
UNREAD = {}


class Paste(unittest.TestCase):
    """`gradwatch replay -` is the paste path: the clipboard piped in, a
    GitHub quote of a fenced log, sniffed from standard input."""

    def test_a_quoted_fenced_paste_on_stdin(self):
        src = os.path.join(INCIDENTS, 'nanogpt-215-fp16-nan-quoted.md')
        with open(src, 'rb') as f:
            self.assertIn(b'> ', f.read())
        with open(src, 'rb') as f:
            r = run('convert', '-', stdin=f)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        got = [json.loads(l) for l in out_lines(r)]
        points = [d for d in got if 'event' not in d]
        self.assertGreaterEqual(len(points), 10)
        self.assertTrue(all(d['run'] == 'stdin' for d in got))
        self.assertTrue(any(math.isnan(d['loss']) for d in points if 'loss' in d))
        # replay reads the same from stdin and judges it (exit 1: an alert)
        with open(src, 'rb') as f:
            r = run('replay', '--format', 'jsonl', '-', stdin=f)
        self.assertIn(r.returncode, (0, 1), r.stderr.decode())
        for a in r.stdout.decode().splitlines():
            self.assertEqual(json.loads(a)['run'], 'stdin')


class Incidents(unittest.TestCase):
    """The real excerpts of tests/data/incidents/ as their sources printed
    them: every one is read (a point or an event at least), but the few
    forms UNREAD names."""

    def test_every_excerpt_is_read(self):
        with open(os.path.join(INCIDENTS, 'incidents.json')) as f:
            entries = json.load(f)
        for e in entries:
            with self.subTest(file=e['file']):
                r = run('convert', os.path.join(INCIDENTS, e['file']))
                lines = [json.loads(l) for l in out_lines(r)]
                records = sum(1 for d in lines if 'event' not in d)
                events = sum(1 for d in lines if 'event' in d)
                if e['file'] in UNREAD:
                    self.assertEqual(r.returncode, 2, 'now read: take it out of UNREAD')
                    continue
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                self.assertTrue(records >= 3 or events >= 1, (records, events))
                # a loss-scale collapse reads as overflow events
                if e['kind'] == 'fp16_overflow':
                    self.assertGreaterEqual(events, 1)


class RawFiles(unittest.TestCase):
    def test_every_text_file_of_raw_is_covered(self):
        text = sorted(f for f in os.listdir(RAW)
                      if not f.endswith(('.tfevents', '.csv', '.md')))
        self.assertEqual(text, sorted(RAW_EXPECT))

    def test_points_per_file(self):
        for name, (nl, ng, nr, first, last, samples) in RAW_EXPECT.items():
            with self.subTest(file=name):
                lines = convert(os.path.join(RAW, name))
                s = series(lines)
                self.assertEqual((len(s['loss']), len(s['grad_norm']), len(s['lr'])), (nl, ng, nr))
                steps = [d['step'] for d in lines if 'event' not in d]
                self.assertEqual((steps[0], steps[-1]), (first, last))
                for role, step, value in samples:
                    got = [v for st, v in s[role] if st == step]
                    self.assertEqual(len(got), 1, (role, step))
                    self.assertTrue(same(got[0], value), (role, step, got[0], value))

    def test_extras_and_events(self):
        # Megatron's loss scale and skipped/nan counts are the fp16 fields
        meg = convert(os.path.join(RAW, 'bs-gpt2-meg-n8-tp4-pp8.out'))
        first = meg[0]
        self.assertEqual(first['step'], 10)
        self.assertEqual(first['loss_scale'], 8388608)
        self.assertEqual(first['skipped'], 10)
        self.assertEqual(first['nan_iterations'], 0)
        self.assertNotIn('number_of_skipped_iterations', first)
        self.assertNotIn('loss', first)
        # llm.c: z-scores (NaN at step 1), step time, MFU, throughput; checkpoints
        full = convert(os.path.join(RAW, 'llmc-gpt2-124m-hector-full.log'))
        p1 = full[0]
        self.assertTrue(math.isnan(p1['loss_z']) and math.isnan(p1['norm_z']))
        self.assertEqual((p1['step_ms'], p1['mfu_pct'], p1['throughput']), (4230.95, 31.9, 123917))
        ev = [(d['step'], d['event']) for d in full if 'event' in d]
        self.assertEqual(ev, [(5000, 'checkpoint_saved'), (10000, 'checkpoint_saved'),
                              (15000, 'checkpoint_saved')])
        # the checkpoint event follows the point of its step
        i = [k for k, d in enumerate(full) if d.get('event')][0]
        self.assertEqual(full[i - 1]['step'], 5000)

    def test_source_lines(self):
        # an alert points at the line of the user's file: the NaN log's first
        # step is line 69; a trainer_state point is the line its entry starts
        r, alerts = replay(os.path.join(RAW, 'llmc-gpt2-124m-hector-nan.log'))
        nf = [a for a in alerts if a['detector'] == 'nonfinite']
        self.assertEqual((nf[0]['step'], nf[0]['line']), (1, 69))
        with open(os.path.join(RAW, 'hf-kevin-compressor-1000.trainer_state.json'), 'rb') as f:
            src = f.read()
        # the entry of step 20 (CRLF file): the line of its '{', 1-based
        text = src.split(b'\n')
        k = [i for i, l in enumerate(text) if b'"loss": 2.1126,' in l][0]
        while text[k].strip() != b'{':
            k -= 1
        with tempfile.TemporaryDirectory() as d:
            # a NaN loss in that entry, the way Python writes it
            p = os.path.join(d, 'trainer_state.json')
            with open(p, 'wb') as f:
                f.write(src.replace(b'"loss": 2.1126,', b'"loss": NaN,'))
            r, alerts = replay(p)
            self.assertEqual(r.returncode, 1, r.stderr)
            nf = [a for a in alerts if a['detector'] == 'nonfinite']
            self.assertEqual(nf[0]['step'], 20)
            self.assertEqual(nf[0]['line'], k + 1)
            self.assertEqual(nf[0]['run'], os.path.basename(d))   # its folder's name

    @unittest.skipUnless(b'tfevents' in run('formats').stdout, 'no TensorBoard reader in this build')
    def test_tfevents_and_trainer_state_agree(self):
        a = series(convert(os.path.join(RAW, 'hf-llama-symptom-lora-bs2.tfevents')))
        b = series(convert(os.path.join(RAW, 'hf-llama-symptom-lora-bs2.trainer_state.json')))
        for role in ('loss', 'grad_norm'):
            self.assertEqual(len(a[role]), 109)
            self.assertEqual([s for s, _ in a[role]], [s for s, _ in b[role]])
            for (_, x), (_, y) in zip(a[role], b[role]):
                # float32 in the event file, float64 in the JSON
                self.assertAlmostEqual(x, y, delta=abs(y) * 1e-6)


class RawMore(unittest.TestCase):
    """raw-more/ against its independent truth.json."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(MORE, 'truth.json')) as f:
            cls.truth = [e for e in json.load(f)['files'] if e['format'] in MORE_FORMATS]

    def test_against_truth(self):
        self.assertEqual(len(self.truth), 10)
        for e in self.truth:
            with self.subTest(file=e['file']):
                s = series(convert(os.path.join(MORE, e['file'])))
                for role, name in e['roles'].items():
                    t = e['series'][name]
                    got = s[role]
                    self.assertEqual(len(got), t['points'], role)
                    self.assertEqual(got[0][0], t['first_step'], role)
                    self.assertEqual(got[-1][0], t['last_step'], role)
                    self.assertEqual(sum(1 for _, v in got if math.isnan(v)), t['nan_count'], role)
                    resets = sum(1 for a, b in zip(got, got[1:]) if b[0] <= a[0])
                    self.assertEqual(resets, t['step_resets'], role)
                    seen = {}
                    keyed = {}
                    for st, v in got:
                        seen[st] = seen.get(st, 0) + 1
                        keyed[(st, seen[st])] = v
                    for key, value in t['samples'].items():
                        st, _, k = key.partition('#')
                        v = keyed[(int(st), int(k) if k else 1)]
                        self.assertTrue(same(v, value), (role, key, v, value))

    def test_restarts_become_runs(self):
        runs = []
        for d in convert(os.path.join(MORE, 'megatron-ds-qwen-4runs-restart.log')):
            if d['run'] not in runs:
                runs.append(d['run'])
        self.assertEqual(runs, ['megatron-ds-qwen-4runs-restart', 'megatron-ds-qwen-4runs-restart#2',
                                'megatron-ds-qwen-4runs-restart#3', 'megatron-ds-qwen-4runs-restart#4'])
        core = convert(os.path.join(MORE, 'megatron-core-llama3-1b-ranked.out'))
        self.assertEqual(sorted({d['run'] for d in core}),
                         ['megatron-core-llama3-1b-ranked', 'megatron-core-llama3-1b-ranked#2'])
        # the "[2026-08-18 03:14:52.592739]" stamp is the ts (UTC)
        self.assertAlmostEqual(core[0]['ts'], 1787022789.974126, places=5)

    def test_negative_zero_and_alternating_entries(self):
        # GRPO: loss exactly 0.0 on 665 steps and -0.0 on 127 (README note 4);
        # full and short entries alternate, reward only on odd steps
        path = os.path.join(MORE, 'hf-llada-grpo-ckpt1000.trainer_state.json')
        lines = convert(path)
        loss = [d['loss'] for d in lines]
        self.assertEqual(sum(1 for v in loss if v == 0.0), 665 + 127)
        # the sign is kept ("-0": Python's json reads it as int 0, so count the text)
        text = run('convert', path).stdout.decode()
        self.assertEqual(text.count('"loss":-0,'), 127)
        self.assertEqual([d['step'] for d in lines if 'reward' in d], list(range(1, 1000, 2)))
        self.assertEqual(lines[0]['lr'], 0.0)

    def test_glued_records_and_string_values(self):
        # steps 3, 77 and 81 are glued to the end of a tqdm bar; values are strings
        lines = convert(os.path.join(MORE, 'swift-stdout-gemma4-ds-zero3.log'))
        by = {d['step']: d for d in lines}
        for st in (3, 77, 81):
            self.assertIn(st, by)
        self.assertEqual((by[3]['loss'], by[3]['grad_norm'], by[3]['lr']), (1.759, 36.51, 4e-06))
        self.assertEqual(by[59]['grad_norm'], 789.6)


class Replay(unittest.TestCase):
    def test_nan_logs_exit_one_with_nonfinite(self):
        for p in (os.path.join(RAW, 'llmc-gpt2-124m-hector-nan.log'),
                  os.path.join(MORE, 'nanogpt-shakespeare-char-nan.train.log')):
            with self.subTest(file=p):
                r, alerts = replay(p)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn('nonfinite', {a['detector'] for a in alerts})
        _, alerts = replay(os.path.join(MORE, 'nanogpt-shakespeare-char-nan.train.log'))
        self.assertEqual([a['step'] for a in alerts if a['detector'] == 'nonfinite'][0], 425)

    def test_normal_runs_do_not_alert(self):
        with open(os.path.join(REALWORLD, 'labels.json')) as f:
            normal = {e['file'][:-len('.jsonl')] for e in json.load(f) if e['fault'] == 'none'}
        files = [f for f in RAW_EXPECT if f.split('.')[0] in normal]
        self.assertEqual(len(files), 9)
        # raw-more/README.md "Must not alert"
        files += [os.path.join('..', 'raw-more', f) for f in (
            'hf-llada-grpo-ckpt1000.trainer_state.json', 'hf-whisper-bashkir-10000.trainer_state.json',
            'hf-gemma3-1b-ckpt2000.trainer_state.json', 'megatron-ds-qwen7b-500.log',
            'buildnanogpt-124m-2.5ep-killed.log.txt')]
        for name in files:
            with self.subTest(file=name):
                r, alerts = replay(os.path.join(RAW, name))
                self.assertEqual(r.returncode, 0, (alerts, r.stderr.decode()[-2000:]))
                self.assertEqual(alerts, [])
                self.assertEqual(r.stderr.decode(), '')  # no line rejected

    def test_compressed_and_stdin_give_the_same_alerts(self):
        src = os.path.join(RAW, 'llmc-gpt2-124m-hector-nan.log')
        _, want = replay(src, '--run', 'x')
        with tempfile.TemporaryDirectory() as d:
            gz = os.path.join(d, 'nan.log.gz')
            with open(src, 'rb') as f, gzip.open(gz, 'wb') as g:
                shutil.copyfileobj(f, g)
            zst = os.path.join(d, 'nan.log.zst')
            if shutil.which('zstd'):
                subprocess.run(['zstd', '-q', src, '-o', zst], check=True)
            else:
                zst = None
            for p in [gz] + ([zst] if zst else []):
                r, got = replay(p, '--run', 'x')
                self.assertEqual(r.returncode, 1)
                self.assertEqual([(a['id'], a['line']) for a in got], [(a['id'], a['line']) for a in want])
            with open(gz, 'rb') as f:
                r = run('replay', '--format', 'jsonl', '--run', 'x', '-', stdin=f)
            got = [json.loads(l) for l in out_lines(r)]
            self.assertEqual([(a['id'], a['line']) for a in got if a['kind'] != 'resolve'],
                             [(a['id'], a['line']) for a in want])

    def test_the_trainer_state_of_two_runs_are_two_runs(self):
        # out-a/checkpoint-8660/trainer_state.json and out-b/checkpoint-2178/:
        # the same file name, two runs (named after their output folders),
        # each replayed as it is alone: no alert of one run about the other
        srcs = {'out-a': 'hf-mistral-translator-8660', 'out-b': 'hf-nsllm-2178'}
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for out, name in sorted(srcs.items()):
                ck = os.path.join(d, out, 'checkpoint-%s' % name.rsplit('-', 1)[1])
                os.makedirs(ck)
                shutil.copy(os.path.join(RAW, name + '.trainer_state.json'),
                            os.path.join(ck, 'trainer_state.json'))
                paths.append(os.path.join(ck, 'trainer_state.json'))
            for order in (paths, paths[::-1]):
                r = run('replay', *order)
                self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode())
                self.assertIn('of 2 run(s)', r.stderr.decode())
            r = run('convert', *paths)
            runs = {}
            for line in out_lines(r):
                o = json.loads(line)
                runs[o['run']] = runs.get(o['run'], 0) + 1
            self.assertEqual(runs, {'out-a': 866, 'out-b': 435})
            # and from inside the checkpoint folder, the same name
            r = run('convert', 'trainer_state.json', cwd=os.path.dirname(paths[0]))
            self.assertEqual(json.loads(out_lines(r)[0])['run'], 'out-a')

    def test_two_jobs_train_log_are_two_runs(self):
        # jobs/a/train.log and jobs/b/train.log (a name every job's log
        # gets): named after their folders, so replayed or reported together
        # they stay two runs; a specific name is kept as it is
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for job, stem, loss in (('sweep-lr3e-4', 'train.log', 2.0),
                                    ('sweep-lr1e-3', 'train.log', 5.0),
                                    ('sweep-lr3e-3', 'stdout.log', 7.0),
                                    ('sweep-lr1e-2', 'slurm-4242.out', 9.0)):
                os.makedirs(os.path.join(d, job))
                p = os.path.join(d, job, stem)
                with open(p, 'w') as f:
                    for step in range(1, 31):
                        f.write('step %d | loss: %.3f | norm: 1.0\n' % (step, loss - 0.01 * step))
                paths.append(p)
            runs = {}
            for line in out_lines(run('convert', *paths)):
                o = json.loads(line)
                runs[o['run']] = runs.get(o['run'], 0) + 1
            self.assertEqual(runs, {'sweep-lr3e-4': 30, 'sweep-lr1e-3': 30, 'sweep-lr3e-3': 30,
                                    'slurm-4242': 30})
            r = run('replay', *paths)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            self.assertIn('of 4 run(s)', r.stderr.decode())
            out = os.path.join(d, 'report.html')
            r = run('report', '-o', out, *paths)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            with open(out) as f:
                page = f.read()
            for name in ('sweep-lr3e-4', 'sweep-lr1e-3', 'sweep-lr3e-3', 'slurm-4242'):
                self.assertIn(name, page)

    def test_checkpoint_copies_are_one_run(self):
        # out/checkpoint-500/trainer_state.json and checkpoint-1000/: the
        # second repeats the first's history; in any order, one run with
        # each point once.  Another run's state under the same name is not
        # a copy: its points are all kept.
        with open(os.path.join(RAW, 'hf-mistral-translator-8660.trainer_state.json')) as f:
            doc = json.load(f)
        hist = doc['log_history']
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for n in (500, 1000):
                os.mkdir(os.path.join(d, 'checkpoint-%d' % n))
                p = os.path.join(d, 'checkpoint-%d' % n, 'trainer_state.json')
                with open(p, 'w') as f:
                    json.dump(dict(doc, log_history=[e for e in hist if e['step'] <= n],
                                   global_step=n), f, indent=2)
                paths.append(p)
            for order in (paths, paths[::-1]):
                r = run('convert', *order)
                lines = [json.loads(l) for l in out_lines(r)]
                self.assertEqual(sorted(d['step'] for d in lines), list(range(10, 1001, 10)))
                # named after the output folder the checkpoints are in
                self.assertEqual({d['run'] for d in lines}, {os.path.basename(d)})
            r = run('replay', *paths)
            self.assertEqual(r.returncode, 0)
            self.assertIn('(100 records, 0 events, 0 rejected, 50 repeated in checkpoint copies)',
                          r.stderr.decode())
            other = os.path.join(d, 'other', 'trainer_state.json')
            os.mkdir(os.path.dirname(other))
            with open(other, 'w') as f:
                json.dump(dict(doc, log_history=[dict(e, loss=e.get('loss', 0) + 1) for e in hist
                                                 if e['step'] <= 500]), f)
            r = run('convert', paths[0], other)
            self.assertEqual(len(out_lines(r)), 100)

    def test_default_run_is_the_file_name(self):
        lines = convert(os.path.join(RAW, 'hf-nsllm-2178.trainer_state.json'))
        self.assertEqual({d['run'] for d in lines}, {'hf-nsllm-2178'})
        lines = convert(os.path.join(RAW, 'hf-nsllm-2178.trainer_state.json'), '--run', 'mine')
        self.assertEqual({d['run'] for d in lines}, {'mine'})
        # a file name that breaks the run-name rule becomes a valid name
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, 'run\x01\xe9.log')
            shutil.copy(os.path.join(RAW, 'llmc-gpt2-124m-hector-killed.log'), p)
            lines = convert(p)
            self.assertEqual({x['run'] for x in lines}, {'run___'})  # \x01 and the 2 bytes of é
        self.assertEqual(run('convert', '--run', 'a\x01b', os.path.join(RAW, 'hf-nsllm-2178.trainer_state.json')).returncode, 2)

    def test_nothing_readable_exits_two_naming_the_formats(self):
        with tempfile.NamedTemporaryFile('w', suffix='.log') as f:
            f.write('Epoch 1 done.\nAll good, nothing to see.\n' * 50)
            f.flush()
            r = run('replay', f.name)
            self.assertEqual(r.returncode, 2)
            err = r.stderr.decode()
            self.assertIn('nothing readable', err)
            for name in ('ndjson', 'hf_trainer_state', 'megatron', 'llmc', 'nanogpt', 'swift'):
                self.assertIn(name, err)
            # with a readable file beside it: that one is replayed, still exit 2
            r = run('replay', os.path.join(RAW, 'llmc-gpt2-124m-hector-killed.log'), f.name)
            self.assertEqual(r.returncode, 2)
            self.assertIn('750 records', r.stderr.decode())

    def test_input_format_overrides_and_is_checked(self):
        p = os.path.join(RAW, 'llmc-gpt2-124m-siddanth.main.log')
        r = run('replay', '--input-format', 'megatron', p)
        self.assertEqual(r.returncode, 2)
        self.assertIn('read as megatron', r.stderr.decode())
        self.assertEqual(run('replay', '--input-format', 'llmc', p).returncode, 0)
        for cmd in ('replay', 'convert', 'report'):
            r = run(cmd, '--input-format', 'nope', p)
            self.assertEqual(r.returncode, 2)
            # the formats there are, so the user need not look them up
            self.assertIn('unknown input format "nope"; known: ndjson hf_trainer_state', r.stderr.decode())

    def test_error_lines_are_capped_with_a_count(self):
        with tempfile.NamedTemporaryFile('w', suffix='.log') as f:
            f.write('iteration 1/ 100 | lm loss: 2.0 | grad norm: 1.0 |\n')
            for i in range(2, 1100):
                f.write('iteration %d/ 100 | lm loss: what | grad norm: 1.0 |\n' % i)
            f.flush()
            r = run('replay', f.name)
            err = r.stderr.decode()
            self.assertEqual(err.count('bad_value: field "lm_loss"'), 20)
            self.assertIn('%s:2: bad_value: field "lm_loss" at column' % f.name, err)
            self.assertIn('… and 1,078 more errors', err)
            self.assertIn('1098 rejected', err)
        # control characters from the input are escaped, not sent to the terminal
        with tempfile.NamedTemporaryFile('wb', suffix='.log') as f:
            f.write(b"{'loss': 'x\x1b[2J', 'global_step/max_steps': '1/2'}\n"
                    b"{'loss': '1.5', 'global_step/max_steps': '2/2'}\n")
            f.flush()
            err = run('replay', f.name).stderr
            self.assertIn(b'bad_value: field "loss": expected a number, got "x\\x1b[2J"', err)
            self.assertNotIn(b'\x1b', err)

    def test_progress_line_on_a_terminal_only(self):
        # stderr a terminal, an input that takes more than two seconds: a
        # progress line, erased before the summary; not when stderr is a file
        import pty
        import time
        src = os.path.join(RAW, 'llmc-gpt2-124m-hector-killed.log')
        with open(src, 'rb') as f:
            data = f.read()
        master, slave = pty.openpty()
        p = subprocess.Popen([GRADWATCH, 'replay', '-'], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        p.stdin.write(data[:50000])
        p.stdin.flush()
        time.sleep(2.5)   # the time under test: an input that takes over 2 s
        p.stdin.write(data[50000:])
        p.stdin.close()
        out = b''
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        self.assertEqual(p.wait(), 0)
        text = out.decode()
        self.assertRegex(text, r'\r\x1b\[Kgradwatch replay: -: [0-9.]+ MB, [0-9,]+ lines')
        self.assertIn('\r\x1b[Kreplayed 824 lines', text)
        r = run('replay', src)
        self.assertNotIn('MB,', r.stderr.decode())

    def test_formats_lists_every_format(self):
        out = run('formats').stdout.decode().splitlines()
        names = {l.split()[0]: l.split()[1] for l in out}
        for n in ('ndjson', 'megatron', 'llmc', 'nanogpt', 'swift'):
            self.assertEqual(names[n], 'stream')
        self.assertEqual(names['hf_trainer_state'], 'whole')


if __name__ == '__main__':
    unittest.main()
