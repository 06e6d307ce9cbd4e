#!/usr/bin/env python3
"""Reference values for `stats::session_ratio` (issue 22): the ratio of two single sessions'
means, each session's uncertainty the spread of the means of its three consecutive thirds.

Per case (x: old session's per-process values in time order, y: new's):
- thirds: x[i*n//3:(i+1)*n//3] for i in 0..3 (numpy slicing, as the Rust code cuts them);
- ratio = mean(y) / mean(x) (all values, not the thirds);
- v = var(third means, ddof=1) / mean**2 per side (relative, the delta method on the log scale);
- se = sqrt(vx + vy); df = 2 (conservative: each side's spread rests on 3 values);
- interval = ratio * exp(-+ t.ppf((1+c)/2, df) * se); p = 2 * t.sf(|ln ratio| / se, df)
  (scipy.stats.t).

    pip install numpy scipy
    python3 scripts/session_ratio_reference.py   # writes tests/data/stats/session_ratio.json
"""
import json
import os

import numpy as np
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "session_ratio.json")
rng = np.random.default_rng(22)


def thirds(v):
    n = len(v)
    return np.array([v[i * n // 3:(i + 1) * n // 3].mean() for i in range(3)])


def case(name, x, y, c=0.95):
    x, y = np.asarray(x, float), np.asarray(y, float)
    mx, my = x.mean(), y.mean()
    vx = thirds(x).var(ddof=1) / mx**2
    vy = thirds(y).var(ddof=1) / my**2
    se = np.sqrt(vx + vy)
    df = 2.0
    ratio = my / mx
    t = st.t.ppf((1 + c) / 2, df)
    return {
        "name": name, "x": x.tolist(), "y": y.tolist(), "confidence": c,
        "ratio": ratio, "low": ratio * np.exp(-t * se), "high": ratio * np.exp(t * se),
        "p": float(2 * st.t.sf(abs(np.log(ratio)) / se, df)), "df": df,
    }


cases = [
    case("iid_6", 40 + rng.standard_normal(6), 40 + rng.standard_normal(6)),
    case("iid_12_shift10", 40 + rng.standard_normal(12), 44 + rng.standard_normal(12)),
    # A slow episode covering the first third of the old session.
    case("episode_12", np.r_[np.full(4, 80.0), np.full(8, 40.0)] + rng.standard_normal(12),
         40 + rng.standard_normal(12)),
    case("uneven_14", 30 + 2 * rng.standard_normal(14), 31 + 2 * rng.standard_normal(17),
         c=0.99),
    case("one_side_steady", 40 + 0.5 * rng.standard_normal(9), 40.0 + np.r_[np.zeros(6), np.full(3, 5.0)]),
]
with open(OUT, "w") as f:
    json.dump({"generated_by": "scripts/session_ratio_reference.py",
               "numpy": np.__version__, "cases": cases}, f, indent=1)
print("wrote", OUT)
