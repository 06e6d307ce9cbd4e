#!/usr/bin/env python3
"""Reference values for tare's `stats` module (tests/stats_*.rs).

Generates seeded input samples and the expected outputs computed with established packages
(numpy, scipy, statsmodels, pymannkendall), and writes them as JSON under tests/data/stats/.
The Rust tests only read the committed JSON; CI does not need these packages.

Versions used to generate the committed files are recorded in each file's "generator" field.

    pip install numpy scipy statsmodels pymannkendall
    python3 scripts/stats_reference.py
"""

import json
import math
import os
import sys

import numpy as np
import scipy
import scipy.stats as st
import statsmodels
from statsmodels.stats.multitest import multipletests
from statsmodels.tsa.stattools import acf
from statsmodels.stats.diagnostic import acorr_ljungbox
import pymannkendall as pmk
from scipy.stats._resampling import _bca_interval  # private; only for the BCa acceleration

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats")
GENERATOR = {
    "script": "scripts/stats_reference.py",
    "python": sys.version.split()[0],
    "numpy": np.__version__,
    "scipy": scipy.__version__,
    "statsmodels": statsmodels.__version__,
    "pymannkendall": getattr(pmk, "__version__", "unknown"),
}


def fl(x):
    """Plain float list (JSON cannot hold NaN; we never write NaN)."""
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


def write(name, cases):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        json.dump({"generator": GENERATOR, "cases": cases}, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")


def samples(rng):
    """A varied set of named samples: lognormal run times, normal, ties, tiny sizes."""
    out = {}
    for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 30, 31, 100, 1000]:
        out[f"lognormal_n{n}"] = rng.lognormal(mean=0.0, sigma=0.02, size=n) * 1.5
    out["normal_n50"] = rng.normal(10.0, 2.0, size=50)
    out["ties_n40"] = np.round(rng.normal(5.0, 1.0, size=40), 1)
    out["integers_n25"] = rng.integers(0, 6, size=25).astype(float)
    out["all_equal_n10"] = np.full(10, 3.25)
    out["heavy_tail_n60"] = np.concatenate([rng.normal(1.0, 0.01, 55), [1.5, 2.0, 0.7, 3.0, 1.2]])
    out["exp_n200"] = rng.exponential(2.0, 200)
    return out


def gen_quantile(rng):
    cases = []
    ps = [0.0, 0.01, 0.05, 0.1, 0.25, 1 / 3, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0]
    for name, x in samples(rng).items():
        xs = np.sort(x)
        cases.append({"name": name, "x": fl(x), "p": ps, "expected": fl(np.quantile(xs, ps))})
    return cases


def median_ci_scipy(x, confidence):
    res = st.quantile_test(x, q=float(np.median(x)), p=0.5)
    ci = res.confidence_interval(confidence)
    return ci.low, ci.high


def gen_describe(rng):
    cases = []
    for name, x in samples(rng).items():
        n = len(x)
        lo, hi = median_ci_scipy(x, 0.95)
        exact = not (math.isnan(lo) or math.isnan(hi))
        if not exact:
            lo, hi = float(np.min(x)), float(np.max(x))
        mean = float(np.mean(x))
        sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
        q1, q3 = np.quantile(x, [0.25, 0.75])
        cis = {}
        for c in [0.5, 0.8, 0.9, 0.95, 0.99, 0.999]:
            l, h = median_ci_scipy(x, c)
            cis[str(c)] = None if (math.isnan(l) or math.isnan(h)) else [float(l), float(h)]
        # relative half-width of the 95% interval
        med = float(np.median(x))
        rel = (max(med - lo, hi - med) / abs(med)) if exact and med != 0 else None
        cases.append({
            "name": name, "x": fl(x), "n": n, "median": med,
            "median_ci_low": float(lo), "median_ci_high": float(hi), "median_ci_exact": exact,
            "mean": mean, "stddev": sd, "cv": 0.0 if mean == 0 else sd / mean,
            "min": float(np.min(x)), "max": float(np.max(x)),
            "q1": float(q1), "q3": float(q3), "iqr": float(q3 - q1),
            "p5": float(np.quantile(x, 0.05)), "p95": float(np.quantile(x, 0.95)),
            "median_ci": cis, "relative_halfwidth": rel,
        })
    return cases


def gen_median_ci_ranks():
    """Binomial order-statistic ranks for many n, computed from scipy.stats.binom.ppf directly."""
    cases = []
    for c in [0.9, 0.95, 0.99]:
        for n in list(range(1, 61)) + [100, 101, 500, 1000, 5000, 10000, 100000]:
            a = (1 - c) / 2
            k = int(st.binom(n, 0.5).ppf(a))  # 1-based rank of the lower order statistic
            coverage = 1 - 2 * st.binom(n, 0.5).cdf(k - 1) if k >= 1 else None
            cases.append({"n": n, "confidence": c, "k": k if k >= 1 else None,
                          "coverage": coverage})
    return cases


def gen_mwu(rng):
    cases = []

    def add(name, a, b):
        for method in ["auto", "exact", "asymptotic"]:
            ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
            if method == "exact" and ties:
                continue  # tare refuses exact with ties
            if method == "exact" and min(len(a), len(b)) ** 2 * max(len(a), len(b)) > 1e8:
                continue  # beyond tare's exact cap (scipy overflows to NaN there anyway)
            r = st.mannwhitneyu(a, b, alternative="two-sided", method=method)
            cases.append({"name": name, "a": fl(a), "b": fl(b), "method": method,
                          "statistic": float(r.statistic), "p_value": float(r.pvalue)})

    for n1, n2 in [(1, 1), (1, 5), (2, 2), (3, 3), (3, 7), (4, 4), (5, 5), (5, 12), (6, 8),
                   (8, 8), (8, 30), (2, 50), (9, 9), (10, 12), (20, 20), (30, 35), (100, 80),
                   (3, 400), (8, 250), (1000, 1200)]:
        a = rng.lognormal(0.0, 0.02, n1)
        b = rng.lognormal(0.01, 0.02, n2)
        add(f"shift_{n1}_{n2}", a, b)
    # complete separation: most extreme exact p-values
    for n in [3, 4, 5, 8]:
        add(f"separated_{n}", np.arange(n, dtype=float), np.arange(n, 2 * n, dtype=float))
    # ties -> asymptotic with tie correction
    add("ties_small", np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 3.0, 3.0, 4.0, 5.0]))
    add("ties_medium", np.round(rng.normal(0, 1, 25), 1), np.round(rng.normal(0.5, 1, 30), 1))
    add("all_tied", np.full(5, 1.0), np.full(7, 1.0))
    add("equal_samples", np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.5, 0.5]))
    return cases


def gen_welch(rng):
    cases = []
    for n1, n2, d, s2 in [(2, 2, 1.0, 1.0), (2, 5, 0.5, 3.0), (5, 5, 0.0, 1.0), (10, 30, 0.3, 2.0),
                          (30, 30, 0.02, 1.0), (100, 50, 1.0, 0.5), (40, 40, 3.0, 1.0),
                          (7, 300, -0.4, 4.0)]:
        a = rng.normal(0.0, 1.0, n1)
        b = rng.normal(d, s2, n2)
        r = st.ttest_ind(a, b, equal_var=False)
        cases.append({"a": fl(a), "b": fl(b), "statistic": float(r.statistic),
                      "p_value": float(r.pvalue)})
    a = np.full(5, 2.0)
    b = rng.normal(2.5, 1.0, 6)
    r = st.ttest_ind(a, b, equal_var=False)
    cases.append({"a": fl(a), "b": fl(b), "statistic": float(r.statistic), "p_value": float(r.pvalue)})
    return cases


def gen_kruskal(rng):
    cases = []
    specs = [[5, 5], [3, 4, 5], [10, 10, 10, 10], [30, 2, 17], [1, 1, 3]]
    for sizes in specs:
        groups = [rng.normal(0.1 * i, 1.0, n) for i, n in enumerate(sizes)]
        r = st.kruskal(*groups)
        cases.append({"groups": [fl(g) for g in groups], "statistic": float(r.statistic),
                      "p_value": float(r.pvalue)})
    groups = [np.round(rng.normal(0, 1, 20), 0) for _ in range(3)]  # heavy ties
    r = st.kruskal(*groups)
    cases.append({"groups": [fl(g) for g in groups], "statistic": float(r.statistic),
                  "p_value": float(r.pvalue)})
    return cases


def gen_holm(rng):
    cases = []
    fixed = [[0.01], [0.01, 0.04, 0.03, 0.005], [0.5, 0.5, 0.5], [0.001, 0.2, 0.04, 0.04, 0.9],
             [0.0, 1.0, 0.3]]
    for p in fixed + [list(rng.uniform(0, 0.2, 12)), list(rng.uniform(0, 1, 30))]:
        adj = multipletests(p, method="holm")[1]
        cases.append({"p": fl(p), "expected": fl(adj)})
    return cases


def gen_min_runs():
    cases = []
    for alpha in [0.2, 0.1, 0.05, 0.01, 0.005, 0.001, 1e-4, 1e-6]:
        n = 1
        while True:
            p = st.mannwhitneyu(np.arange(n, dtype=float), np.arange(n, 2 * n, dtype=float),
                                alternative="two-sided", method="exact").pvalue
            if p < alpha:
                break
            n += 1
        cases.append({"alpha": alpha, "n": n})
    return cases


def gen_outliers(rng):
    cases = []
    xs = [
        np.concatenate([rng.normal(1.0, 0.01, 50), [1.04, 0.96, 1.2, 0.5, 1.025]]),
        rng.normal(0, 1, 200),
        rng.exponential(1.0, 100),
        np.array([1.0, 1.0, 1.0, 1.0, 2.0]),
        np.array([5.0]),
    ]
    for x in xs:
        q1, q3 = np.quantile(x, [0.25, 0.75])
        iqr = q3 - q1
        kinds = []
        for i, v in enumerate(x):
            if v < q1 - 3 * iqr:
                kinds.append([i, "LowSevere"])
            elif v < q1 - 1.5 * iqr:
                kinds.append([i, "LowMild"])
            elif v > q3 + 3 * iqr:
                kinds.append([i, "HighSevere"])
            elif v > q3 + 1.5 * iqr:
                kinds.append([i, "HighMild"])
        cases.append({"x": fl(x), "q1": float(q1), "q3": float(q3), "iqr": float(iqr),
                      "indices": kinds})
    return cases


def gen_mann_kendall(rng):
    cases = []
    series = {
        "noise_30": rng.normal(1.0, 0.01, 30),
        "trend_50": 1.0 + 0.001 * np.arange(50) + rng.normal(0, 0.01, 50),
        "down_20": 2.0 - 0.01 * np.arange(20) + rng.normal(0, 0.005, 20),
        "ties_40": np.round(rng.normal(0, 1, 40), 0),
        "short_3": np.array([1.0, 3.0, 2.0]),
        "constant_10": np.full(10, 2.0),
        "noise_300": rng.lognormal(0.0, 0.02, 300),
    }
    for name, x in series.items():
        r = pmk.original_test(x)
        n = len(x)
        # hand formula (pymannkendall computes p = 2*(1 - cdf), which loses relative precision
        # for tiny p; use the survival function instead and check agreement)
        p_sf = float(2 * st.norm.sf(abs(r.z)))
        assert abs(p_sf - r.p) < 1e-12, (name, p_sf, r.p)
        tau_b = st.kendalltau(np.arange(n), x)
        cases.append({"name": name, "x": fl(x), "s": float(r.s), "var_s": float(r.var_s),
                      "z": float(r.z), "p_value": p_sf, "tau": float(r.Tau),
                      "sen_slope": float(r.slope),
                      "scipy_kendalltau_b": None if np.isnan(tau_b.statistic) else float(tau_b.statistic)})
    return cases


def gen_autocorr(rng):
    cases = []
    e = rng.normal(0, 1, 200)
    ar = np.zeros(200)
    for t in range(1, 200):
        ar[t] = 0.6 * ar[t - 1] + e[t]
    series = {"noise_50": rng.normal(0, 1, 50), "ar1_200": ar, "short_3": np.array([1.0, 2.0, 4.0]),
              "alternating_20": np.array([1.0, 2.0] * 10), "lognormal_30": rng.lognormal(0, 0.02, 30)}
    for name, x in series.items():
        r1 = float(acf(x, nlags=1, fft=False)[1])
        lb = acorr_ljungbox(x, lags=[1])
        cases.append({"name": name, "x": fl(x), "r1": r1,
                      "ljung_box_q": float(lb["lb_stat"].iloc[0]),
                      "p_value": float(lb["lb_pvalue"].iloc[0])})
    return cases


def count_modes(grid, f):
    peaks = [i for i in range(1, len(f) - 1) if f[i] > f[i - 1] and f[i] >= f[i + 1]]
    top = max([f[i] for i in peaks], default=0.0)
    keep = [i for i in peaks if f[i] >= 0.1 * top]
    # merge ripples: neighbouring modes whose valley stays above 90% of the lower one
    while True:
        for k in range(len(keep) - 1):
            i, j = keep[k], keep[k + 1]
            if f[i:j + 1].min() > 0.9 * min(f[i], f[j]):
                keep.pop(k if f[i] < f[j] else k + 1)
                break
        else:
            return keep


def gen_kde(rng):
    cases = []
    xs = {
        "normal_50": rng.normal(10, 1, 50),
        "two_clusters": np.concatenate([rng.normal(1.0, 0.01, 30), rng.normal(1.1, 0.01, 20)]),
        "lognormal_100": rng.lognormal(0, 0.05, 100),
        "small_4": np.array([1.0, 1.1, 1.3, 2.0]),
        "three_clusters": np.concatenate([rng.normal(0, 0.1, 40), rng.normal(3, 0.1, 40),
                                          rng.normal(6, 0.1, 40)]),
    }
    # A unimodal sample whose KDE has a ripple (a second local maximum above 10% of the top)
    # that the valley rule removes: draw until one turns up (deterministic given the seed).
    while True:
        x = rng.lognormal(0, 0.01, 50)
        kde = st.gaussian_kde(x, bw_method="silverman")
        h = float(np.sqrt(kde.covariance[0, 0]))
        g = np.linspace(x.min() - 3 * h, x.max() + 3 * h, 512)
        f = kde(g)
        raw = [i for i in range(1, 511) if f[i] > f[i - 1] and f[i] >= f[i + 1]]
        if len([i for i in raw if f[i] >= 0.1 * f.max()]) > 1 and len(count_modes(g, f)) == 1:
            xs["ripple_50"] = x
            break
    for name, x in xs.items():
        kde = st.gaussian_kde(x, bw_method="silverman")
        h = float(np.sqrt(kde.covariance[0, 0]))
        lo, hi = x.min() - 3 * h, x.max() + 3 * h
        grid = lo + (hi - lo) / 511 * np.arange(512)
        f = kde(grid)
        keep = count_modes(grid, f)
        n = len(x)
        g1 = st.skew(x, bias=False)
        g2 = st.kurtosis(x, bias=False)
        bc = (g1 ** 2 + 1) / (g2 + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
        cases.append({"name": name, "x": fl(x), "bandwidth": h, "grid": fl(grid),
                      "density": fl(f), "modes": fl(grid[keep]),
                      "bimodality_coefficient": float(bc)})
    return cases


def gen_bootstrap(rng):
    """scipy percentile bootstrap of median(b)/median(a): compared within Monte Carlo error."""
    cases = []

    def stat(a, b, axis=-1):
        return np.median(b, axis=axis) / np.median(a, axis=axis)

    for paired in [False, True]:
        for n in [41, 200]:
            common = rng.normal(0, 0.01, n)  # shared round effect for the paired case
            a = np.exp(rng.normal(0, 0.02, n) + (common if paired else 0))
            # skewed candidate so that BCa's corrections are not negligible
            b = np.exp(rng.normal(0.03, 0.02, n) + (common if paired else 0)) \
                + rng.exponential(0.01, n)
            # the jackknife acceleration is deterministic: take it from scipy's own BCa code
            if paired:
                data = (np.arange(n),)

                def jstat(i, axis=-1, a=a, b=b):
                    return stat(a[i], b[i], axis=axis)
            else:
                data, jstat = (a, b), stat
            _, _, a_hat = _bca_interval(data, jstat, axis=-1, alpha=0.025,
                                        theta_hat_b=np.array([stat(a, b)] * 3), batch=None, xp=np)
            for method in ["percentile", "BCa"]:
                res = st.bootstrap((a, b), stat, paired=paired, vectorized=True,
                                   n_resamples=20000, confidence_level=0.95, method=method,
                                   rng=np.random.default_rng(12345))
                cases.append({"paired": paired, "method": method, "a": fl(a), "b": fl(b),
                              "estimate": float(stat(a, b)), "acceleration": float(a_hat),
                              "low": float(res.confidence_interval.low),
                              "high": float(res.confidence_interval.high),
                              "standard_error": float(res.standard_error)})
    return cases


def gen_warmup(rng):
    """MSER-5 by its textbook definition (two-pass variances), confirmed by scipy's
    Mann-Whitney at alpha = 0.01, as documented in src/stats/warmup.rs."""
    cases = []
    t60 = np.arange(60)
    series = {
        "decaying_60": (1 + 0.3 * np.exp(-t60 / 4)) * np.exp(rng.normal(0, 0.01, 60)),
        "iid_40": np.exp(rng.normal(0, 0.01, 40)),
        "step_50": np.concatenate([np.full(10, 1.1), np.ones(40)]) * np.exp(rng.normal(0, 0.01, 50)),
        "leftover_23": np.concatenate([[2.0, 1.8, 1.5], np.ones(20)]) + rng.normal(0, 0.01, 23),
        "constant_30": np.full(30, 7.0),
        "slow_start_100": (1 + 0.05 * np.exp(-np.arange(100) / 10)) * np.exp(rng.normal(0, 0.01, 100)),
    }
    for name, x in series.items():
        m = len(x) // 5
        y = x[: 5 * m].reshape(m, 5).mean(axis=1)
        stats = [np.sum((y[d:] - y[d:].mean()) ** 2) / (m - d) ** 2 for d in range(m // 2 + 1)]
        d = int(np.argmin(stats))
        cut = 5 * d
        p = None
        suggested = 0
        if cut > 0:
            p = float(st.mannwhitneyu(x[:cut], x[cut:], alternative="two-sided").pvalue)
            suggested = cut if p < 0.01 else 0
        cases.append({"name": name, "x": fl(x), "mser_truncation": cut, "p_value": p,
                      "suggested_warmup": suggested,
                      "prefix_median": float(np.median(x[:cut])) if cut else None,
                      "rest_median": float(np.median(x[cut:]))})
    return cases


def main():
    os.makedirs(OUT, exist_ok=True)
    write("quantile.json", gen_quantile(np.random.default_rng(1)))
    write("describe.json", gen_describe(np.random.default_rng(2)))
    write("median_ci_ranks.json", gen_median_ci_ranks())
    write("mann_whitney.json", gen_mwu(np.random.default_rng(3)))
    write("welch.json", gen_welch(np.random.default_rng(4)))
    write("kruskal.json", gen_kruskal(np.random.default_rng(5)))
    write("holm.json", gen_holm(np.random.default_rng(6)))
    write("min_runs.json", gen_min_runs())
    write("outliers.json", gen_outliers(np.random.default_rng(7)))
    write("mann_kendall.json", gen_mann_kendall(np.random.default_rng(8)))
    write("autocorr.json", gen_autocorr(np.random.default_rng(9)))
    write("kde.json", gen_kde(np.random.default_rng(10)))
    write("bootstrap.json", gen_bootstrap(np.random.default_rng(11)))
    write("warmup.json", gen_warmup(np.random.default_rng(12)))


if __name__ == "__main__":
    main()
