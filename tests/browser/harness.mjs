// harness: what the browser tests and the first-chart benchmark share.
// A real gradwatchd in a temporary directory on free loopback ports, fed
// over its HTTP API, and Debian's Chromium driven headless through
// puppeteer-core with the network locked to loopback and file:// (every
// other request is aborted and recorded, so a test can assert none was
// made).
//
// Environment (set by tests/browser/meson.build): GRADWATCHD, GRADWATCH,
// WEB_DIR (the folder with node_modules), ARTIFACT_DIR (screenshots),
// CHROMIUM (default /usr/bin/chromium), CI (a missing browser fails instead
// of skipping).
import {spawn} from 'node:child_process';
import {createRequire} from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const GRADWATCHD = process.env.GRADWATCHD || 'build/daemon/gradwatchd';
export const GRADWATCH = process.env.GRADWATCH || 'build/cli/gradwatch';
export const WEB_DIR = process.env.WEB_DIR || 'web';
export const ARTIFACT_DIR = process.env.ARTIFACT_DIR || os.tmpdir();
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const SKIP = 77;   // meson's "skipped" exit status
// Every wait of the browser tests: a condition polled with this deadline,
// generous for a busy machine (issue 20: 15 s ran out at load 6-7).  Pages
// take it as their default (lockedPage); no test gives a shorter one.
export const WAIT_MS = 120000;

/* Chromium and puppeteer-core, or a reason to skip (an error under CI). */
export function browserOrSkip() {
  const ci = !!process.env.CI && process.env.CI !== '0' && process.env.CI !== 'false';
  let why = null;
  if (!fs.existsSync(CHROMIUM)) why = `no browser at ${CHROMIUM} (Debian package chromium)`;
  let puppeteer = null;
  if (!why) {
    try {
      puppeteer = createRequire(path.resolve(WEB_DIR, 'package.json'))('puppeteer-core');
    } catch (e) {
      why = `puppeteer-core is not installed in ${WEB_DIR}/node_modules (npm ci --prefix web): ${e.message}`;
    }
  }
  if (why) {
    if (ci) {
      console.error(`browser test: ${why}; CI is set, so this is a failure`);
      process.exit(1);
    }
    console.log(`SKIP browser test: ${why}`);
    process.exit(SKIP);
  }
  return puppeteer;
}

export async function launch(puppeteer) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           '--disable-dev-shm-usage', '--window-size=1400,1000'],
  });
  const close = browser.close.bind(browser);
  browser.close = async () => {
    await close();
    fs.rmSync(profile, {recursive: true, force: true});
  };
  return browser;
}

/* A page whose requests may only go to loopback (or file:// for a
 * report); everything else is aborted and listed in page.offsite.  Page
 * errors, dialogs and console errors are collected too. */
export async function lockedPage(browser, {allowFile = false} = {}) {
  const page = await browser.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.setDefaultNavigationTimeout(WAIT_MS);
  await page.setViewport({width: 1400, height: 1000});
  page.offsite = [];
  page.dialogs = [];
  page.errors = [];
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    const u = new URL(req.url());
    const ok = (u.protocol === 'http:' && (u.hostname === '127.0.0.1' || u.hostname === 'localhost')) ||
      (allowFile && u.protocol === 'file:') || u.protocol === 'data:';
    if (ok) req.continue();
    else { page.offsite.push(req.url()); req.abort(); }
  });
  page.on('dialog', async (d) => { page.dialogs.push(d.message()); await d.dismiss(); });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  return page;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

export class Daemon {
  /* config: written to config.json and passed with --config; files:
   * {name: text} written beside it (token files). */
  constructor(args = [], {config = null, files = {}, token = null} = {}) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-web-'));
    this.args = args;
    this.token = token;   // sent on the harness's own requests
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(this.dir, name), text);
    if (config) {
      fs.writeFileSync(path.join(this.dir, 'config.json'), JSON.stringify(config));
      this.args = ['--config', path.join(this.dir, 'config.json'), ...args];
    }
  }

  headers(extra = {}) {
    return this.token ? {...extra, Authorization: 'Bearer ' + this.token} : extra;
  }

  /* Starts gradwatchd; after halt(), again on the same port and state
   * directory (a restart, as an open page sees it). */
  async start() {
    if (!this.port) this.port = await freePort();
    this.base = `http://127.0.0.1:${this.port}`;
    if (this.log === undefined) this.log = fs.openSync(path.join(this.dir, 'gradwatchd.log'), 'a');
    this.proc = spawn(GRADWATCHD, ['--state-dir', this.dir, '--socket', 'off', '--tcp', 'off',
      '--udp', 'off', '--http', `127.0.0.1:${this.port}`, ...this.args],
    {cwd: this.dir, stdio: ['ignore', this.log, this.log]});
    this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
    for (const deadline = Date.now() + WAIT_MS; Date.now() < deadline;) {
      try {
        const r = await fetch(this.base + '/healthz');
        if (r.ok) return this;
      } catch (e) { /* not yet */ }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('gradwatchd did not start: ' + this.logText());
  }

  /* SIGTERM and wait for the exit, keeping the state directory; throws
   * if the exit was not clean. */
  async halt() {
    this.proc.kill('SIGTERM');
    const code = await this.exited;
    if (code !== 0) throw new Error(`gradwatchd exited with status ${code}:\n${this.logText().slice(-4000)}`);
  }

  logText() {
    try { return fs.readFileSync(path.join(this.dir, 'gradwatchd.log'), 'utf8'); } catch (e) { return ''; }
  }

  /* POST NDJSON; resolves with the daemon's answer once it is committed. */
  async ingest(body, run) {
    const r = await fetch(this.base + '/v1/ingest' + (run ? '?run=' + encodeURIComponent(run) : ''),
      {method: 'POST', body, headers: this.headers({'Content-Type': 'application/x-ndjson'})});
    const j = await r.json();
    if (!r.ok) throw new Error(`ingest: ${r.status} ${JSON.stringify(j)}`);
    return j;
  }

  async get(p) {
    const r = await fetch(this.base + p, {headers: this.headers()});
    if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
    return r.json();
  }

  /* SIGTERM; throws if the daemon did not exit cleanly (under the
   * sanitizers a leak or an error is a non-zero exit). */
  async stop() {
    let code = 0;
    if (this.proc) {
      if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
      code = await this.exited;
    }
    const log = this.logText();
    fs.closeSync(this.log);
    fs.rmSync(this.dir, {recursive: true, force: true});
    if (code !== 0) throw new Error(`gradwatchd exited with status ${code}:\n${log.slice(-4000)}`);
  }
}

/* The points a chart must draw, computed from the input file alone: per
 * step the copy logged last (a restarted job's copy supersedes the
 * pre-crash one), counted when its value is a finite number. */
export function expectedPoints(ndjson, metric) {
  const last = new Map();
  for (const line of ndjson.split('\n')) {
    if (!line.trim()) continue;
    const o = JSON.parse(line.replace(/\bNaN\b|-?Infinity\b/g, 'null'));
    if (o.event !== undefined || !(metric in o)) continue;
    last.set(o.step, o[metric]);
  }
  let n = 0;
  for (const v of last.values()) if (typeof v === 'number' && Number.isFinite(v)) n++;
  return n;
}

/* Wait until the page says its charts are drawn. */
export async function ready(page, timeout = WAIT_MS) {
  await page.waitForFunction(() => document.body.dataset.ready === '1' || document.body.dataset.ready === 'error',
    {timeout});
  const state = await page.evaluate(() => document.body.dataset.ready);
  if (state !== '1') throw new Error('the page shows an error: ' + await page.evaluate(() => document.body.innerText));
}
