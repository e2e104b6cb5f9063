// Unit test of web/src/figures.js in node, no browser: the arithmetic
// behind the run page's pictures (smoothing, the resume alerts' windows,
// the restart panel's numbers, the warm-up clip) and the number formats,
// on small inputs whose answers are worked out by hand.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {createRequire} from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
createRequire(import.meta.url)(path.join(here, '..', '..', 'web', 'src', 'figures.js'));
const F = globalThis.gwFigures;

test('smoothing: the first point and each restart are the raw value; far-apart points stay as they are', () => {
  const x = [1, 2, 3, 4, 5, 6], y = [1, 3, 3, 3, 10, 10];
  const s = F.smoothed(x, y, [5], 0.9);
  assert.equal(s[0], 1);
  assert.ok(s[1] > 1 && s[1] < 3, `between the two: ${s[1]}`);
  assert.equal(s[4], 10, 'step 5 starts a segment: its own value');
  assert.equal(s[5], 10);
  // unit = (6 - 1) / 1000 steps: a step apart is 200 units, weight 0.9^200
  const far = F.smoothed([0, 1000, 2000], [1, 2, 3], [], 0.9);
  far.forEach((v, i) => assert.ok(Math.abs(v - [1, 2, 3][i]) < 1e-6, `${i}: ${v}`));
  assert.deepEqual(F.smoothed([1, 2, 3], [null, 2, null], [], 0.5), [null, 2, null]);
});

test('alert windows: open resume alerts by restart, the worst severity, the crash step; others ignored', () => {
  const ws = F.alertWindows([
    {detector: 'optimizer_reset', state: 'open', severity: 'warning', step: 1006, evidence: {restart_step: 1000, crash_step: 1040}},
    {detector: 'resume_regression', state: 'open', severity: 'critical', step: 1011, evidence: {restart_step: 1000}},
    {detector: 'resume_mismatch', state: 'resolved', severity: 'critical', step: 500, evidence: {resumed_from_step: 500}},
    {detector: 'nonfinite', state: 'open', severity: 'critical', step: 1420, evidence: {}},
    {detector: 'resume_mismatch', severity: 'info', step: 2000, evidence: {resumed_from_step: 2000}},
  ]);
  assert.deepEqual(ws, [
    {from: 1000, to: 1011, crash: 1040, severity: 'critical', detectors: ['optimizer_reset', 'resume_regression']},
    {from: 2000, to: 2000, crash: null, severity: 'info', detectors: ['resume_mismatch']},
  ]);
  assert.equal(F.focusWindow(ws).from, 1000, 'the worst first');
  assert.equal(F.focusWindow([]), null);
});

test('the restart\'s numbers: medians before and after, the replay gap', () => {
  const x = [1, 2, 3, 4, 5, 6], y = [1, 1, 2, 4, 4, 8];
  assert.equal(F.change('loss', x, y, 1, 3, 4, 6), 'loss 1 → 4 (+300%)');
  assert.equal(F.change('grad norm', x, [4, 4, 4, 1, 2, 3], 1, 3, 4, 6), 'grad norm 4 → 2 (−50%)');
  assert.equal(F.change('loss', x, y, 10, 20, 4, 6), null, 'no values before');
  // log ratios ln 2 and ln 1/2: RMS ln 2 = 69.3%
  assert.equal(F.replayGap('loss', [2, 1, null], [1, 2, 5]), 'loss 69.3%');
  assert.equal(F.replayGap('loss', [1], [null]), null);
});

test('the warm-up clip: only the first 5% of the run, only when it is over twice what follows', () => {
  const x = Array.from({length: 100}, (_, i) => i + 1);
  const warm = x.map((s) => (s <= 3 ? 20 : 1 + (s % 2) * 0.1));
  const c = F.warmupClip(x, [warm], 1, 100);
  assert.deepEqual([c.lo, c.hi, c.peak, c.step], [1, 1.1, 20, 1]);
  const spike = x.map((s) => (s === 60 ? 20 : 1));
  assert.equal(F.warmupClip(x, [spike], 1, 100), null, 'a later spike is never clipped');
  const mild = x.map((s) => (s <= 3 ? 2 : 1.1));
  assert.equal(F.warmupClip(x, [mild], 1, 100), null, 'under twice: left alone');
});

test('the spike clip: a value far above the run\'s level, not a run that falls or a few bumps', () => {
  const x = Array.from({length: 200}, (_, i) => i + 1);
  // a grad norm of 20,000 over a level of 8 (issue 19's ms-swift run)
  const g = x.map((s) => (s === 150 ? 20000 : 8 + (s % 5) * 0.2));
  const c = F.spikeClip(x, [g], 1, 200);
  assert.deepEqual([c.lo, c.hi, c.peak, c.step, c.over], [8, 8.8, 20000, 150, 1]);
  const falling = x.map((s) => 10 / Math.sqrt(s));
  assert.equal(F.spikeClip(x, [falling], 1, 200), null, 'a loss that falls from 10 to 0.7 keeps its axis');
  const bumps = x.map((s) => (s % 50 === 0 ? 2.5 : 1));
  assert.equal(F.spikeClip(x, [bumps], 1, 200), null, 'bumps under 4x the 98th percentile stay in view');
  assert.equal(F.spikeClip(x.slice(0, 10), [g.slice(0, 9).concat([20000])], 1, 10), null, 'under 20 values: left alone');
  // applies while the view spans half the run; zoomed in, all is shown
  assert.equal(F.clipOn(c, 1, 200), true);
  assert.equal(F.clipOn(c, 140, 160), false);
});

test('numbers and ticks as people read them', () => {
  assert.equal(F.fmtNum(3e-4), '3e-4');
  assert.equal(F.fmtNum(1177537), '1,177,537');
  assert.equal(F.fmtNum(0.59745), '0.59745');
  assert.equal(F.plural(1, 'record'), '1 record');
  assert.equal(F.plural(1640, 'record'), '1,640 records');
  assert.deepEqual(F.fmtTicks([0.07995, 0.08]), ['0.07995', '0.08']);
  assert.deepEqual(F.fmtTicks([100000, 200000, 300000]), ['100k', '200k', '300k']);
});
