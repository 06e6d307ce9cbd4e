//! A small Criterion.rs suite: a group with an input (names `sum/256`, `sum/4096`), a plain
//! benchmark, and throughput. Built with TARE_SLOWER_HASH=P in the environment, `hash` does P%
//! more work per iteration (the others are unchanged): the tests' "one benchmark slower" build.
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn slower() -> usize {
    option_env!("TARE_SLOWER_HASH")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("sum");
    for n in [256u64, 4096] {
        let v: Vec<u64> = (1..=n).collect();
        g.throughput(Throughput::Bytes(n * 8));
        g.bench_with_input(BenchmarkId::from_parameter(n), &v, |b, v| {
            b.iter(|| black_box(v).iter().sum::<u64>())
        });
    }
    g.finish();
    let input: Vec<u32> = (0..512u32).map(|i| i.wrapping_mul(2654435761)).collect();
    c.bench_function("sort", |b| {
        b.iter(|| {
            let mut v = black_box(&input).clone();
            v.sort_unstable();
            v
        })
    });
    // FNV-1a over 2 KiB: each byte depends on the last, time linear in the length.
    let buf: Vec<u8> = (0..2048 * (100 + slower()) / 100)
        .map(|i| (i * 31) as u8)
        .collect();
    c.bench_function("hash", |b| {
        b.iter(|| {
            let mut h: u64 = 1469598103934665603;
            for &c in black_box(&buf) {
                h = (h ^ c as u64).wrapping_mul(1099511628211);
            }
            h
        })
    });
}

criterion_group!(suite, benches);
criterion_main!(suite);
