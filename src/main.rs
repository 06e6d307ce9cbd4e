//! The `tare` binary: a thin shell around [`tare::cli`].

fn main() {
    let code = tare::cli::main();
    std::process::exit(code);
}
