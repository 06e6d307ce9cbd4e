//! Per-run cost of the exec layer alone: N measured runs through the chosen backend.
//! Usage: exec_loop N [v1|v2|rusage]; prints the mean seconds per run.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use tare::exec::{detect, Executor, Needs, RunSpec};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let pref = args
        .next()
        .unwrap_or_else(|| "auto".into())
        .parse()
        .expect("backend");
    let (backend, _) = detect(pref, &Needs::default(), Path::new("/")).expect("backend");
    let ex = Executor::new(backend);
    let spec = RunSpec::new(["/bin/true"]);
    let cancel = AtomicBool::new(false);
    let start = Instant::now();
    for _ in 0..n {
        ex.run(&spec, &cancel).expect("run");
    }
    println!("{:.9}", start.elapsed().as_secs_f64() / n as f64);
}
