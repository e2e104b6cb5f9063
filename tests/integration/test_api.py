"""HTTP API beyond ingest: the resume gate (POST /v1/runs/{run}/resume-check),
which must agree with the resume_mismatch alert on the same data."""
import json
import os
import unittest

from gwtest import Daemon, CORPUS


def events(path, name):
    with open(path) as f:
        return [json.loads(l) for l in f if '"event":"%s"' % name in l]


class ResumeGate(unittest.TestCase):
    def check(self, d, run, manifest):
        status, body = d.post('/v1/runs/%s/resume-check' % run, json.dumps(manifest).encode())
        self.assertEqual(status, 200, body)
        return body

    def test_gate_agrees_with_the_detector(self):
        with Daemon() as d:
            for trace, expect_ok in (('d11.jsonl', False), ('d07.jsonl', False), ('d23.jsonl', False),
                                     ('d10.jsonl', False), ('d02.jsonl', True)):
                path = os.path.join(CORPUS, trace)
                with open(path) as f:
                    lines = f.readlines()
                resumed = events(path, 'resumed')[0]
                idx = next(i for i, l in enumerate(lines) if '"event":"resumed"' in l)
                # the job up to its crash, then the gate is asked before resuming
                self.assertIn(d.post('/v1/ingest', ''.join(lines[:idx]).encode())[0], (200, 422))
                manifest = {k: v for k, v in resumed.items() if k not in ('run', 'step', 'ts', 'event')}
                body = self.check(d, resumed['run'], manifest)
                self.assertEqual(body['ok'], expect_ok, (trace, body))
                self.assertEqual(body['checkpoint_step'], resumed['checkpoint_step'])
                # the detector says the same thing at the resumed line
                d.post('/v1/ingest', ''.join(lines[idx:idx + 5]).encode())
                status, al = d.get('/v1/runs/%s/alerts' % resumed['run'])
                mism = [a for a in al['alerts'] if a['detector'] == 'resume_mismatch']
                self.assertEqual(bool(mism), not expect_ok, (trace, al))
                if mism:
                    self.assertEqual([x['message'] for x in mism[0]['evidence']['differences']],
                                     [x['message'] for x in body['differences']])
                    self.assertIn('cause', body)

    def test_bad_manifest_and_unknown_run(self):
        with Daemon() as d:
            status, body = d.post('/v1/runs/x/resume-check', b'[1,2]')
            self.assertEqual(status, 400)
            body = self.check(d, 'never-seen', {'optimizer': 'AdamW', 'optimizer_state_keys': ['exp_avg'],
                                               'optimizer_state_loaded': True})
            self.assertTrue(body['ok'])
            self.assertIsNone(body['checkpoint_step'])
            body = self.check(d, 'never-seen', {'optimizer': 'AdamW', 'optimizer_state_keys': [],
                                               'optimizer_state_loaded': False})
            self.assertFalse(body['ok'])

    def test_a_manifest_field_of_the_wrong_type_is_named(self):
        # hparams sent as a JSON string (encoded twice, a common slip) was
        # not compared at all and the gate answered ok: true
        with Daemon() as d:
            d.post('/v1/ingest', (json.dumps({'run': 'r', 'step': 5, 'event': 'checkpoint_saved',
                                              'optimizer': 'AdamW', 'hparams': {'lr': 1e-3, 'wd': 0.1},
                                              'optimizer_state_keys': ['exp_avg']}) + '\n').encode())
            for field, value, want in (('hparams', json.dumps({'wd': 0.2}), 'an object'),
                                       ('optimizer_state_loaded', 'yes', 'true or false'),
                                       ('optimizer_state_keys', 'exp_avg', 'an array'),
                                       ('optimizer', 5, 'a string'),
                                       ('param_names_sha256', ['ab'], 'a string')):
                status, body = d.post('/v1/runs/r/resume-check', json.dumps({field: value}).encode())
                self.assertEqual(status, 400, (field, body))
                self.assertIn(field, body['error'])
                self.assertIn(want, body['error'])
            status, body = d.post('/v1/runs/r/resume-check',
                                  b'{"optimizer_state_loaded":true,"optimizer_state_loaded":false}')
            self.assertEqual(status, 400, body)
            self.assertIn('duplicate', body['error'])
            self.assertIn('column', body['error'])
            # null is absent, as on the wire
            status, body = d.post('/v1/runs/r/resume-check', b'{"hparams":null,"optimizer":"AdamW"}')
            self.assertEqual((status, body['ok']), (200, True), body)


if __name__ == '__main__':
    unittest.main()
