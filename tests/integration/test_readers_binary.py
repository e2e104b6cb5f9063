"""TensorBoard event files and CSV tables (Lightning, W&B) through the real
`gradwatch convert` and `gradwatch replay` binaries.

- Every *.tfevents and *.csv file of ../shared/realworld/raw/ against
  expectations written here: per file (and per run) the number of loss /
  grad-norm / LR points, the first and last step, and the first, middle
  (index n//2) and last values.  They were derived by hand with a
  throwaway decoder (TFRecord + protobuf varints in plain Python) and
  Python's csv module, and cross-checked with the normalised
  ../shared/realworld/*.jsonl and raw/README.md.
- The bs2 pair: the event file and the trainer_state.json of the same run
  give the same 109 points (loss and grad_norm equal at float32 precision).
- The same files of raw-more/ against raw-more/truth.json (independent
  ground truth).
- Normal runs replay without a warning or critical alert.
- Damaged copies of a real event file (a spoilt CRC, a cut end) and a CSV
  with a bad cell are reported with their record / line and the rest is read.
"""
import gzip
import json
import math
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from gwtest import GRADWATCH, REALWORLD
from logshapes import out_lines, without_end

RAW = os.path.join(REALWORLD, 'raw')
MORE = os.path.join(REALWORLD, 'raw-more')



def run(*args, timeout=300):
    return subprocess.run([GRADWATCH] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def convert(path, *args):
    """Points and events `gradwatch convert` writes for path (NDJSON)."""
    r = run('convert', *args, path)
    if r.returncode != 0:
        raise AssertionError('convert %s: exit %d: %s' % (path, r.returncode, r.stderr.decode()))
    return without_end([json.loads(l) for l in r.stdout.decode().splitlines()]), r.stderr.decode()



def series(points, role, run_name=None):
    return [(p['step'], p[role]) for p in points
            if role in p and (run_name is None or p['run'] == run_name)]


# role -> (points, first step, last step, [(step, value) at index 0, n//2, n-1])
# None: the file has no such series.
F32_LR = 9.000000136438757e-05
RAW_EXPECT = {
    'hf-llama-symptom-lora-bs2.tfevents': {None: {
        'loss': (109, 10, 1090, [(10, 1.692199945449829), (550, 0.5206999778747559),
                                 (1090, 0.5299000144004822)]),
        'grad_norm': (109, 10, 1090, [(10, 0.6133261919021606), (550, 0.4958476722240448),
                                      (1090, 0.6883772611618042)]),
        'lr': (109, 10, 1090, [(10, F32_LR), (550, 5.032258195569739e-05),
                               (1090, 5.52995402358647e-07)]),
    }},
    'hf-llama-symptom-lora-bs2-badrun.tfevents': {None: {
        'loss': (27, 10, 270, [(10, 12.054699897766113), (140, 5.588799953460693),
                               (270, 5.269599914550781)]),
        'grad_norm': (27, 10, 270, [(10, 36.497737884521484), (140, 6.511784553527832),
                                    (270, 6.408587455749512)]),
        'lr': (27, 10, 270, [(10, 4.999999873689376e-05), (140, 5.2651514124590904e-05),
                             (270, 3.409090822970029e-06)]),
    }},
    'keras-yj-cbam-rms10-train.tfevents': {None: {
        'loss': (1000, 0, 999, [(0, 2.1815621852874756), (500, 0.0634947121143341),
                                (999, 0.06371122598648071)]),
        'grad_norm': None, 'lr': None,
    }},
    'lightning-slm-wikitext-v0.metrics.csv': {None: {
        'loss': (2814, 49, 140699, [(49, 7.628580570220947), (70399, 3.970869302749634),
                                    (140699, 3.565943479537964)]),
        'grad_norm': None, 'lr': None,
    }},
    'lightning-probe-oldorder-v0.metrics.csv': {None: {
        'loss': (28, 49, 1399, [(49, 2.347229480743408), (749, 3.9867682456970215),
                                (1399, 2.7272350788116455)]),
        'grad_norm': None, 'lr': None,
    }},
    'wandb-export-zip2zip-phi35-training-loss.csv': {
        'andrea-z2z-phi35-4B-zeroinit-1BData-v0.6.4-Zip2zipCore': {
            'loss': (800, 10, 8000, [(10, 3.974762439727783), (4010, 1.4268405437469482),
                                     (8000, 1.4340627193450928)]),
            'grad_norm': None, 'lr': None},
        'xinxian-z2z-phi35-4B-nores-1BData-vx0.6.4.2-Zip2zipCore': {
            'loss': (800, 10, 8000, [(10, 76.78163146972656), (4010, 1.6445575952529907),
                                     (8000, 1.531458854675293)]),
            'grad_norm': None, 'lr': None},
    },
    'wandb-export-zip2zip-compress-loss-HEAD.csv': {
        'zip2zip_150M_compress_ms4': {'loss': (20, 10, 200, [
            (10, 38.76708984375), (110, 7.390930652618408), (200, 6.853435039520264)])},
        'zip2zip_50M_compress_ms4': {'loss': (20, 10, 200, [
            (10, 28.503469467163086), (110, 8.485982894897461), (200, 7.496670722961426)])},
        'zip2zip_20M_compress_ms4': {'loss': (20, 10, 200, [
            (10, 19.616092681884766), (110, 11.376771926879883), (200, 8.426931381225586)])},
        'zip2zip_1b_compress_ms4': {'loss': (20, 10, 200, [
            (10, 59.764156341552734), (110, 7.476551055908203), (200, 6.631889343261719)])},
    },
}

# runs that must replay without a warning or critical alert: labels.json
# ("fault": "none" for hf-llama-symptom-lora-bs2), raw/README.md (the slm
# run "is normal") and raw-more/README.md ("Must not alert")
NORMAL = [
    os.path.join(RAW, 'hf-llama-symptom-lora-bs2.tfevents'),
    os.path.join(RAW, 'lightning-slm-wikitext-v0.metrics.csv'),
    os.path.join(MORE, 'wandb-export-sd15-dtu400-train-loss.csv'),
    os.path.join(MORE, 'tb-lightning-lstm-textgen.tfevents'),
    os.path.join(MORE, 'tb-tf2-objdet-resumed.v2.tfevents'),
]

FORMATS = {'.tfevents': 'tfevents', 'metrics.csv': 'lightning_csv', '.csv': 'wandb_csv'}


def expected_format(name):
    for suffix, fmt in FORMATS.items():
        if name.endswith(suffix):
            return fmt
    return None


def f32(x):
    """x rounded to float32, as TensorBoard stores it."""
    return struct.unpack('<f', struct.pack('<f', x))[0]


def check_series(tc, got, want, label):
    if want is None:
        tc.assertEqual(got, [], label)
        return
    n, first, last, samples = want
    tc.assertEqual(len(got), n, label)
    tc.assertEqual(got[0][0], first, label)
    tc.assertEqual(got[-1][0], last, label)
    tc.assertEqual([got[0], got[n // 2], got[-1]], samples, label)


class RawFiles(unittest.TestCase):
    def test_every_raw_file_is_covered(self):
        mine = sorted(f for f in os.listdir(RAW) if f.endswith(('.tfevents', '.csv')))
        self.assertEqual(mine, sorted(RAW_EXPECT))

    def test_raw_files_against_expectations(self):
        for name, runs in RAW_EXPECT.items():
            with self.subTest(file=name):
                path = os.path.join(RAW, name)
                points, err = convert(path)
                self.assertEqual(err, '', name)
                got_runs = {p['run'] for p in points}
                if None in runs:
                    self.assertEqual(len(got_runs), 1, name)     # the file's default run
                else:
                    self.assertEqual(got_runs, set(runs), name)  # the export's run names
                for run_name, roles in runs.items():
                    for role in ('loss', 'grad_norm', 'lr'):
                        check_series(self, series(points, role, run_name), roles.get(role),
                                     '%s %s %s' % (name, run_name, role))

    def test_formats_are_sniffed(self):
        # no --input-format: the content decides (the file name cannot)
        for name in RAW_EXPECT:
            with self.subTest(file=name):
                with tempfile.TemporaryDirectory() as d:
                    anon = os.path.join(d, 'input')
                    shutil.copy(os.path.join(RAW, name), anon)
                    direct, _ = convert(anon)
                    forced, _ = convert(anon, '--input-format', expected_format(name))
                    self.assertEqual(direct, forced)

    BS2 = os.path.join(RAW, 'hf-llama-symptom-lora-bs2')

    def test_bs2_pair_same_points_as_the_json(self):
        points, _ = convert(self.BS2 + '.tfevents')
        with open(self.BS2 + '.trainer_state.json') as f:
            state = json.load(f)
        # the trainer's own log entries with a loss (not the end-of-run summary)
        logs = [e for e in state['log_history'] if 'loss' in e]
        self.assertEqual(len(logs), 109)
        self.assertEqual(len(points), 109)
        for p, e in zip(points, logs):
            self.assertEqual(p['step'], e['step'])
            self.assertEqual(p['loss'], f32(e['loss']))
            self.assertEqual(p['grad_norm'], f32(e['grad_norm']))
            self.assertEqual(p['lr'], f32(e['learning_rate']))

    def test_bs2_pair_same_points_as_the_trainer_state_reader(self):
        points, _ = convert(self.BS2 + '.tfevents')
        r = run('convert', self.BS2 + '.trainer_state.json')
        if r.returncode == 2 and b'nothing readable' in r.stderr:
            self.skipTest('no trainer_state.json reader in this build')
        self.assertEqual(r.returncode, 0, r.stderr)
        other = [json.loads(l) for l in out_lines(r)]
        other = [p for p in other if 'loss' in p]
        self.assertEqual([p['step'] for p in other], [p['step'] for p in points])
        for p, q in zip(points, other):
            self.assertEqual(p['loss'], f32(q['loss']))
            self.assertEqual(p['grad_norm'], f32(q['grad_norm']))


class RawMore(unittest.TestCase):
    """raw-more/ against truth.json: its conventions (truth.py) are the
    series of a tag or column in file order, samples at index 0, n//2, n-1."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(MORE, 'truth.json')) as f:
            truth = json.load(f)
        cls.truth = {e['file']: e for e in truth['files']
                     if e['file'].endswith(('.tfevents', '.csv'))}

    def test_every_file_is_in_truth(self):
        mine = sorted(f for f in os.listdir(MORE) if f.endswith(('.tfevents', '.csv')))
        self.assertEqual(mine, sorted(self.truth))

    def test_against_truth(self):
        def val(v):
            return float(v) if isinstance(v, str) else v
        for name, t in self.truth.items():
            with self.subTest(file=name):
                points, err = convert(os.path.join(MORE, name))
                self.assertEqual(err, '', name)
                for role in ('loss', 'grad_norm', 'lr'):
                    got = series(points, role)
                    if role not in t['roles']:
                        self.assertEqual(got, [], '%s: no %s expected' % (name, role))
                        continue
                    s = t['series'][t['roles'][role]]
                    label = '%s %s' % (name, role)
                    self.assertEqual(len(got), s['points'], label)
                    self.assertEqual(got[0][0], s['first_step'], label)
                    self.assertEqual(got[-1][0], s['last_step'], label)
                    self.assertEqual(sum(1 for _, v in got if math.isnan(v)), s['nan_count'])
                    for key, idx in s['sample_index'].items():
                        step = int(key.split('#')[0])
                        self.assertEqual(got[idx], (step, val(s['samples'][key])), label)


class Replay(unittest.TestCase):
    def assertNoErrors(self, stderr):
        # nothing but the summary line, and nothing rejected
        lines = stderr.splitlines()
        self.assertEqual(len(lines), 1, stderr)
        self.assertIn(', 0 rejected)', lines[0])

    def test_normal_runs_raise_no_alert(self):
        for path in NORMAL:
            with self.subTest(file=os.path.basename(path)):
                r = run('replay', '--format', 'jsonl', path)
                self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode())
                alerts = [json.loads(l) for l in out_lines(r)]
                self.assertEqual([a for a in alerts if a.get('severity') in
                                  ('warning', 'critical')], [])
                self.assertEqual(r.stderr.decode(), '')   # nothing rejected

    def test_every_file_replays(self):
        names = [os.path.join(RAW, n) for n in RAW_EXPECT] + \
            [os.path.join(MORE, n) for n in os.listdir(MORE) if n.endswith(('.tfevents', '.csv'))]
        for path in names:
            with self.subTest(file=os.path.basename(path)):
                r = run('replay', path)
                self.assertIn(r.returncode, (0, 1), r.stderr.decode())
                self.assertNoErrors(r.stderr.decode())


def records(data):
    """(offset, length) of each TFRecord of data, by its length fields only."""
    out, off = [], 0
    while off < len(data):
        n = struct.unpack_from('<Q', data, off)[0]
        out.append((off, n))
        off += 16 + n
    return out


class Damage(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='gwtest-')
        with open(os.path.join(RAW, 'hf-llama-symptom-lora-bs2.tfevents'), 'rb') as f:
            self.data = f.read()
        self.recs = records(self.data)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, 'wb') as f:
            f.write(data)
        return path

    def test_spoilt_data_crc(self):
        # record 4 is the first train/loss (step 10): flip a byte of its data
        off, n = self.recs[3]
        bad = bytearray(self.data)
        bad[off + 12 + n // 2] ^= 0x40
        points, err = convert(self.write('bad-crc', bytes(bad)))
        self.assertIn(':4: bad_crc: record 4 at byte %d: the CRC of its %d data bytes' % (off, n),
                      err)
        self.assertEqual(len(points), 109)      # step 10 keeps its other tags
        self.assertNotIn('loss', points[0])
        self.assertEqual(len(series(points, 'loss')), 108)

    def test_spoilt_length_crc_ends_the_input(self):
        off, _ = self.recs[300]
        bad = bytearray(self.data)
        bad[off + 8] ^= 1
        r = run('replay', self.write('bad-len', bytes(bad)))
        self.assertEqual(r.returncode, 2)
        self.assertIn('record 301 at byte %d: the CRC of its length does not match' % off,
                      r.stderr.decode())

    def test_cut_end(self):
        off, n = self.recs[-1]
        points, err = convert(self.write('cut', self.data[:off + 20]))
        self.assertIn(':%d: truncated: record %d at byte %d is cut: the input ends after 8 of its '
                      '%d data bytes' % (len(self.recs), len(self.recs), off, n), err)
        self.assertEqual(len(points), 109)

    def test_gzip_and_stdin(self):
        path = self.write('gz', gzip.compress(self.data))
        points, _ = convert(path)
        self.assertEqual(len(points), 109)
        r = subprocess.run([GRADWATCH, 'convert', '-'], input=self.data,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(out_lines(r)), 109)

    def test_csv_bad_cell(self):
        with open(os.path.join(RAW, 'lightning-probe-oldorder-v0.metrics.csv'), 'rb') as f:
            lines = f.read().split(b'\n')
        lines[5] = b'oops' + lines[5][lines[5].index(b','):]
        points, err = convert(self.write('metrics.csv', b'\n'.join(lines)))
        self.assertIn(':6: bad_value: column "train_loss": "oops" is not a number', err)
        self.assertEqual(len(points), 27)


if __name__ == '__main__':
    unittest.main()
