// Browser test of the fleet view (gradwatchd --fleet-view, docs/fleet.md):
// a real PostgreSQL (initdb in a temporary directory, pg_ctl on a loopback
// port; as root the server runs as the user "postgres"), three real
// gradwatchd shipping to it, one fed the example trace (a resume without
// the optimizer state: an open optimizer_reset), two fed clean runs; then
// a fleet view over the same database in Debian's Chromium.
// What a user would check: the list has every node's runs, the one in
// trouble first, filters by node and by state, and one click on it opens
// its run page with the restart panel's charts drawn.
import {test, before, after} from 'node:test';
import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {ARTIFACT_DIR, Daemon, SKIP, WAIT_MS, browserOrSkip, freePort, launch, lockedPage, ready} from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const EXAMPLE = path.join(here, '..', '..', 'examples', 'resume-without-optimizer.jsonl');
const RUN = 'example-gpt-1b';
const puppeteer = browserOrSkip();
const trace = fs.readFileSync(EXAMPLE, 'utf8');
const lines = trace.split('\n').filter((l) => l.trim());

/* The newest PostgreSQL's programs (Debian keeps them out of PATH). */
function pgBin() {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => b - a) : [];
  for (const v of versions) if (fs.existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin');
  return null;
}

class Postgres {
  async start() {
    this.bin = pgBin();
    if (!this.bin) {
      if (process.env.CI) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
      console.log('SKIP browser test: PostgreSQL is not installed');
      process.exit(SKIP);
    }
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pg-'));
    fs.chmodSync(this.dir, 0o755);
    this.asUser = process.getuid() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
    if (this.asUser.length) this.run(['chown', 'postgres', this.dir], false);
    this.data = path.join(this.dir, 'data');
    this.port = await freePort();
    this.run([path.join(this.bin, 'initdb'), '-D', this.data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
    fs.appendFileSync(path.join(this.data, 'postgresql.conf'),
      `listen_addresses = '127.0.0.1'\nport = ${this.port}\nunix_socket_directories = '${this.dir}'\nfsync = off\n`);
    this.run([path.join(this.bin, 'pg_ctl'), '-D', this.data, '-l', path.join(this.dir, 'log'), '-w', 'start']);
    spawnSync('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-d', 'postgres',
      '-c', 'CREATE DATABASE gradwatch']);
    this.dsn = `postgresql://postgres@127.0.0.1:${this.port}/gradwatch`;
    return this;
  }

  run(argv, asUser = true) {
    const full = asUser ? [...this.asUser, ...argv] : argv;
    const r = spawnSync(full[0], full.slice(1), {cwd: this.dir, encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stdout}${r.stderr}`);
  }

  stop() {
    if (!this.data) return;
    try { this.run([path.join(this.bin, 'pg_ctl'), '-D', this.data, '-m', 'immediate', '-w', 'stop']); } catch (e) { /* gone */ }
    fs.rmSync(this.dir, {recursive: true, force: true});
  }
}

let pg, nodes = [], view, browser;

async function until(what, fn, ms = WAIT_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  pg = await new Postgres().start();
  for (const name of ['node-a', 'node-b', 'node-c'])
    nodes.push(await new Daemon([], {config: {fleet: {postgresql: pg.dsn, node: name, interval: '100ms'}}}).start());
  assert.equal((await nodes[0].ingest(trace)).rejected, 0);
  for (const [i, d] of [[1, nodes[1]], [2, nodes[2]]]) {
    const clean = lines.slice(0, 600).map((l) => l.replace(`"run": "${RUN}"`, `"run": "clean-${i}"`)).join('\n') + '\n';
    assert.equal((await d.ingest(clean)).rejected, 0);
  }
  view = await new Daemon(['--fleet-view', pg.dsn]).start();
  // every node shipped: the fleet view lists four runs, the trace's whole
  await until('the fleet view to list every run', async () => {
    const runs = (await view.get('/v1/runs')).runs;
    const mine = (await nodes[0].get(`/v1/runs/${RUN}`));
    const theirs = runs.length === 3 && runs.find((r) => r.run === `node-a/${RUN}`);
    return theirs && theirs.open_alerts > 0 && theirs.last_step === mine.last_step;
  });
  browser = await launch(puppeteer);
});

after(async () => {
  if (browser) await browser.close();
  if (view) await view.stop();
  for (const d of nodes) await d.stop();
  if (pg) pg.stop();
});

test('every node\'s runs, the one in trouble first, opened in one click', async () => {
  const page = await lockedPage(browser);
  await page.goto(`${view.base}/`);
  await ready(page);
  const rows = await page.$$eval('table.gw-runs tbody tr', (trs) => trs.map((tr) => tr.dataset.run));
  assert.deepEqual(rows.slice().sort(), ['node-a/example-gpt-1b', 'node-b/clean-1', 'node-c/clean-2']);
  assert.equal(rows[0], `node-a/${RUN}`, 'the run with the open optimizer_reset leads the list');
  // filter by node (the name filter: runs are NODE/RUN) and by state
  const listed = () => page.$$eval('table.gw-runs tbody tr[data-run]', (trs) => trs.map((tr) => tr.dataset.run));
  await page.type('#gw-filter', 'node-b');
  assert.deepEqual(await listed(), ['node-b/clean-1']);
  await page.$eval('#gw-filter', (e) => { e.value = ''; e.dispatchEvent(new Event('input')); });
  await page.select('#gw-state-filter', 'ended');
  assert.deepEqual(await listed(), []);
  await page.select('#gw-state-filter', 'live');
  assert.equal((await listed()).length, 3);
  // one click on its name
  await Promise.all([page.waitForNavigation(), page.click(`tr[data-run="node-a/${RUN}"] a`)]);
  await ready(page);
  assert.equal(decodeURIComponent(new URL(page.url()).pathname), `/runs/node-a/${RUN}`);
  await page.waitForSelector('#gw-restart .gw-chart');
  assert.match(await page.$eval('#gw-restart h2', (e) => e.textContent), /step 1,000/);
  const alerts = await page.evaluate(() => (window.gwView.alerts || []).map((a) => a.detector));
  assert.ok(alerts.includes('optimizer_reset'), JSON.stringify(alerts));
  fs.mkdirSync(ARTIFACT_DIR, {recursive: true});
  await page.screenshot({path: path.join(ARTIFACT_DIR, 'fleet-view-run.png')});
  assert.deepEqual(page.offsite, []);
  assert.deepEqual(page.errors, []);
  await page.close();
});
