#!/usr/bin/env python3
"""A/A verdict rates of the small-sample path of `conclude::levels` (issue 43): where the rank
test cannot reach the level its verdict needs (the exact Mann-Whitney's smallest p >= alpha/m:
3 vs 3 at alpha 0.05, 4 vs 4 from 2 comparisons on), the interval and the verdict come from
Welch's t on the logs of the per-process values, the interval at 1 - alpha/m, the verdict
"slower"/"faster" exactly where it excludes 1 (`stats::welch_ratio`, whose numbers match
scipy's `ttest_ind(equal_var=False)` and its `confidence_interval`:
scripts/welch_ratio_reference.py). This script draws synthetic sides, identical (A/A) or one
changed, 10,000 draws a row (seeded), and prints the share of draws with a verdict: on A/A rows
the false-verdict rate, which must stay at or below alpha, with its 95% Clopper-Pearson interval.

    pip install numpy scipy
    python3 bench/aa_small_sample.py > bench/aa_small_sample.out.txt
"""
import numpy as np
import scipy.stats as st

ALPHA = 0.05
DRAWS = 10_000
rng = np.random.default_rng(43)


def welch_log_excludes(x, y, level):
    """Vectorized over rows: whether Welch's t interval of mean(ln y) - mean(ln x) at `level`
    excludes 0 (the ratio interval excludes 1)."""
    lx, ly = np.log(x), np.log(y)
    nx, ny = lx.shape[1], ly.shape[1]
    wx, wy = lx.var(axis=1, ddof=1) / nx, ly.var(axis=1, ddof=1) / ny
    se2 = wx + wy
    d = ly.mean(axis=1) - lx.mean(axis=1)
    df = se2 ** 2 / (wx ** 2 / (nx - 1) + wy ** 2 / (ny - 1))
    q = st.t.ppf((1 + level) / 2, df)
    return np.abs(d) > q * np.sqrt(se2)


def side(shape, n, change):
    if shape == "lognormal 5%":
        v = np.exp(0.05 * rng.standard_normal((DRAWS, n)))
    elif shape == "lognormal 30%":
        v = np.exp(0.30 * rng.standard_normal((DRAWS, n)))
    elif shape == "normal 5%":
        v = 1 + 0.05 * rng.standard_normal((DRAWS, n))
    elif shape == "two modes (1.0, 1.6)":
        v = np.where(rng.random((DRAWS, n)) < 0.5, 1.0, 1.6) * np.exp(0.02 * rng.standard_normal((DRAWS, n)))
    elif shape == "10% of processes 1.5x":
        v = np.where(rng.random((DRAWS, n)) < 0.1, 1.5, 1.0) * np.exp(0.02 * rng.standard_normal((DRAWS, n)))
    else:
        raise ValueError(shape)
    return v * change


def row(shape, n, m, comparisons=1, change=1.0, spread_new=None):
    level = 1 - ALPHA / comparisons
    x = side(shape, n, 1.0)
    y = side(spread_new or shape, m, change)
    k = int(welch_log_excludes(x, y, level).sum())
    lo, hi = st.binomtest(k, DRAWS).proportion_ci(0.95, method="exact")
    kind = "A/A" if change == 1.0 else f"{change - 1:+.0%}"
    print(f"| {shape}{' vs ' + spread_new + ' (same geometric mean, unequal spread)' if spread_new else ''} | {n} vs {m} | {comparisons} | {1 - ALPHA / comparisons:.4g} | {kind} | {k / DRAWS:.4f} ({lo:.4f}-{hi:.4f}) |")


print(f"Welch's t on logs, {DRAWS} seeded draws a row, alpha {ALPHA}: share of draws with a verdict")
print("| values | processes | comparisons m | level 1 - alpha/m | change | verdicts (95% CI) |")
print("|---|---|---|---|---|---|")
for shape in ["lognormal 5%", "lognormal 30%", "normal 5%", "two modes (1.0, 1.6)", "10% of processes 1.5x"]:
    row(shape, 3, 3)
row("lognormal 5%", 2, 2)
row("lognormal 5%", 3, 5)
row("lognormal 5%", 2, 3)
row("lognormal 5%", 4, 4, comparisons=2)
row("lognormal 5%", 3, 3, comparisons=5)
row("lognormal 5%", 3, 3, spread_new="lognormal 30%")
row("lognormal 5%", 3, 3, change=1.10)
row("lognormal 5%", 3, 3, change=1.20)
row("lognormal 30%", 3, 3, change=1.50)
row("lognormal 5%", 2, 2, change=1.20)
