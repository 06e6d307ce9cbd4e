//! The one way a test says it did not run. `skip(needs, how)` prints one line and appends
//! `test<TAB>needs<TAB>how` to the skip log — the file `TARE_SKIP_LOG` names, else
//! `target/tmp/skipped.tsv` — which `scripts/test.sh` sums up at the end of a run (and which
//! makes `.ci/run` fail: in CI nothing may be skipped). Included by path
//! (`#[path = "common/skip.rs"] mod skip;`) so that every test file and support module can
//! use it without the rest of `common`.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;

/// Records that the calling test did not run: `needs` is what was missing ("root", "a C
/// compiler", "a Slurm cluster"), `how` the command or setting that provides it.
pub fn skip(needs: &str, how: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string();
    // The test binary is `NAME-HASH`; its file name says which test file skipped.
    let file = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
            _ => s,
        })
        .unwrap_or_default();
    let one = |s: &str| s.replace(['\t', '\n'], " ");
    eprintln!("skipped {file}::{test}: needs {needs} ({how})");
    let log = std::env::var_os("TARE_SKIP_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped.tsv"));
    // One write with O_APPEND: lines of concurrent tests never interleave.
    let line = format!("{file}::{test}\t{}\t{}\n", one(needs), one(how));
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
