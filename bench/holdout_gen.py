"""An independent holdout: new real PyTorch training runs on CPU, made the
way ../shared/eval/README.md describes the evaluation corpus, written as
traces plus a labels.json in the same format.  A generator, not a test.

    /usr/bin/python3 bench/holdout_gen.py --seed 101 --out /tmp/holdout-101
    python3 ../shared/eval/score.py /tmp/holdout-101 --quiet -- \\
        build/cli/gradwatch replay --format jsonl

(/usr/bin/python3: Debian's python3-torch; run single-threaded.)

How a trace is made.  Every run is real training of a small model:
  - MLP: depth 2-4, width 96-192, LayerNorm or not, relu/gelu, batch
    32/64/128, on an endless synthetic classification stream (32 inputs,
    10 classes; labels sampled from the softmax of a fixed random teacher
    MLP, so the loss has an irreducible floor and real batch noise);
  - char-LM: a pre-LN transformer, d64 or d96, 2-3 layers, 4 heads,
    context 64, batch 16/32, over the text of /usr/share/common-licenses.
The batch of step s is a pure function of (seed, s), so a restart from a
checkpoint replays exactly the data the run saw, and a counterfactual
sees the same data as the faulty continuation.  Optimizers AdamW, Adam,
SGD (momentum 0.9), NAdam, RMSprop; schedules constant, warmup+cosine
(warmup 100-200, min ratio 0-0.1) and step decay (two milestones, gamma
0.1/0.3), optional grad clipping at 1.0 (grad_norm is the norm before
clipping).  Checkpoints every 250 or 500 steps are real torch.save()s
(model, optimizer, scheduler) to memory; a restart builds a new model,
optimizer and scheduler and loads them (torch.load), with the fault
applied where the fault class says.  The crash T is 0-200 steps after the
checkpoint S it restarts from, the ts gap 60-900 s.

Counterfactual: from the same point (the checkpoint, restored correctly;
or, for mid-run faults, the state just before the onset) the run is
continued without the fault for 300 steps on the same batches; the
effect sizes, `detectable` and `evidence` follow the README's definitions
exactly (effect(): 10-step rolling means, noise = std of consecutive
differences of the counterfactual / sqrt 2, signed value of largest
magnitude).

Signature-injected traces (README: `synthetic` as a string) are made the
README's way from a clean run of the same set: a restart from one of its
own steps with loss x (1 + a), grad norm x (1 - b) ramping in over 1-30
steps, persisting or healing over 80-400 steps, sometimes a grad-norm
spike; their negative twin is a correct restart with a larger batch
(grad norm x 0.55-0.7, loss noise shrunk around its level).

Choices (my judgement of "made the same way", not fitted to the dev
traces' numbers): hyperparameter ranges from the README and the dev
labels' descriptions; one fault per trace; the fault's restart in the
second half of the run so that there is a settled regime before it.
loss, grad_norm and lr are deterministic from the seed (torch on one
thread).  ts and throughput come from the CPU time each step really took
(time.process_time, not the wall clock): on a machine shared with other
jobs the wall clock carries their load (a first generation here showed
"throughput collapsed to 30 %" stalls that were a compiler next door),
which is no property of the training; CPU time is what a quiet machine's
wall clock would show, and still varies a little between generations.
"""

import argparse
import hashlib
import io
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT_DIR = "/usr/share/common-licenses"


# ------------------------------------------------------------------ data

def load_text():
    parts = []
    for name in sorted(os.listdir(TEXT_DIR)):
        p = os.path.join(TEXT_DIR, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                parts.append(f.read().decode("ascii", "ignore"))
    text = "\n".join(parts)
    chars = sorted(set(text))
    idx = {c: i for i, c in enumerate(chars)}
    return torch.tensor([idx[c] for c in text], dtype=torch.long), len(chars)


class MLPTask:
    def __init__(self, seed, din=32, ncls=10):
        g = torch.Generator().manual_seed(seed * 7919 + 1)
        self.seed, self.din = seed, din
        self.w1 = torch.randn(din, 64, generator=g) / math.sqrt(din)
        self.w2 = torch.randn(64, ncls, generator=g) * 0.6
        self.ncls = ncls

    def batch(self, step, bs):
        g = torch.Generator().manual_seed(self.seed * 1000003 + step)
        x = torch.randn(bs, self.din, generator=g)
        logits = torch.tanh(x @ self.w1) @ self.w2 * 2.5
        y = torch.multinomial(F.softmax(logits, -1), 1, generator=g)[:, 0]
        return x, y


class LMTask:
    def __init__(self, seed, data, ctx=64):
        self.seed, self.data, self.ctx = seed, data, ctx

    def batch(self, step, bs):
        g = torch.Generator().manual_seed(self.seed * 1000003 + step)
        ix = torch.randint(0, len(self.data) - self.ctx - 1, (bs,), generator=g)
        x = torch.stack([self.data[i:i + self.ctx] for i in ix])
        y = torch.stack([self.data[i + 1:i + 1 + self.ctx] for i in ix])
        return x, y


# ---------------------------------------------------------------- models

class MLP(nn.Module):
    def __init__(self, din, width, depth, ncls, ln, act):
        super().__init__()
        dims = [din] + [width] * depth
        self.fcs = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(depth))
        self.lns = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth)) if ln else None
        self.act = F.gelu if act == "gelu" else F.relu
        self.head = nn.Linear(width, ncls)

    def forward(self, x, y):
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if self.lns is not None:
                x = self.lns[i](x)
            x = self.act(x)
        return F.cross_entropy(self.head(x), y)


class Block(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.nh = nh

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        sh = lambda z: z.view(b, t, self.nh, d // self.nh).transpose(1, 2)  # noqa: E731
        q, k, v = sh(q), sh(k), sh(v)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.nh)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class CharLM(nn.Module):
    def __init__(self, vocab, d, layers, ctx):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, 4) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, x, y):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        for blk in self.blocks:
            h = blk(h)
        logits = self.head(self.lnf(h))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


# ------------------------------------------------------------ optimizers

def make_opt(spec, params):
    n, lr = spec["name"], spec["lr"]
    if n == "AdamW":
        return torch.optim.AdamW(params, lr=lr, betas=tuple(spec["betas"]), eps=spec.get("eps", 1e-8),
                                 weight_decay=spec["wd"])
    if n == "Adam":
        return torch.optim.Adam(params, lr=lr, betas=tuple(spec["betas"]), eps=spec.get("eps", 1e-8),
                                weight_decay=spec["wd"])
    if n == "NAdam":
        return torch.optim.NAdam(params, lr=lr, betas=tuple(spec["betas"]), eps=spec.get("eps", 1e-8),
                                 weight_decay=spec["wd"])
    if n == "SGD":
        return torch.optim.SGD(params, lr=lr, momentum=spec["momentum"], weight_decay=spec["wd"])
    if n == "RMSprop":
        return torch.optim.RMSprop(params, lr=lr, alpha=spec.get("alpha", 0.99), eps=spec.get("eps", 1e-8),
                                   weight_decay=spec["wd"], momentum=spec.get("momentum", 0.0))
    raise ValueError(n)


def opt_desc(spec, clip):
    n = spec["name"]
    if n == "SGD":
        s = "SGD(lr=%g, momentum=%g, wd=%g)" % (spec["lr"], spec["momentum"], spec["wd"])
    elif n == "RMSprop":
        s = "RMSprop(lr=%g, alpha=%g, wd=%g)" % (spec["lr"], spec.get("alpha", 0.99), spec["wd"])
    else:
        s = "%s(lr=%g, betas=(%g,%g), wd=%g)" % (n, spec["lr"], spec["betas"][0], spec["betas"][1], spec["wd"])
    return s + (" clip=1.0" if clip else "")


def hparams(opt):
    g = opt.param_groups[0]
    name = type(opt).__name__
    r = lambda v: float("%.6g" % v)  # noqa: E731
    if name in ("Adam", "AdamW", "NAdam"):
        h = {"lr": r(g["lr"]), "betas": [g["betas"][0], g["betas"][1]], "weight_decay": g["weight_decay"],
             "eps": g["eps"]}
        if name == "NAdam":
            h["momentum_decay"] = g["momentum_decay"]
        return h
    if name == "SGD":
        return {"lr": r(g["lr"]), "momentum": g["momentum"], "dampening": g["dampening"],
                "weight_decay": g["weight_decay"], "nesterov": g["nesterov"]}
    return {"lr": r(g["lr"]), "alpha": g["alpha"], "eps": g["eps"], "weight_decay": g["weight_decay"],
            "momentum": g["momentum"]}


def state_keys(opt):
    keys = set()
    for st in opt.state.values():
        keys.update(k for k, v in st.items() if v is not None)
    return sorted(keys)


def schedule_fn(sched, total):
    kind = sched["kind"]
    if kind == "constant":
        return lambda e: 1.0
    if kind == "warmup_cosine":
        w, m = sched["warmup"], sched["min_ratio"]

        def f(e):
            if e < w:
                return (e + 1) / w
            p = min(1.0, (e - w) / max(1, total - w))
            return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p))
        return f
    ms, gm = sched["milestones"], sched["gamma"]
    return lambda e: gm ** sum(1 for x in ms if e + 1 >= x)


def sched_desc(s):
    if s["kind"] == "constant":
        return "constant"
    if s["kind"] == "warmup_cosine":
        return "warmup_cosine(warmup=%d, min_ratio=%g)" % (s["warmup"], s["min_ratio"])
    return "step(milestones=%s, gamma=%g)" % (s["milestones"], s["gamma"])


# ------------------------------------------------------------- the run

class Run:
    """One training process: model, optimizer, scheduler, step counter."""

    def __init__(self, cfg, task, param_perm=None):
        self.cfg, self.task = cfg, task
        torch.manual_seed(cfg["seed"])
        if cfg["kind"] == "mlp":
            self.model = MLP(task.din, cfg["width"], cfg["depth"], task.ncls, cfg["ln"], cfg["act"])
        else:
            self.model = CharLM(cfg["vocab"], cfg["d"], cfg["layers"], 64)
        named = list(self.model.named_parameters())
        if param_perm is not None:
            named = [named[i] for i in param_perm]
        self.names = [n for n, _ in named]
        self.opt = make_opt(cfg["opt"], [p for _, p in named])
        self.sfn = schedule_fn(cfg["sched"], cfg["steps"])
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, self.sfn)
        self.bs = cfg["bs"]

    def names_sha(self):
        return hashlib.sha256("\n".join(self.names).encode()).hexdigest()

    def step(self, s, lr_mult=1.0, poison=None):
        """Train step s (1-based); returns (loss, grad_norm, lr, samples/s)."""
        t0 = time.process_time()
        x, y = self.task.batch(s, self.bs)
        lr = self.opt.param_groups[0]["lr"]
        for g in self.opt.param_groups:
            g["lr"] = lr * lr_mult
        self.opt.zero_grad(set_to_none=True)
        loss = self.model(x, y)
        if poison is not None:
            loss = loss * poison
        loss.backward()
        ps = [p for p in self.model.parameters() if p.grad is not None]
        if self.cfg["clip"]:
            gn = float(torch.nn.utils.clip_grad_norm_(ps, 1.0))
        else:
            gn = float(torch.norm(torch.stack([p.grad.detach().norm() for p in ps])))
        lv = float(loss)
        if math.isfinite(lv) and math.isfinite(gn):
            self.opt.step()
        for g in self.opt.param_groups:
            g["lr"] = lr
        self.sched.step()
        dt = time.process_time() - t0
        return lv, gn, lr * lr_mult, lr, self.bs / max(dt, 1e-6), dt

    def save(self):
        buf = io.BytesIO()
        torch.save({"model": self.model.state_dict(), "opt": self.opt.state_dict(),
                    "sched": self.sched.state_dict(), "names": self.names}, buf)
        return buf.getvalue()


def fmt(v):
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return "%.6g" % v


class Writer:
    def __init__(self, run_id, t0, events):
        self.run_id, self.ts, self.events = run_id, t0, events
        self.lines = []

    def metric(self, s, loss, gn, lr, tp, dt):
        self.ts += dt
        self.lines.append('{"run":"%s","step":%d,"ts":%.3f,"loss":%s,"grad_norm":%s,"lr":%s,"throughput":%.1f}'
                          % (self.run_id, s, self.ts, fmt(loss), fmt(gn), fmt(lr), tp))

    def event(self, s, ev, run, **extra):
        if not self.events:
            return
        o = {"run": self.run_id, "step": s, "ts": round(self.ts + 0.001, 3), "event": ev}
        if ev == "resumed":
            o["checkpoint_step"] = extra["checkpoint_step"]
        o.update({"optimizer": type(run.opt).__name__, "param_names_sha256": run.names_sha(),
                  "optimizer_state_keys": state_keys(run.opt)})
        if ev == "resumed":
            o["optimizer_state_loaded"] = extra.get("optimizer_state_loaded", True)
        o["hparams"] = hparams(run.opt)
        self.lines.append(json.dumps(o, separators=(",", ":")))


# ------------------------------------------------------------- effects

def effect(faulty, cf):
    """README's effect size: signed largest |rolling10(faulty) - rolling10(cf)|
    over the 300 steps after the onset, in units of the cf's per-step noise."""
    n = min(len(faulty), len(cf), 300)
    if n < 20:
        return None
    a, b = faulty[:n], cf[:n]
    if not all(math.isfinite(v) for v in a + b):
        return None
    d = [b[i + 1] - b[i] for i in range(n - 1)]
    m = sum(d) / len(d)
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1)) / math.sqrt(2)
    if sd <= 0:
        return None
    best = 0.0
    for i in range(n - 9):
        v = (sum(a[i:i + 10]) - sum(b[i:i + 10])) / 10 / sd
        if abs(v) > abs(best):
            best = v
    return round(best, 2)


def mean(v):
    v = [x for x in v if math.isfinite(x)]
    return round(sum(v) / len(v), 5) if v else None


# ------------------------------------------------------------ configs

def rand_cfg(rng, kind, seed):
    cfg = {"seed": seed, "kind": kind, "clip": rng.random() < 0.5}
    if kind == "mlp":
        cfg.update(width=rng.choice([96, 128, 192]), depth=rng.choice([2, 3, 3, 4]),
                   ln=rng.random() < 0.5, act=rng.choice(["relu", "gelu"]), bs=rng.choice([32, 32, 64, 128]),
                   steps=rng.choice([3000, 3500, 4000]), ckpt=rng.choice([250, 500]))
    else:
        cfg.update(d=rng.choice([64, 64, 96]), layers=rng.choice([2, 2, 2, 3]), bs=rng.choice([16, 16, 16, 32]),
                   steps=rng.choice([2000, 2200, 2400]), ckpt=rng.choice([250, 500]))
    on = rng.choice(["AdamW", "AdamW", "Adam", "SGD", "NAdam", "RMSprop"])
    if on == "SGD":
        lr = rng.choice([0.03, 0.05, 0.1]) if kind == "mlp" else rng.choice([0.1, 0.2])
        cfg["opt"] = {"name": "SGD", "lr": lr, "momentum": 0.9, "wd": rng.choice([0.0, 5e-4])}
    elif on == "RMSprop":
        cfg["opt"] = {"name": "RMSprop", "lr": rng.choice([3e-4, 1e-3]), "alpha": 0.99, "wd": 0.0}
    else:
        cfg["opt"] = {"name": on, "lr": rng.choice([1e-3, 2e-3, 3e-3]),
                      "betas": [0.9, rng.choice([0.95, 0.999])],
                      "wd": rng.choice([0.01, 0.05, 0.1]) if on == "AdamW" else 0.0}
    sk = rng.choice(["constant", "constant", "warmup_cosine", "step"])
    cfg["sched"] = sched_for(rng, sk, cfg["steps"])
    return cfg


def sched_for(rng, sk, steps):
    if sk == "warmup_cosine":
        return {"kind": sk, "warmup": rng.choice([100, 150, 200]), "min_ratio": rng.choice([0.0, 0.05, 0.1])}
    if sk == "step":
        return {"kind": sk, "milestones": [int(steps * 0.6), int(steps * 0.85)], "gamma": rng.choice([0.1, 0.3])}
    return {"kind": "constant"}


def model_desc(cfg):
    if cfg["kind"] == "mlp":
        return "MLP %dx%d %s %s B%d" % (cfg["depth"], cfg["width"], "LayerNorm" if cfg["ln"] else "no-LN",
                                        cfg["act"], cfg["bs"])
    return "char-LM pre-LN transformer d%d L%d ctx64 B%d" % (cfg["d"], cfg["layers"], cfg["bs"])


# ---------------------------------------------------------- one trace

RESTART = {"optimizer_reset", "optimizer_swap", "param_order_shuffle", "scheduler_reset", "hparam_change",
           "poisoned_weights", "good_resume", "batch_size_change"}
EXPECT = {
    "optimizer_reset": ["optimizer_reset", "resume_regression", "resume_mismatch"],
    "optimizer_swap": ["resume_mismatch", "optimizer_reset", "resume_regression"],
    "param_order_shuffle": ["resume_mismatch", "resume_regression", "optimizer_reset"],
    "scheduler_reset": ["lr_schedule", "resume_regression"],
    "poisoned_weights": ["resume_regression", "loss_spike"],
    "divergence": ["loss_spike", "grad_explosion", "nonfinite"],
    "nan_injection": ["nonfinite"],
}


def same_shape_perm(run, rng):
    """A permutation of the parameter list that moves tensors only among
    tensors of the same shape (so positional state loading succeeds)."""
    params = [p for _, p in run.model.named_parameters()]
    groups = {}
    for i, p in enumerate(params):
        groups.setdefault(tuple(p.shape), []).append(i)
    perm = list(range(len(params)))
    for idx in groups.values():
        if len(idx) > 1:
            sh = idx[:]
            while sh == idx:
                rng.shuffle(sh)
            for a, b in zip(idx, sh):
                perm[a] = b
    return perm


def make_trace(rng, fault, events, kind, seed, lm_data):
    cfg = rand_cfg(rng, kind, seed)
    if fault == "scheduler_reset" and cfg["sched"]["kind"] == "constant":
        cfg["sched"] = sched_for(rng, rng.choice(["warmup_cosine", "step"]), cfg["steps"])
    if fault == "optimizer_swap":  # AdamW <-> SGD with momentum
        if rng.random() < 0.5:
            cfg["opt"] = {"name": "AdamW", "lr": rng.choice([1e-3, 2e-3, 3e-3]), "betas": [0.9, 0.95],
                          "wd": rng.choice([0.01, 0.05])}
        else:
            cfg["opt"] = {"name": "SGD", "lr": rng.choice([0.03, 0.05, 0.1]), "momentum": 0.9, "wd": 0.0}
    if fault == "hparam_change" and cfg["opt"]["name"] in ("SGD", "RMSprop"):
        cfg["opt"] = {"name": rng.choice(["AdamW", "Adam"]), "lr": rng.choice([1e-3, 3e-3]),
                      "betas": [0.9, rng.choice([0.95, 0.999])], "wd": 0.05}
        if cfg["opt"]["name"] == "Adam":
            cfg["opt"]["wd"] = 0.0
    if kind == "lm":
        cfg["vocab"] = lm_data[1]
        task = LMTask(seed, lm_data[0])
    else:
        task = MLPTask(seed)
    N, K = cfg["steps"], cfg["ckpt"]
    run_id = "run-" + hashlib.sha256(("holdout%d" % seed).encode()).hexdigest()[:10]
    w = Writer(run_id, 1754000000.0 + rng.uniform(0, 3e6), events)
    t_start = time.perf_counter()
    label = {"run": run_id, "fault": fault, "has_events": events, "model": model_desc(cfg),
             "optimizer": opt_desc(cfg["opt"], cfg["clip"]), "schedule": sched_desc(cfg["sched"]),
             "checkpoint_every": K, "steps": N, "fault_params": {}, "note": ""}
    run = Run(cfg, task)
    ckpts = {}
    fp = label["fault_params"]

    def train(r, s, **kw):
        lv, gn, lr_used, lr_nom, tp, dt = r.step(s, **kw)
        return lv, gn, lr_used, lr_nom, tp, dt

    if fault in RESTART:
        cks = [k for k in range(K, N - 350, K) if k >= N * 0.4]
        S = rng.choice(cks)
        T = S + (0 if rng.random() < 0.15 else rng.randint(1, 200))
        gap = round(rng.uniform(60, 900), 1)
        fp.update(ckpt_step=S, crash_step=T, gap=gap)
        logged = {}
        for s in range(1, T + 1):
            lv, gn, lu, ln_, tp, dt = train(run, s)
            w.metric(s, lv, gn, lu, tp, dt)
            if s % K == 0:
                ckpts[s] = run.save()
                w.event(s, "checkpoint_saved", run)
            if s == S:
                saved_ev = (type(run.opt).__name__, run.names_sha(), state_keys(run.opt), hparams(run.opt))
        last_lr_before = lu
        w.ts += gap
        blob = torch.load(io.BytesIO(ckpts[S]))
        # the counterfactual: a correct restore, same batches
        cf = Run(cfg, task)
        cf.model.load_state_dict(blob["model"])
        cf.opt.load_state_dict(blob["opt"])
        cf.sched.load_state_dict(blob["sched"])
        cf_loss, cf_gn = [], []
        for s in range(S + 1, min(N, S + 300) + 1):
            lv, gn, *_ = train(cf, s)
            cf_loss.append(lv)
            cf_gn.append(gn)
        blob = torch.load(io.BytesIO(ckpts[S]))
        loaded = True
        perm = None
        if fault == "param_order_shuffle":
            perm = same_shape_perm(run, rng)
            fp["moved"] = sum(1 for i, j in enumerate(perm) if i != j)
            fp["tensors"] = len(perm)
        if fault == "optimizer_swap":
            c2 = dict(cfg)
            if cfg["opt"]["name"] == "AdamW":
                c2["opt"] = {"name": "SGD", "lr": cfg["opt"]["lr"], "momentum": 0.9, "wd": 0.0}
            else:
                c2["opt"] = {"name": "AdamW", "lr": cfg["opt"]["lr"], "betas": [0.9, 0.999], "eps": 1e-8,
                             "wd": 0.05}
            fp["new_opt"] = c2["opt"]
            new = Run(c2, task)
        else:
            new = Run(cfg, task, param_perm=perm)
        if fault == "batch_size_change":
            new.bs = cfg["bs"] * 2 if rng.random() < 0.5 else cfg["bs"] // 2
            fp["new_batch"] = new.bs
        new.model.load_state_dict(blob["model"])
        if fault == "poisoned_weights":
            if rng.random() < 0.5:
                shapes = {}
                for n, p in new.model.named_parameters():
                    if p.dim() == 2:
                        shapes.setdefault(tuple(p.shape), []).append(n)
                pairs = [v for v in shapes.values() if len(v) > 1]
                if pairs:
                    a, b = rng.sample(rng.choice(pairs), 2)
                    sd = new.model.state_dict()
                    with torch.no_grad():
                        ta = sd[a].clone()
                        sd[a].copy_(sd[b])
                        sd[b].copy_(ta)
                    fp.update(mode="swap", swap=[a, b])
            if "mode" not in fp:
                scale = rng.choice([0.05, 0.1, 0.2, 0.3, 0.5])
                g = torch.Generator().manual_seed(seed + 17)
                with torch.no_grad():
                    for p in new.model.parameters():
                        rms = p.pow(2).mean().sqrt()
                        p.add_(torch.randn(p.shape, generator=g) * rms * scale)
                fp.update(mode="noise", scale=scale)
        if fault == "optimizer_reset":
            variant = rng.choice(["not_loaded", "not_loaded", "reported_loaded"])
            fp["variant"] = variant
            loaded = variant != "not_loaded"
        elif fault == "optimizer_swap":
            # the other class's state dict does not fit (its param_groups
            # lack this class's hyperparameters): the resume code catches
            # that and goes on with the fresh optimizer
            fp["load"] = "not loadable"
            loaded = False
        else:
            new.opt.load_state_dict(blob["opt"])
        if fault == "hparam_change":
            g0 = new.opt.param_groups
            ch = rng.choice(["betas", "eps", "weight_decay"])
            if ch == "betas":
                v = [0.9, 0.999] if g0[0]["betas"][1] != 0.999 else [0.9, 0.95]
                if rng.random() < 0.3:
                    v = [0.5, v[1]]
                for g in g0:
                    g["betas"] = tuple(v)
            elif ch == "eps":
                v = rng.choice([1e-3, 1e-4, 1e-6])
                for g in g0:
                    g["eps"] = v
            else:
                v = rng.choice([0.0, 0.1, 0.3]) if g0[0]["weight_decay"] != 0.3 else 0.0
                if v == g0[0]["weight_decay"]:
                    v = 0.5
                for g in g0:
                    g["weight_decay"] = v
            fp["change"] = {ch: v}
        if fault != "scheduler_reset":
            new.sched.load_state_dict(blob["sched"])
        # LambdaLR.load_state_dict leaves the groups' lr alone; the resume
        # code sets the live LR from the (restored or restarted) schedule
        for g, lr in zip(new.opt.param_groups, new.sched.get_last_lr()):
            g["lr"] = lr
        w.event(S, "resumed", new, checkpoint_step=S, optimizer_state_loaded=loaded)
        res = (type(new.opt).__name__, new.names_sha(), state_keys(new.opt), hparams(new.opt))
        resume_line = len(w.lines) if events else len(w.lines) + 1
        f_loss, f_gn = [], []
        first_lr = None
        for s in range(S + 1, N + 1):
            lv, gn, lu, ln_, tp, dt = train(new, s)
            if first_lr is None:
                first_lr = lu
            w.metric(s, lv, gn, lu, tp, dt)
            if s <= S + 300:
                f_loss.append(lv)
                f_gn.append(gn)
            if s % K == 0:
                w.event(s, "checkpoint_saved", new)
        label["note"] = "crash at step %d, restart from checkpoint %d (%d steps replayed), gap %.1fs" % (
            T, S, T - S, gap)
        onset_step, onset_line = S + 1, resume_line
        label["resume_line"] = resume_line
        ev_diff = False
        if events:
            h1 = {k: v for k, v in saved_ev[3].items() if k != "lr"}
            h2 = {k: v for k, v in res[3].items() if k != "lr"}
            ev_diff = res[:3] != saved_ev[:3] or not loaded or h1 != h2
        lr_jump = first_lr / last_lr_before if last_lr_before > 0 else 1.0
        fp["lr_jump"] = round(lr_jump, 3)
    else:
        label["resume_line"] = None
        onset = rng.randint(int(N * 0.35), int(N * 0.75))
        fp["onset"] = onset
        if fault == "divergence":
            fp.update(mult=float(rng.choice([10, 15, 20, 30])), length=rng.randint(5, 20),
                      lr_logged=rng.choice(["nominal", "actual"]))
        if fault == "nan_injection":
            k = rng.randint(1, 4)
            st = list(range(onset, onset + k))
            if rng.random() < 0.5:
                s2 = onset + rng.randint(50, 400)
                st += list(range(s2, s2 + rng.randint(1, 2)))
            fp.update(mode=rng.choice(["nan", "inf"]), steps=st)
        f_loss, f_gn, cf_loss, cf_gn = [], [], [], []
        for s in range(1, N + 1):
            if s == onset and fault != "nan_injection":
                cf = Run(cfg, task)
                blob = run.save()
                b = torch.load(io.BytesIO(blob))
                cf.model.load_state_dict(b["model"])
                cf.opt.load_state_dict(b["opt"])
                cf.sched.load_state_dict(b["sched"])
                for s2 in range(onset, min(N, onset + 299) + 1):
                    lv, gn, *_ = train(cf, s2)
                    cf_loss.append(lv)
                    cf_gn.append(gn)
            kw = {}
            if fault == "divergence" and onset <= s < onset + fp["length"]:
                kw["lr_mult"] = fp["mult"]
            if fault == "nan_injection" and s in fp["steps"]:
                kw["poison"] = float("nan") if fp["mode"] == "nan" else float("inf")
            if fault == "lr_decay_step" and s >= onset:
                kw["lr_mult"] = 0.1
            lv, gn, lu, ln_, tp, dt = train(run, s, **kw)
            if fault == "divergence" and fp["lr_logged"] == "nominal":
                lu = ln_
            w.metric(s, lv, gn, lu, tp, dt)
            if s >= onset and len(f_loss) < 300:
                f_loss.append(lv)
                f_gn.append(gn)
            if s % K == 0:
                w.event(s, "checkpoint_saved", run)
        onset_step, onset_line = onset, None
        for i, ln in enumerate(w.lines):
            o = json.loads(ln)
            if o["step"] == onset and "event" not in o:
                onset_line = i + 1
                break
        if fault == "divergence":
            label["note"] = "LR x%g for %d steps from step %d; logged lr is the %s LR" % (
                fp["mult"], fp["length"], onset, fp["lr_logged"])
        elif fault == "nan_injection":
            label["note"] = "non-finite at steps %s (%s); optimizer step skipped there" % (fp["steps"], fp["mode"])
        elif fault == "lr_decay_step":
            label["note"] = "legitimate LR x0.1 from step %d" % onset
        ev_diff, lr_jump = False, 1.0
    negative = fault in ("none", "good_resume", "lr_decay_step", "batch_size_change")
    if fault in ("none", "nan_injection"):
        eff = {"loss": None, "grad_norm": None}
    else:
        eff = {"loss": effect(f_loss, cf_loss), "grad_norm": effect(f_gn, cf_gn)}
    if fault == "none":
        fp.clear()
    evidence = []
    dm = any(v is not None and abs(v) >= 3 for v in eff.values())
    if not negative:
        if dm:
            evidence.append("metrics")
        if ev_diff:
            evidence.append("events")
        if fault == "scheduler_reset" and (lr_jump > 1.5 or lr_jump < 1 / 1.5):
            evidence.append("lr")
        if fault == "nan_injection" or not all(math.isfinite(v) for v in f_loss + f_gn):
            evidence.append("nonfinite")
    if fault == "hparam_change":
        expect = ["resume_mismatch"] if events else ["resume_regression", "optimizer_reset"]
    else:
        expect = EXPECT.get(fault, [])
    label.update(onset_step=None if negative else onset_step, onset_line=None if negative else onset_line,
                 expect=expect, detectable=None if negative else bool(evidence),
                 detectable_metrics=None if negative else dm, evidence=evidence, effect=eff,
                 lines=len(w.lines), gen_seconds=round(time.perf_counter() - t_start, 1))
    if fault == "none":
        label["resume_line"] = None
    if negative and fault != "none" and eff["loss"] is not None:
        label["note"] += "; effect vs counterfactual given for information only (negative)"
    label["stats"] = {"cf_loss_2_50": mean(cf_loss[1:50]), "loss_2_50": mean(f_loss[1:50]),
                      "cf_gn_2_50": mean(cf_gn[1:50]), "gn_2_50": mean(f_gn[1:50]),
                      "cf_loss_51_300": mean(cf_loss[50:300]), "loss_51_300": mean(f_loss[50:300])}
    if fault == "optimizer_reset":
        label["note"] += "; fresh optimizer; " + ("state never loaded" if fp["variant"] == "not_loaded"
                                                 else "resume code reports loaded, live state empty")
    elif fault == "optimizer_swap":
        label["note"] += "; checkpoint %s -> resumed %s at the same LR (state: %s)" % (
            cfg["opt"]["name"], fp["new_opt"]["name"], fp["load"])
    elif fault == "param_order_shuffle":
        label["note"] += "; %d of %d parameter tensors got another tensor's optimizer state" % (
            fp["moved"], fp["tensors"])
    elif fault == "hparam_change":
        label["note"] += "; changed %s" % fp["change"]
    elif fault == "poisoned_weights":
        label["note"] += "; " + ("swapped %s <-> %s" % tuple(fp["swap"]) if fp["mode"] == "swap"
                                 else "Gaussian noise %g of each tensor RMS" % fp["scale"])
    elif fault == "batch_size_change":
        label["note"] += "; batch %d -> %d" % (cfg["bs"], fp["new_batch"])
    elif fault == "scheduler_reset":
        label["note"] += "; LR schedule started over (lr %.3gx at the restart)" % lr_jump
    return w.lines, label


# -------------------------------------------------- signature injection

def inject(rng, src_lines, src_label, ckpt_every, positive):
    """README's signature-injected trace from a clean real run (no restart):
    a restart from one of its own steps; for a positive, the large-model
    optimizer-reset signature over the real post-restart metrics; for a
    negative, a correct larger-batch restart."""
    ms = [json.loads(ln) for ln in src_lines if '"event"' not in ln]
    evs = {json.loads(ln)["step"]: ln for ln in src_lines if '"event"' in ln}
    N = len(ms)
    S = rng.randint(int(N * 0.45), int(N * 0.75))
    if not positive:
        S = (S // ckpt_every) * ckpt_every
    T = S + rng.randint(0, 200)
    gap = rng.uniform(60, 900)
    out, fpar = [], {}
    keep_events = not positive and src_label["has_events"]
    for m in ms[:T]:
        out.append(dict(m))
        if keep_events and m["step"] in evs:
            out.append(json.loads(evs[m["step"]]))
    if positive:
        a, b = rng.uniform(0.6, 1.0), rng.uniform(0.3, 0.65)
        ramp = rng.randint(1, 30)
        heal = None if rng.random() < 0.5 else rng.randint(80, 400)
        spike = rng.random() < 0.4
        fpar = {"loss_rise": round(a, 3), "grad_norm_drop": round(b, 3), "ramp": ramp, "heal": heal,
                "spike": spike}
    else:
        gs, ls = rng.uniform(0.55, 0.7), rng.uniform(0.5, 0.65)
        fpar = {"grad_norm_scale": round(gs, 3), "loss_noise_scale": round(ls, 3)}
    shift = (out[-1]["ts"] - ms[S - 1]["ts"]) + gap
    resume_line = len(out) + 1
    if keep_events:
        ev = json.loads(evs[S])
        ev.update(event="resumed", checkpoint_step=S, optimizer_state_loaded=True)
        ev["ts"] = round(ms[S - 1]["ts"] + shift, 3)
        ev = {k: ev[k] for k in ["run", "step", "ts", "event", "checkpoint_step", "optimizer", "param_names_sha256",
                                 "optimizer_state_keys", "optimizer_state_loaded", "hparams"]}
        out.append(ev)
    post = ms[S:]
    losses = [m["loss"] for m in ms]
    for k, m in enumerate(post, 1):
        m = dict(m)
        m["ts"] = round(m["ts"] + shift, 3)
        if positive:
            r = min(1.0, k / ramp)
            if heal is not None and k > ramp:
                r = max(0.0, 1 - (k - ramp) / heal)
            m["loss"] = round(m["loss"] * (1 + fpar["loss_rise"] * r), 5)
            m["grad_norm"] = round(m["grad_norm"] * (1 - fpar["grad_norm_drop"] * r), 5)
            if spike and k == 1:
                m["grad_norm"] = round(m["grad_norm"] * rng.uniform(3, 8), 5)
        else:
            i = S + k - 1
            lo, hi = max(0, i - 25), min(N, i + 26)
            lvl = sum(losses[lo:hi]) / (hi - lo)
            m["loss"] = round(lvl + (m["loss"] - lvl) * fpar["loss_noise_scale"], 5)
            m["grad_norm"] = round(m["grad_norm"] * fpar["grad_norm_scale"], 5)
        out.append(m)
        if keep_events and m["step"] in evs and m["step"] > S:
            e = json.loads(evs[m["step"]])
            e["ts"] = m["ts"]
            out.append(e)
    label = {k: src_label[k] for k in ("run", "model", "optimizer", "schedule")}
    label.update(fault="optimizer_reset" if positive else "batch_size_change", has_events=keep_events,
                 onset_step=S + 1 if positive else None, onset_line=resume_line if positive else None,
                 resume_line=resume_line, expect=EXPECT["optimizer_reset"] if positive else [],
                 detectable=True if positive else False, evidence=None, effect=None,
                 synthetic="signature injected on real trace %s" % src_label["file"] if positive
                 else "legitimate larger-batch resume laid over real trace %s" % src_label["file"],
                 fault_params=fpar, checkpoint_every=None, steps=None, gen_seconds=None,
                 note=("restart from step %d after crash at %d; signature laid over the real post-restart metrics"
                       % (S, T)) if positive else
                 "good resume with a larger batch: grad norm and loss noise shrink, loss level unchanged")
    return [json.dumps(o, separators=(",", ":")) for o in out], label


# ----------------------------------------------------------------- main

PLAN = [  # (fault, has_events, kind)
    ("optimizer_reset", True, "mlp"), ("optimizer_reset", False, "mlp"),
    ("optimizer_reset", True, "lm"), ("optimizer_reset", False, "lm"),
    ("optimizer_swap", True, "mlp"), ("optimizer_swap", False, "mlp"),
    ("param_order_shuffle", True, "lm"), ("param_order_shuffle", False, "mlp"),
    ("scheduler_reset", True, "mlp"), ("scheduler_reset", False, "lm"),
    ("hparam_change", True, "mlp"), ("hparam_change", False, "mlp"),
    ("poisoned_weights", True, "mlp"), ("poisoned_weights", False, "lm"),
    ("divergence", True, "lm"), ("divergence", False, "mlp"),
    ("nan_injection", True, "mlp"), ("nan_injection", False, "mlp"),
    ("none", True, "lm"), ("none", False, "mlp"), ("none", True, "mlp"),
    ("good_resume", True, "mlp"), ("good_resume", False, "lm"), ("good_resume", False, "mlp"),
    ("lr_decay_step", True, "mlp"), ("lr_decay_step", False, "mlp"),
    ("batch_size_change", True, "mlp"), ("batch_size_change", False, "mlp"),
    ("optimizer_reset", False, "mlp"), ("poisoned_weights", True, "mlp"),
    ("scheduler_reset", True, "mlp"), ("optimizer_swap", True, "mlp"),
]


OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-serial"


def main():
    # Debian's torch calls the system libblas; the reference one makes a
    # char-LM step ~6x slower.  With libopenblas0-serial installed, use it
    # for this process only (the numbers depend on the BLAS: note which).
    if os.path.isdir(OPENBLAS) and OPENBLAS not in os.environ.get("LD_LIBRARY_PATH", ""):
        os.environ["LD_LIBRARY_PATH"] = OPENBLAS + ":" + os.environ.get("LD_LIBRARY_PATH", "")
        os.execv(sys.executable, [sys.executable] + sys.argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", type=int, default=-1, help="make only plan entry N (debugging)")
    ap.add_argument("--inject", type=int, default=3, help="signature-injected positives (and 2 negatives)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    lm_data = load_text()
    plan = PLAN[:]
    rng.shuffle(plan)
    labels, clean = [], []
    for i, (fault, ev, kind) in enumerate(plan):
        sub = random.Random(rng.getrandbits(64))
        seed = args.seed * 1000 + i
        if args.only >= 0 and i != args.only:
            continue
        lines, lab = make_trace(sub, fault, ev, kind, seed, lm_data)
        name = "h%02d.jsonl" % i
        lab = dict({"file": name}, **lab)
        with open(os.path.join(args.out, name), "w") as f:
            f.write("\n".join(lines) + "\n")
        labels.append(lab)
        if fault == "none":
            clean.append((lines, lab))
        print("%-6s %-20s ev=%-5s %-42s det=%s eff=%s %.0fs" % (
            name, fault, ev, lab["model"], lab["detectable"], lab["effect"], lab["gen_seconds"]),
            file=sys.stderr, flush=True)
    for j in range(args.inject + 2 if clean else 0):
        src = clean[j % len(clean)]
        positive = j < args.inject
        lines, lab = inject(random.Random(rng.getrandbits(64)), src[0], src[1], src[1]["checkpoint_every"],
                            positive)
        name = "s%02d%s.jsonl" % (j, "s" if positive else "n")
        lab = dict({"file": name}, **lab)
        with open(os.path.join(args.out, name), "w") as f:
            f.write("\n".join(lines) + "\n")
        labels.append(lab)
    with open(os.path.join(args.out, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1)
    print("%d traces in %s" % (len(labels), args.out), file=sys.stderr)


if __name__ == "__main__":
    main()
