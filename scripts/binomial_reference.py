#!/usr/bin/env python3
"""Reference values for tare's binomial confidence intervals (`stats::binomial`, the success
rate of `--ignore-failure` runs): Wilson score and Clopper–Pearson ("exact") intervals from
statsmodels' `proportion_confint`, cross-checked against scipy's `binomtest(...).proportion_ci`.
Writes tests/data/stats/binomial.json; the Rust test (tests/meters_success.rs) only reads it.

    pip install scipy statsmodels
    python3 scripts/binomial_reference.py
"""

import json
import os
import sys

import scipy
import scipy.stats as st
import statsmodels
from statsmodels.stats.proportion import proportion_confint

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats")
GENERATOR = {
    "script": "scripts/binomial_reference.py",
    "python": sys.version.split()[0],
    "scipy": scipy.__version__,
    "statsmodels": statsmodels.__version__,
}

cases = []
for n in [1, 2, 3, 5, 10, 17, 20, 30, 50, 100, 1000]:
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        if k < 0 or k > n:
            continue
        for conf in [0.95, 0.99, 0.90]:
            alpha = 1 - conf
            wl, wh = proportion_confint(k, n, alpha=alpha, method="wilson")
            cl, ch = proportion_confint(k, n, alpha=alpha, method="beta")
            sw = st.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
            sc = st.binomtest(k, n).proportion_ci(confidence_level=conf, method="exact")
            assert abs(sw.low - wl) < 1e-9 and abs(sw.high - wh) < 1e-9, (k, n, conf)
            assert abs(sc.low - cl) < 1e-9 and abs(sc.high - ch) < 1e-9, (k, n, conf)
            cases.append({
                "k": k, "n": n, "confidence": conf,
                "wilson": [float(wl), float(wh)],
                "clopper_pearson": [float(cl), float(ch)],
            })

path = os.path.join(OUT, "binomial.json")
with open(path, "w") as f:
    json.dump({"generator": GENERATOR, "cases": cases}, f, indent=1, allow_nan=False)
    f.write("\n")
print(f"wrote {path}: {len(cases)} cases")
