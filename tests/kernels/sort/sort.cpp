// A worker on the C++ client (clients/cpp) for tare's test of per-loop state: an in-place
// insertion sort of n pseudo-random ints (O(n^2) unsorted, O(n) on sorted data) in three shapes,
// as tests/kernels/sort.c: per_sample (init once per sample; loops 2..N sort sorted data),
// per_loop (.each: a fresh copy before every loop, untimed), copy_sort (copy and sort, timed).
#include <cstdint>
#include <vector>

#include "tare_worker.hpp"

static std::vector<int> data(long long n) {
    std::vector<int> v(static_cast<std::size_t>(n));
    unsigned x = 12345;
    for (auto& e : v) {
        x = x * 1103515245u + 12345u;
        e = static_cast<int>(x >> 1);
    }
    return v;
}

// Not inlined: every shape runs the same machine code (see tests/kernels/sort.c).
[[gnu::noinline]] static void insertion_sort(std::vector<int>& a) {
    for (std::size_t i = 1; i < a.size(); i++) {
        int v = a[i];
        std::size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

struct Sort {
    std::vector<int> src, work;
};

static Sort make(tare::context& c) {
    long long n = c.param_int("n");
    if (n < 1) c.fail("n must be at least 1");
    return Sort{data(n), {}};
}

int main(int argc, char** argv) {
    tare::kernel("per_sample", "init per sample, sort in place").param("n", 2000)
        .setup(make)
        .init([](Sort& s, tare::context&) { s.work = s.src; })
        .body([](Sort& s) {
            insertion_sort(s.work);
            tare::do_not_optimize(s.work.data());
            tare::clobber_memory();
        });
    tare::kernel("per_loop", "a fresh copy before every loop, sort in place").param("n", 2000)
        .setup(make)
        .each(
            4, [](Sort& s, tare::context&) { return s.src; },
            [](Sort&, std::vector<int>& in) {
                insertion_sort(in);
                tare::do_not_optimize(in.data());
                tare::clobber_memory();
            });
    tare::kernel("copy_sort", "copy and sort, both timed").param("n", 2000)
        .setup(make)
        .body([](Sort& s) {
            s.work = s.src;
            insertion_sort(s.work);
            tare::do_not_optimize(s.work.data());
            tare::clobber_memory();
        });
    return tare::main(argc, argv);
}
