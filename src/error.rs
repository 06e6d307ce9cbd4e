//! Exit codes and the user-facing error type.
//!
//! Exit codes (see `docs/architecture.md`): 0 success; 1 a verdict the user asked to fail on;
//! 2 bad usage or input; 3 a run failed or hit a limit where that is an error; 130 interrupted.

use std::fmt;

/// Process exit codes used by every `tare` subcommand.
pub mod exit {
    pub const OK: i32 = 0;
    pub const VERDICT: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const RUN_FAILED: i32 = 3;
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
    pub fn interrupted() -> Self {
        UserError {
            code: exit::INTERRUPTED,
            message: "interrupted; completed runs were kept".into(),
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
