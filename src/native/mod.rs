//! The native-worker engine: `tare native-worker HARNESS TARGET [ARGS]`, a worker for a native
//! harness without a client library. It speaks the worker protocol (docs/protocol.md) on
//! `TARE_WORKER_FD` and drives a harness with tare's loop counts, so `tare kernels 'tare
//! native-worker go ./mypkg'` (or `pyperf bench.py`, `gbench ./bench`, `criterion . --bench
//! NAME`, `pytest-benchmark tests/`, `jmh benchmarks.jar`) measures an existing suite with
//! tare's policy (calibration, invocations, stop rules, interleaving); the adapter and the
//! processes it starts stay in the invocation's run group. The command line is parsed in
//! `cli::native`, which hands the engine its [`Options`]; nothing here knows clap or `cli`.
//!
//! This module holds what the harnesses share: the options and the conversation (hello,
//! clock, setup, run, teardown, exit). Each harness (`go`: testing.B; `pyperf`: a pyperf
//! script; `gbench`: Google Benchmark; `criterion`: Criterion.rs; `pytest_bench`:
//! pytest-benchmark; `jmh`: JMH) says which kernels it has, what its clock is and how to take K
//! samples of N loops. A harness that cannot start (a build or a script that fails) still says
//! hello, with no kernels, and answers every request with its one-line reason, so `tare
//! kernels` shows it.
//!
//! A harness that cannot fix its loop count (Google Benchmark before 1.8, Criterion.rs,
//! pytest-benchmark) aims near it from the kernel's last time per iteration (`pace`) and says
//! `loops=approximate` in its hello: each sample then carries the loops it ran. docs/
//! native-workers.md says, per harness, what tare adds and what it cannot do.

mod ahead;
mod common;
mod criterion;
mod gbench;
mod go;
mod jmh;
mod pace;
mod pyperf;
mod pytest_bench;

use crate::exec::protocol::{Message, VERSION};
use crate::harness::{self, Descriptor};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// What `tare native-worker` was asked for (`cli::native::NativeArgs`, parsed): the harness
/// and its target, the options some harnesses take, and the arguments passed on.
#[derive(Debug)]
pub struct Options {
    /// The harness: the name of one of `crate::harness::ALL` that is driven.
    pub kind: String,
    /// pyperf, pytest-benchmark: the Python interpreter [default: python3 on PATH].
    pub python: Option<PathBuf>,
    /// criterion: the bench target of the Cargo package TARGET [default: its only one].
    pub bench: Option<String>,
    /// What the harness measures: a package directory, a script, a binary, a jar, ...
    pub target: PathBuf,
    /// Passed on to what the harness runs, on every run (jmh: options of the JVM).
    pub args: Vec<String>,
}

/// One benchmark a harness offers: a kernel, and the values of its parameters where the
/// harness has them as parameters (JMH's `@Param`). Kernels of one name with different
/// parameter values are one protocol kernel with parameters; the values each has become its
/// parameter's `values=` (every combination the harness has, measured by default).
struct Kernel {
    name: String,
    doc: String,
    params: Vec<(String, String)>,
}

/// A protocol kernel: its name, doc, and each parameter with its values.
type Announced<'a> = (&'a str, &'a str, Vec<(&'a str, Vec<&'a str>)>);

/// The protocol kernels of a harness's list: each name once (in the order first seen), with
/// its parameters (in the first entry's order), each with its values in the order first seen;
/// a parameter's default is the first entry's value.
fn announced(kernels: &[Kernel]) -> Vec<Announced<'_>> {
    let mut out: Vec<Announced> = Vec::new();
    for k in kernels {
        let i = match out.iter().position(|(n, _, _)| *n == k.name) {
            Some(i) => i,
            None => {
                let params = k
                    .params
                    .iter()
                    .map(|(p, _)| (p.as_str(), Vec::new()))
                    .collect();
                out.push((&k.name, &k.doc, params));
                out.len() - 1
            }
        };
        for (p, v) in &k.params {
            if let Some((_, vs)) = out[i].2.iter_mut().find(|(q, _)| q == p) {
                if !vs.contains(&v.as_str()) {
                    vs.push(v);
                }
            }
        }
    }
    out
}

/// The entry of `kernels` that `setup kernel=NAME p.P=V ...` selects: the name, and every
/// parameter either given or at its default (the name's first entry's value). Errors name
/// the parameter that is unknown or the combination the harness does not have.
fn select(h: &mut dyn Harness, name: &str, given: &[(String, String)]) -> Result<usize, String> {
    let kernels = h.kernels();
    let first = kernels
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| format!("unknown kernel {name}"))?;
    for (p, _) in given {
        if !first.params.iter().any(|(q, _)| q == p) {
            return Err(format!("unknown parameter {p}"));
        }
    }
    let want: Vec<(&str, &str)> = first
        .params
        .iter()
        .map(|(p, d)| {
            let v = given.iter().find(|(q, _)| q == p).map_or(d, |(_, v)| v);
            (p.as_str(), v.as_str())
        })
        .collect();
    if let Some(i) = kernels.iter().position(|k| {
        k.name == name
            && k.params.len() == want.len()
            && k.params
                .iter()
                .zip(&want)
                .all(|((p, v), (q, w))| p == q && v == w)
    }) {
        return Ok(i);
    }
    let like = kernels.iter().position(|k| k.name == name).unwrap_or(0);
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(p, v)| (p.to_string(), v.to_string()))
        .collect();
    h.extend(like, &want).ok_or_else(|| {
        let shown: Vec<String> = want.iter().map(|(p, v)| format!("{p}={v}")).collect();
        format!("{name} has no benchmark with {}", shown.join(" "))
    })
}

/// One sample as the harness measured it: `ns` for `loops` loops.
#[derive(Debug, PartialEq)]
struct Sample {
    loops: u64,
    ns: u64,
    cpu_ns: Option<u64>,
    bytes: Option<u64>,
    items: Option<u64>,
    /// User metrics (`m.NAME`): Google Benchmark's counters.
    metrics: std::collections::BTreeMap<String, f64>,
}

/// A native harness driven as a worker. Errors are one line (they go into `error message=`).
trait Harness {
    fn kernels(&self) -> &[Kernel];
    /// What the harness runs with, for the worker's version (the interpreter, the toolchain).
    fn about(&self) -> Option<String> {
        None
    }
    /// The harness picks its own loop counts (near those asked): the hello says
    /// `loops=approximate` and each sample says how many it ran.
    fn approximate_loops(&self) -> bool {
        false
    }
    /// (resolution_ns, cost_ns) of the clock the harness times with: by default the
    /// harness's own, taken as 1 ns and free to read.
    fn clock(&mut self) -> Result<(f64, f64), String> {
        Ok((1.0, 0.0))
    }
    /// A new entry of `kernels()` like entry `like` with other parameter values (all of them,
    /// in its order), where the harness takes values it did not list (JMH's `-p`); None where
    /// it does not, or a value it cannot take.
    fn extend(&mut self, _like: usize, _params: &[(String, String)]) -> Option<usize> {
        None
    }
    /// K samples of N loops of kernel `index` (into `kernels()`).
    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String>;
}

/// A harness's benchmark name as a protocol kernel name: characters outside
/// `[A-Za-z0-9_./-]` become `_` (the harness keeps the original to select it).
fn kernel_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_./-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The last non-empty line of a failed process's stderr, else of its stdout: its reason.
fn last_line(out: &std::process::Output) -> String {
    [&out.stderr, &out.stdout]
        .into_iter()
        .map(|b| crate::exec::capture::last_lines(b, 1))
        .find(|l| !l.is_empty())
        .unwrap_or_else(|| "no output".into())
}

/// Starts a harness on its target in the worker's temporary directory.
type Start = fn(&Options, &Path) -> Result<Box<dyn Harness>, String>;

fn boxed<H: Harness + 'static>(h: H) -> Box<dyn Harness> {
    Box::new(h)
}

/// Each driven harness's start, beside its descriptor (`crate::harness`: its name, target,
/// protocol client and options).
const DRIVERS: &[(&Descriptor, Start)] = &[
    (&harness::criterion::HARNESS, |a, dir| {
        criterion::Criterion::start(&a.target, a.bench.as_deref(), &a.args, dir).map(boxed)
    }),
    (&harness::gbench::HARNESS, |a, dir| {
        gbench::Gbench::start(&a.target, &a.args, dir).map(boxed)
    }),
    (&harness::jmh::HARNESS, |a, dir| {
        jmh::Jmh::start(&a.target, &a.args, dir).map(boxed)
    }),
    (&harness::pytest_benchmark::HARNESS, |a, dir| {
        pytest_bench::PytestBench::start(&common::python(a), &a.target, &a.args, dir).map(boxed)
    }),
    (&harness::pyperf::HARNESS, |a, dir| {
        pyperf::Pyperf::start(&common::python(a), &a.target, &a.args, dir).map(boxed)
    }),
    (&harness::gotest::HARNESS, |a, dir| {
        go::Go::start(&a.target, &a.args, dir).map(boxed)
    }),
];

/// The harnesses `tare native-worker` drives, each with its target, in words: `go (testing.B),
/// … or jmh (a JMH benchmarks jar)`.
pub fn harnesses() -> String {
    harness::list(harness::driven(), |h| {
        h.drive.as_ref().map_or("", |d| d.target)
    })
}

/// What each driven harness passes its ARGS to, in words: `go (the test binary), …`.
pub fn harness_args() -> String {
    harness::list(harness::driven(), |h| {
        h.drive.as_ref().map_or("", |d| d.args)
    })
}

/// `tare native-worker`: the worker, until `exit` or EOF.
pub fn worker(a: Options) -> anyhow::Result<i32> {
    let Some((h, start)) = DRIVERS.iter().find(|(h, _)| h.name == a.kind) else {
        return Err(crate::error::usage(format!(
            "native-worker: unknown harness '{}': {}",
            a.kind,
            harnesses()
        )));
    };
    let drive = h.drive.as_ref().expect("a driver's harness is driven");
    let fd: i32 = std::env::var(crate::exec::worker::FD_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            crate::error::usage(format!(
                "native-worker runs under tare kernels (TARE_WORKER_FD is not set): tare kernels 'tare native-worker {} {}'",
                a.kind,
                a.target.display()
            ))
        })?;
    std::env::remove_var(crate::exec::worker::FD_ENV);
    // SAFETY: tare passed this descriptor to us to own; nothing else in this process uses it.
    let sock = unsafe { UnixStream::from_raw_fd(fd) };
    crate::exec::sys::set_cloexec(fd)?;
    let tmp = tempfile::tempdir()?;
    if a.python.is_some() && !drive.python {
        return Err(crate::error::usage(format!(
            "native-worker: --python is for the {} harnesses; drop it for the others",
            harness::driven_where(|d| d.python)
        )));
    }
    if a.bench.is_some() && !drive.bench {
        return Err(crate::error::usage(format!(
            "native-worker: --bench is for the {} harness; drop it for {}",
            harness::driven_where(|d| d.bench),
            a.kind
        )));
    }
    let harness = start(&a, tmp.path());
    if let Err(why) = &harness {
        eprintln!("tare: error: native-worker {}: {why}", a.kind);
    }
    serve(sock, drive.client, drive.lang, harness)?;
    Ok(0)
}

/// The conversation, until `exit` or EOF.
fn serve(
    sock: UnixStream,
    client: &str,
    lang: &str,
    mut harness: Result<Box<dyn Harness>, String>,
) -> std::io::Result<()> {
    let mut w = sock.try_clone()?;
    let mut send = |m: Message| -> std::io::Result<()> {
        let mut l = m.to_line();
        l.push('\n');
        w.write_all(l.as_bytes())
    };
    let error = |msg: &str| Message::new("error").with("message", msg);
    let version = match harness.as_ref().ok().and_then(|h| h.about()) {
        Some(about) => format!("{} ({about})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    };
    let mut hello = Message::new("hello")
        .with("protocol", VERSION)
        .with("client", client)
        .with("version", &version)
        .with("lang", lang);
    if harness.as_ref().is_ok_and(|h| h.approximate_loops()) {
        hello = hello.with("loops", "approximate");
    }
    send(hello)?;
    if let Ok(h) = &harness {
        for (name, doc, params) in announced(h.kernels()) {
            send(Message::new("kernel").with("name", name).with("doc", doc))?;
            for (p, values) in params {
                let mut m = Message::new("param")
                    .with("kernel", name)
                    .with("name", p)
                    .with("default", values[0]);
                // A value with a comma cannot be listed: that parameter is measured at its
                // default unless tare is given values (-L).
                if values.len() > 1 && values.iter().all(|v| !v.contains(',')) {
                    m = m.with("values", values.join(","));
                }
                send(m)?;
            }
        }
    }
    send(Message::new("ready"))?;
    let mut current: Option<usize> = None;
    // Each harness run starts a process: runs of samples share one (`ahead`).
    let mut ahead = ahead::Ahead::default();
    for line in BufReader::new(sock).lines() {
        let Ok(line) = line else { break };
        let Ok(m) = Message::parse(&line) else {
            send(error("not a message"))?;
            continue;
        };
        if m.verb == "exit" {
            send(Message::new("bye"))?;
            return Ok(());
        }
        let h = match &mut harness {
            Ok(h) => h,
            Err(why) => {
                send(error(why))?;
                continue;
            }
        };
        match m.verb.as_str() {
            "clock" => match h.clock() {
                Ok((res, cost)) => send(
                    Message::new("clock")
                        .with("resolution_ns", res)
                        .with("cost_ns", cost),
                )?,
                Err(e) => send(error(&e))?,
            },
            "setup" => {
                let k = m.get("kernel").unwrap_or("");
                let given: Vec<(String, String)> = m
                    .fields
                    .iter()
                    .filter_map(|(f, v)| Some((f.strip_prefix("p.")?.to_string(), v.clone())))
                    .collect();
                match (current, select(h.as_mut(), k, &given)) {
                    (Some(_), _) => send(error("a kernel is already set up"))?,
                    (None, Err(e)) => send(error(&e))?,
                    (None, Ok(i)) => {
                        current = Some(i);
                        send(Message::new("ok"))?;
                    }
                }
            }
            "run" => {
                let (Some(k), Ok(Some(n)), Ok(Some(reps))) =
                    (current, m.uint("loops"), m.uint("reps"))
                else {
                    send(error("run needs a kernel set up, loops= and reps="))?;
                    continue;
                };
                match ahead.run(h.as_mut(), k, n, reps) {
                    Ok(samples) => {
                        for s in samples {
                            let mut l = Message::new("sample")
                                .with("loops", s.loops)
                                .with("ns", s.ns);
                            if let Some(c) = s.cpu_ns {
                                l = l.with("cpu_ns", c);
                            }
                            if let Some(b) = s.bytes {
                                l = l.with("bytes", b);
                            }
                            if let Some(i) = s.items {
                                l = l.with("items", i);
                            }
                            for (k, v) in &s.metrics {
                                if v.is_finite() {
                                    l = l.with(&format!("m.{k}"), v);
                                }
                            }
                            send(l)?;
                        }
                        send(Message::new("done"))?;
                    }
                    Err(e) => send(error(&e))?,
                }
            }
            "teardown" => {
                if current.take().is_some() {
                    ahead.forget();
                    send(Message::new("ok"))?
                } else {
                    send(error("nothing is set up"))?
                }
            }
            v => send(error(&format!("unknown verb {v}")))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driven_harness_has_one_driver() {
        let mut drivers: Vec<&str> = DRIVERS.iter().map(|(h, _)| h.name).collect();
        let mut driven: Vec<&str> = harness::driven().map(|h| h.name).collect();
        drivers.sort();
        driven.sort();
        assert_eq!(drivers, driven);
        for h in harness::driven() {
            assert!(harnesses().contains(&format!("{} (", h.name)), "{}", h.name);
            assert!(
                harness_args().contains(&format!("{} (", h.name)),
                "{}",
                h.name
            );
        }
    }
}
