#!/usr/bin/env python3
"""Reference values for `stats::geomean` (issue 30): the geometric mean of ratios
(scipy.stats.gmean) and the 95% t interval of the mean log ratio, exponentiated
(scipy.stats.t.interval on the logs). Seeded inputs.

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
cases = []
for n, sigma, shift in [(1, 0.1, 0.0), (2, 0.05, 0.02), (5, 0.03, -0.01), (12, 0.1, 0.05),
                        (40, 0.02, 0.0)]:
    r = np.exp(shift + sigma * rng.standard_normal(n))
    logs = np.log(r)
    case = {"ratios": [float(v) for v in r], "gmean": float(st.gmean(r))}
    if n >= 2:
        lo, hi = st.t.interval(0.95, n - 1, loc=np.mean(logs), scale=st.sem(logs))
        case["low"], case["high"] = float(np.exp(lo)), float(np.exp(hi))
    else:
        case["low"], case["high"] = None, None
    cases.append(case)
json.dump({
    "generator": {"script": "scripts/geomean_reference.py", "python": sys.version.split()[0],
                  "numpy": np.__version__, "scipy": scipy.__version__},
    "cases": cases,
}, open(OUT, "w"), indent=1)
print(OUT)
