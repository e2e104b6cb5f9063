"""Shared by det_margins.py and det_perturb.py: run `gradwatch replay` over
one trace with a thresholds override, and judge its alerts by the rules of
../shared/eval/README.md (detected: an alert of an expected detector at
onset_line <= line <= onset_line + max_latency; false: any non-info alert on
a negative, or before the onset on a positive; alerts inside a label's
`allow` window are neither).  Not a test: a measuring
tool for the detectors' margins and robustness (docs/detectors.md).

Threshold groups: the thresholds of one rule, scaled together by a factor
f so that f > 1 is stricter and f < 1 looser.  A sigma threshold is
multiplied by f; a factor (x1.5, -15 %) has its log multiplied by f; a
tolerance the detector needs to be *below* is divided by f.  The largest f
at which a detection still happens is the detection's margin (f = 1.3: the
statistics clear every threshold of the rule by 30 % or more at the
deciding line); the smallest f at which a negative fires is how far it is
from a false alert (f = 0.8: 20 % looser thresholds would fire).
"""

import json
import math
import os
import subprocess
import tempfile

# group -> (detector, [(threshold, kind)]); kind: 'z' multiply, 'rel' log
# multiply, 'tol' divide.  Ranges are respected by clamp().
GROUPS = {
    "or_signature": ("optimizer_reset", [("or_z_loss", "z"), ("or_rel_loss", "rel"),
                                         ("or_z_gn", "z"), ("or_rel_gn", "rel")]),
    "or_replay": ("optimizer_reset", [("div_rms", "z"), ("div_rel_first", "z")]),
    "or_midrun": ("optimizer_reset", [("mr_z_loss", "z"), ("mr_rel_loss", "rel"),
                                      ("mr_z_gn", "z"), ("mr_rel_gn", "rel")]),
    "rr_level": ("resume_regression", [("rr_z_loss_short", "z"), ("rr_rel_loss_short", "rel"),
                                       ("rr_z_loss", "z"), ("rr_rel_loss", "rel")]),
    "rr_climb": ("resume_regression", [("rr_climb_z", "z"), ("rr_climb_rel_loss", "rel"),
                                       ("rr_climb_rel_gn", "rel")]),
    "lr_schedule": ("lr_schedule", [("lr_jump", "rel")]),
    "loss_spike": ("loss_spike", [("sp_z_loss", "z"), ("sp_loss_rel", "rel"),
                                  ("sp_big_z_loss", "z"), ("sp_big_loss_rel", "rel")]),
    "grad_explosion": ("grad_explosion", [("sp_z_gn", "z"), ("sp_gn_rel", "rel"),
                                          ("sp_gn_loss_z", "z")]),
}

# the evidence "rule" of each group's alerts (None: the detector has one rule)
RULES = {"or_signature": "signature", "or_replay": "replay_divergence", "or_midrun": "midrun",
         "rr_level": "level", "rr_climb": "climb"}


def alert_group(a):
    """The group of an alert: detector and evidence rule."""
    rule = (a.get("evidence") or {}).get("rule") if isinstance(a.get("evidence"), dict) else None
    for g, (det, _) in GROUPS.items():
        if det == a.get("detector") and RULES.get(g) in (None, rule):
            return g
    return None


def load_defaults(gradwatch):
    """The defaults, parsed from `gradwatch thresholds` (name, default, ...)."""
    out = subprocess.run([gradwatch, "thresholds"], capture_output=True, text=True,
                         check=True).stdout
    d = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            try:
                d[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return d


def scaled(defaults, group, f):
    th = {}
    for name, kind in GROUPS[group][1]:
        v = defaults[name]
        if kind == "z":
            nv = v * f
        elif kind == "rel":
            lv = math.log(v) * f
            nv = math.exp(lv)
            if v < 1:
                nv = min(nv, 1.0)
            else:
                nv = max(nv, 1.0)
        else:
            nv = v / f
        th[name] = min(nv, 1000.0)
    return th


def replay(gradwatch, path, thresholds=None, tmp=None):
    """Alerts (dicts) of `gradwatch replay --format jsonl path`; None and the
    error text if the replay failed."""
    cmd = [gradwatch]
    if thresholds:
        cfg = os.path.join(tmp or tempfile.gettempdir(), "th-%d.json" % os.getpid())
        with open(cfg, "w") as fh:
            json.dump({"thresholds": thresholds}, fh)
        cmd += ["--config", cfg]
    cmd += ["replay", "--format", "jsonl", path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1):
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:])
    alerts = []
    for line in p.stdout.splitlines():
        if line.strip():
            try:
                alerts.append(json.loads(line))
            except ValueError:
                return None, "not JSON: %r" % line[:100]
    return alerts, None


def allowed(label, detector, line):
    """Is an alert of detector at line inside one of the label's allow
    windows (realworld incidents)?"""
    for w in label.get("allow") or []:
        to = w.get("to_line")
        dets = w.get("detectors")
        if line >= w["from_line"] and (to is None or line <= to) and \
                (dets == "*" or detector in dets):
            return True
    return False


def judge(label, alerts, max_latency=200, group=None):
    """(detected detector or None, latency, false alerts) of one trace.
    group: count only that group's alerts (for per-group margins)."""
    onset = label.get("onset_line")
    expect = label.get("expect") or []
    det, lat, false = None, None, []
    for a in alerts:
        if a.get("severity") == "info":
            continue
        name = a.get("detector")
        if group is not None and alert_group(a) != group:
            continue
        line = a.get("line")
        if allowed(label, name, line):
            continue   # a documented incident's window: neither required nor false
        if onset is None or line < onset:
            false.append(a)
        elif name in expect and line <= onset + max_latency:
            if lat is None or line - onset < lat:
                det, lat = name, line - onset
    return det, lat, false


def load_labels(corpus):
    with open(os.path.join(corpus, "labels.json")) as fh:
        return json.load(fh)
