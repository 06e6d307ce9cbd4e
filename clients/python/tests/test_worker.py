"""The Python client under a fake tare master: a real worker process with TARE_WORKER_FD on one
end of a socketpair, driven request by request; plus the codec and standalone mode."""
import os
import pathlib
import select
import socket
import subprocess
import sys

import pytest

import tare_worker

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parent / "src"
ROOT = HERE.parent.parent.parent
BLUR = ROOT / "examples" / "kernels" / "blur"


def env_with_client():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("TARE_WORKER_FD", None)
    return env


class Worker:
    def __init__(self, script):
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = env_with_client()
        env["TARE_WORKER_FD"] = str(child.fileno())
        env["TEST_FD"] = str(child.fileno())
        self.proc = subprocess.Popen(
            [sys.executable, str(script)], env=env, pass_fds=(child.fileno(),), stdout=subprocess.DEVNULL
        )
        child.close()
        self.buf = b""

    def next(self):
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.sock], [], [], 20)
            if not ready:
                return "(timeout)"
            chunk = self.sock.recv(65536)
            if not chunk:
                return "(EOF)"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def say(self, text):
        self.sock.sendall(text.encode())

    def skip_hello(self):
        lines = []
        while True:
            line = self.next()
            lines.append(line)
            if line in ("ready", "(EOF)", "(timeout)"):
                return lines

    def close(self):
        self.sock.close()
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def fields(line):
    return {k: tare_worker.percent_decode(v).decode() for k, _, v in (p.partition("=") for p in line.split(" ")[1:])}


@pytest.fixture
def worker():
    w = Worker(HERE / "worker_for_tests.py")
    yield w
    w.sock.close()
    if w.proc.poll() is None:
        w.proc.kill()
    w.proc.wait()


def error_of(w, request):
    w.say(request)
    line = w.next()
    assert line.startswith("error message="), line
    return fields(line)["message"]


def test_codec_edges():
    everything = bytes(range(256))
    enc = tare_worker.percent_encode(everything)
    assert " " not in enc and "=" not in enc and "\n" not in enc
    assert tare_worker.percent_decode(enc) == everything
    assert tare_worker.percent_encode("Az09-._~:/,+") == "Az09-._~:/,+"
    assert tare_worker.percent_encode("a b=c%\n\u00e9") == "a%20b%3Dc%25%0A%C3%A9"
    assert tare_worker.percent_decode("a%3d%3D%c3%A9") == "a==\u00e9".encode()
    assert tare_worker.percent_decode("") == b""
    for bad in ("%", "%4", "%zz", "a%g0"):
        with pytest.raises(ValueError):
            tare_worker.percent_decode(bad)


def test_hello_announces_kernels_and_params(worker):
    lines = worker.skip_hello()
    assert lines[0] == "hello protocol=1 client=tare-worker-python version=%s lang=python" % tare_worker.__version__
    assert lines[1] == "kernel name=counter doc=counts%20loops%20%26%20inits:%20100%25"
    assert lines[2:6] == [
        "param kernel=counter name=n default=3",
        "param kernel=counter name=scale default=0.5",
        "param kernel=counter name=label default=x",
        "param kernel=counter name=flag default=false",
    ]
    assert sum(l.startswith("kernel ") for l in lines) == 7
    assert lines[-1] == "ready"
    worker.say("exit\n")
    assert worker.next() == "bye"
    assert worker.next() == "(EOF)"
    assert worker.proc.wait(timeout=20) == 0


def test_clock(worker):
    worker.skip_hello()
    worker.say("clock\n")
    line = worker.next()
    f = fields(line)
    assert line.startswith("clock "), line
    assert 0 < float(f["resolution_ns"]) < 1e6
    assert 0 < float(f["cost_ns"]) < 1e5


def test_requests_out_of_order_and_malformed_are_errors(worker):
    worker.skip_hello()
    assert "unknown kernel" in error_of(worker, "setup kernel=nope\n")
    assert "no parameter 'zz'" in error_of(worker, "setup kernel=counter p.zz=1\n")
    assert "kernel=" in error_of(worker, "setup\n")
    assert "no kernel set up" in error_of(worker, "run loops=1 reps=1\n")
    assert "no kernel set up" in error_of(worker, "teardown\n")
    assert "unknown request" in error_of(worker, "frobnicate x=1\n")
    assert "repeated key" in error_of(worker, "setup kernel=counter kernel=counter\n")
    assert "percent" in error_of(worker, "setup kernel=co%zunt\n")
    assert "key=value" in error_of(worker, "setup kernel\n")
    assert "empty" in error_of(worker, "\n")
    big = "clock x=" + "a" * 70000 + "\n"
    assert "longer than" in error_of(worker, big)
    worker.say("clock\n")
    assert worker.next().startswith("clock ")
    edge = "clock x=" + "a" * (65536 - 9)  # 65536 bytes with the newline: the limit, accepted
    worker.say(edge + "\n")
    assert worker.next().startswith("clock ")
    assert "longer than" in error_of(worker, edge + "a\n")


def test_setup_run_teardown_with_init_metrics_and_counts(worker):
    worker.skip_hello()
    worker.say("setup kernel=counter p.n=4 p.label=a%20b%C3%A9 p.flag=true future=field\n")
    assert worker.next() == "ok"
    assert "already set up" in error_of(worker, "setup kernel=counter\n")
    assert "loops" in error_of(worker, "run loops=0 reps=1\n")
    assert "reps" in error_of(worker, "run loops=5\n")
    worker.say("run loops=5 reps=3 extra=1\n")
    for r in range(1, 4):
        line = worker.next()
        assert line.startswith("sample loops=5 ns="), line
        f = fields(line)
        assert f["m.inits"] == str(r), "init once per repetition"
        assert f["m.loops"] == str(5 * r), "exactly N loops"
        assert f["items"] == "20" and f["bytes"] == "25"
        assert int(f["ns"]) >= 0 and int(f["cpu_ns"]) >= 0
        assert f["m.labellen"] == "5" and f["m.flag"] == "1"
        assert f["m.env_set"] == "0", "TARE_WORKER_FD removed from the environment"
        assert f["m.inheritable"] == "0", "the socket is close-on-exec"
    assert worker.next() == "done"
    worker.say("teardown\nsetup kernel=seen\nrun loops=1 reps=1\n")
    assert worker.next() == "ok"
    assert worker.next() == "ok"
    assert fields(worker.next())["m.live"] == "0", "teardown ran"
    assert worker.next() == "done"


def test_body_forms_run_exactly_the_loops(worker):
    worker.skip_hello()
    worker.say("setup kernel=body p.expect=21\nrun loops=7 reps=3\nteardown\n")
    assert worker.next() == "ok"
    assert [worker.next().split(" ")[1] for _ in range(3)] == ["loops=7"] * 3
    assert worker.next() == "done"
    assert worker.next() == "ok"
    worker.say("setup kernel=body p.expect=1\nrun loops=2 reps=1\nteardown\n")
    worker.next(), worker.next(), worker.next()
    assert "ran 2 times" in fields(worker.next())["message"]
    worker.say("setup kernel=function_body p.k=9\nrun loops=4 reps=2\nteardown\nsetup kernel=seen\nrun loops=1 reps=1\n")
    for expected in ("ok", "sample", "sample", "done", "ok", "ok"):
        assert worker.next().startswith(expected)
    assert fields(worker.next())["m.calls"] == "8"


def test_user_failures_are_one_line_errors_and_the_worker_stays_usable(worker):
    worker.skip_hello()
    assert error_of(worker, "setup kernel=setup_fails\n") == "RuntimeError: no setup today second line"
    assert "not an int" in error_of(worker, "setup kernel=counter p.n=x\n")
    assert "not a float" in error_of(worker, "setup kernel=counter p.scale=nan\n")
    worker.say("setup kernel=run_fails\nrun loops=3 reps=5\n")
    assert worker.next() == "ok"
    assert worker.next().startswith("sample loops=3 ")
    assert error_of(worker, "") == "ZeroDivisionError: division by zero"
    worker.say("teardown\nsetup kernel=teardown_fails\nteardown\n")
    assert worker.next() == "ok"
    assert worker.next() == "ok"
    assert error_of(worker, "") == "teardown refused"
    assert "no kernel set up" in error_of(worker, "teardown\n")


def test_eof_ends_the_worker_with_status_zero(worker):
    worker.skip_hello()
    worker.say("setup kernel=counter\n")
    assert worker.next() == "ok"
    assert worker.close() == 0


def test_bad_fd_is_a_one_line_error():
    env = env_with_client()
    env["TARE_WORKER_FD"] = "99"
    r = subprocess.run([sys.executable, str(HERE / "worker_for_tests.py")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("tare-worker: error: TARE_WORKER_FD=99")


def reference_checksum(size, radius):
    for line in (BLUR / "CHECKSUMS").read_text().splitlines():
        if line and not line.startswith("#"):
            s, r, c = line.split()
            if (int(s), int(r)) == (size, radius):
                return float(c)
    raise AssertionError("CHECKSUMS has no size=%d radius=%d" % (size, radius))


def test_blur_example_matches_the_reference_checksum():
    w = Worker(BLUR / "python" / "blur.py")
    try:
        w.skip_hello()
        w.say("setup kernel=blur p.size=64 p.radius=3\nrun loops=1 reps=2\n")
        assert w.next() == "ok"
        want = reference_checksum(64, 3)
        for _ in range(2):
            f = fields(w.next())
            assert abs(float(f["m.checksum"]) - want) <= 1e-9 * abs(want)
            assert f["bytes"] == "32768"
        assert w.next() == "done"
        w.say("teardown\nsetup kernel=blur p.size=0\nexit\n")
        assert w.next() == "ok"
        assert "size=0" in fields(w.next())["message"]
        assert w.next() == "bye"
        assert w.proc.wait(timeout=20) == 0
    finally:
        w.close()


def standalone(*args):
    return subprocess.run(
        [sys.executable, str(HERE / "worker_for_tests.py"), *args],
        env=env_with_client(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_standalone_mode():
    r = standalone("--list")
    assert r.returncode == 0
    assert "counter  # counts loops & inits: 100%\n  -p n=3\n" in r.stdout
    r = standalone("--filter", "^coun", "-p", "n=1000", "--param=label=yy")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("counter n=1000 scale=0.5 label=yy flag=false ")
    assert " ns/loop  " in r.stdout and "B/s  (N=" in r.stdout and r.stdout.endswith(", 10 samples)\n")
    for bad in (["--frob"], ["-p", "nope=1"], ["--filter", "("], ["--filter", "setup_fails"]):
        r = standalone(*bad)
        assert r.returncode == 1, bad
        assert r.stderr.startswith("tare-worker: error: ") and r.stderr.count("\n") == 1, r.stderr
