// Opens the history dashboard (`tare history report --html`) in Debian's chromium (headless,
// from file://, offline, fresh profile) and checks that it renders: the alerts table, every
// trend plot with its line, band and points, the change-point markers expected, links from a
// point to its commit's row of runs, the value axis in a fitted unit, commits (short hashes) on
// the x axis, each open alert marked, no console errors, no request leaving file://, and a
// screenshot that is not blank.
//
// Usage: node check_history.js DASHBOARD.html SCREENSHOT.png --plots N --changes N
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
const shot = path.resolve(process.argv[3] || 'history.png');
const plots = Number(arg('--plots', '1'));
const changes = Number(arg('--changes', '0'));
const exe = process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

(async () => {
  if (!fs.existsSync(report)) throw new Error(`no dashboard at ${report}`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tare-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: exe,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
    viewport: { width: 1300, height: 900 },
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
    const t = await (await page.$('table#alerts')).boundingBox();
    check(t && t.width > 100 && t.height > 20, 'alerts table renders');
    const alerts = await page.$$eval('table#alerts tbody tr[id^="alert-"]', (rs) => rs.length);
    check(alerts === changes, `${alerts} alerts listed (want ${changes})`);
    const ids = await page.$$eval('svg.plot-trend', (ss) => ss.map((s) => s.id));
    check(ids.length === plots, `${ids.length} trend plots (want ${plots})`);
    for (const id of ids) {
      const b = await (await page.$(`svg#${id}`)).boundingBox();
      check(b && b.width > 300 && b.height > 100, `${id} renders with a box`);
      const parts = await page.$$eval(`svg#${id} path, svg#${id} circle`, (es) => es.length);
      check(parts >= 3, `${id} has its line, band and points (${parts})`);
    }
    // The same chart as the server's (issue 42): a fitted unit on the value axis, commits on
    // the x axis, each alert marked at its commit with its state.
    const axes = await page.$$eval('svg.plot-trend', (ss) => ss.map((s) => ({
      y: ([...s.querySelectorAll('text')].find((t) => (t.getAttribute('transform') || '').includes('rotate')) || {}).textContent,
      x: [...s.querySelectorAll('g.x-label text')].map((t) => t.textContent),
      marks: [...s.querySelectorAll('g.alert-mark')].map((g) => g.dataset.status),
    })));
    check(axes.every((a) => /\((s|ms|µs|ns)\)$/.test(a.y || '')), `value axes in a fitted unit (${axes.map((a) => a.y).join(', ')})`);
    check(axes.every((a) => a.x.length >= 2 && a.x.every((l) => /^[0-9a-f]{7}$/.test(l))),
      `x axes name commits (${axes.map((a) => a.x.join(' ')).join(' / ')})`);
    const marks = axes.reduce((n, a) => n + a.marks.filter((m) => m === 'new').length, 0);
    check(marks === changes, `${marks} open alerts marked on the charts (want ${changes})`);
    const cps = await page.$$eval('svg.plot-trend g.cp', (gs) => gs.filter((g) => g.getBBox().height > 50).length);
    check(cps === changes, `${cps} change points marked (want ${changes})`);
    // A point links to its commit's row: click the last point of the first plot.
    const links = await page.$$('svg.plot-trend a');
    check(links.length > 0, 'points are links');
    if (links.length > 0) {
      const last = links[Math.floor(links.length / (plots || 1)) - 1];
      const href = await last.getAttribute('href');
      await page.click('details summary');
      await last.click();
      const target = await page.evaluate(() => location.hash);
      check(target === href, `the point's link goes to ${href} (${target})`);
      const row = await page.$(`tr${href}`);
      const rb = row && (await row.boundingBox());
      check(!!rb && rb.height > 5, `its row of runs ${href} is shown`);
    }
    check(errors.length === 0, `no console errors ${errors.join(' | ')}`);
    check(external.length === 0, `no request leaves file:// ${external.join(' ')}`);
    await page.screenshot({ path: shot, fullPage: true });
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  const png = PNG.sync.read(fs.readFileSync(shot));
  const colors = new Set();
  let ink = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    const [r, g, b] = [png.data[i], png.data[i + 1], png.data[i + 2]];
    colors.add((r << 16) | (g << 8) | b);
    if (r < 200 || g < 200 || b < 200) ink++;
  }
  check(colors.size >= 32, `screenshot has ${colors.size} distinct colors`);
  check(ink / (png.width * png.height) > 0.01, 'screenshot is not blank');
  console.log(`screenshot: ${shot} (${png.width}x${png.height})`);
  if (failures.length) {
    console.error(`${failures.length} browser check(s) failed`);
    process.exit(1);
  }
})().catch((e) => {
  console.error(`browser test error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
