//! The `criterion` harness: a Criterion.rs bench target. TARGET is the bench executable, or a
//! Cargo package directory whose bench target (`--bench NAME`; the only one when there is one)
//! is built with `cargo bench --no-run` (once per session: its path kept in
//! `TARE_SESSION_DIR`). Kernels from `EXE --bench --list` (Criterion's ids, `sum/256`); `run
//! loops=N reps=K` runs `EXE --bench --exact ID --sample-size max(K,10) --warm-up-time 0.001
//! --measurement-time T --nresamples 10 --noplot` with `CRITERION_HOME` a fresh directory, and
//! reads back the raw samples Criterion writes (`ID/new/sample.json`: each sample's iteration
//! count and total ns) and its throughput (`benchmark.json`: bytes or elements per iteration).
//!
//! Loops: Criterion picks the iterations of its samples (linear sampling: d, 2d, … 10d with d
//! from its warm-up and `--measurement-time`; flat: all equal). The harness aims their mean at
//! N: T = 10 × N × (the kernel's last time per iteration); each sample is read by its own
//! count (`loops=approximate`). Criterion takes at least 10 samples a process; those not asked
//! for yet are kept for the next requests (`ahead`).
//!
//! Limits: Criterion's timing (its `iter`, `iter_batched` setup excluded, `iter_custom` as the
//! user times) is what a sample holds; its own analysis (bootstrap, change against a saved
//! baseline, plots) is not used; no parameters (they are in the id); the clock is
//! `std::time::Instant`, taken as 1 ns and free to read.

use super::common;
use super::pace::Pace;
use super::{kernel_name, last_line, Harness, Kernel, Sample};
use crate::harness::criterion as crit;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Criterion {
    exe: PathBuf,
    args: Vec<String>,
    kernels: Vec<Kernel>,
    /// Criterion's id of each kernel, in `kernels` order.
    ids: Vec<String>,
    pace: Pace,
    home: PathBuf,
}

/// The bench executable of a Cargo package: built (`cargo bench --no-run`), or found where an
/// earlier worker of the session left its path.
fn build(package: &Path, bench: Option<&str>) -> Result<PathBuf, String> {
    let cached =
        common::session_dir().map(|d| d.join(common::cache_name("criterion-exe", package, &bench)));
    if let Some(exe) = cached
        .as_ref()
        .and_then(|c| std::fs::read_to_string(c).ok())
        .map(PathBuf::from)
        .filter(|p| p.is_file())
    {
        return Ok(exe);
    }
    let mut cmd = Command::new("cargo");
    cmd.args(["bench", "--no-run", "--message-format=json"]);
    if let Some(b) = bench {
        cmd.args(["--bench", b]);
    }
    let out = cmd
        .current_dir(package)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}; install Rust"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err
            .lines()
            .find(|l| l.trim_start().starts_with("error"))
            .unwrap_or("no reason given");
        return Err(format!(
            "cargo bench --no-run failed in {}: {why}",
            package.display()
        ));
    }
    let exes = bench_executables(&String::from_utf8_lossy(&out.stdout));
    let exe = match &exes[..] {
        [one] => one.1.clone(),
        [] => {
            return Err(format!(
                "{} has no bench target{}",
                package.display(),
                bench.map(|b| format!(" {b}")).unwrap_or_default()
            ))
        }
        many => {
            let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "{} has several bench targets ({}): name one with --bench NAME",
                package.display(),
                names.join(", ")
            ));
        }
    };
    if let Some(c) = cached {
        let _ = std::fs::write(c, exe.as_os_str().as_encoded_bytes());
    }
    Ok(exe)
}

/// (target name, executable) of each bench target in `cargo bench --no-run
/// --message-format=json` output.
fn bench_executables(text: &str) -> Vec<(String, PathBuf)> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact")
        .filter(|v| {
            v["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bench"))
        })
        .filter_map(|v| {
            Some((
                v["target"]["name"].as_str()?.to_string(),
                PathBuf::from(v["executable"].as_str()?),
            ))
        })
        .collect()
}

/// Criterion's ids in `EXE --bench --list` output (`ID: benchmark` lines).
fn listed(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_suffix(": benchmark"))
        .map(str::to_string)
        .collect()
}

/// A benchmark's raw samples: Criterion's `sample.json` (iterations and total ns per sample)
/// and the throughput per iteration from its `benchmark.json`.
fn parse_samples(sample: &str, benchmark: &str) -> Result<Vec<Sample>, String> {
    let s: Value =
        serde_json::from_str(sample).map_err(|e| format!("Criterion's sample.json: {e}"))?;
    let (bytes, items) = crit::throughput(&serde_json::from_str(benchmark).unwrap_or(Value::Null));
    let (Some(iters), Some(times)) = (s[crit::ITERS].as_array(), s[crit::TIMES].as_array()) else {
        return Err("Criterion's sample.json has no iters and times".into());
    };
    iters
        .iter()
        .zip(times)
        .map(|(n, t)| {
            let (Some(n), Some(t)) = (n.as_f64(), t.as_f64()) else {
                return Err("a sample that is not a number in Criterion's sample.json".into());
            };
            if n < 1.0 {
                return Err("a sample of no iterations in Criterion's sample.json".into());
            }
            Ok(Sample {
                loops: n.round() as u64,
                ns: t.round() as u64,
                cpu_ns: None,
                bytes: bytes.map(|b| (b * n).round() as u64),
                items: items.map(|i| (i * n).round() as u64),
                metrics: Default::default(),
            })
        })
        .collect()
}

/// The files of the one benchmark a run measured, under `home` (`.../new/sample.json` and
/// its `benchmark.json`).
fn find_new(home: &Path) -> Option<(PathBuf, PathBuf)> {
    let new = crit::bench_dirs(home, usize::MAX)
        .into_iter()
        .next()?
        .join("new");
    Some((new.join(crit::SAMPLE), new.join(crit::BENCHMARK)))
}

impl Criterion {
    /// Finds or builds the executable and lists its benchmarks.
    pub fn start(
        target: &Path,
        bench: Option<&str>,
        args: &[String],
        dir: &Path,
    ) -> Result<Criterion, String> {
        let exe = if target.is_dir() {
            build(target, bench)?
        } else if target.is_file() {
            target.to_path_buf()
        } else {
            return Err(format!(
                "no Criterion bench executable or Cargo package {}",
                target.display()
            ));
        };
        let out = Command::new(&exe)
            .arg("--bench")
            .args(args)
            .arg("--list")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} --bench --list failed: {}",
                exe.display(),
                last_line(&out)
            ));
        }
        let ids = listed(&String::from_utf8_lossy(&out.stdout));
        if ids.is_empty() {
            return Err(format!(
                "{} lists no benchmarks (is it a Criterion.rs bench target?)",
                exe.display()
            ));
        }
        let mut kernels: Vec<Kernel> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            common::add_kernel(
                &mut kernels,
                kernel_name(id),
                i,
                format!("Criterion.rs benchmark {id}"),
            );
        }
        let pace = Pace::load("criterion", &exe, args, ids.len());
        Ok(Criterion {
            exe,
            args: args.to_vec(),
            kernels,
            ids,
            pace,
            home: dir.join("criterion"),
        })
    }
}

/// Criterion's `--measurement-time` (seconds) for samples averaging `loops` iterations of
/// `per_iter` ns: its 10 linear samples d … 10d hold 55d iterations, and it sets d from this
/// time; none known (or 1 loop) is the least time, which gives d = 1.
fn measurement_time(loops: u64, samples: u64, per_iter: Option<f64>) -> f64 {
    match per_iter {
        Some(t) if loops > 1 && t > 0.0 => (samples as f64 * loops as f64 * t * 1e-9).max(1e-6),
        _ => 1e-6,
    }
}

impl Harness for Criterion {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn about(&self) -> Option<String> {
        Some(format!("Criterion.rs {}", self.exe.display()))
    }

    fn approximate_loops(&self) -> bool {
        true
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        let id = &self.ids[index];
        let samples = reps.max(10);
        let _ = std::fs::remove_dir_all(&self.home);
        let out = Command::new(&self.exe)
            .arg("--bench")
            .args(&self.args)
            .args(["--exact", id, "--noplot", "--nresamples", "10"])
            .args(["--warm-up-time", "0.001", "--sample-size"])
            .arg(samples.to_string())
            .arg("--measurement-time")
            .arg(format!(
                "{:.9}",
                measurement_time(loops, samples, self.pace.get(index))
            ))
            .env("CRITERION_HOME", &self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        if !out.status.success() {
            return Err(format!("{id}: {}", last_line(&out)));
        }
        let (sample, bench) = find_new(&self.home)
            .ok_or_else(|| format!("{id}: Criterion wrote no samples (is the id listed?)"))?;
        let got = parse_samples(
            &std::fs::read_to_string(sample).unwrap_or_default(),
            &std::fs::read_to_string(bench).unwrap_or_default(),
        )
        .map_err(|e| format!("{id}: {e}"))?;
        let (n, ns) = got
            .iter()
            .fold((0u64, 0u64), |(n, ns), s| (n + s.loops, ns + s.ns));
        if n > 0 {
            self.pace.remember(index, ns as f64 / n as f64);
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_criterion_files() {
        // As Criterion.rs 0.5.1 writes them (target/criterion/sum/256/new/).
        let sample =
            r#"{"sampling_mode":"Linear","iters":[3095.0,6190.0],"times":[129000.0,306642.0]}"#;
        let bench = r#"{"group_id":"sum","function_id":null,"value_str":"256","throughput":{"Bytes":2048},"full_id":"sum/256","directory_name":"sum/256","title":"sum/256"}"#;
        let s = parse_samples(sample, bench).unwrap();
        assert_eq!(
            (s[0].loops, s[0].ns, s[0].bytes),
            (3095, 129000, Some(3095 * 2048))
        );
        assert_eq!((s[1].loops, s[1].ns, s[1].items), (6190, 306642, None));
        let el = r#"{"throughput":{"Elements":4}}"#;
        assert_eq!(parse_samples(sample, el).unwrap()[0].items, Some(12380));
        assert!(parse_samples("{}", bench).is_err());
        assert_eq!(
            listed("sum/256: benchmark\nsum/4096: benchmark\n\nsort: benchmark\n"),
            ["sum/256", "sum/4096", "sort"]
        );
        let cargo = r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"x"},"executable":null}
{"reason":"compiler-artifact","target":{"kind":["bench"],"name":"suite"},"executable":"/t/release/deps/suite-1"}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            bench_executables(cargo),
            [(
                "suite".to_string(),
                PathBuf::from("/t/release/deps/suite-1")
            )]
        );
        assert_eq!(measurement_time(1, 10, Some(5.0)), 1e-6);
        assert!((measurement_time(1000, 10, Some(100.0)) - 1e-3).abs() < 1e-12);
    }
}
