#!/usr/bin/env python3
"""Reference values for `stats::next_value` (issue 42): one new value judged against a baseline
of earlier ones by the prediction interval for one new observation, on log values.

Per case (baseline b: k values, x: the new value, alpha: one-sided level):
- l = ln(b); m = mean(l); s = std(l, ddof=1); se = s * sqrt(1 + 1/k); df = k - 1;
- t = (ln x - m) / se; p_higher = t.sf(t, df); p_lower = t.cdf(t, df) (scipy.stats.t);
- ratio = x / exp(m); q = t.ppf(1 - alpha, df); low, high = ratio * exp(-+ q * se).

    pip install numpy scipy
    python3 scripts/next_value_reference.py   # writes tests/data/stats/next_value.json
"""
import json
import os

import numpy as np
import scipy
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "next_value.json")
rng = np.random.default_rng(42)


def case(name, b, x, alpha=0.05):
    b = np.asarray(b, float)
    lb = np.log(b)
    k = len(b)
    m, s = lb.mean(), lb.std(ddof=1)
    se = s * np.sqrt(1 + 1 / k)
    df = k - 1
    t = (np.log(x) - m) / se
    q = st.t.ppf(1 - alpha, df)
    ratio = x / np.exp(m)
    return {
        "name": name, "baseline": b.tolist(), "x": float(x), "alpha": alpha,
        "ratio": float(ratio), "low": float(ratio * np.exp(-q * se)),
        "high": float(ratio * np.exp(q * se)), "t": float(t),
        "p_higher": float(st.t.sf(t, df)), "p_lower": float(st.t.cdf(t, df)), "df": float(df),
    }


cases = [
    case("k3_step20", 1.0 + 0.005 * rng.standard_normal(3), 1.2),
    case("k3_same_level", 0.01 * (1 + 0.01 * rng.standard_normal(3)), 0.01),
    case("k5_alpha01", 2e-3 * (1 + 0.02 * rng.standard_normal(5)), 2.1e-3, alpha=0.01),
    case("k10_faster", 40 * (1 + 0.03 * rng.standard_normal(10)), 34.0),
    case("k10_within", 40 * (1 + 0.03 * rng.standard_normal(10)), 41.0),
    case("k4_wide", [1.0, 1.3, 0.8, 1.1], 1.6, alpha=0.1),
    case("k20_far", 5 * (1 + 0.01 * rng.standard_normal(20)), 6.0, alpha=0.001),
]
with open(OUT, "w") as f:
    json.dump({"generated_by": "scripts/next_value_reference.py",
               "numpy": np.__version__, "scipy": scipy.__version__, "cases": cases}, f, indent=1)
print("wrote", OUT)
