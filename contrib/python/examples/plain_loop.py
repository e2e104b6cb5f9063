"""A plain PyTorch training loop with gradwatch: three lines in the loop,
one after saving a checkpoint, one after loading it.

    python3 plain_loop.py --steps 200 --ckpt /tmp/ckpt.pt          # train, checkpoint every 50 steps
    python3 plain_loop.py --steps 300 --ckpt /tmp/ckpt.pt --resume # resume from it

With gradwatchd running on its defaults (./gradwatch.sock, HTTP on
127.0.0.1:7471) or GRADWATCH_SOCKET / GRADWATCH_URL set (see docs/integrations.md).
"""
import argparse
import os
import time

import torch
import torch.nn as nn

import gradwatch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--run', default='plain-loop')
    ap.add_argument('--steps', type=int, default=200)
    ap.add_argument('--ckpt', default='plain-loop.pt')
    ap.add_argument('--every', type=int, default=50)
    ap.add_argument('--resume', action='store_true')
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gw = gradwatch.Client(run=a.run)                                   # 1: connect

    start = 0
    if a.resume and os.path.exists(a.ckpt):
        ckpt = torch.load(a.ckpt)
        model.load_state_dict(ckpt['model'])
        opt.load_state_dict(ckpt['optimizer'])
        start = ckpt['step']
        # record the resume and ask the gate: raises gradwatch.ResumeError
        # if what is live now is not what the checkpoint saved
        gw.resumed(start, model, opt, optimizer_state_loaded=True, check=True)

    w = torch.randn(16, 1)
    for step in range(start + 1, a.steps + 1):
        t0 = time.perf_counter()
        g = torch.Generator().manual_seed(step)
        x = torch.randn(32, 16, generator=g)
        y = x @ w + 0.1 * torch.randn(32, 1, generator=g)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        gn = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        gw.log(step, loss=loss.item(), grad_norm=gn.item(),             # 2: every step
               lr=opt.param_groups[0]['lr'], throughput=32 / (time.perf_counter() - t0))
        if step % a.every == 0:
            torch.save({'model': model.state_dict(), 'optimizer': opt.state_dict(), 'step': step}, a.ckpt)
            gw.checkpoint_saved(step, model, opt)                          # 3: after saving
    gw.close()          # sends run_finished: the silence after it is no stall
    print(gw.stats())


if __name__ == '__main__':
    main()
