#!/usr/bin/env python3
"""Issue 47's check on a GPU machine, one prepared script (about 3 minutes):

1. per-run cost: 1000 x /bin/true through hyperfine -N, tare, tare without NVML
   (TARE_NVML_LIB=/nonexistent) and, where TARE_BASE names one, an older tare; rounds
   interleaved in a fresh random order, medians and per-round ratios to hyperfine;
2. tare with --energy on /bin/true: the sampler thread's cost, and short runs marked coarse;
3. an A/B of two CUDA workloads (bench/gpu/spin.cu at R and 1.1 R rounds) with --energy:
   time and GPU energy compared;
4. per-run GPU energy against the board's own counter read by NVML (pynvml) around 5
   back-to-back runs of the same workload, and against power x time;
5. `tare machine` (GPU facts, CPU speeds);
6. a 30M-add loop unpinned and with --cpus 1 (slow-mode runs flagged?).

    TARE=path [TARE_BASE=path] [HYPERFINE=path] python3 bench/gpu_check.py OUTDIR

Prints numbers; asserts nothing."""
import json, os, random, statistics, subprocess, sys, time

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/gpu_check"
os.makedirs(OUT, exist_ok=True)
TARE = os.environ.get("TARE", "./target/release/tare")
BASE = os.environ.get("TARE_BASE")
HF = os.environ.get("HYPERFINE", "hyperfine")
HERE = os.path.dirname(os.path.abspath(__file__))
# Which parts to run (GPU_CHECK_SECTIONS=1356, say, on a second pass), and which tools part 1
# times (GPU_CHECK_BASE=0 leaves out the older tare and --energy).
SECTIONS = os.environ.get("GPU_CHECK_SECTIONS", "123456")


def sh(cmd, **kw):
    print("$", cmd if isinstance(cmd, str) else " ".join(cmd), flush=True)
    try:
        return subprocess.run(cmd, shell=isinstance(cmd, str), text=True, capture_output=True, **kw)
    except OSError as e:
        return subprocess.CompletedProcess(cmd, 127, "", str(e))
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, str(e.stdout or ""), f"timed out: {e}")


def timed(argv, env=None):
    e = dict(os.environ)
    e.update(env or {})
    t = time.perf_counter()
    try:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e)
    except OSError as err:
        print("cannot run", argv[0], err)
    return time.perf_counter() - t


print(sh("nvidia-smi --query-gpu=name,driver_version,power.draw,clocks.sm --format=csv").stdout)
print("nproc", os.cpu_count(), "kernel", os.uname().release, flush=True)

# 1. per-run cost
N = int(os.environ.get("GPU_CHECK_RUNS", "1000"))
tools = {
    "hyperfine -N": ([HF, "-N", "--style", "none", "--runs", str(N), "/bin/true"], None),
    "tare": ([TARE, "run", "--style", "none", "--runs", str(N), "/bin/true"], None),
    "tare, no NVML": ([TARE, "run", "--style", "none", "--runs", str(N), "/bin/true"],
                      {"TARE_NVML_LIB": "/nonexistent"}),
    "tare --energy": ([TARE, "run", "--style", "none", "--energy", "--runs", str(N), "/bin/true"], None),
}
if os.environ.get("GPU_CHECK_BASE") == "0":
    del tools["tare --energy"]
    BASE = None
if BASE:
    tools["tare before (base)"] = ([BASE, "run", "--style", "none", "--runs", str(N), "/bin/true"], None)
times = {k: [] for k in tools}
for rnd in range(3 if "1" in SECTIONS else 0):
    order = list(tools)
    random.shuffle(order)
    for k in order:
        times[k].append(timed(*tools[k]))
print(f"\nper-run cost, {N} x /bin/true, whole invocation, 3 interleaved rounds:")
for k, ts in (times.items() if "1" in SECTIONS else []):
    ratios = [t / h for t, h in zip(ts, times["hyperfine -N"])]
    print(f"  {k:22s} {statistics.median(ts) / N * 1e6:8.1f} us/run   "
          f"x hyperfine: {statistics.median(ratios):.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})")
sys.stdout.flush()

# 2. short runs with --energy
r = sh(["true"]) if "2" not in SECTIONS else sh([TARE, "run", "--energy", "--runs", "20", "--style", "basic", "--export-json",
        f"{OUT}/short.json", "-n", "true", "-n", "sleep", "/bin/true", "sleep 0.01"])
print(r.stdout[-3000:], r.stderr[-1500:])

# 3. A/B of two CUDA workloads
spin = "/tmp/spin"
r = sh(["nvcc", "-O2", "-arch=sm_90", "-o", spin, os.path.join(HERE, "gpu/spin.cu")])
if r.returncode != 0:
    r = sh(["nvcc", "-O2", "-o", spin, os.path.join(HERE, "gpu/spin.cu")])
print(r.returncode, r.stdout, r.stderr[-1500:])
print("warm-up:", sh([spin, "1000"]).returncode)
R0 = 50_000_000
t0 = min(timed([spin, str(R0)]) for _ in range(2))
t1 = min(timed([spin, str(3 * R0)]) for _ in range(2))
per = max((t1 - t0) / (2 * R0), 1e-12)
R = int(min(max(0.8 / per, 1e7), 1e9))
print(f"calibration: {R0} rounds {t0:.3f} s, {2 * R0} rounds {t1:.3f} s -> R = {R} (~0.8 s of kernel)")
R11 = int(R * 1.1)
r = sh(["true"]) if "3" not in SECTIONS else sh([TARE, "run", "--energy", "--runs", os.environ.get("GPU_CHECK_AB_RUNS", "10"), "--style", "basic", "--export-json", f"{OUT}/ab.json",
        "-n", "base", "-n", "more10", f"{spin} {R}", f"{spin} {R11}"], timeout=150)
print(r.stdout[-4000:], r.stderr[-2000:])
r = sh([TARE, "compare", "--metric", "gpu_energy", "--fail-if-slower", "5%",
        f"{OUT}/ab.json", f"{OUT}/ab.json", "--allow-missing"])
try:
    doc = json.load(open(f"{OUT}/ab.json"))
except Exception as e:  # noqa
    doc = None
    print("no ab.json:", e)

# 4. per-run energy against the board's counter over back-to-back runs, and power x time
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    def counter():
        return pynvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0
    # wait for a fresh step, then 5 runs, then the step after
    def step_after():
        a = counter()
        while True:
            b = counter()
            if b != a:
                return b, time.perf_counter()
    e0, s0 = step_after()
    for _ in range(5):
        subprocess.run([spin, str(R)], stdout=subprocess.DEVNULL)
    e1, s1 = step_after()
    print(f"\nNVML directly: 5 runs of {R} rounds: {(e1 - e0) / 5:.1f} J a run "
          f"({(e1 - e0) / (s1 - s0):.1f} W over {s1 - s0:.2f} s, gaps included)")
except Exception as e:  # noqa
    print("pynvml check failed:", e)
if doc:
    for b in doc["benchmarks"]:
        runs = [x for x in b["runs"] if x["counted"]]
        js = [x["energy"]["gpus"][0]["joules"] for x in runs if (x.get("energy") or {}).get("gpus")]
        pw = [x["extra"]["environment"]["gpu"][0].get("power_w_after", 0) * x["wall_time"] for x in runs
              if x["extra"].get("environment", {}).get("gpu")]
        if js:
            print(f"tare {b['name']}: median {statistics.median(js):.1f} J a run (range {min(js):.1f}-{max(js):.1f}); "
                  f"power_after x wall median {statistics.median(pw) if pw else float('nan'):.1f} J; "
                  f"wall median {statistics.median(x['wall_time'] for x in runs):.3f} s")
    print("energy extra:", json.dumps(doc["extra"].get("energy")))
    print("comparisons:", json.dumps(doc["extra"].get("energy_comparisons")))

# 5. the machine
r = sh([TARE, "machine"])
print(r.stdout[-6000:], r.stderr[-1000:])

# 6. unsteady vCPUs: a 30M-add loop unpinned and on one CPU
with open("/tmp/loop.c", "w") as f:
    f.write("int main(void){volatile unsigned long x=0;"
            "for(unsigned long i=0;i<30000000UL;i++)x+=i;return (int)(x&1);}\n")
if sh(["cc", "-O1", "-o", "/tmp/loop", "/tmp/loop.c"]).returncode == 0:
    for extra in ([], ["--cpus", "1"]):
        r = sh([TARE, "run", "--runs", "40", "--style", "basic", *extra, "/tmp/loop"])
        print(r.stdout[-2500:], r.stderr[-1000:])
