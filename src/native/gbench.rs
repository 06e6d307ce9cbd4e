//! The `gbench` harness: a Google Benchmark binary. Its benchmarks come from
//! `--benchmark_list_tests` (arguments and templates kept: `BM_sort/64`, `BM_t<3>` as kernel
//! `BM_t_3_`), and `run loops=N reps=K` runs the binary with
//! `--benchmark_filter='^NAME$' --benchmark_repetitions=K`, its JSON (`--benchmark_out`) read
//! back: each repetition (`run_type` `iteration`) a sample of its own iteration count, `ns` its
//! `real_time × iterations`, `cpu_ns` its `cpu_time × iterations`, `bytes`/`items` from
//! `bytes_per_second`/`items_per_second` and every user counter as a metric `m.NAME`
//! (lowercased, other characters `_`).
//!
//! Loops: Google Benchmark 1.8 and later fix the iterations (`--benchmark_min_time=Nx`; found by
//! trying the flag at start). Before 1.8 (Debian's 1.7) the library picks them: it grows the
//! count until a run lasts `--benchmark_min_time` seconds and lands near 1.4 × min_time of the
//! benchmark's own time (CPU time unless `UseRealTime`/`UseManualTime`), the same count for
//! every repetition of a process. So the harness aims: min_time = N × (its last time per
//! iteration) / 1.4, which lands within a few percent of N; 1 loop is exactly 1 (a min_time of
//! 1 ns). The worker says `loops=approximate` in its hello, and tare reads each sample by its
//! own count. The last time per iteration is kept in the session directory (`TARE_SESSION_DIR`)
//! so a new process aims as well as the last one.
//!
//! Limits: Google Benchmark's own timing (its loop, `PauseTiming`/`ResumeTiming` and all) is
//! what a sample holds; a benchmark with iterations, repetitions or min_time fixed in its code
//! (`->Iterations(n)`, `->Repetitions(n)`, `->MinTime(s)`) keeps them (the samples say so by
//! their counts); no parameters (they are in the name); the clock is the library's, taken as
//! 1 ns and free to read.

use super::common;
use super::pace::Pace;
use super::{kernel_name, last_line, Harness, Kernel, Sample};
use crate::harness::gbench as gb;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Gbench {
    bin: PathBuf,
    args: Vec<String>,
    kernels: Vec<Kernel>,
    /// Google Benchmark's name of each kernel (`BM_t<3>`), in `kernels` order.
    names: Vec<String>,
    /// The library fixes iterations (`--benchmark_min_time=Nx`, 1.8 and later).
    exact: bool,
    /// The last time per iteration of each kernel (ns, the library's own basis), to aim.
    pace: Pace,
    out: PathBuf,
}

/// A counter's name as a metric key (`[a-z0-9_.-]`).
fn metric_key(name: &str) -> String {
    name.chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `^NAME$` with the POSIX extended regular expression characters of NAME escaped (Google
/// Benchmark matches its filter with std::regex or regcomp, both extended).
fn filter(name: &str) -> String {
    let mut s = String::from("^");
    for c in name.chars() {
        if r"\.[]()*+?{}|^$".contains(c) {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('$');
    s
}

/// The first min_time (seconds) for `loops` loops at `per_iter` ns an iteration: the library
/// ends near 1.4 × min_time; 1 loop (or no estimate) is a min_time of 1 ns, which the first
/// iteration always passes.
fn aim(loops: u64, per_iter: Option<f64>) -> f64 {
    match per_iter {
        Some(t) if loops > 1 && t > 0.0 => (loops as f64 * t * 1e-9 / 1.4).max(1e-9),
        _ => 1e-9,
    }
}

impl Gbench {
    /// Lists the binary's benchmarks and finds whether it fixes iterations.
    pub fn start(bin: &Path, args: &[String], dir: &Path) -> Result<Gbench, String> {
        // A bare name is a file here, not a command on PATH (the binary a build left).
        let bin = if bin.components().count() == 1 {
            Path::new(".").join(bin)
        } else {
            bin.to_path_buf()
        };
        if !bin.is_file() {
            return Err(format!("no Google Benchmark binary {}", bin.display()));
        }
        let list = |extra: &[&str]| {
            Command::new(&bin)
                .args(args)
                .arg("--benchmark_list_tests=true")
                .args(extra)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", bin.display()))
        };
        let out = list(&[])?;
        if !out.status.success() {
            return Err(format!(
                "{} --benchmark_list_tests failed: {}",
                bin.display(),
                last_line(&out)
            ));
        }
        let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if names.is_empty() {
            return Err(format!(
                "{} lists no benchmarks (is it a Google Benchmark binary?)",
                bin.display()
            ));
        }
        let exact = list(&["--benchmark_min_time=1x"])?.status.success();
        let mut kernels: Vec<Kernel> = Vec::new();
        for (i, n) in names.iter().enumerate() {
            common::add_kernel(
                &mut kernels,
                kernel_name(n),
                i,
                format!("Google Benchmark {n}"),
            );
        }
        let pace = Pace::load("gbench", &bin, args, names.len());
        Ok(Gbench {
            bin,
            args: args.to_vec(),
            kernels,
            names,
            exact,
            pace,
            out: dir.join("gbench.json"),
        })
    }
}

/// One repetition as Google Benchmark reported it, and the library's own time per iteration
/// (ns: CPU time, or real time for `/real_time` and `/manual_time` benchmarks).
#[derive(Debug, PartialEq)]
struct Repetition {
    sample: Sample,
    basis_ns: f64,
}

/// The repetitions of benchmark `name` in Google Benchmark's JSON (`--benchmark_out`).
fn parse_results(text: &str, name: &str) -> Result<Vec<Repetition>, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("Google Benchmark's JSON: {e}"))?;
    let runs = v["benchmarks"]
        .as_array()
        .ok_or("Google Benchmark's JSON has no benchmarks")?;
    let mut out = Vec::new();
    for r in runs {
        if r["name"].as_str() != Some(name) || gb::run_type(r) != "iteration" {
            continue;
        }
        if let Some(why) = gb::error(r) {
            return Err(format!(
                "{name}: {}",
                why.as_str().unwrap_or("error_occurred")
            ));
        }
        let unit = match gb::time_unit(r) {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            u => return Err(format!("{name}: unknown time unit {u}")),
        };
        let (Some(iters), Some(real), Some(cpu)) = (
            r["iterations"].as_u64(),
            r["real_time"].as_f64(),
            r["cpu_time"].as_f64(),
        ) else {
            return Err(format!(
                "{name}: a run without iterations, real_time, cpu_time"
            ));
        };
        if iters == 0 {
            return Err(format!("{name}: a run of 0 iterations"));
        }
        let n = iters as f64;
        let real_ns = real * unit;
        let cpu_ns = cpu * unit;
        // Rates are per second of the library's basis: CPU time unless the benchmark is timed
        // in real or manual time (which its name then says).
        let basis_ns = if name.contains("/real_time") || name.contains("/manual_time") {
            real_ns
        } else {
            cpu_ns
        };
        let total = |rate: &Value| {
            rate.as_f64()
                .map(|r| (r * basis_ns * n * 1e-9).round() as u64)
        };
        let metrics: BTreeMap<String, f64> = r
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !gb::is_field(k, &[gb::RUN_FIELDS, gb::RATES]))
            .filter_map(|(k, v)| Some((metric_key(k), v.as_f64()?)))
            .collect();
        out.push(Repetition {
            sample: Sample {
                loops: iters,
                ns: (real_ns * n).round() as u64,
                cpu_ns: Some((cpu_ns * n).round() as u64),
                bytes: total(&r["bytes_per_second"]),
                items: total(&r["items_per_second"]),
                metrics,
            },
            basis_ns,
        });
    }
    Ok(out)
}

impl Harness for Gbench {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn about(&self) -> Option<String> {
        Some(if self.exact {
            "Google Benchmark, iterations fixed".into()
        } else {
            "Google Benchmark before 1.8, iterations approximate".into()
        })
    }

    fn approximate_loops(&self) -> bool {
        !self.exact
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        let name = self.names[index].clone();
        let min_time = if self.exact {
            format!("--benchmark_min_time={loops}x")
        } else {
            format!(
                "--benchmark_min_time={:e}",
                aim(loops, self.pace.get(index))
            )
        };
        let mut got: Vec<Repetition> = Vec::new();
        // A benchmark whose code fixes its repetitions gives its own number a process.
        for _ in 0..reps.min(100) {
            let _ = std::fs::remove_file(&self.out);
            let out = Command::new(&self.bin)
                .args(&self.args)
                .arg(format!("--benchmark_filter={}", filter(&name)))
                .arg(format!(
                    "--benchmark_repetitions={}",
                    reps - got.len() as u64
                ))
                .arg(&min_time)
                .arg("--benchmark_report_aggregates_only=false")
                .arg("--benchmark_out_format=json")
                .arg(format!("--benchmark_out={}", self.out.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
            if !out.status.success() {
                return Err(format!("{name}: {}", last_line(&out)));
            }
            let text = std::fs::read_to_string(&self.out)
                .map_err(|_| format!("{name}: the binary wrote no results"))?;
            let reps_now = parse_results(&text, &name)?;
            if reps_now.is_empty() {
                return Err(format!("{name}: no results for it (is the name listed?)"));
            }
            got.extend(reps_now);
            if got.len() as u64 >= reps {
                break;
            }
        }
        if let Some(last) = got.last() {
            self.pace.remember(index, last.basis_ns);
        }
        Ok(got.into_iter().map(|r| r.sample).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_filters_and_aims() {
        assert_eq!(kernel_name("BM_t<3>"), "BM_t_3_");
        assert_eq!(kernel_name("BM_sort/64/real_time"), "BM_sort/64/real_time");
        assert_eq!(metric_key("Foo Bar"), "foo_bar");
        assert_eq!(filter("BM_sort/64"), "^BM_sort/64$");
        assert_eq!(filter("BM_f<a.b>(1)"), r"^BM_f<a\.b>\(1\)$");
        assert_eq!(aim(1, Some(100.0)), 1e-9);
        assert_eq!(aim(100, None), 1e-9);
        assert!((aim(1400, Some(1000.0)) - 1e-3).abs() < 1e-12);
    }

    #[test]
    fn reads_google_benchmark_json() {
        // The shape Google Benchmark 1.7.1 writes (--benchmark_repetitions=2), trimmed.
        let text = r#"{"context":{"library_build_type":"release"},"benchmarks":[
          {"name":"BM_sort/64","run_name":"BM_sort/64","run_type":"iteration","repetitions":2,
           "repetition_index":0,"threads":1,"iterations":4484,"real_time":3.2e+02,
           "cpu_time":3.0e+02,"time_unit":"ns","Foo":3.0,"bytes_per_second":8.0e+08},
          {"name":"BM_sort/64","run_name":"BM_sort/64","run_type":"iteration","repetitions":2,
           "repetition_index":1,"threads":1,"iterations":4484,"real_time":0.31,
           "cpu_time":0.3,"time_unit":"us","Foo":3.0,"bytes_per_second":8.0e+08},
          {"name":"BM_sort/64_mean","run_name":"BM_sort/64","run_type":"aggregate",
           "aggregate_name":"mean","iterations":2,"real_time":3.1e+02,"cpu_time":3.0e+02,
           "time_unit":"ns"},
          {"name":"BM_other","run_type":"iteration","iterations":1,"real_time":1,
           "cpu_time":1,"time_unit":"ns"}]}"#;
        let r = parse_results(text, "BM_sort/64").unwrap();
        assert_eq!(r.len(), 2);
        let s = &r[0].sample;
        assert_eq!(
            (s.loops, s.ns, s.cpu_ns),
            (4484, 1_434_880, Some(1_345_200))
        );
        // 8e8 B/s over the CPU time (4484 × 300 ns): 1076.16 kB.
        assert_eq!(s.bytes, Some(1_076_160));
        assert_eq!(s.items, None);
        assert_eq!(s.metrics.get("foo"), Some(&3.0));
        assert_eq!(r[1].sample.ns, 1_390_040);
        assert_eq!(r[0].basis_ns, 300.0);
        let err = r#"{"benchmarks":[{"name":"BM_x","run_type":"iteration","error_occurred":true,
            "error_message":"no input","iterations":0,"real_time":0,"cpu_time":0}]}"#;
        assert_eq!(parse_results(err, "BM_x").unwrap_err(), "BM_x: no input");
        assert!(parse_results("{}", "BM_x").is_err());
    }
}
