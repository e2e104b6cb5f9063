"""Detection quality, measured with the evaluation scorer (../shared/eval/score.py)
on the dev corpus and on the real-world logs, through `gradwatch replay
--format jsonl`: the scorer's own exit status decides."""
import os
import subprocess
import sys
import unittest

from gwtest import CORPUS, REALWORLD, SHARED, GRADWATCH

SCORE = os.path.join(SHARED, 'eval', 'score.py')


def score(corpus, *opts):
    cmd = [sys.executable, SCORE, corpus, '--max-errors', '0'] + list(opts) + \
          ['--', GRADWATCH, 'replay', '--format', 'jsonl']
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return r.returncode, r.stdout.decode()


class Corpus(unittest.TestCase):
    def test_nonfinite_on_nan_traces_and_silence_on_clean_ones(self):
        # the NaN traces are caught, by nonfinite, and the negatives stay quiet
        rc, out = score(CORPUS, '--only', 'd03.jsonl,d21.jsonl,d02.jsonl,d04.jsonl,d05.jsonl,'
                        'd06.jsonl,d12.jsonl,d16.jsonl,g00n.jsonl,g01n.jsonl',
                        '--min-recall', '1.0', '--max-false', '0')
        self.assertEqual(rc, 0, out)
        for name in ('d03.jsonl', 'd21.jsonl'):
            line = [l for l in out.splitlines() if name in l][0]
            self.assertTrue(line.startswith('PASS') and 'nonfinite' in line, line)

    def test_realworld_nan_run(self):
        rc, out = score(REALWORLD, '--only', 'llmc-gpt2-124m-hector-nan.jsonl,'
                        'llmc-gpt2-124m-hector-killed.jsonl', '--max-false', '0')
        self.assertEqual(rc, 0, out)
        # the NaN run is an incident with every alert allowed; make sure
        # nonfinite is among them
        r = subprocess.run([GRADWATCH, 'replay', '--format', 'jsonl',
                            os.path.join(REALWORLD, 'llmc-gpt2-124m-hector-nan.jsonl')],
                           stdout=subprocess.PIPE)
        self.assertIn(b'"detector":"nonfinite"', r.stdout)


if __name__ == '__main__':
    unittest.main()
