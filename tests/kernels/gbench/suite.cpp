// A small Google Benchmark suite for tests/kernels_native.rs (tare native-worker gbench):
// arguments and a template in the names, bytes and items processed, a user counter.
// Built with -DTARE_SLOWER_HASH=P, BM_hash does P% more work per iteration (the others are
// unchanged): the test's "one benchmark made slower" build. P reaches the code only through a
// volatile variable, so the two builds' machine code is the same byte for byte and only that
// variable's initial value differs: with P folded into BM_hash as a constant (as it was), its
// setup compiled to other code, every later function moved, and BM_sum ran 2x faster in the
// "slower" build on this VM (a loop's alignment), a real difference no verdict should hide.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#ifndef TARE_SLOWER_HASH
#define TARE_SLOWER_HASH 0
#endif
// Never zero, so it lies in .data in every build (a zero would move it to .bss).
static volatile std::size_t hash_work_percent = 100 + TARE_SLOWER_HASH;

static void BM_sum(benchmark::State& state) {
    std::vector<std::uint64_t> v(static_cast<std::size_t>(state.range(0)));
    std::iota(v.begin(), v.end(), 1);
    for (auto _ : state) {
        std::uint64_t s = 0;
        for (auto x : v) s += x;
        benchmark::DoNotOptimize(s);
    }
    state.SetBytesProcessed(state.iterations() * state.range(0) * 8);
}
BENCHMARK(BM_sum)->Arg(256)->Arg(4096);

static void BM_sort(benchmark::State& state) {
    std::vector<std::uint32_t> in(static_cast<std::size_t>(state.range(0)));
    for (std::size_t i = 0; i < in.size(); i++) in[i] = static_cast<std::uint32_t>(i * 2654435761u);
    std::vector<std::uint32_t> v;
    for (auto _ : state) {
        v = in;
        std::sort(v.begin(), v.end());
        benchmark::DoNotOptimize(v.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_sort)->Arg(512);

// FNV-1a over 2 KiB (each byte depends on the last: time linear in the length).
static void BM_hash(benchmark::State& state) {
    const std::size_t n = 2048 * hash_work_percent / 100;
    std::vector<unsigned char> buf(n);
    for (std::size_t i = 0; i < n; i++) buf[i] = static_cast<unsigned char>(i * 31);
    std::uint64_t h = 0;
    for (auto _ : state) {
        h = 1469598103934665603ull;
        for (auto c : buf) h = (h ^ c) * 1099511628211ull;
        benchmark::DoNotOptimize(h);
    }
    state.counters["last_byte"] = static_cast<double>(buf.back());
}
BENCHMARK(BM_hash);

template <typename T>
static void BM_fill(benchmark::State& state) {
    std::vector<T> v(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        std::fill(v.begin(), v.end(), T(7));
        benchmark::DoNotOptimize(v.data());
        benchmark::ClobberMemory();
    }
}
BENCHMARK_TEMPLATE(BM_fill, int)->Arg(1024);

BENCHMARK_MAIN();
