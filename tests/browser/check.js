// Opens a tare HTML report in Debian's chromium (headless, from file://, no network, fresh
// profile) and checks that it renders: the summary table and every expected plot have a
// non-zero box, no console errors, no request leaves file://, sorting by a header works, the
// filter hides rows, scaling plots (--scaling N of them) show their medians and fit. Saves a
// screenshot and checks it is not blank.
//
// Usage: node check.js REPORT.html SCREENSHOT.png [--expect id1,id2,...] [--clip HEIGHT]
//                      [--width PX] [--scaling N]
// Not for: checking numbers (tests/report_html.rs does that from the HTML text).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');
const { PNG } = require('pngjs');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
}

const report = path.resolve(process.argv[2] || '');
const shot = path.resolve(process.argv[3] || 'report.png');
const expect = (arg('--expect', '') || '').split(',').filter(Boolean);
const clip = Number(arg('--clip', '0'));
const width = Number(arg('--width', '1400'));
const exe = process.env.CHROMIUM || '/usr/bin/chromium';

const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

(async () => {
  if (!fs.existsSync(report)) throw new Error(`no report at ${report}`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tare-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: exe,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic',
    ],
    viewport: { width, height: 900 },
    deviceScaleFactor: 1,
    offline: true,
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const errors = [];
    const external = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith('file:') || u.startsWith('data:')) return route.continue();
      external.push(u);
      return route.abort();
    });
    await page.goto('file://' + report, { waitUntil: 'load' });

    const table = await page.$('table#summary-0');
    const tbox = table && (await table.boundingBox());
    check(!!tbox && tbox.width > 100 && tbox.height > 20, 'summary table renders with a non-zero box');
    const rows = await page.$$eval('table#summary-0 tbody tr', (rs) => rs.length);
    check(rows > 0, `summary table has rows (${rows})`);

    const ids = expect.length ? expect : await page.$$eval('svg.plot', (ss) => ss.map((s) => s.id));
    check(ids.length > 0, `plots expected (${ids.length})`);
    for (const id of ids) {
      const el = await page.$(`svg[id="${id}"]`);
      const b = el && (await el.boundingBox());
      check(!!b && b.width > 50 && b.height > 50, `plot ${id} renders (${b ? Math.round(b.width) + 'x' + Math.round(b.height) : 'missing'})`);
    }
    // Scaling plots (parameter scans): the medians left to right by parameter value, the
    // last above the first (time grows), and the fitted line drawn across the plot.
    const scaling = await page.$$eval('svg.plot-scaling', (ss) => ss.map((s) => {
      const pts = [...s.querySelectorAll('g.scaling-point circle')].map((c) => {
        const b = c.getBoundingClientRect();
        return [b.x + b.width / 2, b.y + b.height / 2];
      });
      const fit = s.querySelector('g.scaling-fit path');
      const fb = fit && fit.getBoundingClientRect();
      return { id: s.id, pts, fit: fb ? fb.width : 0, svg: s.getBoundingClientRect().width };
    }));
    for (const s of scaling) {
      const p = s.pts;
      check(p.length >= 3 && p.every((q, i) => i === 0 || q[0] > p[i - 1][0]),
        `scaling plot ${s.id}: ${p.length} medians left to right`);
      check(p.length >= 2 && p[p.length - 1][1] < p[0][1], `scaling plot ${s.id}: time grows upward`);
      check(s.fit > 0.5 * s.svg, `scaling plot ${s.id}: fitted line spans the plot (${Math.round(s.fit)} px)`);
    }
    const wantScaling = Number(arg('--scaling', '0'));
    check(scaling.length >= wantScaling, `${scaling.length} scaling plot(s), ${wantScaling} expected`);
    // Every SVG draws something: at least a few shapes.
    const sparse = await page.$$eval('svg.plot', (ss) => ss.filter((s) => s.querySelectorAll('path,rect,circle,line').length < 5).map((s) => s.id));
    check(sparse.length === 0, `every plot draws shapes ${sparse.join(' ')}`);

    // Sorting: click the median header twice.
    const values = () => page.$$eval('table#summary-0 tbody tr', (rs) => rs.map((r) => parseFloat(r.cells[2].getAttribute('data-v'))));
    const th = 'table#summary-0 th[data-col="2"]';
    await page.click(th);
    let v = await values();
    check(v.every((x, i) => i === 0 || v[i - 1] <= x), `ascending after one click: ${v.join(', ')}`);
    check((await page.getAttribute(th, 'aria-sort')) === 'ascending', 'header shows ascending');
    await page.click(th);
    v = await values();
    check(v.every((x, i) => i === 0 || v[i - 1] >= x), `descending after two clicks: ${v.join(', ')}`);
    // Sort by name (text) and back to position order for the screenshot.
    await page.click('table#summary-0 th[data-col="0"]');
    const pos = await page.$$eval('table#summary-0 tbody tr', (rs) => rs.map((r) => +r.cells[0].getAttribute('data-v')));
    check(pos.every((x, i) => x === i), 'sorting by # restores the session order');

    // Filter: a string no row contains hides every row; clearing shows them again.
    const filter = 'input.filter[data-table="summary-0"]';
    check(await page.isVisible(filter), 'filter box is shown when JavaScript runs');
    await page.fill(filter, 'zz-no-such-benchmark-zz');
    const visible = await page.$$eval('table#summary-0 tbody tr', (rs) => rs.filter((r) => !r.hidden).length);
    check(visible === 0, `filter hides rows (${visible} visible)`);
    await page.fill(filter, '');

    check(errors.length === 0, `no console errors ${errors.join(' | ')}`);
    check(external.length === 0, `no request leaves file:// ${external.join(' ')}`);

    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    const opts = { path: shot, fullPage: true };
    if (clip > 0) opts.clip = { x: 0, y: 0, width, height: clip };
    await page.screenshot(opts);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }

  // With JavaScript off the page still reads: table and plots render, the filter stays hidden.
  const profile2 = fs.mkdtempSync(path.join(os.tmpdir(), 'tare-chromium-nojs-'));
  const nojs = await chromium.launchPersistentContext(profile2, {
    executablePath: exe,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic',
    ],
    viewport: { width, height: 900 },
    javaScriptEnabled: false,
    offline: true,
  });
  try {
    const page = nojs.pages()[0] || (await nojs.newPage());
    await page.goto('file://' + report, { waitUntil: 'load' });
    const b = await (await page.$('table#summary-0')).boundingBox();
    check(b && b.width > 100 && b.height > 20, 'without JavaScript: summary table renders');
    const plotsShown = await page.$$eval('svg.plot', (ss) => ss.filter((s) => s.getBoundingClientRect().width > 50).length);
    check(plotsShown > 0, `without JavaScript: ${plotsShown} plots render`);
    check(!(await page.isVisible('input.filter')), 'without JavaScript: no dead filter box');
  } finally {
    await nojs.close();
    fs.rmSync(profile2, { recursive: true, force: true });
  }

  // The screenshot is not blank: many colors, and a fair share of non-white pixels.
  const png = PNG.sync.read(fs.readFileSync(shot));
  const colors = new Set();
  let ink = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    const [r, g, b] = [png.data[i], png.data[i + 1], png.data[i + 2]];
    colors.add((r << 16) | (g << 8) | b);
    if (r < 200 || g < 200 || b < 200) ink++;
  }
  const share = ink / (png.width * png.height);
  check(colors.size >= 64, `screenshot has ${colors.size} distinct colors`);
  check(share > 0.01, `screenshot has ${(100 * share).toFixed(1)}% inked pixels`);
  console.log(`screenshot: ${shot} (${png.width}x${png.height})`);
  if (failures.length) {
    console.error(`${failures.length} browser check(s) failed`);
    process.exit(1);
  }
})().catch((e) => {
  console.error(`browser test error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
