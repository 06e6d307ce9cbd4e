#!/usr/bin/env python3
"""On the same processes, the process-level statistic before issue 34's change (a bootstrap of
the ratio of MEDIANS of per-process medians) beside the one now (ratio of MEANS), for every
comparison in `tare kernels` JSON files (e.g. those bench/kernels_aa.sh keeps with OUT=dir).
Plain scipy percentile intervals (5000 resamples) — tare's own, expanded, interval is printed
last — and Mann–Whitney and Welch p on the per-process medians. "EXCL1": the interval
excludes 1.

    python3 bench/levels_before_after.py DIR/*.json
"""
import json, sys, glob
import numpy as np, scipy.stats as st
def stat(f):
    return lambda x, y, axis=-1: f(y, axis=axis) / f(x, axis=axis)
for path in sys.argv[1:]:
    try: v = json.load(open(path))
    except Exception: continue
    bs = v["benchmarks"]
    for c in v["comparisons"]:
        m = [np.array([i["median"] for i in bs[k]["extra"]["invocations"] if i.get("median") and not i.get("error")]) for k in (c["reference"], c["candidate"])]
        if min(len(m[0]), len(m[1])) < 2:
            print(f"{path.split('/')[-1]} {bs[c['candidate']]['name']}: {len(m[0])}/{len(m[1])} processes"); continue
        out = []
        for name, f in (("medians", np.median), ("means", np.mean)):
            r = st.bootstrap((m[0], m[1]), stat(f), vectorized=True, method="percentile", n_resamples=5000, random_state=1).confidence_interval
            out.append(f"{name} {f(m[1])/f(m[0]):.3f} [{r.low:.3f}, {r.high:.3f}]{' EXCL1' if r.low > 1 or r.high < 1 else ''}")
        mw = st.mannwhitneyu(m[0], m[1]).pvalue; we = st.ttest_ind(m[0], m[1], equal_var=False).pvalue
        print(f"{path.split('/')[-1]} {bs[c['candidate']]['name']} {len(m[0])}/{len(m[1])}: " + "; ".join(out) + f"; MW p {mw:.3f}, Welch p {we:.3f}; tare: {c['verdict']} {c['ratio']:.3f} [{c['ratio_ci_low']:.3f}, {c['ratio_ci_high']:.3f}]")
