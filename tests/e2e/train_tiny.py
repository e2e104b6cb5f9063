"""A real (small) PyTorch training job for the end-to-end test: a
character-level pre-LayerNorm transformer on a local text, AdamW, CPU, every
step sent to gradwatchd through the gradwatch client.

One process trains from --start (0, or the checkpoint's step when resuming)
up to --steps.  --save-at S writes a checkpoint after step S;
--crash-at T ends the process abruptly after step T (exit status 3), as a
crash would (what the client had queued is flushed first, as the kernel
would still deliver what a crashed process had written to a socket).

--resume full        model and optimizer restored (a correct resume)
--resume model-only  the model restored, the optimizer fresh (the fault);
                     the resume code still believes it loaded the state
Learning rate and data order are functions of the step, so both are
restored in either mode, and a correct resume reproduces the replayed steps.

--no-events sends metrics only (no checkpoint_saved/resumed).
--check-resume asks the resume gate after resuming and prints one JSON
line {"gate": "ok"} or {"gate": "ResumeError", "differences": [...]}.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn

import gradwatch


class TinyLM(nn.Module):
    def __init__(self, vocab, d, layers, heads, ctx):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        mask = torch.triu(torch.full((ctx, ctx), float('-inf')), diagonal=1)
        self.register_buffer('mask', mask)

    def forward(self, x):
        t = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(t, device=x.device))
        h = self.blocks(h, mask=self.mask[:t, :t])
        return self.head(self.norm(h))


def lr_at(step, peak, warmup, total):
    if step <= warmup:
        return peak * step / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def batch_at(data, step, seed, batch, ctx):
    g = torch.Generator().manual_seed(seed * 1000003 + step)
    idx = torch.randint(0, len(data) - ctx - 1, (batch,), generator=g)
    x = torch.stack([data[i:i + ctx] for i in idx])
    y = torch.stack([data[i + 1:i + ctx + 1] for i in idx])
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--run', required=True)
    ap.add_argument('--address', required=True)
    ap.add_argument('--http', required=True)
    ap.add_argument('--udp', default='')
    ap.add_argument('--jsonl')
    ap.add_argument('--text', required=True, nargs='+')
    ap.add_argument('--ckpt', required=True)
    ap.add_argument('--steps', type=int, required=True)
    ap.add_argument('--total', type=int, default=400, help='schedule length')
    ap.add_argument('--save-at', type=int)
    ap.add_argument('--crash-at', type=int)
    ap.add_argument('--resume', choices=('full', 'model-only'))
    ap.add_argument('--no-events', action='store_true')
    ap.add_argument('--check-resume', action='store_true')
    ap.add_argument('--lr', type=float, default=3e-3)
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--ctx', type=int, default=32)
    ap.add_argument('--d', type=int, default=32)
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--heads', type=int, default=2)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    text = ''.join(open(p, encoding='utf-8', errors='replace').read() for p in a.text)
    vocab = sorted(set(text))
    data = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)

    model = TinyLM(len(vocab), a.d, a.layers, a.heads, a.ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.05)
    gw = gradwatch.Client(run=a.run, address=a.address, http=a.http, udp=a.udp or None,
                          jsonl=a.jsonl, events=not a.no_events)
    start = 0
    if a.resume:
        ckpt = torch.load(a.ckpt)
        model.load_state_dict(ckpt['model'])
        if a.resume == 'full':
            opt.load_state_dict(ckpt['opt'])
        start = ckpt['step']
        for g in opt.param_groups:
            g['lr'] = lr_at(start, a.lr, 20, a.total)
        # the fault's resume code believes it restored the optimizer either way
        gw.resumed(start, model, opt, optimizer_state_loaded=True)
        if a.check_resume:
            try:
                gw.check_resume(model, opt, optimizer_state_loaded=True, required=True)
                print(json.dumps({'gate': 'ok'}), flush=True)
            except gradwatch.ResumeError as e:
                print(json.dumps({'gate': 'ResumeError', 'message': str(e),
                                  'differences': e.differences}), flush=True)

    lossf = nn.CrossEntropyLoss()
    for step in range(start + 1, a.steps + 1):
        t0 = time.perf_counter()
        lr = lr_at(step, a.lr, 20, a.total)
        for g in opt.param_groups:
            g['lr'] = lr
        x, y = batch_at(data, step, a.seed, a.batch, a.ctx)
        logits = model(x)
        loss = lossf(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        gw.log(step, loss=loss.item(), grad_norm=gn.item(), lr=lr, throughput=a.batch / dt)
        if a.save_at == step:
            torch.save({'model': model.state_dict(), 'opt': opt.state_dict(), 'step': step}, a.ckpt)
            gw.checkpoint_saved(step, model, opt)
        if a.crash_at == step:
            gw.flush(10)
            print(json.dumps({'crashed_at': step, 'client': gw.stats()}), flush=True)
            os._exit(3)
    gw.close()
    print(json.dumps({'finished_at': a.steps, 'client': gw.stats()}), flush=True)


if __name__ == '__main__':
    sys.exit(main())
