#!/usr/bin/env python3
"""Does a worker's time per loop depend on the loops per sample? Speaks tare's worker protocol
(docs/protocol.md) to fresh processes of one worker command, one at a time; in each, every
kernel gets requests of L loops for each L given, cycled request by request (so a machine's
slow and fast phases fall on every L alike). Per process and L the mean time per loop; then per
kernel and L the mean over processes of log(value / the process's value at the first L), with
its standard error: a cost each sample carries whatever its loops shows as a negative value at
larger L.

    python3 bench/loops_per_sample.py [--loops 100,200] [--processes 32] [--cycles 6] \\
        -- tare native-worker pytest-benchmark ./suite

docs/native-workers.md ("Each side's loops") has what it gave for the pytest-benchmark suite.
"""
import argparse
import math
import os
import socket
import statistics as st
import subprocess
import tempfile
import urllib.parse


class Worker:
    """One worker process, spoken to over the socketpair tare would give it."""

    def __init__(self, argv, session_dir):
        ours, theirs = socket.socketpair()
        env = dict(os.environ, TARE_WORKER_FD=str(theirs.fileno()), TARE_SESSION_DIR=session_dir)
        self.proc = subprocess.Popen(argv, env=env, pass_fds=[theirs.fileno()],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()
        self.sock, self.lines = ours, ours.makefile("r")
        self.kernels = []
        while True:
            verb, fields = self.read()
            if verb == "kernel":
                self.kernels.append(fields["name"])
            elif verb == "ready":
                break
            elif verb == "":
                raise SystemExit(f"{argv[0]}: the worker closed the connection before 'ready'")

    def read(self):
        words = self.lines.readline().rstrip("\n").split(" ")
        fields = {}
        for w in words[1:]:
            k, _, v = w.partition("=")
            fields[k] = urllib.parse.unquote(v)
        return words[0], fields

    def ask(self, line, expect="ok"):
        self.sock.sendall((line + "\n").encode())
        verb, fields = self.read()
        if verb != expect:
            raise SystemExit(f"'{line}': the worker said {verb} {fields}")

    def run(self, loops, reps):
        """Time per loop (ns) of each of `reps` samples of `loops` loops (each by its own count)."""
        self.sock.sendall(f"run loops={loops} reps={reps}\n".encode())
        out = []
        while True:
            verb, fields = self.read()
            if verb == "sample":
                out.append(int(fields["ns"]) / int(fields["loops"]))
            elif verb == "done":
                return out
            else:
                raise SystemExit(f"run: the worker said {verb} {fields}")

    def exit(self):
        self.ask("exit", expect="bye")
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", default="100,200", help="loops per sample, comma-separated")
    ap.add_argument("--processes", type=int, default=32)
    ap.add_argument("--cycles", type=int, default=6, help="requests of each L per kernel and process")
    ap.add_argument("--reps", type=int, default=5, help="samples a request")
    ap.add_argument("worker", nargs="+", help="the worker command")
    a = ap.parse_args()
    ls = [int(x) for x in a.loops.split(",")]
    d = {}  # kernel -> L -> [log(value / value at ls[0])]
    with tempfile.TemporaryDirectory() as session:
        for p in range(a.processes):
            w = Worker(a.worker, session)
            for k in w.kernels:
                w.ask(f"setup kernel={k}")
                # Not counted: one request first, so a harness that aims its own counts from the
                # last sample's pace (the native workers) has one in every process, as tare's
                # calibration gives it.
                w.run(ls[0], a.reps)
                by = {n: [] for n in ls}
                order = ls if p % 2 == 0 else ls[::-1]
                for _ in range(a.cycles):
                    for n in order:
                        by[n] += w.run(n, a.reps)
                w.ask("teardown")
                base = st.mean(by[ls[0]])
                for n in ls[1:]:
                    d.setdefault(k, {}).setdefault(n, []).append(math.log(st.mean(by[n]) / base))
            w.exit()
    for k, per in d.items():
        cells = []
        for n, xs in per.items():
            se = st.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
            cells.append(f"{n} against {ls[0]} loops: {100 * st.mean(xs):+.1f}% ± {100 * se:.1f}%")
        print(f"{k}: " + "; ".join(cells) + f" ({a.processes} processes)")


if __name__ == "__main__":
    main()
