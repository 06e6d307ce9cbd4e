//! Memory over time (`--memory-sample INTERVAL`): the run group's memory charge sampled by a
//! thread from the spawn to the main process's exit, as `[seconds, bytes]` pairs; and
//! `--memory-high` (cgroup v2 `memory.high`: above it the kernel reclaims and throttles the
//! group instead of killing it). Not a peak meter: a spike shorter than the interval is
//! missed (the peak memory of every run is exact; this shows the shape).
//!
//! What is sampled: v1 `memory.usage_in_bytes` (memory + page cache charged to the group), v2
//! `memory.current`; less the group's charge just before the spawn (on v1 runs share one
//! memory group, and what earlier runs left charged is not this run's).
//!
//! cgroup v1 has no equivalent of `memory.high`: `memory.soft_limit_in_bytes` only steers
//! which groups the kernel reclaims from first when the whole machine is short of memory, so
//! it creates no pressure on an otherwise idle machine; tare refuses `--memory-high` there
//! rather than pretend.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The usage file of a run's memory group (v2 `memory.current`, else v1
/// `memory.usage_in_bytes`), if there is one.
pub fn usage_file(memory_dir: &Path) -> Option<PathBuf> {
    ["memory.current", "memory.usage_in_bytes"]
        .iter()
        .map(|f| memory_dir.join(f))
        .find(|p| p.exists())
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// A sampler armed before the spawn (its baseline read), started after it.
pub struct Armed {
    file: PathBuf,
    interval: Duration,
    baseline: u64,
}

pub fn arm(memory_dir: &Path, interval: Duration) -> Option<Armed> {
    let file = usage_file(memory_dir)?;
    let baseline = read_u64(&file).unwrap_or(0);
    Some(Armed {
        file,
        interval: interval.max(Duration::from_millis(1)),
        baseline,
    })
}

/// The running sampler of one run.
pub struct Sampler {
    handle: std::thread::JoinHandle<Vec<[f64; 2]>>,
    done: Arc<AtomicBool>,
}

impl Armed {
    /// Samples from `start` until [`Sampler::finish`]; the first sample is taken at once.
    pub fn start(self, start: Instant) -> std::io::Result<Sampler> {
        let done = Arc::new(AtomicBool::new(false));
        let d = Arc::clone(&done);
        let handle = std::thread::Builder::new()
            .name("tare-memory".into())
            .spawn(move || {
                let mut out = Vec::new();
                let mut next = Instant::now();
                loop {
                    if let Some(v) = read_u64(&self.file) {
                        out.push([
                            start.elapsed().as_secs_f64(),
                            v.saturating_sub(self.baseline) as f64,
                        ]);
                    }
                    if d.load(Ordering::Relaxed) || out.len() >= 100_000 {
                        return out;
                    }
                    next += self.interval;
                    let now = Instant::now();
                    if next > now {
                        // Short naps so finishing is prompt even with long intervals.
                        let until = next;
                        while Instant::now() < until && !d.load(Ordering::Relaxed) {
                            std::thread::sleep(
                                (until - Instant::now()).min(Duration::from_millis(5)),
                            );
                        }
                    } else {
                        next = now;
                    }
                }
            })?;
        Ok(Sampler { handle, done })
    }
}

impl Sampler {
    /// Stops sampling (one last sample is taken) and returns the timeline.
    pub fn finish(self) -> Vec<[f64; 2]> {
        self.done.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// Sets `memory.high` in a cgroup v2 run group; on v1 (no `unified_dir`) an error that says
/// why there is no equivalent.
pub fn set_memory_high(unified_dir: Option<&Path>, bytes: u64) -> anyhow::Result<()> {
    let Some(dir) = unified_dir else {
        anyhow::bail!(
            "--memory-high needs cgroup v2 (memory.high); cgroup v1's memory.soft_limit_in_bytes \
             only matters when the whole machine is short of memory, so it cannot emulate \
             pressure — use --memory-limit for a hard limit instead"
        );
    };
    let f = dir.join("memory.high");
    std::fs::write(&f, bytes.to_string())
        .map_err(|e| anyhow::anyhow!("--memory-high: cannot write {}: {e}", f.display()))
}
