//! Threaded kernels (`threads=T` in the kernel's announcement; Google Benchmark's `->Threads`,
//! JMH's `@Threads`): the same CPU-bound body on 1 and on 2 threads of the C client
//! (tests/kernels/threads.c, compiled here). Each thread runs the sample's N loops, released
//! together; the sample's time is to the last thread's end, so on two cores the time per loop
//! per thread is about that of one thread (one after the other it would be twice). The summary
//! shows the per-thread time and the total throughput; the results record `threads`.

mod common;
use common::tare;

#[path = "common/skip.rs"]
mod skip;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn bench(v: &Value, name: &str) -> Value {
    v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {v}"))
        .clone()
}

/// The fastest sample's time per loop.
fn fastest(b: &Value) -> f64 {
    b["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["wall_time"].as_f64())
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn two_threads_do_twice_the_work_in_the_time_of_one() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        skip::skip("two CPUs", "run on a machine with two or more CPUs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("threads");
    let root = Path::new(ROOT);
    match Command::new("cc")
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("clients/c"))
        .arg("-o")
        .arg(&bin)
        .arg(root.join("tests/kernels/threads.c"))
        .arg(root.join("clients/c/tare_worker.c"))
        .args(["-lm", "-pthread"])
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("cc failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(_) => return skip::skip("a C compiler (cc)", "apt-get install gcc"),
    }
    // Up to three sessions, the best of them: the machine is shared (the median of 2 threads
    // ran 1.9x one thread's at load 2 here, the fastest sample 1.01x; a session of 20 samples
    // a process once 1.77x); one after the other would be 2x in every session.
    let mut best = f64::INFINITY;
    let mut v = Value::Null;
    for attempt in 0..3 {
        let j = dir.path().join(format!("k{attempt}.json"));
        let out = tare()
            .args(["kernels", bin.to_str().unwrap(), "-r", "3", "--seed", "4"])
            .args(["--export-json", j.to_str().unwrap()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("per thread (2 threads; total "),
            "per-thread time and total throughput: {stdout}"
        );
        v = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        let (one, two) = (bench(&v, "spin/1/c"), bench(&v, "spin/2/c"));
        assert!(
            one["extra"]["kernel"]["threads"].is_null(),
            "1 is not written"
        );
        assert_eq!(two["extra"]["kernel"]["threads"], 2);
        let r = fastest(&two) / fastest(&one);
        eprintln!("per-thread time per loop, 2 threads / 1 thread (fastest samples): {r:.2}");
        best = best.min(r);
        if best < 1.5 {
            break;
        }
    }
    assert!(
        (0.7..1.5).contains(&best),
        "2 threads / 1 = {best:.2}: the threads did not run together, or did not each run N loops"
    );
    let (one, two) = (bench(&v, "spin/1/c"), bench(&v, "spin/2/c"));
    // CPU time: both threads worked (about twice one thread's CPU per loop).
    let cpu = |b: &Value| {
        let xs: Vec<f64> = b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["cpu_time"].as_f64())
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let c = cpu(&two) / cpu(&one);
    assert!(
        (1.5..2.8).contains(&c),
        "CPU per loop, 2 threads / 1 = {c:.2}"
    );
}
