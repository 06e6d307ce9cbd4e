#!/usr/bin/env python3
"""Which process-level statistic should `conclude::levels` bootstrap (issue 34)? Seeded
synthetic comparisons of per-process values (one number per process), 200 trials a row,
1000 resamples each; prints how often each interval excludes 1 (A/A rows: false verdicts, to
be <= 0.05; changed rows: power) for

  median  - percentile bootstrap of the ratio of medians (the statistic before issue 34)
  mean    - percentile bootstrap of the ratio of means
  trim10, trim20 - of 10%/20% trimmed means (scipy.stats.trim_mean)
  mean+   - the ratio of means, expanded for small samples (stats::mean_ratio, chosen)
  MW, Welch - the tests alone; mean+&MW, mean+&Welch - a verdict needs interval and test.

Scenarios: `bimodal` (each process in a fast mode 2.0 or a slow one 3.2 with probability 1/2,
2% noise: a machine with speed modes, as the Go build that a ratio of medians missed), change
15%; `unimodal` (5% between processes), change 5%; `outlier` (5%, and each process with
probability 0.1 hit by 1.5x interference), change 5%.

    python3 scripts/levels_simulation.py [TRIALS]      (about a minute of one core)
"""
import sys

import numpy as np
import scipy.stats as st

rng = np.random.default_rng(2)
B = 1000


def c_n(n):
    return np.sqrt(n / (n - 1)) * st.t.ppf(0.975, n - 1) / st.norm.ppf(0.975)


def excludes_one(x, y, kind):
    ix = rng.integers(0, len(x), (B, len(x)))
    iy = rng.integers(0, len(y), (B, len(y)))
    if kind == "median":
        bx, by = np.median(x[ix], 1), np.median(y[iy], 1)
    elif kind.startswith("trim"):
        p = int(kind[4:]) / 100
        bx, by = st.trim_mean(x[ix], p, axis=1), st.trim_mean(y[iy], p, axis=1)
    else:
        bx, by = x[ix].mean(1), y[iy].mean(1)
        if kind == "mean+":
            bx = x.mean() * (bx / x.mean()) ** c_n(len(x))
            by = y.mean() * (by / y.mean()) ** c_n(len(y))
    lo, hi = np.quantile(by / bx, [0.025, 0.975])
    return lo > 1 or hi < 1


def side(n, scen, shift):
    if scen == "bimodal":
        m = np.where(rng.random(n) < 0.5, 2.0, 3.2)
        return m * shift * (1 + 0.02 * rng.standard_normal(n))
    v = shift * (1 + 0.05 * rng.standard_normal(n))
    if scen == "outlier":
        v = v * np.where(rng.random(n) < 0.1, 1.5, 1.0)
    return v


T = int(sys.argv[1]) if len(sys.argv) > 1 else 200
kinds = ["median", "mean", "trim10", "trim20", "mean+"]
print(f"{T} trials a row; share of trials whose interval excludes 1 (and test p < 0.05)")
print(f"{'':26s}" + "".join(f"{k:>8s}" for k in kinds + ["MW", "Welch", "mean+&MW", "mean+&W"]))
for scen, change in (("bimodal", 1.15), ("unimodal", 1.05), ("outlier", 1.05)):
    for n in (5, 8, 20, 79):
        for shift in (1.0, change):
            got = dict.fromkeys(kinds + ["MW", "Welch", "mean+&MW", "mean+&W"], 0)
            for _ in range(T):
                x, y = side(n, scen, 1.0), side(n, scen, shift)
                for k in kinds:
                    got[k] += excludes_one(x, y, k)
                ex = excludes_one(x, y, "mean+")
                mw = st.mannwhitneyu(x, y).pvalue < 0.05
                we = st.ttest_ind(x, y, equal_var=False).pvalue < 0.05
                got["MW"] += mw
                got["Welch"] += we
                got["mean+&MW"] += ex and mw
                got["mean+&W"] += ex and we
            label = f"{scen} n={n} {'A/A' if shift == 1.0 else f'+{round(100*(shift-1))}%'}"
            print(f"{label:26s}" + "".join(f"{v / T:8.2f}" for v in got.values()), flush=True)
