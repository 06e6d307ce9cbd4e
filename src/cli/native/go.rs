//! The `go` harness: Go's `testing.B`, which lets the caller fix the iterations
//! (`-test.benchtime=Nx`). The package's test binary is built once per process (`go test -c`),
//! each `BenchmarkNAME` becomes kernel `NAME`, and `run loops=N reps=K` runs the binary with
//! `-test.bench '^BenchmarkNAME$' -test.benchtime=Nx -test.count=K`, each result line
//! (`ns/op`, `MB/s`) a sample.
//!
//! Limits: a sample's `ns` is Go's `ns/op × N` (Go times the loop itself, timer resets and all);
//! there are no parameters; the clock is Go's, its resolution taken as 1 ns and its read cost
//! as unknown (0).

use super::{last_line, Harness, Kernel, Sample};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Go {
    package: PathBuf,
    args: Vec<String>,
    bin: PathBuf,
    kernels: Vec<Kernel>,
}

impl Go {
    /// Builds the test binary into `dir` (kept until exit) and lists its benchmarks.
    pub fn start(package: &Path, args: &[String], dir: &Path) -> Result<Go, String> {
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
        let list = Command::new(&bin)
            .args(["-test.list", "^Benchmark"])
            .current_dir(package)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if !list.status.success() {
            return Err(format!("listing benchmarks failed: {}", last_line(&list)));
        }
        let kernels = String::from_utf8_lossy(&list.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("Benchmark"))
            .filter(|n| crate::exec::protocol::name_ok(n))
            .map(|n| Kernel {
                name: n.to_string(),
                doc: "a Go testing.B benchmark".into(),
            })
            .collect();
        Ok(Go {
            package: package.to_path_buf(),
            args: args.to_vec(),
            bin,
            kernels,
        })
    }
}

impl Harness for Go {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn clock(&mut self) -> Result<(f64, f64), String> {
        Ok((1.0, 0.0))
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        let k = &self.kernels[index].name;
        let out = Command::new(&self.bin)
            .args(&self.args)
            .args(["-test.run", "^$", "-test.bench"])
            .arg(format!("^Benchmark{k}$"))
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
                bytes: bytes.map(|b| (b * iters as f64).round() as u64),
                items: None,
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
    let mut f = line.split_whitespace();
    let head = f.next()?;
    let bare = head.strip_prefix("Benchmark")?;
    let bare = bare.rsplit_once('-').map_or(bare, |(b, cpus)| {
        if cpus.chars().all(|c| c.is_ascii_digit()) {
            b
        } else {
            bare
        }
    });
    if bare != name {
        return None;
    }
    let n: u64 = f.next()?.parse().ok()?;
    let rest: Vec<&str> = f.collect();
    let mut ns = None;
    let mut mbs = None;
    for w in rest.windows(2) {
        match w[1] {
            "ns/op" => ns = w[0].parse().ok(),
            "MB/s" => mbs = w[0].parse::<f64>().ok(),
            _ => {}
        }
    }
    let ns: f64 = ns?;
    // MB/s = bytes/op × 1e3 / (ns/op) → bytes/op.
    Some((n, ns, mbs.map(|m| m * ns / 1e3)))
}

#[cfg(test)]
mod tests {
    use super::parse_line;

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
    }
}
