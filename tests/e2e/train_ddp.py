"""A tiny data-parallel job for tests/integration/test_ddp_torch.py: N
processes started by torch.multiprocessing.spawn, a gloo process group on
CPU, a linear model in DistributedDataParallel, SGD; every process runs the
same loop with a gradwatch.Client, as a user's script would (the client is
made before the process group exists: it finds its rank at the first line).
Rank 0 saves a checkpoint at --save-at.  Each process writes its client's
stats() and repr to OUT/stats-<rank>.json."""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, a):
    import gradwatch
    gw = gradwatch.Client(run=a.run, address=a.address, udp='', http=a.http,
                          all_ranks=a.all_ranks)
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(a.port)
    dist.init_process_group('gloo', rank=rank, world_size=a.procs)
    torch.manual_seed(1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)   # each rank its own data shard
    w = torch.arange(8, dtype=torch.float32) / 8
    for step in range(1, a.steps + 1):
        x = torch.randn(16, 8, generator=g)
        y = x @ w
        loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
        opt.step()
        gw.log(step, loss=loss.detach(), grad_norm=gn, lr=0.05)
        if step == a.save_at:
            gw.checkpoint_saved(step, model, opt)
    gw.close()
    with open(os.path.join(a.out, 'stats-%d.json' % rank), 'w') as f:
        json.dump({'stats': gw.stats(), 'repr': repr(gw)}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--run', required=True)
    ap.add_argument('--address', required=True)
    ap.add_argument('--http', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--procs', type=int, default=3)
    ap.add_argument('--steps', type=int, default=60)
    ap.add_argument('--save-at', type=int, default=40)
    ap.add_argument('--all-ranks', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(1)
    mp.spawn(worker, args=(a,), nprocs=a.procs, join=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
