// Browser test of what a run page shows before anyone clicks: a real
// gradwatchd fed the example trace (a resume from step 1,000 without the
// optimizer state) and, as a normal run, the same trace cut before its
// crash; Debian's Chromium headless at 1400x1000.
// What a user would check: with an open optimizer_reset the first screen
// shows loss rising and grad norm falling at the restart, big enough to see
// (measured in pixels against the medians computed from the input file),
// and the alert's window is marked on the charts; a normal run shows none
// of it; the smoothing control draws an EMA over the raw line that starts
// again at each restart, and the view settings (smoothing, log scale) are
// remembered across pages.
import {test, before, after} from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {ARTIFACT_DIR, Daemon, browserOrSkip, launch, lockedPage, ready} from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const EXAMPLE = path.join(here, '..', '..', 'examples', 'resume-without-optimizer.jsonl');
const RUN = 'example-gpt-1b', CLEAN = 'clean-run';
const puppeteer = browserOrSkip();
const trace = fs.readFileSync(EXAMPLE, 'utf8');
const lines = trace.split('\n').filter((l) => l.trim());

let daemon, browser;

before(async () => {
  daemon = await new Daemon().start();
  assert.equal((await daemon.ingest(trace)).rejected, 0);
  // a normal run: the first 900 steps, before the crash and the resume
  const clean = lines.slice(0, 900).map((l) => l.replace(`"run": "${RUN}"`, `"run": "${CLEAN}"`)).join('\n') + '\n';
  assert.equal((await daemon.ingest(clean)).rejected, 0);
  // a sparse log: 10 points, one every 100 steps (an eval-style cadence)
  const sparse = lines.slice(0, 10).map((l, i) => {
    const o = JSON.parse(l);
    return JSON.stringify({...o, run: 'sparse-run', step: 100 * (i + 1)});
  }).join('\n') + '\n';
  assert.equal((await daemon.ingest(sparse)).rejected, 0);
  browser = await launch(puppeteer);
});

after(async () => {
  if (browser) await browser.close();
  if (daemon) await daemon.stop();
});

/* The latest copy of each step, from the file alone: {step: record}. */
function latest() {
  const by = new Map();
  for (const l of lines) {
    const o = JSON.parse(l.replace(/\bNaN\b|-?Infinity\b/g, 'null'));
    if (o.event === undefined) by.set(o.step, o);
  }
  return by;
}

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Median of a metric over steps lo..hi (latest copies, finite values). */
function med(by, metric, lo, hi) {
  const v = [];
  for (let s = lo; s <= hi; s++) {
    const o = by.get(s);
    if (o && typeof o[metric] === 'number') v.push(o[metric]);
  }
  return median(v);
}

// Records fillRect calls on canvases (window.gwRects): x, width, colour.
async function recordRects(page) {
  await page.evaluateOnNewDocument(() => {
    window.gwRects = [];
    const fill = CanvasRenderingContext2D.prototype.fillRect;
    CanvasRenderingContext2D.prototype.fillRect = function (x, y, w, h) {
      window.gwRects.push({x, y, w, h, style: String(this.fillStyle), alpha: this.globalAlpha, canvas: this.canvas});
      return fill.call(this, x, y, w, h);
    };
  });
}

test('an open optimizer_reset: loss up and grad norm down at the restart, on the first screen, no click', async () => {
  const page = await lockedPage(browser);
  await recordRects(page);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  await page.waitForSelector('#gw-restart .gw-chart');
  // the panel is on the first screen, and says which restart it shows
  const box = await page.$eval('#gw-restart', (e) => {
    const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, text: e.querySelector('h2').textContent};
  });
  assert.ok(box.bottom <= 1000, `the restart panel ends at y=${box.bottom}, within the 1000 px window`);
  assert.match(box.text, /step 1,000/);

  // the medians of the 50 steps before the restart and of steps 1,002-1,030
  // (from the file), where the panel's charts draw them: each moves by at
  // least a quarter of its chart's height, loss up, grad norm down
  const by = latest();
  for (const [metric, dir] of [['loss', 'up'], ['grad_norm', 'down']]) {
    const pre = med(by, metric, 951, 1000), post = med(by, metric, 1002, 1030);
    const [yPre, yPost, h, lo, hi] = await page.evaluate((m, a, b) => {
      const u = window.gwView.restart.charts[m];
      return [u.valToPos(a, 'y'), u.valToPos(b, 'y'), u.bbox.height / devicePixelRatio, u.scales.x.min, u.scales.x.max];
    }, metric, pre, post);
    assert.ok(lo <= 951 && hi >= 1030, `${metric}: the panel shows steps ${lo}..${hi}`);
    const moved = dir === 'up' ? yPre - yPost : yPost - yPre;   // canvas y grows downwards
    assert.ok(moved >= h / 4, `${metric} ${dir} ${pre} -> ${post}: ${moved.toFixed(1)} px of a ${h} px chart`);
  }
  // it says so in words, with the numbers
  assert.match(await page.$eval('#gw-restart-caption', (e) => e.textContent), /loss .*\+\d+%.*grad norm .*−\d+%/);

  // the alert's window (restart to alert) is marked on the main charts,
  // wide enough to see
  const bands = await page.evaluate(() => window.gwView.bands);
  assert.ok(bands.some((b) => b.from === 1000 && b.to >= 1006), JSON.stringify(bands));
  const w = await page.evaluate(() => {
    const u = window.gwView.charts[1], x = u.valToPos(1003, 'x', true);
    return Math.max(0, ...window.gwRects.filter((r) => r.canvas === u.ctx.canvas && r.x <= x && r.x + r.w >= x &&
      r.h >= u.bbox.height * 0.9 && r.w < u.bbox.width / 2).map((r) => r.w / devicePixelRatio));
  });
  assert.ok(w >= 6, `the alert window is ${w}px wide on the grad norm chart`);
  fs.mkdirSync(ARTIFACT_DIR, {recursive: true});
  await page.screenshot({path: path.join(ARTIFACT_DIR, 'run-page-first-screen.png')});
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a normal run: no restart panel, no alert window', async () => {
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${CLEAN}`);
  await ready(page);
  assert.equal(await page.$('#gw-restart .gw-chart'), null);
  assert.deepEqual(await page.evaluate(() => window.gwView.bands), []);
  assert.deepEqual(page.errors, []);
  await page.close();
});

/* W&B's time-weighted EMA: debiased, the weight w per thousandth of the
 * chart's step range (unit), so it decays with the distance in steps;
 * started again at each restart (a segment's first step). */
function ema(steps, values, w, unit) {
  let last = 0, norm = 0, prev = null;
  return values.map((y, i) => {
    if (y === null) return null;
    const d = prev === null ? 0 : Math.pow(w, (steps[i] - prev) / unit);
    last = last * d + (1 - d) * y;
    norm = norm * d + (1 - d);
    prev = steps[i];
    return last / norm;
  });
}

test('smoothing: an EMA over the faint raw line, started again at the restart, remembered', async () => {
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  assert.equal(await page.$eval('#gw-smooth', (e) => e.value), '0.9', 'on by default, at 0.9');
  const by = latest();
  const steps = [...by.keys()].sort((a, b) => a - b);
  // the file's latest copies: segment 1 up to step 1,000, segment 2 after;
  // the chart spans steps 1-1,600
  const unit = (1600 - 1) / 1000, s1 = steps.filter((s) => s <= 1000), s2 = steps.filter((s) => s > 1000);
  const want = [...ema(s1, s1.map((s) => by.get(s).loss), 0.9, unit), ...ema(s2, s2.map((s) => by.get(s).loss), 0.9, unit)];
  const got = await page.evaluate(() => {
    const u = window.gwView.charts[0], i = u.series.findIndex((s) => s.label === 'smoothed');
    return {i, n: u.series.length, alpha: u.series[1].alpha, x: u.data[0], y: i < 0 ? null : u.data[i]};
  });
  assert.equal(got.i, got.n - 1, 'the smoothed line is drawn last (on top)');
  assert.ok(got.alpha < 0.6, `the raw line is faint behind it (alpha ${got.alpha})`);
  for (const s of [1, 2, 500, 1000, 1001, 1002, 1300, 1600]) {
    const j = got.x.indexOf(s), k = steps.indexOf(s);
    assert.ok(Math.abs(got.y[j] - want[k]) <= 1e-9 * Math.abs(want[k]), `step ${s}: ${got.y[j]} against ${want[k]}`);
  }
  // the restart is not smoothed away: the first resumed step is its own value
  const first = got.y[got.x.indexOf(1001)], raw = by.get(1001).loss;
  assert.ok(Math.abs(first - raw) <= 1e-12 * raw, `step 1,001 smoothed ${first}, raw ${raw}`);
  // off: no smoothed line, the raw line at full strength; remembered on reload
  await page.$eval('#gw-smooth', (e) => { e.value = '0'; e.dispatchEvent(new Event('input', {bubbles: true})); });
  await page.waitForFunction(() => !window.gwView.charts[0].series.some((s) => s.label === 'smoothed'));
  assert.equal(await page.evaluate(() => window.gwView.charts[0].series[1].alpha), 1);
  await page.click('#gw-log');
  await page.waitForFunction(() => window.gwView.charts[0].scales.y.distr === 3);
  await page.goto(`${daemon.base}/runs/${CLEAN}`);
  await ready(page);
  assert.equal(await page.$eval('#gw-smooth', (e) => e.value), '0', 'smoothing off is remembered');
  assert.equal(await page.$eval('#gw-log', (e) => e.checked), true, 'log scale is remembered');
  assert.equal(await page.evaluate(() => window.gwView.charts[0].scales.y.distr), 3);
  // a sparse log is drawn as it is: its points are far apart in steps
  await page.evaluate(() => localStorage.clear());
  await page.goto(`${daemon.base}/runs/sparse-run`);
  await ready(page);
  const sp = await page.evaluate(() => {
    const u = window.gwView.charts[0], i = u.series.findIndex((s) => s.label === 'smoothed');
    return [u.data[1], i < 0 ? null : u.data[i]];
  });
  assert.ok(sp[1], 'smoothing is on');
  sp[0].forEach((y, i) => assert.ok(Math.abs(sp[1][i] - y) <= 1e-3 * y, `point ${i}: smoothed ${sp[1][i]}, raw ${y}`));
  // back to the defaults for the other tests
  await page.evaluate(() => localStorage.clear());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('every chart\'s value axis has at least three labelled ticks (a 30-point log, grad norm 3.6-5.6)', async () => {
  // shaped like a Trainer's trainer_state.json logged every 400 steps
  let body = '';
  for (let i = 0; i < 30; i++)
    body += JSON.stringify({run: 'few-ticks', step: 401 + 400 * i, loss: 1.1 * Math.exp(-i / 3) + 0.05,
      grad_norm: 4.6 + Math.sin(i) * 0.8 + (i === 18 ? 0.9 : 0), lr: 1e-5}) + '\n';
  assert.equal((await daemon.ingest(body)).rejected, 0);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/few-ticks`);
  await ready(page);
  const axes = await page.evaluate(() => window.gwView.charts.map((u) => {
    const a = u.axes[1], s = u.scales.y;
    const labels = a.values(u, a._splits, 1, 0, 0).map(String).filter((t, i) => t !== '' && a._splits[i] >= s.min && a._splits[i] <= s.max);
    return [u.gwMetric, labels];
  }));
  for (const [metric, labels] of axes) assert.ok(labels.length >= 3, `${metric}: ticks ${labels.join(' | ')}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a warm-up\'s grad norms do not flatten the run: the axis fits what follows, the heading says what runs off the top', async () => {
  // grad norm 15 at step 1, down to 0.5 by step 20, then 0.5 and a drop
  // to 0.25 from step 600 (the picture of a reset, on a real run's scale)
  let body = '';
  for (let s = 1; s <= 1000; s++) {
    const g = s <= 20 ? 15 - (14.5 * (s - 1)) / 19 : s < 600 ? 0.5 + 0.03 * Math.sin(s) : 0.25 + 0.02 * Math.sin(s);
    body += JSON.stringify({run: 'warm-up', step: s, loss: 3 - s / 1000, grad_norm: g}) + '\n';
  }
  assert.equal((await daemon.ingest(body)).rejected, 0);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/warm-up`);
  await ready(page);
  const [moved, h] = await page.evaluate(() => {
    const u = window.gwView.charts.find((c) => c.gwMetric === 'grad_norm');
    return [u.valToPos(0.25, 'y') - u.valToPos(0.5, 'y'), u.bbox.height / devicePixelRatio];
  });
  assert.ok(moved >= h / 4, `0.5 -> 0.25 is ${moved.toFixed(1)} px of a ${h} px chart`);
  assert.match(await page.$eval('#chart-grad_norm .gw-clip', (e) => e.textContent), /reach 15 at step 1, above the top/);
  // zoomed on the warm-up, or on a log axis, it is all there
  await page.evaluate(() => window.gwView.charts[0].setScale('x', {min: 1, max: 40}));
  await page.waitForFunction(() => window.gwView.charts.find((c) => c.gwMetric === 'grad_norm').scales.y.max >= 15);
  await page.click('#gw-reset');
  await page.click('#gw-log');
  await page.waitForFunction(() => window.gwView.charts[0].scales.y.distr === 3);
  await page.waitForFunction(() => window.gwView.charts.find((c) => c.gwMetric === 'grad_norm').scales.y.max >= 15);
  assert.equal(await page.$eval('#chart-grad_norm .gw-clip', (e) => e.textContent), '');
  await page.evaluate(() => localStorage.clear());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a grad-norm spike of 20,000 over a level of 8: the axis fits the level, the heading names the spike, the legend shows values unhovered', async () => {
  let body = '';
  for (let s = 1; s <= 600; s++) {
    const g = s === 400 ? 20000 : 8 + 0.5 * Math.sin(s);
    body += JSON.stringify({run: 'spike-axis', step: s, loss: 2 + 0.1 * Math.cos(s), grad_norm: g}) + '\n';
  }
  assert.equal((await daemon.ingest(body)).rejected, 0);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/spike-axis`);
  await ready(page);
  const [top, span] = await page.evaluate(() => {
    const u = window.gwView.charts.find((c) => c.gwMetric === 'grad_norm');
    return [u.scales.y.max, u.valToPos(7.5, 'y') - u.valToPos(8.5, 'y')];
  });
  assert.ok(top < 100, `the axis reaches ${top}`);
  assert.ok(span >= 20, `the level's swing 7.5..8.5 is ${span.toFixed(1)} px`);
  assert.match(await page.$eval('#chart-grad_norm .gw-clip', (e) => e.textContent),
    /^1 value above the top, up to 20,000 at step 400/);
  // no hover: the legend holds the last step's values, not dashes
  const legend = await page.$eval('#chart-grad_norm .u-legend', (e) => e.textContent);
  assert.match(legend, /\d/, legend);
  assert.doesNotMatch(legend, /—/, legend);
  // zoomed on the spike it is all there
  await page.evaluate(() => window.gwView.charts[0].setScale('x', {min: 390, max: 410}));
  await page.waitForFunction(() => window.gwView.charts.find((c) => c.gwMetric === 'grad_norm').scales.y.max >= 20000);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a metric that is NaN at every step says so in its heading, not an empty axis', async () => {
  // llm.c's log of a run that was NaN from step 1 (loss and norm `nan`)
  let body = '';
  for (let s = 1; s <= 50; s++) body += `{"run": "all-nan", "step": ${s}, "loss": NaN, "grad_norm": NaN, "lr": ${1e-6 * s}}\n`;
  assert.equal((await daemon.ingest(body)).rejected, 0);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/all-nan`);
  await ready(page);
  for (const m of ['loss', 'grad_norm'])
    assert.equal(await page.$eval(`#chart-${m} .gw-clip`, (e) => e.textContent), 'no finite value: NaN or infinite at all 50 steps (the red marks)', m);
  assert.equal(await page.$eval('#chart-lr .gw-clip', (e) => e.textContent), '');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a streaming run with an open optimizer_reset: the restart panel keeps its charts and widens', async () => {
  const grow = (from, to) => lines.slice(from, to).map((l) => l.replace(`"run": "${RUN}"`, '"run": "growing"')).join('\n') + '\n';
  assert.equal((await daemon.ingest(grow(0, 1100))).rejected, 0);   // past both alerts (lines 1,046 and 1,051)
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/growing`);
  await ready(page);
  await page.waitForSelector('#gw-restart .gw-chart');
  const before = await page.evaluate(() => {
    window.gwView.restart.list.forEach((u) => { u.gwProbe = 'same chart'; });
    return window.gwView.restart.hi;
  });
  assert.equal((await daemon.ingest(grow(1100, 1400))).rejected, 0);
  await page.waitForFunction((h) => window.gwView.restart && window.gwView.restart.hi > h, {}, before);
  const after = await page.evaluate(() => window.gwView.restart.list.map((u) => [u.gwProbe, u.scales.x.max]));
  for (const [probe, max] of after) {
    assert.equal(probe, 'same chart');
    assert.ok(max > before, `the panel's range grew: ${before} -> ${max}`);
  }
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a long streaming run (downsampled): the restart panel keeps its detail between updates, never the overview\'s points', async () => {
  // the example stretched tenfold: every record ten times, steps 1-16,000,
  // the rewind to step 10,000, both resume alerts open
  const long = [];
  for (const l of lines) {
    const o = JSON.parse(l.replace(/\bNaN\b/g, 'null'));
    for (let k = 0; k < 10; k++) long.push(JSON.stringify({...o, run: 'long-reset', step: (o.step - 1) * 10 + k + 1}).replace(/null/g, 'NaN'));
  }
  assert.equal((await daemon.ingest(long.slice(0, 11000).join('\n') + '\n')).rejected, 0);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/long-reset`);
  await ready(page);
  assert.equal(await page.evaluate(() => window.gwView.data.downsampled), true);
  await page.waitForFunction(() => window.gwView.restartData && window.gwView.restart);
  // every picture the panel draws from now on, in points
  const detail = await page.evaluate(() => {
    window.gwSets = [];
    window.gwView.restart.list.forEach((u) => {
      const set = u.setData.bind(u);
      u.setData = (d, r) => { window.gwSets.push(d[0].length); return set(d, r); };
    });
    return window.gwView.restart.list[0].data[0].length;
  });
  assert.equal((await daemon.ingest(long.slice(11000, 11400).join('\n') + '\n')).rejected, 0);
  const lastStep = JSON.parse(long[11399]).step;
  await page.waitForFunction((s) => window.gwView.info.last_step >= s && window.gwSets.length >= 2 &&
    window.gwView.restartData && window.gwView.restartData.to >= window.gwView.restart.hi, {}, lastStep);
  const sets = await page.evaluate(() => window.gwSets);
  assert.ok(sets.every((n) => n >= detail * 0.8), `the panel drew ${sets.join(', ')} points; its detail had ${detail}`);
  // a zoom of the charts below to the start of the run leaves the panel as it was
  const range = await page.evaluate(() => [window.gwView.restart.lo, window.gwView.restart.hi]);
  await page.evaluate(() => window.gwView.charts[0].setScale('x', {min: 100, max: 3000}));
  await page.waitForFunction(() => window.gwView.ranged === true && !window.gwView.loading && !window.gwView.restartPending);
  const [lo, hi, n, xmin, xmax] = await page.evaluate(() => {
    const r = window.gwView.restart, u = r.list[0];
    return [r.lo, r.hi, u.data[0].length, u.scales.x.min, u.scales.x.max];
  });
  assert.deepEqual([lo, hi, xmin, xmax], [...range, ...range], 'the panel keeps its range');
  assert.ok(n >= detail * 0.8, `the panel draws ${n} points after the zoom; its detail had ${detail}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});
