// tare_worker.hpp - the C++ client of the tare worker protocol: a header-only layer over the C
// client (clients/c/tare_worker.{h,c}, which the program links). Kernels are registered with
// lambdas; the state a setup lambda returns lives on the heap between setup and teardown and is
// destroyed there (RAII: its destructor is the finalize stage); exceptions thrown by any stage
// become `error message=...` replies. It adds no policy and no protocol code of its own.
//
//   tare::kernel("blur").param("size", 256)
//       .setup([](tare::context& c) { return Blur(c.param_int("size")); })
//       .run([](Blur& b, tare::context& c, std::uint64_t loops) {
//           for (std::uint64_t i = 0; i < loops; i++) b.once();
//       });
//   int main(int argc, char** argv) { return tare::main(argc, argv); }
#ifndef TARE_WORKER_HPP
#define TARE_WORKER_HPP

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tare_worker.h"

namespace tare {

// Thrown by context::fail and by the parameter accessors; any exception works the same.
struct failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The stage's view of the kernel: parameters, throughput counts, metrics.
class context {
  public:
    explicit context(tare_ctx* c) : c_(c) {}
    std::string kernel_name() const { return tare_kernel_name(c_); }
    std::string param(const char* name) const { return tare_param_str(c_, name); }
    long long param_int(const char* name) const {
        std::string s = param(name);
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end || errno) throw failure("parameter " + std::string(name) + "=" + s + " is not an integer");
        return v;
    }
    double param_double(const char* name) const {
        std::string s = param(name);
        char* end = nullptr;
        errno = 0;
        double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end || errno || !std::isfinite(v))
            throw failure("parameter " + std::string(name) + "=" + s + " is not a finite number");
        return v;
    }
    void bytes_per_loop(double n) { tare_bytes_per_loop(c_, n); }
    void items_per_loop(double n) { tare_items_per_loop(c_, n); }
    void metric(const char* name, double value) { tare_metric(c_, name, value); }
    [[noreturn]] void fail(const std::string& message) { throw failure(message); }
    tare_ctx* raw() const { return c_; }

  private:
    tare_ctx* c_;
};

// Do-not-optimize helpers, Google Benchmark's idiom: an empty asm statement the compiler cannot
// see into. With the value as an operand it must assume the asm reads it (so computing it cannot
// be dropped) and, for the non-const overload, changes it (so later uses cannot be folded); the
// "memory" clobber makes it assume all memory is read and written here. No instruction is
// emitted; small trivially copyable values may stay in a register ("r"), others go to memory.
#if defined(__GNUC__) || defined(__clang__)
template <class T>
inline void do_not_optimize(const T& value) {
    asm volatile("" : : "r,m"(value) : "memory");
}
template <class T>
inline void do_not_optimize(T& value) {
    if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void*)) {
#if defined(__clang__)
        asm volatile("" : "+r,m"(value) : : "memory");
#else
        asm volatile("" : "+m,r"(value) : : "memory");
#endif
    } else {
        asm volatile("" : "+m"(value) : : "memory");
    }
}
// Any memory may have been read or written here.
inline void clobber_memory() { asm volatile("" : : : "memory"); }
#else
template <class T>
inline void do_not_optimize(const T& value) {
    tare_escape(&value);
}
inline void clobber_memory() { tare_clobber_memory(); }
#endif

namespace detail {

// Type-erased stages of one kernel; kept alive for the whole program in registry().
struct entry {
    std::function<void*(context&)> setup;
    std::function<void(void*, context&)> init;
    std::function<void(void*, context&, std::uint64_t)> run;
    std::function<void(void*, context&)> teardown;
    std::function<void(void*)> destroy;
    // Per-loop kernels (each): prepare slot i's input (untimed), one loop on slot i (timed).
    std::function<void(void*, context&, std::size_t)> init_each;
    std::function<void(void*, std::size_t)> body_each;
};

// The entry whose per-loop stages run now: set by init_each_tramp, which the C client calls
// before every batch of body_each calls (whose C signature has no context), in the worker's
// one thread.
inline entry*& current_each() {
    static entry* e = nullptr;
    return e;
}

inline std::deque<std::unique_ptr<entry>>& registry() {
    static std::deque<std::unique_ptr<entry>> r;
    return r;
}

// Runs f, turning an exception into tare_fail; returns the C stage result.
template <class F>
int guard(tare_ctx* c, F&& f) {
    try {
        f();
        return 0;
    } catch (const std::exception& e) {
        return tare_fail(c, "%s", e.what());
    } catch (...) {
        return tare_fail(c, "kernel %s threw a non-standard exception", tare_kernel_name(c));
    }
}

inline entry* self(tare_ctx* c) { return static_cast<entry*>(tare_user(c)); }

inline int setup_tramp(tare_ctx* c, void** state) {
    entry* e = self(c);
    context cx(c);
    return guard(c, [&] { *state = e->setup ? e->setup(cx) : nullptr; });
}
inline int init_tramp(tare_ctx* c, void* state) {
    context cx(c);
    return guard(c, [&] { self(c)->init(state, cx); });
}
inline int run_tramp(tare_ctx* c, void* state, std::uint64_t loops) {
    context cx(c);
    entry* e = self(c);
    if (!e->run) return tare_fail(c, "kernel %s has no run or body lambda", tare_kernel_name(c));
    return guard(c, [&] { e->run(state, cx, loops); });
}
inline int init_each_tramp(tare_ctx* c, void* state, std::size_t slot) {
    context cx(c);
    entry* e = self(c);
    current_each() = e;
    return guard(c, [&] { e->init_each(state, cx, slot); });
}
inline void body_each_tramp(void* state, std::size_t slot) { current_each()->body_each(state, slot); }
inline int teardown_tramp(tare_ctx* c, void* state) {
    entry* e = self(c);
    context cx(c);
    int rc = 0;
    if (e->teardown) rc = guard(c, [&] { e->teardown(state, cx); });
    // The state is destroyed even when the teardown lambda threw.
    int rc2 = (e->destroy && state) ? guard(c, [&] { e->destroy(state); }) : 0;
    return rc ? rc : rc2;
}

}  // namespace detail

// A kernel with state S (returned by the setup lambda).
template <class S>
class stateful_kernel {
  public:
    // Before each repetition, untimed: f(S&, context&).
    template <class F>
    stateful_kernel& init(F f) {
        e_->init = [f](void* s, context& c) mutable { f(*static_cast<S*>(s), c); };
        tare_on_init(k_, detail::init_tramp);
        return *this;
    }
    // The timed region: f(S&, context&, loops) runs the loop itself.
    template <class F>
    stateful_kernel& run(F f) {
        e_->run = [f](void* s, context& c, std::uint64_t loops) mutable { f(*static_cast<S*>(s), c, loops); };
        return *this;
    }
    // Convenience: f(S&) once per loop; the loop is compiled with f inlined into it.
    template <class F>
    stateful_kernel& body(F f) {
        e_->run = [f](void* s, context&, std::uint64_t loops) mutable {
            S& st = *static_cast<S*>(s);
            for (std::uint64_t i = 0; i < loops; i++) f(st);
        };
        return *this;
    }
    // Per-loop input, untimed (Criterion's iter_batched, Google Benchmark's PauseTiming without
    // its per-loop clock reads): init(S&, context&) returns one loop's input I, body(S&, I&) is
    // the loop on it. The client prepares `batch` inputs, reads the clock, runs the body on each,
    // reads the clock; a sample's time is the sum of its batches'. Instead of run/body; for a
    // body that changes its input (sorts in place), where `init` (once per sample) would leave
    // loops 2..N the state loop 1 left. An input's old value is replaced (destroyed) untimed.
    template <class FI, class FB>
    stateful_kernel& each(std::size_t batch, FI init, FB body) {
        using I = std::decay_t<std::invoke_result_t<FI&, S&, context&>>;
        auto inputs = std::make_shared<std::vector<std::optional<I>>>(batch ? batch : 1);
        e_->init_each = [init, inputs](void* s, context& c, std::size_t slot) mutable {
            (*inputs)[slot].reset();
            (*inputs)[slot].emplace(init(*static_cast<S*>(s), c));
        };
        e_->body_each = [body, inputs](void* s, std::size_t slot) mutable {
            body(*static_cast<S*>(s), *(*inputs)[slot]);
        };
        e_->run = nullptr;
        tare_on_each(k_, inputs->size(), detail::init_each_tramp, detail::body_each_tramp);
        return *this;
    }
    // Threaded (Google Benchmark's ->Threads): run/body on `n` threads released together, each
    // doing the sample's loops; the state is shared (tare::thread_index() says which thread).
    stateful_kernel& threads(unsigned n) {
        tare_set_threads(k_, n);
        return *this;
    }
    // Finalize, before the state is destroyed: f(S&, context&).
    template <class F>
    stateful_kernel& teardown(F f) {
        e_->teardown = [f](void* s, context& c) mutable { f(*static_cast<S*>(s), c); };
        return *this;
    }

  private:
    detail::entry* e_;
    tare_kernel* k_;
    friend class kernel;
    stateful_kernel(detail::entry* e, tare_kernel* k) : e_(e), k_(k) {}
};

// Registers a kernel; chain param(...), then setup(...) for a stateful kernel, or run/body for
// a stateless one.
class kernel {
  public:
    explicit kernel(const char* name, const char* doc = nullptr) {
        detail::registry().push_back(std::make_unique<detail::entry>());
        e_ = detail::registry().back().get();
        k_ = tare_register(name, doc);
        tare_set_user(k_, e_);
        tare_on_setup(k_, detail::setup_tramp);
        tare_on_run(k_, detail::run_tramp);
        tare_on_teardown(k_, detail::teardown_tramp);
    }
    kernel& param(const char* name, const std::string& default_value, const char* doc = nullptr) {
        tare_param(k_, name, default_value.c_str(), doc);
        return *this;
    }
    kernel& param(const char* name, const char* default_value, const char* doc = nullptr) {
        tare_param(k_, name, default_value, doc);
        return *this;
    }
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    kernel& param(const char* name, T default_value, const char* doc = nullptr) {
        if constexpr (std::is_floating_point_v<T>) {
            char buf[64];  // the shortest text that reads back as the same value
            for (int prec = 6; prec <= 17; prec++) {
                std::snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(default_value));
                if (std::strtod(buf, nullptr) == static_cast<double>(default_value)) break;
            }
            return param(name, std::string(buf), doc);
        } else {
            return param(name, std::to_string(default_value), doc);
        }
    }
    // f(context&) -> S: the state, moved to the heap until teardown.
    template <class F>
    auto setup(F f) {
        using S = std::decay_t<std::invoke_result_t<F&, context&>>;
        e_->setup = [f](context& c) mutable -> void* { return new S(f(c)); };
        e_->destroy = [](void* s) { delete static_cast<S*>(s); };
        return stateful_kernel<S>(e_, k_);
    }
    // Stateless: f(context&) before each repetition.
    template <class F>
    kernel& init(F f) {
        e_->init = [f](void*, context& c) mutable { f(c); };
        tare_on_init(k_, detail::init_tramp);
        return *this;
    }
    // Stateless timed region: f(context&, loops).
    template <class F>
    kernel& run(F f) {
        e_->run = [f](void*, context& c, std::uint64_t loops) mutable { f(c, loops); };
        return *this;
    }
    // Threaded: run/body on `n` threads released together (see stateful_kernel::threads).
    kernel& threads(unsigned n) {
        tare_set_threads(k_, n);
        return *this;
    }
    // Stateless convenience: f() once per loop.
    template <class F>
    kernel& body(F f) {
        e_->run = [f](void*, context&, std::uint64_t loops) mutable {
            for (std::uint64_t i = 0; i < loops; i++) f();
        };
        return *this;
    }

  private:
    detail::entry* e_;
    tare_kernel* k_;
};

// 0..T-1 inside a threaded kernel's run/body: which of its threads this is (0 elsewhere).
inline unsigned thread_index() { return tare_thread_index(); }

// Worker mode under tare, standalone mode otherwise; returns the exit status.
inline int main(int argc, char** argv) {
    tare_set_client("tare-worker-cpp", "cpp");
    return tare_main(argc, argv);
}

}  // namespace tare

#endif
