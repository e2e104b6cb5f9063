/*
 * gradwatch's pages: the runs list and a run's charts, drawn with uPlot.
 *
 * One script, two sources of data.  Served by gradwatchd (live) it reads
 * the JSON API: /v1/runs, /v1/runs/NAME, /v1/runs/NAME/alerts,
 * /v1/runs/NAME/records (columnar, downsampled on the server) and
 * /v1/alerts/ID, routes on the path (/, /runs/NAME, /alerts/ID), polls
 * while a run streams and asks the server for more detail when you zoom.
 * Inlined into the file `gradwatch report` writes, it reads the same
 * shapes from the <script type="application/json" id="gw-data"> element
 * and routes on the fragment (#run=NAME).
 *
 * Safety: nothing from the data is ever parsed as HTML.  Every string goes
 * into the DOM through textContent or an attribute set by setAttribute,
 * run names in URLs through encodeURIComponent; the pages are served with
 * a Content-Security-Policy that allows only this script (docs/web.md).
 *
 * For tests and the benchmark: window.gwView is the page's state (charts,
 * point counts), document.body.dataset.ready is "1" once the charts are
 * drawn, and the mark "gw-chart-drawn" is set at the first draw.
 *
 * A run page with an open resume alert (optimizer_reset,
 * resume_regression, resume_mismatch) opens with the restart panel: loss
 * and grad norm around that restart, each on its own scale, and the
 * alert's window as a band on every chart.  Smoothing is a time-weighted
 * EMA (as W&B's), started again at each restart; it and log scale are
 * kept in localStorage.
 *
 * (About 1,200 lines: the page's script, served under the CSP without a
 * bundler, inlined into reports whose CSP allows one hash (web/embed.py
 * puts uPlot, figures.js and this file into one block).  figures.js holds
 * the number formatting and the pictures' arithmetic; the runs list and
 * the restart panel are the parts to move next, each a script tag.)
 */
(function () {
  'use strict';

  var METRICS = [
    {key: 'loss', label: 'Loss', bit: 1, log: true, smooth: true, color: '#1f77b4'},
    {key: 'grad_norm', label: 'Grad norm', bit: 2, log: true, smooth: true, color: '#d62728'},
    /* a schedule is exact: smoothing would move its steps */
    {key: 'lr', label: 'Learning rate', bit: 4, log: true, smooth: false, color: '#2ca02c'},
    {key: 'throughput', label: 'Throughput', bit: 8, log: false, smooth: true, color: '#9467bd'}
  ];
  var OVERLAY_COLORS = ['#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];
  var SEV_COLOR = {info: '#1565c0', warning: '#a35f00', critical: '#c62828'};
  var POLL_MS = 3000;

  /* figures.js: numbers as people read them, and the arithmetic of the
   * pictures (smoothing, the alerts' windows, the restart's numbers, the
   * warm-up clip) */
  var G = window.gwFigures;
  var fmtNum = G.fmtNum, fmtAgo = G.fmtAgo, fmtTime = G.fmtTime, fmtTicks = G.fmtTicks, plural = G.plural;
  var smoothed = G.smoothed, alertWindows = G.alertWindows, focusWindow = G.focusWindow, change = G.change;
  var replayGap = G.replayGap, warmupClip = G.warmupClip, spikeClip = G.spikeClip, clipOn = G.clipOn;

  /* ---- DOM helpers: text only, never HTML ---------------------------------------- */

  function el(tag, props) {
    var e = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null) return;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = String(v);
        else if (k === 'on') Object.keys(v).forEach(function (ev) { e.addEventListener(ev, v[ev]); });
        else e.setAttribute(k, String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }

  function add(parent, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(parent, k); }); return; }
    parent.appendChild(typeof kid === 'object' ? kid : document.createTextNode(String(kid)));
  }

  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }

  /* uPlot's own legend rounds to 3 decimals: an LR of 3e-4 read "0" */
  function legendValue(u, v) { return v === null || v === undefined ? '—' : fmtNum(v); }

  /* A colour of the style sheet (app.css's variables), for the canvas. */
  function css(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  /* Steps are whole: the step axis only ticks at 1, 2, 5 times a power of ten. */
  var STEP_INCRS = [];
  for (var p10 = 1; p10 <= 1e12; p10 *= 10) STEP_INCRS.push(p10, 2 * p10, 5 * p10);

  function badge(text, cls) { return el('span', {class: 'gw-badge ' + (cls || ''), text: text}); }

  /* View settings (smoothing, log scale) kept in localStorage for every
   * run page of this browser. */
  var VIEW_KEY = 'gradwatch-view';
  var SMOOTH_DEFAULT = 0.9;

  function loadSettings() {
    var o = null;
    try { o = JSON.parse(localStorage.getItem(VIEW_KEY) || 'null'); } catch (e) { /* storage off or garbage */ }
    o = o && typeof o === 'object' ? o : {};
    var w = typeof o.smooth === 'number' && o.smooth >= 0 && o.smooth < 1 ? o.smooth : SMOOTH_DEFAULT;
    return {smooth: w, logScale: o.logScale === true};
  }

  function saveSettings(v) {
    try { localStorage.setItem(VIEW_KEY, JSON.stringify({smooth: v.smooth, logScale: v.logScale})); } catch (e) { /* kept for this page */ }
  }

  /* ---- data sources ----------------------------------------------------------------- */

  /* A daemon with tokens (auth) wants a read token on every JSON read:
   * kept for this tab in sessionStorage, taken from #token=... once (and
   * removed from the address bar), or asked for when a read says 401. */
  var TOKEN_KEY = 'gradwatch-read-token';

  function readToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }

  /* For this tab; with remember, for every tab of this browser too (each
   * alert link opens a new tab) until Forget.  An empty t forgets both. */
  function saveToken(t, remember) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
      if (t && remember) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage off: the token lives as long as the page */ }
  }

  function takeTokenFromHash() {
    var h = new URLSearchParams(location.hash.slice(1)), t = h.get('token');
    if (t === null) return;
    saveToken(t);
    h.delete('token');
    var rest = h.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  }

  function liveSource() {
    var enc = encodeURIComponent;
    /* conditional reads (docs/api.md): the last answer of the last few
     * paths is kept with its ETag and named in If-None-Match; an unchanged
     * answer comes back 304, headers only, and the kept one is used */
    var kept = new Map(), KEEP = 8;
    function get(path) {
      var headers = {Accept: 'application/json'}, t = readToken(), k = kept.get(path);
      if (t) headers.Authorization = 'Bearer ' + t;
      if (k) headers['If-None-Match'] = k.etag;
      return fetch(path, {headers: headers, cache: 'no-store'}).catch(function (e) {
        var n = new Error('cannot reach gradwatchd at ' + location.host + ' (' + e.message + ')');
        n.network = true;
        throw n;
      }).then(function (r) {
        if (r.status === 304 && k) return k.json;
        return r.json().catch(function () { return null; }).then(function (j) {
          if (!r.ok) {
            var e = new Error((j && j.error) || (r.status + ' ' + r.statusText));
            e.auth = r.status === 401;
            throw e;
          }
          var tag = r.headers.get('ETag');
          kept.delete(path);
          if (tag && j) {
            kept.set(path, {etag: tag, json: j});
            if (kept.size > KEEP) kept.delete(kept.keys().next().value);
          }
          return j;
        });
      });
    }
    return {
      live: true,
      runs: function () { return get('/v1/runs').then(function (j) { return j.runs; }); },
      /* the runs page asks for what it shows: the first `limit` runs whose
       * name holds q, open alerts and stalled runs first (docs/api.md) */
      runsPage: function (q, limit) {
        var p = new URLSearchParams({order: 'trouble', limit: String(limit)});
        if (q) p.set('q', q);
        return get('/v1/runs?' + p.toString()).then(function (j) {
          return {runs: j.runs, total: j.total, matching: j.matching};
        });
      },
      run: function (n) { return get('/v1/runs/' + enc(n)); },
      alerts: function (n) { return get('/v1/runs/' + enc(n) + '/alerts').then(function (j) { return j.alerts; }); },
      records: function (n, q) {
        var p = new URLSearchParams();
        Object.keys(q).forEach(function (k) { if (q[k] !== undefined && q[k] !== null) p.set(k, String(q[k])); });
        return get('/v1/runs/' + enc(n) + '/records?' + p.toString());
      },
      alert: function (id) { return get('/v1/alerts/' + enc(id)); },
      runHref: function (n) { return '/runs/' + enc(n); },
      alertHref: function (id) { return '/alerts/' + enc(id); }
    };
  }

  function reportSource(data) {
    var byName = new Map();
    (data.runs || []).forEach(function (r) { byName.set(r.run, r); });
    function one(n) {
      var r = byName.get(n);
      return r ? Promise.resolve(r) : Promise.reject(new Error('no run named ' + JSON.stringify(n) + ' in this report'));
    }
    return {
      live: false,
      data: data,
      runs: function () { return Promise.resolve((data.runs || []).map(function (r) { return r.info; })); },
      runsPage: function () {
        var all = (data.runs || []).map(function (r) { return r.info; });
        return Promise.resolve({runs: all, total: all.length, matching: all.length});
      },
      run: function (n) { return one(n).then(function (r) { return r.info; }); },
      alerts: function (n) { return one(n).then(function (r) { return r.alerts || []; }); },
      records: function (n) {
        return one(n).then(function (r) { return Object.assign({info: r.info}, r.records); });
      },
      alert: function (id) {
        for (var i = 0; i < (data.runs || []).length; i++) {
          var a = (data.runs[i].alerts || []).find(function (x) { return x.id === id; });
          if (a) return Promise.resolve(a);
        }
        return Promise.reject(new Error('no alert ' + id + ' in this report'));
      },
      runHref: function (n) { return '#run=' + encodeURIComponent(n); },
      alertHref: function (id) { return '#alert=' + encodeURIComponent(id); }
    };
  }

  /* ---- page frame ----------------------------------------------------------------------- */

  var src, root, current = null, timers = [];

  function stopTimers() { timers.forEach(clearInterval); timers = []; }

  /* Before another page is drawn in this document (a report's #run=
   * links): the run page's charts go, with the listeners uPlot put on
   * window, and its data with them. */
  function leaveView() {
    if (!current) return;
    current.gone = true;
    current.charts.forEach(function (u) { u.destroy(); });
    current.charts = [];
    if (current.restart) current.restart.list.forEach(function (u) { u.destroy(); });
    current.restart = null;
    current = null;
  }

  /* One resize listener for the document; it resizes the current charts. */
  window.addEventListener('resize', function () { if (current && current.onResize) current.onResize(); });

  function frame(title, body) {
    document.title = title ? title + ' · gradwatch' : 'gradwatch';
    clear(root);
    var home = src.live ? '/' : '#';
    add(root, [
      el('header', {class: 'gw-top'},
        el('a', {class: 'gw-brand', href: home, text: 'gradwatch'}),
        el('span', {class: 'gw-muted', text: src.live ? 'live' : 'report' + (src.data.generated ? ' · ' + src.data.generated : '')}),
        !src.live && (src.data.files || []).length ?
          el('span', {class: 'gw-muted gw-files', id: 'gw-files', text: 'from ' + src.data.files.join(', ')}) : null,
        src.live && readToken() ? el('button', {type: 'button', id: 'gw-forget-token', class: 'gw-push-right', text: 'Forget token',
          on: {click: function () { saveToken(''); route(); }}}) : null),
      el('main', null, body)
    ]);
  }

  function showError(err) {
    if (err && err.auth) return askToken(err);
    frame('error', el('p', {class: 'gw-error', text: String(err && err.message ? err.message : err)}));
    document.body.dataset.ready = 'error';
  }

  function askToken(err) {
    stopTimers();
    var input = el('input', {type: 'password', id: 'gw-token', autocomplete: 'off', size: 40});
    var remember = el('input', {type: 'checkbox', id: 'gw-token-remember'});
    var form = el('form', {id: 'gw-token-form'},
      el('p', null, readToken() ? 'That token was not accepted (' + err.message + ').' :
        'This gradwatchd needs a read token.'),
      el('p', {class: 'gw-muted', text: 'A read token is a line of the file that auth.read_tokens_file names in ' +
        'gradwatchd\'s configuration (an ingest token works too); ask whoever runs gradwatchd.'}),
      el('label', null, 'Read token ', input), ' ', el('button', {type: 'submit', text: 'Open'}),
      el('p', null, el('label', null, remember, ' Remember on this browser (every tab, until Forget token)')),
      el('p', {class: 'gw-muted', text: 'Otherwise it is kept for this tab only. A link may carry it as #token=…'}));
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      saveToken(input.value.trim(), remember.checked);
      route();
    });
    frame('token', form);
    document.body.dataset.ready = 'token';
    input.focus();
  }

  /* ---- runs list ------------------------------------------------------------------------- */

  var LIST_MAX = 200;   /* rows drawn at once; the filter finds the rest */

  /* Runs in the order a person looks for them: open alerts first (most
   * first), then the server's order (most recent first).  A stable sort. */
  function byAttention(runs) {
    return runs.map(function (r, i) { return [r, i]; }).sort(function (a, b) {
      return ((b[0].open_alerts || 0) > 0) - ((a[0].open_alerts || 0) > 0) ||
        (b[0].open_alerts || 0) - (a[0].open_alerts || 0) || a[1] - b[1];
    }).map(function (p) { return p[0]; });
  }

  /* A run's state as the server tells it (storage/store.h): live lines
   * arriving, stalled (a stall alert open), ended (it said so, or its log
   * did), idle (quiet, not judged stalled). */
  function stateCell(r) {
    if (r.state === 'live') return badge('streaming', 'state-live');
    if (r.state === 'stalled') return badge('stalled', 'sev-warning');
    if (r.state === 'ended') return el('span', {class: 'gw-muted', text: 'ended',
      title: r.ended_reason ? 'ended: ' + r.ended_reason : 'ended'});
    return el('span', {class: 'gw-muted', text: 'idle'});
  }

  /* Every word of the filter is a case-insensitive part of the name. */
  function matcher(text) {
    var words = String(text || '').toLowerCase().split(/\s+/).filter(Boolean);
    return function (name) {
      var n = String(name).toLowerCase();
      return words.every(function (w) { return n.indexOf(w) >= 0; });
    };
  }

  function runsPage() {
    var tbody = el('tbody');
    var cols = src.live ? ['Run', 'State', 'Segment', 'Last step', 'Last record', 'Open alerts'] :
      ['Run', 'Segment', 'Last step', 'Records', 'Open alerts'];
    var table = el('table', {class: 'gw-runs'},
      el('thead', null, el('tr', null, cols.map(function (h) {
        return el('th', {scope: 'col', text: h, class: h === 'State' || h === 'Segment' ? 'gw-wide-only' : null});
      }))), tbody);
    var status = el('p', {class: 'gw-muted', id: 'gw-status', role: 'status'});
    var filter = el('input', {type: 'search', id: 'gw-filter', placeholder: 'part of a name', autocomplete: 'off', size: 30});
    var count = el('span', {class: 'gw-muted', id: 'gw-count', 'aria-live': 'polite'});
    /* the state a run is in (live pages only; a fleet view's runs are
     * NODE/RUN, so the name filter takes a node too) */
    var stateSel = src.live ? el('select', {id: 'gw-state-filter'}, ['', 'live', 'stalled', 'ended', 'idle'].map(function (s) {
      return el('option', {value: s, text: s || 'any state'});
    })) : null;
    var last = [], total = 0, matching = 0, rows = new Map(), typing = null;
    frame('runs', [el('h1', {text: 'Runs'}),
      el('div', {class: 'gw-controls'}, el('label', null, 'Filter runs ', filter),
        stateSel ? el('label', null, ' in ', stateSel) : null, count),
      status, el('div', {class: 'gw-table-wrap'}, table)]);
    /* The server filters by the filter's longest word and sends the first
     * LIST_MAX runs (open alerts first); the other words, and the state,
     * filter here. */
    function load() {
      var words = String(filter.value || '').toLowerCase().split(/\s+/).filter(Boolean);
      var q = words.sort(function (a, b) { return b.length - a.length; })[0] || '';
      return src.runsPage(q, LIST_MAX).then(function (pg) {
        total = pg.total !== undefined && pg.total !== null ? pg.total : pg.runs.length;
        matching = pg.matching !== undefined && pg.matching !== null ? pg.matching : pg.runs.length;
        fill(pg.runs);
      });
    }
    filter.addEventListener('input', function () {
      matching = -1;   /* not known for this filter until the server answers */
      fill(last);
      clearTimeout(typing);
      typing = setTimeout(function () { load().catch(showError); }, 250);
    });
    if (stateSel) stateSel.addEventListener('change', function () { fill(last); });
    function fill(runs) {
      last = runs;
      var ok = matcher(filter.value), st = stateSel ? stateSel.value : '';
      var shown = byAttention(runs.filter(function (r) { return ok(r.run) && (!st || r.state === st); }));
      /* with more matching runs than were sent, the server's count of
       * them; else what the other words and the state left */
      var all = Math.max(total, runs.length), more = !st && matching > runs.length;
      var n = more ? matching : shown.length;
      var note = !all ? 'No runs yet.' : !shown.length ? 'No run matches the filter.' : null;
      count.textContent = (n === all ? fmtNum(all) + (all === 1 ? ' run' : ' runs') :
        fmtNum(n) + ' of ' + fmtNum(all) + ' runs match') +
        (shown.length > LIST_MAX || more ? '; the first ' + Math.min(LIST_MAX, shown.length) +
          ' are listed, filter to find the others' : '') +
        '; open alerts first';
      /* Rows are kept by run and updated in place, moved only when the
       * order changed: a refresh every 5 s must not take the keyboard
       * focus (or a text selection) from the row it is on. */
      var want = shown.slice(0, LIST_MAX).map(function (r) {
        var tr = rows.get(r.run);
        if (!tr) {
          tr = el('tr', {'data-run': r.run}, el('td', {class: 'gw-name'}, el('a', {href: src.runHref(r.run), text: r.run})));
          rows.set(r.run, tr);
        }
        while (tr.cells.length > 1) tr.removeChild(tr.lastChild);
        add(tr, [
          src.live ? el('td', {class: 'gw-wide-only'}, stateCell(r)) : null,
          el('td', {class: 'gw-wide-only', text: fmtNum(r.segment)}),
          el('td', {text: fmtNum(r.last_step)}),
          el('td', {text: src.live ? fmtAgo(r.last_seen) : fmtNum(r.records)}),
          el('td', null, r.open_alerts ? badge(String(r.open_alerts), 'sev-warning') : el('span', {class: 'gw-muted', text: '0'}))]);
        return tr;
      });
      if (note) want = [el('tr', null, el('td', {colspan: cols.length, class: 'gw-muted', text: note}))];
      var keep = new Set(want);
      Array.prototype.slice.call(tbody.rows).forEach(function (tr) { if (!keep.has(tr)) tbody.removeChild(tr); });
      want.forEach(function (tr, i) { if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null); });
      rows.forEach(function (tr, run) { if (!keep.has(tr)) rows.delete(run); });
      document.body.dataset.ready = '1';
    }
    load().catch(showError);
    if (src.live) timers.push(setInterval(function () {
      load().then(function () { status.textContent = ''; status.className = 'gw-muted'; }, function (e) {
        if (e.auth) return askToken(e);
        status.className = 'gw-error';
        status.textContent = e.message + '; the list below is from ' + new Date().toLocaleTimeString() + ' or earlier, retrying every 5 s';
      });
    }, 5000));
  }

  /* ---- chart data ------------------------------------------------------------------------ */

  /* The x values (steps) of the main run and the overlays, and per metric
   * the aligned series: current copy, superseded copies by segment,
   * overlays' current copies. */
  function buildData(v) {
    var steps = new Set();
    var all = [v.data].concat(v.overlays.map(function (o) { return o.data; }));
    all.forEach(function (d) { if (d) d.step.forEach(function (s) { steps.add(s); }); });
    var x = Array.from(steps).sort(function (a, b) { return a - b; });
    var idx = new Map();
    x.forEach(function (s, i) { idx.set(s, i); });
    var supSegs = [];
    var d = v.data;
    for (var i = 0; i < d.step.length; i++)
      if (d.superseded[i] && supSegs.indexOf(d.segment[i]) < 0) supSegs.push(d.segment[i]);
    supSegs.sort(function (a, b) { return a - b; });
    var out = {x: x, metrics: {}};
    METRICS.forEach(function (m) {
      function fresh() { return new Array(x.length).fill(null); }
      function val(y) { return y === null || (v.logScale && m.log && !(y > 0)) ? null : y; }
      var cur = fresh(), sup = supSegs.map(fresh), nonfinite = [];
      for (var i = 0; i < d.step.length; i++) {
        var j = idx.get(d.step[i]), y = val(d[m.key][i]);
        if (d.nonfinite[i] & m.bit) nonfinite.push({step: d.step[i], superseded: !!d.superseded[i]});
        if (y === null) continue;
        if (d.superseded[i]) sup[supSegs.indexOf(d.segment[i])][j] = y;
        else cur[j] = y;
      }
      var ov = v.overlays.map(function (o) {
        var arr = fresh();
        if (o.data) for (var i = 0; i < o.data.step.length; i++) {
          var y = val(o.data[m.key][i]);
          if (y !== null && !o.data.superseded[i]) arr[idx.get(o.data.step[i])] = y;
        }
        return arr;
      });
      var has = cur.some(function (y) { return y !== null; }) || nonfinite.length > 0;
      out.metrics[m.key] = {cur: cur, sup: sup, supSegs: supSegs, overlays: ov, nonfinite: nonfinite, has: has};
    });
    return out;
  }

  /* Where each segment's current copy lies: [from, to] of its steps. */
  function segmentSpans(d) {
    return (d.segments || []).filter(function (s) { return s.records > 0; }).map(function (s) {
      var to = s.superseded_from !== null && s.superseded_from !== undefined ? Math.min(s.max_step, s.superseded_from - 1) : s.max_step;
      return {seg: s.segment, reason: s.reason, from: s.min_step, to: to, restart: s.restart_step};
    });
  }

  /* ---- drawing hooks ---------------------------------------------------------------------- */

  function drawSegments(u) {
    var spans = current && current.data ? segmentSpans(current.data) : [];
    var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
    ctx.save();
    spans.forEach(function (s, k) {
      if (k % 2 === 0) return;
      var x0 = u.valToPos(s.from, 'x', true), x1 = u.valToPos(s.to, 'x', true);
      x0 = Math.max(x0, u.bbox.left);
      x1 = Math.min(x1, u.bbox.left + u.bbox.width);
      if (x1 <= x0) return;
      ctx.fillStyle = css('--seg', 'rgba(90, 120, 180, 0.09)');
      ctx.fillRect(x0, top, x1 - x0, h);
    });
    /* an open resume alert's window, from the restart to the alert, in
     * the severity's colour and never narrower than 8 px */
    var dpr = devicePixelRatio || 1, left = u.bbox.left, right = left + u.bbox.width;
    (current && current.bands || []).forEach(function (b) {
      var x0 = u.valToPos(b.from, 'x', true), x1 = Math.max(u.valToPos(b.to, 'x', true), x0 + 8 * dpr);
      x0 = Math.max(x0, left);
      x1 = Math.min(x1, right);
      if (x1 <= x0) return;
      ctx.globalAlpha = 0.16;
      ctx.fillStyle = SEV_COLOR[b.severity] || '#888';
      ctx.fillRect(x0, top, x1 - x0, h);
      ctx.globalAlpha = 1;
    });
    ctx.restore();
  }

  function drawMarks(u, panel) {
    if (!current || !current.data) return;
    var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, dpr = devicePixelRatio || 1;
    var left = u.bbox.left, right = u.bbox.left + u.bbox.width;
    ctx.save();
    /* restarts: a dashed line where each later segment starts */
    segmentSpans(current.data).forEach(function (s, k) {
      if (k === 0) return;
      var x = u.valToPos(s.from, 'x', true);
      if (x < left || x > right) return;
      ctx.strokeStyle = css('--mark', '#555');
      ctx.lineWidth = dpr;
      ctx.setLineDash([4 * dpr, 3 * dpr]);
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
      ctx.setLineDash([]);
      if (panel) return;   /* the restart panel's heading names it */
      ctx.fillStyle = css('--mark-text', '#333');
      ctx.font = (11 * dpr) + 'px system-ui, sans-serif';
      ctx.textAlign = 'left';   /* uPlot leaves 'right' from its axes: the label belongs right of the line */
      ctx.textBaseline = 'alphabetic';
      var label = 'segment ' + s.seg + ' (' + s.reason + (s.restart !== null && s.restart !== undefined ? ' from step ' + fmtNum(s.restart) : '') + ')';
      if (x + 4 * dpr + ctx.measureText(label).width > right) { ctx.textAlign = 'right'; x -= 8 * dpr; }   /* no room: the line's left */
      ctx.fillText(label, x + 4 * dpr, top + h - 6 * dpr);
    });
    /* alerts: a thin line in the severity's colour */
    (current.alerts || []).forEach(function (a) {
      var x = u.valToPos(a.step, 'x', true);
      if (x < left || x > right) return;
      ctx.strokeStyle = SEV_COLOR[a.severity] || '#888';
      ctx.globalAlpha = 0.7;
      ctx.lineWidth = 1.5 * dpr;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
      ctx.globalAlpha = 1;
    });
    /* non-finite values: red triangles along the top edge */
    var m = u.gwMetric && current.built ? current.built.metrics[u.gwMetric] : null;
    if (m) {
      ctx.fillStyle = '#c62828';
      m.nonfinite.forEach(function (p) {
        var x = u.valToPos(p.step, 'x', true);
        if (x < left || x > right) return;
        ctx.globalAlpha = p.superseded ? 0.35 : 1;
        ctx.beginPath();
        ctx.moveTo(x - 4 * dpr, top); ctx.lineTo(x + 4 * dpr, top); ctx.lineTo(x, top + 7 * dpr);
        ctx.closePath(); ctx.fill();
      });
      ctx.globalAlpha = 1;
    }
    ctx.restore();
  }

  /* ---- the run page ------------------------------------------------------------------------ */

  /* Several processes of one job write this run (docs/integrations.md,
   * "Distributed jobs"): the interleaved writers the daemon recognised, and
   * the other ranks it keeps apart, with the one furthest behind. */
  function writersNote(i) {
    var out = [];
    if (i.writers && i.writers.interleaved)
      out.push('Several processes log this run (recognised at step ' + fmtNum(i.writers.step) +
        '): their repeats of a step are kept apart and open no segments. Send from rank 0 only, ' +
        'or add "rank" to each line.');
    var ranks = (i.ranks || []).filter(function (k) { return k.rank >= 0; });
    /* the daemon sends the first 1000 ranks and a summary of all of them */
    var sum = i.ranks_summary;
    if (ranks.length) {
      var behind = sum && sum.behind ? sum.behind :
        ranks.reduce(function (a, k) { return k.last_step < a.last_step ? k : a; });
      out.push('Also sending: ' + plural(sum ? sum.count : ranks.length, 'other rank') + ' (kept apart, up to rank ' +
        fmtNum(sum ? sum.max_rank : ranks[ranks.length - 1].rank) + '); furthest behind: rank ' + fmtNum(behind.rank) +
        ' at step ' + fmtNum(behind.last_step) + (src.live ? ', last line ' + fmtAgo(behind.last_seen) : '') + '.');
    }
    return out.length ? el('div', {class: 'gw-writers', id: 'gw-writers', role: 'note', text: out.join(' ')}) : null;
  }

  function runPage(name, focusAlertId) {
    /* this page's own state: the closures below keep it, so an answer
     * that comes after the page was left finds view.gone */
    var settings = loadSettings();
    var view = current = {
      name: name, info: null, data: null, alerts: [], overlays: [], logScale: settings.logScale, smooth: settings.smooth,
      zoom: null, charts: [], built: null, open: null, syncing: false, fetchSeq: 0,
      bands: [], restart: null, restartData: null,
      points: function () { return view.data ? view.data.step.length : 0; }
    };
    window.gwView = view;
    var chartsBox = el('div', {class: 'gw-charts'});
    var side = el('div', {class: 'gw-side'});
    var detailBox = el('div', {id: 'gw-detail'});
    var alertList = el('ul', {class: 'gw-alerts', id: 'gw-alerts'});
    var head = el('div', {class: 'gw-run-head'});
    var segBox = el('div', {class: 'gw-segments gw-muted'});
    var overlayBox = el('span');
    var logBox = el('input', {type: 'checkbox', id: 'gw-log'});
    logBox.checked = view.logScale;
    var smoothBox = el('input', {type: 'range', id: 'gw-smooth', min: 0, max: 0.99, step: 0.01,
      'aria-label': 'smoothing (exponential moving average weight, 0 is off)'});
    smoothBox.value = String(view.smooth);
    var smoothText = el('span', {class: 'gw-muted gw-smooth-value'});
    function smoothLabel() { smoothText.textContent = view.smooth > 0 ? String(view.smooth) : 'off'; }
    smoothLabel();
    var status = el('span', {class: 'gw-muted', id: 'gw-status', role: 'status'});
    logBox.addEventListener('change', function () { view.logScale = logBox.checked; saveSettings(view); rebuild(); });
    smoothBox.addEventListener('input', function () {
      view.smooth = Math.min(0.99, Math.max(0, Number(smoothBox.value) || 0));
      smoothLabel();
      saveSettings(view);
      rebuild();
    });
    var restartBox = el('section', {id: 'gw-restart', class: 'gw-restart', hidden: 'hidden'});
    var resetBtn = el('button', {type: 'button', id: 'gw-reset', text: 'Reset zoom'});
    resetBtn.addEventListener('click', function () { resetZoom(); });
    add(side, [detailBox, el('h3', {text: 'Alerts'}), alertList]);
    frame(name, [
      head,
      el('div', {class: 'gw-controls'},
        el('label', null, logBox, 'log scale'),
        el('label', {title: 'an exponential moving average drawn over the raw values (faint); 0 is off'}, 'smoothing ', smoothBox, smoothText),
        resetBtn, overlayBox, status),
      segBox,
      el('div', {class: 'gw-layout'}, el('div', {class: 'gw-main'}, restartBox, chartsBox), side)
    ]);
    view.els = {charts: chartsBox, detail: detailBox, alerts: alertList, head: head, segs: segBox, status: status};

    function fillHead() {
      var i = view.info || {};
      clear(head);
      add(head, [
        el('h1', {id: 'gw-run-name', text: name}),
        el('div', {class: 'gw-muted'},
          'segment ' + fmtNum(i.segment) + ' · last step ' + fmtNum(i.last_step) +
          (src.live ? ' · last record ' + fmtAgo(i.last_seen) : '') +
          ' · ' + (view.data ? plural(view.data.total, 'record') : '— records') +
          (view.data && view.data.downsampled ? ' (drawn: ' + fmtNum(view.data.step.length) + ', min/max per bucket)' : '')),
        writersNote(i)
      ]);
      clear(view.els.segs);
      segmentSpans(view.data || {}).forEach(function (s) {
        var full = (view.data.segments || []).find(function (x) { return x.segment === s.seg; });
        add(view.els.segs, el('div', {'data-segment': s.seg, text:
          'segment ' + s.seg + ' (' + s.reason + (s.restart !== null && s.restart !== undefined ? ' from step ' + fmtNum(s.restart) : '') + '): steps ' +
          fmtNum(full.min_step) + '–' + fmtNum(full.max_step) + ', ' + plural(full.records, 'record') +
          (full.superseded_from !== null && full.superseded_from !== undefined ? '; steps from ' + fmtNum(full.superseded_from) + ' superseded by a later segment (drawn faint)' : '')}));
      });
    }

    function fillAlerts() {
      clear(alertList);
      if (!view.alerts.length) alertList.appendChild(el('li', {class: 'gw-muted', text: 'No alerts.'}));
      view.alerts.forEach(function (a) {
        var li = el('li', {'data-alert-id': a.id, class: view.open === a.id ? 'gw-open' : '', tabindex: 0, role: 'button',
          'aria-label': a.severity + ' ' + a.detector + ' at step ' + a.step + ': ' + a.summary},
          el('div', {class: 'gw-alert-head'}, badge(a.severity, 'sev-' + a.severity),
            el('strong', {text: a.detector}), el('span', {class: 'gw-muted', text: 'step ' + fmtNum(a.step) + (a.state ? ' · ' + a.state : '')}),
            a.acked_at ? badge('acknowledged', 'state-acked') : null),
          el('div', {text: a.summary}));
        li.addEventListener('click', function () { openAlert(a.id, true); });
        li.addEventListener('keydown', function (e) {
          if (e.key !== 'Enter' && e.key !== ' ') return;
          e.preventDefault();
          openAlert(a.id, true);
        });
        alertList.appendChild(li);
      });
    }

    function evidenceRows(obj, prefix, rows) {
      Object.keys(obj || {}).forEach(function (k) {
        var v = obj[k], key = prefix ? prefix + '.' + k : k;
        if (v && typeof v === 'object' && !Array.isArray(v)) evidenceRows(v, key, rows);
        else rows.push(el('tr', null, el('td', {text: key}),
          el('td', {text: Array.isArray(v) ? v.map(fmtNum).join(', ') : fmtNum(v)})));
      });
      return rows;
    }

    /* When: the daemon's clock at the open and the resolve (live only),
     * the opening record's own timestamp (when it had one). */
    function alertWhen(a) {
      var parts = [];
      if (a.opened_at) parts.push('opened ' + fmtTime(a.opened_at) + ' (' + fmtAgo(a.opened_at) + ')');
      if (a.resolved_at) parts.push('resolved ' + fmtTime(a.resolved_at));
      if (a.ts) parts.push('record time ' + fmtTime(a.ts));
      return parts.length ? el('p', {class: 'gw-muted', id: 'gw-detail-when', text: parts.join(' · ')}) : null;
    }

    /* Acknowledged (docs/alerts.md "Acknowledging"): by whom, when, why.
     * Read-only: acknowledging is the API's and the CLI's. */
    function ackLine(a) {
      if (!a.acked_at) return null;
      return el('p', {class: 'gw-ack', id: 'gw-detail-ack'}, badge('acknowledged', 'state-acked'),
        el('span', {text: ' ' + (a.acked_by ? 'by ' + a.acked_by + ' ' : '') + fmtTime(a.acked_at) +
          ' (' + fmtAgo(a.acked_at) + ')' + (a.ack_note ? ': ' + a.ack_note : '')}));
    }

    function openAlert(id, zoomTo) {
      var a = view.alerts.find(function (x) { return x.id === id; });
      if (!a) return;
      view.open = id;
      clear(detailBox);
      add(detailBox, el('div', {class: 'gw-detail', 'data-alert-id': a.id},
        el('div', {class: 'gw-alert-head'}, badge(a.severity, 'sev-' + a.severity), el('strong', {text: a.detector}),
          el('span', {class: 'gw-muted', text: 'segment ' + fmtNum(a.segment) + ' · step ' + fmtNum(a.step)})),
        el('p', {class: 'gw-summary-line', id: 'gw-detail-summary', text: a.summary}),
        alertWhen(a),
        ackLine(a),
        /* what to do first: it is what a person paged for this reads for */
        el('h4', {text: 'What to check'}), el('p', {text: a.action || '—'}),
        el('h4', {text: 'Likely cause'}), el('p', {text: a.cause || '—'}),
        el('h4', {text: 'Evidence'}), el('table', null, el('tbody', null, evidenceRows(a.evidence, '', []))),
        src.live ? el('p', null, el('a', {href: src.alertHref(a.id), text: 'link to this alert'})) : null));
      Array.prototype.forEach.call(document.querySelectorAll('.gw-marker, .gw-alerts li'), function (e) {
        e.classList.toggle('gw-open', e.getAttribute('data-alert-id') === id);
      });
      if (zoomTo) zoomAround(a.step);
    }
    view.openAlert = openAlert;

    function placeMarkers(u) {
      var box = u.gwMarkers;
      if (!box) return;
      clear(box);
      var min = u.scales.x.min, max = u.scales.x.max;
      var rows = [];   /* the last x used on each row: close alerts stack */
      view.alerts.forEach(function (a) {
        if (a.step < min || a.step > max) return;
        var x = u.valToPos(a.step, 'x'), row = 0;
        while (rows[row] !== undefined && x - rows[row] < 16) row++;
        rows[row] = x;
        var b = el('button', {type: 'button', class: 'gw-marker sev-' + a.severity + (view.open === a.id ? ' gw-open' : ''),
          'data-alert-id': a.id, 'data-step': a.step, 'data-detector': a.detector,
          title: a.detector + ' at step ' + a.step + ': ' + a.summary,
          'aria-label': a.detector + ' alert at step ' + a.step});
        b.style.left = x + 'px';
        b.style.top = (4 + 16 * row) + 'px';
        b.addEventListener('mousedown', function (e) { e.stopPropagation(); });
        b.addEventListener('mouseenter', function () { openAlert(a.id, false); });
        b.addEventListener('click', function (e) { e.stopPropagation(); openAlert(a.id, false); });
        box.appendChild(b);
      });
    }

    function chartWidth() { return Math.max(320, chartsBox.clientWidth - 10); }

    /* What the chart shows, in words (its aria-label): "Loss against
     * step: 1,600 points, steps 1–1,600; last 2.13 at step 1,600; lowest
     * 1.02, highest 3.41; 1 NaN or infinite". */
    function chartSummary(m, x, md) {
      var n = 0, lo = null, hi = null, first = null, last = null;
      md.cur.forEach(function (y, i) {
        if (y === null) return;
        n++;
        if (first === null) first = i;
        last = i;
        if (lo === null || y < lo) lo = y;
        if (hi === null || y > hi) hi = y;
      });
      var t = m.label + ' against step: ' + plural(n, 'point');
      if (n) t += ', steps ' + fmtNum(x[first]) + '–' + fmtNum(x[last]) + '; last ' + fmtNum(md.cur[last]) +
        ' at step ' + fmtNum(x[last]) + '; lowest ' + fmtNum(lo) + ', highest ' + fmtNum(hi);
      if (md.nonfinite.length) t += '; ' + fmtNum(md.nonfinite.length) + ' NaN or infinite';
      return t;
    }

    /* The steps at which the smoothing starts again: each later
     * segment's first step. */
    function segmentStarts() {
      return segmentSpans(view.data || {}).slice(1).map(function (s) { return s.from; }).sort(function (a, b) { return a - b; });
    }

    /* One chart's series and data: the current copy (faint under its
     * smoothed line when smoothing is on), the superseded copies, the
     * overlays (when given), the smoothed line last, on top. */
    function seriesFor(m, md, x, overlays, panel) {
      var sm = view.smooth > 0 && m.smooth;
      var series = [{label: 'step'}, {label: overlays.length ? name : 'current', stroke: m.color, alpha: sm ? 0.35 : 1,
        width: sm ? 1 : 1.5, spanGaps: true, value: legendValue}];
      var data = [x, md.cur];
      md.supSegs.forEach(function (s, i) {
        /* the restart panel compares the replayed steps with this copy:
         * there it is a line of its own colour, not a faint trace */
        series.push(panel ? {label: 'segment ' + s + ' (before the crash)', stroke: css('--mark', '#555'), width: 1.2, dash: [5, 2], spanGaps: true} :
          {label: 'segment ' + s + ' (superseded)', stroke: m.color, alpha: 0.3, width: 1, dash: [3, 3], spanGaps: true, value: legendValue});
        data.push(md.sup[i]);
      });
      overlays.forEach(function (o, i) {
        series.push({label: o.name, stroke: OVERLAY_COLORS[i % OVERLAY_COLORS.length], width: 1.2, spanGaps: true, value: legendValue});
        data.push(md.overlays[i]);
      });
      if (sm) {
        series.push({label: 'smoothed', stroke: m.color, width: 2, spanGaps: true, value: legendValue});
        data.push(smoothed(x, md.cur, segmentStarts(), view.smooth));
      }
      return {series: series, data: data};
    }

    /* The run's steps, first to last, whatever range was fetched. */
    function runSpan() {
      var segs = (view.data && view.data.segments) || [], lo = Infinity, hi = -Infinity;
      segs.forEach(function (s) { if (s.records > 0) { lo = Math.min(lo, s.min_step); hi = Math.max(hi, s.max_step); } });
      return lo <= hi ? [lo, hi] : null;
    }

    /* The y range of a chart whose warm-up is clipped (u.gwClipOn: the
     * view holds the warm-up and at least half the run; it starts on,
     * for the whole run); uPlot's own otherwise. */
    function yRange(u, dmin, dmax) {
      var c = u.gwClip;
      if (c && u.gwClipOn !== false) return uPlot.rangeNum(c.lo, c.hi, 0.1, true);
      return dmin === null || dmin === undefined ? [null, null] : uPlot.rangeNum(dmin, dmax, 0.1, true);   /* uPlot's own */
    }

    /* After the x range changed (uPlot computes the y range before it
     * sets the new x, so yRange cannot look): whether the clip still
     * applies, and the y range again when that changed. */
    function clipFollowsZoom(u) {
      var c = u.gwClip, sx = u.scales.x;
      if (!c) return;
      var on = clipOn(c, sx.min, sx.max);
      if (on === (u.gwClipOn !== false)) return;
      u.gwClipOn = on;
      var lo = Infinity, hi = -Infinity, x = u.data[0];
      for (var k = 1; k < u.data.length; k++)
        for (var i = 0; i < x.length; i++) {
          var y = u.data[k][i];
          if (y === null || x[i] < sx.min || x[i] > sx.max) continue;
          if (y < lo) lo = y;
          if (y > hi) hi = y;
        }
      var r = on ? uPlot.rangeNum(c.lo, c.hi, 0.1, true) : lo <= hi ? uPlot.rangeNum(lo, hi, 0.1, true) : null;
      /* after uPlot's own commit, which would keep the range it computed */
      if (r) setTimeout(function () { if (u.data) u.setScale('y', {min: r[0], max: r[1]}); }, 0);
    }

    /* The note beside a chart's title: a metric never finite, or the
     * warm-up clipped off the top. */
    function chartNote(sp) {
      var bad = sp.md.nonfinite.filter(function (p) { return !p.superseded; }).length;
      if (!sp.points && bad)
        return 'no finite value: NaN or infinite at ' + (bad > 1 ? 'all ' + fmtNum(bad) + ' steps' : 'its one step') + ' (the red marks)';
      return clipNote(sp.clip);
    }

    /* Without a cursor on the chart, the legend shows the last step's
     * values (uPlot's own shows dashes until a hover). */
    function legendAtRest(u) {
      if (u.cursor.idx !== null && u.cursor.idx !== undefined) return;
      var x = u.data[0];
      if (x && x.length) u.setLegend({idx: x.length - 1}, false);
    }

    function clipNote(c) {
      if (c && c.spike)
        return plural(c.over, 'value') + ' above the top, up to ' + fmtNum(+c.peak.toPrecision(3)) +
          ' at step ' + fmtNum(c.step) + '; log scale or a zoom shows ' + (c.over > 1 ? 'them' : 'it');
      return c ? 'steps up to ' + fmtNum(Math.floor(c.cut)) + ' (the warm-up) reach ' + fmtNum(+c.peak.toPrecision(3)) +
        ' at step ' + fmtNum(c.step) + ', above the top; log scale shows them' : '';
    }

    /* The charts to draw: per metric the run logs, its series and data. */
    function chartSpecs(b) {
      return METRICS.filter(function (m) { return b.metrics[m.key].has; }).map(function (m) {
        var md = b.metrics[m.key], sd = seriesFor(m, md, b.x, view.overlays);
        var run = runSpan();
        /* what was logged decides the axis, not the smoothed line */
        var ys = sd.data.slice(1).filter(function (_, i) { return sd.series[i + 1].label !== 'smoothed'; });
        var clip = m.key === 'grad_norm' && !view.logScale && run ? warmupClip(b.x, ys, run[0], run[1]) : null;
        if (!clip && !view.logScale && run) clip = spikeClip(b.x, ys, run[0], run[1]);
        return {m: m, md: md, series: sd.series, data: sd.data, clip: clip,
                points: md.cur.filter(function (y) { return y !== null; }).length};
      });
    }

    /* ---- the restart panel: loss and grad norm around the restart an
     * open resume alert is about, each on its own scale, so a rise of the
     * one and a fall of the other show at first sight whatever the rest
     * of the run spans (the warm-up's grad norms, a long run) ---- */
    var RESTART_METRICS = METRICS.filter(function (m) { return m.key === 'loss' || m.key === 'grad_norm'; });

    /* The steps shown: 5% of the run either side of the restart, or
     * twice the replayed steps (restart to crash) when more, at least 50
     * and at most 2,000 steps. */
    function restartRange(w) {
      /* the run's steps, not the fetched range's: a zoom elsewhere leaves the panel */
      var run = runSpan() || [view.data.from, view.data.to];
      var half = Math.max(Math.round(Math.max(run[1] - run[0], 1) * 0.05), w.crash ? 2 * (w.crash - w.from) : 0);
      half = Math.min(2000, Math.max(50, half));
      return [Math.max(run[0], w.from - half), Math.min(run[1], w.from + half)];
    }

    /* Live, the records drawn below cannot serve the panel when they are
     * downsampled or a zoom's range: it asks for its own. */
    function restartNeedsDetail() {
      return !!(src.live && view.data && (view.data.downsampled || view.ranged));
    }

    function restartTitle(m, lo, hi) {
      return m.label + (view.logScale && m.log ? ' (log)' : '') + ', steps ' + fmtNum(lo) + '–' + fmtNum(hi);
    }

    /* Each panel chart's width: half the panel's, or all of it when narrow. */
    function restartWidth() {
      var full = Math.max(320, (restartBox.querySelector('.gw-restart-charts') || restartBox).clientWidth);
      return full >= 700 ? Math.floor((full - 12) / 2) : full;
    }

    function dropRestart() {
      if (view.restart) view.restart.list.forEach(function (u) { u.destroy(); });
      view.restart = null;
      clear(restartBox);
      restartBox.hidden = true;
    }

    function drawRestart() {
      var w = view.data ? focusWindow(view.bands) : null;
      if (!w) { dropRestart(); return; }
      var range = restartRange(w), lo = range[0], hi = range[1];
      var rd = view.restartData, fits = restartNeedsDetail() && rd && rd.from <= lo && rd.to >= hi;
      if (!fits && view.restartPending && view.restart && view.restart.from === w.from) return;
      var b = fits ? buildData({data: rd, overlays: [], logScale: view.logScale}) : view.built;
      var i0 = 0, i1 = b.x.length;
      while (i0 < b.x.length && b.x[i0] < lo) i0++;
      while (i1 > i0 && b.x[i1 - 1] > hi) i1--;
      var x = b.x.slice(i0, i1);
      var specs = RESTART_METRICS.filter(function (m) { return b.metrics[m.key].has; }).map(function (m) {
        var md = b.metrics[m.key];
        var part = {cur: md.cur.slice(i0, i1), sup: md.sup.map(function (a) { return a.slice(i0, i1); }), supSegs: md.supSegs, overlays: []};
        var sd = seriesFor(m, part, x, [], true);
        return {m: m, md: part, series: sd.series, data: sd.data};
      });
      if (!specs.length || !x.length) { dropRestart(); return; }
      var caption = specs.map(function (sp) {
        return change(sp.m.key === 'loss' ? 'loss' : 'grad norm', x, sp.data[1], w.from - 49, w.from, w.from + 2, w.from + 30);
      }).filter(Boolean).join(' · ');
      if (caption) caption += ': medians of steps ' + fmtNum(w.from - 49) + '–' + fmtNum(w.from) + ' and ' +
        fmtNum(w.from + 2) + '–' + fmtNum(w.from + 30);
      /* a resumed job logs the steps after the checkpoint again: how far
       * that replay is from what the same steps logged before the crash */
      if (w.crash) {
        var gaps = specs.map(function (sp) {
          var cur = [], sup = [], md = sp.md;
          x.forEach(function (st, i) {
            if (st <= w.from || st > w.crash) return;
            var old = null;
            md.sup.forEach(function (a) { if (a[i] !== null) old = a[i]; });
            cur.push(md.cur[i]);
            sup.push(old);
          });
          return replayGap(sp.m.key === 'loss' ? 'loss' : 'grad norm', cur, sup);
        }).filter(Boolean);
        if (gaps.length) caption += '. Replayed steps ' + fmtNum(w.from + 1) + '–' + fmtNum(w.crash) +
          ' against their copy before the crash (RMS of the log ratio): ' + gaps.join(' · ');
      }
      /* a streaming run widens the range: the charts stay and take it */
      var sig = JSON.stringify([w.from, w.detectors, view.logScale, specs.map(function (sp) { return sp.series.map(function (s) { return s.label; }); })]);
      restartBox.hidden = false;
      if (view.restart && view.restart.sig === sig) {
        var r0 = view.restart;
        r0.lo = lo;
        r0.hi = hi;
        specs.forEach(function (sp, k) {
          r0.titles[k].textContent = restartTitle(sp.m, lo, hi);
          r0.list[k].setData(sp.data);
        });
        r0.caption.textContent = caption;
        return;
      }
      dropRestart();
      restartBox.hidden = false;
      var goBtn = el('button', {type: 'button', id: 'gw-restart-zoom', text: 'Zoom the charts here'});
      goBtn.addEventListener('click', function () { zoomAround(w.from); });
      var capEl = el('p', {id: 'gw-restart-caption', text: caption});
      var row = el('div', {class: 'gw-restart-charts'});
      add(restartBox, [el('div', {class: 'gw-restart-head'},
        el('h2', {text: 'At the restart from step ' + fmtNum(w.from) + ': ' + w.detectors.join(', ')}), goBtn), capEl, row]);
      var each = restartWidth();
      var fg = css('--fg', '#1d2430'), grid = css('--grid', 'rgba(0, 0, 0, 0.07)');
      var r = view.restart = {from: w.from, lo: lo, hi: hi, sig: sig, charts: {}, list: [], titles: [], caption: capEl};
      specs.forEach(function (sp) {
        var m = sp.m;
        var box = el('div', {class: 'gw-chart', id: 'restart-' + m.key, 'data-metric': m.key, role: 'figure',
          'aria-label': m.label + ' from step ' + fmtNum(lo) + ' to ' + fmtNum(hi) + ', around the restart from step ' + fmtNum(w.from)});
        var title = el('h3', {text: restartTitle(m, lo, hi)});
        r.titles.push(title);
        box.appendChild(title);
        box.style.width = each + 'px';
        row.appendChild(box);
        var u = new uPlot({
          width: each, height: 180, padding: [null, 40, null, null],
          scales: {x: {time: false, range: function () { return [r.lo, r.hi]; }}, y: {distr: view.logScale && m.log ? 3 : 1}},
          cursor: {sync: {key: 'gw-restart', setSeries: false}, drag: {x: false, y: false}},
          /* the picture, not the numbers: the charts below have the legend */
          legend: {show: false},
          axes: [{incrs: STEP_INCRS, stroke: fg, grid: {stroke: grid}, ticks: {stroke: grid}},
                 {size: 64, space: 22, stroke: fg, grid: {stroke: grid}, ticks: {stroke: grid}, values: function (u, vals) { return fmtTicks(vals); }}],
          series: sp.series,
          hooks: {drawClear: [drawSegments], draw: [function (u) { drawMarks(u, true); }]}
        }, sp.data, box);
        u.gwMetric = m.key;
        r.charts[m.key] = u;
        r.list.push(u);
      });
    }

    /* Live, when the run's records came downsampled: the restart's range
     * in detail, then the panel again. */
    function loadRestartDetail() {
      var w = restartNeedsDetail() ? focusWindow(view.bands) : null;
      if (!w) return;
      var range = restartRange(w), seq = view.fetchSeq;
      src.records(name, {from: range[0], to: range[1], max_points: Math.min(20000, Math.max(500, chartWidth()))}).then(function (d) {
        if (view.gone || seq !== view.fetchSeq) return;
        view.restartData = d;
        view.restartPending = false;
        drawRestart();
      }, function () {
        if (view.gone || seq !== view.fetchSeq) return;
        view.restartPending = false;   /* the overview's points, then */
        drawRestart();
      });
    }

    /* Draws the charts.  When they hold the same series as before (a live
     * update), the charts stay and take the new data: no new canvas, the
     * cursor and its legend stay where the reader holds them. */
    function rebuild() {
      if (!view.data) {
        view.charts.forEach(function (u) { u.destroy(); });
        view.charts = [];
        clear(chartsBox);
        dropRestart();
        return;
      }
      view.built = buildData(view);
      var b = view.built, specs = chartSpecs(b);
      var sig = JSON.stringify([view.logScale, specs.map(function (sp) {
        return [sp.m.key, sp.series.map(function (x) { return x.label; })];
      })]);
      view.building = true;
      if (sig === view.sig && view.charts.length === specs.length) {
        specs.forEach(function (sp, k) {
          var u = view.charts[k];
          u.gwClip = sp.clip;
          var note = u.root.parentNode.querySelector('.gw-clip');
          if (note) note.textContent = chartNote(sp);
          u.setData(sp.data, !view.zoom);
          if (view.zoom) u.setScale('x', {min: view.zoom[0], max: view.zoom[1]});
          u.gwPoints = sp.points;
          u.root.parentNode.setAttribute('data-points', String(sp.points));
          u.root.parentNode.setAttribute('aria-label', chartSummary(sp.m, b.x, sp.md));
        });
        view.building = false;
        placeMarkers(view.charts[0]);
        drawRestart();
        document.body.dataset.ready = '1';
        return;
      }
      view.charts.forEach(function (u) { u.destroy(); });
      view.charts = [];
      clear(chartsBox);
      view.sig = sig;
      var fg = css('--fg', '#1d2430'), grid = css('--grid', 'rgba(0, 0, 0, 0.07)');
      specs.forEach(function (sp, k) {
        var m = sp.m;
        var box = el('div', {class: 'gw-chart', id: 'chart-' + m.key, 'data-metric': m.key, role: 'figure',
          'aria-label': chartSummary(m, b.x, sp.md)});
        box.appendChild(el('h3', null, m.label + (view.logScale && m.log ? ' (log)' : ''), ' ',
          el('span', {class: 'gw-muted gw-clip', text: chartNote(sp)})));
        chartsBox.appendChild(box);
        var opts = {
          /* the others 190 px high, their value axis a tick every 22 px
           * or more: a 73 px plot at uPlot's 30 px showed a single
           * labelled tick (a grad norm of 3.6-5.6 read "5") */
          width: chartWidth(), height: k === 0 ? 260 : 190,
          /* room on the right for half the last step's label ("1,000,000") */
          padding: [null, 40, null, null],
          scales: {x: {time: false}, y: view.logScale && m.log ? {distr: 3} : {distr: 1, range: function (u, a, b) {
            if (u.gwClip === undefined) u.gwClip = sp.clip;   /* before the constructor returned */
            return yRange(u, a, b);
          }}},
          cursor: {sync: {key: 'gw-x', setSeries: false}, drag: {x: true, y: false},
                   bind: {dblclick: function () { return function () { resetZoom(); return null; }; }}},
          legend: {live: true},
          axes: [{label: 'step', incrs: STEP_INCRS, stroke: fg, grid: {stroke: grid}, ticks: {stroke: grid}},
                 {size: 64, space: 22, stroke: fg, grid: {stroke: grid}, ticks: {stroke: grid}, values: function (u, vals) { return fmtTicks(vals); }}],
          series: sp.series,
          hooks: {
            drawClear: [drawSegments],
            draw: [function (u) { drawMarks(u, false); }, function (u) { if (u === view.charts[0]) placeMarkers(u); }],
            setScale: [function (u, key) { if (key === 'x') { clipFollowsZoom(u); onZoom(u); } }],
            setLegend: [legendAtRest]
          }
        };
        var u = new uPlot(opts, sp.data, box);
        legendAtRest(u);
        u.gwClip = sp.clip;
        u.gwMetric = m.key;
        u.gwPoints = sp.points;
        if (k === 0) {
          var mk = el('div', {class: 'gw-markers'});
          u.over.appendChild(mk);
          u.gwMarkers = mk;
        }
        box.setAttribute('data-points', String(u.gwPoints));
        view.charts.push(u);
        if (view.zoom) { view.syncing = true; u.setScale('x', {min: view.zoom[0], max: view.zoom[1]}); view.syncing = false; }
      });
      view.building = false;
      if (view.charts.length) placeMarkers(view.charts[0]);
      drawRestart();
      if (!window.gwFirstDraw) {
        window.gwFirstDraw = true;
        if (performance.mark) performance.mark('gw-chart-drawn');
      }
      document.body.dataset.ready = '1';
    }

    /* ---- zoom: sync the charts; live, fetch the range in detail ---- */
    var zoomTimer = null;
    function onZoom(u) {
      if (view.syncing || view.building) return;
      var min = u.scales.x.min, max = u.scales.x.max, d = view.data;
      view.zoom = d && min <= d.from && max >= d.to ? null : [min, max];
      view.syncing = true;
      view.charts.forEach(function (o) { if (o !== u) o.setScale('x', {min: min, max: max}); });
      view.syncing = false;
      if (view.charts[0]) placeMarkers(view.charts[0]);
      if (!src.live || !view.data || !view.data.downsampled) return;
      clearTimeout(zoomTimer);
      zoomTimer = setTimeout(function () { load(true); }, 250);
    }

    function zoomAround(step) {
      var d = view.data;
      if (!d || !d.step.length) return;
      /* 4% of the run either side, at least 30 steps and at most 1,000:
       * an alert is about a few steps, and on a long run 4% would be a
       * downsampled slice where those steps do not show */
      var span = Math.max(d.to - d.from, 1), half = Math.min(1000, Math.max(30, Math.round(span * 0.04)));
      var lo = Math.max(d.from, step - half), hi = Math.min(d.to, step + half);
      if (view.charts[0]) view.charts[0].setScale('x', {min: lo, max: hi});
      else view.zoom = [lo, hi];
    }

    function resetZoom() {
      view.zoom = null;
      if (src.live && view.data && (view.data.downsampled || view.ranged)) { load(false); return; }
      if (view.data && view.charts.length) {
        view.syncing = true;
        view.charts.forEach(function (u) { u.setScale('x', {min: view.data.from, max: view.data.to}); });
        view.syncing = false;
        placeMarkers(view.charts[0]);
      }
    }

    /* ---- loading ---- */
    function recordsQuery() {
      var q = {max_points: Math.min(20000, Math.max(500, Math.round(chartWidth() * 2)))};
      if (view.zoom) { q.from = Math.floor(view.zoom[0]); q.to = Math.ceil(view.zoom[1]); }
      return q;
    }

    function load(keepZoom) {
      if (view.gone) return Promise.resolve();
      var seq = ++view.fetchSeq;
      var q = recordsQuery();
      view.loading = true;
      view.els.status.textContent = 'loading…';
      /* the records answer carries where the run stands (info) */
      var jobs = [null, src.alerts(name), src.records(name, q)].concat(view.overlays.map(function (o) {
        return src.records(o.name, q).catch(function () { return null; });
      }));
      return Promise.all(jobs).then(function (r) {
        if (view.gone || seq !== view.fetchSeq) return;
        view.loading = false;
        view.info = r[2].info || {};
        /* alert objects as of their latest event: resolved ones too */
        view.alerts = (r[1] || []).slice().sort(function (a, b) { return a.step - b.step; });
        view.bands = alertWindows(view.alerts);
        view.data = r[2];
        view.ranged = q.from !== undefined;
        /* live and downsampled (or a zoom's range), the panel's detail is
         * asked for after the draw: until it comes the panel keeps the
         * picture it has (the overview's points in between would make it
         * flicker every poll) */
        view.restartPending = restartNeedsDetail() && !!focusWindow(view.bands);
        view.overlays.forEach(function (o, i) { o.data = r[3 + i]; });
        view.lastKey = JSON.stringify([view.info.last_step, view.info.segment, view.info.last_seen, view.alerts.length]);
        if (!keepZoom) view.zoom = null;
        fillHead();
        fillAlerts();
        rebuild();
        loadRestartDetail();
        if (view.open) openAlert(view.open, false);
        view.els.status.textContent = '';
        view.els.status.className = 'gw-muted';
      }, function (e) {
        if (view.gone || seq !== view.fetchSeq) return;
        view.loading = false;
        if (e.auth) return askToken(e);
        if (!view.data) showError(e);
        else { view.els.status.className = 'gw-error'; view.els.status.textContent = 'update failed: ' + e.message; }
      });
    }

    function fillOverlays(runs) {
      clear(overlayBox);
      var others = runs.filter(function (r) { return r.run !== name; });
      if (!others.length) return;
      /* the first 50 that match the filter (the chosen ones always) */
      var find = el('input', {type: 'search', id: 'gw-overlay-filter', placeholder: 'part of a name', autocomplete: 'off'});
      var list = el('div', {class: 'gw-overlay-list'});
      var det = el('details', {class: 'gw-overlay'}, el('summary', {text: 'Overlay runs'}),
        el('label', null, 'Find ', find), list);
      function chosen(n) { return view.overlays.some(function (o) { return o.name === n; }); }
      function fillList() {
        var ok = matcher(find.value);
        clear(list);
        var match = others.filter(function (r) { return chosen(r.run) || ok(r.run); });
        match.slice(0, 50).forEach(function (r) {
          var cb = el('input', {type: 'checkbox', 'data-run': r.run});
          cb.checked = chosen(r.run);
          cb.addEventListener('change', function () {
            if (cb.checked) view.overlays.push({name: r.run, data: null});
            else view.overlays = view.overlays.filter(function (o) { return o.name !== r.run; });
            load(true);
          });
          list.appendChild(el('div', null, el('label', null, cb, el('span', {class: 'gw-name', text: r.run}))));
        });
        if (match.length > 50) list.appendChild(el('div', {class: 'gw-muted', text: fmtNum(match.length - 50) + ' more: type part of a name'}));
      }
      find.addEventListener('input', fillList);
      fillList();
      overlayBox.appendChild(det);
    }

    load(false).then(function () {
      if (focusAlertId) openAlert(focusAlertId, true);
    });
    src.runs().then(fillOverlays, function () {});
    if (src.live) {
      timers.push(setInterval(function () {
        if (view.loading) return;   /* a slow answer is not raced by a newer ask */
        /* a zoomed view keeps its charts; the head and the alerts still follow */
        var zoomed = !!(view.zoom && view.ranged);
        /* a cheap look: one step's records carry the run's position */
        var last = view.info && view.info.last_step !== null ? view.info.last_step : 0;
        src.records(name, {from: last, to: last, max_points: 1}).then(function (one) {
          var info = one.info;
          return src.alerts(name).then(function (al) {
            var key = JSON.stringify([info.last_step, info.segment, info.last_seen,
              al.length]);
            var moved = key !== view.lastKey || view.lost;
            if (view.lost) { view.lost = false; status.textContent = ''; status.className = 'gw-muted'; }
            if (moved && !zoomed) return load(true);   /* also: back after a lost connection */
            if (moved) {
              view.info = info;
              view.alerts = al.slice().sort(function (a, b) { return a.step - b.step; });
              view.bands = alertWindows(view.alerts);
              view.lastKey = key;
              fillAlerts();
              if (view.open) openAlert(view.open, false);
              view.charts.forEach(function (u) { u.redraw(false, false); });   /* alert lines, markers */
              drawRestart();
            }
            fillHead();   /* "last record N s ago" ages even when nothing came */
          });
        }).catch(function (e) {
          if (e.auth) return askToken(e);
          /* the daemon went away (restart, network): say so, keep the
           * charts, and keep looking every POLL_MS */
          view.lost = true;
          status.className = 'gw-error';
          status.textContent = e.message + '; the charts are as of ' + new Date().toLocaleTimeString() +
            ', retrying every ' + POLL_MS / 1000 + ' s';
        });
      }, POLL_MS));
    }
    var lastW = 0;
    view.onResize = function () {
      var w = chartWidth();
      if (Math.abs(w - lastW) < 4) return;
      lastW = w;
      view.charts.forEach(function (u) { u.setSize({width: w, height: u.height}); });
      if (view.restart) {
        var each = restartWidth();
        view.restart.list.forEach(function (u) { u.root.parentNode.style.width = each + 'px'; u.setSize({width: each, height: u.height}); });
      }
    };
  }

  /* ---- routing ------------------------------------------------------------------------------ */

  function route() {
    stopTimers();
    leaveView();
    document.body.dataset.ready = '0';
    if (src.live) {
      var p = location.pathname;
      if (p.indexOf('/runs/') === 0) return runPage(decodeURIComponent(p.slice(6)), null);
      if (p.indexOf('/alerts/') === 0) {
        var id = decodeURIComponent(p.slice(8));
        return src.alert(id).then(function (a) { runPage(a.run, a.id); }, showError);
      }
      return runsPage();
    }
    var h = location.hash.slice(1), params = new URLSearchParams(h);
    if (params.get('run') !== null) return runPage(params.get('run'), null);
    if (params.get('alert') !== null)
      return src.alert(params.get('alert')).then(function (a) { runPage(a.run, a.id); }, showError);
    var runs = src.data.runs || [];
    if (runs.length === 1) return runPage(runs[0].run, null);
    return runsPage();
  }

  function start() {
    root = document.getElementById('app');
    var embedded = document.getElementById('gw-data');
    if (embedded) {
      try {
        src = reportSource(JSON.parse(embedded.textContent));
      } catch (e) {
        src = reportSource({runs: []});
        return showError(new Error('the report data does not parse: ' + e.message));
      }
      window.addEventListener('hashchange', route);
    } else {
      takeTokenFromHash();
      src = liveSource();
    }
    route();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
