"""The readers of fairseq, torchtitan, Composer/OLMo, torchtune, plain CSV,
YOLO, TF OD API and SB3 logs through the real `gradwatch` binary.

No such log is in ../shared/realworld, so each is written here in its
framework's shape (tests/integration/logshapes.py) from two traces of the dev
corpus: genesis.jsonl (a resume without the optimizer state, no events: the
step goes back from 8,560 to 8,501, loss up and grad norm down after it) and
d16.jsonl (a normal run of 4,000 steps).  Per shape: the format is sniffed,
the counts of loss / grad-norm / LR points, the first and last step and
sampled values match the trace (at the precision the shape prints), the
genesis log raises optimizer_reset through `gradwatch replay` and the normal
one raises nothing.  Then the hazards: evaluation lines, a cut last line,
several runs in one file, ANSI codes, progress redraws, a bad value."""
import json
import math
import os
import subprocess
import tempfile
import unittest

import logshapes
from logshapes import out_lines
from pastecheck import check_paste
from gwtest import CORPUS, GRADWATCH

GENESIS = logshapes.points(os.path.join(CORPUS, 'genesis.jsonl'))
NORMAL = logshapes.points(os.path.join(CORPUS, 'd16.jsonl'))

# the precision each shape prints values with: relative (%.6g) or absolute
# (torchtitan's %7.4f grad norm)
PRECISION = {'fairseq_simple': (1e-5, 0), 'fairseq_json': (1e-5, 0), 'torchtitan': (0, 5e-5),
             'composer': (1e-5, 0), 'olmo': (1e-5, 0), 'torchtune': (0, 0),
             'torchtune_bar': (0, 0), 'csv': (0, 0), 'yolo': (0, 0), 'tfod': (0, 0), 'sb3': (0, 0)}
# the roles each shape carries
ROLES = {'torchtune_bar': ('loss',), 'torchtitan': ('loss', 'grad_norm'), 'yolo': ('loss',),
         'tfod': ('loss', 'lr'), 'sb3': ('loss', 'lr')}



def run(*args, stdin=None):
    return subprocess.run([GRADWATCH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300, input=stdin)


class MLflow(unittest.TestCase):
    """An MLflow run directory (mlruns/<experiment>/<run>/) given to replay."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_dir(self, trace, name='3f9a0c'):
        d = os.path.join(self.tmp.name, 'mlruns', '0', name)
        logshapes.mlflow_run(trace, d)
        return d

    def test_points_alerts_and_run_name(self):
        d = self.run_dir(GENESIS)
        r = run('convert', d + '/')
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        got = [json.loads(l) for l in out_lines(r)]
        self.assertEqual(len(got), len(GENESIS))
        self.assertEqual({g['run'] for g in got}, {'brave-owl-42'})   # meta.yaml's run_name
        for k in (0, 1561, 1562, len(GENESIS) - 1):
            for role in ('loss', 'grad_norm', 'lr', 'throughput'):
                self.assertEqual(got[k][role], GENESIS[k][role])
            self.assertEqual(got[k]['step'], GENESIS[k]['step'])
            self.assertAlmostEqual(got[k]['ts'], GENESIS[k]['ts'], places=3)
        r = run('replay', '--format', 'jsonl', d)
        self.assertEqual(r.returncode, 1, r.stderr.decode())
        alerts = [json.loads(l) for l in out_lines(r)]
        self.assertIn('optimizer_reset', {a['detector'] for a in alerts if a['kind'] == 'open'})
        n = run('replay', '--format', 'jsonl', '--min-severity', 'warning', self.run_dir(NORMAL, 'b1'))
        self.assertEqual((n.returncode, n.stdout, n.stderr), (0, b'', b''))

    def test_bad_lines_and_what_is_not_a_run(self):
        d = self.run_dir(NORMAL[:10])
        with open(os.path.join(d, 'metrics', 'train', 'loss'), 'a') as f:
            f.write('1815086044501 oops 11\n')
        r = run('convert', '--run', 'x', d)
        self.assertEqual(r.returncode, 0)
        self.assertIn(d + '/metrics/train/loss:11: bad_value: expected "<timestamp ms> <value> <step>"',
                      r.stderr.decode())
        self.assertEqual(len(out_lines(r)), 10)
        r = run('replay', os.path.dirname(d))
        self.assertEqual(r.returncode, 2)
        self.assertIn('not an MLflow run (no metrics/ folder in it)', r.stderr.decode())
        r = run('replay', '--input-format', 'megatron', d)
        self.assertEqual(r.returncode, 2)


class Shapes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, data):
        p = os.path.join(self.tmp.name, name)
        with open(p, 'wb') as f:
            f.write(data)
        return p

    def convert(self, path, *opts):
        r = run('convert', '--run', 'x', *opts, path)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        lines = [json.loads(l) for l in out_lines(r)]
        ends = [d for d in lines if d.get('reason') == 'end_of_log']
        self.assertEqual(lines[len(lines) - len(ends):], ends)   # convert ends each run last
        return lines[:len(lines) - len(ends)], r.stderr.decode()

    def replay(self, path):
        r = run('replay', '--format', 'jsonl', '--min-severity', 'warning', '--run', 'x', path)
        alerts = [json.loads(l) for l in out_lines(r)]
        return r, [a for a in alerts if a['kind'] == 'open']

    def test_points_match_the_trace(self):
        for shape, (fmt, printer) in logshapes.SHAPES.items():
            with self.subTest(shape=shape):
                p = self.write(shape + '.log', printer(GENESIS))
                got, err = self.convert(p)
                self.assertEqual(err, '')   # nothing rejected
                self.assertEqual(len(got), len(GENESIS))
                self.assertEqual((got[0]['step'], got[-1]['step']), (7000, GENESIS[-1]['step']))
                for role in ROLES.get(shape, ('loss', 'grad_norm', 'lr')):
                    self.assertEqual(sum(1 for d in got if role in d), len(GENESIS), role)
                    for k in (0, 1561, 1562, len(GENESIS) - 1):
                        want, have = GENESIS[k][role], got[k][role]
                        self.assertEqual(got[k]['step'], GENESIS[k]['step'])
                        rel, ab = PRECISION[shape]
                        self.assertLessEqual(abs(have - want), abs(want) * rel + ab + 1e-12,
                                             (role, k, have, want))

    def test_optimizer_reset_alerts_and_normal_run_does_not(self):
        for shape, (fmt, printer) in logshapes.SHAPES.items():
            with self.subTest(shape=shape):
                # the signature needs the grad norm, which a shape of the
                # loss alone does not carry; the normal run is judged all the same
                if 'grad_norm' in ROLES.get(shape, ('grad_norm',)):
                    r, alerts = self.replay(self.write(shape + '-genesis.log', printer(GENESIS)))
                    self.assertEqual(r.returncode, 1, r.stderr.decode())
                    det = {a['detector'] for a in alerts}
                    self.assertIn('optimizer_reset', det, alerts)
                    reset = [a for a in alerts if a['detector'] == 'optimizer_reset'][0]
                    self.assertGreater(reset['step'], 8501)
                r, alerts = self.replay(self.write(shape + '-normal.log', printer(NORMAL)))
                self.assertEqual(r.returncode, 0, (alerts, r.stderr.decode()[-2000:]))
                self.assertEqual(alerts, [])
                self.assertEqual(r.stderr.decode(), '')   # no line rejected

    def test_each_shape_is_sniffed_as_its_format(self):
        for shape, (fmt, printer) in logshapes.SHAPES.items():
            with self.subTest(shape=shape):
                # a file name that says nothing: the content decides
                p = self.write('out', printer(NORMAL[:50]))
                a, _ = self.convert(p)
                b, _ = self.convert(p, '--input-format', fmt)
                self.assertEqual(a, b)
                self.assertEqual(len(a), 50)
                # what the format reads and nothing else: the first points
                # of a file follow the banner lines
                self.assertEqual([d['step'] for d in a], list(range(1, 51)))

    def test_formats_lists_them_as_stream(self):
        out = run('formats').stdout.decode().splitlines()
        names = {l.split()[0]: l.split()[1] for l in out}
        for n in ('fairseq', 'torchtitan', 'composer', 'torchtune', 'csv', 'ultralytics',
                  'tf_objdet', 'sb3'):
            self.assertEqual(names[n], 'stream')

    def test_evaluation_and_summary_lines_are_not_points(self):
        tr = NORMAL[:1000]
        got, _ = self.convert(self.write('fs.log', logshapes.fairseq_simple(tr)))
        self.assertEqual(len(got), 1000)     # "valid on 'valid' subset" twice, skipped
        data = (logshapes.fairseq_simple(tr[:3]) +
                b"2026-03-01 10:05:00 | INFO | train | epoch 001 | loss 8.77 | nll_loss 8.4 | "
                b"num_updates 3 | lr 2.5e-05 | gnorm 2.0\n"
                b'{"epoch": 1, "train_loss": "8.77", "train_num_updates": "3"}\n'
                b'{"epoch": 1, "valid_loss": "7.0", "valid_num_updates": "3"}\n')
        got, _ = self.convert(self.write('fs2.log', data))
        self.assertEqual([d['step'] for d in got], [1, 2, 3])
        got, _ = self.convert(self.write('c.log', logshapes.composer(tr)))
        self.assertEqual(len(got), 1000)
        self.assertNotIn('metrics/eval/LanguageCrossEntropy', json.dumps(got))
        data = logshapes.torchtitan(tr[:2]) + (
            '[rank0]:[titan] 2026-05-18 16:04:47,338 - root - INFO - %s[33mvalidate step: 2  '
            'loss:  9.99999  memory: 1.00GiB(1.00%%)\n' % logshapes.ESC).encode()
        got, _ = self.convert(self.write('t.log', data))
        self.assertEqual([d['loss'] for d in got], [round(tr[0]['loss'], 5), round(tr[1]['loss'], 5)])
        got, _ = self.convert(self.write('k.csv', logshapes.plain_csv(tr)))
        self.assertEqual(sum(1 for d in got if 'val_loss' in d), 2)   # an extra, NA elsewhere

    def test_torchtitan_fields_and_colours(self):
        got, _ = self.convert(self.write('t.log', logshapes.torchtitan(NORMAL[:3])))
        d = got[0]
        self.assertEqual((d['memory_gib'], d['memory_pct'], d['mfu_pct'], d['tflops']),
                         (9.46, 64.99, 0.17, 0.52))
        self.assertEqual(d['throughput'], int(NORMAL[0]['throughput']))   # "42,893"
        plain, _ = self.convert(self.write('p.log', logshapes.torchtitan(NORMAL[:3], colour=False)))
        self.assertEqual(got, plain)

    def test_progress_redraws_are_read_once(self):
        got, _ = self.convert(self.write('b.log', logshapes.torchtune_bar(NORMAL[:100], redraws=3)))
        self.assertEqual([d['step'] for d in got], list(range(1, 101)))
        self.assertEqual(got[9]['loss'], NORMAL[9]['loss'])
        # fairseq's tqdm bar, redrawn with the same postfix
        segs = []
        for r in NORMAL[:20]:
            for k in range(2):
                segs.append('epoch 001:  %d%%|#   | %d/1000 [00:%02d<04:30, 3.3it/s, loss=%.6g, '
                            'nll_loss=2.1, num_updates=%d, lr=%g, gnorm=%.6g, clip=0%%]'
                            % (r['step'] // 10, r['step'], k, r['loss'], r['step'], r['lr'],
                               r['grad_norm']))
        got, _ = self.convert(self.write('q.log', ('\r'.join(segs) + '\n').encode()))
        self.assertEqual([d['step'] for d in got], list(range(1, 21)))
        self.assertEqual(got[0]['clip_pct'], 0)

    def test_cut_last_line_keeps_what_it_has(self):
        for shape, (fmt, printer) in logshapes.SHAPES.items():
            if shape == 'torchtune_bar':
                continue   # one line: see test_progress_redraws_are_read_once
            with self.subTest(shape=shape):
                data = printer(NORMAL[:10])
                data = data[:data.rstrip(b'\n').rfind(b'\n') + 1] + data.rstrip(b'\n').rsplit(b'\n', 1)[1][:25]
                r = run('convert', '--run', 'x', self.write('cut.log', data))
                self.assertIn(r.returncode, (0,), r.stderr.decode())
                got = [json.loads(l) for l in out_lines(r)]
                self.assertGreaterEqual(len(got), 9)
                self.assertEqual([d['step'] for d in got[:9]], list(range(1, 10)))

    def test_several_runs_in_one_file(self):
        for shape, (fmt, printer) in logshapes.SHAPES.items():
            if shape == 'torchtune_bar':
                continue
            with self.subTest(shape=shape):
                got, _ = self.convert(self.write('two.log', printer(NORMAL[:30]) + printer(NORMAL[:20])))
                runs = [d['run'] for d in got]
                self.assertEqual(runs, ['x'] * 30 + ['x#2'] * 20)

    def test_bad_values_name_line_and_field(self):
        cases = {
            'fairseq': (b'epoch 001:  1 / 10 loss=oops, num_updates=1, gnorm=1.0\n'
                        b'epoch 001:  2 / 10 loss=2.0, num_updates=2, gnorm=1.0\n',
                        ':1: bad_value: field "loss" at column 25'),
            'torchtitan': (b'[titan] - root - INFO - step: 1  loss:  nope  grad_norm: 1.0  memory: 1GiB\n'
                           b'[titan] - root - INFO - step: 2  loss:  2.0  grad_norm: 1.0  memory: 1GiB\n',
                           ':1: bad_value: field "loss" at column 41'),
            'composer': (b'[batch=1/2]:\n\t Train loss/train/total: what\n\t Train l2_norm/grad/global: 1\n'
                         b'[batch=2/2]:\n\t Train loss/train/total: 2.0\n',
                         ':2: bad_value: field "loss/train/total" at column 27'),
            'torchtune': (b'Step 1 | loss:x lr:1e-05 \nStep 2 | loss:2.0 lr:1e-05 \n',
                          ':1: bad_value: field "loss" at column 15'),
            'csv': (b'iteration,loss,grad_norm\n1,oops,1.0\n2,2.0,1.0\n',
                    ':2: bad_value: column "loss": "oops" is not a number'),
        }
        for fmt, (data, msg) in cases.items():
            with self.subTest(format=fmt):
                p = self.write('bad.log', data)
                r = run('convert', '--run', 'x', p)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                self.assertIn(p + msg, r.stderr.decode())
                got = [json.loads(l) for l in out_lines(r)]
                self.assertEqual(got[-1]['step'], 2)
                self.assertEqual(got[-1]['loss'], 2.0)

    def test_keras_csvlogger_epochs_are_steps(self):
        data = b'epoch,accuracy,learning_rate,loss,val_accuracy,val_loss\n0,0.5,0.001,1.2,0.55,1.1\n' \
               b'1,0.6,0.001,0.9,0.6,1.0\n2,0.7,0.0005,nan,NA,NA\n'
        got, _ = self.convert(self.write('training.log', data))
        self.assertEqual([(d['step'], d['lr']) for d in got], [(0, 0.001), (1, 0.001), (2, 0.0005)])
        self.assertTrue(math.isnan(got[2]['loss']))
        self.assertNotIn('val_loss', got[2])
        r, alerts = self.replay(self.write('training.log', data))
        self.assertIn('nonfinite', {a['detector'] for a in alerts})


# Pasted forms of vision and RL trainers (readers/rd_yolo.c, rd_tfod.c,
# rd_sb3.c): the exact lines of public issue threads, where one showed the
# form; synthetic (so labelled) where none did.
BAR = '\u2588' * 10
PASTES = {
    # ultralytics/ultralytics#1149: every loss NaN at epoch 1 (YOLOv8-seg)
    'yolov8_nan': ('ultralytics', True, (
        '      Epoch    GPU_mem   box_loss   seg_loss   cls_loss   dfl_loss  Instances       Size\n'
        '      1/100      2.37G        nan        nan        nan        nan         16        640: '
        '100%|' + BAR + '| 1/1 [00:02<00:00,  2.42s/it]\n')),
    # ultralytics/yolov5#4963: box, obj and cls NaN on the GPU (YOLOv5)
    'yolov5_nan': ('ultralytics', True, (
        ' Epoch   gpu_mem       box       obj       cls    labels  img_size\n'
        '      1/99     2.64G         nan       nan       nan         4       416: 100%|' + BAR + '| '
        '7/7 [00:15<00:00,  2.27s/it]\n'
        '               Class     Images     Labels          P          R     mAP@.5 mAP@.5:.95: '
        '100%|' + BAR + '| 1/1 [00:01<00:00,  1.30s/it]\n'
        '                 all               14          0             0          0            0  '
        '            0\n')),
    # ultralytics/ultralytics#21765: two healthy YOLOv8 epochs with their
    # validation rows
    'yolov8_ok': ('ultralytics', False, (
        '      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n'
        '       9/55      9.02G     0.1295      7.585      3.256         16        640: 100%|' + BAR + '| '
        '954/954 [11:32<00:00,  1.38it/s]\n'
        '                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): '
        '100%|' + BAR + '| 66/66 [00:37<00:00,  1.74it/s]\n'
        '                   all       1049       1164      0.764      0.776      0.739      0.526\n'
        '\n'
        '      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n'
        '      10/55      9.02G     0.1271      7.321      3.224         12        640: 100%|' + BAR + '| '
        '954/954 [11:25<00:00,  1.39it/s]\n'
        '                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): '
        '100%|' + BAR + '| 66/66 [00:37<00:00,  1.74it/s]\n'
        '                   all       1049       1164      0.622       0.83      0.624      0.448\n')),
    # EdjeElectronics/TensorFlow-Lite-Object-Detection-on-Android-and-Raspberry-Pi#183:
    # efficientdet-d0's loss dict, all NaN (the inline-code backticks left out)
    'tfod_nan': ('tf_objdet', True, (
        "I0409 23:03:12.869635 140410452137792 model_lib_v2.py:708] {'Loss/classification_loss': nan,\n"
        " 'Loss/localization_loss': nan,\n"
        " 'Loss/regularization_loss': nan,\n"
        " 'Loss/total_loss': nan,\n"
        " 'learning_rate': 0.07922263}\n")),
    # armaanpriyadarshan/Training-a-Custom-TensorFlow-2.X-Object-Detector#6:
    # healthy Step lines with their loss, from both loggers
    'tfod_ok': ('tf_objdet', False, (
        'INFO:tensorflow:Step 3800 per-step time 0.766s loss=1.343\n'
        'I0912 12:30:41.062087 139735407601536 model_lib_v2.py:652] Step 3800 per-step time 0.766s loss=1.343\n'
        'INFO:tensorflow:Step 3900 per-step time 0.764s loss=1.710\n'
        'I0912 12:32:04.439736 139735407601536 model_lib_v2.py:652] Step 3900 per-step time 0.764s loss=1.710\n')),
    # synthetic, in SB3's shape: a healthy table, then one gone NaN
    'sb3_nan': ('sb3', True, (
        '-----------------------------------------\n'
        '| time/                   |             |\n'
        '|    total_timesteps      | 4096        |\n'
        '| train/                  |             |\n'
        '|    loss                 | 5.23        |\n'
        '|    n_updates            | 10          |\n'
        '-----------------------------------------\n'
        '-----------------------------------------\n'
        '| time/                   |             |\n'
        '|    total_timesteps      | 6144        |\n'
        '| train/                  |             |\n'
        '|    loss                 | nan         |\n'
        '|    n_updates            | 20          |\n'
        '-----------------------------------------\n')),
}


class PastedVisionAndRL(unittest.TestCase):
    """A YOLO table, a TF OD API log and SB3 tables pasted into replay (from a
    file and on stdin, the paste path): each is read as its format; a NaN run
    raises nonfinite at the NaN point's line, a healthy excerpt nothing."""

    def test_nan_pastes_raise_nonfinite(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, (fmt, nan, text) in PASTES.items():
                with self.subTest(paste=name):
                    pts, opened = check_paste(self, tmp, name, fmt, nan, text)
                    self.assertTrue(pts)
                    if opened:
                        line = text.split('\n')[opened[0]['line'] - 1]
                        self.assertTrue('nan' in line or '{' in line, line)


if __name__ == '__main__':
    unittest.main()
