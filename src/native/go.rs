//! The `go` harness: Go's `testing.B`, which lets the caller fix the iterations
//! (`-test.benchtime=Nx`). The package's test binary is built once per session (`go test -c`
//! into the session directory tare names in `TARE_SESSION_DIR`, reused by every later
//! invocation with its list of benchmarks and Go version; once per process without one),
//! each `BenchmarkNAME` becomes kernel `NAME`, each sub-benchmark (`b.Run`) kernel
//! `NAME/SUB` (its parameters kept in the name: `Sum64/4B`), and `run loops=N reps=K` runs the
//! binary with `-test.bench '^BenchmarkNAME$/^SUB$' -test.benchtime=Nx -test.count=K` (every
//! level anchored, so `Sized/10` does not also run `Sized/100`), each result line (`ns/op`,
//! `MB/s`) a sample.
//!
//! Go has no listing of sub-benchmarks: they are found by running every benchmark once
//! (`-test.benchtime=1x -test.cpu=1`, so the names carry no `-GOMAXPROCS` suffix) and reading
//! the result lines. A name with characters outside the protocol's (Go's `#01` for a repeated
//! name) has them made `_`; the pattern keeps Go's name.
//!
//! Limits: a sample's `ns` is Go's `ns/op × N` (Go times the loop itself, timer resets and all);
//! there are no parameters; the clock is Go's, its resolution taken as 1 ns and its read cost
//! as unknown (0).

use super::common;
use super::{kernel_name, last_line, Harness, Kernel, Sample};
use crate::harness::gotest;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Go {
    package: PathBuf,
    args: Vec<String>,
    bin: PathBuf,
    kernels: Vec<Kernel>,
    /// Go's full name of each kernel (`Sum64/4B`, without `Benchmark`), in `kernels` order.
    go_names: Vec<String>,
    /// `go version` of the Go that built the binary (`go1.26.8 linux/amd64`).
    version: String,
}

impl Go {
    /// Builds the test binary and lists its benchmarks, once per session: where tare names a
    /// session directory (`TARE_SESSION_DIR`, private to the session) the first worker of the
    /// package builds into it and later ones reuse the binary, its names and the Go version;
    /// elsewhere (or where that directory cannot be used) into `dir`, kept until exit.
    pub fn start(package: &Path, args: &[String], dir: &Path) -> Result<Go, String> {
        let session = common::session_dir();
        let cached = session
            .as_deref()
            .map(|s| s.join(common::cache_name("go", package, &args)));
        if let Some(c) = cached.as_deref().and_then(Built::load) {
            return Ok(Go::from_built(package, args, c));
        }
        // Staged beside its final place and renamed there whole, so a later worker sees a
        // complete build or none.
        let stage = session.as_deref().and_then(|s| {
            tempfile::Builder::new()
                .prefix(".go-build-")
                .tempdir_in(s)
                .ok()
        });
        let built = Built::make(package, args, stage.as_ref().map_or(dir, |t| t.path()))?;
        let (Some(stage), Some(cached)) = (stage, cached) else {
            return Ok(Go::from_built(package, args, built));
        };
        let staged = stage.keep();
        match std::fs::rename(&staged, &cached) {
            // Moved whole: the binary is now under `cached` (its lists too, unless they could
            // not be written, when later workers build again).
            Ok(()) => {
                let bin = cached.join("bench.test");
                Ok(Go::from_built(package, args, Built { bin, ..built }))
            }
            // Another worker got there first (or the rename is refused): this one's build
            // serves this process and the session directory's removal takes it.
            Err(_) => Ok(Go::from_built(package, args, built)),
        }
    }

    fn from_built(package: &Path, args: &[String], b: Built) -> Go {
        let mut kernels: Vec<Kernel> = Vec::new();
        for (i, n) in b.go_names.iter().enumerate() {
            common::add_kernel(
                &mut kernels,
                kernel_name(n),
                i,
                format!("Go benchmark Benchmark{n}"),
            );
        }
        Go {
            package: package.to_path_buf(),
            args: args.to_vec(),
            bin: b.bin,
            kernels,
            go_names: b.go_names,
            version: b.version,
        }
    }
}

/// A built test binary, its benchmarks (Go's full names, `Sum64/4B`) and the Go that built it.
struct Built {
    bin: PathBuf,
    go_names: Vec<String>,
    version: String,
}

impl Built {
    /// A build left in `dir` by an earlier worker of the session (`bench.test`, `names`,
    /// `version`); None when any part is missing.
    fn load(dir: &Path) -> Option<Built> {
        let bin = dir.join("bench.test");
        let names = std::fs::read_to_string(dir.join("names")).ok()?;
        let version = std::fs::read_to_string(dir.join("version")).ok()?;
        bin.is_file().then(|| Built {
            bin,
            go_names: names.lines().map(str::to_string).collect(),
            version: version.trim().to_string(),
        })
    }

    /// Builds the test binary into `dir`, lists its benchmarks and writes both there.
    fn make(package: &Path, args: &[String], dir: &Path) -> Result<Built, String> {
        let bin = dir.join("bench.test");
        let out = Command::new("go")
            .args(["test", "-c", "-o"])
            .arg(&bin)
            .arg(".")
            .current_dir(package)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run go: {e}; install Go"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "go test -c failed in {}: {}",
                package.display(),
                err.lines().next().unwrap_or("")
            ));
        }
        let version = Command::new("go")
            .arg("version")
            .current_dir(package)
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                let v = String::from_utf8_lossy(&o.stdout);
                v.trim().trim_start_matches("go version ").to_string()
            })
            .unwrap_or_else(|| "go (version unknown)".into());
        let list = Command::new(&bin)
            .args(["-test.list", "^Benchmark"])
            .current_dir(package)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if !list.status.success() {
            return Err(format!("listing benchmarks failed: {}", last_line(&list)));
        }
        let top: Vec<String> = String::from_utf8_lossy(&list.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("Benchmark"))
            .map(str::to_string)
            .collect();
        // Every benchmark once, to see its sub-benchmarks; where that fails (a benchmark that
        // needs flags or fails at N = 1) the top-level names are all there is.
        let once = Command::new(&bin)
            .args(args)
            .args(["-test.run", "^$", "-test.bench", ".", "-test.benchtime=1x"])
            .args(["-test.cpu=1", "-test.count=1"])
            .current_dir(package)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let seen = if once.status.success() {
            result_names(&String::from_utf8_lossy(&once.stdout))
        } else {
            Vec::new()
        };
        let mut go_names: Vec<String> = Vec::new();
        for t in &top {
            let subs: Vec<&String> = seen
                .iter()
                .filter(|n| {
                    n.strip_prefix(t.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
                .collect();
            if subs.is_empty() {
                go_names.push(t.clone());
            } else {
                go_names.extend(subs.into_iter().cloned());
            }
        }
        // For later workers of the session; a build that cannot be written down still
        // serves this one.
        let _ = std::fs::write(dir.join("names"), go_names.join("\n"))
            .and_then(|()| std::fs::write(dir.join("version"), &version));
        Ok(Built {
            bin,
            go_names,
            version,
        })
    }
}

/// The names (without `Benchmark`) of the result lines in `go test -bench` output run with
/// `-test.cpu=1`, in order, each once.
fn result_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in text.lines().filter_map(|l| gotest::line(l.trim_start())) {
        if let Some(name) = l.head.strip_prefix("Benchmark") {
            if l.text.contains("ns/op") && !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The `-test.bench` pattern that selects exactly the benchmark `name` (`Sum64/4B`): each
/// level (Go splits the pattern at `/`) anchored and its regular-expression characters escaped.
fn bench_pattern(name: &str) -> String {
    name.split('/')
        .enumerate()
        .map(|(i, level)| {
            let head = if i == 0 { "Benchmark" } else { "" };
            format!("^{head}{}$", regex::escape(level))
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl Harness for Go {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn about(&self) -> Option<String> {
        Some(self.version.clone())
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        let k = &self.go_names[index];
        let out = Command::new(&self.bin)
            .args(&self.args)
            .args(["-test.run", "^$", "-test.bench"])
            .arg(bench_pattern(k))
            .arg(format!("-test.benchtime={loops}x"))
            .arg(format!("-test.count={reps}"))
            .current_dir(&self.package)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let samples: Vec<Sample> = text
            .lines()
            .filter_map(|l| parse_line(l, k))
            .map(|(iters, ns_op, bytes)| Sample {
                loops: iters,
                ns: (ns_op * iters as f64).round() as u64,
                cpu_ns: None,
                bytes: bytes.map(|b| (b * iters as f64).round() as u64),
                items: None,
                metrics: Default::default(),
            })
            .collect();
        if !out.status.success() || samples.len() as u64 != reps {
            let why = text
                .lines()
                .find(|l| l.contains("FAIL") || l.contains("panic"))
                .unwrap_or("no result lines");
            return Err(format!("go benchmark {k}: {why}"));
        }
        Ok(samples)
    }
}

/// One `go test` benchmark result line: (iterations, ns/op, bytes/op if MB/s was set up).
fn parse_line(line: &str, name: &str) -> Option<(u64, f64, Option<f64>)> {
    let l = gotest::line(line.trim_start()).filter(|l| l.is(name))?;
    let ns = l.value("ns/op")?;
    // MB/s = bytes/op × 1e3 / (ns/op) → bytes/op.
    Some((l.n, ns, l.value("MB/s").map(|m| m * ns / 1e3)))
}

#[cfg(test)]
mod tests {
    use super::{bench_pattern, parse_line, result_names};

    #[test]
    fn reads_go_result_lines() {
        assert_eq!(
            parse_line("BenchmarkSum-2   \t    1000\t      1234 ns/op", "Sum"),
            Some((1000, 1234.0, None))
        );
        let (n, ns, b) = parse_line(
            "BenchmarkCopy-16  500  2000.5 ns/op  512.00 MB/s  0 B/op",
            "Copy",
        )
        .unwrap();
        assert_eq!((n, ns), (500, 2000.5));
        assert!((b.unwrap() - 1024.256).abs() < 1e-9);
        assert_eq!(parse_line("BenchmarkSumAll-2 10 1 ns/op", "Sum"), None);
        assert_eq!(parse_line("PASS", "Sum"), None);
        assert_eq!(
            parse_line("BenchmarkSum 10 5 ns/op", "Sum"),
            Some((10, 5.0, None))
        );
        // Sub-benchmarks: the whole name, a prefix of it is another benchmark.
        assert_eq!(
            parse_line(
                "BenchmarkSum64/4B-2  1000  57.70 ns/op  69.33 MB/s",
                "Sum64/4B"
            )
            .map(|x| x.0),
            Some(1000)
        );
        assert_eq!(
            parse_line("BenchmarkSum64/4B-2 10 5 ns/op", "Sum64/4"),
            None
        );
        assert_eq!(parse_line("BenchmarkSum64/4B-2 10 5 ns/op", "Sum64"), None);
    }

    #[test]
    fn sub_benchmarks_are_listed_and_selected_exactly() {
        let out = "goos: linux\nBenchmarkSum64/4B  1  300 ns/op  13.3 MB/s\n\
                   BenchmarkSum64/10MB 1 9 ns/op\nBenchmarkSized/10 1 5 ns/op\n\
                   BenchmarkPlain 1 5 ns/op\nPASS\n";
        assert_eq!(
            result_names(out),
            ["Sum64/4B", "Sum64/10MB", "Sized/10", "Plain"]
        );
        assert_eq!(bench_pattern("Sum64/4B"), "^BenchmarkSum64$/^4B$");
        assert_eq!(bench_pattern("Plain"), "^BenchmarkPlain$");
        assert_eq!(bench_pattern("F/a.b#01"), r"^BenchmarkF$/^a\.b\#01$");
    }
}
