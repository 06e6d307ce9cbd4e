"""Two pyperf benchmarks for tests/kernels_native.rs: `sum` adds 1000 numbers, `sum2 x` (a
name pyperf allows and the protocol does not: tare calls it `sum2_x`) adds 2000 numbers through
timeit, the same work twice over. TARE_TEST_PYPERF_RAISE=start makes the script fail before
any benchmark; =run makes `sum` fail on its second call in a process (discovery, which calls it
once, passes; tare's calibration then fails)."""
import os

import pyperf

RAISE = os.environ.get("TARE_TEST_PYPERF_RAISE")
if RAISE == "start":
    raise ValueError("this script fails on purpose")


CALLS = [0]


def total(numbers):
    CALLS[0] += 1
    if RAISE == "run" and CALLS[0] > 1:
        raise RuntimeError("sum fails on purpose on call %d" % CALLS[0])
    return sum(numbers)


runner = pyperf.Runner()
runner.bench_func("sum", total, range(1000))
runner.timeit("sum2 x", "sum(r)", setup="r = range(2000)")
