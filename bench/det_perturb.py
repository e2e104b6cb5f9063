"""Robustness of the detectors: variants of the labelled dev traces that a
set "made the same way" could plausibly contain, each scored with the real
`gradwatch replay` by the rules of ../shared/eval/README.md (detscore.py).

Each perturbation turns every trace of the corpus into a variant (written
to a temporary folder with its adjusted labels: onset and resume lines
follow the lines they pointed at) and reports recall over the detectable
positives, the traces with false alerts (and subtle positives failed by
another detector's alert after the onset), errors (exit status other than
0/1, output that is not JSON) and the median / maximum latency in lines.
A variant's label keeps `detectable` as it was: where the perturbation
removes the evidence itself (events dropped from a trace whose only
evidence was events, a NaN line not logged), the miss is expected and
shown as such ('lost evidence').

Perturbations (--list prints them):
  every_k      log every k-th step only (k = 2, 5, 10, 25, 50)
  avg_k        log every k-th step, loss averaged over the k steps (HF
               Trainer style), grad norm and LR of the logged step
  gn_none / lr_none / gn_some / lr_some   grad_norm or lr missing on every
               line or on a random 30 % of lines
  noise_s      the trace's noise resampled (seed s): per step, the residual
               from a rolling median (loss linear, grad norm in log) is
               replaced by another residual of the same neighbourhood
               (outliers and a mid-run fault's own steps stay), and the same shift
               goes to every copy of that step, so replayed steps keep
               their exact pairing
  ts_none / ts_jitter / ts_round      no ts; step intervals x lognormal;
               ts rounded to whole seconds
  events_none / resumed_none          every event line dropped; only the
               `resumed` lines dropped (restart seen from the rewind/gap)
  ooo          2 % of neighbouring metric lines swapped (ts travels along)
  fmt_exp      every float written as %.6e; fmt_nanstr: NaN/Infinity
               written as strings "nan"/"inf"; fmt_big: grad norms x1e12
               and NaN as 1e999 (an overflowing literal)
  short_150 / short_60    only 150 / 60 lines before the onset (resume)
  stop_10 / stop_30       the run stops 10 / 30 lines after the onset
  inject       on the clean traces (no restart, no fault), restarts at
               random checkpoint steps S (multiple of 250) with a crash
               0-200 steps later: the Genesis signature (loss x (1+a), grad
               norm x (1-b), a ramp, sometimes a spike or healing), a correct
               restart, a larger batch (grad norm x0.55-0.7, loss noise
               shrunk) and, with --inject-kinds, a halved one (halfbatch);
               seeds 1..--inject-seeds; --inject-a/--inject-b fix
               a and b (a sweep of the effect size the signature needs)

    python3 bench/det_perturb.py [--gradwatch build/cli/gradwatch]
        [--corpus ../shared/corpus/dev] [--only PERT,...] [--keep DIR] [-v]
"""

import argparse
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import detscore  # noqa: E402


# ---- reading and writing traces --------------------------------------------

def read_trace(path):
    """[(obj, original 1-based line)]."""
    out = []
    with open(path) as fh:
        for i, line in enumerate(fh, 1):
            if line.strip():
                out.append((json.loads(line), i))
    return out


def is_metric(o):
    return "event" not in o


def fmt_num(v, mode):
    if isinstance(v, bool) or not isinstance(v, float):
        return json.dumps(v)
    if math.isnan(v) or math.isinf(v):
        if mode == "nanstr":
            return '"nan"' if math.isnan(v) else ('"inf"' if v > 0 else '"-inf"')
        if mode == "big":
            return "1e999" if (math.isnan(v) or v > 0) else "-1e999"
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if mode in ("exp", "big"):
        return "%.6e" % v
    return repr(v)


def dump(o, mode):
    if not is_metric(o) or mode is None:
        return json.dumps(o)
    return "{" + ",".join("%s:%s" % (json.dumps(k), fmt_num(v, mode)) for k, v in o.items()) + "}"


def write_variant(folder, name, lines, label, mode=None):
    """lines: [(obj, orig line or None)].  Adjusts onset_line/resume_line
    to the first line at or after the one they named; returns the label."""
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        for o, _ in lines:
            fh.write(dump(o, mode) + "\n")
    lab = dict(label)
    lab["file"] = name
    origs = [(ol if ol is not None else -1) for _, ol in lines]
    for key in ("onset_line", "resume_line"):
        v = label.get(key)
        if v is None:
            continue
        new = None
        for i, ol in enumerate(origs):
            if ol >= v:
                new = i + 1
                break
        lab[key] = new
    if label.get("onset_line") is not None and lab["onset_line"] is None:
        lab["lost"] = True   # the fault's lines are gone
    return lab


# ---- segments: process lifetimes by rewind or event -------------------------

def processes(lines):
    """Index of the process (0, 1, ...) of every line: a new one at a
    `resumed` event or at a metric step that does not advance."""
    proc, cur, last = [], 0, None
    for o, _ in lines:
        if not is_metric(o):
            if o.get("event") == "resumed":
                cur += 1
                last = None
            proc.append(cur)
            continue
        if last is not None and o["step"] <= last:
            cur += 1
        last = o["step"]
        proc.append(cur)
    return proc


def num(o, k):
    v = o.get(k)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# ---- perturbations -----------------------------------------------------------

def p_every(lines, lab, k, avg=False):
    out, acc = [], []
    proc = processes(lines)
    prev = None
    for (o, ol), p in zip(lines, proc):
        if p != prev:
            acc = []
            prev = p
        if not is_metric(o):
            out.append((o, ol))
            continue
        if num(o, "loss") is not None:
            acc.append(o["loss"])
        if o["step"] % k == 0:
            o = dict(o)
            if avg and acc:
                o["loss"] = sum(acc) / len(acc)
            acc = []
            out.append((o, ol))
    return out


def p_drop(lines, lab, key, frac, rng):
    out = []
    for o, ol in lines:
        if is_metric(o) and key in o and (frac >= 1 or rng.random() < frac):
            o = dict(o)
            del o[key]
        out.append((o, ol))
    return out


def rolling_median(x, w=21):
    n, h = len(x), w // 2
    return [statistics.median(x[max(0, i - h):min(n, i + h + 1)]) for i in range(n)]


def p_noise(lines, lab, rng):
    """Resample the noise of loss (linear) and log grad norm: per step, one
    shift, the same for every copy of the step.  A mid-run fault's own steps
    (a divergence's burst, NaN steps: onset_step - 3 .. + 30) keep their
    values: they are the signal, not noise."""
    keep = set()
    if lab.get("onset_step") is not None and lab["fault"] in ("divergence", "nan_injection"):
        keep = set(range(lab["onset_step"] - 3, lab["onset_step"] + 31))
    proc = processes(lines)
    shift = {"loss": {}, "grad_norm": {}}
    for key in ("loss", "grad_norm"):
        tf = (lambda v: math.log(v)) if key == "grad_norm" else (lambda v: v)
        # the first copy of each step (lines in order): residuals from a
        # rolling median of its process
        by_proc = {}
        for (o, _), p in zip(lines, proc):
            v = num(o, key)
            if is_metric(o) and v is not None and math.isfinite(v) and v > 0:
                by_proc.setdefault(p, []).append((o["step"], tf(v)))
        seen = set()
        for p in sorted(by_proc):
            pts = [(s, v) for s, v in by_proc[p] if s not in seen]
            if len(pts) < 30:
                continue
            vals = [v for _, v in pts]
            # a short trend (rolling median of 7): the residual is the
            # step-to-step noise only, so exchanging residuals keeps the
            # per-step noise the detectors measure (a longer trend moves
            # slow wiggles into the residual, and shuffling them inflated
            # the first-difference noise 1.5-2x on autocorrelated series)
            trend = rolling_median(vals, 7)
            res = [v - t for v, t in zip(vals, trend)]
            # permute residuals inside chunks of 60 points; outliers (beyond
            # 4 MADs of their chunk: spikes, the fault itself) are signal,
            # not noise, and stay where they are
            new = list(res)
            for c0 in range(0, len(res), 60):
                chunk = list(range(c0, min(len(res), c0 + 60)))
                mad = statistics.median(abs(res[i]) for i in chunk) or 1e-12
                chunk = [i for i in chunk if abs(res[i]) <= 4 * 1.4826 * mad]
                blocks = [chunk[i:i + 1] for i in range(0, len(chunk), 1)]
                order = blocks[:]
                rng.shuffle(order)
                flat = [i for b in order for i in b]
                for dst, src in zip(chunk, flat):
                    new[dst] = res[src]
            for (s, _), r0, r1 in zip(pts, res, new):
                shift[key][s] = 0.0 if s in keep else r1 - r0
                seen.add(s)
    out = []
    for o, ol in lines:
        if is_metric(o):
            o = dict(o)
            v = num(o, "loss")
            if v is not None and math.isfinite(v) and o["step"] in shift["loss"]:
                o["loss"] = max(v + shift["loss"][o["step"]], 1e-6)
            v = num(o, "grad_norm")
            if v is not None and math.isfinite(v) and v > 0 and o["step"] in shift["grad_norm"]:
                o["grad_norm"] = v * math.exp(shift["grad_norm"][o["step"]])
        out.append((o, ol))
    return out


def p_ts(lines, lab, mode, rng):
    out, prev_in, prev_out = [], None, None
    for o, ol in lines:
        o = dict(o)
        if "ts" in o:
            if mode == "none":
                del o["ts"]
            elif mode == "round":
                o["ts"] = float(round(o["ts"]))
            elif mode == "jitter":
                t = o["ts"]
                if prev_in is not None:
                    d = t - prev_in
                    prev_out = prev_out + (d if d > 10 else d * math.exp(rng.gauss(0, 0.7)))
                else:
                    prev_out = t
                prev_in = t
                o["ts"] = round(prev_out, 4)
        out.append((o, ol))
    return out


def p_events(lines, lab, which):
    return [(o, ol) for o, ol in lines
            if is_metric(o) or (which == "resumed" and o.get("event") != "resumed")]


def p_ooo(lines, lab, rng, p=0.02):
    out = list(lines)
    proc = processes(lines)
    i = 0
    while i < len(out) - 1:
        a, b = out[i][0], out[i + 1][0]
        if (is_metric(a) and is_metric(b) and proc[i] == proc[i + 1] and
                b["step"] == a["step"] + 1 and rng.random() < p):
            out[i], out[i + 1] = out[i + 1], out[i]
            i += 2
        else:
            i += 1
    return out


def p_scale_gn(lines, lab, f):
    out = []
    for o, ol in lines:
        if is_metric(o) and num(o, "grad_norm") is not None:
            o = dict(o)
            o["grad_norm"] = o["grad_norm"] * f
        out.append((o, ol))
    return out


def anchor(lab):
    return lab.get("onset_line") or lab.get("resume_line")


def p_short(lines, lab, keep):
    a = anchor(lab)
    if a is None:
        return lines[:2 * keep] if len(lines) > 2 * keep else lines
    start = max(1, a - keep)
    return [(o, ol) for o, ol in lines if ol >= start]


def p_stop(lines, lab, after):
    a = anchor(lab)
    if a is None:
        return lines
    return [(o, ol) for o, ol in lines if ol <= a + after]


# ---- injected restarts on clean traces ----------------------------------------

INJECT_AB = [None, None]   # --inject-a / --inject-b: fixed a, b for a sweep
INJECT_S = [400, 10 ** 9]  # --inject-steps LO,HI: the checkpoint steps allowed
INJECT_OVERLAP = [0, 200]  # --inject-overlap LO,HI: T - S

def inject(lines, lab, rng, kind):
    """Restart at a random checkpoint step S with a crash at T = S + 0..200:
    lines up to T, (resumed), then the original lines S+1.. transformed."""
    metr = [(o, ol) for o, ol in lines if is_metric(o)]
    steps = [o["step"] for o, _ in metr]
    last = steps[-1]
    every = rng.choice([250, 500])
    cands = [s for s in range(every, last - 400, every) if INJECT_S[0] <= s <= INJECT_S[1]]
    if not cands:
        return None, None
    S = rng.choice(cands)
    T = min(S + rng.randint(*INJECT_OVERLAP), last - 300)
    gap = rng.uniform(60, 900)
    has_events = any(not is_metric(o) for o, _ in lines)
    pre = [(o, ol) for o, ol in lines if o["step"] <= T]
    post = [(dict(o), None) for o, ol in lines if is_metric(o) and o["step"] > S]
    ckpt = None
    for o, _ in pre:
        if not is_metric(o) and o.get("event") == "checkpoint_saved" and o["step"] <= S:
            ckpt = o
    out = list(pre)
    # the checkpoint at S if the trace checkpoints at another rhythm
    if has_events and (ckpt is None or ckpt["step"] != S):
        base = dict(ckpt) if ckpt else {"run": lab["run"], "event": "checkpoint_saved",
                                         "optimizer": "AdamW", "param_names_sha256": "0" * 64,
                                         "optimizer_state_keys": ["exp_avg", "exp_avg_sq", "step"],
                                         "hparams": {"lr": 0.001}}
        base["step"] = S
        idx = next(i for i, (o, _) in enumerate(out) if is_metric(o) and o["step"] == S)
        out.insert(idx + 1, (base, None))
        ckpt = base
    # ts: the restarted process starts gap seconds after T's line
    t_T = next((o.get("ts") for o, _ in reversed(pre) if "ts" in o), None)
    t_S1 = post[0][0].get("ts")
    dts = (t_T + gap - t_S1) if t_T is not None and t_S1 is not None else 0
    # the transform
    a = rng.uniform(0.3, 1.0)
    b = rng.uniform(0.3, 0.65)
    if INJECT_AB[0] is not None:
        a = INJECT_AB[0]
    if INJECT_AB[1] is not None:
        b = INJECT_AB[1]
    ramp = rng.randint(1, 30)
    heal = rng.choice([None, None, rng.randint(80, 400)])
    spike = rng.random() < 0.5
    gscale = rng.uniform(0.55, 0.7)
    nscale = rng.uniform(0.5, 0.6)
    if kind == "halfbatch":   # a smaller batch: the reverse
        gscale, nscale = 1 / gscale, 1 / nscale
    lvals = [o["loss"] for o, _ in post if num(o, "loss") is not None]
    trend = rolling_median(lvals) if kind in ("batch", "halfbatch") else None
    ti = 0
    for k, (o, _) in enumerate(post, 1):
        if "ts" in o:
            o["ts"] = round(o["ts"] + dts, 4)
        if kind == "reset":
            w = min(1.0, k / ramp)
            if heal is not None and k > ramp:
                w *= max(0.0, 1 - (k - ramp) / heal)
            if num(o, "loss") is not None:
                o["loss"] = o["loss"] * (1 + a * w)
            if num(o, "grad_norm") is not None:
                o["grad_norm"] = o["grad_norm"] * (1 - b * w) * (3.0 if spike and k == 1 else 1.0)
        elif kind in ("batch", "halfbatch"):
            if num(o, "loss") is not None:
                o["loss"] = trend[ti] + (o["loss"] - trend[ti]) * nscale
                ti += 1
            if num(o, "grad_norm") is not None:
                o["grad_norm"] = o["grad_norm"] * gscale
        else:   # a correct restart: the replay's own jitter, <= 0.3 %
            for key in ("loss", "grad_norm"):
                if num(o, key) is not None and o["step"] <= T:
                    o[key] = o[key] * (1 + rng.uniform(-0.002, 0.002))
    resume_line = len(out) + 1
    if has_events:
        ev = {"run": lab["run"], "step": S, "ts": (post[0][0].get("ts") or 0) - 0.5,
              "event": "resumed", "checkpoint_step": S}
        for key in ("optimizer", "param_names_sha256", "optimizer_state_keys", "hparams"):
            if ckpt and key in ckpt:
                ev[key] = ckpt[key]
        ev["optimizer_state_loaded"] = True
        if kind == "reset":   # a model-only resume that reports nothing wrong
            ev["optimizer_state_keys"] = (ckpt or {}).get("optimizer_state_keys", [])
        out.append((ev, None))
    out += post
    # later checkpoint events of the original, after the restart
    new = dict(lab)
    new.update({"resume_line": resume_line, "onset_line": None, "expect": [],
                "detectable": None, "fault": {"reset": "inj_reset", "good": "inj_good_resume",
                                              "batch": "inj_batch_size_change",
                                              "halfbatch": "inj_batch_halved"}[kind],
                "note": "injected at S=%d T=%d a=%.2f b=%.2f ramp=%d heal=%s spike=%s" % (
                    S, T, a, b, ramp, heal, spike)})
    if kind == "reset":
        new.update({"onset_line": resume_line, "detectable": True,
                    "expect": ["optimizer_reset", "resume_regression", "resume_mismatch"]})
    return out, new


# ---- the run ------------------------------------------------------------------

def variants(name, lines, lab, seed):
    # a stable seed (str hash() is salted per process)
    rng = random.Random(seed * 7919 + zlib.crc32(lab["file"].encode()) % 1000)
    if name.startswith("every_"):
        return p_every(lines, lab, int(name[6:])), None
    if name.startswith("avg_"):
        return p_every(lines, lab, int(name[4:]), avg=True), None
    if name in ("gn_none", "lr_none", "gn_some", "lr_some"):
        key = "grad_norm" if name.startswith("gn") else "lr"
        return p_drop(lines, lab, key, 1.0 if name.endswith("none") else 0.3, rng), None
    if name.startswith("noise_"):
        return p_noise(lines, lab, random.Random(int(name[6:]) * 104729 + len(lines))), None
    if name.startswith("ts_"):
        return p_ts(lines, lab, name[3:], rng), None
    if name == "events_none":
        return p_events(lines, lab, "all"), None
    if name == "resumed_none":
        return p_events(lines, lab, "resumed"), None
    if name == "ooo":
        return p_ooo(lines, lab, rng), None
    if name == "fmt_exp":
        return lines, "exp"
    if name == "fmt_nanstr":
        return lines, "nanstr"
    if name == "fmt_big":
        return p_scale_gn(lines, lab, 1e12), "big"
    if name.startswith("short_"):
        return p_short(lines, lab, int(name[6:])), None
    if name.startswith("stop_"):
        return p_stop(lines, lab, int(name[5:])), None
    raise SystemExit("unknown perturbation " + name)


PERTS = (["every_%d" % k for k in (2, 5, 10, 25, 50)] + ["avg_5", "avg_25"] +
         ["gn_none", "lr_none", "gn_some", "lr_some"] + ["noise_%d" % s for s in (1, 2, 3)] +
         ["ts_none", "ts_jitter", "ts_round", "events_none", "resumed_none", "ooo",
          "fmt_exp", "fmt_nanstr", "fmt_big", "short_150", "short_60", "stop_10", "stop_30",
          "inject"])


def score(args, folder, labs, verbose):
    rec = {"pos": 0, "det": 0, "lost": 0, "lost_det": 0, "false": 0, "neg": 0, "err": 0,
           "subtle_fail": 0,
           "lat": [], "miss": [], "falses": [], "errs": []}
    for lab in labs:
        alerts, err = detscore.replay(args.gradwatch, os.path.join(folder, lab["file"]),
                                      None, folder)
        if alerts is None:
            rec["err"] += 1
            rec["errs"].append("%s: %s" % (lab["file"], err))
            continue
        if lab.get("onset_line") is None and lab["fault"] != "none" and \
                lab.get("expect"):
            continue
        d, lat, false = detscore.judge(lab, alerts, args.max_latency)
        if lab.get("detectable") is False and not d and not false and any(
                a.get("severity") != "info" and a.get("line", 0) >= lab["onset_line"] and
                not detscore.allowed(lab, a.get("detector"), a.get("line", 0)) for a in alerts):
            # a subtle positive passes detected or silent: another
            # detector's alert after the onset fails it
            rec["subtle_fail"] += 1
            rec["falses"].append("%s(%s,subtle) other alert" % (lab["file"], lab["fault"]))
        if false:
            rec["false"] += 1
            f0 = false[0]
            rec["falses"].append("%s(%s) %s@%s" % (lab["file"], lab["fault"], f0["detector"],
                                                  f0["line"]))
        if lab.get("onset_line") is None and not lab.get("lost"):
            rec["neg"] += 1
        elif lab.get("detectable"):
            if lab.get("lost"):
                rec["lost"] += 1
                rec["lost_det"] += d is not None
            else:
                rec["pos"] += 1
                if d:
                    rec["det"] += 1
                    rec["lat"].append(lat)
                else:
                    rec["miss"].append("%s(%s)" % (lab["file"], lab["fault"]))
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gradwatch", default="build/cli/gradwatch")
    ap.add_argument("--corpus", default="../shared/corpus/dev")
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", default="", help="write the variants here and keep them")
    ap.add_argument("--max-latency", type=int, default=200)
    ap.add_argument("--inject-seeds", type=int, default=6)
    ap.add_argument("--inject-a", type=float, help="fixed loss rise a (default: 0.3-1.0)")
    ap.add_argument("--inject-b", type=float, help="fixed grad-norm drop b (default: 0.3-0.65)")
    ap.add_argument("--inject-kinds", default="reset,good,batch")
    ap.add_argument("--inject-overlap", default="0,200",
                    help="LO,HI: steps the crashed process logged after S (T - S)")
    ap.add_argument("--inject-steps", default="400,1000000000",
                    help="LO,HI: checkpoint steps S the restarts are injected at")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(PERTS))
        return
    perts = [p for p in args.only.split(",") if p] or PERTS
    INJECT_AB[0], INJECT_AB[1] = args.inject_a, args.inject_b
    INJECT_S[0], INJECT_S[1] = (int(x) for x in args.inject_steps.split(","))
    INJECT_OVERLAP[0], INJECT_OVERLAP[1] = (int(x) for x in args.inject_overlap.split(","))
    labels = detscore.load_labels(args.corpus)
    traces = {lab["file"]: read_trace(os.path.join(args.corpus, lab["file"])) for lab in labels}
    root = args.keep or tempfile.mkdtemp(prefix="gw-perturb-")
    print("%-13s %8s %6s %7s %6s %8s  %s" % ("perturbation", "recall", "false", "errors",
                                             "lat", "lost-ev", "misses / false alerts"))
    for pert in perts:
        folder = os.path.join(root, pert)
        os.makedirs(folder, exist_ok=True)
        labs = []
        if pert == "inject":
            for lab in labels:
                if lab["fault"] not in ("none", "lr_decay_step"):
                    continue
                for seed in range(1, args.inject_seeds + 1):
                    for kind in args.inject_kinds.split(","):
                        rng = random.Random(seed * 31 + len(lab["file"]) + ord(lab["file"][-7]))
                        out, new = inject(traces[lab["file"]], lab, rng, kind)
                        if out is None:
                            continue
                        name = "%s-%s-%d.jsonl" % (lab["file"][:-6], kind, seed)
                        labs.append(write_variant(folder, name, out, new))
                        labs[-1]["onset_line"] = new["onset_line"]
                        labs[-1]["resume_line"] = new["resume_line"]
                        labs[-1].pop("lost", None)
        else:
            for lab in labels:
                out, mode = variants(pert, traces[lab["file"]], lab, 1)
                labs.append(write_variant(folder, lab["file"], out, lab, mode))
        with open(os.path.join(folder, "labels.json"), "w") as fh:
            json.dump(labs, fh, indent=1)
        r = score(args, folder, labs, args.verbose)
        lat = ("%d/%d" % (statistics.median(r["lat"]), max(r["lat"]))) if r["lat"] else "-"
        print("%-13s %4d/%-3d %3d/%-3d %6d %7s %4d/%-3d %s" % (
            pert, r["det"], r["pos"], r["false"] + r["subtle_fail"], len(labs), r["err"], lat,
            r["lost_det"],
            r["lost"], " ".join(r["miss"] + ["FALSE " + f for f in r["falses"]] +
                                ["ERR " + e for e in r["errs"]])), flush=True)
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
