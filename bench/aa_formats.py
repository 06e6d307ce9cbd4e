#!/usr/bin/env python3
"""Writes real timings of one small Python workload in another harness's JSON format, for
bench/aa_verdicts.sh (issue 22), where the harness itself is not installed.

    aa_formats.py pytest-benchmark OUT   # this process: rounds x iterations (one process)
    aa_formats.py gbench OUT             # this process: repetitions x iterations (one process)
    aa_formats.py jmh OUT FORKS          # FORKS fresh processes (forks) x iterations each

Every number is a time measured here with time.perf_counter; only the file layout is the
harness's. Each process gets its own state (a fresh interpreter, its own heap layout and hash
seed), which is what makes the process the unit of replication.
"""
import json
import subprocess
import sys
import time

ROUNDS, ITERS = 40, 200


def work(data):
    return sorted(data)


def measure(rounds=ROUNDS, iters=ITERS):
    """Seconds per iteration of `rounds` rounds of `iters` iterations, in this process."""
    import random

    data = [random.random() for _ in range(300)]
    for _ in range(iters):  # warm-up
        work(data)
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            work(data)
        out.append((time.perf_counter() - t0) / iters)
    return out


def pytest_benchmark(path):
    data = measure()
    doc = {
        "machine_info": {"node": "aa", "cpu": {"count": 1}, "system": "Linux", "release": ""},
        "commit_info": {},
        "benchmarks": [
            {
                "group": None,
                "name": "test_sort",
                "fullname": "test_aa.py::test_sort",
                "params": None,
                "param": None,
                "extra_info": {},
                "options": {"timer": "perf_counter", "min_rounds": ROUNDS},
                "stats": {
                    "min": min(data),
                    "max": max(data),
                    "mean": sum(data) / len(data),
                    "rounds": len(data),
                    "iterations": ITERS,
                    "data": data,
                },
            }
        ],
        "datetime": "2026-11-25T00:00:00.000000",
        "version": "4.0.0 (format only: written by bench/aa_formats.py)",
    }
    json.dump(doc, open(path, "w"))


def gbench(path):
    data = measure()
    doc = {
        "context": {"date": "2026-11-25T00:00:00+00:00", "host_name": "aa", "num_cpus": 1},
        "benchmarks": [
            {
                "name": "BM_sort",
                "run_name": "BM_sort",
                "run_type": "iteration",
                "repetitions": len(data),
                "repetition_index": i,
                "threads": 1,
                "iterations": ITERS,
                "real_time": t * 1e9,
                "cpu_time": t * 1e9,
                "time_unit": "ns",
            }
            for i, t in enumerate(data)
        ],
    }
    json.dump(doc, open(path, "w"))


def jmh(path, forks):
    raw = []
    for _ in range(forks):
        out = subprocess.run(
            [sys.executable, __file__, "fork"], check=True, capture_output=True, text=True
        ).stdout
        raw.append([t * 1e6 for t in json.loads(out)][:10])
    flat = [x for f in raw for x in f]
    doc = [
        {
            "jmhVersion": "1.37 (format only: written by bench/aa_formats.py)",
            "benchmark": "aa.Sort.sort",
            "mode": "avgt",
            "threads": 1,
            "forks": forks,
            "measurementIterations": len(raw[0]),
            "primaryMetric": {
                "score": sum(flat) / len(flat),
                "scoreError": 0.0,
                "scoreUnit": "us/op",
                "rawData": raw,
            },
            "secondaryMetrics": {},
        }
    ]
    json.dump(doc, open(path, "w"))


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "fork":
        print(json.dumps(measure(rounds=10)))
    elif kind == "pytest-benchmark":
        pytest_benchmark(sys.argv[2])
    elif kind == "gbench":
        gbench(sys.argv[2])
    elif kind == "jmh":
        jmh(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown kind {kind}")
