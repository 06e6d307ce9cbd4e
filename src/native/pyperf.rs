//! The `pyperf` harness: a script that benchmarks with `pyperf.Runner` (`bench_func`,
//! `bench_time_func`, `timeit`, ...), driven through pyperf's own worker mode, which takes the
//! loops and values from its command line. The script is started as
//! `PYTHON SCRIPT [ARGS] --worker --worker-task I --loops N --values K --warmups 0 -o FILE`:
//! task I is the script's I-th benchmark, FILE pyperf's JSON; each value (seconds per inner
//! loop) becomes a sample of `ns = value × N × inner_loops × 1e9`, and `items = N × inner_loops`
//! when the benchmark declares inner loops (`timeit` with `duplicate`, `inner_loops=`).
//!
//! Process model: every `run` starts a fresh Python worker, as pyperf's own master does (the
//! one difference: tare, not pyperf, picks loops, values and how many processes). The kernels
//! are found at start by one worker run of every benchmark with 1 loop and 1 value (pyperf has
//! no listing; this is the same code path the measurement takes). Names are pyperf's with each
//! character outside `[A-Za-z0-9_./-]` made `_`. The clock is `time.perf_counter`, pyperf's
//! timer; its resolution and read cost are measured once per process by a short Python run.
//!
//! The interpreter is `--python PATH` (a venv's, say), else `python3` on PATH; its path and
//! version, and pyperf's, go into the worker's hello (`version=`), so the results say which
//! Python ran.
//!
//! Not for: benchmarks whose unit is not seconds (`--track-memory`, `--tracemalloc`): refused.

use super::{kernel_name, last_line, Harness, Kernel, Sample};
use crate::harness::pyperf as format;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Pyperf {
    /// The interpreter (`--python`, else `python3` on PATH).
    python: PathBuf,
    /// `PATH VERSION, pyperf VERSION` of the interpreter, for the worker's version.
    about: String,
    script: PathBuf,
    args: Vec<String>,
    out: PathBuf,
    kernels: Vec<Kernel>,
    clock: Option<(f64, f64)>,
}

/// One benchmark in pyperf's JSON: its metadata (suite's, then its own, then its run's) and
/// its values.
#[derive(Debug, PartialEq)]
struct Bench {
    name: String,
    loops: u64,
    inner_loops: u64,
    unit: String,
    values: Vec<f64>,
}

/// The benchmarks in a pyperf JSON file (format version 1.0).
fn parse_results(text: &str) -> Result<Vec<Bench>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("pyperf's JSON: {e}"))?;
    let suite = format::metadata(&v);
    let mut out = Vec::new();
    for b in v["benchmarks"]
        .as_array()
        .ok_or("pyperf's JSON has no benchmarks")?
    {
        let mut m = suite.clone();
        m.extend(format::metadata(b));
        let mut values = Vec::new();
        for r in b["runs"].as_array().into_iter().flatten() {
            m.extend(format::metadata(r));
            values.extend(
                r["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_f64),
            );
        }
        out.push(Bench {
            name: m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            loops: format::loops(&m).unwrap_or(0),
            inner_loops: format::inner_loops(&m),
            unit: format::unit(&m).to_string(),
            values,
        });
    }
    Ok(out)
}

/// The CPUs this process may use, as a list (`0-3,6`), for pyperf's `--affinity`: without it
/// a pyperf worker pins itself to the isolated CPUs it finds, overriding tare's `--cpus`.
fn allowed_cpus() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|l| l.trim().to_string())
}

impl Pyperf {
    /// Runs every benchmark of `script` once to learn their names (pyperf's JSON goes to `dir`).
    pub fn start(
        python: &Path,
        script: &Path,
        args: &[String],
        dir: &Path,
    ) -> Result<Pyperf, String> {
        if !script.is_file() {
            return Err(format!("no pyperf script {}", script.display()));
        }
        let about = super::common::probe_python(python, ABOUT_PY, "pyperf")?;
        let mut p = Pyperf {
            python: python.to_path_buf(),
            about,
            script: script.to_path_buf(),
            args: args.to_vec(),
            out: dir.join("pyperf.json"),
            kernels: Vec::new(),
            clock: None,
        };
        let all = p.worker(None, 1, 1)?;
        for (i, b) in all.iter().enumerate() {
            let doc = format!("pyperf benchmark {}", b.name);
            super::common::add_kernel(&mut p.kernels, kernel_name(&b.name), i, doc);
        }
        Ok(p)
    }

    /// One pyperf worker process: task `task` (all when None), `loops` loops, `values` values.
    fn worker(&self, task: Option<usize>, loops: u64, values: u64) -> Result<Vec<Bench>, String> {
        let _ = std::fs::remove_file(&self.out); // pyperf refuses to overwrite its output
        let mut cmd = Command::new(&self.python);
        cmd.arg(&self.script).args(&self.args).arg("--worker");
        if let Some(t) = task {
            cmd.arg(format!("--worker-task={t}"));
        }
        cmd.arg(format!("--loops={loops}"))
            .arg(format!("--values={values}"))
            .arg("--warmups=0")
            .arg("--output")
            .arg(&self.out);
        if let Some(cpus) = allowed_cpus() {
            cmd.arg(format!("--affinity={cpus}"));
        }
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.python.display()))?;
        let script = self.script.display();
        if !out.status.success() {
            return Err(format!(
                "pyperf script {script} failed: {}",
                last_line(&out)
            ));
        }
        let text = std::fs::read_to_string(&self.out).map_err(|_| {
            format!("pyperf script {script} ran no benchmark (does it use pyperf.Runner?)")
        })?;
        let benches = parse_results(&text)?;
        if let Some(b) = benches.iter().find(|b| b.unit != "second") {
            return Err(format!(
                "pyperf benchmark {} measures {}, not time",
                b.name, b.unit
            ));
        }
        Ok(benches)
    }
}

/// The interpreter as it names itself, its version and pyperf's: `PATH VERSION, pyperf VERSION`.
const ABOUT_PY: &str = "import sys, pyperf
print('python %s %s, pyperf %s' % (sys.executable, sys.version.split()[0], pyperf.__version__))";

/// Measures `time.perf_counter`: the smallest non-zero step between consecutive reads and the
/// mean cost of a read (20 000 reads each, a few ms), printed in ns.
const CLOCK_PY: &str = "import time
p = time.perf_counter
def step():
    a = p(); b = p()
    return b - a
r = min(filter(None, (step() for _ in range(20000))))
n = 20000
t = p()
for _ in range(n): p()
print(r * 1e9, (p() - t) / n * 1e9)";

/// (resolution_ns, cost_ns) of `time.perf_counter` in `python` (pyperf's timer, and
/// pytest-benchmark's), by a short run of [`CLOCK_PY`].
pub fn measure_perf_counter(python: &Path) -> Result<(f64, f64), String> {
    let out = Command::new(python)
        .args(["-c", CLOCK_PY])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match f[..] {
        [res, cost] if out.status.success() && res > 0.0 && cost > 0.0 => Ok((res, cost)),
        _ => Err(format!(
            "measuring time.perf_counter failed: {}",
            last_line(&out)
        )),
    }
}

impl Harness for Pyperf {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn about(&self) -> Option<String> {
        Some(self.about.clone())
    }

    fn clock(&mut self) -> Result<(f64, f64), String> {
        if let Some(c) = self.clock {
            return Ok(c);
        }
        let c = measure_perf_counter(&self.python)?;
        self.clock = Some(c);
        Ok(c)
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        let name = &self.kernels[index].name;
        let benches = self.worker(Some(index), loops, reps)?;
        let [b] = &benches[..] else {
            return Err(format!(
                "pyperf benchmark {name}: the worker returned {} benchmarks, not 1",
                benches.len()
            ));
        };
        if b.loops != loops || b.values.len() as u64 != reps {
            return Err(format!(
                "pyperf benchmark {name}: asked {loops} loops × {reps} values, got {} × {}",
                b.loops,
                b.values.len()
            ));
        }
        let inner = b.inner_loops;
        Ok(b.values
            .iter()
            .map(|v| Sample {
                loops,
                ns: (v * (loops * inner) as f64 * 1e9).round() as u64,
                cpu_ns: None,
                bytes: None,
                items: (inner > 1).then_some(loops * inner),
                metrics: Default::default(),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pyperf_json() {
        // The shape a pyperf 2.10 worker writes: one benchmark's metadata hoisted to the
        // suite; with several, each keeps its own.
        let one = r#"{"benchmarks":[{"runs":[{"values":[1.5e-05,2e-05]}]}],
            "metadata":{"name":"sum 2","loops":4,"inner_loops":10,"unit":"second"},"version":"1.0"}"#;
        assert_eq!(
            parse_results(one).unwrap(),
            [Bench {
                name: "sum 2".into(),
                loops: 4,
                inner_loops: 10,
                unit: "second".into(),
                values: vec![1.5e-05, 2e-05]
            }]
        );
        let two = r#"{"benchmarks":[{"metadata":{"name":"a"},"runs":[{"values":[1.0]}]},
            {"metadata":{"name":"b","unit":"byte"},"runs":[{"values":[2.0]}]}],
            "metadata":{"loops":1,"unit":"second"},"version":"1.0"}"#;
        let b = parse_results(two).unwrap();
        assert_eq!((b[0].name.as_str(), b[0].unit.as_str()), ("a", "second"));
        assert_eq!(
            (b[1].name.as_str(), b[1].unit.as_str(), b[1].loops),
            ("b", "byte", 1)
        );
        assert!(parse_results("{}").is_err());
        assert_eq!(kernel_name("sum2 x(1)"), "sum2_x_1_");
    }
}
