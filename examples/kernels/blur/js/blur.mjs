// The blur example kernel in JavaScript (docs/protocol.md, "The example kernel every client
// ships"): a separable Gaussian blur of a generated square image with the same arithmetic as every
// other language's, so checksums agree across them, plus the `empty` kernel that measures the
// per-loop overhead. Run it under `tare kernels "$(./build.sh --print-command)"` or by hand:
// `node blur.mjs -p size=64`.
import { Worker, blackBox } from 'tare-worker';

const clamp = (v, lo, hi) => (v < lo ? lo : v > hi ? hi : v);

let size = 0;
let radius = 0;
let w, img, tmp, out;

function setup(s) {
  size = s.intParam('size');
  radius = s.intParam('radius');
  if (size < 1 || radius < 1) throw new Error(`size=${size} and radius=${radius} must be integers >= 1`);
  const n = size;
  img = new Float64Array(n * n);
  tmp = new Float64Array(n * n);
  out = new Float64Array(n * n);
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) img[y * n + x] = ((x * 7 + y * 13) % 256) / 255.0;
  const sigma = radius / 2.0;
  w = new Float64Array(2 * radius + 1);
  for (let i = -radius; i <= radius; i++) w[i + radius] = Math.exp(-(i * i) / (2 * sigma * sigma));
  let sum = 0;
  for (const v of w) sum += v; // in order i = -radius..radius
  for (let i = 0; i < w.length; i++) w[i] /= sum;
  s.bytesPerLoop(n * n * 8);
}

/** One blur: horizontal pass into tmp, vertical pass into out, sums in order i = -r..r. */
function pass() {
  const n = size;
  const r = radius;
  for (let y = 0; y < n; y++) {
    const row = y * n;
    for (let x = 0; x < n; x++) {
      let acc = 0;
      for (let i = -r; i <= r; i++) acc += w[i + r] * img[row + clamp(x + i, 0, n - 1)];
      tmp[row + x] = acc;
    }
  }
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      let acc = 0;
      for (let i = -r; i <= r; i++) acc += w[i + r] * tmp[clamp(y + i, 0, n - 1) * n + x];
      out[y * n + x] = acc;
    }
  }
}

function checksum() {
  let total = 0;
  for (const v of out) total += v; // row-major order
  return total;
}

const worker = new Worker();
worker.kernel('blur', {
  doc: 'separable Gaussian blur of a generated size x size image',
  params: {
    size: { default: 256, doc: 'image width and height in pixels' },
    radius: { default: 3, doc: 'kernel radius in pixels' },
  },
  setup,
  loop(s, loops) {
    for (let i = 0; i < loops; i++) pass();
  },
  after(s) {
    s.metric('checksum', checksum());
  },
});
worker.kernel('empty', {
  doc: 'does nothing but pass a value to blackBox: the per-loop overhead',
  loop(s, loops) {
    for (let i = 0; i < loops; i++) blackBox(i);
  },
});
await worker.main();
