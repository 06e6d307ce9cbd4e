#!/usr/bin/env python3
"""Reference values for `tare::stats::scaling` (the scaling fit of a parameter scan).

Seeded synthetic scans: for each parameter value n, a few "processes" whose values are
a + c * n**k times lognormal noise. Expected values from:
  * `np.polyfit(log n, log t, 1)` on the per-value medians: the plain log-log power law;
  * `scipy.optimize.least_squares` on the relative residuals (t - a - c n^k) / t with bounds
    a >= 0, c >= 0, k in [-3, 5], best of several starts: the power law above a constant
    (start-up) cost, checked against a profile over k (numpy grid + `minimize_scalar`);
  * `scipy.optimize.nnls` of t on [1, f(n)] for each complexity class (O(1), O(log n), O(n),
    O(n log n), O(n^2), O(n^3)): coefficients and RMS / mean(t) (Google Benchmark's
    normalized RMS, with a non-negative constant term);
  * `scipy.stats.f.sf`: the F-test of the best class against O(1) (growth or not, alpha 0.05);
  * `scipy.stats.bootstrap` (percentile, each n's processes resampled independently) of the
    exponent of the fit on resampled medians: compared within Monte Carlo error.
The Rust unit tests (`cargo test --lib stats::scaling`) read only the committed JSON.

    pip install numpy scipy
    python3 scripts/scaling_reference.py
"""

import json
import os
import sys

import numpy as np
import scipy
import scipy.optimize as opt
import scipy.stats as st

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "stats")
GENERATOR = {
    "script": "scripts/scaling_reference.py",
    "python": sys.version.split()[0],
    "numpy": np.__version__,
    "scipy": scipy.__version__,
}
K_MIN, K_MAX = -3.0, 5.0

CLASSES = {
    "1": lambda n: np.ones_like(n),
    "log n": lambda n: np.log2(n),
    "n": lambda n: n,
    "n log n": lambda n: n * np.log2(n),
    "n^2": lambda n: n**2,
    "n^3": lambda n: n**3,
}


def nnls_fit(n, t, f):
    a_mat = np.column_stack([np.ones_like(n), f(n)])
    (a, c), _ = opt.nnls(a_mat, t)
    resid = t - a - c * f(n)
    return float(a), float(c), float(np.sqrt(np.mean(resid**2)) / np.mean(t))


def weighted_ac(n, t, k):
    """Non-negative (a, c) minimising sum(((t - a - c n^k)/t)^2) for fixed k."""
    a_mat = np.column_stack([1.0 / t, n**k / t])
    (a, c), _ = opt.nnls(a_mat, np.ones_like(t))
    return a, c, float(np.sum((1 - (a + c * n**k) / t) ** 2))


def profile_fit(n, t):
    ks = np.arange(K_MIN, K_MAX + 1e-9, 0.02)
    sse = [weighted_ac(n, t, k)[2] for k in ks]
    i = int(np.argmin(sse))
    lo, hi = ks[max(i - 1, 0)], ks[min(i + 1, len(ks) - 1)]
    r = opt.minimize_scalar(lambda k: weighted_ac(n, t, k)[2], bounds=(lo, hi),
                            method="bounded", options={"xatol": 1e-10})
    a, c, s = weighted_ac(n, t, r.x)
    return float(r.x), float(a), float(c), s


def lsq_fit(n, t):
    best = None
    for k0 in [0.5, 1.0, 2.0, 3.0]:
        c0 = t[-1] / n[-1] ** k0
        r = opt.least_squares(lambda p: (t - p[0] - p[1] * n ** p[2]) / t,
                              [t[0] * 0.5, c0, k0],
                              bounds=([0, 0, K_MIN], [np.inf, np.inf, K_MAX]),
                              x_scale=[t[0], c0, 1.0], xtol=1e-15, ftol=1e-15, gtol=1e-15)
        if best is None or r.cost < best.cost:
            best = r
    a, c, k = best.x
    return float(k), float(a), float(c), float(2 * best.cost)


def medians(groups):
    return np.array([np.median(g) for g in groups])


def scan(rng, ns, f, procs, sigma):
    return [f(n) * np.exp(rng.normal(0, sigma, procs)) for n in ns]


def case(name, ns, groups, boot=False):
    ns = np.array(ns, dtype=float)
    t = medians(groups)
    slope, intercept = np.polyfit(np.log(ns), np.log(t), 1)
    k_p, a_p, c_p, s_p = profile_fit(ns, t)
    k_l, a_l, c_l, s_l = lsq_fit(ns, t)
    # The two optimisers agree (else the case is ill-posed and not a reference).
    assert s_p <= s_l * (1 + 1e-6) + 1e-15, (name, s_p, s_l)
    assert abs(k_p - k_l) < 1e-3 * max(1, abs(k_l)) or s_p < s_l, (name, k_p, k_l)
    out = {
        "name": name,
        "ns": ns.tolist(),
        "groups": [g.tolist() for g in groups],
        "medians": t.tolist(),
        "loglog": {"exponent": float(slope), "coefficient": float(np.exp(intercept))},
        "offset": {"exponent": k_p, "constant": a_p, "coefficient": c_p, "sse": s_p},
        "classes": {},
    }
    for cls, f in CLASSES.items():
        ca, cc, rms = nnls_fit(ns, t, f)
        out["classes"][cls] = {"constant": ca, "coefficient": cc, "rms": rms}
    best = min(out["classes"], key=lambda c: out["classes"][c]["rms"])
    # Growth or not: F-test of the best class (constant + c f(n)) against O(1) on the medians.
    sse0 = float(np.sum((t - t.mean()) ** 2))
    sse1 = float(len(t) * (out["classes"][best]["rms"] * t.mean()) ** 2)
    dof = len(t) - 2
    f_stat = (sse0 - sse1) / (sse1 / dof) if sse1 > 0 else np.inf
    p = float(st.f.sf(f_stat, 1, dof)) if np.isfinite(f_stat) else 0.0
    out["growth_p"] = p
    out["best_class"] = best if p < 0.05 else "1"
    if boot:
        def stat(*gs):
            return profile_fit(ns, np.array([np.median(g) for g in gs]))[0]
        res = st.bootstrap([np.array(g) for g in groups], stat, n_resamples=1000,
                           vectorized=False, method="percentile", confidence_level=0.95,
                           random_state=np.random.default_rng(7))
        out["bootstrap_exponent_ci"] = [float(res.confidence_interval.low),
                                        float(res.confidence_interval.high)]
    return out


def main():
    rng = np.random.default_rng(20261125)
    specs = [
        ("linear-no-offset", [10, 30, 100, 300, 1000], lambda n: 1e-5 * n, 8, 0.03, True),
        ("linear-offset", [100, 200, 500, 1000, 2000, 5000, 10000],
         lambda n: 5e-4 + 2e-6 * n, 10, 0.05, True),
        ("quadratic-offset", [50, 100, 200, 400, 800], lambda n: 8e-4 + 3e-8 * n**2, 10,
         0.05, True),
        ("nlogn", [64, 256, 1024, 4096, 16384, 65536], lambda n: 1e-8 * n * np.log2(n), 6,
         0.01, False),
        ("cubic", [10, 20, 40, 80, 160], lambda n: 1e-4 + 1e-8 * n**3, 6, 0.02, False),
        ("constant", [1, 4, 16, 64], lambda n: 2e-3, 6, 0.02, False),
        ("sqrt", [1, 10, 100, 1000], lambda n: 1e-3 * np.sqrt(n), 5, 0.02, False),
        ("log", [2, 8, 32, 128, 512], lambda n: 1e-4 * np.log2(n), 5, 0.01, False),
    ]
    cases = [case(name, ns, scan(rng, ns, f, p, s), b) for name, ns, f, p, s, b in specs]
    path = os.path.join(OUT, "scaling.json")
    with open(path, "w") as f:
        json.dump({"generator": GENERATOR, "k_range": [K_MIN, K_MAX], "cases": cases}, f,
                  indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")
    for c in cases:
        print(c["name"], c["loglog"]["exponent"], c["offset"]["exponent"], c["best_class"],
              c.get("bootstrap_exponent_ci"))


if __name__ == "__main__":
    main()
