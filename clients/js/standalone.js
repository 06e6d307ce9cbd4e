// Standalone mode: the program run by hand (no TARE_WORKER_FD) measures its kernels itself, as a
// Google Benchmark binary does. V8 compiles hot code while it runs, so each kernel first runs for
// a warm-up time (1 s unless --warmup S); then N is calibrated by doubling until a sample takes
// at least 10 ms, and 10 samples are taken; the median per loop is printed. A quick look: tare,
// which detects the JIT's steady state per process and runs several processes, is the measurement.

import { repetition, stage } from './index.js';

const MIN_SAMPLE_NS = 10_000_000n;
const SAMPLES = 10;

class Usage extends Error {}

function oneLine(s) {
  return String(s).replace(/[\r\n]+/g, ' ');
}

export async function standalone(worker, argv, stdout, stderr) {
  try {
    for (const line of await go(worker, argv, stderr)) stdout.write(line + '\n');
    return 0;
  } catch (e) {
    stderr.write(`tare-worker: error: ${oneLine(e.message)}\n`);
    return 1;
  }
}

async function go(worker, argv, stderr) {
  let list = false;
  let verbose = false;
  let filter = null;
  let warmupS = 1;
  const params = new Map();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const flag = eq > 0 ? a.slice(0, eq) : a;
    const value = () => {
      if (eq > 0) return a.slice(eq + 1);
      if (i + 1 >= argv.length) throw new Usage(`${a} needs a value`);
      return argv[++i];
    };
    if (flag === '--list') list = true;
    else if (flag === '-v' || flag === '--verbose') verbose = true;
    else if (flag === '--filter') {
      const v = value();
      try {
        filter = new RegExp(v);
      } catch (e) {
        throw new Usage(`--filter '${v}' is not a regular expression: ${e.message}`);
      }
    } else if (flag === '-p' || flag === '--param') {
      const v = value();
      const at = v.indexOf('=');
      if (at <= 0) throw new Usage(`parameter '${v}' must be NAME=VALUE`);
      params.set(v.slice(0, at), v.slice(at + 1));
    } else if (flag === '--warmup') {
      const v = value();
      warmupS = Number(v);
      if (v.trim() === '' || !(warmupS >= 0) || !Number.isFinite(warmupS)) throw new Usage(`--warmup '${v}' must be seconds >= 0`);
    } else if (flag === '-h' || flag === '--help') {
      return [
        'usage: PROGRAM [--list] [--filter REGEX] [-p NAME=VALUE]... [--warmup SECONDS] [-v]',
        "Measures this program's kernels (standalone mode of the tare worker library);",
        'run it under `tare kernels` for the real measurement.',
      ];
    } else throw new Usage(`unknown argument '${a}' (known: --list, --filter REGEX, -p NAME=VALUE, --warmup S, -v)`);
  }
  const selected = worker.kernels.filter((k) => !filter || filter.test(k.name));
  if (!selected.length) throw new Usage('no kernel matches --filter; see --list');
  for (const name of params.keys()) {
    if (!selected.some((k) => k.params.some((p) => p.name === name))) throw new Usage(`no selected kernel has parameter '${name}'; see --list`);
  }
  const suffix = (doc) => (doc ? `  # ${oneLine(doc)}` : '');
  if (list) {
    const out = [];
    for (const k of selected) {
      out.push(k.name + suffix(k.doc));
      for (const p of k.params) out.push(`  ${p.name}=${p.default}${suffix(p.doc)}`);
    }
    return out;
  }
  const out = [];
  for (const k of selected) out.push(await measure(worker, k, params, warmupS, verbose, stderr));
  return out;
}

async function measure(worker, k, all, warmupS, verbose, stderr) {
  const mine = new Map(k.params.filter((p) => all.has(p.name)).map((p) => [p.name, all.get(p.name)]));
  const s = worker.newState(k, mine);
  await stage('setup', k.setup, s);
  // Warm-up: let V8 optimize the kernel before anything counts; N doubles so that the kernel's
  // loop, not the harness, is what gets hot.
  const warmupNs = BigInt(Math.round(warmupS * 1e9));
  let spent = 0n;
  s.loops = 1;
  while (spent < warmupNs) {
    const w = await repetition(k, s);
    spent += w.ns;
    if (verbose) stderr.write(`warm-up ${k.name} N=${s.loops} ${(Number(w.ns) / s.loops).toFixed(1)} ns/loop\n`);
    if (w.ns < MIN_SAMPLE_NS) s.loops *= 2;
  }
  // Calibrate: double N from 1 until one sample takes at least 10 ms.
  s.loops = 1;
  for (;;) {
    const x = await repetition(k, s);
    if (x.ns >= MIN_SAMPLE_NS || s.loops >= 2 ** 40) break;
    s.loops *= 2;
  }
  const perLoop = [];
  for (let i = 0; i < SAMPLES; i++) {
    const x = await repetition(k, s);
    perLoop.push(Number(x.ns) / s.loops);
    if (verbose) stderr.write(`sample ${k.name} N=${s.loops} ${perLoop[i].toFixed(1)} ns/loop\n`);
  }
  const n = s.loops;
  s.loops = 0;
  await stage('teardown', k.teardown, s);
  const med = median(perLoop);
  let line = [k.name, ...k.params.map((p) => `${p.name}=${s.param(p.name)}`)].join(' ');
  line += ` ${formatNs(med)} ns/loop`;
  if (s._bytes > 0 && med > 0) line += `  ${scaled((s._bytes / med) * 1e9, 'B/s')}`;
  if (s._items > 0 && med > 0) line += `  ${scaled((s._items / med) * 1e9, 'items/s')}`;
  return line + `  (N=${n}, ${SAMPLES} samples, warm-up ${warmupS.toFixed(1)} s)`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

function formatNs(ns) {
  return ns >= 100 ? ns.toFixed(0) : ns >= 10 ? ns.toFixed(1) : ns.toFixed(2);
}

function scaled(v, unit) {
  const prefixes = ['', 'k', 'M', 'G', 'T'];
  let i = 0;
  while (v >= 1000 && i < prefixes.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v.toPrecision(3)} ${prefixes[i]}${unit}`;
}
