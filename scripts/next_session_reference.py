#!/usr/bin/env python3
"""Reference values for `conclude::kernels::next_session` (issue 34): the 95% prediction
interval of the mean of n new processes' medians from a session of n processes,
t.ppf(0.975, n-1) * s * sqrt(1/n + 1/n) / mean, relative to the mean; and the 95% interval of the
mean itself, t.ppf(0.975, n-1) * s / sqrt(n) / mean, for comparison. Seeded inputs.

    pip install numpy scipy
    python3 scripts/next_session_reference.py   # writes tests/data/stats/next_session.json
"""
import json
import os
import sys

import numpy as np
import scipy
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "next_session.json")
rng = np.random.default_rng(34)
cases = []
for n, cv in [(2, 0.05), (5, 0.03), (8, 0.10), (13, 0.2), (40, 0.01)]:
    x = 1e-6 * (1 + cv * rng.standard_normal(n))
    mean = float(np.mean(x))
    s = float(np.std(x, ddof=1))
    t = float(st.t.ppf(0.975, n - 1))
    cases.append({
        "medians": [float(v) for v in x],
        "mean": mean,
        "ci_half": t * s / np.sqrt(n) / mean,
        "predicted_half": t * s * np.sqrt(2.0 / n) / mean,
    })
json.dump({
    "generator": {"script": "scripts/next_session_reference.py", "python": sys.version.split()[0],
                  "numpy": np.__version__, "scipy": scipy.__version__},
    "cases": cases,
}, open(OUT, "w"), indent=1)
print(OUT)
