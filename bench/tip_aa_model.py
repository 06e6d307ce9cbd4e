#!/usr/bin/env python3
"""Why the newest-commit judgment flagged identical commits above α on real runs (issue 42), and
what widening it by the tip's own noise does: sessions of a shell loop measured with `tare run`
(H histories x C commits, 10 runs each), then every commit from the 4th judged offline against
up to 10 before it by the prediction interval on logs (`stats::next_value`), without and with
`own_noise` (the tip's 95% median interval half-width in logs, squared, less the baseline
sessions' mean, when larger; `store::detect::own_noise`). Prints each history's lag-1
autocorrelation of its log values (sessions are not exchangeable when it is well above 0) and
the flag counts. No change-point cuts (the CLI's numbers are bench/tip_aa.py's).

    python3 bench/tip_aa_model.py [H] [C]     # default 12 x 30; TARE as in tip_aa.py
"""
import json, math, os, subprocess, sys, tempfile
from collections import defaultdict
from scipy import stats

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TARE = os.environ.get("TARE", os.path.join(ROOT, "target", "debug", "tare"))
WORK = "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done"


def sessions(h, c, tmp):
    out = defaultdict(list)
    p = os.path.join(tmp, "s.json")
    for k in range(h):
        for _ in range(c):
            subprocess.run([TARE, "run", "--style", "none", "--runs", "10", "--shell", "-n", "loop",
                            "--export-json", p, WORK], cwd=tmp, capture_output=True, check=True)
            b = json.load(open(p))["benchmarks"][0]["summary"]
            out[k].append({m: (b[m]["median"], b[m]["median_ci_low"], b[m]["median_ci_high"])
                           for m in ("wall_time", "cpu_time")})
    return out


def var(v):
    return ((math.log(v[2]) - math.log(v[1])) / 3.92) ** 2


def main():
    h = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    c = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    with tempfile.TemporaryDirectory() as tmp:
        hist = sessions(h, c, tmp)
    for m in ("wall_time", "cpu_time"):
        ac = []
        for rs in hist.values():
            lv = [math.log(r[m][0]) for r in rs]
            mu = sum(lv) / len(lv)
            d = [x - mu for x in lv]
            ac.append(sum(d[i] * d[i + 1] for i in range(len(d) - 1)) / sum(x * x for x in d))
        print(m, "lag-1 autocorrelation:", " ".join(f"{a:+.2f}" for a in ac))
        for alpha in (0.01, 0.05):
            for own in (False, True):
                n = f = 0
                for rs in hist.values():
                    for i in range(3, len(rs)):
                        lo = max(0, i - 10)
                        lb = [math.log(r[m][0]) for r in rs[lo:i]]
                        k = len(lb)
                        mu = sum(lb) / k
                        s2 = sum((x - mu) ** 2 for x in lb) / (k - 1)
                        e = 0.0
                        if own:
                            e = max(0.0, var(rs[i][m]) - sum(var(r[m]) for r in rs[lo:i]) / k)
                        t = (math.log(rs[i][m][0]) - mu) / math.sqrt(s2 * (1 + 1 / k) + e)
                        n += 1
                        f += stats.t.sf(t, k - 1) < alpha
                print(f"  alpha {alpha} {'with own noise' if own else 'before':<15} {f:>3}/{n} = {100 * f / n:.1f}%")


if __name__ == "__main__":
    main()
