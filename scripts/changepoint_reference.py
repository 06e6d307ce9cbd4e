#!/usr/bin/env python3
"""Reference values for tare's change-point statistics (src/stats/changepoint.rs).

Computed with MongoDB's `signal-processing-algorithms` package (E-divisive means, the method
Hunter / Apache Otava use) and written to tests/data/stats/changepoint.json; the Rust test
tests/store_changepoint.rs only reads the committed file.

    python3 -m venv /tmp/cp && /tmp/cp/bin/pip install signal-processing-algorithms numpy
    /tmp/cp/bin/python scripts/changepoint_reference.py
"""

import json
import os
import sys

import numpy as np
import signal_processing_algorithms
from signal_processing_algorithms.energy_statistics import energy_statistics as es

try:
    from importlib.metadata import version

    SPA_VERSION = version("signal-processing-algorithms")
except Exception:  # pragma: no cover
    SPA_VERSION = "unknown"

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats")
GENERATOR = {
    "script": "scripts/changepoint_reference.py",
    "python": sys.version.split()[0],
    "numpy": np.__version__,
    "signal-processing-algorithms": SPA_VERSION,
}


def fl(x):
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


def main():
    rng = np.random.default_rng(20261122)
    series = {
        "noise_n30": rng.normal(100.0, 1.0, 30),
        "step_n40": np.concatenate([rng.normal(100.0, 1.0, 20), rng.normal(110.0, 1.0, 20)]),
        "two_steps_n60": np.concatenate(
            [rng.normal(50.0, 0.5, 20), rng.normal(56.0, 0.5, 20), rng.normal(51.0, 0.5, 20)]
        ),
        "lognormal_step_n50": np.concatenate(
            [rng.lognormal(0.0, 0.02, 30), rng.lognormal(0.1, 0.02, 20)]
        ),
        "ties_n12": np.array([1, 1, 2, 2, 1, 1, 5, 5, 5, 6, 5, 5], dtype=float),
        "short_n4": np.array([3.0, 1.0, 4.0, 1.5]),
    }
    cases = []
    for name, xs in series.items():
        t = es._calculate_t_stats(es._get_distance_matrix(es._get_valid_input(xs)), use_c_if_possible=False)
        half = len(xs) // 2
        e = es.get_energy_statistics(xs[:half], xs[half:])
        np.random.seed(7)
        cps = es.e_divisive(xs, pvalue=0.05, permutations=100)
        cases.append(
            {
                "name": name,
                "series": fl(xs),
                "t_statistics": fl(t),
                "split": half,
                "e": float(e.e),
                "t": float(e.t),
                "h": float(e.h),
                # Only for series whose changes are clear (p far below 0.05): random otherwise.
                "change_points": sorted(int(c) for c in cps),
                "clear": name in ("step_n40", "two_steps_n60", "lognormal_step_n50"),
            }
        )
    path = os.path.join(OUT, "changepoint.json")
    with open(path, "w") as f:
        json.dump({"generator": GENERATOR, "cases": cases}, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
