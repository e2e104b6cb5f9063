/*
 * gradwatch's figures: numbers as a person reads them (values, tick
 * labels, times, counts) and the arithmetic behind the run page's
 * pictures: the smoothing (a time-weighted EMA), the windows of the open
 * resume alerts, the restart panel's numbers (medians before and after,
 * the replay's gap to the pre-crash copy) and the warm-up clip of the grad
 * norm axis.  Pure functions of their arguments, no DOM: app.js draws with
 * them.  Loaded before app.js (a script tag live, the same inline block in
 * a report) and read as window.gwFigures (globalThis, so node can load it too).
 */
(function () {
  'use strict';

  /* A value as a person reads it: integers and values from 10,000 up with
   * thousands separators, tiny and huge ones as 3e-4 / 1.234e+15, the rest
   * to 5 significant digits. */
  function fmtNum(v) {
    if (v === null || v === undefined) return '—';
    if (typeof v !== 'number') return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e15)) return v.toExponential(3).replace(/\.?0+e/, 'e');
    if (Number.isInteger(v) || a >= 1e4) return Math.round(v).toLocaleString('en-US');
    return String(+v.toPrecision(5));
  }

  function fmtAgo(secs) {
    if (secs === null || secs === undefined) return '—';
    var d = Date.now() / 1000 - secs;
    if (d < 0) d = 0;
    if (d < 90) return Math.round(d) + ' s ago';
    if (d < 5400) return Math.round(d / 60) + ' min ago';
    if (d < 172800) return Math.round(d / 3600) + ' h ago';
    return Math.round(d / 86400) + ' days ago';
  }

  /* Unix seconds as the browser's local time with its offset from UTC:
   * "2026-12-03 18:37:12 UTC+05:30" (an alert read across time zones). */
  function fmtTime(secs) {
    if (typeof secs !== 'number' || !isFinite(secs)) return '—';
    var d = new Date(Math.floor(secs) * 1000), off = -d.getTimezoneOffset();
    function two(n) { return (n < 10 ? '0' : '') + n; }
    var zone = off === 0 ? 'UTC' : 'UTC' + (off > 0 ? '+' : '-') + two(Math.floor(Math.abs(off) / 60)) + ':' + two(Math.abs(off) % 60);
    return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' +
      two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds()) + ' ' + zone;
  }

  /* An axis's tick labels: as few digits as say every tick exactly
   * (to a thousandth of the spacing), 1e-4 style below 0.001 and k, M, G,
   * T from 10,000 up, so no two ticks read the same. */
  var SI = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  function fmtTickP(v, p) {
    if (v === null || v === undefined) return ['', v];
    var a = Math.abs(v);
    if (a === 0) return ['0', 0];
    if (a < 1e-3) { var e = v.toExponential(Math.max(0, p - 1)); return [e.replace(/\.?0+e/, 'e'), Number(e)]; }
    if (a >= 1e4) {
      var u = SI.find(function (x) { return a >= x[0]; }) || SI[SI.length - 1], n = +(v / u[0]).toPrecision(p);
      return [String(n) + u[1], n * u[0]];
    }
    var m = +v.toPrecision(p);
    return [String(m), m];
  }

  function fmtTicks(vals) {
    var spacing = Infinity;
    for (var i = 1; i < vals.length; i++)
      if (vals[i] !== null && vals[i - 1] !== null) spacing = Math.min(spacing, Math.abs(vals[i] - vals[i - 1]));
    for (var p = 1; p <= 12; p++) {
      var out = vals.map(function (v) { return fmtTickP(v, p); });
      if (out.every(function (o, i) { return vals[i] === null || !(Math.abs(o[1] - vals[i]) > spacing * 1e-3); }))
        return out.map(function (o) { return o[0]; });
    }
    return vals.map(function (v) { return v === null ? '' : String(v); });
  }

  /* "1 record", "1,640 records" */
  function plural(n, word) { return fmtNum(n) + ' ' + word + (n === 1 ? '' : 's'); }

  /* Smoothing as W&B's time-weighted EMA: a debiased exponential moving
   * average of the drawn points in step order whose weight w applies per
   * thousandth of the chart's step range, so a point's weight decays with
   * its distance in steps, not with how many points lie between: a
   * 10-point log is drawn nearly as it is, a 100,000-step one as a
   * readable line, and the downsampled minimum and maximum of a bucket
   * average out.  It starts again at each step of starts (a segment's
   * first step: a restart is a jump to show, not noise to smooth), where
   * the smoothed value is the raw one.  Missing values stay missing. */
  function smoothed(x, ys, starts, w) {
    var out = new Array(ys.length).fill(null), last = 0, norm = 0, prev = null, k = 0;
    var unit = x.length > 1 ? Math.max(x[x.length - 1] - x[0], 1) / 1000 : 1;
    for (var i = 0; i < ys.length; i++) {
      while (k < starts.length && x[i] >= starts[k]) { prev = null; k++; }
      var y = ys[i];
      if (y === null) continue;
      var d = prev === null ? 0 : Math.pow(w, (x[i] - prev) / unit);
      last = last * d + (1 - d) * y;
      norm = norm * d + (1 - d);
      out[i] = last / norm;
      prev = x[i];
    }
    return out;
  }

  /* ---- the restart's signature ------------------------------------------------------------ */

  /* Detectors whose alert is about a resume: their evidence names the
   * step the run resumed from (restart_step, or resumed_from_step). */
  var RESUME_DETECTORS = ['optimizer_reset', 'resume_regression', 'resume_mismatch'];
  var SEV_RANK = {info: 0, warning: 1, critical: 2};

  /* The alerts' windows: per restart with an open resume alert, {from:
   * the restart step, to: the last such alert's step, severity: the
   * worst, detectors}, in step order.  A resolved alert has none. */
  function alertWindows(alerts) {
    var by = new Map();
    (alerts || []).forEach(function (a) {
      if ((a.state && a.state !== 'open') || RESUME_DETECTORS.indexOf(a.detector) < 0) return;
      var ev = a.evidence || {}, r = typeof ev.restart_step === 'number' ? ev.restart_step : ev.resumed_from_step;
      if (typeof r !== 'number' || !isFinite(r)) return;
      var w = by.get(r) || {from: r, to: r, crash: null, severity: 'info', detectors: []};
      w.to = Math.max(w.to, a.step);
      if (typeof ev.crash_step === 'number' && ev.crash_step > r) w.crash = Math.max(w.crash || 0, ev.crash_step);
      if ((SEV_RANK[a.severity] || 0) > (SEV_RANK[w.severity] || 0)) w.severity = a.severity;
      if (w.detectors.indexOf(a.detector) < 0) w.detectors.push(a.detector);
      by.set(r, w);
    });
    return Array.from(by.values()).sort(function (a, b) { return a.from - b.from; });
  }

  /* The window the restart panel shows: the worst, then the latest. */
  function focusWindow(ws) {
    return ws.reduce(function (best, w) {
      return !best || (SEV_RANK[w.severity] || 0) >= (SEV_RANK[best.severity] || 0) ? w : best;
    }, null);
  }

  function median(xs) {
    if (!xs.length) return null;
    var s = xs.slice().sort(function (a, b) { return a - b; }), n = s.length;
    return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  /* "loss 1.17 → 1.83 (+56%)": the median of the current copy over
   * steps [a0, a1] against [b0, b1], or null without values on a side. */
  function change(label, x, ys, a0, a1, b0, b1) {
    var pre = [], post = [];
    x.forEach(function (s, i) {
      var y = ys[i];
      if (y === null) return;
      if (s >= a0 && s <= a1) pre.push(y);
      else if (s >= b0 && s <= b1) post.push(y);
    });
    var p = median(pre), q = median(post);
    if (p === null || q === null) return null;
    var pct = p !== 0 ? Math.round((q / p - 1) * 100) : null;
    return label + ' ' + fmtNum(+p.toPrecision(3)) + ' → ' + fmtNum(+q.toPrecision(3)) +
      (pct === null ? '' : ' (' + (pct >= 0 ? '+' : '−') + Math.abs(pct) + '%)');
  }

  /* "loss 10.6%": how far the replayed steps' values are from their copy
   * logged before the crash, as the RMS of the per-step log ratio (what
   * optimizer_reset's replay rule measures), or null without pairs. */
  function replayGap(label, cur, sup) {
    var n = 0, sum = 0;
    for (var i = 0; i < cur.length; i++)
      if (cur[i] > 0 && sup[i] > 0) { var r = Math.log(cur[i] / sup[i]); sum += r * r; n++; }
    return n ? label + ' ' + fmtNum(+(Math.sqrt(sum / n) * 100).toFixed(1)) + '%' : null;
  }

  /* The warm-up's grad norms, often 20 times what follows, flattened a
   * whole run to the bottom edge of a linear axis.  When the run's first
   * 5% of steps reach more than twice anything after, the axis is scaled
   * to what comes after (those steps run off the top, and the chart's
   * heading says how high): {lo, hi, peak, step, cut}, or null.  Every
   * series of the chart counts; cut is a step of the whole run, so a
   * zoom into its middle is never clipped. */
  var WARMUP = 0.05;
  function warmupClip(x, series, runFrom, runTo) {
    var cut = runFrom + WARMUP * (runTo - runFrom), peak = -Infinity, step = null, lo = Infinity, hi = -Infinity;
    series.forEach(function (ys) {
      for (var i = 0; i < ys.length; i++) {
        var y = ys[i];
        if (y === null || y === undefined) continue;
        if (x[i] <= cut) { if (y > peak) { peak = y; step = x[i]; } }
        else { if (y < lo) lo = y; if (y > hi) hi = y; }
      }
    });
    if (!(hi > 0) || !(peak > 2 * hi)) return null;
    return {lo: lo, hi: hi, peak: peak, step: step, cut: cut, runFrom: runFrom, runTo: runTo};
  }

  /* A spike far above the run's level (a grad norm of 20,000 over a
   * level of 8) flattened the rest to a line at 0.  When the highest value
   * is over SPIKE times the run's 98th percentile, the axis fits the bulk
   * (everything up to SPIKE times that percentile) and the heading says
   * what runs off the top: {lo, hi, peak, step, over, spike: true,
   * runFrom, runTo}, or null.  At least 20 finite values, or no clip. */
  var SPIKE = 4;
  function spikeClip(x, series, runFrom, runTo) {
    var vals = [];
    series.forEach(function (ys) {
      for (var i = 0; i < ys.length; i++)
        if (ys[i] !== null && ys[i] !== undefined && isFinite(ys[i])) vals.push(ys[i]);
    });
    if (vals.length < 20) return null;
    vals.sort(function (a, b) { return a - b; });
    var q = vals[Math.floor(0.98 * (vals.length - 1))], top = vals[vals.length - 1];
    if (!(q > 0) || !(top > SPIKE * q)) return null;
    var lo = vals[0], hi = lo, over = 0, peak = -Infinity, step = null;
    series.forEach(function (ys) {
      for (var i = 0; i < ys.length; i++) {
        var y = ys[i];
        if (y === null || y === undefined || !isFinite(y)) continue;
        if (y <= SPIKE * q) { if (y > hi) hi = y; continue; }
        over++;
        if (y > peak) { peak = y; step = x[i]; }
      }
    });
    return {lo: lo, hi: hi, peak: peak, step: step, over: over, spike: true, runFrom: runFrom, runTo: runTo};
  }

  /* Whether a clip applies to the steps min..max in view: a warm-up's
   * while the view holds the warm-up and at least half the run, a
   * spike's while the view spans half the run (zoomed in, all is shown). */
  function clipOn(c, min, max) {
    var half = 0.5 * (c.runTo - c.runFrom);
    return c.spike ? max - min >= half : min <= c.cut && max >= c.runFrom + half;
  }

  globalThis.gwFigures = {   /* window in a page; also node, for a unit test */
    fmtNum: fmtNum, fmtAgo: fmtAgo, fmtTime: fmtTime, fmtTicks: fmtTicks, plural: plural,
    smoothed: smoothed, alertWindows: alertWindows, focusWindow: focusWindow, median: median,
    change: change, replayGap: replayGap, warmupClip: warmupClip, spikeClip: spikeClip, clipOn: clipOn
  };
})();
