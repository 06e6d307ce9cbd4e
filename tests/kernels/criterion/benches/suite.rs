//! A small Criterion.rs suite: a group with an input (names `sum/256`, `sum/4096`), a plain
//! benchmark, and throughput. Built with TARE_SLOWER_HASH=P in the environment, `hash` does P%
//! more work per iteration (the others are unchanged): the tests' "one benchmark slower" build.
//! P reaches the code only as a static's value read through `black_box`, so both builds have
//! the same machine code and only that value differs (with P folded into `hash`'s setup, the
//! Google Benchmark twin of this suite moved every later function and one ran 2x faster: see
//! tests/kernels/gbench/suite.cpp).
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// `hash`'s work in percent: 100 + TARE_SLOWER_HASH (decimal digits) at build time.
static HASH_WORK_PERCENT: usize = 100 + digits(option_env!("TARE_SLOWER_HASH"));

const fn digits(s: Option<&str>) -> usize {
    let Some(s) = s else { return 0 };
    let b = s.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "TARE_SLOWER_HASH: decimal digits");
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    n
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
    let buf: Vec<u8> = (0..2048 * black_box(HASH_WORK_PERCENT) / 100)
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
