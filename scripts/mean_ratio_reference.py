#!/usr/bin/env python3
"""Reference values for `stats::mean_ratio` (issue 34), the process-level statistic of
`conclude::levels`: the ratio of means of per-process values and its bootstrap interval.

- `expansion`: sqrt(n/(n-1)) * t.ppf(q, n-1) / norm.ppf(q), q = (1+c)/2 (exact);
- per case: the ratio of means (exact); `scipy.stats.bootstrap(method="percentile")` of
  mean(y)/mean(x) over independent resamples of each side (the plain interval; compared within
  Monte Carlo error); the expanded percentile interval (each side's resampled mean moved to
  m * (m*/m)**c, on the log scale), computed with numpy as scipy cannot expand; and, for contrast, scipy's
  percentile interval of the ratio of MEDIANS on the same values.

The `bimodal` case is made like the 15% slower Go build that a ratio of medians missed: 79 vs
79 processes whose medians fall near 2.0 and 3.2 (a machine with two speed modes).

    pip install numpy scipy
    python3 scripts/mean_ratio_reference.py   # writes tests/data/stats/mean_ratio.json
"""
import json
import os
import sys

import numpy as np
import scipy
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "mean_ratio.json")
B = 20000
rng = np.random.default_rng(34)


def expansion(n, c):
    q = (1 + c) / 2
    return float(np.sqrt(n / (n - 1)) * st.t.ppf(q, n - 1) / st.norm.ppf(q))


def ratio_means(x, y, axis=-1):
    return np.mean(y, axis=axis) / np.mean(x, axis=axis)


def ratio_medians(x, y, axis=-1):
    return np.median(y, axis=axis) / np.median(x, axis=axis)


def expanded(x, y, c, seed):
    g = np.random.default_rng(seed)
    mx, my = x.mean(), y.mean()
    bx = x[g.integers(0, len(x), (B, len(x)))].mean(1)
    by = y[g.integers(0, len(y), (B, len(y)))].mean(1)
    bx = mx * (bx / mx) ** expansion(len(x), c)
    by = my * (by / my) ** expansion(len(y), c)
    lo, hi = np.percentile(by / bx, [100 * (1 - c) / 2, 100 * (1 + c) / 2])
    return float(lo), float(hi)


def bimodal(n, shift):
    m = np.where(rng.random(n) < 0.5, 2.0e-6, 3.2e-6)
    return m * shift * (1 + 0.02 * rng.standard_normal(n))


cases = []
inputs = [
    ("five a side, 5% slower", 1e-6 * (1 + 0.05 * rng.standard_normal(5)),
     1.05e-6 * (1 + 0.05 * rng.standard_normal(5))),
    ("three a side, widely spread", np.array([1.0, 5.0, 9.0]), np.array([1.0, 6.0, 2.0])),
    ("eight against twelve, equal", 1 + 0.1 * rng.standard_normal(8), 1 + 0.1 * rng.standard_normal(12)),
    ("twenty a side, one outlier process", np.append(1 + 0.03 * rng.standard_normal(19), 1.6),
     1.02 * (1 + 0.03 * rng.standard_normal(20))),
    ("bimodal", bimodal(79, 1.0), bimodal(79, 1.15)),
]
for i, (name, x, y) in enumerate(inputs):
    c = 0.95
    plain = st.bootstrap((x, y), ratio_means, paired=False, vectorized=True, method="percentile",
                         n_resamples=B, confidence_level=c, random_state=i)
    med = st.bootstrap((x, y), ratio_medians, paired=False, vectorized=True, method="percentile",
                       n_resamples=B, confidence_level=c, random_state=i)
    lo, hi = expanded(x, y, c, 100 + i)
    cases.append({
        "name": name,
        "x": [float(v) for v in x],
        "y": [float(v) for v in y],
        "confidence": c,
        "estimate": float(np.mean(y) / np.mean(x)),
        "plain": [float(plain.confidence_interval.low), float(plain.confidence_interval.high)],
        "expanded": [lo, hi],
        "median_ratio": float(np.median(y) / np.median(x)),
        "median_ratio_interval": [float(med.confidence_interval.low), float(med.confidence_interval.high)],
    })
    print(f"{name}: means {cases[-1]['estimate']:.4f} plain [{cases[-1]['plain'][0]:.4f}, "
          f"{cases[-1]['plain'][1]:.4f}] expanded [{lo:.4f}, {hi:.4f}]; medians "
          f"{cases[-1]['median_ratio']:.4f} [{cases[-1]['median_ratio_interval'][0]:.4f}, "
          f"{cases[-1]['median_ratio_interval'][1]:.4f}]")
json.dump({
    "generator": {"script": "scripts/mean_ratio_reference.py", "python": sys.version.split()[0],
                  "numpy": np.__version__, "scipy": scipy.__version__, "resamples": B},
    "expansion": [{"n": n, "confidence": c, "factor": expansion(n, c)}
                  for n in (2, 3, 5, 8, 20, 79) for c in (0.9, 0.95)],
    "cases": cases,
}, open(OUT, "w"), indent=1)
print(OUT)
