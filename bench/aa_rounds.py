#!/usr/bin/env python3
"""Per-round look at `tare kernels` sessions (their --export-json files), for A/A studies.

For each comparison: the ratio and raw p tare gave, the mean per-round log ratio
d = ln(candidate) - ln(reference) split by which side's process ran first in the round
(a position effect shows as a difference between the two), and each side's median loops per
sample (a per-side calibration shows as a difference there). Then, over all files, how many
raw p-values fell below 0.05 and 0.01; and per benchmark (name without its program), over the
sessions: the variance of z = mean d / its standard error (about 1 where nothing is fixed for a
side within a session; docs/native-workers.md "Each side's loops"), and the correlation of the
session's mean d with the log of its loop ratio (candidate / reference).

A benchmark changed on purpose is left out of these for the files after --changed NAME
(repeatable): `aa_rounds.py aa.*.json --changed test_hash slower.*.json`.

    python3 bench/aa_rounds.py session1.json session2.json ...
"""
import json
import math
import statistics as st
import sys


def side(bench):
    """round -> (process mean, start of its first sample), and the median loops per sample."""
    round_of = {i["index"]: i["round"] for i in bench["extra"]["invocations"]}
    mean = {i["round"]: i["mean"] for i in bench["extra"]["invocations"]}
    start, loops = {}, []
    for r in bench["runs"]:
        s = r["extra"]["sample"]
        rd = round_of.get(s["invocation"])
        if rd is None:
            continue
        start[rd] = min(start.get(rd, math.inf), r["start_offset"])
        if not r.get("warmup"):
            loops.append(s["loops"])
    return mean, start, (st.median(loops) if loops else 0)


def main(args):
    changed, paths = set(), []
    it = iter(args)
    for a in it:
        if a == "--changed":
            changed.add(next(it))
        else:
            paths.append((a, frozenset(changed)))
    ps = []
    per_bench = {}  # benchmark -> [(z, log loop ratio, mean d)]
    for path, changed in paths:
        v = json.load(open(path))
        sides = {b["name"]: side(b) for b in v["benchmarks"]}
        for c in v["comparisons"]:
            (ma, sa, la), (mb, sb, lb) = sides[c["reference_name"]], sides[c["candidate_name"]]
            first = {True: [], False: []}
            for rd in ma:
                if rd in mb and rd in sa and rd in sb:
                    first[sa[rd] < sb[rd]].append(math.log(mb[rd] / ma[rd]))
            d = first[True] + first[False]
            bench = c["candidate_name"].rsplit("/", 1)[0]
            if len(d) > 2 and st.stdev(d) > 0 and la > 0 and lb > 0 and bench not in changed:
                z = st.mean(d) / (st.stdev(d) / math.sqrt(len(d)))
                per_bench.setdefault(bench, []).append((z, math.log(lb / la), st.mean(d)))
            m = lambda x: f"{st.mean(x):+.3f}" if x else "   -  "
            p = c.get("p_value")
            if p is not None:
                ps.append(p)
            print(
                f"{path}: {c['candidate_name']}: {c['ratio']:.3f} p {p if p is None else round(p, 4)}"
                f" | reference first {len(first[True])} d {m(first[True])}"
                f", candidate first {len(first[False])} d {m(first[False])}"
                f" | loops {la:.0f} / {lb:.0f}"
            )
    if ps:
        below = lambda a: sum(p < a for p in ps)
        print(f"raw p < 0.05: {below(0.05)} of {len(ps)}; < 0.01: {below(0.01)}")
    for bench, rows in sorted(per_bench.items()):
        if len(rows) < 3:
            continue
        zs, lr, md = zip(*rows)
        line = f"{bench}: {len(rows)} sessions, variance of z {st.variance(zs):.2f}"
        if st.pstdev(lr) > 0 and st.pstdev(md) > 0:
            line += f", r(log loop ratio, mean d) {st.correlation(lr, md):+.2f}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
