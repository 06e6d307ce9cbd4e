//! The physical limit for per-run cost: a bare spawn+wait loop, no accounting at all.
//! Usage: spawn_loop N PROGRAM [ARGS…]; prints the mean seconds per run.

use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let argv: Vec<String> = args.collect();
    let (prog, rest) = argv
        .split_first()
        .map(|(p, r)| (p.clone(), r.to_vec()))
        .unwrap_or(("/bin/true".into(), vec![]));
    let start = Instant::now();
    for _ in 0..n {
        let status = Command::new(&prog)
            .args(&rest)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("spawn failed");
        assert!(status.success());
    }
    println!("{:.9}", start.elapsed().as_secs_f64() / n as f64);
}
