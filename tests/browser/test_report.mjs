// Browser test of `gradwatch report`: the file it writes opens from disk
// (file://) with every network request failed, and draws what the live
// page draws: the run, the right number of points, the optimizer_reset
// marker at its step, its summary on click.  A report of runs with hostile
// names shows them as text and runs no script.  Saves report.png in
// ARTIFACT_DIR.
import {test, before, after} from 'node:test';
import assert from 'node:assert/strict';
import {execFileSync, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';
import {ARTIFACT_DIR, GRADWATCH, browserOrSkip, expectedPoints, launch, lockedPage, ready} from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const EXAMPLE = path.join(here, '..', '..', 'examples', 'resume-without-optimizer.jsonl');
const puppeteer = browserOrSkip();
const trace = fs.readFileSync(EXAMPLE, 'utf8');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-report-'));
let browser;

function report(files, out) {
  execFileSync(GRADWATCH, ['report', '-o', out, ...files], {stdio: ['ignore', 'ignore', 'pipe']});
  return pathToFileURL(out).href;
}

/* A page that may load only the report file itself. */
async function offlinePage(url) {
  const page = await lockedPage(browser, {allowFile: true});
  const only = new URL(url).pathname;
  await page.goto(url);
  const other = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname !== only) other.push(r.url()); });
  page.otherFiles = other;
  return page;
}

before(async () => { browser = await launch(puppeteer); });
after(async () => {
  if (browser) await browser.close();
  fs.rmSync(tmp, {recursive: true, force: true});
});

test('the report of the example renders offline like the live page', async () => {
  // (replay exits 1: it found alerts)
  const replay = spawnSync(GRADWATCH, ['replay', '--format', 'jsonl', EXAMPLE]).stdout.toString()
    .trim().split('\n').map((l) => JSON.parse(l));
  const reset = replay.find((a) => a.detector === 'optimizer_reset');
  assert.ok(reset);
  const url = report([EXAMPLE], path.join(tmp, 'example.html'));
  const html = fs.readFileSync(new URL(url), 'utf8');
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-/);
  assert.doesNotMatch(html, /<link|(src|href)\s*=\s*["']?https?:/i, 'nothing to load from elsewhere');

  const page = await offlinePage(url);
  await ready(page);
  assert.equal(await page.$eval('#gw-run-name', (e) => e.textContent), 'example-gpt-1b');
  assert.equal(await page.evaluate(() => window.gwView.points()), 1640);
  for (const m of ['loss', 'grad_norm', 'lr', 'throughput'])
    assert.equal(Number(await page.$eval(`#chart-${m}`, (e) => e.dataset.points)), expectedPoints(trace, m), m);
  // the restart panel, as live: loss and grad norm around step 1,000
  assert.deepEqual(await page.$$eval('#gw-restart .gw-chart', (cs) => cs.map((c) => c.dataset.metric)), ['loss', 'grad_norm']);
  assert.match(await page.$eval('#gw-restart-caption', (e) => e.textContent), /^loss 1\.17 → .*\(\+\d+%\) · grad norm .*\(−\d+%\)/);
  const marker = await page.$(`.gw-marker[data-alert-id="${reset.id}"]`);
  assert.ok(marker, 'the optimizer_reset marker');
  assert.equal(await marker.evaluate((e) => e.dataset.step), String(reset.step));
  const [mx, want] = await page.evaluate((id, step) => {
    const u = window.gwView.charts[0];
    const b = document.querySelector(`.gw-marker[data-alert-id="${id}"]`).getBoundingClientRect();
    return [b.left + b.width / 2, u.over.getBoundingClientRect().left + u.valToPos(step, 'x')];
  }, reset.id, reset.step);
  assert.ok(Math.abs(mx - want) < 1.5, `marker at x=${mx}, step ${reset.step} maps to x=${want}`);
  await marker.click();
  await page.waitForSelector('#gw-detail-summary');
  assert.equal(await page.$eval('#gw-detail-summary', (e) => e.textContent), reset.summary);
  // a report passed on says what it was made from
  assert.equal(await page.$eval('#gw-files', (e) => e.textContent), 'from ' + EXAMPLE);
  fs.mkdirSync(ARTIFACT_DIR, {recursive: true});
  await page.screenshot({path: path.join(ARTIFACT_DIR, 'report.png'), fullPage: true});
  assert.deepEqual(page.offsite, [], 'no network request');
  assert.deepEqual(page.otherFiles, [], 'no other file');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a report of several runs lists them; hostile names stay text', async () => {
  const names = [
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    '</script><script>window.__pwned=2;alert(2)</script>',
    '"\'><svg onload=alert(3)>',
    'ünï \u2028\u2029 🚀 <!-- &amp;',
  ];
  let body = '';
  for (const run of names)
    for (let s = 1; s <= 40; s++)
      body += JSON.stringify({run, step: s, loss: 3 - s / 50, grad_norm: 1 + (s === 20 ? 30 : 0)}) + '\n';
  const file = path.join(tmp, 'hostile.jsonl');
  fs.writeFileSync(file, body);
  const url = report([file], path.join(tmp, 'hostile.html'));
  const page = await offlinePage(url);
  await ready(page);
  const listed = await page.$$eval('tr[data-run] td.gw-name', (tds) => tds.map((t) => t.textContent));
  assert.deepEqual(listed.slice().sort(), names.slice().sort());
  // a report has no "last record" time nor a live state: the columns say
  // what the cells hold
  assert.deepEqual(await page.$$eval('table.gw-runs th', (th) => th.map((t) => t.textContent)),
    ['Run', 'Segment', 'Last step', 'Records', 'Open alerts']);
  assert.deepEqual(await page.$eval('tr[data-run]', (tr) => [...tr.cells].slice(1).map((c) => c.textContent)),
    ['1', '40', '40', '0']);
  for (const n of names) {
    await page.evaluate(() => { location.hash = ''; });
    await page.waitForFunction(() => document.querySelectorAll('tr[data-run]').length === 4);
    const href = await page.$$eval('tr[data-run] a', (as, n) => as.find((a) => a.textContent === n).getAttribute('href'), n);
    assert.equal(href, '#run=' + encodeURIComponent(n));
    await page.evaluate((h) => { location.hash = h; }, href);
    await page.waitForFunction((n) => {
      const h = document.getElementById('gw-run-name');
      return h && h.textContent === n && document.body.dataset.ready === '1';
    }, {}, n);
    assert.equal(await page.evaluate(() => window.gwView.points()), 40);
  }
  // going from run to run in one report leaves no listeners behind
  const cdp = await page.createCDPSession();
  const listeners = async () => {
    await cdp.send('HeapProfiler.collectGarbage');
    return (await page.metrics()).JSEventListeners;
  };
  const visit = async (n) => {
    await page.evaluate((h) => { location.hash = h; }, '#run=' + encodeURIComponent(n));
    await page.waitForFunction((n) => {
      const h = document.getElementById('gw-run-name');
      return h && h.textContent === n && document.body.dataset.ready === '1';
    }, {}, n);
  };
  await visit(names[0]);
  const before = await listeners();
  for (let i = 0; i < 12; i++) await visit(names[i % 2 ? 0 : 1]);
  await visit(names[0]);
  const after = await listeners();
  assert.ok(after - before < 6, `event listeners ${before} -> ${after} after 13 visits`);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.$$eval('img, svg[onload]', (e) => e.length), 0);
  assert.deepEqual(page.dialogs, []);
  assert.deepEqual(page.offsite, []);
  await page.close();
});
