#!/usr/bin/env python3
"""A worker on the Python client (clients/python) for tare's test of per-loop state: the same
in-place insertion sort of n pseudo-random ints (O(n^2) unsorted, O(n) sorted) in three shapes:
per_sample (init copies once per sample; loops 2..N sort sorted data), per_loop (init_each
copies before every loop, untimed), copy_sort (the plain loop: copy and sort, both timed)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python/src"))
import tare_worker  # noqa: E402


def data(n):
    x, out = 12345, []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**32
        out.append(x >> 1)
    return out


def insertion_sort(a):
    for i in range(1, len(a)):
        v = a[i]
        j = i
        while j > 0 and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


@tare_worker.kernel(n=300, doc="init per sample, sort in place")
class per_sample:
    def setup(self, n):
        self.src = data(n)

    def init(self):
        self.work = list(self.src)

    def body(self):
        insertion_sort(self.work)


@tare_worker.kernel(n=300, doc="init before every loop, sort in place")
class per_loop:
    each_batch = 4

    def setup(self, n):
        self.src = data(n)

    def init_each(self):
        return list(self.src)

    def body_each(self, work):
        insertion_sort(work)


@tare_worker.kernel(n=300, doc="copy and sort, both timed")
class copy_sort:
    def setup(self, n):
        self.src = data(n)

    def body(self):
        insertion_sort(list(self.src))


if __name__ == "__main__":
    tare_worker.main()
