"""Threshold ranges in the real binaries: a configuration with a threshold
outside its range (the issue's examples, globally and per run, a window
that is no integer, thresholds that disagree) is refused with the file,
the key, the range and why -- by --check-config, by start-up and by
`gradwatch replay --config` -- and a SIGHUP reload with one keeps the old
configuration in force; `gradwatch thresholds` prints every range."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from gwtest import GRADWATCH, GRADWATCHD, Daemon, wait_for


def check(cfg):
    with tempfile.NamedTemporaryFile('w', suffix='.json') as f:
        json.dump(cfg, f)
        f.flush()
        r = subprocess.run([GRADWATCHD, '--config', f.name, '--check-config'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        return r.returncode, r.stderr.decode().replace(f.name, 'CFG')


class Refused(unittest.TestCase):
    def test_the_issues_examples(self):
        rc, err = check({'thresholds': {'mr_post': -1}})
        self.assertEqual(rc, 1)
        self.assertEqual(err.strip(), 'gradwatchd: CFG: thresholds.mr_post must be an integer in '
                         '[1, 512], not -1: records: at least 1; mr_post + mr_gap + mr_pre must fit '
                         'in the 512 of the history')
        rc, err = check({'runs': [{'match': 'x*', 'thresholds': {'post_window': -5}}]})
        self.assertEqual(rc, 1)
        self.assertIn('CFG: runs[0].thresholds.post_window must be an integer in [1, 32], not -5: '
                      'samples:', err)

    def test_more_refusals(self):
        for cfg, says in (
                ({'thresholds': {'post_window': 7.5}}, 'thresholds.post_window must be an integer'),
                ({'thresholds': {'thr_collapse': 0}}, 'thresholds.thr_collapse must be in (0, 0.75], not 0'),
                ({'thresholds': {'lr_jump': 1}}, 'thresholds.lr_jump must be in (1, 1000], not 1'),
                ({'thresholds': {'stall_live_ratio': 2}}, 'stall_live_ratio must be in (0, 1], not 2'),
                ({'thresholds': {'post_window_min': 9}},
                 'CFG: thresholds: post_window_min (9) must not exceed post_window (8)'),
                ({'thresholds': {'post_window': 4}, 'runs': [{'match': '*', 'thresholds': {'post_window': 8}}]},
                 'CFG: thresholds: post_window_min (5) must not exceed post_window (4)'),
                ({'runs': [{'match': '*', 'thresholds': []}]}, 'runs[0].thresholds must be an object'),
                ({'thresholds': {'nope': 1}}, 'unknown threshold "thresholds.nope"')):
            rc, err = check(cfg)
            self.assertEqual(rc, 1, (cfg, err))
            self.assertIn(says, err, cfg)

    def test_agreeing_values_pass(self):
        rc, err = check({'thresholds': {'post_window': 4, 'post_window_min': 3},
                         'runs': [{'match': 'x*', 'thresholds': {'post_window': 32, 'mr_pre': 472}}]})
        self.assertEqual(rc, 0, err)

    def test_start_up_and_replay_refuse_too(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, 'c.json')
            with open(cfg, 'w') as f:
                json.dump({'thresholds': {'mr_post': -1}}, f)
            r = subprocess.run([GRADWATCHD, '--config', cfg, '--db', os.path.join(tmp, 'db'),
                                '--socket', os.path.join(tmp, 's'), '--tcp', 'off', '--udp', 'off',
                                '--http', 'off'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=30)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(b'thresholds.mr_post must be an integer in [1, 512], not -1', r.stderr)
            log = os.path.join(tmp, 'l.jsonl')
            with open(log, 'w') as f:
                f.write('{"run":"r","step":1,"loss":1}\n')
            r = subprocess.run([GRADWATCH, '--config', cfg, 'replay', log],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
            self.assertEqual(r.returncode, 2)
            self.assertIn(b'thresholds.mr_post must be an integer in [1, 512], not -1', r.stderr)

    def test_gradwatch_thresholds_prints_the_ranges(self):
        out = subprocess.run([GRADWATCH, 'thresholds'], stdout=subprocess.PIPE, check=True,
                             timeout=30).stdout.decode()
        names = [l.split()[0] for l in out.splitlines() if not l.startswith(' ')]
        self.assertIn('mr_post', names)
        self.assertIn('stall_live_ratio', names)
        [mr] = [l for l in out.splitlines() if l.startswith('mr_post ')]
        self.assertRegex(mr, r'^mr_post +32 +integer in \[1, 512\] +mid-run')
        self.assertEqual(out.count('\n'), 2 * len(names))
        self.assertEqual(sum(1 for l in out.splitlines() if l.lstrip().startswith('range: ')), len(names))


class DetectorsOwn(unittest.TestCase):
    """loss_scale's ls_* live in det_loss_scale.c's own table, not in
    thresholds.h: the binaries refuse, print, write and apply them per run
    as they do the shared ones."""

    def test_refused_with_the_range_and_why(self):
        rc, err = check({'thresholds': {'ls_storm_n': 1}})
        self.assertEqual(rc, 1)
        self.assertEqual(err.strip(), 'gradwatchd: CFG: thresholds.ls_storm_n must be an integer '
                         'in [2, 1e+09], not 1: overflows: at least 2 (one is routine)')
        rc, err = check({'runs': [{'match': 'x*', 'thresholds': {'ls_low': 0}}]})
        self.assertEqual(rc, 1)
        self.assertIn('CFG: runs[0].thresholds.ls_low must be in (0, 1e+12], not 0: a scale: '
                      'above 0', err)

    def test_check_config_writes_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, 'c.json')
            with open(cfg, 'w') as f:
                json.dump({'thresholds': {'ls_storm_n': 6},
                           'runs': [{'match': 'x*', 'thresholds': {'ls_gap': 5}}]}, f)
            r = subprocess.run([GRADWATCHD, '--config', cfg, '--check-config'], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                               env=dict(os.environ, XDG_STATE_HOME=tmp + '/state',
                                        XDG_RUNTIME_DIR=tmp + '/run'))
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual(out['thresholds']['ls_storm_n'], 6)
            self.assertEqual(out['thresholds']['ls_gap'], 3)
            self.assertEqual(out['runs'][0]['thresholds']['ls_gap'], 5)
            self.assertEqual(out['runs'][0]['thresholds']['ls_storm_n'], 6)

    def test_printed_by_gradwatch_thresholds(self):
        out = subprocess.run([GRADWATCH, 'thresholds'], stdout=subprocess.PIPE, check=True,
                             timeout=30).stdout.decode()
        [ls] = [l for l in out.splitlines() if l.startswith('ls_storm_n ')]
        self.assertRegex(ls, r'^ls_storm_n +4 +integer in \[2, 1e\+09\] +overflow storm')

    def test_a_run_glob_applies_to_its_runs_only(self):
        # a storm of two overflows down to a scale of 4: an alert with
        # ls_storm_n 2 (the glob's), none with the default 4
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, 'c.json')
            with open(cfg, 'w') as f:
                json.dump({'runs': [{'match': 'touchy-*', 'thresholds': {'ls_storm_n': 2}}]}, f)
            log = os.path.join(tmp, 'l.jsonl')
            with open(log, 'w') as f:
                for run in ('calm', 'touchy-1'):
                    for step, (a, b) in enumerate(((16, 8), (8, 4)), 100):
                        f.write(json.dumps({'run': run, 'step': step, 'event': 'overflow',
                                            'attempted_loss_scale': a, 'loss_scale': b}) + '\n')
            r = subprocess.run([GRADWATCH, '--config', cfg, 'replay', '--format', 'jsonl', log],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
            self.assertEqual(r.returncode, 1, r.stderr)   # 1: a warning or worse was found
            alerts = [json.loads(l) for l in r.stdout.decode().splitlines()]
            self.assertEqual([(a['run'], a['detector']) for a in alerts], [('touchy-1', 'loss_scale')])
            self.assertIn('2 overflows in a row', alerts[0]['summary'])


class Reload(unittest.TestCase):
    def test_a_bad_reload_keeps_the_old_thresholds(self):
        good = {'tick_ms': 50, 'thresholds': {'stall_min_seconds': 1, 'stall_factor': 5}}
        with Daemon(config=good) as d:
            path = os.path.join(d.dir, 'config.json')
            # the bad file would also make stalls take an hour, if any of it applied
            with open(path, 'w') as f:
                json.dump({'tick_ms': 50, 'thresholds': {'stall_min_seconds': 3600, 'post_window': -5}}, f)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'keeping the old configuration' in d.logtext(), 60, 'the refusal')
            self.assertIn('thresholds.post_window must be an integer in [1, 32], not -5', d.logtext())
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(d.sock)
                for step in range(1, 31):
                    s.sendall((json.dumps({'run': 'r', 'step': step, 'loss': 2.0, 'grad_norm': 0.5,
                                           'ts': time.time()}) + '\n').encode())
                    time.sleep(0.02)    # the run's cadence
                wait_for(lambda: d.sql("SELECT count(*) FROM alerts WHERE detector = 'stall'")[0][0],
                         60, 'a stall under the old thresholds', interval=0.1)


    def test_a_reload_says_what_it_did_not_apply(self):
        # SIGHUP applies thresholds, run overrides, detectors and the log
        # level; a changed sink, listener or storage setting waits for a
        # restart.  The reload said "reloaded" and nothing else, so an
        # operator who added a Slack sink and sent SIGHUP believed it live.
        with Daemon(config={'tick_ms': 50}) as d:
            path = os.path.join(d.dir, 'config.json')
            with open(path, 'w') as f:
                json.dump({'tick_ms': 50, 'thresholds': {'gap_min_seconds': 999}}, f)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'reloaded thresholds' in d.logtext(), 60, 'the first reload')
            # the flags the test daemon runs with (--db, --socket, --tcp,
            # --http, --log-level) differ from the file: not a change
            self.assertNotIn('need a restart', d.logtext())
            with open(path, 'w') as f:
                json.dump({'tick_ms': 50, 'thresholds': {'gap_min_seconds': 999},
                           'storage': {'commit_interval_ms': 50},
                           'sinks': [{'type': 'webhook', 'url': 'http://127.0.0.1:9/h'}]}, f)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: d.logtext().count('reloaded thresholds') == 2, 60, 'the second reload')
            # (said in a log line of its own, after the one above)
            wait_for(lambda: 'need a restart' in d.logtext(), 60, 'what the reload did not apply')
            [line] = [l for l in d.logtext().splitlines() if 'need a restart' in l]
            self.assertIn('sinks', line)
            self.assertIn('storage', line)
            for key in ('thresholds', 'socket', 'http', 'tcp', 'database', 'log_level'):
                self.assertNotIn(key + ',', line + ',')
            self.assertEqual(d.get('/healthz')[0], 200)

    def test_the_log_level_flag_outlives_a_reload(self):
        # flags override the file "wherever they stand"; a SIGHUP put the
        # file's level (here the default, info) over --log-level debug
        with Daemon(config={'tick_ms': 50}) as d:       # runs with --log-level debug
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: 'reloaded thresholds' in d.logtext(), 60, 'the reload')
            d.send_unix(b'{"run":"r","step":1,"loss":1}\n')
            wait_for(lambda: re.search(r' debug unix connection \d+ \(unix\) closed', d.logtext()),
                     60, 'a debug line after the reload')

if __name__ == '__main__':
    unittest.main()
