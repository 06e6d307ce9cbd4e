// The blur example kernel (docs/protocol.md) and the empty kernel on the Rust client.
// Build: ./build.sh; run standalone: target/release/blur -p size=64.
// (clients/rust/examples/blur.rs includes this file so the client's tests run it.)
use tare_worker::{black_box, Kernel, Worker};

/// The image, scratch and output buffers and the normalized weights.
struct Blur {
    n: usize,
    r: i64,
    img: Vec<f64>,
    tmp: Vec<f64>,
    out: Vec<f64>,
    w: Vec<f64>,
}

impl Blur {
    fn new(size: i64, radius: i64) -> Result<Blur, tare_worker::Error> {
        if !(1..=65536).contains(&size) || !(1..=65536).contains(&radius) {
            return Err(format!("blur: size={size} and radius={radius} must be integers in 1..65536").into());
        }
        let n = size as usize;
        let mut img = vec![0.0; n * n];
        for y in 0..n {
            for x in 0..n {
                img[y * n + x] = ((x * 7 + y * 13) % 256) as f64 / 255.0;
            }
        }
        let s = radius as f64 / 2.0;
        let mut w: Vec<f64> = (-radius..=radius)
            .map(|i| (-((i * i) as f64) / (2.0 * s * s)).exp())
            .collect();
        let mut sum = 0.0;
        for v in &w {
            sum += v;
        }
        for v in &mut w {
            *v /= sum;
        }
        Ok(Blur {
            n,
            r: radius,
            img,
            tmp: vec![0.0; n * n],
            out: vec![0.0; n * n],
            w,
        })
    }

    /// One loop: horizontal then vertical pass, edges clamped, sums in order i = -r..r.
    fn once(&mut self) {
        let (n, r) = (self.n, self.r);
        let last = n as i64 - 1;
        let w = &self.w[..];
        for (row, trow) in self.img.chunks_exact(n).zip(self.tmp.chunks_exact_mut(n)) {
            for (x, t) in trow.iter_mut().enumerate() {
                let mut acc = 0.0;
                for (wi, i) in w.iter().zip(-r..=r) {
                    acc += wi * row[(x as i64 + i).clamp(0, last) as usize];
                }
                *t = acc;
            }
        }
        let tmp = &self.tmp[..];
        for (y, orow) in self.out.chunks_exact_mut(n).enumerate() {
            for (x, o) in orow.iter_mut().enumerate() {
                let mut acc = 0.0;
                for (wi, i) in w.iter().zip(-r..=r) {
                    acc += wi * tmp[(y as i64 + i).clamp(0, last) as usize * n + x];
                }
                *o = acc;
            }
        }
    }

    fn checksum(&self) -> f64 {
        let mut sum = 0.0;
        for v in &self.out {
            sum += v;
        }
        sum
    }
}

fn main() {
    Worker::new()
        .kernel(
            Kernel::new("blur")
                .doc("separable Gaussian blur of a generated size x size image")
                .param("size", 256)
                .param("radius", 3)
                .setup(|s| {
                    let b = Blur::new(s.int("size")?, s.int("radius")?)?;
                    s.bytes_per_loop((b.n * b.n * 8) as f64);
                    Ok(b)
                })
                .run(|b, sample, loops| {
                    for _ in 0..loops {
                        b.once();
                        black_box(&mut b.out);
                    }
                    sample.metric("checksum", b.checksum());
                }),
        )
        .kernel(
            Kernel::new("empty")
                .doc("does nothing: the per-iteration overhead")
                .body(|_| {
                    black_box(());
                }),
        )
        .main()
}
