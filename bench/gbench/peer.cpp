// Google Benchmark peer of bench/kernel_overhead.sh: the empty kernel (the same body as the C++
// worker's: a value through DoNotOptimize, whose asm tare::do_not_optimize copies) and the blur
// kernel of examples/kernels/blur/cpp/blur.hpp (the same code the C++ worker times).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>

#include "blur.hpp"

static void empty(benchmark::State& state) {
    std::uint64_t i = 0;
    for (auto _ : state) {
        std::uint64_t v = i++;
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(empty);

static void blur(benchmark::State& state) {
    Blur b(state.range(0), 3);
    for (auto _ : state) {
        b.once();
        benchmark::DoNotOptimize(b.out());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.bytes_per_loop()));
}
BENCHMARK(blur)->Arg(256);

BENCHMARK_MAIN();
