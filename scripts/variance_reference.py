#!/usr/bin/env python3
"""Reference values for `tare::stats::variance` (tests/bias_variance.rs).

One-way random-effects ANOVA (runs nested in setups). Seeded groups; expected values from:
  * statsmodels `ols(...)` + `anova_lm` (sums of squares, mean squares, F, p),
  * scipy.stats.f_oneway (F, p),
  * the method-of-moments components sigma2_within = MSW, sigma2_between = (MSB - MSW)/n0 with
    n0 = (N - sum n_i^2 / N)/(k - 1),
  * for balanced groups whose between estimate is positive, statsmodels MixedLM (REML), which
    equals the ANOVA estimators there (checked to 1e-3 relative in the Rust test);
and, for comparisons over setups (variance_compare.json):
  * scipy.stats.ttest_1samp on log per-setup ratios (the paired t-test over setups),
  * scipy.stats.bootstrap(np.mean, method="percentile") of the per-setup ratios (compared
    within Monte Carlo error: different random streams).
The Rust tests read only the committed JSON.

    pip install numpy scipy statsmodels pandas
    python3 scripts/variance_reference.py
"""

import json
import os
import sys
import warnings

import numpy as np
import pandas as pd
import scipy
import scipy.stats as st
import statsmodels
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats")
GENERATOR = {
    "script": "scripts/variance_reference.py",
    "python": sys.version.split()[0],
    "numpy": np.__version__,
    "scipy": scipy.__version__,
    "statsmodels": statsmodels.__version__,
}


def case(name, groups):
    df = pd.DataFrame(
        [(f"g{i}", x) for i, g in enumerate(groups) for x in g], columns=["setup", "y"]
    )
    table = anova_lm(smf.ols("y ~ C(setup)", data=df).fit())
    ssb, ssw = table["sum_sq"].iloc[0], table["sum_sq"].iloc[1]
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    f, p = st.f_oneway(*groups)
    assert abs(f - table["F"].iloc[0]) <= 1e-9 * f
    sizes = np.array([len(g) for g in groups], dtype=float)
    n, k = sizes.sum(), len(groups)
    n0 = (n - (sizes**2).sum() / n) / (k - 1)
    out = {
        "name": name,
        "groups": [list(map(float, g)) for g in groups],
        "ss_between": float(ssb),
        "ss_within": float(ssw),
        "ms_between": float(msb),
        "ms_within": float(msw),
        "f": float(f),
        "p_value": float(p),
        "n0": float(n0),
        "var_within": float(msw),
        "var_between_raw": float((msb - msw) / n0),
    }
    balanced = len(set(sizes)) == 1
    if balanced and msb > msw:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = smf.mixedlm("y ~ 1", df, groups=df["setup"]).fit(reml=True)
        out["reml_var_between"] = float(m.cov_re.iloc[0, 0])
        out["reml_var_within"] = float(m.scale)
    return out


def main():
    rng = np.random.default_rng(20261121)
    cases = []
    # Balanced: 10 setups x 5 runs, setup effect sd 0.03 on 1.0, run noise sd 0.01.
    eff = rng.normal(0, 0.03, 10)
    cases.append(case("balanced-strong", [1.0 + e + rng.normal(0, 0.01, 5) for e in eff]))
    # Balanced, weaker effect: 8 x 4, effect sd 0.01, noise 0.02.
    eff = rng.normal(0, 0.01, 8)
    cases.append(case("balanced-weak", [2.0 + e + rng.normal(0, 0.02, 4) for e in eff]))
    # Unbalanced sizes.
    sizes = [2, 7, 3, 5, 9, 4]
    eff = rng.normal(0, 0.05, len(sizes))
    cases.append(case("unbalanced", [0.5 + e + rng.normal(0, 0.02, s) for e, s in zip(eff, sizes)]))
    # No effect: between estimate may be negative.
    cases.append(case("null", [1.0 + rng.normal(0, 0.01, 6) for _ in range(6)]))
    # Lognormal timings, 20 setups x 3 runs.
    eff = rng.normal(0, 0.02, 20)
    cases.append(case("lognormal", [np.exp(np.log(0.1) + e + rng.normal(0, 0.01, 3)) for e in eff]))
    with open(os.path.join(OUT, "variance.json"), "w") as fh:
        json.dump({"generator": GENERATOR, "cases": cases}, fh, indent=1)
        fh.write("\n")
    compare_cases()


def compare_cases():
    rng = np.random.default_rng(7)
    cases = []
    for name, n, mu, sd in [("slower-2pct", 12, 1.02, 0.01), ("equal", 8, 1.0, 0.02),
                            ("faster-5pct", 20, 0.95, 0.03), ("tiny", 3, 1.1, 0.05)]:
        ratios = mu * np.exp(rng.normal(0, sd, n))
        t = st.ttest_1samp(np.log(ratios), 0.0)
        b = st.bootstrap((ratios,), np.mean, confidence_level=0.95, n_resamples=20000,
                         method="percentile", random_state=np.random.default_rng(1))
        cases.append({
            "name": name,
            "ratios": list(map(float, ratios)),
            "t": float(t.statistic),
            "p_value": float(t.pvalue),
            "mean": float(np.mean(ratios)),
            "ci_low": float(b.confidence_interval.low),
            "ci_high": float(b.confidence_interval.high),
            "standard_error": float(b.standard_error),
        })
    with open(os.path.join(OUT, "variance_compare.json"), "w") as fh:
        json.dump({"generator": GENERATOR, "cases": cases}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
