"""Kernels that differ by a known amount of work, for `tare kernels --baseline base`
(docs/head-to-head.md): each runs a chain of multiply-adds, `base` n of them, `same` the very
same function (an A/A pair), `more1`, `more3` and `more30` 1%, 3% and 30% more. Environment
variable WORK_SCALE (default 1) scales every kernel's work (bench/head_to_head.sh).

Run standalone: ./worker (the `worker` script puts clients/python on the path).
"""
import os

import tare_worker

SCALE = float(os.environ.get("WORK_SCALE") or 1)


def chain(m):
    x = 1.0
    for _ in range(m):
        x = x * 0.999999 + 0.5
    return x


def add(name, factor, doc):
    class Work:
        def setup(self, n):
            if n < 1:
                raise ValueError("work: n=%d must be >= 1" % n)
            self.m = int(n * factor * SCALE + 0.5)

        def body(self):
            return chain(self.m)

    Work.__name__ = name
    tare_worker.kernel(name=name, n=2000, doc=doc)(Work)


add("base", 1.0, "n multiply-adds")
add("same", 1.0, "the same as base")
add("more1", 1.01, "1% more multiply-adds than base")
add("more3", 1.03, "3% more multiply-adds than base")
add("more30", 1.30, "30% more multiply-adds than base")

if __name__ == "__main__":
    tare_worker.main()
