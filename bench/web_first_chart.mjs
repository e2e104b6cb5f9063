// bench/web_first_chart: time to first chart of a 1,000,000-record run in
// gradwatchd's run page, and the bytes sent.  Not a test: prints what it
// measured (`meson test -C build --benchmark web-first-chart --verbose`).
//
// 1. Start the real gradwatchd in a temporary directory and ingest one run
//    of 1M records (loss, grad norm, LR, throughput; a spike and a NaN)
//    over POST /v1/ingest, so the store's writer builds its tiles as it
//    would live.
// 2. The server alone: GET /v1/runs/big/records as the page asks for it
//    (the overview, then a zoom to 1% of the run), median of 9, and the
//    body size.
// 3. Chromium (headless, loopback only): load /runs/big 5 times (and 5
//    more with smoothing off, in turn, for its cost) and take,
//    from the Resource Timing of the records request and the page's
//    "gw-chart-drawn" mark: request -> response end (query + transfer),
//    response end -> charts drawn (parse + build + draw), and the whole
//    request -> drawn; medians.  Goal: under 300 ms.
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = await import(path.join(here, '..', 'tests', 'browser', 'harness.mjs'));
const {Daemon, browserOrSkip, launch, lockedPage, ready} = harness;

const N = Number(process.env.GW_BENCH_RECORDS || 1000000);
const puppeteer = browserOrSkip();
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const ms = (x) => x.toFixed(1) + ' ms';

const d = await new Daemon().start();
try {
  let t0 = performance.now();
  const CHUNK = 200000;
  for (let base = 0; base < N; base += CHUNK) {
    const lines = [];
    for (let s = base; s < Math.min(N, base + CHUNK); s++) {
      const loss = s === 654321 ? 40 : 2 + 3 * Math.exp(-s / 2e5) + 0.05 * Math.sin(s * 0.37);
      lines.push(`{"run":"big","step":${s},"loss":${s === 876543 ? 'NaN' : loss.toFixed(5)},` +
        `"grad_norm":${(0.5 + 0.1 * Math.cos(s * 0.11)).toFixed(5)},"lr":${(3e-4 * Math.min(1, s / 2000)).toExponential(4)},` +
        `"throughput":${(18000 + (s % 97)).toFixed(1)}}`);
    }
    await d.ingest(lines.join('\n') + '\n');
  }
  const ingestS = (performance.now() - t0) / 1000;
  console.log(`web first chart: ${N.toLocaleString('en-US')} records of one run ingested in ${ingestS.toFixed(1)} s ` +
    `(${Math.round(N / ingestS).toLocaleString('en-US')} records/s over HTTP)`);

  // 2. the server alone
  async function timeGet(q) {
    const times = [];
    let bytes = 0, body = null;
    for (let i = 0; i < 9; i++) {
      const t = performance.now();
      const r = await fetch(`${d.base}/v1/runs/big/records?${q}`);
      const buf = await r.arrayBuffer();
      times.push(performance.now() - t);
      bytes = buf.byteLength;
      body = JSON.parse(Buffer.from(buf).toString());
    }
    return {t: median(times), bytes, body};
  }
  const over = await timeGet('max_points=2000');
  const zoom = await timeGet('max_points=2000&from=500000&to=509999');
  console.log(`server: overview (max_points=2000): ${ms(over.t)}, ${over.body.step.length} points of ` +
    `${over.body.total.toLocaleString('en-US')}, ${(over.bytes / 1024).toFixed(0)} KiB; spike kept: ` +
    `${over.body.loss[over.body.step.indexOf(654321)] === 40}, NaN kept: ${over.body.step.includes(876543)}`);
  console.log(`server: zoom to 10,000 steps: ${ms(zoom.t)}, ${zoom.body.step.length} points, ` +
    `${(zoom.bytes / 1024).toFixed(0)} KiB`);

  // 3. the browser
  const browser = await launch(puppeteer);
  const rows = [], plain = [];
  try {
    // 10 loads, in turn with the default smoothing (0.9) and with it off
    // (the view setting in localStorage), so its cost is measured in the
    // same run; the figures below are the default's
    for (let i = 0; i < 10; i++) {
      const page = await lockedPage(browser);
      await page.evaluateOnNewDocument((w) => localStorage.setItem('gradwatch-view', JSON.stringify({smooth: w, logScale: false})),
        i % 2 ? 0 : 0.9);
      await page.goto(`${d.base}/runs/big`);
      await ready(page, 60000);
      const m = await page.evaluate(() => {
        const rec = performance.getEntriesByType('resource').find((e) => e.name.includes('/records?'));
        const drawn = performance.getEntriesByName('gw-chart-drawn')[0];
        return {start: rec.requestStart || rec.startTime, end: rec.responseEnd, drawn: drawn.startTime,
                bytes: rec.encodedBodySize || rec.transferSize, nav: drawn.startTime,
                points: window.gwView.points()};
      });
      if (page.offsite.length) throw new Error('requests left loopback: ' + page.offsite.join(', '));
      (i % 2 ? plain : rows).push(m);
      await page.close();
    }
  } finally {
    await browser.close();
  }
  const q = median(rows.map((r) => r.end - r.start));
  const draw = median(rows.map((r) => r.drawn - r.end));
  const total = median(rows.map((r) => r.drawn - r.start));
  const nav = median(rows.map((r) => r.nav));
  console.log(`browser (median of ${rows.length} loads, ${rows[0].points} points drawn, ` +
    `${(rows[0].bytes / 1024).toFixed(0)} KiB of records JSON):`);
  console.log(`  records request -> response end (query + transfer): ${ms(q)}`);
  console.log(`  response end -> 4 charts drawn (parse, build, draw):  ${ms(draw)}`);
  console.log(`  records request -> charts drawn:                      ${ms(total)}  ` +
    `(goal 300 ms: ${total < 300 ? 'met' : 'NOT met'}; ratio ${(total / 300).toFixed(2)})`);
  console.log(`  page navigation -> charts drawn:                      ${ms(nav)}`);
  const drawPlain = median(plain.map((r) => r.drawn - r.end));
  console.log(`  response end -> drawn, smoothing on vs off (same run): ${ms(draw)} vs ${ms(drawPlain)} ` +
    `(ratio ${(draw / drawPlain).toFixed(2)})`);
  console.log(`  bytes per record drawn vs sending every record: ${(rows[0].bytes / N).toFixed(3)} vs ` +
    `~${(over.bytes / over.body.step.length).toFixed(0)} per point x ${N.toLocaleString('en-US')} ` +
    `(${(over.bytes / over.body.step.length * N / rows[0].bytes).toFixed(0)}x less)`);
} finally {
  await d.stop();
}
