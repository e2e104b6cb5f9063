"""gradwatch replay: output format, exit status, bad lines; and live == replay:
the alerts the running daemon raises for a trace sent over its socket are the
alerts `gradwatch replay` prints for the same file."""
import json
import os
import socket
import subprocess
import tempfile
import unittest

from gwtest import Daemon, replay, CORPUS, GRADWATCH

# traces that exercise different paths: NaN, events, restarts with and
# without events, no restart
LIVE_TRACES = ['d03.jsonl', 'd21.jsonl', 'd07.jsonl', 'd13.jsonl', 'd19.jsonl', 'genesis.jsonl',
               'g00s.jsonl', 'd02.jsonl', 'd04.jsonl', 'd08.jsonl', 'd14.jsonl', 'd18.jsonl']


def replay_alerts(path):
    r = replay('replay', '--format', 'jsonl', path)
    assert r.returncode in (0, 1), r.stderr
    out = {}
    for line in r.stdout.decode().splitlines():
        a = json.loads(line)
        if a['kind'] == 'resolve':
            continue
        if a['kind'] == 'open':
            out[a['id']] = [a['detector'], a['step'], a['line'], a['severity'], a['segment']]
        else:
            out[a['id']][3] = a['severity']
    return out


class Replay(unittest.TestCase):
    def test_jsonl_fields_and_exit_status(self):
        r = replay('replay', '--format', 'jsonl', os.path.join(CORPUS, 'd03.jsonl'))
        self.assertEqual(r.returncode, 1, r.stderr)
        alerts = [json.loads(l) for l in r.stdout.decode().splitlines()]
        nf = [a for a in alerts if a['detector'] == 'nonfinite']
        self.assertTrue(nf)
        for key in ('run', 'detector', 'severity', 'step', 'line', 'summary', 'evidence', 'id',
                    'segment', 'cause', 'action'):
            self.assertIn(key, nf[0])
        self.assertEqual(nf[0]['step'], 968)
        self.assertEqual(nf[0]['line'], 971)   # 1-based line of the input
        self.assertEqual(nf[0]['severity'], 'critical')
        self.assertIn('NaN', nf[0]['summary'])

    def test_clean_trace_exits_zero(self):
        with tempfile.NamedTemporaryFile('w', suffix='.jsonl') as f:
            for s in range(1, 200):
                f.write(json.dumps({'run': 'ok', 'step': s, 'loss': 2.0 - s * 1e-3, 'grad_norm': 0.5}) + '\n')
            f.flush()
            r = replay('replay', f.name)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_bad_lines_are_reported_and_skipped(self):
        with tempfile.NamedTemporaryFile('wb', suffix='.jsonl') as f:
            f.write(b'{"run":"x","step":1,"loss":1}\n{"run":"x","step":2,"loss":"a"}\n'
                    b'{"run":"x","step":3,"loss":NaN}\n{"run":"x"')
            f.flush()
            r = replay('replay', '--format', 'jsonl', f.name)
            self.assertEqual(r.returncode, 1)
            err = r.stderr.decode()
            self.assertIn('%s:2: bad_value: field "loss"' % f.name, err)
            self.assertIn('%s:4:' % f.name, err)
            self.assertEqual(json.loads(r.stdout.splitlines()[0])['line'], 3)

    def test_errors_exit_two(self):
        self.assertEqual(replay('replay', '/nonexistent.jsonl').returncode, 2)
        self.assertEqual(replay('replay').returncode, 2)
        self.assertEqual(replay('replay', '--format', 'xml', '-').returncode, 2)

    def test_stdin_and_several_files_in_order(self):
        a = os.path.join(CORPUS, 'd21.jsonl')
        with open(a, 'rb') as f:
            r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl', '-'], stdin=f,
                               stdout=subprocess.PIPE)
        self.assertEqual(r.returncode, 1)
        # the same run split over two files is one run: the second file's
        # lines continue the first's steps
        with open(a) as f:
            lines = f.readlines()
        with tempfile.TemporaryDirectory() as d:
            p1, p2 = os.path.join(d, '1.jsonl'), os.path.join(d, '2.jsonl')
            with open(p1, 'w') as f1, open(p2, 'w') as f2:
                f1.writelines(lines[:1000])
                f2.writelines(lines[1000:])
            r2 = replay('replay', '--format', 'jsonl', p1, p2)
        first = [json.loads(l) for l in r.stdout.splitlines()]
        split = [json.loads(l) for l in r2.stdout.splitlines()]
        self.assertEqual([(x['id'], x['step']) for x in first], [(x['id'], x['step']) for x in split])
        self.assertEqual(split[0]['file'], p2)


class LiveEqualsReplay(unittest.TestCase):
    def test_live_alerts_equal_replay(self):
        with Daemon() as d:
            expected = {}
            for name in LIVE_TRACES:
                path = os.path.join(CORPUS, name)
                expected.update(replay_alerts(path))
                with open(path, 'rb') as f:
                    d.send_unix(f.read())
            total = 0
            for n in LIVE_TRACES:
                with open(os.path.join(CORPUS, n), 'rb') as f:
                    total += f.read().count(b'\n')
            # everything committed (records + events)
            got = d.wait_committed('SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM events)',
                                   total, timeout=60)
            self.assertEqual(got, total)
            rows = d.sql('SELECT id, detector, step, line, severity, seg FROM alerts')
            live = {r[0]: list(r[1:]) for r in rows}
            self.assertEqual(live, expected)
            self.assertTrue(expected)


if __name__ == '__main__':
    unittest.main()
