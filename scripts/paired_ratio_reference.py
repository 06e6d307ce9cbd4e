#!/usr/bin/env python3
"""Reference values for `stats::paired_ratio` (issue 26): the ratio of two programs measured in
the same rounds (one process of each per round, `tare kernels`), from the per-round log ratios.

Per case (x: old's per-process values by round, y: new's, same rounds):
- d = ln(y) - ln(x); n = len(d); df = n - 1;
- ratio = exp(mean(d)) (the geometric mean of the per-round ratios);
- se = std(d, ddof=1) / sqrt(n); interval = exp(mean(d) -+ t.ppf((1+c)/2, df) * se);
- p = scipy.stats.ttest_rel(ln y, ln x).pvalue (two-sided).

    pip install numpy scipy
    python3 scripts/paired_ratio_reference.py   # writes tests/data/stats/paired_ratio.json
"""
import json
import os

import numpy as np
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "paired_ratio.json")
rng = np.random.default_rng(26)


def case(name, x, y, c=0.95):
    x, y = np.asarray(x, float), np.asarray(y, float)
    d = np.log(y) - np.log(x)
    n = len(d)
    se = d.std(ddof=1) / np.sqrt(n)
    t = st.t.ppf((1 + c) / 2, n - 1)
    return {
        "name": name, "x": x.tolist(), "y": y.tolist(), "confidence": c,
        "ratio": float(np.exp(d.mean())), "low": float(np.exp(d.mean() - t * se)),
        "high": float(np.exp(d.mean() + t * se)),
        "p": float(st.ttest_rel(np.log(y), np.log(x)).pvalue), "df": float(n - 1),
    }


# Rounds that share the machine's state: a level per round both sides see.
level = np.exp(0.3 * rng.standard_normal(20))
cases = [
    case("aa_3", 40 * level[:3] * np.exp(0.02 * rng.standard_normal(3)),
         40 * level[:3] * np.exp(0.02 * rng.standard_normal(3))),
    case("shared_levels_10_slower15", 40 * level[:10] * np.exp(0.05 * rng.standard_normal(10)),
         46 * level[:10] * np.exp(0.05 * rng.standard_normal(10))),
    case("independent_20", 40 * np.exp(0.2 * rng.standard_normal(20)),
         40 * np.exp(0.2 * rng.standard_normal(20)), c=0.99),
    # Speed modes: half the rounds at twice the time, on both sides alike.
    case("modes_12_faster", 40 * np.r_[np.ones(6), 2 * np.ones(6)] * np.exp(0.03 * rng.standard_normal(12)),
         36 * np.r_[np.ones(6), 2 * np.ones(6)] * np.exp(0.03 * rng.standard_normal(12))),
]
with open(OUT, "w") as f:
    json.dump({"generated_by": "scripts/paired_ratio_reference.py",
               "numpy": np.__version__, "scipy": __import__("scipy").__version__, "cases": cases},
              f, indent=1)
