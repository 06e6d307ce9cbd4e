#!/usr/bin/env python3
"""A/A rate of the newest commit's judgment (issue 42): how often `tare history check` calls the
newest commit a regression when every commit is the same program.

Histories of identical commits are added to a store one commit at a time, as CI does, and
`tare history check` runs after each (`--metric wall_time` and `--metric cpu_time`): every commit
is judged as the tip in turn, against up to 10 commits before it (3 needed; the first 3 commits
of a history are not judged). A tip judged a regression is a false flag; at the one-sided level
α about α of the judgments should be. The count is read from check's lines
("newest commit …: regression: …"), whatever the alert it raised or matched.

Two sources of commits:
- synthetic: the fixture session (tests/fixtures/results/plain.json, 2 benchmarks) with its wall
  and CPU times scaled per commit by exp(N(0, σ)), σ = 2% (independent commits: the model's
  assumption holds; deterministic with --seed);
- real: `tare run` of a small shell loop, N runs per commit, on this machine (commit-to-commit
  spread as the machine gives it, drift and other load included).

Each α gets its own stores (the change points found at that α cut the baselines too).

    python3 bench/tip_aa.py synthetic [HISTORIES] [COMMITS]   # default 20 x 25
    python3 bench/tip_aa.py real [HISTORIES] [COMMITS] [RUNS] # default 4 x 22 x 10
Environment: TARE (default target/debug/tare), ALPHAS (default "0.01 0.05").
"""
import copy
import json
import math
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TARE = os.environ.get("TARE", os.path.join(ROOT, "target", "debug", "tare"))
ALPHAS = [float(a) for a in os.environ.get("ALPHAS", "0.01 0.05").split()]
METRICS = ["wall_time", "cpu_time"]
SCALED = {"wall_time": ["wall_time"], "cpu_time": ["cpu_time", "user_time", "system_time"]}
FIELDS = ["median", "median_ci_low", "median_ci_high", "mean", "stddev", "min", "max", "q1",
          "q3", "iqr", "p5", "p95"]
WORK = "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done"


def tare(*args, cwd):
    return subprocess.run([TARE, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})


def synthetic_session(base, h, i, rng, sigma=0.02):
    s = copy.deepcopy(base)
    s["started_at"] = "2026-10-%02dT%02d:%02d:00Z" % (1 + h, i // 60, i % 60)
    s["seed"] = 100000 * h + i
    for metric, names in SCALED.items():
        f = math.exp(rng.gauss(0.0, sigma))
        for b in s["benchmarks"]:
            for r in b["runs"]:
                for n in names:
                    r[n] *= f
            for n in names:
                m = b["summary"].get(n)
                if m:
                    for k in FIELDS:
                        m[k] *= f
    return s


def real_session(path, runs, cwd):
    o = tare("run", "--style", "none", "--runs", str(runs), "--shell", "-n", "loop",
             "--export-json", path, WORK, cwd=cwd)
    if o.returncode != 0:
        sys.exit(f"tare run failed: {o.stdout}{o.stderr}")


def commit_hash(h, i):
    return "%08x%032x" % ((h * 7919 + i * 2654435761) & 0xFFFFFFFF, 1000 * h + i)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "synthetic"
    real = mode == "real"
    histories = int(sys.argv[2]) if len(sys.argv) > 2 else (4 if real else 20)
    commits = int(sys.argv[3]) if len(sys.argv) > 3 else (22 if real else 25)
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    base = json.load(open(os.path.join(ROOT, "tests", "fixtures", "results", "plain.json")))
    flags = {(a, m): 0 for a in ALPHAS for m in METRICS}
    judged = {(a, m): 0 for a in ALPHAS for m in METRICS}
    with tempfile.TemporaryDirectory() as tmp:
        for h in range(histories):
            rng = random.Random(42 + h)
            for i in range(commits):
                f = os.path.join(tmp, f"h{h}-{i:03d}.json")
                if real:
                    real_session(f, runs, tmp)
                else:
                    json.dump(synthetic_session(base, h, i, rng), open(f, "w"))
                for a in ALPHAS:
                    store = os.path.join(tmp, f"h{h}-a{a}.sqlite")
                    o = tare("history", "--store", store, "add", f, "--commit",
                             commit_hash(h, i), cwd=tmp)
                    if o.returncode != 0:
                        sys.exit(f"history add failed: {o.stdout}{o.stderr}")
                    for m in METRICS:
                        o = tare("history", "--store", store, "check", "--metric", m,
                                 "--alpha", str(a), cwd=tmp)
                        if o.returncode not in (0, 1):
                            sys.exit(f"history check failed: {o.stdout}{o.stderr}")
                        out = o.stdout + o.stderr
                        for line in out.splitlines():
                            if line.startswith("judged the newest commit of "):
                                judged[(a, m)] += int(line.split()[5])
                        flags[(a, m)] += sum(": regression: " in line and "newest commit" in line
                                             for line in out.splitlines())
            print(f"history {h + 1}/{histories} done", file=sys.stderr)
    what = (f"real: `tare run` of a shell loop, {runs} runs a commit" if real
            else "synthetic: independent commits, 2% log-normal spread")
    print(f"{what}; {histories} histories x {commits} commits, "
          f"{len(base['benchmarks']) if not real else 1} benchmark(s) each")
    print(f"{'alpha':>6} {'metric':<10} {'judged':>7} {'flagged':>8} {'rate':>7}")
    for a in ALPHAS:
        for m in METRICS:
            j, k = judged[(a, m)], flags[(a, m)]
            print(f"{a:>6} {m:<10} {j:>7} {k:>8} {100.0 * k / max(j, 1):>6.1f}%")


if __name__ == "__main__":
    main()
