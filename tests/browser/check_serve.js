// Opens the dashboard of a running `tare serve` in Debian's chromium (headless, fresh profile,
// every request outside the server refused) and uses it as a person would: the series table
// lists every series, a series page shows its trend plot with the change point, an alert is
// acknowledged by clicking its button (the row then says so), the compare form opens the
// comparison of the two newest commits; no console errors, no request leaves the server.
// Prints `acknowledged alert N` for the caller to check in the store.
//
// Usage: node check_serve.js URL SCREENSHOT.png --series N --benchmarks N
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const base = (process.argv[2] || '').replace(/\/$/, '');
const shot = path.resolve(process.argv[3] || 'serve.png');
const series = Number(arg('--series', '1'));
const benchmarks = Number(arg('--benchmarks', '1'));
const exe = process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tare-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: exe,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
    viewport: { width: 1300, height: 900 },
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const errors = [];
    const external = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith(base + '/') || u === base || u.startsWith('data:')) return route.continue();
      external.push(u);
      return route.abort();
    });
    await page.goto(base + '/', { waitUntil: 'load' });
    const rows = await page.$$eval('table#series tbody tr.series', (rs) => rs.length);
    check(rows === series, `${rows} series listed (want ${series})`);
    // Search narrows the list, and the URL says so.
    await page.fill('form#search input[name="q"]', 'no-such-benchmark');
    await Promise.all([page.waitForNavigation(), page.click('form#search button')]);
    const none = await page.$$eval('table#series tbody tr.series', (rs) => rs.length);
    check(none === 0 && page.url().includes('q=no-such-benchmark'), `search for nothing lists ${none} (${page.url()})`);
    await page.goto(base + '/', { waitUntil: 'load' });
    // A series page: its trend plot with points and the change point.
    await Promise.all([page.waitForNavigation(), page.click('table#series tbody tr.series a')]);
    const plot = await page.$('svg.plot-trend');
    const pb = plot && (await plot.boundingBox());
    check(!!pb && pb.width > 300 && pb.height > 100, 'the series page shows its trend plot');
    const points = await page.$$eval('svg.plot-trend circle', (cs) => cs.length);
    check(points >= 10, `the plot has its points (${points})`);
    const cps = await page.$$eval('svg.plot-trend g.cp', (gs) => gs.length);
    check(cps >= 1, `the change point is marked (${cps})`);
    const machine = await page.$eval('pre.machine', (p) => p.textContent.length).catch(() => 0);
    check(machine > 20, 'the machine record is shown');
    // Acknowledge the first open alert by clicking, on the first page.
    await page.goto(base + '/', { waitUntil: 'load' });
    const button = await page.$('table#alerts button.act[data-status="acknowledged"]');
    check(!!button, 'an open alert has an Acknowledge button');
    if (button) {
      const id = await button.getAttribute('data-id');
      await button.click();
      await page.waitForFunction(
        (i) => document.querySelector(`tr#alert-${i} td.status`).textContent !== 'new', id,
        { timeout: 15000 });
      const status = await page.$eval(`tr#alert-${id} td.status`, (td) => td.textContent);
      check(status === 'acknowledged', `alert ${id} says ${status} after the click`);
      if (status === 'acknowledged') console.log(`acknowledged alert ${id}`);
    }
    // The compare form: the two newest commits, the same verdicts as `tare compare`.
    await Promise.all([page.waitForNavigation(), page.click('form#compare-form button')]);
    check(page.url().includes('/compare?old='), `the comparison has a URL to paste (${page.url()})`);
    const crows = await page.$$eval('table#comparison tbody tr', (rs) => rs.length);
    check(crows === benchmarks, `the comparison lists ${crows} benchmarks (want ${benchmarks})`);
    const verdicts = await page.$$eval('td.verdict', (ts) => ts.map((t) => t.textContent));
    check(verdicts.every((v) => v.length > 5), `each has its verdict (${verdicts[0]})`);
    check(errors.length === 0, `no console errors ${errors.join(' | ')}`);
    check(external.length === 0, `no request leaves the server ${external.join(' ')}`);
    await page.screenshot({ path: shot, fullPage: true });
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  if (failures.length) {
    console.error(`${failures.length} browser check(s) failed`);
    process.exit(1);
  }
})().catch((e) => {
  console.error(`browser test error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
