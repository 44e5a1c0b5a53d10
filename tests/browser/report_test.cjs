// Browser test of the gpuvs HTML report: opens the reports written by make_report in
// headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core from the
// build tree's copy of web/) over file://, once per chart library available: the one
// built into gpuvs (report.html, report-multi.html) and, when make_report could read
// it, the --alt-library file (report-chartjs-debian.html, ...; skipped with a printed
// reason otherwise). For each it checks that
//  - every chart the page announces is drawn (data-charts-rendered ==
//    data-charts-expected > 0), each canvas holds pixels, and there are no console
//    errors, page errors or requests leaving the file;
//  - in every chart no two labels overlap and none leaves the canvas: every text the
//    canvas draws (tick labels of every axis, axis titles, value labels, legend texts,
//    recorded by wrapping fillText before the page's scripts run) and the legend's hit
//    boxes; again for the four-column page in a 1000 px window; the check is first shown
//    to catch the overlaps of a deliberately cramped chart, and of legend boxes made
//    to overlap;
//  - every comparison bar chart has one legend entry per column with a bar in it (its
//    label, once), every category label, and one value label per bar, inside the chart
//    area, that reads as the bar's value (integer parts exact: 16896, 3958 TFLOP/s);
//    a column has one colour in every chart and two columns never share one; value
//    ticks read as their values;
//  - in sweeps and the roofline each measured series has its own colour and legend
//    entry, and each roof is dashed in its series' colour;
//  - the headline (<section id="headline">, the first section of <main>) is in the
//    first screen and has one pair per non-baseline column, rows with data-metric,
//    data-basis and a ratio cell: a ratio where one basis, none ("faster"/"slower"/"1.2x")
//    where the bases differ or a side is missing;
//  - report-tables-only.html says charts are not available and draws none.
// Saves a full-page screenshot of each page beside --screenshot.
//
// Usage: node report_test.cjs --modules DIR --dir DIR --screenshot PNG [--chromium PATH]
//          [--alt-library FILE]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { pathToFileURL } = require('url');

function parseArgs(argv) {
  const args = { chromium: '/usr/bin/chromium', 'alt-library': '' };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error('bad argument ' + argv[i]);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const key of ['modules', 'dir', 'screenshot']) {
    if (!args[key]) throw new Error('missing --' + key);
  }
  return args;
}

// Runs in the page before its scripts: records the box of every text a canvas draws
// (in canvas pixels, after the context's transform), from the last full clear on.
function recordCanvasText() {
  const log = new WeakMap();
  const proto = CanvasRenderingContext2D.prototype;
  const fillText = proto.fillText;
  const clearRect = proto.clearRect;
  proto.fillText = function (text, x, y, maxWidth) {
    try {
      const s = String(text);
      if (s.trim() !== '') {
        const m = this.measureText(s);
        let left = m.actualBoundingBoxLeft;
        let right = m.actualBoundingBoxRight;
        if (maxWidth !== undefined && m.width > maxWidth && m.width > 0) {  // squeezed
          left *= maxWidth / m.width;
          right *= maxWidth / m.width;
        }
        const t = this.getTransform();
        const pts = [[x - left, y - m.actualBoundingBoxAscent], [x + right, y - m.actualBoundingBoxAscent],
          [x - left, y + m.actualBoundingBoxDescent], [x + right, y + m.actualBoundingBoxDescent]]
          .map(([px, py]) => [t.a * px + t.c * py + t.e, t.b * px + t.d * py + t.f]);
        const xs = pts.map((p) => p[0]);
        const ys = pts.map((p) => p[1]);
        if (!log.has(this.canvas)) log.set(this.canvas, []);
        log.get(this.canvas).push({ text: s, x0: Math.min(...xs), x1: Math.max(...xs),
          y0: Math.min(...ys), y1: Math.max(...ys) });
      }
    } catch (e) {
      // recording must never break drawing
    }
    return fillText.apply(this, arguments);
  };
  proto.clearRect = function (x, y, w, h) {
    if (x <= 0 && y <= 0 && x + w >= this.canvas.width && y + h >= this.canvas.height) {
      log.set(this.canvas, []);
    }
    return clearRect.apply(this, arguments);
  };
  window.__gpuvsText = {
    reset: (canvas) => log.set(canvas, []),
    boxes: (canvas) => (log.get(canvas) || []).slice(),
  };
}

// Runs in the page: redraws every chart matching `selector` and returns what it drew,
// in CSS pixels of the canvas.
function collectCharts(selector) {
  const island = document.getElementById('gpuvs-data');
  const specs = island ? JSON.parse(island.textContent).charts : [];
  const num = (v) => (typeof v === 'number' ? v : null);
  return Array.from(document.querySelectorAll(selector)).map((canvas, k) => {
    const id = canvas.dataset.chart !== undefined ? canvas.dataset.chart : 'extra-' + k;
    const chart = window.Chart && Chart.getChart(canvas);
    if (!chart) return { id: id, missing: true };
    window.__gpuvsText.reset(canvas);
    chart.draw();
    const dpr = chart.currentDevicePixelRatio || 1;
    const texts = window.__gpuvsText.boxes(canvas).map((b) => ({ text: b.text,
      x0: b.x0 / dpr, x1: b.x1 / dpr, y0: b.y0 / dpr, y1: b.y1 / dpr }));
    const legend = chart.legend;
    const legendOn = Boolean(legend && legend.options && legend.options.display !== false);
    const color = (c) => (typeof c === 'string' ? c : c ? '(pattern)' : '');
    const items = legendOn ? (legend.legendItems || []).map((it) => ({ text: it.text,
      fill: color(it.fillStyle), stroke: color(it.strokeStyle), datasetIndex: it.datasetIndex })) : [];
    const hit = legendOn ? (legend.legendHitBoxes || []).map((h) => ({ text: 'legend box',
      x0: h.left, y0: h.top, x1: h.left + h.width, y1: h.top + h.height })) : [];
    const bars = chart.config.type !== 'bar' ? [] : chart.data.datasets.flatMap((ds, i) =>
      !chart.isDatasetVisible(i) ? [] : chart.getDatasetMeta(i).data.map((el, j) =>
        (ds.data[j] === null || ds.data[j] === undefined ? null
          : { dataset: i, value: ds.data[j], x: el.x, y: el.y, base: el.base, height: el.height }))
        .filter(Boolean));
    return {
      id: id,
      spec: specs[Number(id)] || null,
      version: Chart.version,
      type: chart.config.type,
      width: canvas.clientWidth,
      height: canvas.clientHeight,
      area: { x0: chart.chartArea.left, x1: chart.chartArea.right, y0: chart.chartArea.top,
        y1: chart.chartArea.bottom },
      texts: texts,
      items: items,
      hit: hit,
      bars: bars,
      categories: chart.data.labels ? chart.data.labels.length : 0,
      scales: Object.values(chart.scales).map((s) => ({ id: s.id, axis: s.axis, type: s.type,
        ticks: s.ticks.map((t) => ({ value: num(t.value), label: t.label })) })),
      datasets: chart.data.datasets.map((ds) => ({ label: ds.label, border: color(ds.borderColor),
        dash: Array.isArray(ds.borderDash) ? ds.borderDash.slice() : [] })),
    };
  });
}

// ---- checks on what a chart drew (plain functions, tested on themselves below) ----

function intersects(a, b) {
  const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
  const h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
  return w > 0.5 && h > 0.5;
}

function inside(point, box) {
  return point[0] >= box.x0 && point[0] <= box.x1 && point[1] >= box.y0 && point[1] <= box.y1;
}

const center = (b) => [(b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2];
const show = (b) => JSON.stringify(b.text) + ' [' + [b.x0, b.y0, b.x1, b.y1].map((v) => v.toFixed(1)).join(' ') + ']';

// Overlapping labels of one chart: drawn texts pairwise, legend boxes pairwise, and
// legend boxes against texts that are not their own; texts leaving the canvas.
function labelProblems(c) {
  const problems = [];
  // A legend item's own text lies in its hit box.
  const own = (t, i) => c.items[i] && c.items[i].text === t.text && inside(center(t), c.hit[i]);
  for (let i = 0; i < c.texts.length; i++) {
    for (let j = i + 1; j < c.texts.length; j++) {
      if (intersects(c.texts[i], c.texts[j])) problems.push('overlap ' + show(c.texts[i]) + ' / ' + show(c.texts[j]));
    }
  }
  for (let i = 0; i < c.hit.length; i++) {
    for (let j = i + 1; j < c.hit.length; j++) {
      if (intersects(c.hit[i], c.hit[j])) {
        problems.push('overlapping legend items ' + (c.items[i] ? c.items[i].text : i) + ' / ' +
          (c.items[j] ? c.items[j].text : j));
      }
    }
    for (const t of c.texts) {
      if (!own(t, i) && intersects(c.hit[i], t)) problems.push('legend item over ' + show(t));
    }
  }
  for (const t of c.texts) {
    if (t.x0 < -1 || t.y0 < -1 || t.x1 > c.width + 1 || t.y1 > c.height + 1) problems.push('outside the canvas ' + show(t));
  }
  return problems;
}

const PREFIX = { P: 1e15, T: 1e12, G: 1e9, M: 1e6, k: 1e3, m: 1e-3, 'µ': 1e-6, n: 1e-9 };

// Whether `text` reads as `value` in `unit`: the right unit and prefix, rounded only
// within its last digit, at least three significant digits unless exact (so an
// integer part is never rounded away: 3958, not 3960).
function readsAs(text, value, unit) {
  const m = /^(-?\d+)(?:\.(\d+))?(?: (.*))?$/.exec(String(text));
  if (!m) return false;
  const rest = m[3] || '';
  let scale = 1;
  const u = unit === '1' ? '' : unit;
  if (rest !== u) {
    if (u === '' || !rest.endsWith(u) || !(rest.slice(0, -u.length) in PREFIX)) return false;
    scale = PREFIX[rest.slice(0, -u.length)];
  }
  const decimals = m[2] ? m[2].length : 0;
  const shown = Number(m[1] + (m[2] ? '.' + m[2] : '')) * scale;
  const diff = Math.abs(shown - value);
  if (diff > 0.5 * Math.pow(10, -decimals) * scale * (1 + 1e-9) + 1e-12 * Math.abs(value)) return false;
  const digits = (m[1].replace(/^-?0*/, '') + (m[2] || '')).replace(/^0*/, '').length;
  return digits >= 3 || diff <= 1e-9 * Math.abs(value);
}

// One comparison bar chart against its spec and the island's columns.
function barProblems(c, columns, colours) {
  const problems = [];
  const spec = c.spec;
  const label = (b) => (columns[b.column] ? columns[b.column].label : b.label);
  const want = Array.from(new Set(spec.bars.filter((b) => b.value !== null).map(label)));
  const got = c.items.map((it) => it.text);
  const sorted = (a) => a.slice().sort();
  if (JSON.stringify(sorted(got)) !== JSON.stringify(sorted(want))) {
    problems.push('legend ' + JSON.stringify(got) + ', columns with a bar ' + JSON.stringify(want));
  }
  for (const it of c.items) {
    if (!colours.has(it.text)) colours.set(it.text, new Set());
    colours.get(it.text).add(it.fill);
  }
  const cat = c.scales.find((s) => s.type === 'category');
  if (!cat || cat.ticks.length !== c.categories) {
    problems.push((cat ? cat.ticks.length : 0) + ' category labels drawn for ' + c.categories + ' categories');
  }
  // Every bar has one value label, in the chart area at its height, reading as its value.
  const inArea = c.texts.filter((t) => t.x0 >= c.area.x0 - 0.5 && t.x1 <= c.area.x1 + 0.5 &&
    t.y0 >= c.area.y0 - 0.5 && t.y1 <= c.area.y1 + 0.5);
  const wantBars = spec.bars.filter((b) => b.value !== null).length;
  if (c.bars.length !== wantBars) problems.push(c.bars.length + ' bars drawn for ' + wantBars + ' figures');
  for (const bar of c.bars) {
    const half = Math.max(4, (bar.height || 0) / 2);
    const mine = inArea.filter((t) => Math.abs(center(t)[1] - bar.y) <= half);
    if (mine.length !== 1) {
      problems.push(mine.length + ' value labels by the bar of ' + bar.value + ': ' + mine.map(show).join(', '));
    } else if (!readsAs(mine[0].text, bar.value, spec.unit)) {
      problems.push('value label ' + JSON.stringify(mine[0].text) + ' for ' + bar.value + ' ' + spec.unit);
    }
  }
  if (inArea.length !== c.bars.length) {
    problems.push(inArea.length + ' texts in the chart area for ' + c.bars.length + ' bars');
  }
  const value = c.scales.find((s) => s.type === 'linear');
  for (const t of value ? value.ticks : []) {
    if (!readsAs(t.label, t.value, spec.unit)) problems.push('tick ' + JSON.stringify(t.label) + ' for ' + t.value);
  }
  return problems;
}

// A sweep or roofline: one colour and legend entry per measured series, roofs dashed
// in their series' colour and not in the legend.
function lineProblems(c) {
  const problems = [];
  const series = c.spec.series;
  const measured = series.filter((s) => s.role !== 'roof').map((s) => s.label);
  const got = c.items.map((it) => it.text);
  if (JSON.stringify(got.slice().sort()) !== JSON.stringify(measured.slice().sort())) {
    problems.push('legend ' + JSON.stringify(got) + ', series ' + JSON.stringify(measured));
  }
  const colour = {};
  c.datasets.forEach((d, i) => {
    if (series[i].role !== 'roof') colour[d.label] = d.border;
  });
  const used = Object.values(colour);
  if (new Set(used).size !== used.length) problems.push('series share colours: ' + JSON.stringify(colour));
  c.datasets.forEach((d, i) => {
    if (series[i].role !== 'roof') return;
    const own = colour[d.label.replace(/^roof: /, '')];
    if (!d.dash.length) problems.push(d.label + ' is not dashed');
    if (d.border !== own) problems.push(d.label + ' is ' + d.border + ', its series ' + own);
  });
  const y = c.scales.find((s) => s.id === 'y');
  for (const t of y ? y.ticks : []) {
    if (!readsAs(t.label, t.value, c.spec.y_unit)) problems.push('tick ' + JSON.stringify(t.label) + ' for ' + t.value);
  }
  return problems;
}

// The checks must be able to fail: boxes that overlap, legend items that overlap,
// numbers rounded into their integer part.
function selfTest() {
  const box = (text, x0, y0, x1, y1) => ({ text, x0, y0, x1, y1 });
  const fine = { width: 200, height: 100, items: [{ text: 'A' }, { text: 'B' }],
    hit: [box('legend box', 10, 80, 50, 95), box('legend box', 60, 80, 100, 95)],
    texts: [box('A', 25, 82, 45, 93), box('B', 75, 82, 95, 93), box('0', 0, 60, 10, 70), box('1', 20, 60, 30, 70)] };
  const errors = [];
  if (labelProblems(fine).length) errors.push('clean boxes reported: ' + labelProblems(fine).join('; '));
  const cramped = JSON.parse(JSON.stringify(fine));
  cramped.texts[3].x0 = 5;
  cramped.hit[1].x0 = 40;
  cramped.texts.push(box('far', 190, 10, 230, 20));
  const found = labelProblems(cramped);
  for (const want of ['overlap "0"', 'overlapping legend items A / B', 'legend item over "A"', 'outside the canvas "far"']) {
    if (!found.some((p) => p.startsWith(want))) errors.push('not caught: ' + want + ' (got ' + found.join('; ') + ')');
  }
  const reads = [['16896', 16896, '1', true], ['16900', 16896, '1', false], ['3958 TFLOP/s', 3.958e15, 'FLOP/s', true],
    ['3960 TFLOP/s', 3.958e15, 'FLOP/s', false], ['4.25 TB/s', 4.2512e12, 'B/s', true], ['4.3 TB/s', 4.2512e12, 'B/s', false],
    ['1.5 TB/s', 1.5e12, 'B/s', true], ['88.5 %', 88.46, '%', true], ['2700 img/s', 2700, 'img/s', true]];
  for (const [text, value, unit, ok] of reads) {
    if (readsAs(text, value, unit) !== ok) errors.push('readsAs(' + text + ', ' + value + ') is not ' + ok);
  }
  return errors;
}

// A deliberately cramped chart drawn in the page with the same library: its category
// labels and two value texts overlap, and the check must say so.
function drawCrampedChart() {
  const fig = document.createElement('div');
  fig.style.cssText = 'position: relative; width: 220px; height: 150px';
  const canvas = document.createElement('canvas');
  canvas.id = 'cramped-chart';
  fig.appendChild(canvas);
  document.body.appendChild(fig);
  const labels = Array.from({ length: 8 }, (_, i) => 'H200 #' + i + ' vm 3f2a91c0 h200x2-run');
  new Chart(canvas, {
    type: 'bar',
    data: { labels: labels, datasets: [{ label: 'a long legend entry', data: labels.map((_, i) => i + 1) }] },
    options: {
      animation: false, responsive: true, maintainAspectRatio: false,
      scales: { x: { ticks: { autoSkip: false, maxRotation: 0 } } },
    },
    plugins: [{
      id: 'crampedValues',
      afterDatasetsDraw(chart) {
        const bar = chart.getDatasetMeta(0).data[3];
        chart.ctx.fillText('4.25 TB/s', bar.x - 10, bar.y - 2);
        chart.ctx.fillText('4.80 TB/s', bar.x - 6, bar.y);
      },
    }],
  });
}

// ---- the headline (the first screen) ----

function collectHeadline() {
  const main = document.querySelector('main');
  const first = main ? main.querySelector(':scope > section') : null;
  const sec = document.getElementById('headline');
  window.scrollTo(0, 0);
  return {
    first: first ? first.id : null,
    present: Boolean(sec),
    top: sec ? sec.getBoundingClientRect().top + window.scrollY : null,
    columns: JSON.parse(document.getElementById('gpuvs-data').textContent).columns || [],
    pairs: sec ? Array.from(sec.querySelectorAll('div.headline-pair')).map((p) => ({
      baseline: p.dataset.baseline,
      other: p.dataset.other,
      tables: p.querySelectorAll('table.headline').length,
      rows: Array.from(p.querySelectorAll('table.headline > tbody > tr')).map((tr) => ({
        metric: tr.dataset.metric,
        basis: tr.dataset.basis,
        ratio: tr.querySelector('td.ratio') ? tr.querySelector('td.ratio').textContent : null,
      })),
    })) : [],
  };
}

function headlineProblems(h) {
  const problems = [];
  if (!h.present) return ['no <section id="headline">'];
  if (h.first !== 'headline') problems.push('the first section of <main> is ' + JSON.stringify(h.first));
  if (!(h.top < 900)) problems.push('its top is at ' + h.top + ' px, below the first screen (900 px)');
  const labels = h.columns.map((c) => c.label);
  const baselines = new Set(h.pairs.map((p) => p.baseline));
  if (baselines.size !== 1 || !labels.includes([...baselines][0])) {
    problems.push('pairs name baselines ' + JSON.stringify([...baselines]) + ' (columns ' + JSON.stringify(labels) + ')');
  }
  const base = [...baselines][0];
  const others = h.pairs.map((p) => p.other).sort();
  const want = labels.filter((l) => l !== base).sort();
  if (JSON.stringify(others) !== JSON.stringify(want)) {
    problems.push('pairs for ' + JSON.stringify(others) + ', non-baseline columns ' + JSON.stringify(want));
  }
  // "missing": one side has no figure (or the datasheet says it lacks the feature).
  const bases = ['measured', 'datasheet', 'published', 'different', 'missing'];
  for (const p of h.pairs) {
    if (p.tables !== 1) problems.push(p.other + ': ' + p.tables + ' table.headline');
    if (!p.rows.length) problems.push(p.other + ': no rows');
    for (const r of p.rows) {
      const what = p.other + ' row ' + JSON.stringify(r.metric);
      if (!r.metric) problems.push(what + ': no data-metric');
      if (!bases.includes(r.basis)) problems.push(what + ': data-basis ' + JSON.stringify(r.basis));
      if (r.ratio === null) problems.push(what + ': no td.ratio');
      // The two datasheets' ratio is the like-with-like one a "different" row may give.
      else if ((r.basis === 'different' || r.basis === 'missing') &&
               /faster|slower|\dx/i.test(r.ratio.replace(/datasheets [0-9.]+x/, ''))) {
        problems.push(what + ': basis ' + r.basis + ', yet the ratio reads ' + JSON.stringify(r.ratio));
      } else if (r.basis !== 'different' && r.basis !== 'missing' && !/same|\dx/.test(r.ratio)) {
        problems.push(what + ': one basis (' + r.basis + '), yet no ratio: ' + JSON.stringify(r.ratio));
      }
    }
  }
  return problems;
}

// ---- pages ----

// Opens `file` and returns what the page recorded, plus every problem seen.
async function open(context, file) {
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push('console error: ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith('file:') && !url.startsWith('data:') && !url.startsWith('about:')) {
      problems.push('request to ' + url);
    }
  });
  page.on('requestfailed', (r) => problems.push('request failed: ' + r.url()));
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.reportReady === '1', null,
    { timeout: 30000 });
  const state = await page.evaluate(() => {
    const canvases = Array.from(document.querySelectorAll('canvas[data-chart]'));
    // A drawn chart has pixels that are not transparent.
    const blank = canvases.filter((c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) return false;
      return true;
    }).map((c) => c.dataset.chart);
    const unavailable = document.querySelector('.charts-unavailable');
    return {
      library: window.Chart ? 'Chart.js ' + window.Chart.version : 'none',
      expected: Number(document.body.dataset.chartsExpected),
      rendered: Number(document.body.dataset.chartsRendered),
      reportErrors: window.gpuvsErrors ? window.gpuvsErrors.slice() : ['report.js did not run'],
      canvases: canvases.length,
      blank: blank,
      unavailable: unavailable ? unavailable.textContent : '',
      tables: document.querySelectorAll('table.comparison, table.claims').length,
      fingerprints: document.querySelectorAll('section.fingerprint').length,
    };
  });
  return { page, problems, state };
}

function check(failures, name, condition, detail) {
  if (!condition) failures.push(name + ': ' + detail);
}

// Every check of a page with charts. `tables` and `fingerprints` are what it holds.
async function checkChartPage(context, failures, file, shot, expect) {
  const name = path.basename(file);
  const full = await open(context, file);
  const s = full.state;
  console.log(name + ': ' + JSON.stringify(s));
  check(failures, name, s.library !== 'none', 'no chart library');
  check(failures, name, s.expected > 0, 'no charts expected');
  check(failures, name, s.rendered === s.expected, `${s.rendered} of ${s.expected} charts drawn`);
  check(failures, name, s.canvases === s.expected, `${s.canvases} canvases for ${s.expected} charts`);
  check(failures, name, s.blank.length === 0, 'blank charts: ' + s.blank.join(', '));
  check(failures, name, s.reportErrors.length === 0, s.reportErrors.join('; '));
  check(failures, name, s.unavailable === '', 'says charts are not available');
  check(failures, name, s.tables === expect.tables, `${s.tables} comparison/claims tables`);
  check(failures, name, s.fingerprints === expect.fingerprints, `${s.fingerprints} GPU fingerprints`);

  const charts = await full.page.evaluate(collectCharts, 'canvas[data-chart]');
  const columns = await full.page.evaluate(() =>
    JSON.parse(document.getElementById('gpuvs-data').textContent).columns || []);
  const colours = new Map();  // column label -> colours its legend entries have
  let bars = 0;
  let lines = 0;
  for (const c of charts) {
    const what = name + ' chart ' + c.id + (c.spec ? ' (' + c.spec.title + ')' : '');
    if (c.missing) {
      failures.push(what + ': no Chart.js instance');
      continue;
    }
    for (const p of labelProblems(c)) failures.push(what + ': ' + p);
    if (c.spec && c.spec.kind === 'bar') {
      bars += 1;
      for (const p of barProblems(c, columns, colours)) failures.push(what + ': ' + p);
    } else if (c.spec && c.spec.kind === 'line') {
      lines += 1;
      for (const p of lineProblems(c)) failures.push(what + ': ' + p);
    }
  }
  check(failures, name, bars > 0, 'no comparison bar charts');
  const owner = new Map();
  for (const [label, set] of colours) {
    if (set.size !== 1) failures.push(name + ': column ' + label + ' has colours ' + [...set].join(', '));
    for (const colour of set) {
      if (owner.has(colour) && owner.get(colour) !== label) {
        failures.push(name + ': columns ' + owner.get(colour) + ' and ' + label + ' share ' + colour);
      }
      owner.set(colour, label);
    }
  }
  const exact = charts.filter((c) => c.spec && c.spec.kind === 'bar' && c.spec.unit === '1');
  console.log(`  ${charts.length} charts (${bars} comparison bar charts, ${lines} line charts), ` +
    `${colours.size} column colours; counts: ` +
    exact.map((c) => c.spec.title + ' ' + JSON.stringify(c.texts.filter((t) => /^\d+$/.test(t.text) &&
      c.bars.some((b) => String(b.value) === t.text)).map((t) => t.text))).join(', '));

  const h = await full.page.evaluate(collectHeadline);
  for (const p of headlineProblems(h)) failures.push(name + ': headline: ' + p);

  await full.page.screenshot({ path: shot, fullPage: true });
  await full.page.screenshot({ path: shot.replace(/\.png$/, '-first-screen.png') });
  console.log('  screenshot: ' + shot);

  // A narrower window: the charts lay out anew, still without overlaps.
  if (expect.narrow) {
    await full.page.setViewportSize({ width: expect.narrow, height: 900 });
    await full.page.waitForTimeout(500);
    const again = await full.page.evaluate(collectCharts, 'canvas[data-chart]');
    const narrow = name + ' at ' + expect.narrow + ' px';
    let n = 0;
    for (const c of again) {
      if (c.missing) continue;
      for (const p of labelProblems(c)) failures.push(narrow + ' chart ' + c.id + ': ' + p);
      if (c.spec && c.spec.kind === 'bar') {
        n += 1;
        for (const p of barProblems(c, columns, new Map())) failures.push(narrow + ' chart ' + c.id + ': ' + p);
      }
    }
    console.log(`  at ${expect.narrow} px: ${again.length} charts checked again (${n} bar charts)`);
    await full.page.screenshot({ path: shot.replace(/\.png$/, '-narrow.png'), fullPage: true });
    await full.page.setViewportSize({ width: 1280, height: 900 });
  }
  check(failures, name, full.problems.length === 0, full.problems.join('; '));
  return full.page;
}

// The overlap check catches a real overlap, drawn by the library under test.
async function checkCatchesOverlap(page, failures, name) {
  await page.evaluate(drawCrampedChart);
  const [c] = await page.evaluate(collectCharts, '#cramped-chart');
  const found = c && !c.missing ? labelProblems(c) : [];
  const ticks = found.filter((p) => p.includes('H200 #') && p.startsWith('overlap'));
  const values = found.filter((p) => p.includes('TB/s') && p.startsWith('overlap'));
  console.log(`  cramped chart (${name}): ${found.length} problems found, e.g. ${found[0] || 'none'}`);
  check(failures, name + ' cramped chart', ticks.length > 0, 'overlapping tick labels not caught');
  check(failures, name + ' cramped chart', values.length > 0, 'overlapping value labels not caught');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { chromium } = require(path.join(path.resolve(args.modules), 'playwright-core'));
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpuvs-chromium-'));
  const failures = selfTest().map((e) => 'self-test: ' + e);
  const shots = path.dirname(args.screenshot);
  fs.mkdirSync(shots, { recursive: true });
  const libraries = [{ name: 'built-in library', suffix: '' }];
  const alt = path.join(args.dir, 'report-chartjs-debian.html');
  if (fs.existsSync(alt)) {
    libraries.push({ name: args['alt-library'] || 'alternative library', suffix: '-chartjs-debian' });
  } else {
    console.log('skipped: the reports with ' + (args['alt-library'] || 'a second chart library') +
      ': ' + (args['alt-library'] ? 'the file does not exist (Debian package libjs-chart.js)'
        : 'no --alt-library given'));
  }
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: args.chromium,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
      offline: true,
    });
    await context.addInitScript(recordCanvasText);

    for (const lib of libraries) {
      console.log('== ' + lib.name);
      const page = await checkChartPage(context, failures, path.join(args.dir, 'report' + lib.suffix + '.html'),
        lib.suffix ? path.join(shots, 'report' + lib.suffix + '.png') : args.screenshot,
        { tables: 2, fingerprints: 2 });
      await checkCatchesOverlap(page, failures, 'report' + lib.suffix + '.html');
      await checkChartPage(context, failures, path.join(args.dir, 'report-multi' + lib.suffix + '.html'),
        path.join(shots, 'report-multi' + lib.suffix + '.png'), { tables: 1, fingerprints: 3, narrow: 1000 });
    }

    const plain = await open(context, path.join(args.dir, 'report-tables-only.html'));
    const t = plain.state;
    console.log('report-tables-only.html: ' + JSON.stringify(t));
    check(failures, 'tables only', t.expected === 0 && t.rendered === 0 && t.canvases === 0,
      `charts: ${t.expected} expected, ${t.rendered} drawn, ${t.canvases} canvases`);
    check(failures, 'tables only', t.unavailable.startsWith('Charts are not available'),
      'no "Charts are not available" line');
    check(failures, 'tables only', t.reportErrors.length === 0, t.reportErrors.join('; '));
    check(failures, 'tables only', plain.problems.length === 0, plain.problems.join('; '));
    check(failures, 'tables only', t.tables === 2, `${t.tables} comparison/claims tables`);
  } finally {
    if (context) await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  if (failures.length) {
    for (const f of failures) console.error('FAIL ' + f);
    process.exit(1);
  }
  console.log('ok');
}

// The checks, for trying them on hand-made pages.
module.exports = { recordCanvasText, collectCharts, collectHeadline, labelProblems, barProblems,
  lineProblems, headlineProblems, readsAs, selfTest };

if (require.main === module) {
  main().catch((e) => {
    console.error('FAIL ' + (e && e.stack ? e.stack : e));
    process.exit(1);
  });
}
