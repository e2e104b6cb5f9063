"""A paste replayed the way a person replays one, for the readers' tests of
pasted forms (test_readers_more PastedVisionAndRL, test_readers_nanforms):
written to a file and converted, replayed with its format named and
sniffed (the same alerts), and piped to `gradwatch replay -` (the paste
path).  A healthy paste raises nothing; a NaN paste raises exactly one
`nonfinite`, at its first NaN point's step."""
import json
import math
import os
import subprocess

from gwtest import GRADWATCH
from logshapes import out_lines


def run(*args, stdin=None):
    return subprocess.run([GRADWATCH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300, input=stdin)


def check_paste(tc, tmp, name, fmt, nan, text):
    """The checks above, as tc's assertions, for the paste `text` read as
    `fmt`; `nan`: whether it holds a NaN run.  Returns (its points as
    convert prints them, the alerts opened: [] for a healthy paste)."""
    p = os.path.join(tmp, name + '.log')
    with open(p, 'w', encoding='utf-8') as f:
        f.write(text)
    c = run('convert', p)
    tc.assertEqual(c.returncode, 0, c.stderr.decode())
    pts = [d for d in map(json.loads, out_lines(c)) if 'event' not in d]
    v = run('replay', '--input-format', fmt, '--format', 'jsonl', p)
    tc.assertEqual(v.stdout, run('replay', '--format', 'jsonl', p).stdout)
    r = run('replay', '--format', 'jsonl', '--min-severity', 'warning', '-', stdin=text.encode())
    alerts = [json.loads(l) for l in out_lines(r)]
    if not nan:
        tc.assertEqual((r.returncode, alerts), (0, []), r.stderr.decode())
        tc.assertTrue(all(math.isfinite(d['loss']) for d in pts))
        return pts, []
    tc.assertEqual(r.returncode, 1, r.stderr.decode())
    opened = [a for a in alerts if a['kind'] == 'open']
    tc.assertEqual([a['detector'] for a in opened], ['nonfinite'])
    first_nan = next(d for d in pts if math.isnan(d['loss']))
    tc.assertEqual(opened[0]['step'], first_nan['step'])
    return pts, opened
