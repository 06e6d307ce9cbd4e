// tare-worker: a Node program's kernels, measured by tare (`tare kernels`) over tare's worker
// protocol version 1 (docs/protocol.md), or by the program itself when run by hand (standalone
// mode, when TARE_WORKER_FD is unset).
//
//   import { Worker, blackBox } from 'tare-worker';
//   const w = new Worker();
//   w.kernel('sum', {
//     params: { n: 1000 },
//     setup(s) { data = new Float64Array(s.intParam('n')); },
//     loop(s, loops) { for (let i = 0; i < loops; i++) blackBox(sum(data)); },
//   });
//   await w.main();
//
// tare holds all policy (loops per sample, samples, warm-up and V8's steady state, processes);
// this module obeys: it announces the kernels, times exactly the loops asked with
// process.hrtime.bigint(), and reports raw samples. Not a statistics package.

import fs from 'node:fs';
import net from 'node:net';
import { BadLine, LineSplitter, decodeLine, encodeLine, formatNumber, validKey, validName } from './protocol.js';
import { standalone } from './standalone.js';

export const VERSION = '0.1.0';

let sink;
let sinkCount = 0;

/**
 * Do-not-optimize helper: returns `value` after storing it where V8 cannot prove nobody reads it
 * (a module variable that `blackBoxSink()` exposes), so a kernel's result, and the work that
 * made it, cannot be removed as dead code. The store and a counter increment are the whole cost.
 */
export function blackBox(value) {
  sink = value;
  sinkCount++;
  return value;
}

/** The last value given to blackBox and how many were given (so the sink is observable). */
export function blackBoxSink() {
  return { value: sink, count: sinkCount };
}

/** A failure whose message is already the one line to report (bad parameter, bad metric). */
class StageError extends Error {}

function oneLine(s) {
  return String(s).replace(/[\r\n]+/g, ' ');
}

/** What a kernel's stages receive: parameters, the loop count, and metric setters. */
export class State {
  constructor(kernel, params) {
    this.kernel = kernel.name;
    /** Loops of the current repetition (0 during setup and teardown). */
    this.loops = 0;
    this._params = params;
    this._bytes = 0;
    this._items = 0;
    this._metrics = new Map();
  }

  /** The string value of a declared parameter. */
  param(name) {
    if (!this._params.has(name)) throw new StageError(`kernel ${this.kernel} has no parameter '${name}'`);
    return this._params.get(name);
  }

  /** A parameter as an integer; anything else fails the stage naming the parameter. */
  intParam(name) {
    const v = this.param(name);
    if (!/^\s*[-+]?\d+\s*$/.test(v)) throw new StageError(`parameter ${name}='${v}' is not an integer`);
    return Number.parseInt(v, 10);
  }

  /** A parameter as a number. */
  floatParam(name) {
    const v = this.param(name);
    const f = Number(v);
    if (v.trim() === '' || !Number.isFinite(f)) throw new StageError(`parameter ${name}='${v}' is not a number`);
    return f;
  }

  /** All parameters as a plain object, in declaration order. */
  get params() {
    return Object.fromEntries(this._params);
  }

  /** Bytes one loop processes; samples carry bytes = n × loops (throughput). */
  bytesPerLoop(n) {
    this._bytes = Number(n);
  }

  /** Items one loop processes; samples carry items = n × loops. */
  itemsPerLoop(n) {
    this._items = Number(n);
  }

  /** A user metric for the current sample, sent as m.<name>; call it from `after`. */
  metric(name, value) {
    if (!validKey(name)) throw new StageError(`metric name '${name}' must match [a-z0-9_.-]+`);
    const v = Number(value);
    if (!Number.isFinite(v)) throw new StageError(`metric ${name} is not a finite number`);
    this._metrics.set(name, v);
  }
}

function normalizeParams(kernelName, params) {
  const out = [];
  const entries = Array.isArray(params)
    ? params.map((p) => [p.name, p])
    : Object.entries(params ?? {});
  for (const [name, spec] of entries) {
    if (!validName(name)) throw new Error(`tare-worker: kernel ${kernelName}: parameter name '${name}' must match [A-Za-z0-9_./-]+`);
    if (out.some((p) => p.name === name)) throw new Error(`tare-worker: kernel ${kernelName}: parameter ${name} declared twice`);
    const isSpec = spec !== null && typeof spec === 'object';
    out.push({ name, default: String(isSpec ? spec.default : spec), doc: isSpec && spec.doc ? String(spec.doc) : '' });
  }
  return out;
}

export class Worker {
  constructor() {
    this.kernels = [];
  }

  /**
   * Declares a kernel. `spec` has the stages: setup(s), init(s) (before each repetition,
   * untimed), loop(s, loops) (timed: run the body exactly `loops` times) or body(s) (one
   * iteration; the client loops), after(s) (untimed; report metrics), teardown(s); plus `doc`
   * and `params` ({ name: default } or { name: { default, doc } }). Stages may be async.
   * Per-loop input instead of loop/body (init runs once per sample, so a body that sorts in
   * place would see in loops 2..N what loop 1 left): input(s) returns one loop's input,
   * untimed, each(s, x) is the loop on it (synchronous); the client makes `batch` inputs
   * (default 8), reads the clock, runs each() on them, reads the clock (Criterion's
   * iter_batched), a sample's time the sum of its batches'.
   */
  kernel(name, spec) {
    if (!validName(name)) throw new Error(`tare-worker: kernel name '${name}' must match [A-Za-z0-9_./-]+`);
    if (this.kernels.some((k) => k.name === name)) throw new Error(`tare-worker: kernel ${name} declared twice`);
    let loop = spec.loop;
    if ((typeof spec.each === 'function') !== (typeof spec.input === 'function')) {
      throw new Error(`tare-worker: kernel ${name}: input(state) and each(state, x) go together`);
    }
    if (spec.each && (spec.loop || spec.body)) {
      throw new Error(`tare-worker: kernel ${name}: each(state, x) is instead of loop or body`);
    }
    if (spec.each) loop = eachLoop(spec.input, spec.each, spec.batch);
    if (!loop && spec.body) {
      const body = spec.body;
      loop = (s, loops) => {
        for (let i = 0; i < loops; i++) body(s);
      };
    }
    if (typeof loop !== 'function') throw new Error(`tare-worker: kernel ${name} needs loop(state, loops) or body(state)`);
    const k = {
      name,
      doc: spec.doc ? String(spec.doc) : '',
      params: normalizeParams(name, spec.params),
      setup: spec.setup,
      init: spec.init,
      loop,
      after: spec.after,
      teardown: spec.teardown,
    };
    this.kernels.push(k);
    return this;
  }

  find(name) {
    return this.kernels.find((k) => k.name === name);
  }

  /** Creates a State for kernel k with overrides (a Map) on top of the defaults. */
  newState(k, overrides) {
    const params = new Map(k.params.map((p) => [p.name, p.default]));
    for (const [n, v] of overrides) {
      if (!params.has(n)) throw new StageError(`kernel ${k.name} has no parameter '${n}'`);
      params.set(n, v);
    }
    return new State(k, params);
  }

  /**
   * Serves tare when TARE_WORKER_FD is set, otherwise measures standalone with `argv`; then
   * exits the process with the status the protocol or standalone mode asks for.
   */
  async main(argv = process.argv.slice(2)) {
    const status = await this.run(argv);
    process.exitCode = status;
    // Let stdout drain, then exit: a kernel may have left timers or handles behind.
    process.stdout.write('', () => process.exit(status));
  }

  /** main() without exiting: resolves to the exit status. */
  async run(argv = process.argv.slice(2)) {
    const fdText = process.env.TARE_WORKER_FD;
    if (fdText === undefined) return standalone(this, argv, process.stdout, process.stderr);
    // Children of the worker must not believe they are workers. (Node cannot set FD_CLOEXEC,
    // but child_process does not pass descriptors above 2 unless told to.)
    delete process.env.TARE_WORKER_FD;
    const fd = /^\s*\d+\s*$/.test(fdText) ? Number(fdText) : NaN;
    let isSocket = false;
    try {
      isSocket = Number.isInteger(fd) && fs.fstatSync(fd).isSocket();
    } catch {
      isSocket = false;
    }
    if (!isSocket) {
      process.stderr.write(`tare-worker: error: TARE_WORKER_FD=${oneLine(fdText)} is not an inherited socket; start the worker from tare, or unset TARE_WORKER_FD to run standalone\n`);
      return 1;
    }
    const socket = new net.Socket({ fd, readable: true, writable: true });
    try {
      return await this.serve(socket);
    } catch (e) {
      process.stderr.write(`tare-worker: error: talking to tare: ${oneLine(e?.message ?? e)}\n`);
      return 1;
    } finally {
      socket.destroy();
    }
  }

  /** Speaks the protocol on a duplex stream until exit or EOF; resolves to the exit status. */
  async serve(socket) {
    const next = lineReader(socket);
    const send = (verb, pairs) => writeLine(socket, encodeLine(verb, pairs));
    const error = (message) => send('error', [['message', oneLine(message)]]);
    let out = encodeLine('hello', [['protocol', '1'], ['client', 'tare-worker-js'], ['version', VERSION], ['lang', 'js']]);
    for (const k of this.kernels) {
      out += encodeLine('kernel', [['name', k.name], ...(k.doc ? [['doc', oneLine(k.doc)]] : [])]);
      for (const p of k.params) {
        out += encodeLine('param', [['kernel', k.name], ['name', p.name], ['default', p.default], ...(p.doc ? [['doc', oneLine(p.doc)]] : [])]);
      }
    }
    await writeLine(socket, out + encodeLine('ready'));
    let current = null;
    for (;;) {
      const line = await next();
      if (line === null) return 0; // EOF: tare went away
      let msg;
      try {
        msg = decodeLine(line);
      } catch (e) {
        await error(`bad message: ${e.message}`);
        continue;
      }
      const { verb, fields } = msg;
      if (verb === 'clock') {
        const [res, cost] = measureClock();
        await send('clock', [['resolution_ns', formatNumber(res)], ['cost_ns', formatNumber(cost)]]);
      } else if (verb === 'setup') {
        if (current) {
          await error(`kernel ${current.kernel} is set up already; send teardown first`);
          continue;
        }
        try {
          current = await this.setup(fields);
          await send('ok');
        } catch (e) {
          await error(e.message);
        }
      } else if (verb === 'run') {
        if (!current) await error('run before setup: no kernel is set up');
        else await this.runReps(current, fields, send, error);
      } else if (verb === 'teardown') {
        if (!current) {
          await error('teardown with no kernel set up');
          continue;
        }
        const s = current;
        current = null;
        s.loops = 0;
        try {
          await stage('teardown', this.find(s.kernel).teardown, s);
          await send('ok');
        } catch (e) {
          await error(e.message);
        }
      } else if (verb === 'exit') {
        await send('bye');
        return 0;
      } else {
        await error(`unknown verb '${verb}'`);
      }
    }
  }

  async setup(fields) {
    const name = fields.get('kernel');
    if (name === undefined) throw new StageError('setup without kernel=');
    const k = this.find(name);
    if (!k) throw new StageError(`unknown kernel '${name}'`);
    const overrides = new Map();
    for (const [key, v] of fields) if (key.startsWith('p.')) overrides.set(key.slice(2), v);
    const s = this.newState(k, overrides);
    await stage('setup', k.setup, s);
    return s;
  }

  async runReps(state, fields, send, error) {
    const loops = positive(fields, 'loops');
    const reps = typeof loops === 'string' ? loops : positive(fields, 'reps');
    if (typeof loops === 'string' || typeof reps === 'string') {
      await error(typeof loops === 'string' ? loops : reps);
      return;
    }
    state.loops = loops;
    const k = this.find(state.kernel);
    for (let r = 0; r < reps; r++) {
      let sample;
      try {
        sample = await repetition(k, state);
      } catch (e) {
        await error(e.message);
        return;
      }
      const pairs = [['loops', String(loops)], ['ns', sample.ns.toString()], ['cpu_ns', String(sample.cpuNs)]];
      if (state._bytes > 0) pairs.push(['bytes', String(state._bytes * loops)]);
      if (state._items > 0) pairs.push(['items', String(state._items * loops)]);
      for (const [name, v] of state._metrics) pairs.push([`m.${name}`, formatNumber(v)]);
      await send('sample', pairs); // at once: tare may limit the time per sample
    }
    await send('done');
  }
}

function positive(fields, key) {
  const v = fields.get(key);
  if (v === undefined) return `run without ${key}=`;
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) return `run ${key}='${v}' is not an integer >= 1`;
  return Number(v);
}

/** Runs one stage of user code; a throw or rejection becomes a one-line Error. */
export async function stage(name, fn, state) {
  if (!fn) return;
  try {
    const r = fn(state);
    if (r && typeof r.then === 'function') await r;
  } catch (e) {
    if (e instanceof StageError) throw e;
    throw new StageError(oneLine(`${name} of ${state.kernel} failed: ${e instanceof Error ? `${e.name}: ${e.message}` : e}`));
  }
}

/** Marks a loop function that times itself (per-loop input): returns elapsed ns as a BigInt. */
const SELF_TIMED = Symbol('tare-worker self-timed');

/** The loop of a per-loop kernel: batches of input() untimed, each() timed; returns total ns. */
function eachLoop(input, each, batch) {
  const size = Math.max(1, Math.floor(Number(batch ?? 8)) || 1);
  const inputs = new Array(size);
  const run = (s, loops) => {
    let total = 0n;
    for (let done = 0; done < loops; ) {
      const b = Math.min(size, loops - done);
      for (let i = 0; i < b; i++) inputs[i] = input(s);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < b; i++) each(s, inputs[i]);
      total += process.hrtime.bigint() - t0;
      done += b;
    }
    inputs.fill(undefined);
    return total;
  };
  run[SELF_TIMED] = true;
  return run;
}

/** init, the timed loop, after: one sample of state.loops loops. */
export async function repetition(k, state) {
  state._metrics.clear();
  await stage('init', k.init, state);
  const loops = state.loops;
  let ns, cpu;
  try {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const r = k.loop(state, loops);
    if (r && typeof r.then === 'function') await r; // an async kernel: the wait is timed too
    const t1 = process.hrtime.bigint();
    cpu = process.cpuUsage(cpu0);
    ns = k.loop[SELF_TIMED] ? r : t1 - t0; // per-loop input: the batches' sum
  } catch (e) {
    if (e instanceof StageError) throw e;
    throw new StageError(oneLine(`run of ${k.name} failed: ${e instanceof Error ? `${e.name}: ${e.message}` : e}`));
  }
  await stage('after', k.after, state);
  return { ns, cpuNs: (cpu.user + cpu.system) * 1000 };
}

/**
 * [resolution_ns, cost_ns] of process.hrtime.bigint() from about 10 ms of reads: the first half
 * finds the smallest non-zero step between consecutive reads; the second half times reads alone
 * (no BigInt arithmetic between them), after the first half has let V8 compile the call.
 */
export function measureClock() {
  const start = process.hrtime.bigint();
  let prev = start;
  let minDiff = -1n;
  for (;;) {
    for (let i = 0; i < 1000; i++) {
      const now = process.hrtime.bigint();
      const d = now - prev;
      if (d > 0n && (minDiff < 0n || d < minDiff)) minDiff = d;
      prev = now;
    }
    if (prev - start >= 5_000_000n) break;
  }
  const t0 = process.hrtime.bigint();
  let reads = 0;
  let t1 = t0;
  while (t1 - t0 < 5_000_000n) {
    for (let i = 0; i < 1000; i++) process.hrtime.bigint();
    t1 = process.hrtime.bigint();
    reads += 1001;
  }
  return [Number(minDiff), Number(t1 - t0) / reads];
}

function lineReader(socket) {
  const splitter = new LineSplitter();
  const queue = [];
  let ended = false;
  let failure = null;
  let wake = null;
  const poke = () => {
    if (wake) {
      const w = wake;
      wake = null;
      w();
    }
  };
  socket.on('data', (chunk) => {
    try {
      queue.push(...splitter.push(chunk));
    } catch (e) {
      failure = e instanceof BadLine ? new Error(`tare sent ${e.message}`) : e;
    }
    poke();
  });
  socket.on('end', () => {
    ended = true;
    poke();
  });
  socket.on('error', (e) => {
    // EPIPE / ECONNRESET: tare went away; treated as the end of the conversation.
    if (e.code === 'EPIPE' || e.code === 'ECONNRESET') ended = true;
    else failure = e;
    poke();
  });
  return async function next() {
    for (;;) {
      if (queue.length) return queue.shift();
      if (failure) throw failure;
      if (ended) return null;
      await new Promise((resolve) => {
        wake = resolve;
      });
    }
  };
}

/** Writes one or more lines; resolves when handed to the kernel (socket buffer). */
function writeLine(socket, text) {
  return new Promise((resolve) => {
    if (socket.destroyed || !socket.writable) {
      resolve();
      return;
    }
    // The write is attempted at once (libuv tries a synchronous write first); the callback
    // fires when it is done. A write error is reported by the 'error' event, which ends the
    // conversation in lineReader.
    socket.write(text, () => resolve());
  });
}

export { standalone };
