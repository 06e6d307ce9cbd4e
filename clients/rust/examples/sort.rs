//! A worker for tare's test of per-loop state (tests/kernels_state.rs): an in-place insertion
//! sort of n pseudo-random ints (O(n²) unsorted, O(n) sorted) in three shapes, as
//! tests/kernels/sort.c: `per_sample` (init once per sample; loops 2..N sort sorted data),
//! `per_loop` (`each`: a fresh copy before every loop, untimed), `copy_sort` (copy and sort,
//! both timed).
use tare_worker::{black_box, Kernel, Worker};

fn data(n: i64) -> Vec<i32> {
    let mut x = 12345u32;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            (x >> 1) as i32
        })
        .collect()
}

/// Not inlined: every shape runs the same machine code (inlined into the `body` loop it ran
/// 1.7× slower than in `each` here).
#[inline(never)]
fn insertion_sort(a: &mut [i32]) {
    for i in 1..a.len() {
        let v = a[i];
        let mut j = i;
        while j > 0 && a[j - 1] > v {
            a[j] = a[j - 1];
            j -= 1;
        }
        a[j] = v;
    }
}

fn kernel(name: &str, doc: &str) -> Kernel<(Vec<i32>, Vec<i32>)> {
    Kernel::new(name).doc(doc).param("n", 2000).setup(|s| {
        let n = s.int("n")?;
        if n < 1 {
            return Err("n must be at least 1".into());
        }
        Ok((data(n), vec![0; n as usize]))
    })
}

fn main() {
    Worker::new()
        .kernel(
            kernel("per_sample", "init per sample, sort in place")
                .init(|(src, work), _| work.copy_from_slice(src))
                .body(|(_, work)| {
                    insertion_sort(work);
                    black_box(&work[..]);
                }),
        )
        .kernel(
            kernel("per_loop", "a fresh copy before every loop, sort in place").each(
                4,
                |(src, _)| src.clone(),
                |_, input| {
                    insertion_sort(input);
                    black_box(&input[..]);
                },
            ),
        )
        .kernel(kernel("copy_sort", "copy and sort, both timed").body(|(src, work)| {
            work.copy_from_slice(src);
            insertion_sort(work);
            black_box(&work[..]);
        }))
        .main()
}
