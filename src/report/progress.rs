//! The progress bar on stderr (a terminal only): runs done, the current median estimate and
//! an ETA. With an adaptive stop rule the ETA assumes the CI narrows as 1/√n.

use crate::results::Benchmark;
use crate::units::format_time;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// What the progress display needs to know about the stop rule.
#[derive(Debug, Clone, Copy)]
pub struct Targets {
    /// Fixed number of runs, when `--runs` was given.
    pub runs: Option<usize>,
    pub min_runs: usize,
    pub max_runs: usize,
    pub precision: f64,
}

pub struct Progress {
    bar: Option<ProgressBar>,
    targets: Targets,
}

impl Progress {
    /// A progress display; hidden unless `enabled` and stderr is a terminal.
    pub fn new(enabled: bool, targets: Targets) -> Progress {
        use std::io::IsTerminal;
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(100), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{prefix:.bold} [{bar:30.cyan/blue}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress { bar, targets }
    }

    /// Expected total counted runs, from the current relative CI half-width.
    fn expected_runs(&self, n: usize, rel: Option<f64>) -> usize {
        if let Some(r) = self.targets.runs {
            return r;
        }
        let guess = match rel {
            Some(h) if h > 0.0 && n > 0 => {
                ((n as f64) * (h / self.targets.precision).powi(2)).ceil() as usize
            }
            _ => self.targets.min_runs,
        };
        guess.clamp(self.targets.min_runs.max(n), self.targets.max_runs.max(n))
    }

    /// Redraws for the benchmarks being measured (`current` in sequential order; all otherwise).
    pub fn update(&self, benches: &[Benchmark], current: Option<usize>) {
        let Some(bar) = &self.bar else { return };
        let shown: Vec<&Benchmark> = match current {
            Some(i) => benches.get(i).into_iter().collect(),
            None => benches.iter().collect(),
        };
        let mut done = 0;
        let mut total = 0;
        let mut elapsed = 0.0;
        let mut medians = Vec::new();
        for b in &shown {
            let walls: Vec<f64> = b
                .runs
                .iter()
                .filter(|r| r.counted)
                .map(|r| r.wall_time)
                .collect();
            let n = walls.len();
            done += n;
            total += self.expected_runs(n, crate::stats::relative_median_ci_halfwidth(&walls));
            elapsed += b.runs.iter().map(|r| r.wall_time).sum::<f64>();
            if let Some(m) = crate::stats::describe(&walls) {
                medians.push(format_time(m.median, None));
            }
        }
        let per_run = if done > 0 { elapsed / done as f64 } else { 0.0 };
        let eta = per_run * total.saturating_sub(done) as f64;
        let prefix = match current {
            Some(i) => format!("Benchmark {}", i + 1),
            None => format!("{} benchmarks, interleaved", benches.len()),
        };
        bar.set_prefix(prefix);
        bar.set_length(total.max(1) as u64);
        bar.set_position(done as u64);
        bar.set_message(format!(
            "{done}/{total} runs  median {}  ETA {}",
            medians.join(" | "),
            format_time(eta, Some(1.0))
        ));
    }

    /// Removes the bar so the summary starts on a clean line.
    pub fn clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
