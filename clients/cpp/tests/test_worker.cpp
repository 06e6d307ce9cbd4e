// A worker exercising the C++ layer (lambdas, RAII state, exceptions), driven by test_master.cpp.
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tare_worker.hpp"

static int live = 0;  // states alive now: RAII is checked through it

struct Counter {
    long long inits = 0, loops = 0;
    Counter() { live++; }
    Counter(Counter&& o) noexcept : inits(o.inits), loops(o.loops) { live++; }
    Counter(const Counter&) = delete;
    ~Counter() { live--; }
};

static long long stateless_loops = 0;

int main(int argc, char** argv) {
    tare::kernel("counter", "a stateful kernel")
        .param("n", 3)
        .param("scale", 0.5)
        .setup([](tare::context& c) {
            c.items_per_loop(static_cast<double>(c.param_int("n")));
            c.bytes_per_loop(c.param_double("scale") * 10);
            return Counter();
        })
        .init([](Counter& s, tare::context&) { s.inits++; })
        .run([](Counter& s, tare::context& c, std::uint64_t loops) {
            for (std::uint64_t i = 0; i < loops; i++) {
                s.loops++;
                tare::do_not_optimize(s.loops);
            }
            c.metric("inits", static_cast<double>(s.inits));
            c.metric("loops", static_cast<double>(s.loops));
            c.metric("live", live);
        });
    tare::kernel("body").param("expect", 0).setup([](tare::context&) { return Counter(); }).body([](Counter& s) { s.loops++; })
        .teardown([](Counter& s, tare::context& c) {
            if (s.loops != c.param_int("expect")) c.fail("body ran " + std::to_string(s.loops) + " times");
        });
    // Per-loop input: every loop must get a fresh input of its own (init_each ran for it).
    struct Each {
        long long inits = 0, loops = 0, stale = 0;
    };
    tare::kernel("each").param("expect", 0).setup([](tare::context&) { return Each(); })
        .each(
            3, [](Each& s, tare::context&) { return std::vector<long long>{++s.inits, 0}; },
            [](Each& s, std::vector<long long>& in) {
                s.loops++;
                if (in[1] != 0) s.stale++;  // consumed by an earlier loop
                in[1] = 1;
            })
        .teardown([](Each& s, tare::context& c) {
            if (s.loops != c.param_int("expect") || s.inits != s.loops || s.stale != 0)
                c.fail("loops " + std::to_string(s.loops) + " inits " + std::to_string(s.inits) + " stale " +
                       std::to_string(s.stale));
        });
    // Threaded: 3 threads, each counting its loops in its own slot (atomics: shared state).
    struct Threads {
        std::atomic<long long> loops[3] = {};
        std::atomic<int> bad{0};
    };
    tare::kernel("threads").param("expect", 0).setup([](tare::context&) { return std::make_unique<Threads>(); })
        .threads(3)
        .body([](std::unique_ptr<Threads>& s) {
            unsigned i = tare::thread_index();
            if (i < 3) s->loops[i]++; else s->bad++;
        })
        .teardown([](std::unique_ptr<Threads>& s, tare::context& c) {
            for (auto& l : s->loops)
                if (l != c.param_int("expect") || s->bad) c.fail("loops " + std::to_string(l.load()));
        });
    tare::kernel("stateless").body([] {
        stateless_loops++;
        tare::clobber_memory();
    });
    tare::kernel("stateless_run").run([](tare::context& c, std::uint64_t loops) {
        c.metric("seen", static_cast<double>(stateless_loops));
        c.metric("loops", static_cast<double>(loops));
    });
    tare::kernel("live").run([](tare::context& c, std::uint64_t) { c.metric("live", live); });
    tare::kernel("setup_throws").setup([](tare::context&) -> Counter { throw std::runtime_error("no setup today"); })
        .run([](Counter&, tare::context&, std::uint64_t) {});
    tare::kernel("run_throws").run([](tare::context&, std::uint64_t) { throw 42; });
    tare::kernel("teardown_throws").setup([](tare::context&) { return Counter(); })
        .run([](Counter&, tare::context&, std::uint64_t) {})
        .teardown([](Counter&, tare::context& c) { c.fail("teardown refused"); });
    tare::kernel("no_body");
    return tare::main(argc, argv);
}
