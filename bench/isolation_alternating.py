"""Per-run cost of isolation, before/after, next to BenchExec, in alternating blocks (so that
load from elsewhere hits every mode alike). Needs root and BenchExec (pip install benchexec).

    python3 bench/isolation_alternating.py BLOCKS TARE_BEFORE TARE_AFTER

Each block: 100 runs of /bin/true per tare mode (`tare suite exec --runs 100`, elapsed time of
the whole command / 100, start-up included), 20 runs per BenchExec mode (its Python API in this
process, start-up not counted). Prints the median and quartiles over blocks.
"""
import subprocess, time, statistics as s, logging, collections, sys
logging.disable(logging.CRITICAL)
from benchexec.runexecutor import RunExecutor
from benchexec import containerexecutor as ce
bx = RunExecutor(use_namespaces=True, dir_modes={"/": ce.DIR_READ_ONLY, "/tmp": ce.DIR_HIDDEN,
                 "/run": ce.DIR_HIDDEN, "/home": ce.DIR_HIDDEN}, network_access=False,
                 container_system_config=True)
bxp = RunExecutor(use_namespaces=False)
BINS = {"before": sys.argv[2], "after": sys.argv[3]}
d = collections.defaultdict(list)
def tare(bin, args, n=100):
    t0 = time.perf_counter()
    subprocess.run([BINS[bin], "suite", "exec", *args, "--runs", str(n), "--", "/bin/true"], stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1e3 / n
def bench(ex, n=20):
    t0 = time.perf_counter()
    for i in range(n):
        r = ex.execute_run(["/bin/true"], "/tmp/tare-bx-alternating.log")
        assert "walltime" in r, r
    return (time.perf_counter() - t0) * 1e3 / n
for i in range(int(sys.argv[1])):
    d["tare before --isolate"].append(tare("before", ["--isolate"]))
    d["tare after --isolate"].append(tare("after", ["--isolate"]))
    d["tare before --isolate --network"].append(tare("before", ["--isolate", "--network"]))
    d["tare after --isolate --network"].append(tare("after", ["--isolate", "--network"]))
    d["tare, no isolation"].append(tare("after", []))
    d["BenchExec container (--read-only-dir /)"].append(bench(bx))
    d["BenchExec --no-container"].append(bench(bxp))
for k, v in d.items():
    q = s.quantiles(v, n=4)
    print("%-42s median %6.2f ms/run  IQR %6.2f-%6.2f  (%d blocks)" % (k, s.median(v), q[0], q[2], len(v)))
