// Browser test of the gpuvs HTML report: opens the reports written by make_report in
// headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core from the
// build tree's copy of web/) over file://, and checks that
//  - report.html draws every chart it announces (data-charts-rendered ==
//    data-charts-expected > 0), each canvas holds pixels, and there are no console
//    errors, page errors or requests leaving the file;
//  - report-tables-only.html says charts are not available and draws none.
// Saves a full-page screenshot of report.html.
//
// Usage: node report_test.cjs --modules DIR --dir DIR --screenshot PNG [--chromium PATH]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { pathToFileURL } = require('url');

function parseArgs(argv) {
  const args = { chromium: '/usr/bin/chromium' };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error('bad argument ' + argv[i]);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const key of ['modules', 'dir', 'screenshot']) {
    if (!args[key]) throw new Error('missing --' + key);
  }
  return args;
}

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

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { chromium } = require(path.join(path.resolve(args.modules), 'playwright-core'));
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpuvs-chromium-'));
  const failures = [];
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

    const full = await open(context, path.join(args.dir, 'report.html'));
    const s = full.state;
    console.log('report.html: ' + JSON.stringify(s));
    check(failures, 'report.html', s.expected > 0, 'no charts expected');
    check(failures, 'report.html', s.rendered === s.expected,
      `${s.rendered} of ${s.expected} charts drawn`);
    check(failures, 'report.html', s.canvases === s.expected,
      `${s.canvases} canvases for ${s.expected} charts`);
    check(failures, 'report.html', s.blank.length === 0, 'blank charts: ' + s.blank.join(', '));
    check(failures, 'report.html', s.reportErrors.length === 0, s.reportErrors.join('; '));
    check(failures, 'report.html', full.problems.length === 0, full.problems.join('; '));
    check(failures, 'report.html', s.unavailable === '', 'says charts are not available');
    check(failures, 'report.html', s.tables === 2, `${s.tables} comparison/claims tables`);
    check(failures, 'report.html', s.fingerprints === 2, `${s.fingerprints} GPU fingerprints`);
    fs.mkdirSync(path.dirname(args.screenshot), { recursive: true });
    await full.page.screenshot({ path: args.screenshot, fullPage: true });
    console.log('screenshot: ' + args.screenshot);

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

main().catch((e) => {
  console.error('FAIL ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
