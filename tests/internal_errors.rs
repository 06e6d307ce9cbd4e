//! A bug in tare exits 70 with one line (issue 41), apart from the codes of the user's errors.
//! No input reaches a broken invariant — that is what makes it one — so the bug is forced with
//! the undocumented `TARE_FORCE_INTERNAL_ERROR` (`panic` or `error`, read before the command
//! runs, in `cli::main`).

mod common;

use std::process::Output;

fn tare(force: Option<&str>, args: &[&str]) -> Output {
    let mut c = common::tare();
    c.args(args).env_remove("RUST_BACKTRACE");
    match force {
        Some(f) => c.env("TARE_FORCE_INTERNAL_ERROR", f),
        None => c.env_remove("TARE_FORCE_INTERNAL_ERROR"),
    };
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_panic_prints_one_line_and_exits_70() {
    let o = tare(Some("panic"), &["machine", "--help"]);
    let err = stderr(&o);
    // --help is clap's, answered before the command runs: nothing forced.
    assert_eq!(o.status.code(), Some(0), "{err}");
    let o = tare(Some("panic"), &["completions", "bash"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(70), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let line = err.lines().next().unwrap();
    assert!(
        line.starts_with("tare: internal error: forced by TARE_FORCE_INTERNAL_ERROR at src/"),
        "{err}"
    );
    assert!(line.ends_with("; please report it"), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn an_internal_error_exits_70() {
    let o = tare(Some("error"), &["completions", "bash"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(70), "{err}");
    assert_eq!(
        err,
        "tare: internal error: forced by TARE_FORCE_INTERNAL_ERROR; please report it\n"
    );
}

#[test]
fn user_and_input_errors_keep_their_codes() {
    // Without the variable the command runs as it always does.
    let o = tare(None, &["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!o.stdout.is_empty());
    // A file that is not there is the user's: 2, "tare: error:".
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let o = tare(None, &["report", &missing.to_string_lossy()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("tare: error: "), "{err}");
    assert!(!err.contains("internal"), "{err}");
}
