//! `tare native-worker go PACKAGE_DIR`: a worker for a native harness without a client library.
//! It speaks the worker protocol (docs/protocol.md) on `TARE_WORKER_FD` and drives Go's
//! `testing.B`, which lets the caller fix the iterations (`-test.benchtime=Nx`): the package's
//! test binary is built once (`go test -c`), each `BenchmarkNAME` becomes kernel `NAME`, and a
//! `run loops=N reps=K` runs the binary with `-test.bench '^BenchmarkNAME$' -test.benchtime=Nx
//! -test.count=K` and turns each result line (`ns/op`, `B/op`, `MB/s`) into a sample. So
//! `tare kernels 'tare native-worker go ./mypkg' ...` measures Go benchmarks with tare's policy
//! (invocations, stop rules, interleaving), the adapter and the binaries it starts in the
//! invocation's run group.
//!
//! Limits: a sample's `ns` is Go's `ns/op × N` (Go times the loop itself, timer resets and all);
//! there are no parameters; the clock is Go's, its resolution taken as 1 ns and its read cost
//! as unknown (0). Google Benchmark ≥ 1.8 (`--benchmark_min_time=Nx`) could be driven the same
//! way; the 1.7 installed here cannot fix iterations, so it is not.

use crate::exec::protocol::{Message, VERSION};
use clap::Args;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[derive(Args, Debug)]
pub struct NativeArgs {
    /// The harness: go (testing.B).
    kind: String,
    /// The Go package directory whose benchmarks become kernels.
    package: PathBuf,
}

fn fail(msg: String) -> anyhow::Error {
    crate::error::UserError::run_failed(msg).into()
}

/// Builds the test binary; returns its path (in a temporary directory kept until exit).
fn build(package: &PathBuf, dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let bin = dir.join("bench.test");
    let out = Command::new("go")
        .args(["test", "-c", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(package)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(format!("native-worker go: cannot run go: {e}; install Go")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(fail(format!(
            "native-worker go: go test -c failed in {}: {}",
            package.display(),
            err.lines().next().unwrap_or("")
        )));
    }
    Ok(bin)
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

/// `tare native-worker`.
pub fn native(a: NativeArgs) -> anyhow::Result<i32> {
    if a.kind != "go" {
        return Err(crate::error::usage(format!(
            "native-worker: unknown harness '{}': only go (testing.B) can fix its iterations",
            a.kind
        )));
    }
    let fd: i32 = std::env::var(crate::exec::worker::FD_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            crate::error::usage("native-worker runs under tare kernels (TARE_WORKER_FD is not set): tare kernels 'tare native-worker go DIR'")
        })?;
    std::env::remove_var(crate::exec::worker::FD_ENV);
    // SAFETY: tare passed this descriptor to us to own; nothing else in this process uses it.
    let sock = unsafe { UnixStream::from_raw_fd(fd) };
    crate::exec::sys::set_cloexec(fd)?;
    let tmp = tempfile::tempdir()?;
    let bin = build(&a.package, tmp.path())?;
    let list = Command::new(&bin)
        .args(["-test.list", "^Benchmark"])
        .current_dir(&a.package)
        .output()?;
    let names: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("Benchmark"))
        .filter(|n| crate::exec::protocol::name_ok(n))
        .map(str::to_string)
        .collect();
    let mut w = sock.try_clone()?;
    let mut send = |m: Message| -> std::io::Result<()> {
        let mut l = m.to_line();
        l.push('\n');
        w.write_all(l.as_bytes())
    };
    send(
        Message::new("hello")
            .with("protocol", VERSION)
            .with("client", "tare-native-go")
            .with("version", env!("CARGO_PKG_VERSION"))
            .with("lang", "go"),
    )?;
    for n in &names {
        send(
            Message::new("kernel")
                .with("name", n)
                .with("doc", "a Go testing.B benchmark"),
        )?;
    }
    send(Message::new("ready"))?;
    let mut current: Option<String> = None;
    for line in BufReader::new(sock).lines() {
        let Ok(line) = line else { break };
        let Ok(m) = Message::parse(&line) else {
            send(Message::new("error").with("message", "not a message"))?;
            continue;
        };
        match m.verb.as_str() {
            "clock" => send(
                Message::new("clock")
                    .with("resolution_ns", 1)
                    .with("cost_ns", 0),
            )?,
            "setup" => match m.get("kernel") {
                _ if current.is_some() => {
                    send(Message::new("error").with("message", "a kernel is already set up"))?
                }
                Some(k) if names.iter().any(|n| n == k) => {
                    if let Some((p, _)) = m.fields.iter().find(|(k, _)| k.starts_with("p.")) {
                        send(
                            Message::new("error")
                                .with("message", format!("unknown parameter {}", &p[2..])),
                        )?;
                    } else {
                        current = Some(k.to_string());
                        send(Message::new("ok"))?;
                    }
                }
                k => send(
                    Message::new("error")
                        .with("message", format!("unknown kernel {}", k.unwrap_or(""))),
                )?,
            },
            "run" => {
                let (Some(k), Ok(Some(n)), Ok(Some(reps))) =
                    (current.clone(), m.uint("loops"), m.uint("reps"))
                else {
                    send(
                        Message::new("error")
                            .with("message", "run needs a kernel set up, loops= and reps="),
                    )?;
                    continue;
                };
                let out = Command::new(&bin)
                    .args(["-test.run", "^$", "-test.bench"])
                    .arg(format!("^Benchmark{k}$"))
                    .arg(format!("-test.benchtime={n}x"))
                    .arg(format!("-test.count={reps}"))
                    .current_dir(&a.package)
                    .stdin(Stdio::null())
                    .output()?;
                let text = String::from_utf8_lossy(&out.stdout);
                let samples: Vec<(u64, f64, Option<f64>)> =
                    text.lines().filter_map(|l| parse_line(l, &k)).collect();
                if !out.status.success() || samples.len() as u64 != reps {
                    let why = text
                        .lines()
                        .find(|l| l.contains("FAIL") || l.contains("panic"))
                        .unwrap_or("no result lines");
                    send(
                        Message::new("error").with("message", format!("go benchmark {k}: {why}")),
                    )?;
                    continue;
                }
                for (iters, ns_op, bytes) in samples {
                    let mut s = Message::new("sample")
                        .with("loops", iters)
                        .with("ns", (ns_op * iters as f64).round() as u64);
                    if let Some(b) = bytes {
                        s = s.with("bytes", (b * iters as f64).round() as u64);
                    }
                    send(s)?;
                }
                send(Message::new("done"))?;
            }
            "teardown" => {
                if current.take().is_some() {
                    send(Message::new("ok"))?
                } else {
                    send(Message::new("error").with("message", "nothing is set up"))?
                }
            }
            "exit" => {
                send(Message::new("bye"))?;
                return Ok(0);
            }
            v => send(Message::new("error").with("message", format!("unknown verb {v}")))?,
        }
    }
    Ok(0)
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
