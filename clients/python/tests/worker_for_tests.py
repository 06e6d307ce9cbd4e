"""A worker exercising every path of the Python client; driven by test_worker.py."""
import os

import tare_worker


@tare_worker.kernel(n=3, scale=0.5, label="x", flag=False)
class counter:
    """counts loops & inits: 100%"""

    live = 0

    def setup(self, n, scale, label, flag):
        counter.live += 1
        self.inits = 0
        self.loops = 0
        self.label = label
        self.flag = flag
        tare_worker.items_per_loop(n)
        tare_worker.bytes_per_loop(scale * 10)

    def init(self):
        self.inits += 1

    def run(self, loops):
        for _ in range(loops):
            self.loops += 1
        tare_worker.metric("inits", self.inits)
        tare_worker.metric("loops", self.loops)
        tare_worker.metric("labellen", len(self.label.encode("utf-8")))
        tare_worker.metric("flag", self.flag)
        tare_worker.metric("env_set", "TARE_WORKER_FD" in os.environ)
        if "TEST_FD" in os.environ:
            tare_worker.metric("inheritable", os.get_inheritable(int(os.environ["TEST_FD"])))

    def teardown(self):
        counter.live -= 1


@tare_worker.kernel(expect=0)
class body:
    def setup(self, expect):
        self.expect = expect
        self.count = 0

    def body(self):
        self.count += 1

    def teardown(self):
        if self.count != self.expect:
            raise tare_worker.KernelError("body ran %d times, expected %d" % (self.count, self.expect))


calls = []


@tare_worker.kernel(k=2)
def function_body(k):
    calls.append(k)


@tare_worker.kernel()
class seen:
    def run(self, loops):
        tare_worker.metric("calls", len(calls))
        tare_worker.metric("live", counter.live)


@tare_worker.kernel()
class setup_fails:
    def setup(self):
        raise RuntimeError("no setup today\nsecond line")

    def run(self, loops):
        pass


@tare_worker.kernel()
class run_fails:
    reps = 0

    def run(self, loops):
        run_fails.reps += 1
        if run_fails.reps == 2:
            raise ZeroDivisionError("division by zero")


@tare_worker.kernel()
class teardown_fails:
    def run(self, loops):
        pass

    def teardown(self):
        raise tare_worker.KernelError("teardown refused")


if __name__ == "__main__":
    tare_worker.main()
