// A worker on the JS client (clients/js) for tare's test of per-loop state: an in-place
// insertion sort of n pseudo-random ints in three shapes, as tests/kernels/sort.c: per_sample
// (init once per sample; loops 2..N sort sorted data), per_loop (input/each: a fresh copy before
// every loop, untimed), copy_sort (copy and sort, both timed).
import { Worker, blackBox } from '../../../clients/js/index.js';

function data(n) {
  const v = new Int32Array(n);
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    v[i] = x >>> 1;
  }
  return v;
}

function insertionSort(a) {
  for (let i = 1; i < a.length; i++) {
    const v = a[i];
    let j = i;
    while (j > 0 && a[j - 1] > v) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = v;
  }
}

let src, work;
const params = { n: 2000 };
const setup = (s) => {
  src = data(s.intParam('n'));
  work = new Int32Array(src.length);
};
const w = new Worker();
w.kernel('per_sample', {
  doc: 'init per sample, sort in place', params, setup,
  init() { work.set(src); },
  loop(s, loops) {
    for (let i = 0; i < loops; i++) {
      insertionSort(work);
      blackBox(work[0]);
    }
  },
});
w.kernel('per_loop', {
  doc: 'a fresh copy before every loop, sort in place', params, setup,
  batch: 4,
  input: () => src.slice(),
  each(s, a) {
    insertionSort(a);
    blackBox(a[0]);
  },
});
w.kernel('copy_sort', {
  doc: 'copy and sort, both timed', params, setup,
  loop(s, loops) {
    for (let i = 0; i < loops; i++) {
      work.set(src);
      insertionSort(work);
      blackBox(work[0]);
    }
  },
});
await w.main();
