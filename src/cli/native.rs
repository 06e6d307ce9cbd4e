//! `tare native-worker HARNESS TARGET [ARGS]`: its arguments. The worker itself — the protocol
//! conversation and the harnesses it drives (those of `crate::harness::ALL` with a drive) — is
//! the engine in `crate::native`; this module parses the command line into its
//! `native::Options` and starts it.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct NativeArgs {
    /// The harness (from `crate::harness`'s table; see `harness_help`).
    #[arg(help = harness_help(), value_name = "KIND")]
    kind: String,
    /// The Python interpreter of the harnesses that run one (see `python_help`).
    #[arg(long, value_name = "PATH", help = python_help())]
    python: Option<PathBuf>,
    /// The bench target of a Cargo package TARGET (see `bench_help`).
    #[arg(long, value_name = "NAME", help = bench_help())]
    bench: Option<String>,
    /// What the harness measures: its target, as KIND's list says (go: the package directory
    /// whose benchmarks become kernels; criterion: a Cargo package directory or a built bench
    /// executable).
    target: PathBuf,
    /// Passed on on every run (see `args_help`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        help = args_help()
    )]
    args: Vec<String>,
}

/// `KIND`'s help: the driven harnesses, each with its target.
fn harness_help() -> String {
    format!("The harness: {}", crate::native::harnesses())
}

/// `--python`'s help, naming the harnesses that take it.
fn python_help() -> String {
    format!(
        "{}: the Python interpreter that runs the script or pytest (a venv's bin/python, say) \
         [default: python3 on PATH]; recorded in the worker's version",
        crate::harness::driven_where(|d| d.python)
    )
}

/// `--bench`'s help, naming the harnesses that take it.
fn bench_help() -> String {
    format!(
        "{}: the bench target of the Cargo package TARGET (`cargo bench --bench NAME`) \
         [default: its only one]",
        crate::harness::driven_where(|d| d.bench)
    )
}

/// `ARGS`' help: what each harness passes them to.
fn args_help() -> String {
    format!(
        "Passed on, on every run, to: {}",
        crate::native::harness_args()
    )
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
