//! The last time per iteration of each kernel, for harnesses that cannot fix their loops
//! (Google Benchmark before 1.8, Criterion.rs) and aim their own time-based settings at tare's
//! loop count from it. Kept in the session directory (`TARE_SESSION_DIR`) as well, so a new
//! process of the session aims as well as the last one did.

use std::path::{Path, PathBuf};

pub struct Pace {
    per_iter: Vec<Option<f64>>,
    /// `SESSION_DIR/HARNESS-HASH`: kernel i's time in `HARNESS-HASH.i`.
    file: Option<PathBuf>,
}

impl Pace {
    /// The times kept for `kernels` kernels of `harness` on `target` with `args`, if any.
    pub fn load(harness: &str, target: &Path, args: &[String], kernels: usize) -> Pace {
        let file = super::common::session_dir()
            .map(|d| d.join(super::common::cache_name(harness, target, &args)));
        let per_iter = (0..kernels)
            .map(|i| {
                let f = file.as_ref()?.with_extension(i.to_string());
                std::fs::read_to_string(f).ok()?.trim().parse().ok()
            })
            .collect();
        Pace { per_iter, file }
    }

    /// Kernel `i`'s last time per iteration (ns), if known.
    pub fn get(&self, i: usize) -> Option<f64> {
        self.per_iter.get(i).copied().flatten()
    }

    /// Keeps kernel `i`'s time per iteration (written whole, then renamed into place).
    pub fn remember(&mut self, i: usize, ns: f64) {
        if !(ns.is_finite() && ns > 0.0) || i >= self.per_iter.len() {
            return;
        }
        self.per_iter[i] = Some(ns);
        if let Some(f) = &self.file {
            let tmp = f.with_extension(format!("{i}.{}.tmp", std::process::id()));
            if std::fs::write(&tmp, ns.to_string()).is_ok() {
                let _ = std::fs::rename(&tmp, f.with_extension(i.to_string()));
            }
        }
    }
}
