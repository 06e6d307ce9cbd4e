// Tests with a fake master: the test starts a worker with fd 3 = one end of a Unix stream
// socketpair (child_process makes a socketpair for a 'pipe' stdio entry) and TARE_WORKER_FD=3,
// then drives the protocol on the other end as tare does. The blur example is driven the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LineSplitter, decodeLine, decodeValue, encodeLine, encodeValue, BadLine, MAX_LINE } from '../protocol.js';
import { VERSION } from '../index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..', '..');
const testWorker = path.join(here, 'fixtures', 'test-worker.mjs');

class Master {
  constructor(args, extraEnv = {}) {
    const env = { ...process.env, TARE_WORKER_FD: '3', ...extraEnv };
    this.child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit', 'pipe'], env });
    this.sock = this.child.stdio[3];
    this.splitter = new LineSplitter();
    this.lines = [];
    this.waiters = [];
    this.closed = false;
    this.sock.on('data', (d) => {
      this.lines.push(...this.splitter.push(d));
      this.wake();
    });
    this.sock.on('end', () => {
      this.closed = true;
      this.wake();
    });
    this.sock.on('error', () => {});
    this.exited = new Promise((resolve) => this.child.on('exit', (code, sig) => resolve({ code, sig })));
    this.timer = setTimeout(() => this.child.kill('SIGKILL'), 120_000);
  }

  wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  send(line) {
    this.sock.write(line + '\n');
  }

  async recv() {
    while (!this.lines.length) {
      assert.ok(!this.closed, 'worker closed the connection');
      await new Promise((r) => this.waiters.push(r));
    }
    const line = this.lines.shift();
    assert.ok(!line.includes('\r'), line);
    return decodeLine(line);
  }

  async expect(verb) {
    const m = await this.recv();
    assert.equal(m.verb, verb, `expected ${verb}, got ${m.verb} ${JSON.stringify([...m.fields])}`);
    return m;
  }

  async handshake() {
    const hello = await this.expect('hello');
    assert.equal(hello.fields.get('protocol'), '1');
    assert.equal(hello.fields.get('lang'), 'js');
    assert.equal(hello.fields.get('version'), VERSION);
    assert.ok(hello.fields.get('client'));
    const kernels = {};
    for (;;) {
      const m = await this.recv();
      if (m.verb === 'kernel') kernels[m.fields.get('name')] = {};
      else if (m.verb === 'param') kernels[m.fields.get('kernel')][m.fields.get('name')] = m.fields.get('default');
      else if (m.verb === 'ready') return kernels;
      else assert.fail(`unexpected ${m.verb}`);
    }
  }

  async exit() {
    this.send('exit');
    await this.expect('bye');
    const { code } = await this.exited;
    clearTimeout(this.timer);
    assert.equal(code, 0);
  }
}

const num = (m, key) => {
  assert.ok(m.fields.has(key), `${m.verb} has no ${key}: ${JSON.stringify([...m.fields])}`);
  return Number(m.fields.get(key));
};

test('conversation', async () => {
  const m = new Master([testWorker]);
  const kernels = await m.handshake();
  assert.deepEqual(kernels.count, { per: '3', label: 'a b%c' });
  assert.ok(kernels.boom);

  m.send('clock');
  const c = await m.expect('clock');
  assert.ok(num(c, 'resolution_ns') > 0 && num(c, 'resolution_ns') < 1e6);
  assert.ok(num(c, 'cost_ns') > 0 && num(c, 'cost_ns') < 1e5);

  m.send('setup kernel=nosuch');
  assert.match((await m.expect('error')).fields.get('message'), /nosuch/);
  m.send('setup kernel=count p.bogus=1');
  assert.match((await m.expect('error')).fields.get('message'), /bogus/);
  m.send('run loops=1 reps=1');
  await m.expect('error');
  m.send('teardown');
  await m.expect('error');

  m.send('setup kernel=count p.per=5 unknownfield=x');
  await m.expect('ok');
  m.send('setup kernel=count');
  await m.expect('error');
  m.send('run loops=7 reps=3');
  for (let i = 1; i <= 3; i++) {
    const s = await m.expect('sample');
    assert.equal(num(s, 'loops'), 7);
    assert.equal(num(s, 'm.calls'), 7);
    assert.equal(num(s, 'bytes'), 35);
    assert.equal(num(s, 'items'), 14);
    assert.equal(num(s, 'm.inits'), i);
    assert.equal(num(s, 'm.label_len'), 5);
    assert.equal(num(s, 'm.frac'), 0.25);
    assert.ok(num(s, 'ns') > 0);
    assert.ok(num(s, 'cpu_ns') >= 0);
  }
  await m.expect('done');
  m.send('run loops=0 reps=1');
  await m.expect('error');
  m.send('run loops=2');
  await m.expect('error');
  m.send('frobnicate x=1');
  assert.match((await m.expect('error')).fields.get('message'), /frobnicate/);
  m.send('teardown');
  await m.expect('ok');
  m.send('teardown');
  await m.expect('error');

  m.send('setup kernel=bodycount');
  await m.expect('ok');
  m.send('run loops=11 reps=1');
  assert.equal(num(await m.expect('sample'), 'm.calls'), 11);
  await m.expect('done');
  m.send('teardown');
  await m.expect('ok');

  m.send('setup kernel=failsetup');
  assert.match((await m.expect('error')).fields.get('message'), /no GPU here/);
  m.send('setup kernel=boom');
  await m.expect('ok');
  m.send('run loops=1 reps=2');
  assert.match((await m.expect('error')).fields.get('message'), /kaboom second line/);
  m.send('teardown');
  await m.expect('ok');
  m.send('setup kernel=badmetric');
  await m.expect('ok');
  m.send('run loops=1 reps=1');
  assert.match((await m.expect('error')).fields.get('message'), /metric x is not a finite number/);
  m.send('teardown');
  await m.expect('ok');
  m.send("setup kernel=count p.per=x");
  assert.match((await m.expect('error')).fields.get('message'), /per='x'/);
  m.send('setup kernel=count p.x=%zz');
  await m.expect('error');
  m.send('setup kernel=count kernel=count');
  await m.expect('error');
  await m.exit();
});

test('per-loop input is fresh for every loop', async () => {
  const m = new Master([testWorker]);
  await m.handshake();
  m.send('setup kernel=each');
  await m.expect('ok');
  for (const loops of [5, 1, 7]) {
    // batches of 3: 3+2, 1, 3+3+1
    m.send(`run loops=${loops} reps=2`);
    for (let r = 0; r < 2; r++) {
      const s = await m.expect('sample');
      for (const k of ['loops', 'm.inits', 'm.loops']) assert.equal(num(s, k), loops, k);
      assert.equal(num(s, 'm.stale'), 0);
      assert.ok(num(s, 'ns') > 0);
    }
    await m.expect('done');
  }
  await m.exit();
});

test('an async kernel is timed to its end', async () => {
  const m = new Master([testWorker]);
  await m.handshake();
  m.send('setup kernel=sleepy');
  await m.expect('ok');
  m.send('run loops=20 reps=1');
  const ns = num(await m.expect('sample'), 'ns');
  assert.ok(ns >= 20e6 && ns < 5e9, `ns=${ns} for 20 timers of 1 ms`);
  await m.expect('done');
  await m.exit();
});

test('the socket and TARE_WORKER_FD do not reach children', async () => {
  const m = new Master([testWorker]);
  await m.handshake();
  m.send('setup kernel=probe');
  await m.expect('ok');
  m.send('run loops=1 reps=1');
  const s = await m.expect('sample');
  assert.equal(num(s, 'm.env_set'), 0);
  assert.equal(num(s, 'm.child_sockets'), 0, 'a child of the worker holds a socket above fd 2');
  assert.equal(num(s, 'm.child_sockets_control'), 1, 'the probe cannot see a socket it was given');
  await m.expect('done');
  await m.exit();
});

test('EOF ends the worker with status 0', async () => {
  const m = new Master([testWorker]);
  await m.handshake();
  m.sock.end();
  const { code } = await m.exited;
  clearTimeout(m.timer);
  assert.equal(code, 0);
});

function run(args, env = {}, extraStdio = []) {
  const e = { ...process.env };
  delete e.TARE_WORKER_FD;
  Object.assign(e, env);
  return spawnSync(process.execPath, [testWorker, ...args], { encoding: 'utf8', env: e, stdio: ['ignore', 'pipe', 'pipe', ...extraStdio] });
}

test('a TARE_WORKER_FD that is no socket is a one-line error', () => {
  // fd 3 a regular file (/dev/null), a number nothing holds, and no number at all.
  const devNull = fs.openSync('/dev/null', 'r+');
  for (const fd of ['3', '99', 'x']) {
    const r = run([], { TARE_WORKER_FD: fd }, [devNull]);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^tare-worker: error: TARE_WORKER_FD=\S+ is not an inherited socket/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
  fs.closeSync(devNull);
});

test('standalone mode', () => {
  let r = run(['--list']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.includes('count  # counts its loops\n  per=3  # bytes per loop\n'), r.stdout);

  r = run(['--filter', '^count$', '-p', 'per=8', '--warmup', '0.05']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.startsWith('count per=8 label=a b%c '), r.stdout);
  assert.ok(r.stdout.includes(' ns/loop  ') && r.stdout.includes('B/s') && r.stdout.includes('items/s'), r.stdout);
  assert.ok(r.stdout.endsWith(', 10 samples, warm-up 0.1 s)\n'), r.stdout);
  const n = Number(/\(N=(\d+),/.exec(r.stdout)[1]);
  assert.ok(n >= 1024, `calibrated N=${n} for an increment`);

  r = run(['--filter', '^boom$', '--warmup', '0']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^tare-worker: error: .*kaboom/);
  assert.equal(r.stderr.trim().split('\n').length, 1);

  r = run(['--bogus']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^tare-worker: error: unknown argument/);
  r = run(['-p', 'nope=1']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /nope/);
});

test('codec', () => {
  const input = 'a b%c\n=é~:/,+-._';
  const enc = encodeValue(input);
  assert.equal(enc, 'a%20b%25c%0A%3D%C3%A9~:/,+-._');
  assert.equal(decodeValue(enc.toLowerCase()), input.toLowerCase());
  for (const bad of ['%', '%4', '%G0']) assert.throws(() => decodeValue(bad), BadLine);
  assert.equal(encodeLine('sample', [['loops', '3'], ['m.x', '1.5e-3']]), 'sample loops=3 m.x=1.5e-3\n');
  for (const bad of ['', 'verb  x=1', 'verb x', 'Verb x=1', 'v X=1', 'v a=1 a=2']) assert.throws(() => decodeLine(bad), BadLine);
  const sp = new LineSplitter();
  assert.deepEqual(sp.push(Buffer.from('a=1\nb')), ['a=1']);
  assert.deepEqual(sp.push(Buffer.from('c\n')), ['bc']);
  assert.throws(() => new LineSplitter().push(Buffer.alloc(MAX_LINE + 10, 0x78)), BadLine);
  // The limit's edge: 65536 bytes with the newline are accepted, 65537 refused (also in pieces).
  const edge = Buffer.concat([Buffer.alloc(MAX_LINE - 1, 0x78), Buffer.from('\n')]);
  assert.equal(new LineSplitter().push(edge)[0].length, MAX_LINE - 1);
  const split = new LineSplitter();
  assert.deepEqual(split.push(edge.subarray(0, 1000)), []);
  assert.equal(split.push(edge.subarray(1000))[0].length, MAX_LINE - 1);
  const over = Buffer.concat([Buffer.alloc(MAX_LINE, 0x78), Buffer.from('\n')]);
  assert.throws(() => new LineSplitter().push(over), BadLine);
  const overSplit = new LineSplitter();
  overSplit.push(over.subarray(0, 1000));
  assert.throws(() => overSplit.push(over.subarray(1000)), BadLine);
});

function referenceChecksum(size, radius) {
  const file = process.env.TARE_BLUR_CHECKSUMS || path.join(repo, 'examples', 'kernels', 'blur', 'CHECKSUMS');
  if (!fs.existsSync(file)) return null;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length === 3 && f[0] === String(size) && f[1] === String(radius)) return Number(f[2]);
  }
  assert.fail(`${file} has no line for size ${size} radius ${radius}`);
}

test('blur example matches the reference checksum', async (t) => {
  const want = referenceChecksum(64, 3);
  if (want === null) {
    t.skip('no examples/kernels/blur/CHECKSUMS: it comes with examples/kernels/blur/reference.py');
    return;
  }
  const dir = path.join(repo, 'examples', 'kernels', 'blur', 'js');
  const build = spawnSync(path.join(dir, 'build.sh'), [], { encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  const m = new Master([path.join(dir, 'blur.mjs')]);
  const kernels = await m.handshake();
  assert.deepEqual(kernels.blur, { size: '256', radius: '3' });
  assert.ok(kernels.empty);
  m.send('setup kernel=blur p.size=64 p.radius=3');
  await m.expect('ok');
  m.send('run loops=2 reps=2');
  for (let i = 0; i < 2; i++) {
    const s = await m.expect('sample');
    const got = num(s, 'm.checksum');
    assert.ok(Math.abs(got - want) <= 1e-9 * Math.abs(want), `checksum ${got}, reference ${want}`);
    assert.equal(num(s, 'bytes'), 2 * 64 * 64 * 8);
  }
  await m.expect('done');
  m.send('teardown');
  await m.expect('ok');
  m.send('setup kernel=blur p.size=0');
  await m.expect('error');
  m.send('setup kernel=empty');
  await m.expect('ok');
  m.send('run loops=1000 reps=1');
  await m.expect('sample');
  await m.expect('done');
  await m.exit();
  process.stderr.write(`blur size=64 radius=3 checksum matches the reference ${want}\n`);
});
