//! The `tare` binary: a thin shell around [`tare::cli`].

fn main() {
    let code = tare::cli::main();
    // This session's groups are gone; its lock file would otherwise wait for the next sweep.
    tare::exec::cgroup::lease::release();
    std::process::exit(code);
}
