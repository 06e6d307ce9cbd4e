#!/usr/bin/env python3
"""Reference values for `stats::welch_ratio` (issue 43): the ratio of two sides' geometric means
from Welch's t on the logs of their per-process values, the interval and test of one procedure.

Per case (x: old's per-process values, y: new's):
- r = scipy.stats.ttest_ind(ln y, ln x, equal_var=False);
- ratio = exp(mean(ln y) - mean(ln x)); p = r.pvalue; df = r.df;
- interval = exp(r.confidence_interval(c)) (Welch's t interval of the difference of log means).

    pip install numpy scipy
    python3 scripts/welch_ratio_reference.py   # writes tests/data/stats/welch_ratio.json
"""
import json
import os

import numpy as np
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats",
                   "welch_ratio.json")
rng = np.random.default_rng(43)


def case(name, x, y, c=0.95):
    x, y = np.asarray(x, float), np.asarray(y, float)
    r = st.ttest_ind(np.log(y), np.log(x), equal_var=False)
    ci = r.confidence_interval(confidence_level=c)
    return {
        "name": name, "x": x.tolist(), "y": y.tolist(), "confidence": c,
        "ratio": float(np.exp(np.log(y).mean() - np.log(x).mean())),
        "low": float(np.exp(ci.low)), "high": float(np.exp(ci.high)),
        "p": float(r.pvalue), "df": float(r.df),
    }


cases = [
    # `tare run -r 3` of sleep 0.01 against sleep 0.02: 3 processes a side.
    case("sleep_3v3", 0.0101 * np.exp(0.01 * rng.standard_normal(3)),
         0.0201 * np.exp(0.01 * rng.standard_normal(3))),
    # pytest-benchmark imported, 3 processes a side, 10% more work.
    case("import_3v3_10pct", 1e-3 * np.exp(0.02 * rng.standard_normal(3)),
         1.1e-3 * np.exp(0.02 * rng.standard_normal(3))),
    case("aa_2v2", np.exp(0.05 * rng.standard_normal(2)), np.exp(0.05 * rng.standard_normal(2))),
    case("unequal_3v5_adjusted", 40 * np.exp(0.03 * rng.standard_normal(3)),
         42 * np.exp(0.08 * rng.standard_normal(5)), c=0.975),
    case("aa_4v4_level_9833", np.exp(0.1 * rng.standard_normal(4)),
         np.exp(0.1 * rng.standard_normal(4)), c=1 - 0.05 / 3),
]
with open(OUT, "w") as f:
    json.dump({"generated_by": "scripts/welch_ratio_reference.py",
               "numpy": np.__version__, "scipy": __import__("scipy").__version__, "cases": cases},
              f, indent=1)
