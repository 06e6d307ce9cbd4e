#!/usr/bin/env python3
"""Reference values for `stats::geomean` (issue 30): the geometric mean of ratios
(scipy.stats.gmean) and its 95% interval from each ratio's own 95% interval: se_i =
(ln hi - ln lo) / 2 / z, se = mean(se_i) (errors that may move together), exp(mean ln r +- z se), z =
scipy.stats.norm.ppf(0.975). No interval when a ratio has none. Seeded inputs.

    pip install numpy scipy
    python3 scripts/geomean_reference.py   # writes tests/data/stats/geomean.json
"""
import json
import os
import sys

import numpy as np
import scipy
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "geomean.json")
rng = np.random.default_rng(30)
z = float(st.norm.ppf(0.975))
cases = []
for n, sigma, shift, missing in [(1, 0.1, 0.0, False), (2, 0.05, 0.02, False),
                                 (5, 0.03, -0.01, False), (12, 0.1, 0.05, False),
                                 (40, 0.02, 0.0, False), (4, 0.05, 0.0, True)]:
    r = np.exp(shift + sigma * rng.standard_normal(n))
    half = 0.01 + 0.2 * rng.random(n)  # each ratio's own log-scale half-width
    cis = [[float(np.exp(np.log(x) - h)), float(np.exp(np.log(x) + h))] for x, h in zip(r, half)]
    if missing:
        cis[1] = None
    case = {"ratios": [float(v) for v in r], "cis": cis, "gmean": float(st.gmean(r))}
    if missing:
        case["low"], case["high"] = None, None
    else:
        se_i = np.array([(np.log(hi) - np.log(lo)) / 2 / z for lo, hi in cis])
        se = np.mean(se_i)
        m = np.mean(np.log(r))
        case["low"], case["high"] = float(np.exp(m - z * se)), float(np.exp(m + z * se))
    cases.append(case)
json.dump({
    "generator": {"script": "scripts/geomean_reference.py", "python": sys.version.split()[0],
                  "numpy": np.__version__, "scipy": scipy.__version__},
    "cases": cases,
}, open(OUT, "w"), indent=1)
print(OUT)
