//! The progress bar on stderr (a terminal only): runs done, the current median estimate and
//! an ETA. With an adaptive stop rule the ETA assumes the CI narrows as 1/√n, and never goes
//! beyond the time budget or the run cap. The statistics behind it are recomputed at most
//! four times a second, so its cost does not grow with the number of runs.

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
    /// Seconds of measuring per command after which the rule stops (`--time-budget`).
    pub time_budget: Option<f64>,
}

/// Least time between two recomputations of the bar's statistics.
const REFRESH: Duration = Duration::from_millis(250);

pub struct Progress {
    bar: Option<ProgressBar>,
    targets: Targets,
    /// When the current phase (a benchmark, or the interleaved rounds) began, and which.
    phase: std::cell::Cell<(std::time::Instant, Option<Option<usize>>)>,
    last: std::cell::Cell<Option<std::time::Instant>>,
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
        Progress {
            bar,
            targets,
            phase: std::cell::Cell::new((std::time::Instant::now(), None)),
            last: std::cell::Cell::new(None),
        }
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
        let now = std::time::Instant::now();
        let (mut began, phase) = self.phase.get();
        if phase != Some(current) {
            began = now;
            self.phase.set((now, Some(current)));
            self.last.set(None);
        }
        if self
            .last
            .get()
            .is_some_and(|t| now.duration_since(t) < REFRESH)
        {
            return;
        }
        self.last.set(Some(now));
        let spent = now.duration_since(began).as_secs_f64();
        let shown: Vec<&Benchmark> = match current {
            Some(i) => benches.get(i).into_iter().collect(),
            None => benches.iter().collect(),
        };
        let mut done = 0;
        let mut total = 0usize;
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
        let budget = self
            .targets
            .time_budget
            .filter(|_| self.targets.runs.is_none())
            .map(|b| b * shown.len() as f64);
        let (total, eta) = estimate(done, total, elapsed, spent, budget);
        let prefix = match current {
            Some(i) => format!("Benchmark {}", i + 1),
            None => format!(
                "{}, interleaved",
                crate::units::plural(benches.len(), "benchmark")
            ),
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

/// The runs expected in all and the seconds left: `done` runs took `measured` seconds of run
/// time and `spent` seconds in all; `total` runs are expected from the precision so far. With
/// a `budget` (seconds for the phase) the ETA is at most what is left of it, and the total at
/// most the runs that fit in it at the pace so far.
pub fn estimate(
    done: usize,
    total: usize,
    measured: f64,
    spent: f64,
    budget: Option<f64>,
) -> (usize, f64) {
    let per_run = if done > 0 {
        measured / done as f64
    } else {
        0.0
    };
    let mut eta = per_run * total.saturating_sub(done) as f64;
    let mut total = total;
    if let Some(budget) = budget {
        let left = (budget - spent).max(0.0);
        eta = eta.min(left);
        if done > 0 && spent > 0.0 {
            let pace = spent / done as f64;
            total = total.min(done + (left / pace).ceil() as usize);
        }
    }
    (total, eta)
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn eta_respects_the_budget() {
        // 63 of 1923 expected runs after 1 s of a 4 s budget: at most 3 s and ~252 runs.
        let (total, eta) = estimate(63, 1923, 0.6, 1.0, Some(4.0));
        assert!(eta <= 3.0 + 1e-9, "{eta}");
        assert!((240..=260).contains(&total), "{total}");
        // Far within the budget: the precision estimate stands.
        let (total, eta) = estimate(50, 100, 0.5, 0.6, Some(30.0));
        assert_eq!(total, 100);
        assert!((eta - 0.5).abs() < 1e-9, "{eta}");
        // No budget (fixed runs): per-run time × runs left.
        let (total, eta) = estimate(10, 40, 1.0, 1.2, None);
        assert_eq!(total, 40);
        assert!((eta - 3.0).abs() < 1e-9);
        // Budget spent: nothing left.
        let (_, eta) = estimate(10, 40, 1.0, 9.0, Some(8.0));
        assert_eq!(eta, 0.0);
    }
}
