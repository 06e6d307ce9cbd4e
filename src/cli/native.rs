//! `tare native-worker HARNESS TARGET [ARGS]`: its arguments. The worker itself — the protocol
//! conversation and the harnesses it drives (Go testing.B, pyperf, Google Benchmark,
//! Criterion.rs, pytest-benchmark, JMH) — is the engine in `crate::native`; this module parses
//! the command line into its `native::Options` and starts it.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct NativeArgs {
    /// The harness: go (testing.B), pyperf (a pyperf script), gbench (a Google Benchmark
    /// binary), criterion (a Criterion.rs bench target), pytest-benchmark (a test file or
    /// directory) or jmh (a JMH benchmarks jar).
    kind: String,
    /// pyperf, pytest-benchmark: the Python interpreter that runs the script or pytest (a venv's bin/python, say) [default:
    /// python3 on PATH]; recorded in the worker's version.
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// criterion: the bench target of the Cargo package TARGET (`cargo bench --bench NAME`)
    /// [default: its only one].
    #[arg(long, value_name = "NAME")]
    bench: Option<String>,
    /// go: the package directory whose benchmarks become kernels; pyperf: the script; gbench:
    /// the binary; criterion: a Cargo package directory or a built bench executable;
    /// pytest-benchmark: a test file or directory; jmh: the benchmarks jar.
    target: PathBuf,
    /// Passed on to the test binary (go), the script (pyperf), the binary (gbench), the bench
    /// executable (criterion) or pytest on every run; jmh: options of the JVM (`-Xmx1g`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// `tare native-worker`: the parsed arguments, handed to the engine.
pub fn native(a: NativeArgs) -> anyhow::Result<i32> {
    crate::native::worker(crate::native::Options {
        kind: a.kind,
        python: a.python,
        bench: a.bench,
        target: a.target,
        args: a.args,
    })
}
