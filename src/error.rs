//! Exit codes and the user-facing error type.
//!
//! Exit codes (see `docs/architecture.md`): 0 success; 1 a verdict the user asked to fail on;
//! 2 bad usage or input (before any run); 3 a run failed, hit a limit, counted nothing, or
//! results could not be written after runs started; 4 `tare bisect` inconclusive; 128 + n stopped by signal n (130 Ctrl-C,
//! 129 SIGHUP, 131 SIGQUIT, 143 SIGTERM, 141 a closed stdout/stderr).

use std::fmt;

/// Process exit codes used by every `tare` subcommand.
pub mod exit {
    pub const OK: i32 = 0;
    pub const VERDICT: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const RUN_FAILED: i32 = 3;
    /// `tare bisect`: the measurements cannot tell which commit made it slower.
    pub const INCONCLUSIVE: i32 = 4;
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

/// The exit code an error should end the program with (2 unless it says otherwise).
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    err.downcast_ref::<UserError>()
        .map(|e| e.code)
        .unwrap_or(exit::USAGE)
}
