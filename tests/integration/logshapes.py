"""A trace of training points (dicts with step, loss, grad_norm, lr,
throughput, as the dev corpus writes them) printed the way other training
frameworks print their logs: fairseq (simple, tqdm, json), torchtitan (with
its ANSI colours), Composer and OLMo (multi-line blocks), torchtune (its
metric log and its progress bar), a plain CSV, and (loss and LR only) an
Ultralytics YOLOv5 table, the TF Object Detection API's Step lines and
loss dicts and Stable-Baselines3's tables.  The shapes follow those
frameworks' output; the numbers are the trace's.  Used by
test_readers_more.py and test_follow_formats.py; out_lines and without_end
take convert's closing lines off for the readers' tests."""
import json
import os

ESC = '\x1b'


def points(path):
    """The metric points of an NDJSON trace, events left out."""
    with open(path) as f:
        return [r for r in map(json.loads, f) if 'event' not in r]


def fairseq_simple(trace, per_epoch=1000):
    out = ['2026-03-01 10:00:00 | INFO | fairseq_cli.train | task: TranslationTask\n',
           '2026-03-01 10:00:00 | INFO | fairseq_cli.train | model: transformer_wmt_en_de\n']
    for k, r in enumerate(trace):
        s = r['step']
        out.append('2026-03-01 10:%02d:%02d | INFO | train_inner | epoch %03d:  %5d / %d '
                   'loss=%.6g, nll_loss=%.6g, ppl=%.2f, wps=%.1f, ups=3.2, wpb=12876, bsz=402, '
                   'num_updates=%d, lr=%.6g, gnorm=%.6g, clip=0%%, loss_scale=128, '
                   'train_wall=31, wall=%d\n'
                   % (k // 60 % 60, k % 60, s // per_epoch + 1, s % per_epoch, per_epoch,
                      r['loss'], r['loss'] * 0.97, 2 ** r['loss'], r['throughput'], s, r['lr'],
                      r['grad_norm'], k))
        if s % 500 == 0:
            out.append("2026-03-01 10:00:00 | INFO | valid | epoch %03d | valid on 'valid' subset "
                       "| loss %.3f | nll_loss 9.1 | ppl 51.2 | num_updates %d\n"
                       % (s // per_epoch + 1, r['loss'] + 0.5, s))
    return ''.join(out).encode()


def fairseq_json(trace):
    out = ['2026-03-01 10:00:00 | INFO | fairseq_cli.train | task: TranslationTask\n']
    for r in trace:
        d = {'epoch': 1, 'update': round(r['step'] / 10000, 3), 'loss': '%.6g' % r['loss'],
             'nll_loss': '%.6g' % (r['loss'] * 0.97), 'wps': '%.1f' % r['throughput'],
             'num_updates': str(r['step']), 'lr': '%.6g' % r['lr'],
             'gnorm': '%.6g' % r['grad_norm'], 'clip': '0', 'train_wall': '31'}
        out.append('2026-03-01 10:00:00 | INFO | train_inner | %s\n' % json.dumps(d))
    return ''.join(out).encode()


def torchtitan(trace, colour=True):
    def c(code):
        return '%s[%sm' % (ESC, code) if colour else ''
    out = ['[rank0]:[titan] 2026-05-18 16:04:40,001 - root - INFO - Starting job: Llama 3 8B training\n',
           '[rank0]:[titan] 2026-05-18 16:04:40,002 - root - INFO - Training starts at step 1.\n']
    for r in trace:
        out.append('[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - %sstep: %2d  %sloss: %8.5f  '
                   '%sgrad_norm: %7.4f  %smemory:  9.46GiB(64.99%%)  %stps: %s  %stflops: 0.52  '
                   '%smfu: 0.17%%%s\n'
                   % (c('31'), r['step'], c('32'), r['loss'], c('33'), r['grad_norm'], c('38;2;180;60;0'),
                      c('34'), '{:,}'.format(int(r['throughput'])), c('36'), c('35'), c('39')))
    return ''.join(out).encode()


def composer(trace, total=None):
    total = total or max(r['step'] for r in trace)
    out = ['******************************\nConfig:\nnode_name: unknown\n******************************\n']
    for r in trace:
        out.append('[batch=%d/%d]:\n\t Train time/batch: %d\n\t Train loss/train/total: %.6g\n'
                   '\t Train l2_norm/grad/global: %.6g\n\t Train lr-DecoupledAdamW/group0: %.6g\n'
                   '\t Train throughput/tokens_per_sec: %.4f\n'
                   % (r['step'], total, r['step'] - 1, r['loss'], r['grad_norm'], r['lr'],
                      r['throughput']))
        if r['step'] % 500 == 0:
            out.append('[Eval batch=1/32] Eval on eval data\n[Eval batch=32/32] Eval on eval data\n'
                       '\t Eval metrics/eval/LanguageCrossEntropy: %.4f\n' % (r['loss'] + 0.5))
    return ''.join(out).encode()


def olmo(trace, total=None):
    total = total or max(r['step'] for r in trace)
    out = ['2024-02-01 00:00:00.000\tnode:0\tolmo.train:1000\tINFO\tPre-train system metrics\n']
    for r in trace:
        out.append('2024-02-01 00:00:00.000\tnode:0\tolmo.train:1000\tINFO\t[step=%d/%d]\n'
                   '    train/CrossEntropyLoss=%.6g\n    train/Perplexity=%s\n'
                   '    optim/total_grad_norm=%.6g\n    optim/learning_rate_group0=%.6g\n'
                   '    throughput/device/tokens_per_second=%s\n'
                   % (r['step'], total, r['loss'], '{:,.1f}'.format(2.718 ** r['loss']),
                      r['grad_norm'], r['lr'], '{:,}'.format(int(r['throughput']))))
    return ''.join(out).encode()


def torchtune(trace):
    out = ['INFO:torchtune.utils._logging:Running FullFinetuneRecipeSingleDevice with resolved config:\n']
    for r in trace:
        out.append('Step %d | loss:%r lr:%r tokens_per_second_per_gpu:%r grad_norm:%r '
                   'peak_memory_alloc:12.5 \n'
                   % (r['step'], r['loss'], r['lr'], r['throughput'], r['grad_norm']))
    return ''.join(out).encode()


def torchtune_bar(trace, redraws=2):
    segs = []
    for r in trace:
        for k in range(redraws):
            segs.append('1|%d|Loss: %r:  %2d%%|#         | %d/%d [00:%02d<19:49,  1.20s/it]'
                        % (r['step'], r['loss'], r['step'] * 100 // 5000, r['step'], 5000, k))
    return ('\r'.join(segs) + '\n').encode()


def plain_csv(trace, step_col='iteration'):
    out = ['%s,loss,grad_norm,lr,tokens_per_sec,val_loss\n' % step_col]
    for r in trace:
        val = '%.4f' % (r['loss'] + 0.5) if r['step'] % 500 == 0 else 'NA'
        out.append('%d,%r,%r,%r,%r,%s\n' % (r['step'], r['loss'], r['grad_norm'], r['lr'],
                                              r['throughput'], val))
    return ''.join(out).encode()


def yolo(trace):
    """YOLOv5's table with its total column (the loss), a point per epoch
    redrawn twice, each epoch followed by its validation lines."""
    out = []
    for r in trace:
        out.append('    Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n')
        row = '%10s %9s %9.4g %9.4g %9.4g %9r %9d %9d: %3d%%|%-10s| %d/%d [00:30<00:00,  3.9it/s]'
        e = '%d/%d' % (r['step'], 20000)
        parts = (r['loss'] * 0.5, r['loss'] * 0.3, r['loss'] * 0.2, r['loss'], 28, 640)
        out.append('\r'.join([row % ((e, '5.2G') + parts + (50, '#####', 59, 118)),
                              row % ((e, '5.2G') + parts + (100, '#' * 10, 118, 118))]) + '\n')
        out.append('              Class     Images     Labels          P          R     mAP@.5 '
                   'mAP@.5:.95: 100%|##########| 4/4 [00:01<00:00,  3.1it/s]\n'
                   '                 all        128        929      0.641      0.561      0.612      0.447\n')
    return ''.join(out).encode()


def tfod(trace):
    """model_lib_v2.py's Step line and loss dict, from TensorFlow's logger
    and absl's."""
    out = []
    for k, r in enumerate(trace):
        d = ("{'Loss/classification_loss': %r,\n 'Loss/localization_loss': %r,\n"
             " 'Loss/regularization_loss': 0.15,\n 'Loss/total_loss': %r,\n 'learning_rate': %r}\n"
             % (r['loss'] * 0.6, r['loss'] * 0.4, r['loss'], r['lr']))
        t = 'I0526 10:%02d:%02d.123456 140000 model_lib_v2.py:' % (k // 60 % 60, k % 60)
        out.append('INFO:tensorflow:Step %d per-step time 0.527s\n' % r['step'])
        out.append(t + '705] Step %d per-step time 0.527s\n' % r['step'])
        out.append('INFO:tensorflow:' + d)
        out.append(t + '708] ' + d)
    return ''.join(out).encode()


def sb3(trace):
    """Stable-Baselines3's logger tables, the step its total_timesteps."""
    out = []
    for k, r in enumerate(trace):
        rows = [('rollout/', ''), ('   ep_rew_mean', '%.3g' % (100 - r['loss'])),
                ('time/', ''), ('   fps', '%d' % r['throughput']),
                ('   total_timesteps', '%d' % r['step']),
                ('train/', ''), ('   learning_rate', '%r' % r['lr']), ('   loss', '%r' % r['loss']),
                ('   n_updates', '%d' % (k + 1)), ('   value_loss', '%.3g' % (r['loss'] * 2))]
        w = max(len(v) for _, v in rows)
        line = '-' * (30 + w) + '\n'
        out.append(line)
        out.extend('| %-23s | %-*s |\n' % (n, w, v) for n, v in rows)
        out.append(line)
    return ''.join(out).encode()


def mlflow_run(trace, run_dir, run_name='brave-owl-42'):
    """The trace as MLflow's local file store keeps a run: one file per
    metric under metrics/ ("train/loss" in a subfolder), each line
    "<timestamp ms> <value> <step>", and meta.yaml naming the run."""
    files = {'train/loss': 'loss', 'grad_norm': 'grad_norm', 'lr': 'lr',
             'tokens_per_sec': 'throughput'}
    for name, key in files.items():
        path = os.path.join(run_dir, 'metrics', name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            for r in trace:
                f.write('%d %r %d\n' % (int(r['ts'] * 1000), r[key], r['step']))
    with open(os.path.join(run_dir, 'meta.yaml'), 'w') as f:
        f.write('artifact_uri: file:///mlruns/0/%s/artifacts\nend_time: null\nexperiment_id: \'0\'\n'
                'lifecycle_stage: active\nrun_id: %s\nrun_name: %s\nstatus: 1\n'
                % (os.path.basename(run_dir), os.path.basename(run_dir), run_name))


# name: (format gradwatch should see, printer)
SHAPES = {
    'fairseq_simple': ('fairseq', fairseq_simple),
    'fairseq_json': ('fairseq', fairseq_json),
    'torchtitan': ('torchtitan', torchtitan),
    'composer': ('composer', composer),
    'olmo': ('composer', olmo),
    'torchtune': ('torchtune', torchtune),
    'torchtune_bar': ('torchtune', torchtune_bar),
    'csv': ('csv', plain_csv),
    'yolo': ('ultralytics', yolo),
    'tfod': ('tf_objdet', tfod),
    'sb3': ('sb3', sb3),
}


def out_lines(r):
    """The lines a command wrote, without convert's closing run_finished
    (end_of_log) lines (a log's runs end with it: docs/wire-format.md)."""
    return [l for l in r.stdout.decode().splitlines() if '"reason":"end_of_log"' not in l]


def without_end(lines):
    """convert's lines without the run_finished (end_of_log) it writes last,
    one per run, after checking they are there."""
    runs = []
    for d in lines:
        if d.get('run') not in runs and not ('event' in d and d.get('reason') == 'end_of_log'):
            runs.append(d.get('run'))
    ends = [d for d in lines if d.get('event') == 'run_finished' and d.get('reason') == 'end_of_log']
    assert [d['run'] for d in ends] == runs, (runs, ends)
    assert lines[len(lines) - len(ends):] == ends, 'the end-of-log lines come last'
    return lines[:len(lines) - len(ends)]
