"""Windows of healthy real logs: every run of 5, 10, 20 and 40 consecutive
points of every healthy real log in ../shared/realworld, replayed as a run of
its own, so that the rules for short context (a run with less history than
the detectors' windows) are held to what a person pasting a healthy stretch
would see.  Used by test_det_windows.py (no warning or critical alert outside
the allowed spans) and bench/det_windows.py (the count per rule).

Which logs are healthy:
- the normalised logs (realworld/*.jsonl) whose labels.json fault is "none",
  or a grad_spike whose allowed spans are left out (any rule may speak
  there: a short-context rule on a documented spike is that spike);
- raw/: the original of such a log (same stem), and lightning-slm-wikitext,
  which raw/README.md calls normal;
- raw-more/: the files raw-more/README.md calls healthy or noisy
  (RAW_MORE_HEALTHY).
A file is read with `gradwatch convert`; its metric records (events and a
log's end left out) are the points.  A file with fewer than MAX_ALL points
gives every window; a longer one MAX_ALL evenly strided windows per size.
Windows are written as NDJSON files in a temporary directory, each window a
run of its own, CHUNK windows per file, and one `gradwatch replay` call
replays many files.  Standard library only.
"""
import json
import os
import subprocess
import tempfile

SIZES = (5, 10, 20, 40)
MAX_ALL = 5000           # points below which every window is replayed
CHUNK = 2000             # windows per NDJSON file (replay keeps every run)
FILES_PER_CALL = 4

RAW_EXTRA_HEALTHY = {'lightning-slm-wikitext-v0.metrics.csv'}
RAW_MORE_HEALTHY = {
    'hf-whisper-bashkir-10000.trainer_state.json',      # "Healthy"
    'tb-lightning-lstm-textgen.tfevents',               # "Healthy"
    'megatron-ds-qwen7b-500.log',                       # "Healthy"
    'buildnanogpt-124m-nowarmup.out',                   # "Healthy"
    'buildnanogpt-124m-2.5ep-killed.log.txt',           # "Otherwise healthy"
    'wandb-export-sd15-dtu400-train-loss.csv',          # "Noisy, no trend"
}


def _stem(name):
    return name.split('.')[0]


def healthy_sources(shared):
    """[(label, path, allowed)] where allowed is a list of (from_step, to_step)
    (to_step None: to the end) in which any alert is allowed."""
    rw = os.path.join(shared, 'realworld')
    with open(os.path.join(rw, 'labels.json')) as f:
        labels = json.load(f)
    spans = {}
    for e in labels:
        if e['fault'] not in ('none', 'grad_spike'):
            continue
        steps = []
        with open(os.path.join(rw, e['file'])) as f:
            for line in f:
                r = json.loads(line)
                steps.append(r.get('step'))
        allowed = []
        for a in e['allow']:
            lo = steps[a['from_line'] - 1]
            hi = steps[a['to_line'] - 1] if a['to_line'] else None
            allowed.append((lo, hi))
        spans[_stem(e['file'])] = allowed
    out = [('realworld/' + s + '.jsonl', os.path.join(rw, s + '.jsonl'), a)
           for s, a in sorted(spans.items())]
    raw = os.path.join(rw, 'raw')
    for name in sorted(os.listdir(raw)):
        stem = _stem(name)
        if name.endswith('.md'):
            continue
        if name in RAW_EXTRA_HEALTHY:
            out.append(('raw/' + name, os.path.join(raw, name), []))
        elif stem in spans and not name.endswith('-badrun.tfevents'):
            out.append(('raw/' + name, os.path.join(raw, name), spans[stem]))
    more = os.path.join(rw, 'raw-more')
    for name in sorted(RAW_MORE_HEALTHY):
        out.append(('raw-more/' + name, os.path.join(more, name), []))
    return out


def points_of(gradwatch, path):
    """The metric records of a log, as NDJSON objects, in order."""
    r = subprocess.run([gradwatch, 'convert', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600, check=True)
    pts = []
    for line in r.stdout.decode().splitlines():
        o = json.loads(line)
        if 'event' not in o:
            pts.append(o)
    return pts


def starts(n, size):
    """Window starts: all of them under MAX_ALL points, else MAX_ALL strided."""
    last = n - size
    if last < 0:
        return []
    if n < MAX_ALL:
        return list(range(last + 1))
    k = MAX_ALL
    return sorted({round(i * last / (k - 1)) for i in range(k)})


def run_windows(gradwatch, shared, sizes=SIZES, tmp=None, config=None):
    """Replay every window; returns (alerts, nwindows) where alerts is a list
    of (source label, size, start, alert object, allowed: bool)."""
    sources = healthy_sources(shared)
    owner = {}            # run name -> (label, size, start, first step, allowed)
    files = []
    with tempfile.TemporaryDirectory(dir=tmp) as d:
        buf, nbuf = [], 0

        def flush():
            nonlocal buf, nbuf
            if buf:
                p = os.path.join(d, 'w%05d.jsonl' % len(files))
                with open(p, 'w') as f:
                    f.write(''.join(buf))
                files.append(p)
            buf, nbuf = [], 0

        for si, (label, path, allowed) in enumerate(sources):
            pts = points_of(gradwatch, path)
            for size in sizes:
                for s in starts(len(pts), size):
                    run = 's%d-%d-%d' % (si, size, s)
                    owner[run] = (label, size, s, allowed)
                    for p in pts[s:s + size]:
                        q = dict(p)
                        q['run'] = run
                        buf.append(json.dumps(q, allow_nan=True) + '\n')
                    nbuf += 1
                    if nbuf >= CHUNK:
                        flush()
        flush()
        alerts = []
        for i in range(0, len(files), FILES_PER_CALL):
            cfg = ['--config', config] if config else []
            r = subprocess.run([gradwatch] + cfg + ['replay', '--format', 'jsonl',
                                '--min-severity', 'warning'] + files[i:i + FILES_PER_CALL],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
            if r.returncode not in (0, 1):
                raise RuntimeError('replay failed: ' + r.stderr.decode()[:2000])
            for line in r.stdout.decode().splitlines():
                a = json.loads(line)
                if a.get('kind') != 'open':
                    continue
                label, size, s, allowed = owner[a['run']]
                st = a.get('step')
                ok = any(lo <= st and (hi is None or st <= hi) for lo, hi in allowed)
                alerts.append((label, size, s, a, ok))
    return alerts, len(owner)


def rule_of(alert):
    """detector/rule of an alert (the rule from the evidence when it names one)."""
    ev = alert.get('evidence') or {}
    rule = ev.get('rule') if isinstance(ev, dict) else None
    return alert['detector'] + ('/' + rule if rule else '')
