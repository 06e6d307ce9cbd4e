//! Helpers shared by the end-to-end tests (each test file uses a part of them).
#![allow(dead_code)]

use std::process::Command;

/// The built `tare` binary, without colors.
pub fn tare() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tare"));
    c.env("NO_COLOR", "1");
    c
}

/// Whether the tests run with effective uid 0 (real cgroups and namespaces).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Processes whose command line contains `marker`, as "pid: cmdline".
pub fn survivors(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let s = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if s.contains(marker) {
                out.push(format!("{}: {s}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}
