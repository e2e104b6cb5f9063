// Browser test of gradwatchd's pages: a real gradwatchd fed the example
// trace (a resume without the optimizer state), Debian's Chromium headless.
// What a user would check: the run is listed, its chart draws the right
// number of points, the optimizer_reset marker sits at its step and a click
// shows its summary, /alerts/ID opens the run at the alert, the page keeps
// up while the run streams, nothing leaves loopback, and hostile run names
// are shown as text and never run as script; and what a person paged at
// night meets: a daemon restart under an open page, hundreds of runs, a
// run every rank of a job logs,
// numbers and times as they read them, contrast and dark mode, keyboard
// use, a live page that neither flickers nor grows.  Saves run-page.png
// (the README's screenshot) and run-page-dark.png in ARTIFACT_DIR.
// (About 800 lines: every test shares one gradwatchd and one Chromium,
// which take seconds to start; a test that needs a daemon of its own
// starts one.)
import {test, before, after} from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {ARTIFACT_DIR, Daemon, browserOrSkip, expectedPoints, launch, lockedPage, ready, WAIT_MS} from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const EXAMPLE = path.join(here, '..', '..', 'examples', 'resume-without-optimizer.jsonl');
const RUN = 'example-gpt-1b';
const puppeteer = browserOrSkip();
const trace = fs.readFileSync(EXAMPLE, 'utf8');

let daemon, browser;

before(async () => {
  daemon = await new Daemon().start();
  const r = await daemon.ingest(trace);
  assert.equal(r.rejected, 0);
  browser = await launch(puppeteer);
});

after(async () => {
  if (browser) await browser.close();
  if (daemon) await daemon.stop();
});

// Record where the page writes text on canvases (window.gwTexts: text, left
// and right edge, canvas), for labels uPlot draws.
async function recordCanvasText(page) {
  await page.evaluateOnNewDocument(() => {
    window.gwTexts = [];
    const fill = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
      const w = this.measureText(text).width;
      const left = this.textAlign === 'right' || this.textAlign === 'end' ? x - w : this.textAlign === 'center' ? x - w / 2 : x;
      window.gwTexts.push({text: String(text), left, right: left + w, canvas: this.canvas});
      return fill.call(this, text, x, y, ...rest);
    };
  });
}

test('the runs list shows the run with its open alerts', async () => {
  const page = await lockedPage(browser);
  await page.goto(daemon.base + '/');
  await ready(page);
  const row = await page.$(`tr[data-run="${RUN}"]`);
  assert.ok(row, 'the run is listed');
  const cells = await row.$$eval('td', (tds) => tds.map((t) => t.textContent));
  assert.equal(cells[0], RUN);
  assert.equal(cells[3], '1,600');             // last step
  assert.ok(Number(cells[5]) >= 2, 'open alerts counted: ' + cells[5]);
  const href = await row.$eval('a', (a) => a.getAttribute('href'));
  assert.equal(href, '/runs/' + RUN);
  await Promise.all([page.waitForNavigation(), row.$eval('a', (a) => a.click())]);
  await ready(page);
  assert.equal(new URL(page.url()).pathname, '/runs/' + RUN);
  assert.deepEqual(page.offsite, []);
  await page.close();
});

test('the run page: points, the optimizer_reset marker at its step, its summary on click', async () => {
  const alerts = (await daemon.get(`/v1/runs/${RUN}/alerts`)).alerts;
  const reset = alerts.find((a) => a.detector === 'optimizer_reset');
  assert.ok(reset, 'the daemon raised optimizer_reset');
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${encodeURIComponent(RUN)}`);
  await ready(page);
  assert.equal(await page.$eval('#gw-run-name', (e) => e.textContent), RUN);

  // every record is drawn (1,640 lines: 1,600 steps, 40 of them twice)...
  assert.equal(await page.evaluate(() => window.gwView.points()), 1640);
  // ... and each chart's main line has one point per step with a finite
  // value in its latest copy, as computed from the input file alone
  for (const m of ['loss', 'grad_norm', 'lr', 'throughput']) {
    const drawn = Number(await page.$eval(`#chart-${m}`, (e) => e.dataset.points));
    assert.equal(drawn, expectedPoints(trace, m), m);
  }
  // the superseded pre-crash copies are a series of their own
  const labels = await page.$$eval('#chart-loss .u-legend .u-label', (ls) => ls.map((l) => l.textContent));
  assert.ok(labels.some((l) => /segment 1 \(superseded\)/.test(l)), labels.join('|'));

  // the marker: at the alert's step, in pixels as the chart maps steps
  const marker = await page.$(`.gw-marker[data-alert-id="${reset.id}"]`);
  assert.ok(marker, 'a marker for the optimizer_reset alert');
  assert.equal(await marker.evaluate((e) => e.dataset.step), String(reset.step));
  assert.equal(reset.step, 1006);
  const [mx, want] = await page.evaluate((id, step) => {
    const u = window.gwView.charts[0];
    const b = document.querySelector(`.gw-marker[data-alert-id="${id}"]`).getBoundingClientRect();
    return [b.left + b.width / 2, u.over.getBoundingClientRect().left + u.valToPos(step, 'x')];
  }, reset.id, reset.step);
  assert.ok(Math.abs(mx - want) < 1.5, `marker at x=${mx}, step ${reset.step} maps to x=${want}`);

  // a click shows its summary, evidence, cause and what to check
  await marker.click();
  await page.waitForSelector('#gw-detail-summary');
  assert.equal(await page.$eval('#gw-detail-summary', (e) => e.textContent), reset.summary);
  const detail = await page.$eval('.gw-detail', (e) => e.textContent);
  assert.ok(detail.includes(reset.cause));
  assert.ok(detail.includes(reset.action));
  assert.ok(detail.includes('restart_step'), 'evidence is listed');

  fs.mkdirSync(ARTIFACT_DIR, {recursive: true});
  await page.screenshot({path: path.join(ARTIFACT_DIR, 'run-page.png'), fullPage: true});
  assert.deepEqual(page.offsite, [], 'no request left loopback');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('/alerts/ID opens the run zoomed on the alert', async () => {
  const alerts = (await daemon.get(`/v1/runs/${RUN}/alerts`)).alerts;
  const a = alerts.find((x) => x.detector === 'nonfinite') || alerts[0];
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/alerts/${encodeURIComponent(a.id)}`);
  await ready(page);
  await page.waitForSelector(`.gw-detail[data-alert-id="${a.id}"]`);
  assert.equal(await page.$eval('#gw-detail-summary', (e) => e.textContent), a.summary);
  const [min, max] = await page.evaluate(() => {
    const s = window.gwView.charts[0].scales.x;
    return [s.min, s.max];
  });
  assert.ok(min <= a.step && a.step <= max, `x range ${min}..${max} holds step ${a.step}`);
  assert.ok(max - min < 400, `zoomed in (${min}..${max})`);
  // an unknown alert is an error on the page, not a crash
  await page.goto(`${daemon.base}/alerts/gw-nope`);
  await page.waitForFunction(() => document.body.dataset.ready === 'error');
  assert.match(await page.$eval('.gw-error', (e) => e.textContent), /no alert with id "gw-nope"/);
  assert.deepEqual(page.offsite, []);
  await page.close();
});

test('from an alert link, at 3 am: summary and what to check on screen, the rest by keyboard', async () => {
  const alerts = (await daemon.get(`/v1/runs/${RUN}/alerts`)).alerts;
  const reset = alerts.find((a) => a.detector === 'optimizer_reset');
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/alerts/${encodeURIComponent(reset.id)}`);
  await ready(page);
  await page.waitForSelector(`.gw-detail[data-alert-id="${reset.id}"]`);
  // the detector's name and "segment · step" do not run together
  const gap = await page.$eval('.gw-detail .gw-alert-head', (h) => {
    const name = h.querySelector('strong').getClientRects(), where = h.querySelector('.gw-muted').getClientRects()[0];
    const last = name[name.length - 1];
    return where.top >= last.bottom - 1 ? 99 : where.left - last.right;   // 99: on a line of its own
  });
  assert.ok(gap >= 4, `space between the detector and its step: ${gap}px`);
  // what to check and the likely cause come before the evidence, and what
  // to check is on the first screen (1400x1000) without scrolling
  const order = await page.$$eval('.gw-detail h4', (hs) => hs.map((h) => h.textContent));
  assert.deepEqual(order, ['What to check', 'Likely cause', 'Evidence']);
  const [bottom, height] = await page.evaluate(() => {
    const h = [...document.querySelectorAll('.gw-detail h4')].find((x) => x.textContent === 'What to check');
    return [h.nextElementSibling.getBoundingClientRect().bottom, window.innerHeight];
  });
  assert.ok(bottom <= height, `what to check ends at y=${bottom}, the window is ${height} high`);

  // keyboard: Tab reaches every alert of the list, Enter opens it
  const other = alerts.find((a) => a.id !== reset.id);
  let focused = null;
  for (let i = 0; i < 80 && focused !== other.id; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement.closest('.gw-alerts li')?.dataset.alertId ?? null);
  }
  assert.equal(focused, other.id, 'an alert of the list takes the focus');
  await page.keyboard.press('Enter');
  await page.waitForSelector(`.gw-detail[data-alert-id="${other.id}"]`);
  assert.equal(await page.$eval('#gw-detail-summary', (e) => e.textContent), other.summary);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the restart is labelled on its own side of the dashed line', async () => {
  const page = await lockedPage(browser);
  await recordCanvasText(page);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  const [left, line] = await page.evaluate(() => {
    const u = window.gwView.charts[0];
    const t = window.gwTexts.filter((x) => x.canvas === u.ctx.canvas && /^segment 2 \(rewind from step 1,000\)$/.test(x.text)).pop();
    return [t ? t.left : null, u.valToPos(1001, 'x', true)];
  });
  assert.ok(left !== null, 'the restart is labelled');
  assert.ok(left > line, `the label starts at x=${left}, right of the line at x=${line} (over the segment it names)`);
  await page.close();
});

/* The lowest contrast (WCAG 2) of text against what is behind it, over
 * every element with text of its own on the page. */
async function lowestContrast(page) {
  return page.evaluate(() => {
    const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => [r, g, b].map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    }).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    const bg = (e) => {
      for (; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    let worst = {ratio: 99};
    for (const e of document.querySelectorAll('body *')) {
      if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
      if (!e.getClientRects().length) continue;
      const a = lum(rgb(getComputedStyle(e).color)), b = lum(bg(e));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < worst.ratio) worst = {ratio, text: e.textContent.slice(0, 40), cls: e.className};
    }
    return worst;
  });
}

test('text contrast meets WCAG AA (4.5:1) on the list and the run page', async () => {
  const page = await lockedPage(browser);
  for (const url of ['/', `/runs/${RUN}`]) {
    await page.goto(daemon.base + url);
    await ready(page);
    const worst = await lowestContrast(page);
    assert.ok(worst.ratio >= 4.5, `${url}: ${JSON.stringify(worst)}`);
  }
  await page.close();
});

test('"last record N s ago" ages while the page is open and nothing arrives', async () => {
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  const ago = () => page.$eval('.gw-run-head .gw-muted', (e) => e.textContent.match(/last record ([^·]*)/)[1].trim());
  const first = await ago();
  const secs = (t) => { const m = t.match(/^(\d+) s ago$/); return m ? Number(m[1]) : Infinity; };
  // time passes: the text must follow it (whatever the machine's speed)
  await page.waitForFunction((first) => {
    const t = document.querySelector('.gw-run-head .gw-muted').textContent.match(/last record ([^·]*)/)[1].trim();
    return t !== first;
  }, {polling: 200}, first);
  const later = await ago();
  assert.ok(secs(later) > secs(first), `${first} -> ${later}`);
  await page.close();
});

test('numbers: the hover legend and the axes say the value (an LR of 3e-4 is not "0")', async () => {
  // a run whose LR is tiny and whose throughput is large and nearly flat
  let body = '';
  for (let s = 1; s <= 200; s++)
    body += JSON.stringify({run: 'units', step: s, loss: 2.5 - s / 1000, grad_norm: 0.5,
      lr: 3e-4 * Math.min(1, s / 100) + 1e-7, throughput: 1234567 + (s % 7) * 1500}) + '\n';
  await daemon.ingest(body);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/units`);
  await ready(page);
  for (const [k, metric] of ['loss', 'grad_norm', 'lr', 'throughput'].entries()) {
    // hover step 150 on this chart: the legend shows the value drawn there
    const at = await page.evaluate((k) => {
      const u = window.gwView.charts[k];
      u.root.scrollIntoView({block: 'center'});
      const r = u.over.getBoundingClientRect();
      return {x: r.left + u.valToPos(150, 'x'), y: r.top + r.height / 2};
    }, k);
    await page.mouse.move(at.x, at.y);
    const [shown, value] = await page.evaluate((k) => {
      const u = window.gwView.charts[k], i = u.cursor.idx;
      return [u.root.querySelectorAll('.u-legend .u-value')[1].textContent, u.data[1][i]];
    }, k);
    const read = Number(shown.replace(/,/g, ''));
    assert.ok(Math.abs(read - value) <= Math.abs(value) * 1e-3, `${metric}: the legend says ${shown} for ${value}`);
    // every tick of the value axis has a label of its own
    const ticks = await page.evaluate((k) => {
      const u = window.gwView.charts[k], a = u.axes[1];
      return a.values(u, a._splits, 1, 0, 0).map(String);
    }, k);
    assert.equal(new Set(ticks).size, ticks.length, `${metric}: ticks ${ticks.join(' | ')}`);
  }
  await page.close();
});

test('an alert says when: opened (daemon clock) and the record\'s own time, in the browser\'s time zone with its offset', async () => {
  const alerts = (await daemon.get(`/v1/runs/${RUN}/alerts`)).alerts;
  const reset = alerts.find((a) => a.detector === 'optimizer_reset');
  assert.ok(reset.opened_at && reset.ts);
  const page = await lockedPage(browser);
  await page.emulateTimezone('Asia/Kolkata');   // UTC+05:30, no daylight saving
  await page.goto(`${daemon.base}/alerts/${reset.id}`);
  await ready(page);
  await page.waitForSelector('#gw-detail-when');
  const when = await page.$eval('#gw-detail-when', (e) => e.textContent);
  const ist = (secs) => new Date(Math.floor(secs) * 1000 + 330 * 60000).toISOString().slice(0, 19).replace('T', ' ') + ' UTC+05:30';
  assert.ok(when.includes('opened ' + ist(reset.opened_at)), when);
  assert.ok(when.includes('record time ' + ist(reset.ts)), when);
  await page.close();
});

test('zoomed into a long streaming run, new alerts and the run\'s position still show', async () => {
  let body = '';
  for (let s = 1; s <= 6000; s++) body += JSON.stringify({run: 'long-run', step: s, loss: 3 - s / 3000, grad_norm: 1, lr: 1e-4}) + '\n';
  await daemon.ingest(body);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/long-run`);
  await ready(page);
  assert.equal(await page.evaluate(() => window.gwView.data.downsampled), true);
  const box = await page.evaluate(() => {
    const u = window.gwView.charts[0], r = u.over.getBoundingClientRect();
    return {x0: r.left + u.valToPos(1000, 'x'), x1: r.left + u.valToPos(2000, 'x'), y: r.top + r.height / 2};
  });
  await page.mouse.move(box.x0, box.y);
  await page.mouse.down();
  await page.mouse.move(box.x1, box.y, {steps: 8});
  await page.mouse.up();
  await page.waitForFunction(() => window.gwView.ranged === true && window.gwView.zoom !== null);
  const zoom = await page.evaluate(() => window.gwView.zoom);
  let more = '';
  for (let s = 6001; s <= 6010; s++)
    more += JSON.stringify({run: 'long-run', step: s, loss: s === 6005 ? 'NaN' : 1, grad_norm: 1, lr: 1e-4}).replace('"NaN"', 'NaN') + '\n';
  await daemon.ingest(more);
  await page.waitForFunction(() => [...document.querySelectorAll('#gw-alerts li')].some((l) => /nonfinite/.test(l.textContent)),
    {polling: 200});
  assert.match(await page.$eval('.gw-run-head .gw-muted', (e) => e.textContent), /last step 6,010/);
  assert.deepEqual(await page.evaluate(() => window.gwView.zoom), zoom, 'the zoom stays');
  const [lo, hi] = await page.evaluate(() => [window.gwView.charts[0].scales.x.min, window.gwView.charts[0].scales.x.max]);
  assert.ok(Math.abs(lo - zoom[0]) < 1 && Math.abs(hi - zoom[1]) < 1, `${lo}..${hi}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('dark mode: the pages follow prefers-color-scheme, text and chart labels stay readable', async () => {
  const page = await lockedPage(browser);
  await page.emulateMediaFeatures([{name: 'prefers-color-scheme', value: 'dark'}]);
  await page.evaluateOnNewDocument(() => {
    window.gwTexts = [];
    const fill = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
      window.gwTexts.push({text: String(text), style: String(this.fillStyle), canvas: this.canvas});
      return fill.call(this, text, ...rest);
    };
  });
  for (const url of ['/', `/runs/${RUN}`]) {
    await page.goto(daemon.base + url);
    await ready(page);
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const [r, g, b] = bg.match(/\d+/g).map(Number);
    assert.ok(r + g + b < 3 * 60, `a dark background: ${bg}`);
    const worst = await lowestContrast(page);
    assert.ok(worst.ratio >= 4.5, `${url}: ${JSON.stringify(worst)}`);
  }
  // the charts' own text (ticks, axis labels, the restart label) against
  // the chart's panel
  const worst = await page.evaluate(() => {
    const rgb = (c) => {
      if (c.startsWith('#')) return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
      return c.match(/[\d.]+/g).slice(0, 3).map(Number);
    };
    const lum = (c) => rgb(c).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    }).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    const panel = lum(getComputedStyle(document.querySelector('.gw-chart')).backgroundColor);
    let w = {ratio: 99};
    for (const t of window.gwTexts) {
      if (!t.text.trim() || !document.querySelector('.gw-charts').contains(t.canvas)) continue;
      const a = lum(t.style), ratio = (Math.max(a, panel) + 0.05) / (Math.min(a, panel) + 0.05);
      if (ratio < w.ratio) w = {ratio, text: t.text, style: t.style};
    }
    return w;
  });
  assert.ok(worst.ratio >= 4.5, `chart text: ${JSON.stringify(worst)}`);
  fs.mkdirSync(ARTIFACT_DIR, {recursive: true});
  await page.screenshot({path: path.join(ARTIFACT_DIR, 'run-page-dark.png')});
  await page.close();
});

test('a run of a million steps: every tick label fits on its chart', async () => {
  let body = '';
  for (let s = 5000; s <= 1000000; s += 5000) body += JSON.stringify({run: 'million', step: s, loss: 2, grad_norm: 1}) + '\n';
  await daemon.ingest(body);
  const page = await lockedPage(browser);
  await recordCanvasText(page);
  await page.goto(`${daemon.base}/runs/million`);
  await ready(page);
  const out = await page.evaluate(() => window.gwTexts
    .filter((t) => document.querySelector('.gw-charts').contains(t.canvas) && t.text.trim())
    .filter((t) => t.left < -0.5 || t.right > t.canvas.width + 0.5)
    .map((t) => `${t.text} at ${Math.round(t.left)}..${Math.round(t.right)} of ${t.canvas.width}`));
  assert.ok(await page.evaluate(() => window.gwTexts.some((t) => t.text === '1,000,000')), 'the last step is labelled');
  assert.deepEqual(out, [], 'labels cut at the canvas edge');
  await page.close();
});

test('each chart has a text alternative a screen reader reads', async () => {
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/units`);
  await ready(page);
  const label = await page.$eval('#chart-lr', (e) => [e.getAttribute('role'), e.getAttribute('aria-label')]);
  assert.equal(label[0], 'figure');   // not img: the alert markers inside stay buttons
  assert.equal(label[1], 'Learning rate against step: 200 points, steps 1–200; last 3.001e-4 at step 200; lowest 3.1e-6, highest 3.001e-4');
  await page.close();
});

test('a run of one record: whole steps on the axis, "1 record"', async () => {
  await daemon.ingest(JSON.stringify({run: 'one-point', step: 1, grad_norm: 2}) + '\n');
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/one-point`);
  await ready(page);
  assert.equal(await page.$$eval('.gw-chart', (c) => c.map((e) => e.dataset.metric).join()), 'grad_norm');
  const ticks = await page.evaluate(() => {
    const u = window.gwView.charts[0];
    return u.axes[0]._splits;
  });
  assert.ok(ticks.length >= 1 && ticks.every(Number.isInteger), `steps on the axis: ${ticks.join(' ')}`);
  const head = await page.$eval('.gw-run-head .gw-muted', (e) => e.textContent);
  assert.match(head, /· 1 record$/);
  assert.match(await page.$eval('.gw-segments', (e) => e.textContent), /steps 1–1, 1 record$/);
  await page.close();
});

test('a run every rank of a job logs: the page says so, and which rank is behind', async () => {
  const lines = [];
  for (let s = 1; s <= 60; s++)
    for (let k = 0; k < 4; k++) {
      lines.push(JSON.stringify({run: 'ddp-interleaved', step: s, loss: 2 + k / 100, grad_norm: 0.5}));
      if (k !== 2 || s <= 50)
        lines.push(JSON.stringify({run: 'ddp-ranked', step: s, rank: k, loss: 2, grad_norm: 0.5}));
    }
  const r = await daemon.ingest(lines.join('\n') + '\n');
  assert.equal(r.rejected, 0);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/ddp-interleaved`);
  await ready(page);
  assert.match(await page.$eval('#gw-writers', (e) => e.textContent),
    /^Several processes log this run \(recognised at step 2\): their repeats of a step are kept apart/);
  await page.goto(`${daemon.base}/runs/ddp-ranked`);
  await ready(page);
  assert.match(await page.$eval('#gw-writers', (e) => e.textContent),
    /^Also sending: 3 other ranks \(kept apart, up to rank 3\); furthest behind: rank 2 at step 50/);
  assert.match(await page.$eval('.gw-segments', (e) => e.textContent), /^segment 1 \(start\): steps 1–60, 60 records$/);
  await page.close();
});

test('an alert link into a long run opens on the alert\'s neighbourhood, in detail', async () => {
  let body = '';
  for (let s = 10; s <= 500000; s += 10)
    body += JSON.stringify({run: 'long-alert', step: s, loss: s === 250000 ? 'NaN' : 2 - s / 1e6, grad_norm: 1}).replace('"NaN"', 'NaN') + '\n';
  await daemon.ingest(body);
  const a = (await daemon.get('/v1/runs/long-alert/alerts')).alerts.find((x) => x.detector === 'nonfinite');
  assert.ok(a, 'a nonfinite alert');
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/alerts/${a.id}`);
  await ready(page);
  await page.waitForFunction(() => window.gwView.ranged === true && !window.gwView.data.downsampled);
  const [min, max] = await page.evaluate(() => [window.gwView.charts[0].scales.x.min, window.gwView.charts[0].scales.x.max]);
  assert.ok(min <= a.step && a.step <= max, `${min}..${max} holds step ${a.step}`);
  assert.ok(max - min <= 2000, `a window of ${max - min} steps around the alert, not a slice of the whole run`);
  // each record there is drawn (every 10th step)
  const drawn = await page.evaluate((lo, hi) => {
    const d = window.gwView.data;
    return d.step.filter((s) => s >= lo && s <= hi).length;
  }, Math.ceil(min), Math.floor(max));
  assert.ok(drawn >= Math.floor((max - min) / 10) - 1, `${drawn} records drawn in ${min}..${max}`);
  await page.close();
});

test('the run page keeps up while the run streams', async () => {
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  const before = await page.evaluate(() => window.gwView.points());
  let more = '';
  for (let s = 1601; s <= 1620; s++)
    more += JSON.stringify({run: RUN, step: s, loss: 1.9, grad_norm: 0.3, lr: 3e-4, throughput: 18000}) + '\n';
  await daemon.ingest(more);
  await page.waitForFunction((n) => window.gwView.points() === n, {}, before + 20);
  assert.equal(await page.$eval('#chart-loss', (e) => e.dataset.points),
    String(expectedPoints(trace + more, 'loss')));

  // an update does not redraw the page under the reader: the same charts
  // take the new data, the cursor and its legend stay
  const at = await page.evaluate(() => {
    const u = window.gwView.charts[0], r = u.over.getBoundingClientRect();
    u.gwProbe = 'same chart';
    return {x: r.left + u.valToPos(800, 'x'), y: r.top + r.height / 2};
  });
  await page.mouse.move(at.x, at.y);
  const held = await page.$eval('#chart-loss .u-legend .u-value:nth-child(2)', (e) => e.textContent);
  let again = '';
  for (let s = 1621; s <= 1630; s++)
    again += JSON.stringify({run: RUN, step: s, loss: 1.9, grad_norm: 0.3, lr: 3e-4, throughput: 18000}) + '\n';
  await daemon.ingest(again);
  await page.waitForFunction((n) => window.gwView.points() === n, {}, before + 30);
  assert.equal(await page.evaluate(() => window.gwView.charts[0].gwProbe), 'same chart');
  assert.equal(await page.evaluate(() => window.gwView.charts[0].scales.x.max), 1630, 'the x range grew');
  assert.equal(await page.evaluate(() => document.querySelectorAll('#chart-loss canvas').length), 1);
  assert.ok(await page.evaluate(() => window.gwView.charts[0].cursor.left >= 0), 'the cursor is still on the chart');
  assert.notEqual(held, '—');
  await page.close();
});

test('a daemon restart under an open page: the page says so, keeps its charts, then catches up', async () => {
  const d = await new Daemon().start();
  try {
    await d.ingest(trace);
    const page = await lockedPage(browser);
    await page.goto(`${d.base}/runs/${RUN}`);
    await ready(page);
    const list = await lockedPage(browser);
    await list.goto(d.base + '/');
    await ready(list);
    await d.halt();
    const lost = () => /cannot reach gradwatchd at 127\.0\.0\.1:\d+/.test(document.getElementById('gw-status').textContent);
    // (two tabs: the one behind gets no animation frames, so poll)
    await page.waitForFunction(lost, {polling: 200});
    await list.waitForFunction(lost, {polling: 200});
    for (const p of [page, list])
      assert.equal(await p.$eval('#gw-status', (e) => e.className), 'gw-error', 'said as an error');
    assert.equal(await page.evaluate(() => window.gwView.points()), 1640, 'the charts stay');
    assert.ok(await list.$(`tr[data-run="${RUN}"]`), 'the list stays');

    await d.start();
    let more = '';
    for (let s = 1601; s <= 1620; s++)
      more += JSON.stringify({run: RUN, step: s, loss: 1.9, grad_norm: 0.3, lr: 3e-4, throughput: 18000}) + '\n';
    await d.ingest(more);
    await page.waitForFunction(() => window.gwView.points() === 1660 &&
      document.getElementById('gw-status').textContent === '', {polling: 200});
    await list.waitForFunction((run) => document.getElementById('gw-status').textContent === '' &&
      document.querySelector(`tr[data-run="${run}"] td:nth-child(4)`).textContent === '1,620', {polling: 200}, RUN);
    assert.deepEqual([...page.offsite, ...list.offsite], []);
    await page.close();
    await list.close();
  } finally {
    await d.stop();
  }
});

test('150 live updates: no growth in DOM nodes, listeners or JS heap', async () => {
  let body = '';
  for (let s = 1; s <= 1000; s++) body += JSON.stringify({run: 'soak', step: s, loss: 2 - s / 2000, grad_norm: 0.5, lr: 1e-4}) + '\n';
  await daemon.ingest(body);
  const page = await lockedPage(browser);
  // the page's 3 s poll, every 30 ms here: many updates, no long wait
  await page.evaluateOnNewDocument(() => {
    const si = window.setInterval;
    window.setInterval = (f, ms, ...a) => si(f, ms === 3000 ? 30 : ms, ...a);
  });
  await page.goto(`${daemon.base}/runs/soak`);
  await ready(page);
  const cdp = await page.createCDPSession();
  const measure = async () => {
    await cdp.send('HeapProfiler.collectGarbage');
    const m = await page.metrics();
    return {heap: m.JSHeapUsedSize, nodes: m.Nodes, listeners: m.JSEventListeners};
  };
  let step = 1001, first = null;
  for (let k = 1; k <= 150; k++) {
    await daemon.ingest(JSON.stringify({run: 'soak', step, loss: 2 - step / 2000, grad_norm: 0.5, lr: 1e-4}) + '\n');
    await page.waitForFunction((s) => window.gwView.info && window.gwView.info.last_step === s, {polling: 20}, step);
    step++;
    if (k === 30) first = await measure();
  }
  const last = await measure();
  const alerts = await page.$$eval('#gw-alerts li', (l) => l.map((x) => x.textContent));
  assert.deepEqual(alerts, ['No alerts.'], 'a quiet run (alerts would add nodes)');
  // (a few nodes come and go with the moment: "loading…", the status;
  // one chart's leftovers per update would be thousands)
  assert.ok(last.nodes - first.nodes <= 20, `DOM nodes ${first.nodes} -> ${last.nodes}`);
  assert.ok(last.listeners - first.listeners <= 5, `event listeners ${first.listeners} -> ${last.listeners}`);
  assert.ok(last.heap - first.heap < 1024 * 1024, `JS heap ${first.heap} -> ${last.heap} bytes over 120 updates`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('zoom, log scale and an overlaid run', async () => {
  let other = '';
  for (let s = 1; s <= 1200; s += 3)
    other += JSON.stringify({run: 'other-run', step: s, loss: 2.5 - s / 1000, grad_norm: 0.8, lr: 1e-4}) + '\n';
  await daemon.ingest(other);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  // drag across the loss chart from step ~900 to ~1100: every chart follows
  const box = await page.evaluate(() => {
    const u = window.gwView.charts[0], r = u.over.getBoundingClientRect();
    return {x0: r.left + u.valToPos(900, 'x'), x1: r.left + u.valToPos(1100, 'x'), y: r.top + r.height / 2};
  });
  await page.mouse.move(box.x0, box.y);
  await page.mouse.down();
  await page.mouse.move(box.x1, box.y, {steps: 8});
  await page.mouse.up();
  await page.waitForFunction(() => window.gwView.zoom !== null);
  const scales = await page.evaluate(() => window.gwView.charts.map((u) => [u.scales.x.min, u.scales.x.max]));
  for (const [lo, hi] of scales) {
    assert.ok(Math.abs(lo - 900) < 5 && Math.abs(hi - 1100) < 5, `zoomed to ${lo}..${hi}`);
    assert.deepEqual([lo, hi], scales[0]);
  }
  // the optimizer_reset marker is still at its step after the zoom
  const [mx, want] = await page.evaluate(() => {
    const u = window.gwView.charts[0];
    const m = document.querySelector('.gw-marker[data-detector="optimizer_reset"]');
    const b = m.getBoundingClientRect();
    return [b.left + b.width / 2, u.over.getBoundingClientRect().left + u.valToPos(Number(m.dataset.step), 'x')];
  });
  assert.ok(Math.abs(mx - want) < 1.5);
  await page.click('#gw-reset');
  await page.waitForFunction(() => window.gwView.zoom === null && window.gwView.charts[0].scales.x.max >= 1600);
  // log scale: loss, grad norm and LR on a log axis
  await page.click('#gw-log');
  await page.waitForFunction(() => window.gwView.charts.length && window.gwView.charts[0].scales.y.distr === 3);
  assert.match(await page.$eval('#chart-loss h3', (e) => e.textContent), /\(log\)/);
  assert.equal(await page.evaluate(() => window.gwView.charts[3].scales.y.distr), 1, 'throughput stays linear');
  await page.click('#gw-log');
  // overlay another run: its line joins every chart
  await page.click('details.gw-overlay summary');
  await page.click('input[data-run="other-run"]');
  await page.waitForFunction(() => [...document.querySelectorAll('#chart-loss .u-legend .u-label')]
    .some((l) => l.textContent === 'other-run'));
  const drawn = await page.evaluate(() => {
    const u = window.gwView.charts[0], i = u.series.findIndex((s) => s.label === 'other-run');
    return u.data[i].filter((v) => v !== null).length;
  });
  assert.equal(drawn, 400);
  assert.deepEqual(page.offsite, []);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('300 runs: open alerts first, a filter, a bounded list, any run can be overlaid', async () => {
  const d = await new Daemon().start();
  try {
    await d.ingest(trace);
    let body = '';
    for (let i = 0; i < 300; i++)
      for (let s = 1; s <= 2; s++) body += JSON.stringify({run: `sweep-${i}`, step: s, loss: 2 + i / 1000, grad_norm: 1}) + '\n';
    assert.equal((await d.ingest(body)).rejected, 0);
    const page = await lockedPage(browser);
    await page.goto(d.base + '/');
    await ready(page);
    // the sweeps are newer, but the run with open alerts comes first
    const rows = () => page.$$eval('tr[data-run]', (trs) => trs.map((t) => t.dataset.run));
    const first = await rows();
    assert.equal(first[0], RUN);
    assert.equal(first.length, 200, 'at most 200 rows drawn');
    assert.match(await page.$eval('#gw-count', (e) => e.textContent), /^301 runs; the first 200 are listed/);
    // the filter finds one past the first 200, and keeps through a refresh
    await page.type('#gw-filter', 'SWEEP-12');
    const want = ['sweep-12', ...Array.from({length: 10}, (_, k) => `sweep-12${k}`)].sort();
    // the page asks the daemon for the matching runs after a pause in typing
    await page.waitForFunction(() => document.querySelector('tr[data-run="sweep-12"]') &&
      document.querySelectorAll('tr[data-run]').length === 11, {timeout: WAIT_MS});
    assert.deepEqual((await rows()).sort(), want);
    assert.match(await page.$eval('#gw-count', (e) => e.textContent), /^11 of 301 runs match/);
    await page.waitForFunction(() => document.querySelectorAll('tr[data-run]').length === 11 &&
      performance.getEntriesByType('resource').filter((r) => /\/v1\/runs(\?|$)/.test(r.name)).length >= 2);
    assert.deepEqual((await rows()).sort(), want);
    await page.$eval('#gw-filter', (e) => { e.value = 'no-such-run'; e.dispatchEvent(new Event('input')); });
    assert.match(await page.$eval('tbody', (e) => e.textContent), /No run matches/);

    // overlay: the list holds 50, the box finds any of them
    await page.goto(`${d.base}/runs/${RUN}`);
    await ready(page);
    await page.click('details.gw-overlay summary');
    assert.equal((await page.$$('input[data-run]')).length, 50);
    await page.type('#gw-overlay-filter', 'sweep-299');
    await page.click('input[data-run="sweep-299"]');
    await page.waitForFunction(() => [...document.querySelectorAll('#chart-loss .u-legend .u-label')]
      .some((l) => l.textContent === 'sweep-299'));
    assert.deepEqual(page.offsite, []);
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    await d.stop();
  }
});

test('the runs list refresh keeps the keyboard focus where it is', async () => {
  const page = await lockedPage(browser);
  // nothing changes between refreshes: the daemon answers 304, headers
  // only, to the If-None-Match the page sends (a conditional request)
  const runsStatus = [];
  page.on('response', (r) => { if (/\/v1\/runs(\?|$)/.test(r.url())) runsStatus.push(r.status()); });
  await page.goto(daemon.base + '/');
  await ready(page);
  let on = null;
  for (let i = 0; i < 10 && on !== RUN; i++) {
    await page.keyboard.press('Tab');
    on = await page.evaluate(() => document.activeElement.closest('tr[data-run]')?.dataset.run ?? null);
  }
  assert.equal(on, RUN, 'Tab reaches the first run');
  const n = await page.evaluate(() => performance.getEntriesByType('resource').filter((r) => /\/v1\/runs(\?|$)/.test(r.name)).length);
  await page.waitForFunction((n) => performance.getEntriesByType('resource').filter((r) => /\/v1\/runs(\?|$)/.test(r.name)).length > n &&
    document.getElementById('gw-count').textContent !== '', {polling: 100}, n);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  assert.equal(await page.evaluate(() => document.activeElement.closest('tr[data-run]')?.dataset.run ?? null), RUN,
    'the focus survived the refresh');
  assert.equal(runsStatus[0], 200);
  assert.ok(runsStatus.slice(1).includes(304), runsStatus.join(','));
  assert.ok(await page.$(`tr[data-run="${RUN}"]`), 'the list still shows the run after a 304');
  await page.keyboard.press('Enter');
  await page.waitForFunction((run) => location.pathname === '/runs/' + run, {}, RUN);
  await page.close();
});

test('a 250-character run name overlaid: the page does not run off to the side', async () => {
  const long = 'sweep-' + 'x'.repeat(244);
  let body = '';
  for (let s = 1; s <= 1600; s += 8) body += JSON.stringify({run: long, step: s, loss: 3 - s / 1000, grad_norm: 0.7}) + '\n';
  await daemon.ingest(body);
  const page = await lockedPage(browser);
  await page.goto(`${daemon.base}/runs/${RUN}`);
  await ready(page);
  await page.click('details.gw-overlay summary');
  await page.type('#gw-overlay-filter', 'sweep-xxxx');
  await page.click(`input[data-run="${long}"]`);
  await page.waitForFunction((n) => [...document.querySelectorAll('#chart-loss .u-legend .u-label')]
    .some((l) => l.textContent === n), {}, long);
  const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(scroll <= width, `the page is ${scroll} px wide in a ${width} px window`);
  await page.close();
});

test('on a phone (375 px): no page scrolls sideways', async () => {
  const alerts = (await daemon.get(`/v1/runs/${RUN}/alerts`)).alerts;
  const page = await lockedPage(browser);
  await page.setViewport({width: 375, height: 800});
  for (const url of ['/', `/runs/${RUN}`, `/alerts/${alerts[0].id}`]) {
    await page.goto(daemon.base + url);
    await ready(page);
    const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    assert.ok(scroll <= width, `${url}: ${scroll} px wide in a ${width} px window`);
  }
  await page.close();
});

test('the page headers: CSP, nosniff', async () => {
  for (const p of ['/', `/runs/${RUN}`, '/static/app.js']) {
    const r = await fetch(daemon.base + p);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-security-policy'), /default-src 'none'; script-src 'self'/);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  }
  const bad = await fetch(daemon.base + `/v1/runs/${RUN}/records?max_points=lots`);
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error, /max_points=lots/);
});

test('hostile run names are text, never script', async () => {
  const names = [
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    '"\'><script>window.__pwned=2</script>',
    '</script><script>window.__pwned=3;alert(3)</script>',
    'javascript:alert(4)',
    'ünïcødé \u2028 \u2029 🚀 &amp; &lt;b&gt;',
  ];
  let body = '';
  for (const run of names)
    for (let s = 1; s <= 30; s++)
      body += JSON.stringify({run, step: s, loss: s === 25 ? NaN : 2 - s / 100, grad_norm: 1}).replace('null', 'NaN') + '\n';
  const r = await daemon.ingest(body);
  assert.equal(r.rejected, 0, JSON.stringify(r.errors));
  const page = await lockedPage(browser);
  await page.goto(daemon.base + '/');
  await ready(page);
  const listed = await page.$$eval('tr[data-run] td.gw-name', (tds) => tds.map((t) => t.textContent));
  for (const n of names) assert.ok(listed.includes(n), 'listed as text: ' + n);
  for (const n of names) {
    const link = await page.$$eval('tr[data-run] a', (as, n) => as.find((a) => a.textContent === n).getAttribute('href'), n);
    assert.equal(link, '/runs/' + encodeURIComponent(n));
    const p = await lockedPage(browser);
    await p.goto(daemon.base + link);
    await ready(p);
    assert.equal(await p.$eval('#gw-run-name', (e) => e.textContent), n);
    assert.equal(await p.evaluate(() => window.gwView.points()), 30);
    assert.equal(await p.evaluate(() => document.title), n + ' · gradwatch');
    assert.equal(await p.evaluate(() => window.__pwned), undefined);
    assert.equal(await p.$$eval('img', (i) => i.length), 0, 'no <img> was created');
    assert.deepEqual(p.dialogs, []);
    assert.deepEqual(p.offsite, []);
    await p.close();
  }
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(page.dialogs, []);
  await page.close();
});

test('with tokens, the page asks for a read token and then shows the run', async () => {
  const READ = 'read-token-for-the-browser-0123';
  const INGEST = 'ingest-token-for-the-test-0123';
  const d = await new Daemon([], {
    config: {auth: {read_tokens_file: 'read.tokens', ingest_tokens_file: 'ingest.tokens'}},
    files: {'read.tokens': READ + '\n', 'ingest.tokens': INGEST + '\n'},
    token: INGEST,
  }).start();
  try {
    await d.ingest(trace);
    // the data needs a token; the page shell does not
    assert.equal((await fetch(`${d.base}/v1/runs/${RUN}/records`)).status, 401);
    assert.equal((await fetch(`${d.base}/runs/${RUN}`)).status, 200);
    const page = await lockedPage(browser);
    await page.goto(`${d.base}/runs/${RUN}`);
    await page.waitForFunction(() => document.body.dataset.ready === 'token');
    await page.type('#gw-token', 'not-the-token-0123456789');
    await page.click('#gw-token-form button');
    await page.waitForFunction(() => document.body.dataset.ready === 'token' &&
      /not accepted/.test(document.getElementById('gw-token-form').textContent));
    await page.$eval('#gw-token', (e) => { e.value = ''; });
    await page.type('#gw-token', READ);
    await page.click('#gw-token-form button');
    await ready(page);
    assert.equal(await page.evaluate(() => window.gwView.points()), 1640);
    // a link may carry it in the fragment, which never reaches the server
    // and is removed from the address bar
    const p2 = await lockedPage(browser);
    await p2.goto(`${d.base}/#token=${READ}`);
    await ready(p2);
    assert.ok(await p2.$(`tr[data-run="${RUN}"]`));
    assert.equal(new URL(p2.url()).hash, '');
    assert.deepEqual([...page.offsite, ...p2.offsite], []);
    await page.close();
    await p2.close();

    // the form says where a token comes from
    const alerts = (await d.get(`/v1/runs/${RUN}/alerts`)).alerts;
    const p3 = await lockedPage(browser);
    await p3.goto(`${d.base}/alerts/${alerts[0].id}`);
    await p3.waitForFunction(() => document.body.dataset.ready === 'token');
    assert.match(await p3.$eval('#gw-token-form', (e) => e.textContent), /auth\.read_tokens_file/);
    // every alert link opens a new tab: without "remember", each asks
    // again; with it, the next tab opens the alert directly
    await p3.type('#gw-token', READ);
    await p3.click('#gw-token-remember');
    await p3.click('#gw-token-form button');
    await ready(p3);
    await p3.waitForSelector(`.gw-detail[data-alert-id="${alerts[0].id}"]`);
    const p4 = await lockedPage(browser);
    await p4.goto(`${d.base}/alerts/${alerts[1].id}`);
    await ready(p4);
    await p4.waitForSelector(`.gw-detail[data-alert-id="${alerts[1].id}"]`);
    // and "forget" (in the page's top bar) ends that
    await p4.click('#gw-forget-token');
    await p4.waitForFunction(() => document.body.dataset.ready === 'token');
    const p5 = await lockedPage(browser);
    await p5.goto(`${d.base}/runs/${RUN}`);
    await p5.waitForFunction(() => document.body.dataset.ready === 'token');
    for (const p of [p3, p4, p5]) await p.close();
  } finally {
    await d.stop();
  }
});

test('an acknowledged alert shows who, when and why; the page offers no way to acknowledge', async () => {
  const d = await new Daemon().start();
  try {
    assert.equal((await d.ingest(trace)).rejected, 0);
    const alerts = (await d.get(`/v1/runs/${RUN}/alerts`)).alerts;
    const a = alerts.find((x) => x.state === 'open') || alerts[0];
    const r = await fetch(`${d.base}/v1/alerts/${a.id}/ack`, {method: 'POST',
      body: JSON.stringify({by: 'grace <oncall>', note: 'intended: switched to Adafactor'})});
    assert.equal(r.status, 200, await r.text());
    const page = await lockedPage(browser);
    await page.goto(`${d.base}/alerts/${encodeURIComponent(a.id)}`);
    await ready(page);
    await page.waitForSelector('#gw-detail-ack');
    const text = await page.$eval('#gw-detail-ack', (e) => e.textContent);
    assert.match(text, /^acknowledged by grace <oncall> \d{4}-\d\d-\d\d.*: intended: switched to Adafactor$/);
    // the list says it too, next to the alert
    assert.equal(await page.$eval(`.gw-alerts li[data-alert-id="${a.id}"] .state-acked`, (e) => e.textContent),
      'acknowledged');
    // read-only (issue 10): no control that acknowledges, no write request
    const controls = await page.$$eval('button, input, form', (es) => es.map((e) => e.textContent || e.id));
    assert.ok(!controls.some((t) => /ack/i.test(t)), controls.join('|'));
    assert.deepEqual(page.offsite, []);
    await page.close();
  } finally {
    await d.stop();
  }
});
