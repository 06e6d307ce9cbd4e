// Opens a `tare serve` dashboard in Debian's chromium (headless, fresh profile, every request
// outside the server refused) and reads it as a person would at a glance (issue 42): the first
// page lists each benchmark's alerting metric (not wall time) with its alert state, the branch
// filter narrows the list, and a series chart reads in a unit fitted to its values, with
// commits on its x axis (short hashes, thinned to fit, the newest labelled; subject on hover,
// as text even when it is markup), the change point and the alert marked with its state; a
// series of 200 commits and one of a single commit draw too. No console errors, no request
// leaves the server. Screenshots: SHOT-front.png, SHOT-series.png, SHOT-long.png, SHOT-one.png.
//
// Usage: node check_glance.js URL SHOT --alerting N --listed N --newest HASH7
//        --long-newest HASH7 --hostile SUBJECT
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
const shot = path.resolve(process.argv[3] || 'glance');
const alerting = Number(arg('--alerting', '1'));
const listed = Number(arg('--listed', '1'));
const newest = arg('--newest', '');
const longNewest = arg('--long-newest', '');
const hostile = arg('--hostile', '<script>');
const exe = process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

// What a trend chart shows: axis title, tick and commit labels, marks.
async function chart(page) {
  return page.$eval('svg.plot-trend', (svg) => {
    const texts = [...svg.querySelectorAll('text')];
    const yTitle = texts.find((t) => (t.getAttribute('transform') || '').includes('rotate'));
    const yTicks = texts.filter((t) => t.getAttribute('text-anchor') === 'end' && !t.closest('g.alert-mark'))
      .map((t) => t.textContent);
    const xLabels = [...svg.querySelectorAll('g.x-label')].map((g) => ({
      text: g.querySelector('text').textContent,
      title: g.querySelector('title').textContent,
    }));
    const box = svg.getBoundingClientRect();
    const lb = [...svg.querySelectorAll('g.x-label text')].map((t) => t.getBoundingClientRect());
    let overlap = 0;
    for (let i = 1; i < lb.length; i++) if (lb[i].left < lb[i - 1].right) overlap++;
    return {
      yTitle: yTitle ? yTitle.textContent : '',
      yTicks,
      xLabels,
      overlap,
      width: box.width,
      circles: svg.querySelectorAll('a.col circle').length,
      cols: [...svg.querySelectorAll('a.col > g > title')].map((t) => t.textContent),
      cps: svg.querySelectorAll('g.cp').length,
      marks: [...svg.querySelectorAll('g.alert-mark')].map((g) => ({
        status: g.dataset.status, kind: g.dataset.kind, title: g.querySelector('title').textContent,
      })),
      bold: svg.querySelectorAll('b').length,
    };
  });
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tare-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: exe,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
    viewport: { width: 1300, height: 900 },
    deviceScaleFactor: 1,
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

    // The first page: each benchmark's alerting metric with its state.
    await page.goto(base + '/', { waitUntil: 'load' });
    const rows = () => page.$$eval('table#series tbody tr.series', (rs) => rs.map((r) => ({
      label: r.querySelector('td a').textContent,
      metric: r.dataset.metric,
      state: r.dataset.state,
      cell: r.querySelector('td.state').textContent,
    })));
    let list = await rows();
    check(list.length === listed, `${list.length} series listed by default (want ${listed})`);
    const reg = list.filter((r) => r.state === 'regression');
    check(reg.length === alerting && reg.every((r) => r.metric === 'cpu_time'),
      `the ${reg.length} regressing series shown are CPU time (${reg.map((r) => r.label + ' ' + r.metric).join(', ')})`);
    check(reg.every((r) => /open regression 1\.\d{3}× at [0-9a-f]{7} #\d+ new/.test(r.cell)),
      `their state says so (${reg.length ? reg[0].cell : ''})`);
    const calm = list.filter((r) => r.state === 'none');
    check(calm.length === listed - alerting && calm.every((r) => r.metric === 'wall_time' && r.cell.startsWith('none')),
      `the others show wall time and no alert (${calm.map((r) => r.label).join(', ')})`);
    await page.screenshot({ path: `${shot}-front.png`, fullPage: true });
    // The branch filter.
    await page.selectOption('form#search select[name="branch"]', 'feature/fast');
    await Promise.all([page.waitForNavigation(), page.click('form#search button')]);
    list = await rows();
    check(page.url().includes('branch=feature%2Ffast') && list.length === alerting,
      `the branch filter lists ${list.length} series (want ${alerting}; ${page.url()})`);
    const count = await page.$eval('#count', (p) => p.textContent);
    check(count.includes('on feature/fast'), `the count names the branch (${count})`);

    // A regressing series' chart.
    await Promise.all([page.waitForNavigation(), page.click('table#series tbody tr.series td a')]);
    let c = await chart(page);
    check(/^cpu_time \((ms|µs)\)$/.test(c.yTitle), `the value axis reads in a fitted unit: "${c.yTitle}"`);
    check(c.yTicks.length >= 3 && c.yTicks.every((t) => /^\d+(\.\d{1,2})?$/.test(t)),
      `its ticks are short numbers in that unit (${c.yTicks.join(' ')})`);
    check(c.xLabels.length >= 2 && c.xLabels.length <= 24 && c.xLabels.every((l) => /^[0-9a-f]{7}$/.test(l.text)),
      `the x axis names commits (${c.xLabels.map((l) => l.text).join(' ')})`);
    check(c.xLabels.length && c.xLabels[c.xLabels.length - 1].text === newest,
      `the newest commit is labelled last (${newest})`);
    check(c.overlap === 0, `no two commit labels overlap (${c.overlap})`);
    check(c.circles === 24 && c.cols.length === 24, `every commit is a point (${c.circles})`);
    const subj = c.cols.filter((t) => t.includes('commit 5'));
    check(subj.length === 1 && /\b\d+(\.\d+)? (ms|µs) \(95% CI/.test(subj[0]),
      `hovering a commit shows its subject and value in the axis unit (${(subj[0] || '').replace(/\n/g, ' | ')})`);
    const evil = c.cols.filter((t) => t.includes(hostile));
    check(evil.length === 1, 'a subject made of markup is shown as text on hover');
    const pwned = await page.evaluate(() => window.__pwned);
    const scripts = await page.$$eval('script:not([src])', (s) => s.length);
    check(pwned === undefined && scripts === 0 && c.bold === 0, 'and none of it runs or renders');
    check(c.cps >= 1, `the change point is marked (${c.cps})`);
    const open = c.marks.filter((m) => m.status === 'new' && m.kind === 'regression');
    check(open.length >= 1 && /alert #\d+ at [0-9a-f]{10}: regression 1\.\d+×/.test(open[0].title),
      `the alert is marked at its commit with its state (${open.length ? open[0].title : c.marks.length})`);
    const here = await page.$eval('p.metrics a.here', (a) => a.textContent).catch(() => '');
    const others = await page.$$eval('p.metrics a', (as) => as.map((a) => a.textContent));
    check(here === 'cpu_time' && others.includes('wall_time'), `the page links the benchmark's other metrics (${others.join(' ')})`);
    await page.screenshot({ path: `${shot}-series.png` });
    // The acknowledge button turns the mark from new to acknowledged after a reload.
    const button = await page.$('table#alerts button.act[data-status="acknowledged"]');
    if (button) {
      await button.click();
      await page.waitForFunction(() => [...document.querySelectorAll('td.status')].some((t) => t.textContent === 'acknowledged'),
        null, { timeout: 15000 });
      await page.reload({ waitUntil: 'load' });
      c = await chart(page);
      check(c.marks.some((m) => m.status === 'acknowledged'), 'an acknowledged alert is marked so on the chart');
    } else {
      check(false, 'the series page has an Acknowledge button');
    }

    // 200 commits: labels thinned, the newest labelled, every point drawn.
    await page.goto(base + '/?q=long', { waitUntil: 'load' });
    await Promise.all([page.waitForNavigation(), page.click('table#series tbody tr.series td a')]);
    c = await chart(page);
    check(c.circles === 200, `200 commits drawn (${c.circles})`);
    check(c.xLabels.length >= 6 && c.xLabels.length <= 16 && c.overlap === 0,
      `their labels thinned to ${c.xLabels.length}, none overlapping`);
    check(c.xLabels.length && c.xLabels[c.xLabels.length - 1].text === longNewest, `the newest labelled (${longNewest})`);
    check(/^wall_time \(ms\)$/.test(c.yTitle), `in ms (${c.yTitle})`);
    await page.screenshot({ path: `${shot}-long.png` });

    // One commit.
    await page.goto(base + '/?q=one', { waitUntil: 'load' });
    await Promise.all([page.waitForNavigation(), page.click('table#series tbody tr.series td a')]);
    c = await chart(page);
    check(c.circles === 1 && c.xLabels.length === 1 && c.yTicks.length >= 2,
      `a series of one commit draws its point, label and axis (${c.circles}, ${c.xLabels.length}, ${c.yTicks.join(' ')})`);
    await page.screenshot({ path: `${shot}-one.png` });

    check(errors.length === 0, `no console errors ${errors.join(' | ')}`);
    check(external.length === 0, `no request leaves the server ${external.join(' ')}`);
    console.log(`screenshot: ${shot}-*.png`);
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
