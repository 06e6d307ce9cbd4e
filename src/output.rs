//! Output to a terminal or a pipe that never panics, and the session's stop request.
//!
//! std's `println!`/`eprintln!` panic when the write fails ("failed printing to stderr"), e.g.
//! when tare's output goes into `| head -1` and the reader has left. This module defines
//! `println!`, `print!`, `eprintln!` and `eprint!` for the whole crate (`lib.rs` declares it
//! with `#[macro_use]` before every other module, so these shadow std's): they write the same
//! text, ignore a failed write, and treat a closed pipe (EPIPE) or a terminal gone away (EIO)
//! like a signal — SIGPIPE — asking a running session to stop. SIGPIPE itself stays ignored
//! (Rust's default), so writes return EPIPE instead of killing tare before it can write its
//! exports.
//!
//! The stop request: [`install_stop_signals`] turns SIGINT, SIGTERM, SIGHUP and SIGQUIT into
//! the shared [`cancel_flag`] and records which signal came; a session checks the flag between
//! runs (and the executor while a run is alive), kills the run's tree, keeps completed runs,
//! writes its exports and exits with [`stop_exit_code`] (128 + the signal's number).

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Signals that stop a session the way Ctrl-C does.
pub const STOP_SIGNALS: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

fn cancel_cell() -> &'static Arc<AtomicBool> {
    static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    CANCEL.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

fn signal_cell() -> &'static Arc<AtomicUsize> {
    static SIGNAL: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    SIGNAL.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// The process-wide stop request: set by the stop signals and by a closed output.
pub fn cancel_flag() -> Arc<AtomicBool> {
    Arc::clone(cancel_cell())
}

/// Makes SIGINT, SIGTERM, SIGHUP and SIGQUIT set [`cancel_flag`] (and remember which came)
/// instead of ending tare; returns the flag. Calling it twice is harmless.
pub fn install_stop_signals() -> anyhow::Result<Arc<AtomicBool>> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_none() {
        for sig in STOP_SIGNALS {
            // The number first, then the flag: whoever sees the flag finds the number.
            signal_hook::flag::register_usize(sig, Arc::clone(signal_cell()), sig as usize)?;
            signal_hook::flag::register(sig, Arc::clone(cancel_cell()))?;
        }
        let _ = INSTALLED.set(());
    }
    Ok(cancel_flag())
}

/// The signal that asked the session to stop (SIGPIPE for a closed output), if any.
pub fn stop_signal() -> Option<i32> {
    match signal_cell().load(Ordering::SeqCst) {
        0 => None,
        n => Some(n as i32),
    }
}

/// The exit code for a session stopped by a signal: 128 + its number (130 for Ctrl-C when
/// the flag was set some other way, e.g. by a test).
pub fn stop_exit_code() -> i32 {
    128 + stop_signal().unwrap_or(libc::SIGINT)
}

/// The signal's name for messages ("SIGHUP"), or its number.
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT (Ctrl-C)".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGPIPE => "a closed output (SIGPIPE)".into(),
        n => format!("signal {n}"),
    }
}

/// Whether stdout or stderr was found closed.
static OUTPUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to stdout or stderr failed because its reader went away.
pub fn output_closed() -> bool {
    OUTPUT_CLOSED.load(Ordering::SeqCst)
}

/// The first error writing stdout that was not its reader going away (`> /dev/full`: ENOSPC).
static STDOUT_ERROR: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The first failed write to stdout other than a closed reader, in words: a summary that was
/// lost, which the session's exit code must show.
pub fn stdout_error() -> Option<String> {
    STDOUT_ERROR.lock().ok().and_then(|e| e.clone())
}

fn stdout_failed(e: &std::io::Error) {
    failed(e);
    if !output_closed() {
        if let Ok(mut first) = STDOUT_ERROR.lock() {
            first.get_or_insert_with(|| e.to_string());
        }
    }
}

fn failed(e: &std::io::Error) {
    let gone = matches!(e.raw_os_error(), Some(libc::EPIPE) | Some(libc::EIO))
        || e.kind() == std::io::ErrorKind::BrokenPipe;
    if gone && !OUTPUT_CLOSED.swap(true, Ordering::SeqCst) {
        let _ = signal_cell().compare_exchange(
            0,
            libc::SIGPIPE as usize,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        cancel_cell().store(true, Ordering::SeqCst);
    }
}

fn write_to(mut w: impl Write, args: fmt::Arguments<'_>, newline: bool) -> std::io::Result<()> {
    w.write_fmt(args)
        .and_then(|()| if newline { w.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| w.flush())
}

/// Writes to stdout; a failed write is remembered, never a panic.
pub fn out(args: fmt::Arguments<'_>, newline: bool) {
    if let Err(e) = write_to(std::io::stdout().lock(), args, newline) {
        stdout_failed(&e);
    }
}

/// Writes to stderr; a failed write is remembered, never a panic.
pub fn err(args: fmt::Arguments<'_>, newline: bool) {
    if let Err(e) = write_to(std::io::stderr().lock(), args, newline) {
        failed(&e);
    }
}

/// Writes `bytes` to stdout (for exporters that write to `-`); errors as [`out`].
pub fn out_bytes(bytes: &[u8]) {
    let mut w = std::io::stdout().lock();
    if let Err(e) = w.write_all(bytes).and_then(|()| w.flush()) {
        stdout_failed(&e);
    }
}

/// `println!` that never panics (see the module documentation).
macro_rules! println {
    () => { $crate::output::out(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::out(format_args!($($arg)*), true) };
}

/// `print!` that never panics.
macro_rules! print {
    ($($arg:tt)*) => { $crate::output::out(format_args!($($arg)*), false) };
}

/// `eprintln!` that never panics.
macro_rules! eprintln {
    () => { $crate::output::err(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::err(format_args!($($arg)*), true) };
}

/// `eprint!` that never panics.
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::output::err(format_args!($($arg)*), false) };
}
