// A fake tare master in GoogleTest: starts the C++ test worker and the C++ blur example with
// TARE_WORKER_FD on a socketpair and checks every reply.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tare_worker.h"

#ifndef TEST_WORKER
#error TEST_WORKER must name the test worker binary
#endif

namespace {

class Worker {
  public:
    explicit Worker(const std::string& exe) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) throw std::runtime_error("socketpair");
        pid_ = fork();
        if (pid_ == 0) {
            close(sv[0]);
            setenv("TARE_WORKER_FD", std::to_string(sv[1]).c_str(), 1);
            int devnull = open("/dev/null", O_WRONLY);
            dup2(devnull, 1);
            execl(exe.c_str(), exe.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        close(sv[1]);
        fd_ = sv[0];
    }
    ~Worker() {
        if (fd_ >= 0) close(fd_);
        if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    // Next line (10 s limit); "(EOF)" at EOF or timeout.
    std::string next() {
        for (;;) {
            auto nl = buf_.find('\n');
            if (nl != std::string::npos) {
                std::string l = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return l;
            }
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, 10000) <= 0) return "(EOF)";
            char tmp[4096];
            ssize_t r = read(fd_, tmp, sizeof tmp);
            if (r <= 0) return "(EOF)";
            buf_.append(tmp, static_cast<std::size_t>(r));
        }
    }
    void say(const std::string& s) { ASSERT_EQ(write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size())); }
    void skip_hello() {
        for (std::string l = next(); l != "ready" && l != "(EOF)"; l = next()) {
        }
    }
    void close_socket() {
        close(fd_);
        fd_ = -1;
    }
    int wait_exit() {
        for (int i = 0; i < 1000; i++) {
            int st;
            if (waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }

  private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::string buf_;
};

// Decoded value of key in a line, or "(none)".
std::string get(const std::string& line, const std::string& key) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    while (in >> word) {
        if (word.compare(0, key.size() + 1, key + "=") == 0) {
            std::string enc = word.substr(key.size() + 1);
            std::string out(enc.size() + 1, '\0');
            long n = tare_percent_decode(enc.c_str(), &out[0], out.size());
            if (n < 0) return "(bad)";
            out.resize(static_cast<std::size_t>(n));
            return out;
        }
    }
    return "(none)";
}

bool starts(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

TEST(CppClient, HelloAnnouncesCppAndAllKernels) {
    Worker w(TEST_WORKER);
    EXPECT_EQ(w.next(), "hello protocol=1 client=tare-worker-cpp version=" TARE_WORKER_VERSION " lang=cpp");
    EXPECT_EQ(w.next(), "kernel name=counter doc=a%20stateful%20kernel");
    EXPECT_EQ(w.next(), "param kernel=counter name=n default=3");
    EXPECT_EQ(w.next(), "param kernel=counter name=scale default=0.5");
    int kernels = 1;
    std::string l;
    while ((l = w.next()) != "ready" && l != "(EOF)") kernels += starts(l, "kernel ");
    EXPECT_EQ(l, "ready");
    EXPECT_EQ(kernels, 11);
    w.say("exit\n");
    EXPECT_EQ(w.next(), "bye");
    EXPECT_EQ(w.wait_exit(), 0);
}

TEST(CppClient, StatefulKernelInitRunMetricsAndRaii) {
    Worker w(TEST_WORKER);
    w.skip_hello();
    w.say("setup kernel=counter p.n=4\nrun loops=6 reps=2\n");
    EXPECT_EQ(w.next(), "ok");
    for (int r = 1; r <= 2; r++) {
        std::string l = w.next();
        ASSERT_TRUE(starts(l, "sample loops=6 ns=")) << l;
        EXPECT_EQ(get(l, "m.inits"), std::to_string(r)) << l;
        EXPECT_EQ(get(l, "m.loops"), std::to_string(6 * r)) << l;
        EXPECT_EQ(get(l, "m.live"), "1") << "exactly one state alive (moved-from temporaries destroyed): " << l;
        EXPECT_EQ(get(l, "items"), "24") << l;
        EXPECT_EQ(get(l, "bytes"), "30") << l;
    }
    EXPECT_EQ(w.next(), "done");
    w.say("teardown\nsetup kernel=live\nrun loops=1 reps=1\n");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(get(w.next(), "m.live"), "0") << "the state is destroyed at teardown";
    EXPECT_EQ(w.next(), "done");
}

TEST(CppClient, BodyFormsRunExactlyTheLoops) {
    Worker w(TEST_WORKER);
    w.skip_hello();
    w.say("setup kernel=body p.expect=15\nrun loops=5 reps=3\nteardown\n");
    EXPECT_EQ(w.next(), "ok");
    for (int r = 0; r < 3; r++) EXPECT_TRUE(starts(w.next(), "sample loops=5 "));
    EXPECT_EQ(w.next(), "done");
    EXPECT_EQ(w.next(), "ok");
    w.say("setup kernel=stateless\nrun loops=11 reps=2\nteardown\nsetup kernel=stateless_run\nrun loops=3 reps=1\n");
    EXPECT_EQ(w.next(), "ok");
    w.next();
    w.next();
    EXPECT_EQ(w.next(), "done");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(w.next(), "ok");
    std::string l = w.next();
    EXPECT_EQ(get(l, "m.seen"), "22") << l;
    EXPECT_EQ(get(l, "m.loops"), "3") << l;
}

TEST(CppClient, PerLoopInputIsFreshForEveryLoop) {
    Worker w(TEST_WORKER);
    w.skip_hello();
    // Batches of 3: 3+2 loops a sample, every one on an input of its own.
    w.say("setup kernel=each p.expect=10\nrun loops=5 reps=2\nteardown\n");
    EXPECT_EQ(w.next(), "ok");
    for (int r = 0; r < 2; r++) EXPECT_TRUE(starts(w.next(), "sample loops=5 "));
    EXPECT_EQ(w.next(), "done");
    EXPECT_EQ(w.next(), "ok") << "teardown checks loops, inits and stale inputs";
    w.say("setup kernel=each p.expect=4\nrun loops=2 reps=1\nteardown\n");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_TRUE(starts(w.next(), "sample loops=2 "));
    EXPECT_EQ(w.next(), "done");
    std::string l = w.next();
    EXPECT_EQ(get(l, "message"), "loops 2 inits 2 stale 0") << l;
}

TEST(CppClient, ThreadedKernelRunsTheLoopsOnEveryThread) {
    Worker w(TEST_WORKER);
    std::string l;
    while ((l = w.next()) != "ready" && l != "(EOF)")
        if (starts(l, "kernel name=threads")) EXPECT_EQ(l, "kernel name=threads threads=3");
    w.say("setup kernel=threads p.expect=8\nrun loops=4 reps=2\nteardown\n");
    EXPECT_EQ(w.next(), "ok");
    for (int r = 0; r < 2; r++) EXPECT_TRUE(starts(w.next(), "sample loops=4 "));
    EXPECT_EQ(w.next(), "done");
    EXPECT_EQ(w.next(), "ok") << "every thread ran 4 loops a sample";
}

TEST(CppClient, ExceptionsBecomeOneLineErrorsAndTheWorkerStaysUsable) {
    Worker w(TEST_WORKER);
    w.skip_hello();
    w.say("setup kernel=setup_throws\n");
    std::string l = w.next();
    EXPECT_EQ(l, "error message=no%20setup%20today");
    w.say("setup kernel=run_throws\nrun loops=1 reps=2\n");
    EXPECT_EQ(w.next(), "ok");
    l = w.next();
    EXPECT_TRUE(starts(l, "error ")) << l;
    EXPECT_NE(get(l, "message").find("non-standard exception"), std::string::npos) << l;
    w.say("teardown\nsetup kernel=teardown_throws\nteardown\nsetup kernel=live\nrun loops=1 reps=1\n");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(get(w.next(), "message"), "teardown refused");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(get(w.next(), "m.live"), "0") << "state destroyed even when teardown threw";
    EXPECT_EQ(w.next(), "done");
    w.say("teardown\nsetup kernel=counter p.n=x\nsetup kernel=no_body\nrun loops=1 reps=1\n");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_EQ(get(w.next(), "message"), "parameter n=x is not an integer");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_NE(get(w.next(), "message").find("no run or body"), std::string::npos);
    w.say("bogus\n");
    EXPECT_TRUE(starts(w.next(), "error message=unknown%20request"));
}

TEST(CppClient, EofEndsTheWorkerWithStatusZero) {
    Worker w(TEST_WORKER);
    w.skip_hello();
    w.say("setup kernel=counter\n");
    EXPECT_EQ(w.next(), "ok");
    w.close_socket();
    EXPECT_EQ(w.wait_exit(), 0);
}

double reference_checksum(int size, int radius) {
    std::ifstream f(CHECKSUMS);
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        int s, r;
        double c;
        if (in >> s >> r >> c && s == size && r == radius) return c;
    }
    return NAN;
}

TEST(CppClient, BlurExampleMatchesTheReferenceChecksum) {
    Worker w(BLUR_WORKER);
    w.skip_hello();
    double want = reference_checksum(64, 3);
    ASSERT_FALSE(std::isnan(want));
    w.say("setup kernel=blur p.size=64 p.radius=3\nrun loops=3 reps=2\n");
    EXPECT_EQ(w.next(), "ok");
    for (int r = 0; r < 2; r++) {
        std::string l = w.next();
        ASSERT_TRUE(starts(l, "sample loops=3 ")) << l;
        EXPECT_NEAR(std::stod(get(l, "m.checksum")), want, 1e-9 * want) << l;
        EXPECT_EQ(get(l, "bytes"), "98304") << l;
    }
    EXPECT_EQ(w.next(), "done");
    w.say("teardown\nsetup kernel=blur p.radius=0\n");
    EXPECT_EQ(w.next(), "ok");
    EXPECT_NE(get(w.next(), "message").find("radius=0"), std::string::npos);
}

TEST(CppClient, StandaloneModePrintsOneLinePerKernel) {
    std::string cmd = std::string("env -u TARE_WORKER_FD ") + BLUR_WORKER + " --filter '^blur$' -p size=32 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[512] = {0};
    std::string out;
    while (fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(pclose(p), 0);
    EXPECT_TRUE(starts(out, "blur size=32 radius=3 ")) << out;
    EXPECT_NE(out.find(" ns/loop  "), std::string::npos) << out;
    EXPECT_NE(out.find("B/s  (N="), std::string::npos) << out;
    EXPECT_EQ(out.find("empty"), std::string::npos) << out;
}

}  // namespace
