#!/usr/bin/env python3
"""Write examples/resume-without-optimizer.jsonl, the trace the README replays.

A made-up pretraining run (AdamW, cosine LR, a checkpoint every 250 steps,
metric lines only, no events): it crashes at step 1,040, is restarted from the
checkpoint at step 1,000 with the model weights but a fresh optimizer, and
replays steps 1,001..1,040.  After the restart the loss climbs from ~1.2 to
~2.2 while the grad norm falls from ~0.6 to ~0.25, LR and throughput
unchanged: the signature of the Genesis postmortem.  Later an fp16 overflow
writes NaN for two steps.  Deterministic (fixed seed), standard library only.
"""
import json
import math
import os
import random

rng = random.Random(8500)
out = []
run = 'example-gpt-1b'
t = 1_800_000_000.0
total, ckpt, crash = 1600, 1000, 1040


def lr_at(step):
    warm = 100
    if step <= warm:
        return 3e-4 * step / warm
    p = (step - warm) / (total - warm)
    return 3e-5 + 0.5 * (3e-4 - 3e-5) * (1 + math.cos(math.pi * p))


def emit(step, loss, gn):
    global t
    t += 0.45 + rng.random() * 0.05
    out.append({'run': run, 'step': step, 'ts': round(t, 3), 'loss': loss, 'grad_norm': gn,
                'lr': float('%.6g' % lr_at(step)), 'throughput': round(rng.gauss(18200, 150), 1)})


def healthy(step):
    base = 1.15 + 2.2 * math.exp(-step / 180)
    return (round(base * math.exp(rng.gauss(0, 0.045)), 5),
            round((0.6 + 0.9 * math.exp(-step / 120)) * math.exp(rng.gauss(0, 0.08)), 5))


for s in range(1, crash + 1):
    emit(s, *healthy(s))
t += 540  # the crash, the scheduler, the reload
for s in range(ckpt + 1, total + 1):
    k = s - ckpt
    loss, gn = healthy(s)
    ramp = min(1.0, k / 12)
    loss = round(loss * (1 + 0.85 * ramp), 5)
    gn = round(gn * (1 - 0.58 * ramp) * (1.9 if k == 1 else 1.0), 5)
    if s in (1420, 1421):
        loss, gn = float('nan'), float('nan')
    emit(s, loss, gn)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'resume-without-optimizer.jsonl')
with open(path, 'w') as f:
    for rec in out:
        f.write(json.dumps(rec) + '\n')
print('%s: %d lines' % (path, len(out)))
