//! Cost of creating and removing one run group (no process): N iterations.
use std::path::Path;
use std::time::Instant;
use tare::exec::{detect, Limits, Needs};
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let pref = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "v1".into())
        .parse()
        .unwrap();
    let (b, _) = detect(pref, &Needs::default(), Path::new("/")).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        let mut g = b.create(&Limits::default(), None).unwrap();
        g.destroy().unwrap();
    }
    println!(
        "create+destroy {:.1} us",
        t.elapsed().as_secs_f64() / n as f64 * 1e6
    );
}
