#!/usr/bin/env python3
"""Scale of `tare serve` (issue 28): a store of 10,000 commits x 200 benchmarks, the time of
the dashboard's first page (goal <= 1 s) and of an upload of a 10,000-run result (goal <= 1 s).

    python3 bench/serve_scale.py [--commits 10000] [--benchmarks 200] [--tare target/debug/tare]

How the store is filled (the fast path): `tare history add` stores one real session of
BENCHMARKS benchmarks (3 runs each, made from tests/fixtures/results/plain.json) at a first
commit; then SQL run here, in SQLite, copies that session's rows to COMMITS - 1 more commits
(commits, sessions, headers, every summary of every metric and every run, the values scaled by
a random factor within 1%). `history add` of 10,000 files would measure JSON parsing, not the
server. The result: COMMITS x BENCHMARKS x 5 summaries and COMMITS x BENCHMARKS x 3 runs.

Then `tare serve` on that store: GET / (the first request after start, then the median of 5),
GET /api/v1/series, one series page (trend over the newest 200 commits with change-point
detection), a comparison of two commits, and POST /api/v1/results of one session of 100
benchmarks x 100 runs (10,000 runs) at a new commit. Prints one line per figure.
"""
import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seed_session(benchmarks, runs, name_prefix="b", started="2026-01-01T00:00:00Z", seed=1):
    with open(os.path.join(ROOT, "tests/fixtures/results/plain.json")) as f:
        s = json.load(f)
    b0 = s["benchmarks"][0]
    counted = [r for r in b0["runs"] if r.get("counted")]
    out = []
    for k in range(benchmarks):
        b = json.loads(json.dumps(b0))
        b["name"] = f"{name_prefix}{k:03d}"
        b["command"] = f"./bench --case {k}"
        rs = []
        for i in range(runs):
            r = dict(counted[i % len(counted)])
            r["index"] = i
            r.pop("round", None)
            rs.append(r)
        b["runs"] = rs
        out.append(b)
    s["benchmarks"] = out
    s["started_at"] = started
    s["seed"] = seed
    return s


def fill(store, tare, commits, benchmarks, tmp):
    seed = os.path.join(tmp, "seed.json")
    with open(seed, "w") as f:
        json.dump(seed_session(benchmarks, 3), f)
    subprocess.run([tare, "history", "--store", store, "add", seed, "--commit", "%040x" % 0x5CA1E0000000],
                   check=True, cwd=tmp, stdout=subprocess.DEVNULL)
    db = sqlite3.connect(store)
    db.executescript(f"""
    UPDATE commits SET time_unix = 1700000000, subject = 'commit 0' WHERE id = 1;
    WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {commits - 1})
      INSERT INTO commits (hash, parents, branch, time_unix, subject)
      SELECT printf('%040x', {0x5CA1E0000000} + i), '', 'main', 1700000000 + 60 * i, 'commit ' || i FROM k;
    INSERT INTO sessions (identity, commit_id, dirty, machine_id, started_at, started_unix, tare_version, method, kernel, os, source)
      SELECT 'scale|' || c.id, c.id, 0, s.machine_id, s.started_at, s.started_unix + c.id, s.tare_version, s.method, s.kernel, s.os, 'serve_scale'
      FROM commits c, sessions s WHERE s.id = 1 AND c.id > 1 ORDER BY c.id;
    INSERT INTO session_headers (session_id, header)
      SELECT se.id, h.header FROM sessions se, session_headers h WHERE h.session_id = 1 AND se.id > 1 ORDER BY se.id;
    INSERT INTO summaries (session_id, benchmark_id, metric_id, n, median, ci_low, ci_high, mean, stddev, min, max, multimodal, interfered, clean_median)
      SELECT se.id, s.benchmark_id, s.metric_id, s.n, s.median * f, s.ci_low * f, s.ci_high * f, s.mean * f, s.stddev, s.min * f, s.max * f, 0, 0, NULL
      FROM (SELECT id, 1.0 + (abs(random()) % 1000) / 100000.0 AS f FROM sessions WHERE id > 1 ORDER BY id) se
      CROSS JOIN (SELECT * FROM summaries WHERE session_id = 1) s;
    INSERT INTO runs (session_id, benchmark_id, idx, round, warmup, counted, termination, exit_code, signal, start_offset, wall_time, cpu_time, user_time, system_time, peak_memory, context_switches)
      SELECT se.id, r.benchmark_id, r.idx, r.round, r.warmup, r.counted, r.termination, r.exit_code, r.signal, r.start_offset, r.wall_time * se.f, r.cpu_time, r.user_time, r.system_time, r.peak_memory, r.context_switches
      FROM (SELECT id, 1.0 + (abs(random()) % 1000) / 100000.0 AS f FROM sessions WHERE id > 1 ORDER BY id) se
      CROSS JOIN (SELECT * FROM runs WHERE session_id = 1) r;
    """)
    db.commit()
    counts = [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
              for t in ("commits", "sessions", "benchmarks", "summaries", "runs")]
    db.close()
    return counts


def timed(url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        body = r.read()
        code = r.status
    return time.perf_counter() - t, code, body


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def load():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--benchmarks", type=int, default=200)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    ap.add_argument("--tare", default=os.path.join(target, "debug/tare"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tare-serve-scale-")
    server = None
    try:
        # A copy: a build in the same target directory cannot replace it mid-run.
        a.tare_given = a.tare
        shutil.copy(a.tare, os.path.join(tmp, "tare"))
        a.tare = os.path.join(tmp, "tare")
        store = os.path.join(tmp, "history.sqlite")
        t = time.perf_counter()
        counts = fill(store, a.tare, a.commits, a.benchmarks, tmp)
        print(f"load average {load():.1f} on {os.cpu_count()} CPUs; tare at {a.tare_given}")
        print(f"store: {counts[0]} commits, {counts[1]} sessions, {counts[2]} benchmarks, {counts[3]} summaries, "
              f"{counts[4]} runs, {os.path.getsize(store) / 1e9:.2f} GB, filled in {time.perf_counter() - t:.0f} s")
        token = subprocess.run([a.tare, "serve", "--store", store, "token", "new", "scale"], check=True,
                               capture_output=True, text=True).stdout.strip()
        server = subprocess.Popen([a.tare, "serve", "--store", store, "--listen", "127.0.0.1:0"],
                                  stderr=subprocess.PIPE, text=True)
        line = server.stderr.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            sys.exit(f"tare serve did not start: {line}")
        url = m.group(1)
        first, code, body = timed(url + "/")
        assert code == 200 and b"table id=\"series\"" in body
        rest = [timed(url + "/")[0] for _ in range(5)]
        print(f"GET / (first page, 50 of {a.benchmarks} series with newest value and alerts): "
              f"first request {first * 1e3:.0f} ms, then median of 5 {median(rest) * 1e3:.0f} ms ({len(body)} bytes)")
        api = [timed(url + "/api/v1/series?per_page=1000")[0] for _ in range(3)]
        print(f"GET /api/v1/series (all {a.benchmarks} wall_time series): median of 3 {median(api) * 1e3:.0f} ms")
        page = [timed(url + "/series/1/1/1")[0] for _ in range(3)]
        print(f"GET /series/1/1/1 (trend of the newest 200 of {a.commits} commits, change points): "
              f"median of 3 {median(page) * 1e3:.0f} ms")
        old, new = "%040x" % (0x5CA1E0000000 + a.commits - 2), "%040x" % (0x5CA1E0000000 + a.commits - 1)
        cmp = [timed(f"{url}/compare?old={old}&new={new}")[0] for _ in range(3)]
        print(f"GET /compare (two commits, {a.benchmarks} benchmarks, tare compare's verdicts): "
              f"median of 3 {median(cmp) * 1e3:.0f} ms")
        up = seed_session(100, 100, name_prefix="u", started="2027-01-01T00:00:00Z", seed=99)
        data = json.dumps(up).encode()
        dt, code, body = timed(f"{url}/api/v1/results?commit={'%040x' % 0xF00D}", data,
                               {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        r = json.loads(body)
        assert code == 201 and r["runs"] == 10_000, body
        print(f"POST /api/v1/results of one session of 100 benchmarks x 100 runs ({r['runs']} runs, "
              f"{len(data) / 1e6:.1f} MB of JSON) into that store: {dt * 1e3:.0f} ms")
        again, code, _ = timed(f"{url}/api/v1/results?commit={'%040x' % 0xF00D}", data,
                               {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        assert code == 200
        print(f"  the same upload again (read, parsed, checked, found stored; nothing written): {again * 1e3:.0f} ms")
        first, _, _ = timed(url + "/")
        print(f"GET / after the upload: {first * 1e3:.0f} ms")
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
