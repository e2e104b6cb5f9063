"""Four forms pasted when a run goes NaN, through the real `gradwatch` binary:
Darknet's iteration lines, OpenNMT-py's Step lines, MXNet's Speedometer and
ESPnet2's trainer lines (readers/rd_darknet.c, rd_plain.c).  Each NaN paste,
from a file and on stdin (the paste path), is read as its format and raises
`nonfinite` at its first NaN point's step and line; a healthy excerpt raises
nothing.  Pastes from public threads keep their exact lines and name the
thread; synthetic ones say so."""
import tempfile
import unittest

from pastecheck import check_paste


# name: (format, NaN run?, text)
PASTES = {
    # miyakz1192/game_ad_automation, dev_memo (a YOLOv3-tiny diary, `grep avg
    # nohup.out`): Darknet's loss NaN from iteration 8
    'darknet_nan': ('darknet', True, (
        '  avg_outputs = 324846 \n'
        '   1: 556.005249, 556.005249 avg loss, 0.000000 rate, 40.257556 seconds, 64 images, '
        '-1.000000 hours left\n'
        '   2: 555.796509, 555.984375 avg loss, 0.000000 rate, 40.023119 seconds, 128 images, '
        '5602.339534 hours left\n'
        '   3: 556.233582, 556.009277 avg loss, 0.000000 rate, 40.137928 seconds, 192 images, '
        '5601.925925 hours left\n'
        '   4: 555.829895, 555.991333 avg loss, 0.000000 rate, 40.028085 seconds, 256 images, '
        '5601.675859 hours left\n'
        '   5: 556.016968, 555.993896 avg loss, 0.000000 rate, 40.083506 seconds, 320 images, '
        '5601.275543 hours left\n'
        '   6: 556.002319, 555.994751 avg loss, 0.000000 rate, 40.055308 seconds, 384 images, '
        '5600.956159 hours left\n'
        '   7: 555.905579, 555.985840 avg loss, 0.000000 rate, 40.106618 seconds, 448 images, '
        '5600.600656 hours left\n'
        '   8: -nan, -nan avg loss, 0.000000 rate, 40.373377 seconds, 512 images, 5600.319865 '
        'hours left\n'
        '   9: -nan, -nan avg loss, 0.000000 rate, 41.320219 seconds, 576 images, 5600.412450 '
        'hours left\n')),
    # OpenNMT/OpenNMT-py#1072: "ppl:nan after step5000"
    'opennmt_nan': ('text', True, (
        '[2018-11-26 14:56:55,137 INFO] Step 5500/50000; acc:  45.16; ppl: 11.12; xent: 2.41; '
        'lr: 0.00068; 2132/1928 tok/s;  20564 sec\n'
        '[2018-11-26 14:59:57,699 INFO] Step 5550/50000; acc:  47.00; ppl: 10.46; xent: 2.35; '
        'lr: 0.00069; 1851/1358 tok/s;  20746 sec\n'
        '[2018-11-26 15:02:57,162 INFO] Step 5600/50000; acc:  47.14; ppl:  9.83; xent: 2.29; '
        'lr: 0.00069; 1065/1591 tok/s;  20926 sec\n'
        '[2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; '
        'lr: 0.00070; 1928/2310 tok/s;  21110 sec\n'
        '[2018-11-26 15:09:00,598 INFO] Step 5700/50000; acc:   0.17; ppl:   nan; xent:  nan; '
        'lr: 0.00070; 1827/2180 tok/s;  21289 sec\n'
        '[2018-11-26 15:09:03,577 INFO] Loading train dataset from ./disc_data/data.train.1.pt, '
        'number of examples: 221287\n')),
    # synthetic: MXNet's Speedometer (tab separated), the cross-entropy NaN in
    # epoch 1, then that epoch's summary
    'mxnet_nan': ('text', True, (
        'INFO:root:Epoch[0] Batch [100]\tSpeed: 500.00 samples/sec\taccuracy=0.500000\t'
        'cross-entropy=1.200000\n'
        'INFO:root:Epoch[0] Batch [200]\tSpeed: 500.00 samples/sec\taccuracy=0.550000\t'
        'cross-entropy=1.100000\n'
        'INFO:root:Epoch[0] Train-cross-entropy=1.150000\n'
        'INFO:root:Epoch[0] Time cost=12.345\n'
        'INFO:root:Epoch[1] Batch [100]\tSpeed: 500.00 samples/sec\taccuracy=0.600000\t'
        'cross-entropy=1.000000\n'
        'INFO:root:Epoch[1] Batch [200]\tSpeed: 500.00 samples/sec\taccuracy=0.000000\t'
        'cross-entropy=nan\n'
        'INFO:root:Epoch[1] Train-cross-entropy=nan\n')),
    # synthetic: ESPnet2's trainer, the loss NaN in the third range
    'espnet_nan': ('text', True, (
        '[host] 2021-01-01 10:00:00,000 (trainer:600) INFO: 1epoch:train:1-100batch: '
        'iter_time=1.2e-04, forward_time=0.1, loss_ctc=120.5, loss_att=80.2, acc=0.1, loss=92.3, '
        'backward_time=0.1, optim_step_time=0.01, lr_0=1.0e-05, train_time=0.5\n'
        '[host] 2021-01-01 10:01:00,000 (trainer:600) INFO: 1epoch:train:101-200batch: '
        'iter_time=1.2e-04, forward_time=0.1, loss_ctc=110.5, loss_att=70.2, acc=0.2, loss=82.3, '
        'backward_time=0.1, optim_step_time=0.01, lr_0=2.0e-05, train_time=0.5\n'
        '[host] 2021-01-01 10:02:00,000 (trainer:600) INFO: 1epoch:train:201-300batch: '
        'iter_time=1.2e-04, forward_time=0.1, loss_ctc=nan, loss_att=nan, acc=0.0, loss=nan, '
        'backward_time=0.1, optim_step_time=0.01, lr_0=3.0e-05, train_time=0.5\n')),
    # espnet/espnet#2674: an LM's healthy epoch end and next epoch's start
    'espnet_healthy': ('text', False, (
        '[PC] 2020-11-11 16:30:04,578 (trainer:486) INFO: 1epoch:train:6376-6750batch: '
        'iter_time=0.001, forward_time=0.005, loss=2.386, backward_time=0.005, '
        'optim_step_time=1.949e-04, lr_0=0.100, train_time=0.013\n'
        '[PC] 2020-11-11 16:30:09,675 (trainer:486) INFO: 1epoch:train:6751-7125batch: '
        'iter_time=0.001, forward_time=0.005, loss=2.367, backward_time=0.005, '
        'optim_step_time=1.953e-04, lr_0=0.100, train_time=0.013\n'
        '[PC] 2020-11-11 16:30:14,840 (trainer:486) INFO: 1epoch:train:7126-7500batch: '
        'iter_time=0.001, forward_time=0.005, loss=2.339, backward_time=0.005, '
        'optim_step_time=1.963e-04, lr_0=0.100, train_time=0.014\n'
        '[PC] 2020-11-11 16:30:18,406 (trainer:243) INFO: 1epoch results: [train] '
        'iter_time=0.001, forward_time=0.005, loss=2.853, backward_time=0.005, '
        'optim_step_time=1.974e-04, lr_0=0.100, train_time=0.013, time=1 minute and 42.6 '
        'seconds, total_count=7507, [valid] loss=2.387, time=3 seconds, total_count=240, '
        '[att_plot] time=0.28 seconds, total_count=0\n'
        '[PC] 2020-11-11 16:30:24,312 (trainer:486) INFO: 2epoch:train:1-375batch: '
        'iter_time=0.001, forward_time=0.005, loss=2.313, backward_time=0.005, '
        'optim_step_time=2.000e-04, lr_0=0.100, train_time=0.014\n')),
}


class PastedNaNForms(unittest.TestCase):

    def test_pastes(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, (fmt, nan, text) in PASTES.items():
                with self.subTest(paste=name):
                    pts, opened = check_paste(self, tmp, name, fmt, nan, text)
                    self.assertGreaterEqual(len(pts), 3)
                    steps = [d['step'] for d in pts]
                    self.assertEqual(steps, sorted(set(steps)), 'steps go up')
                    if opened:
                        line = text.split('\n')[opened[0]['line'] - 1]
                        self.assertIn('nan', line)


if __name__ == '__main__':
    unittest.main()
