//! Exit codes and the user-facing error type.
//!
//! Exit codes (see `docs/architecture.md`): 0 success; 1 a verdict the user asked to fail on;
//! 2 bad usage or input (before any run); 3 a run failed, hit a limit, counted nothing, or
//! results could not be written after runs started; 4 `tare bisect` inconclusive; 70 an
//! internal error (a broken invariant, a panic: a bug in tare, [`Internal`]); 128 + n stopped
//! by signal n (130 Ctrl-C, 129 SIGHUP, 131 SIGQUIT, 143 SIGTERM, 141 a closed stdout/stderr).
//! An error of neither kind (a file that cannot be read, say) exits 2.

use std::fmt;

/// Process exit codes used by every `tare` subcommand.
pub mod exit {
    pub const OK: i32 = 0;
    pub const VERDICT: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const RUN_FAILED: i32 = 3;
    /// `tare bisect`: the measurements cannot tell which commit made it slower.
    pub const INCONCLUSIVE: i32 = 4;
    /// A bug in tare: a broken invariant ([`super::Internal`]) or a panic (sysexits' EX_SOFTWARE).
    pub const INTERNAL: i32 = 70;
    /// Ctrl-C; a session stopped by signal n exits 128 + n (`crate::output::stop_exit_code`).
    pub const INTERRUPTED: i32 = 130;
}

/// An error that carries the exit code it should end the program with.
///
/// The message is one line that says what is wrong and what to do.
#[derive(Debug)]
pub struct UserError {
    pub code: i32,
    pub message: String,
}

impl UserError {
    pub fn usage(message: impl Into<String>) -> Self {
        UserError {
            code: exit::USAGE,
            message: message.into(),
        }
    }
    pub fn run_failed(message: impl Into<String>) -> Self {
        UserError {
            code: exit::RUN_FAILED,
            message: message.into(),
        }
    }
    /// A session stopped by a signal (or a closed output): exit 128 + the signal's number.
    pub fn interrupted() -> Self {
        let by = crate::output::stop_signal()
            .map(|s| format!(" by {}", crate::output::signal_name(s)))
            .unwrap_or_default();
        UserError {
            code: crate::output::stop_exit_code(),
            message: format!("interrupted{by}; completed runs were kept"),
        }
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}

/// Shorthand for a usage error (exit 2) as an `anyhow::Error`.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UserError::usage(message).into()
}

/// A broken invariant: something tare's own code should have made impossible, whatever the
/// input. It exits [`exit::INTERNAL`] and asks to be reported; input and system errors are
/// [`UserError`]s or plain errors, never this.
#[derive(Debug)]
pub struct Internal(pub String);

impl fmt::Display for Internal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Internal {}

/// Shorthand for an [`Internal`] error as an `anyhow::Error`.
pub fn internal(message: impl Into<String>) -> anyhow::Error {
    Internal(message.into()).into()
}

/// Whether an error is (or was caused by) an [`Internal`] one.
pub fn is_internal(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<Internal>().is_some())
}

/// The exit code an error should end the program with: a [`UserError`]'s own, 70 for an
/// [`Internal`] one, else 2.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    if let Some(e) = err.downcast_ref::<UserError>() {
        e.code
    } else if is_internal(err) {
        exit::INTERNAL
    } else {
        exit::USAGE
    }
}

/// The line a bug in tare is reported with, `what` being its message.
pub fn internal_line(what: &str) -> String {
    format!(
        "tare: internal error: {}; please report it",
        what.replace('\n', " ")
    )
}

/// From now on a panic prints one line ([`internal_line`], with where it happened) instead of
/// Rust's message and backtrace; `RUST_BACKTRACE` set (not 0) keeps Rust's own report as well.
/// The caller turns the unwound panic into [`exit::INTERNAL`].
pub fn install_panic_hook() {
    let rust = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("{}", internal_line(&format!("{what}{at}")));
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            rust(info);
        }
    }));
}
