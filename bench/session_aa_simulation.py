#!/usr/bin/env python3
"""False verdicts and power of one-session-a-side comparisons on REAL run series (issue 22).

Back-to-back sessions of N runs are cut from long series of consecutive runs of one C loop
(bench/data: 800 runs of `tare run`, and 150 timings of the VM in its 19/40 ms speed modes) and
from independent values (2% spread), every window start 3 runs apart, 2 runs between the two
sessions. Each rule compares the two windows (A/A), and again with the second multiplied by
1.03 and 1.10 (power). Rules, all two-sided at alpha 0.05:

- welch: Welch's t on the runs (each run independent);
- batch: batch means, the thirds' means as 3 values a side (their spread divided by 3);
- reffects: one-way random effects across thirds (within-third variance / n plus the
  between-thirds component undivided);
- thirds: each session's mean as uncertain as one third's mean, t with 2 df
  (`stats::session_ratio`, what `tare compare` does with one session a side).

    pip install numpy scipy
    python3 bench/session_aa_simulation.py
"""
import os

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))


def thirds(v):
    n = len(v)
    return [v[i * n // 3:(i + 1) * n // 3] for i in range(3)]


def welch(a, b):
    return stats.ttest_ind(a, b, equal_var=False).pvalue


def batch(a, b):
    return stats.ttest_ind([p.mean() for p in thirds(a)], [p.mean() for p in thirds(b)],
                           equal_var=False).pvalue


def reffects(a, b):
    def comp(x):
        n = len(x)
        parts = thirds(x)
        tm = np.array([p.mean() for p in parts])
        msw = sum(((p - p.mean()) ** 2).sum() for p in parts) / (n - 3)
        k = n / 3
        msb = k * tm.var(ddof=1)
        if msb > msw:
            a_, b_ = msb / k, msw * (1 / k - 1 / n)
            se2, df = a_ - b_, (a_ - b_) ** 2 / (a_ ** 2 / 2 + b_ ** 2 / (n - 3))
        else:
            se2, df = msw / n, n - 3
        return x.mean(), se2 / x.mean() ** 2, df
    mx, vx, dx = comp(a)
    my, vy, dy = comp(b)
    se = np.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / dx + vy ** 2 / dy)
    return 2 * stats.t.sf(abs(np.log(my / mx)) / se, df)


def thirds_rule(a, b):
    def side(x):
        return x.mean(), np.var([p.mean() for p in thirds(x)], ddof=1) / x.mean() ** 2
    mx, vx = side(a)
    my, vy = side(b)
    se = np.sqrt(vx + vy)
    return 2 * stats.t.sf(abs(np.log(my / mx)) / se, 2)


def main():
    series = {
        "tare run, 800 runs": np.loadtxt(os.path.join(HERE, "data", "loop_800_runs.txt"))[:, 1],
        "speed modes, 150": np.loadtxt(os.path.join(HERE, "data", "loop_modes_150.txt")),
        "independent, 2%": 40 * (1 + 0.02 * np.random.default_rng(1).standard_normal(2000)),
    }
    rules = [("welch", welch), ("batch", batch), ("reffects", reffects), ("thirds", thirds_rule)]
    print(f"{'series':20} {'runs':>4} {'pairs':>5}  " + "  ".join(
        f"{r:>8} A/A +3% +10%" for r, _ in rules))
    for name, w in series.items():
        for n in (6, 12, 30):
            starts = range(0, len(w) - 2 * n - 2, 3)
            row = []
            for _, f in rules:
                rates = []
                for shift in (1.0, 1.03, 1.10):
                    hits = [f(w[s:s + n], w[s + n + 2:s + 2 * n + 2] * shift) < 0.05 for s in starts]
                    rates.append(100 * np.mean(hits))
                row.append(f"{rates[0]:5.1f}% {rates[1]:4.0f}% {rates[2]:4.0f}%")
            print(f"{name:20} {n:4d} {len(starts):5d}  " + "  ".join(f"{c:>21}" for c in row))


if __name__ == "__main__":
    main()
