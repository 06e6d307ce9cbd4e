// Compiled by `npm run typecheck` (tsc --noEmit): uses the whole public API, so a mismatch
// between index.d.ts and the documented usage fails the check.
import { Worker, State, blackBox, blackBoxSink, VERSION } from 'tare-worker';

const w: Worker = new Worker();
let data = new Float64Array(0);
w.kernel('sum', {
  doc: 'sums an array',
  params: { n: 1000, mode: { default: 'fast', doc: 'how' } },
  setup(s: State) {
    data = new Float64Array(s.intParam('n'));
    s.bytesPerLoop(data.length * 8);
    s.itemsPerLoop(data.length);
    const p: Record<string, string> = s.params;
    void p;
    void s.floatParam('n');
  },
  loop(s, loops) {
    for (let i = 0; i < loops; i++) blackBox(data.reduce((a, b) => a + b, 0));
  },
  after(s) {
    s.metric('checksum', data.length);
  },
  async teardown() {},
}).kernel('empty', { body: () => void blackBox(1) })
  .kernel('sort', {
    batch: 4,
    input: () => data.slice(),
    each(s, a: number[]) {
      a.sort();
      blackBox(a[0]);
    },
  });
const v: string = VERSION;
const n: number = blackBoxSink().count;
void v;
void n;
const status: Promise<number> = w.run(['--list']);
void status;
