//! What the native adapters share: the session directory `tare kernels` gives every worker
//! (`TARE_SESSION_DIR`), the name a build or a cache is kept under there, and the probe of a
//! Python interpreter (pyperf, pytest-benchmark). The clock most harnesses time with (their
//! own, taken as 1 ns and free to read) is `Harness::clock`'s default.

use super::{last_line, Kernel};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The interpreter where `--python` names none.
pub const PYTHON: &str = "python3";

/// The interpreter a Python harness runs: `--python`, else [`PYTHON`] on PATH.
pub fn python(a: &super::Options) -> PathBuf {
    a.python.clone().unwrap_or_else(|| PYTHON.into())
}

/// The session directory tare names (`crate::exec::worker::SESSION_ENV`), where it is one.
pub fn session_dir() -> Option<PathBuf> {
    std::env::var_os(crate::exec::worker::SESSION_ENV)
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
}

/// `PREFIX-HASH`: the name in the session directory of what is kept for `target` (its
/// canonical path) and `extra` (the arguments or options that change what is built or run).
pub fn cache_name(prefix: &str, target: &Path, extra: &impl Hash) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::canonicalize(target)
        .unwrap_or_else(|_| target.to_path_buf())
        .hash(&mut h);
    extra.hash(&mut h);
    format!("{prefix}-{:016x}", h.finish())
}

/// Runs `about_py` (a script that imports `package` and prints versions) with `python`: its
/// output trimmed, or the one-line reason it cannot run or import `package`.
pub fn probe_python(python: &Path, about_py: &str, package: &str) -> Result<String, String> {
    let py = python.display();
    let out = Command::new(python)
        .args(["-c", about_py])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {py}: {e}; install Python 3 or name it with --python"))?;
    if !out.status.success() {
        return Err(format!(
            "{py} cannot import {package} ({}): pip install {package} for it, or name another interpreter with --python",
            last_line(&out)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Adds a kernel without parameters, named `name`, or `name.I` where an earlier kernel has
/// that name (`i` the benchmark's place in the harness's list).
pub fn add_kernel(kernels: &mut Vec<Kernel>, name: String, i: usize, doc: String) {
    let name = if kernels.iter().any(|k| k.name == name) {
        format!("{name}.{i}")
    } else {
        name
    };
    kernels.push(Kernel {
        name,
        doc,
        params: Vec::new(),
    });
}
