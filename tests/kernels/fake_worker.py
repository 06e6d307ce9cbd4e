#!/usr/bin/env python3
"""A small worker for tare's tests, speaking docs/protocol.md version 1 from the spec alone.

Kernels: spin (param n: a loop of n additions; items = n per loop; m.checksum, none with
$FAKE_NO_CHECKSUM set), empty (nothing),
vanished (its timed region ignores `loops`, like a loop a compiler removed), jit (slower for the
first samples of each process, like a JIT warming up), failing (setup raises), levels (a
synthetic clock: every process sits at its own level, 0.9, 1.0 or 1.1 µs per loop in turn,
counted in the file $FAKE_LEVEL_FILE, times $FAKE_SCALE; samples within a process barely vary),
fades (a synthetic clock of 1 µs a loop for the first 18 samples after its setup: calibration
at --sample-time 1ms and the linearity check, then ns=0: samples the clock cannot resolve).

Misbehaviour for the tests, from FAKE_MODE (comma-separated):
  crash-run    exit 3 in the middle of the first `run`
  crash-second exit 3 at the first `run` of the second kernel set up in the process
  hang-setup   stop answering at the first `setup`
  hang-start   never say hello
  hang-greeting  say hello and one kernel, then stop answering
  trickle      say hello, then a new kernel every 0.2 s without end (never `ready`)
  endless      say hello, then new kernels as fast as it can without end
  garbage      print a line that is not a message instead of `ok` to the first `setup`
  version2     announce protocol=2
  long-line    send a 70 000-byte line as the first reply
  child        start a grandchild (sleep $FAKE_CHILD_SLEEP, default 300) that does not inherit the socket, before hello
  stdout       print chatter on stdout and stderr (not the protocol)
  other-loops  every sample runs and reports one loop more than asked
  approximate  say loops=approximate in hello (a harness that picks its own loop counts)
"""
import os
import socket
import subprocess
import sys
import time

MODE = set(filter(None, os.environ.get("FAKE_MODE", "").split(",")))
SAFE = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/,+")


def enc(s):
    return "".join(chr(b) if b in SAFE else "%%%02X" % b for b in str(s).encode())


def dec(s):
    out, i, b = bytearray(), 0, s.encode()
    while i < len(b):
        if b[i] == 0x25:
            out.append(int(b[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(b[i])
            i += 1
    return out.decode()


def msg(verb, **fields):
    return " ".join([verb] + ["%s=%s" % (k.replace("__", "."), enc(v)) for k, v in fields.items()])


KERNELS = {
    "spin": {"n": "200"},
    "empty": {},
    "vanished": {},
    "jit": {},
    "failing": {},
    "levels": {},
    "fades": {},
}


def main():
    fd = os.environ.pop("TARE_WORKER_FD", None)
    if fd is None:
        print("fake_worker: standalone mode is not implemented; run me under tare kernels")
        return 1
    sock = socket.socket(fileno=int(fd))
    os.set_inheritable(sock.fileno(), False)
    rfile = sock.makefile("r", encoding="utf-8", newline="\n")
    wfile = sock.makefile("w", encoding="utf-8", newline="\n")
    if "child" in MODE:
        subprocess.Popen(["sleep", os.environ.get("FAKE_CHILD_SLEEP", "300")], close_fds=True)
    if "stdout" in MODE:
        print("hello from the user's program")
        print("and its stderr", file=sys.stderr)
        sys.stdout.flush()

    def send(line):
        wfile.write(line + "\n")
        wfile.flush()

    if "hang-start" in MODE:
        time.sleep(300)
    if "long-line" in MODE:
        send("x" * 70000)
    if MODE & {"hang-greeting", "trickle", "endless"}:
        send(msg("hello", protocol=1, client="fake-python", version="0.1", lang="python"))
        send(msg("kernel", name="k0"))
        if "hang-greeting" in MODE:
            time.sleep(300)
        i = 1
        while True:
            send(msg("kernel", name="k%d" % i))
            i += 1
            if "trickle" in MODE:
                time.sleep(0.2)
    hello = dict(protocol=2 if "version2" in MODE else 1, client="fake-python",
                 version="0.1", lang="python")
    if "approximate" in MODE:
        hello["loops"] = "approximate"
    send(msg("hello", **hello))
    for name, params in KERNELS.items():
        send(msg("kernel", name=name, doc="the %s kernel" % name))
        for p, d in params.items():
            send(msg("param", kernel=name, name=p, default=d, doc="a parameter"))
    send("ready")
    current, params, samples_taken, jit_samples, since_setup, setups = None, {}, 0, 0, 0, 0
    level = 1.0
    first_setup, first_run = True, True
    for line in rfile:
        parts = line.rstrip("\n").split(" ")
        verb = parts[0]
        fields = dict((k, dec(v)) for k, v in (p.split("=", 1) for p in parts[1:]))
        if verb == "clock":
            # The cost is the least mean of 10 batches of 1000 reads: one batch's mean holds a
            # time slice another process took when the machine is loaded (a 4 ms preemption in
            # 10,000 reads made the cost 400 ns and the spin kernel's samples "too short").
            diffs = []
            costs = []
            for _ in range(10):
                t0 = time.perf_counter_ns()
                last = t0
                for _ in range(1000):
                    t = time.perf_counter_ns()
                    if t != last:
                        diffs.append(t - last)
                    last = t
                costs.append((last - t0) / 1000)
            cost = min(costs)
            send(msg("clock", resolution_ns=min(diffs) if diffs else 1, cost_ns="%.3f" % cost))
        elif verb == "setup":
            if "hang-setup" in MODE:
                time.sleep(300)
            if "garbage" in MODE and first_setup:
                first_setup = False
                send("Segmentation fault (core dumped), or so")
                continue
            first_setup = False
            k = fields.get("kernel")
            if current is not None:
                send(msg("error", message="a kernel is already set up"))
            elif k not in KERNELS:
                send(msg("error", message="unknown kernel %s" % k))
            elif k == "failing":
                send(msg("error", message="setup of failing raised ValueError: on purpose"))
            else:
                params = dict(KERNELS[k])
                bad = [p for p in fields if p.startswith("p.") and p[2:] not in params]
                if bad:
                    send(msg("error", message="unknown parameter %s" % bad[0][2:]))
                    continue
                for p in fields:
                    if p.startswith("p."):
                        params[p[2:]] = fields[p]
                current = k
                since_setup = 0
                setups += 1
                if k == "levels":
                    path = os.environ["FAKE_LEVEL_FILE"]
                    try:
                        with open(path) as f:
                            count = int(f.read() or "0")
                    except FileNotFoundError:
                        count = 0
                    with open(path, "w") as f:
                        f.write(str(count + 1))
                    level = [0.9, 1.0, 1.1][count % 3] * float(os.environ.get("FAKE_SCALE", "1"))
                send("ok")
        elif verb == "run":
            loops, reps = int(fields["loops"]), int(fields["reps"])
            if os.environ.get("FAKE_LOOPS_LOG"):  # every run request's loops, one a line
                with open(os.environ["FAKE_LOOPS_LOG"], "a") as f:
                    f.write("%d\n" % loops)
            if "other-loops" in MODE:
                loops += 1
            if current is None:
                send(msg("error", message="nothing is set up"))
                continue
            for _ in range(reps):
                if "crash-run" in MODE and first_run:
                    os._exit(3)
                if "crash-second" in MODE and setups == 2:
                    os._exit(3)
                extra = {}
                if current == "spin":
                    n = int(params["n"])
                    c0 = time.process_time_ns()
                    t0 = time.perf_counter_ns()
                    acc = 0
                    for _ in range(loops):
                        acc = 0
                        for i in range(n):
                            acc += i
                    t1 = time.perf_counter_ns()
                    c1 = time.process_time_ns()
                    extra = {"cpu_ns": c1 - c0, "items": n * loops, "m__checksum": acc}
                    if os.environ.get("FAKE_NO_CHECKSUM"):
                        del extra["m__checksum"]
                elif current == "empty":
                    t0 = time.perf_counter_ns()
                    for _ in range(loops):
                        pass
                    t1 = time.perf_counter_ns()
                elif current == "vanished":
                    t0 = time.perf_counter_ns()
                    t1 = time.perf_counter_ns()
                elif current == "fades":
                    t0 = 0
                    t1 = loops * 1000 if since_setup < 18 else 0
                    since_setup += 1
                elif current == "levels":
                    t0 = 0
                    t1 = int(loops * 1000 * level * (1 + 0.001 * (samples_taken % 3)))
                elif current == "jit":
                    slow = 4 if jit_samples < 12 else 1
                    jit_samples += 1
                    t0 = time.perf_counter_ns()
                    for _ in range(loops * slow):
                        sum(range(50))
                    t1 = time.perf_counter_ns()
                samples_taken += 1
                send(msg("sample", loops=loops, ns=t1 - t0, **extra))
            first_run = False
            send("done")
        elif verb == "teardown":
            if current is None:
                send(msg("error", message="nothing is set up"))
            else:
                current = None
                send("ok")
        elif verb == "exit":
            send("bye")
            return 0
        else:
            send(msg("error", message="unknown verb %s" % verb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
