"""The blur example kernel and the empty kernel on the Python client (docs/protocol.md).

Run standalone: ./worker -p size=64   (the `worker` script puts clients/python on the path when
the package is not installed; with `pip install clients/python` plain `python3 blur.py` works).
"""
import math

import tare_worker


@tare_worker.kernel(size=256, radius=3, doc="separable Gaussian blur of a generated size x size image")
class blur:
    def setup(self, size, radius):
        if size < 1 or radius < 1:
            raise ValueError("blur: size=%d and radius=%d must be integers >= 1" % (size, radius))
        self.size, self.radius = size, radius
        self.img = [[((x * 7 + y * 13) % 256) / 255.0 for x in range(size)] for y in range(size)]
        s = radius / 2.0
        w = [math.exp(-(i * i) / (2 * s * s)) for i in range(-radius, radius + 1)]
        total = 0.0
        for v in w:
            total += v
        self.w = [v / total for v in w]
        # For each coordinate, the clamped neighbour indices in order i = -r..r.
        self.idx = [[min(max(c + i, 0), size - 1) for i in range(-radius, radius + 1)] for c in range(size)]
        self.out = None
        tare_worker.bytes_per_loop(size * size * 8)

    def once(self):
        n, w, idx = self.size, self.w, self.idx
        tmp = []
        for row in self.img:
            trow = []
            for x in range(n):
                acc = 0.0
                for wi, j in zip(w, idx[x]):
                    acc += wi * row[j]
                trow.append(acc)
            tmp.append(trow)
        out = []
        for y in range(n):
            rows = [tmp[j] for j in idx[y]]
            orow = []
            for x in range(n):
                acc = 0.0
                for wi, r in zip(w, rows):
                    acc += wi * r[x]
                orow.append(acc)
            out.append(orow)
        return out

    def run(self, loops):
        for _ in range(loops):
            self.out = tare_worker.black_box(self.once())
        total = 0.0
        for row in self.out:
            for v in row:
                total += v
        tare_worker.metric("checksum", total)


@tare_worker.kernel(doc="does nothing: the per-iteration overhead")
def empty():
    tare_worker.black_box(None)


if __name__ == "__main__":
    tare_worker.main()
