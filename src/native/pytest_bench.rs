//! The `pytest-benchmark` harness: a test file or directory whose tests use pytest-benchmark's
//! `benchmark` fixture, driven inside one pytest process per invocation (as a client library's
//! worker is one process): pytest starts with a small plugin of tare's (`-p
//! tare_pytest_worker`, written to the worker's temporary directory) whose
//! `pytest_runtestloop` lists the collected tests that use the fixture and then, instead of
//! running the session, serves requests on stdin (a copy taken before pytest's capture): `{"id": NODEID, "rounds": K, "min_time": T}`
//! sets pytest-benchmark's options (K rounds, `max_time` 1 ns so rounds = K, `min_time` T, no
//! warm-up, calibration precision 100) and runs that test once (`runtestprotocol`); the reply,
//! on a copy of the original stdout (pytest's own output goes to stderr, into a file), is the
//! benchmark's per-round data: `{"iterations": n, "data": [seconds per iteration, ...]}`. Each
//! round becomes a sample of `ns = data × n`. pytest's working directory and `--rootdir` are
//! the target's directory, so node ids are relative to it. Kernels: each benchmark's `name`
//! with its parameters as a level (`test_sum[256]` → kernel `test_sum/256`).
//!
//! Loops: pytest-benchmark picks the iterations of a round: it multiplies them by 10 until a
//! round lasts 5/P of `min_time` (P the calibration precision), then estimates the count for
//! min_time (at least P × the timer's precision). The harness aims at N: T = N × the kernel's
//! last time per iteration (1 loop, or none known, is a T of 1 ns: one iteration), and P =
//! 100, so a ×10 step cannot overshoot min_time (with the default 10 it ended up to 5× past
//! it); each sample is read by its own count (`loops=approximate`).
//!
//! Limits: a benchmark using `benchmark.pedantic(...)` keeps its own rounds and iterations (the
//! samples say so by their counts); the timer is pytest-benchmark's (`time.perf_counter` unless
//! `--benchmark-timer` is given in ARGS), measured as pyperf's is; function-scoped fixtures are
//! set up and torn down around every request, wider ones kept while requests stay in one
//! module or class.

use super::pace::Pace;
use super::{kernel_name, Harness, Kernel, Sample};
use crate::harness::pytest_benchmark as pb;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct PytestBench {
    about: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// pytest's own output (stdout and stderr), for the reason of a failure.
    log: PathBuf,
    python: PathBuf,
    kernels: Vec<Kernel>,
    /// pytest's node id of each kernel, relative to the target's directory.
    node_ids: Vec<String>,
    pace: Pace,
    clock: Option<(f64, f64)>,
}

/// The plugin that serves tare's requests inside pytest (see the module's documentation).
const PLUGIN_PY: &str = r#"import json, os
import pytest

# Before pytest's capture takes fds 0 and 1: tare's requests and replies.
_in = os.fdopen(os.dup(0), "r")
_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)


def _send(obj):
    _out.write(json.dumps(obj) + "\n")
    _out.flush()


def _line(text):
    lines = [l.strip() for l in str(text).splitlines() if l.strip()]
    errs = [l[1:].strip() for l in lines if l.startswith("E ")]
    return (errs or lines or ["failed"])[-1]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    from _pytest.runner import runtestprotocol
    if session.testsfailed:
        _send({"error": "%d errors during collection" % session.testsfailed})
        os._exit(0)
    items = [i for i in session.items if "benchmark" in getattr(i, "fixturenames", ())]
    _send({"benchmarks": [[i.nodeid, i.name] for i in items]})
    by_id = {i.nodeid: i for i in items}
    bs = session.config._benchmarksession
    last = None
    for line in _in:
        req = json.loads(line)
        item = by_id.get(req.get("id"))
        if item is None:
            _send({"error": "no benchmark %s" % req.get("id")})
            continue
        bs.options.update(min_rounds=int(req["rounds"]), max_time=1e-9,
                          min_time=float(req["min_time"]), warmup=False,
                          calibration_precision=100)
        del bs.benchmarks[:]
        # Fixtures wider than the function stay set up while requests stay in one parent.
        if last is not None and last.parent is not item.parent:
            session._setupstate.teardown_exact(None)
        last = item
        reports = runtestprotocol(item, nextitem=item.parent, log=False)
        failed = [r for r in reports if r.failed]
        if failed:
            _send({"error": _line(failed[0].longreprtext)})
        elif not bs.benchmarks:
            _send({"error": "the test ran no benchmark"})
        else:
            m = bs.benchmarks[-1]
            _send({"iterations": m.iterations, "data": list(m.stats.data)})
        del bs.benchmarks[:]
    os._exit(0)
"#;

/// `test_sum[256]` → `test_sum/256` (the parameters a level of the name, as Go's and Google
/// Benchmark's are), other characters `_`.
fn bench_kernel_name(name: &str) -> String {
    let n = match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
        Some((f, p)) => format!("{f}/{p}"),
        None => name.to_string(),
    };
    kernel_name(&n)
}

/// pytest-benchmark's `min_time` (seconds) for rounds of `loops` iterations of `per_iter` ns;
/// 1 loop (or none known) is 1 ns: the first round of one iteration passes.
fn min_time(loops: u64, per_iter: Option<f64>) -> f64 {
    match per_iter {
        Some(t) if loops > 1 && t > 0.0 => (loops as f64 * t * 1e-9).max(1e-9),
        _ => 1e-9,
    }
}

/// A reply's samples: `iterations` a round and seconds per iteration of each.
fn parse_reply(reply: &Value) -> Result<Vec<Sample>, String> {
    if let Some(e) = reply["error"].as_str() {
        return Err(e.to_string());
    }
    let n = reply[pb::ITERATIONS].as_u64().filter(|&n| n > 0);
    let (Some(n), Some(data)) = (n, reply[pb::DATA].as_array()) else {
        return Err("pytest-benchmark gave no rounds".into());
    };
    Ok(data
        .iter()
        .filter_map(Value::as_f64)
        .map(|d| Sample {
            loops: n,
            ns: (d * n as f64 * 1e9).round() as u64,
            cpu_ns: None,
            bytes: None,
            items: None,
            metrics: Default::default(),
        })
        .collect())
}

/// The interpreter, its version, pytest's and pytest-benchmark's.
const ABOUT_PY: &str = "import sys, pytest, pytest_benchmark
print('python %s %s, pytest %s, pytest-benchmark %s' % (sys.executable, sys.version.split()[0], pytest.__version__, pytest_benchmark.__version__))";

impl PytestBench {
    /// Starts pytest with tare's plugin over `target` and reads its benchmarks.
    pub fn start(
        python: &Path,
        target: &Path,
        args: &[String],
        dir: &Path,
    ) -> Result<PytestBench, String> {
        if !target.exists() {
            return Err(format!("no test file or directory {}", target.display()));
        }
        let target = std::fs::canonicalize(target).unwrap_or(target.to_path_buf());
        let root = if target.is_dir() {
            target.clone()
        } else {
            target.parent().unwrap_or(Path::new("/")).to_path_buf()
        };
        let about = super::common::probe_python(python, ABOUT_PY, "pytest-benchmark")?;
        let py = python.display();
        std::fs::write(dir.join("tare_pytest_worker.py"), PLUGIN_PY).map_err(|e| {
            format!(
                "cannot write tare's pytest plugin into {}: {e}",
                dir.display()
            )
        })?;
        let path = match std::env::var_os("PYTHONPATH") {
            Some(p) if !p.is_empty() => {
                let mut v = dir.as_os_str().to_owned();
                v.push(":");
                v.push(p);
                v
            }
            _ => dir.as_os_str().to_owned(),
        };
        let log = dir.join("pytest.log");
        let log_file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let mut child = Command::new(python)
            .args(["-m", "pytest"])
            .arg(&target)
            .args(args)
            .arg("--rootdir")
            .arg(&root)
            .args(["-p", "tare_pytest_worker", "-p", "no:cacheprovider", "-q"])
            .env("PYTHONPATH", path)
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot run {py}: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("cannot talk to pytest".into());
        };
        let mut p = PytestBench {
            about,
            child,
            stdin,
            stdout: BufReader::new(stdout),
            log,
            python: python.to_path_buf(),
            kernels: Vec::new(),
            node_ids: Vec::new(),
            pace: Pace::load("pytest", &target, args, 0),
            clock: None,
        };
        let first = p.reply()?;
        if let Some(e) = first["error"].as_str() {
            return Err(format!("pytest {}: {e}", target.display()));
        }
        let list = first["benchmarks"].as_array().cloned().unwrap_or_default();
        for (i, b) in list.iter().enumerate() {
            let (Some(id), Some(name)) = (b[0].as_str(), b[1].as_str()) else {
                continue;
            };
            let doc = format!("pytest-benchmark {id}");
            super::common::add_kernel(&mut p.kernels, bench_kernel_name(name), i, doc);
            p.node_ids.push(id.to_string());
        }
        if p.kernels.is_empty() {
            return Err(format!(
                "{} has no benchmarks (tests that use the benchmark fixture)",
                target.display()
            ));
        }
        p.pace = Pace::load("pytest", &target, args, p.kernels.len());
        Ok(p)
    }

    /// The plugin's next reply; where pytest ended instead, its last line of output.
    fn reply(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => {
                serde_json::from_str(&line).map_err(|e| format!("tare's pytest plugin: {e}"))
            }
            _ => Err(self.ended()),
        }
    }

    /// Why pytest is gone: the last line of its output.
    fn ended(&self) -> String {
        let log = std::fs::read(&self.log).unwrap_or_default();
        let last = crate::exec::capture::last_lines(&log, 1);
        format!(
            "pytest ended: {}",
            if last.is_empty() { "no output" } else { &last }
        )
    }
}

impl Drop for PytestBench {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Harness for PytestBench {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn about(&self) -> Option<String> {
        Some(self.about.clone())
    }

    fn approximate_loops(&self) -> bool {
        true
    }

    fn clock(&mut self) -> Result<(f64, f64), String> {
        if let Some(c) = self.clock {
            return Ok(c);
        }
        let c = super::pyperf::measure_perf_counter(&self.python)?;
        self.clock = Some(c);
        Ok(c)
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        let id = self.node_ids[index].clone();
        let req = serde_json::json!({
            "id": id,
            "rounds": reps,
            "min_time": min_time(loops, self.pace.get(index)),
        });
        if writeln!(self.stdin, "{req}").is_err() {
            return Err(self.ended());
        }
        let samples = parse_reply(&self.reply()?).map_err(|e| format!("{id}: {e}"))?;
        if let Some(s) = samples.last() {
            self.pace.remember(index, s.ns as f64 / s.loops as f64);
        }
        Ok(samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_plugins_replies() {
        let r: Value =
            serde_json::from_str(r#"{"iterations": 4, "data": [1.5e-06, 2e-06]}"#).unwrap();
        let s = parse_reply(&r).unwrap();
        assert_eq!((s[0].loops, s[0].ns, s[1].ns), (4, 6000, 8000));
        let e: Value = serde_json::from_str(r#"{"error": "assert 1 == 2"}"#).unwrap();
        assert_eq!(parse_reply(&e).unwrap_err(), "assert 1 == 2");
        assert!(parse_reply(&serde_json::json!({})).is_err());
        assert_eq!(bench_kernel_name("test_sum[256]"), "test_sum/256");
        assert_eq!(bench_kernel_name("test_x[a b-1]"), "test_x/a_b-1");
        assert_eq!(bench_kernel_name("test_hash"), "test_hash");
        assert_eq!(min_time(1, Some(5.0)), 1e-9);
        assert!((min_time(1000, Some(1000.0)) - 1e-3).abs() < 1e-12);
    }
}
