"""A small pytest-benchmark suite for tests/kernels_pytest.rs (tare native-worker
pytest-benchmark): a parametrized benchmark (ids `test_sum[256]`, `test_sum[4096]`), plain ones,
and a test that is no benchmark. SLOWER_HASH is the percentage of extra work `test_hash` does:
the test writes a copy with it raised (the "one benchmark slower" build)."""
import pytest

SLOWER_HASH = 0


@pytest.mark.parametrize("n", [256, 4096])
def test_sum(benchmark, n):
    data = list(range(n))
    assert benchmark(sum, data) == n * (n - 1) // 2


def test_sort(benchmark):
    data = [(i * 2654435761) % 2**32 for i in range(512)]
    benchmark(sorted, data)


def fnv(buf):
    h = 1469598103934665603
    for c in buf:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def test_hash(benchmark):
    buf = bytes((i * 31) % 256 for i in range(256 * (100 + SLOWER_HASH) // 100))
    benchmark(fnv, buf)


def test_not_a_benchmark():
    assert fnv(b"") == 1469598103934665603
