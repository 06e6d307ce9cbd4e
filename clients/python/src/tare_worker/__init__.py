"""tare_worker: the Python client of the tare worker protocol, version 1 (docs/protocol.md).

Register kernels with the ``kernel`` decorator, then call ``tare_worker.main()``. Started by
``tare kernels`` (``TARE_WORKER_FD`` set) the program obeys the master over that socket; run
directly it measures each kernel quickly and prints one line per kernel (standalone mode).

    import tare_worker

    @tare_worker.kernel(size=256, radius=3)
    class blur:
        def setup(self, size, radius):      # parameters arrive converted to the defaults' types
            ...
            tare_worker.bytes_per_loop(size * size * 8)
        def run(self, loops):                # the timed region: loop yourself ...
            for _ in range(loops):
                ...
            tare_worker.metric("checksum", ...)

    @tare_worker.kernel()
    def empty():                             # ... or a function: the body of one loop
        tare_worker.black_box(None)

    tare_worker.main()

This library holds no policy (loops, samples, warm-up are tare's) and never writes protocol
text to stdout. Pure Python, standard library only.
"""

import itertools
import math
import os
import re
import socket
import statistics
import sys
import time

__version__ = "0.1.0"
__all__ = [
    "kernel",
    "black_box",
    "metric",
    "bytes_per_loop",
    "items_per_loop",
    "KernelError",
    "main",
    "run",
    "percent_encode",
    "percent_decode",
    "clock_measure",
]

MAX_LINE = 65536
_NAME = re.compile(r"[A-Za-z0-9_./-]+\Z")
_KEY = re.compile(r"[a-z0-9_.-]+\Z")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/,+")


class KernelError(Exception):
    """Raise from a stage to fail it with a message (any exception works the same way)."""


class _ProtocolError(Exception):
    pass


# ---------- codec ----------


def percent_encode(value):
    """Percent-encodes a str (as UTF-8) or bytes: bytes outside the protocol's set become %XX."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    return "".join(chr(b) if b in _UNRESERVED else "%%%02X" % b for b in value)


def percent_decode(text):
    """Decodes %XX escapes (either hex case) to bytes; raises ValueError on a bad escape."""
    raw = text.encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == 0x25:  # '%'
            pair = raw[i + 1 : i + 3]
            if len(pair) != 2 or not all(chr(h) in "0123456789abcdefABCDEF" for h in pair):
                raise ValueError("bad percent-encoding in %r" % text)
            out.append(int(pair, 16))
            i += 3
        else:
            out.append(c)
            i += 1
    return bytes(out)


def _line(verb, *fields):
    parts = [verb]
    for key, value in fields:
        if value is None:
            continue
        if isinstance(value, float):
            value = _number(value)
        parts.append("%s=%s" % (key, percent_encode(str(value))))
    return " ".join(parts) + "\n"


def _number(v):
    """A finite float in JSON number syntax, shortest round-trip form (integers without '.0')."""
    if v == int(v) and abs(v) < 2**53:
        return str(int(v))
    return repr(float(v))


def _parse(line):
    """Splits one request line into (verb, {key: decoded str})."""
    if not line:
        raise _ProtocolError("empty line")
    parts = line.split(" ")
    verb = parts[0]
    if not _KEY.match(verb):
        raise _ProtocolError("malformed verb")
    fields = {}
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        if not eq:
            raise _ProtocolError("malformed field (expected key=value)")
        if not _KEY.match(key):
            raise _ProtocolError("malformed field key")
        if key in fields:
            raise _ProtocolError("repeated key")
        try:
            fields[key] = percent_decode(value).decode("utf-8")
        except ValueError:
            raise _ProtocolError("bad percent-encoding") from None
    return verb, fields


# ---------- helpers for kernel code ----------

_sink = None


def black_box(value):
    """Returns value, after storing it where the runtime must assume it is read.

    CPython does not remove dead code, so passing a result here is what keeps it computed on
    other implementations (PyPy's JIT could drop an unused pure computation; a store to a
    module global it cannot prove unread keeps it)."""
    global _sink
    _sink = value
    return value


class _Current:
    """What the kernel running now reports: throughput counts and this sample's metrics."""

    def __init__(self):
        self.bytes_per_loop = 0.0
        self.items_per_loop = 0.0
        self.metrics = {}


_current = _Current()


def metric(name, value):
    """Records a named metric for the current sample (sent as m.<name>); finite numbers only."""
    if not _KEY.match(name):
        raise ValueError("metric name %r must match [a-z0-9_.-]+" % name)
    value = float(value)
    if math.isfinite(value):
        _current.metrics[name] = value


def bytes_per_loop(n):
    """Bytes one loop processes; samples carry bytes = n x loops (throughput)."""
    _current.bytes_per_loop = float(n)


def items_per_loop(n):
    """Items one loop processes; samples carry items = n x loops."""
    _current.items_per_loop = float(n)


# ---------- registry ----------


class _Param:
    def __init__(self, name, default):
        self.name = name
        self.default = default
        self.kind = type(default)

    def convert(self, kernel, text):
        try:
            if self.kind is bool:
                low = text.lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError(text)
            if self.kind in (int, float):
                v = self.kind(text)
                if self.kind is float and not math.isfinite(v):
                    raise ValueError(text)
                return v
            return text
        except ValueError:
            raise KernelError(
                "parameter %s=%s of kernel %s is not a%s %s"
                % (self.name, text, kernel, "n" if self.kind is int else "", self.kind.__name__)
            ) from None

    def text(self):
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        if isinstance(self.default, float):
            return _number(self.default)
        return str(self.default)


class _Kernel:
    def __init__(self, name, doc, params, target):
        self.name = name
        self.doc = doc
        self.params = params  # list of _Param
        self.target = target  # a class (stages as methods) or a function (the body)


_kernels = {}


def kernel(name=None, doc=None, **params):
    """Registers a kernel. Keyword arguments are its parameters with their defaults (int, float,
    bool or str; values from tare are converted to the default's type).

    On a class: ``setup(self, **params)``, ``init(self)`` before each repetition (untimed;
    once per sample of N loops, not before every loop), ``run(self, loops)`` (the timed loop)
    or ``body(self)`` (one loop; the client loops), ``teardown(self)``; all but run/body
    optional. State of its own for every loop (a body that sorts in place): ``init_each(self)``
    returns one loop's input, untimed, and ``body_each(self, x)`` is the loop on it; the client
    prepares ``each_batch`` inputs (a class attribute, default 8), then times the loops over
    them, batch after batch (as Criterion's iter_batched), a sample the sum of its batches. On a function: the function is the body of
    one loop, called with the parameters as keyword arguments (without any when it has none).
    """

    def register(target):
        kname = name or target.__name__
        if not _NAME.match(kname):
            raise ValueError("kernel name %r must match [A-Za-z0-9_./-]+" % kname)
        if kname in _kernels:
            raise ValueError("kernel %r is registered twice" % kname)
        for p in params:
            if not _NAME.match(p):
                raise ValueError("parameter name %r of kernel %s must match [A-Za-z0-9_./-]+" % (p, kname))
        if isinstance(target, type) and not (
            hasattr(target, "run") or hasattr(target, "body") or hasattr(target, "body_each")
        ):
            raise TypeError("kernel %s: the class needs a run(self, loops), body(self) or body_each(self, x) method" % kname)
        if isinstance(target, type) and hasattr(target, "body_each") != hasattr(target, "init_each"):
            raise TypeError("kernel %s: init_each(self) and body_each(self, x) go together" % kname)
        text = doc
        if text is None and target.__doc__:
            text = target.__doc__.strip().splitlines()[0]
        _kernels[kname] = _Kernel(kname, text, [_Param(k, v) for k, v in params.items()], target)
        return target

    return register


class _Active:
    """A kernel set up: its instance (or body function) and parameter values."""

    def __init__(self, k, values):
        global _current
        self.k = k
        _current = _Current()
        converted = {p.name: p.convert(k.name, values[p.name]) for p in k.params}
        self.params = converted
        if isinstance(k.target, type):
            self.obj = k.target()
            setup = getattr(self.obj, "setup", None)
            if setup is not None:
                setup(**converted)
            self.init = getattr(self.obj, "init", None)
            self.run_fn = getattr(self.obj, "run", None)
            self.body = getattr(self.obj, "body", None)
            self.init_each = getattr(self.obj, "init_each", None)
            self.body_each = getattr(self.obj, "body_each", None)
            self.each_batch = max(1, int(getattr(self.obj, "each_batch", 8)))
            self.teardown_fn = getattr(self.obj, "teardown", None)
        else:
            self.obj = None
            self.init = None
            self.run_fn = None
            self.body_each = None
            fn = k.target
            self.body = (lambda: fn(**converted)) if converted else fn
            self.teardown_fn = None

    def rep(self, loops, with_cpu):
        """One repetition: init (untimed), then the timed loop. Returns (ns, cpu_ns)."""
        _current.metrics = {}
        if self.init is not None:
            self.init()
        clock = time.perf_counter_ns
        if self.body_each is not None:
            return self._rep_each(loops, with_cpu)
        c0 = time.process_time_ns() if with_cpu else 0
        if self.run_fn is not None:
            run_fn = self.run_fn
            t0 = clock()
            run_fn(loops)
            t1 = clock()
        else:
            body = self.body
            repeat = itertools.repeat
            t0 = clock()
            for _ in repeat(None, loops):
                body()
            t1 = clock()
        cpu = time.process_time_ns() - c0 if with_cpu else None
        return t1 - t0, cpu

    def _rep_each(self, loops, with_cpu):
        """Batches of init_each (untimed), then body_each over them (timed): (ns, cpu_ns) summed."""
        clock, cpu_clock = time.perf_counter_ns, time.process_time_ns
        init_each, body_each, batch = self.init_each, self.body_each, self.each_batch
        total = total_cpu = 0
        done = 0
        while done < loops:
            b = min(batch, loops - done)
            inputs = [init_each() for _ in range(b)]
            c0 = cpu_clock() if with_cpu else 0
            t0 = clock()
            for x in inputs:
                body_each(x)
            t1 = clock()
            if with_cpu:
                total_cpu += cpu_clock() - c0
            total += t1 - t0
            done += b
        return total, (total_cpu if with_cpu else None)

    def teardown(self):
        if self.teardown_fn is not None:
            self.teardown_fn()


def _one_line(exc):
    text = str(exc) or type(exc).__name__
    if not isinstance(exc, KernelError) and type(exc).__name__ not in text:
        text = "%s: %s" % (type(exc).__name__, text)
    return " ".join(text.split())


def clock_measure():
    """(resolution_ns, cost_ns) of time.perf_counter_ns, measured now for about 10 ms."""
    clock = time.perf_counter_ns
    start = t = clock()
    reads = 0
    while t - start < 5_000_000:
        for _ in range(64):
            t = clock()
        reads += 64
    cost = (t - start) / reads
    best = None
    prev = start = clock()
    while prev - start < 5_000_000:
        now = clock()
        d = now - prev
        if d > 0 and (best is None or d < best):
            best = d
        prev = now
    return float(best or 0), float(cost)


# ---------- worker mode ----------


def _serve(sock):
    out = sock.sendall
    reader = sock.makefile("rb")
    out(_line("hello", ("protocol", 1), ("client", "tare-worker-python"), ("version", __version__), ("lang", "python")).encode())
    for k in _kernels.values():
        out(_line("kernel", ("name", k.name), ("doc", k.doc)).encode())
        for p in k.params:
            out(_line("param", ("kernel", k.name), ("name", p.name), ("default", p.text())).encode())
    out(b"ready\n")
    active = None
    while True:
        raw = reader.readline(MAX_LINE)
        if not raw:
            return 0  # EOF: tare went away
        if not raw.endswith(b"\n"):
            if len(raw) < MAX_LINE:
                return 0  # EOF inside a line
            while raw and not raw.endswith(b"\n"):  # discard the rest of the long line
                raw = reader.readline(MAX_LINE)
            out(_line("error", ("message", "request line longer than 65536 bytes")).encode())
            continue
        try:
            verb, f = _parse(raw[:-1].decode("utf-8"))
        except (_ProtocolError, UnicodeDecodeError) as e:
            out(_line("error", ("message", "malformed request: %s" % e)).encode())
            continue
        if verb == "exit":
            out(b"bye\n")
            return 0
        if verb == "clock":
            res, cost = clock_measure()
            out(_line("clock", ("resolution_ns", res), ("cost_ns", cost)).encode())
        elif verb == "setup":
            active, reply = _setup(active, f)
            out(reply.encode())
        elif verb == "run":
            _run(active, f, out)
        elif verb == "teardown":
            if active is None:
                out(_line("error", ("message", "teardown with no kernel set up")).encode())
                continue
            done, active = active, None
            try:
                done.teardown()
                out(b"ok\n")
            except Exception as e:  # user code: any failure is an error reply
                out(_line("error", ("message", _one_line(e))).encode())
        else:
            out(_line("error", ("message", "unknown request '%s'" % verb)).encode())


def _setup(active, f):
    if active is not None:
        return active, _line("error", ("message", "kernel %s is already set up; send teardown first" % active.k.name))
    name = f.get("kernel")
    if name is None:
        return None, _line("error", ("message", "setup needs kernel=<name>"))
    k = _kernels.get(name)
    if k is None:
        return None, _line("error", ("message", "unknown kernel '%s'" % name))
    values = {p.name: p.text() for p in k.params}
    for key, value in f.items():
        if key.startswith("p."):
            if key[2:] not in values:
                return None, _line("error", ("message", "kernel %s has no parameter '%s'" % (name, key[2:])))
            values[key[2:]] = value
    try:
        return _Active(k, values), "ok\n"
    except Exception as e:
        return None, _line("error", ("message", _one_line(e)))


def _positive(f, key):
    text = f.get(key, "")
    if not text.isdigit() or int(text) < 1:
        raise _ProtocolError("run needs %s=<integer >= 1>" % key)
    return int(text)


def _run(active, f, out):
    if active is None:
        out(_line("error", ("message", "run with no kernel set up; send setup first")).encode())
        return
    try:
        loops, reps = _positive(f, "loops"), _positive(f, "reps")
    except _ProtocolError as e:
        out(_line("error", ("message", str(e))).encode())
        return
    for _ in range(reps):
        try:
            ns, cpu = active.rep(loops, True)
        except Exception as e:
            out(_line("error", ("message", _one_line(e))).encode())
            return
        fields = [("loops", loops), ("ns", ns), ("cpu_ns", cpu)]
        if _current.bytes_per_loop > 0:
            fields.append(("bytes", _current.bytes_per_loop * loops))
        if _current.items_per_loop > 0:
            fields.append(("items", _current.items_per_loop * loops))
        fields.extend(("m." + k, v) for k, v in _current.metrics.items())
        out(_line("sample", *fields).encode())
    out(b"done\n")


def _worker(fdtext):
    try:
        fd = int(fdtext)
        os.set_inheritable(fd, False)
        sock = socket.socket(fileno=fd)
    except (ValueError, OSError):
        sys.stderr.write(
            "tare-worker: error: TARE_WORKER_FD=%s is not an open socket; start this program with tare kernels, "
            "or unset TARE_WORKER_FD for standalone mode\n" % fdtext
        )
        return 1
    os.environ.pop("TARE_WORKER_FD", None)
    try:
        return _serve(sock)
    except (BrokenPipeError, ConnectionResetError):
        return 0  # tare went away
    finally:
        sock.close()


# ---------- standalone mode ----------


def _throughput(per_sec, unit):
    for prefix in ("", "k", "M", "G"):
        if per_sec < 1000:
            return "%.3g %s%s/s" % (per_sec, prefix, unit)
        per_sec /= 1000
    return "%.3g T%s/s" % (per_sec, unit)


def _standalone(argv):
    listing, pattern, overrides = False, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--list":
            listing = True
        elif a in ("--filter", "-p", "--param"):
            if i + 1 >= len(argv):
                raise KernelError("%s needs a value" % a)
            i += 1
            if a == "--filter":
                pattern = argv[i]
            else:
                overrides.append(argv[i])
        elif a.startswith("--filter="):
            pattern = a[len("--filter=") :]
        elif a.startswith("--param="):
            overrides.append(a[len("--param=") :])
        else:
            raise KernelError("unknown argument '%s' (known: --list, --filter REGEX, -p NAME=VALUE)" % a)
        i += 1
    values = {}
    for o in overrides:
        pname, eq, value = o.partition("=")
        if not eq:
            raise KernelError("-p %s: expected NAME=VALUE" % o)
        if not any(p.name == pname for k in _kernels.values() for p in k.params):
            raise KernelError("-p %s: no kernel has this parameter (see --list)" % o)
        values[pname] = value
    try:
        rx = re.compile(pattern) if pattern is not None else None
    except re.error as e:
        raise KernelError("--filter '%s' is not a valid regular expression: %s" % (pattern, e)) from None
    for k in _kernels.values():
        if rx is not None and not rx.search(k.name):
            continue
        if listing:
            print(k.name + ("  # " + k.doc if k.doc else ""))
            for p in k.params:
                print("  -p %s=%s" % (p.name, p.text()))
            continue
        chosen = {p.name: values.get(p.name, p.text()) for p in k.params}
        active = _Active(k, chosen)
        loops = 1
        while True:
            ns, _ = active.rep(loops, False)
            if ns >= 10_000_000 or loops >= 1 << 62:
                break
            loops *= 2
        per = [active.rep(loops, False)[0] / loops for _ in range(10)]
        active.teardown()
        med = statistics.median(per)
        tp = ""
        if _current.bytes_per_loop > 0 and med > 0:
            tp = "  " + _throughput(_current.bytes_per_loop / (med * 1e-9), "B")
        elif _current.items_per_loop > 0 and med > 0:
            tp = "  " + _throughput(_current.items_per_loop / (med * 1e-9), "items")
        params = "".join(" %s=%s" % kv for kv in chosen.items())
        medtext = "%.4g" % med if med < 1000 else "%.0f" % med
        print("%s%s %s ns/loop%s  (N=%d, 10 samples)" % (k.name, params, medtext, tp, loops), flush=True)
    return 0


def run(argv=None):
    """Worker mode when TARE_WORKER_FD is set, standalone mode otherwise; returns the exit status."""
    fd = os.environ.get("TARE_WORKER_FD")
    if fd is not None:
        return _worker(fd)
    try:
        return _standalone(sys.argv[1:] if argv is None else list(argv))
    except Exception as e:
        sys.stderr.write("tare-worker: error: %s\n" % _one_line(e))
        return 1


def main(argv=None):
    """Runs the worker or standalone mode and exits the process with its status."""
    sys.exit(run(argv))
