"""How far each detection is from being missed, and each quiet trace from a
false alert: the detectors' margins on a labelled corpus.

For every trace and every threshold group (detscore.GROUPS: the thresholds
of one rule, scaled together), the real `gradwatch replay` is run with the
group's thresholds scaled by a factor f, and f is searched (bisection in log
space, to ~3 %):

  D<f>  a positive the group detects at the defaults stays detected (an
        expected detector, this rule, within --max-latency lines of the
        onset) up to thresholds f times as strict; D1.10 is a detection
        within 10 % of its threshold.
  F<f>  the group raises a false alert (on a negative, or before the onset
        of a positive) once its thresholds are f times as loose; F0.85 is a
        quiet trace within 15 % of firing.  '.' : none down to 1/16.

Conjunctions (loss up AND grad norm down) scale every part at once, so f is
the margin of the part closest to its threshold.  Prints the table, then the
detections within 20 % (D < 1.2) and the near-false ones (F > 0.8).

    python3 bench/det_margins.py [--gradwatch build/cli/gradwatch]
        [--corpus ../shared/corpus/dev] [--only d01.jsonl,...] [--max-latency 200]
"""

import argparse
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import detscore  # noqa: E402


def bisect(pred, lo, hi, steps=8):
    """pred(lo) is True, pred(hi) False: the largest f (log bisection) with
    pred True, as far as steps halvings tell."""
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo if lo < hi else hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gradwatch", default="build/cli/gradwatch")
    ap.add_argument("--corpus", default="../shared/corpus/dev")
    ap.add_argument("--only", default="")
    ap.add_argument("--max-latency", type=int, default=200)
    ap.add_argument("--max-factor", type=float, default=16.0)
    args = ap.parse_args()
    defaults = detscore.load_defaults(args.gradwatch)
    labels = detscore.load_labels(args.corpus)
    only = set(x for x in args.only.split(",") if x)
    tmp = tempfile.mkdtemp(prefix="gw-margins-")
    groups = list(detscore.GROUPS)
    rows, near_d, near_f = [], [], []
    for lab in labels:
        if only and lab["file"] not in only:
            continue
        path = os.path.join(args.corpus, lab["file"])
        pos = lab.get("onset_line") is not None
        cells = {}

        def run(g, f):
            th = detscore.scaled(defaults, g, f) if f != 1 else None
            alerts, err = detscore.replay(args.gradwatch, path, th, tmp)
            if alerts is None:
                raise SystemExit("%s: %s" % (lab["file"], err))
            return detscore.judge(lab, alerts, args.max_latency, group=g)

        for g in groups:
            det_name = detscore.GROUPS[g][0]
            cell = []
            d, lat, false = run(g, 1)
            if pos and det_name in lab["expect"] and d:
                if run(g, args.max_factor)[0]:
                    m = args.max_factor
                else:
                    m = bisect(lambda f: run(g, f)[0] is not None, 1.0, args.max_factor)
                cell.append("D%.2f@%d" % (m, lat))
                if m < 1.2:
                    near_d.append((lab["file"], lab["fault"], g, m, lat))
            if false:
                cell.append("F1!")
            elif run(g, 1 / args.max_factor)[2]:
                # the largest f < 1 at which a false alert appears
                m = 1 / bisect(lambda f: not run(g, 1 / f)[2], 1.0, args.max_factor)
                cell.append("F%.2f" % m)
                if m > 0.8:
                    near_f.append((lab["file"], lab["fault"], g, m))
            cells[g] = " ".join(cell) or "."
        kind = lab["fault"] + ("" if pos else "(neg)")
        if pos and lab.get("detectable") is False:
            kind += "(subtle)"
        rows.append((lab["file"], kind, cells))
        print("%-14s %-28s %s" % (lab["file"], kind,
                                  "  ".join("%s=%s" % (g, cells[g]) for g in groups
                                            if cells[g] != ".")), flush=True)
    print("\ndetections within 20 % of a threshold (D < 1.2):")
    for r in near_d or [("none",)]:
        print("  " + " ".join(str(x) for x in r))
    print("quiet traces within 20 % of a false alert (F > 0.8):")
    for r in near_f or [("none",)]:
        print("  " + " ".join(str(x) for x in r))
    # the smallest detection margin of each positive (its best group)
    print("\nper positive, the best group's margin (any expected detection):")
    for f, kind, cells in rows:
        ds = [float(c.split("D")[1].split("@")[0]) for c in cells.values() if "D" in c]
        if ds:
            print("  %-14s %-28s x%.2f" % (f, kind, max(ds)))


if __name__ == "__main__":
    main()
