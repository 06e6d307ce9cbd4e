#!/usr/bin/env python3
"""A worker for tare's tests of long kernels, on the real Python client (clients/python):
`sleep` (param ms: one loop sleeps that long, like a kernel of seconds a loop), and `spin`
(param ms: one loop spins on the CPU that long)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python/src"))
import tare_worker  # noqa: E402


@tare_worker.kernel(ms=1000.0, doc="one loop sleeps ms milliseconds")
def sleep(ms):
    time.sleep(ms / 1000.0)


@tare_worker.kernel(ms=100.0, doc="one loop spins on the CPU for ms milliseconds")
def spin(ms):
    end = time.perf_counter_ns() + int(ms * 1e6)
    while time.perf_counter_ns() < end:
        pass


if __name__ == "__main__":
    tare_worker.main()
