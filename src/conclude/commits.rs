//! Two builds of a program measured against each other (`tare history confirm`, `tare bisect`),
//! judged under the one model of [`super::levels`]: each `tare run` session that measured them
//! ran them interleaved, one process a run, so the runs are processes keyed by their round, and
//! [`levels::compare_rounds`] draws the interval and the test from the per-round ratios, with
//! the noise band and α of every other verdict. The sessions of one pair of builds are pooled
//! (a build measured again adds to what it had; rounds of different sessions never pair).
//!
//! Not here: building commits, running `git bisect` or the sessions (`cli::history`).

use super::analysis::Test;
use super::levels::{self, ByRound, Comparison, Outcome, Settings};
use crate::results::{Run, Session};

/// The metrics a pair of builds can be compared on.
pub const METRICS: &[&str] = &["wall_time", "cpu_time"];

/// Every run of two builds, pooled over the sessions that measured them.
#[derive(Debug, Default)]
pub struct Pool {
    old: ByRound,
    new: ByRound,
    sessions: usize,
}

/// Rounds of different sessions are told apart by this much (no session has this many).
const SESSION_STRIDE: usize = 1 << 32;

impl Pool {
    /// Adds a session whose first benchmark is the old build and second the new one: their
    /// counted runs with a round, on `metric` (see [`METRICS`]).
    pub fn add(&mut self, s: &Session, metric: &str) -> Result<(), String> {
        let (Some(a), Some(b)) = (s.benchmarks.first(), s.benchmarks.get(1)) else {
            return Err("the session does not hold the two builds".into());
        };
        let offset = self.sessions * SESSION_STRIDE;
        let runs = |bench: &crate::results::Benchmark| -> ByRound {
            bench
                .runs
                .iter()
                .filter(|r| r.counted)
                .filter_map(|r| r.round.map(|k| (offset + k, vec![value(r, metric)])))
                .collect()
        };
        self.old.extend(runs(a));
        self.new.extend(runs(b));
        self.sessions += 1;
        Ok(())
    }

    /// The new build against the old under the model (α, noise band); `None` before any run.
    pub fn compare(&self, alpha: f64, noise: f64) -> Option<Comparison> {
        let settings = Settings {
            // The test where rounds do not pair (fewer than three in common): Welch's t, the
            // one that agrees with an interval of a ratio of means, as `tare kernels` uses.
            test: Test::Welch,
            alpha,
            noise,
            confidence: 0.95,
            resamples: 10_000,
            seed: self.old.len() as u64,
        };
        levels::compare_rounds(&[(self.old.clone(), self.new.clone())], &settings)
            .into_iter()
            .next()
    }

    /// "N processes a side in K sessions".
    pub fn words(&self) -> String {
        format!(
            "{} processes a side in {}",
            self.old.len().min(self.new.len()),
            crate::units::plural(self.sessions, "session")
        )
    }

    pub fn sessions(&self) -> usize {
        self.sessions
    }
}

fn value(r: &Run, metric: &str) -> f64 {
    match metric {
        "cpu_time" => r.cpu_time,
        _ => r.wall_time,
    }
}

/// The comparison's interval, or the ratio alone where there is none.
pub fn interval(c: &Comparison) -> (f64, f64) {
    c.ci.unwrap_or((c.ratio, c.ratio))
}

/// Whether the new build is slower, under the model: the verdict every other command would
/// give these runs.
pub fn slower(c: &Comparison) -> bool {
    c.outcome == Outcome::Slower
}

/// Where a candidate falls against a threshold between two builds' values (bisect's: halfway
/// between GOOD and BAD on a log scale): only an interval wholly on one side decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Slow,
    Fast,
    Undecided,
}

pub fn side(c: &Comparison, threshold: f64) -> Side {
    match c.ci {
        Some((low, _)) if low >= threshold => Side::Slow,
        Some((_, high)) if high < threshold => Side::Fast,
        _ => Side::Undecided,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(old: &[f64], new: &[f64]) -> Session {
        let mut s = crate::results::read::load_session(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/results/plain.json"
        )))
        .unwrap();
        let mut b = s.benchmarks[0].clone();
        b.runs.truncate(1);
        let template = b.runs[0].clone();
        let side = |values: &[f64]| {
            let mut b = b.clone();
            b.runs = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let mut r = template.clone();
                    r.round = Some(i);
                    r.counted = true;
                    r.wall_time = *v;
                    r.cpu_time = *v / 2.0;
                    r
                })
                .collect();
            b
        };
        s.benchmarks = vec![side(old), side(new)];
        s
    }

    #[test]
    fn sessions_pool_and_the_model_judges() {
        let old: Vec<f64> = (0..8).map(|i| 1.0 + 0.01 * (i % 3) as f64).collect();
        let new: Vec<f64> = old.iter().map(|x| x * 1.1).collect();
        let mut p = Pool::default();
        p.add(&session(&old, &new), "wall_time").unwrap();
        p.add(&session(&old, &new), "wall_time").unwrap();
        assert_eq!(p.sessions(), 2);
        assert!(p.words().starts_with("16 processes a side in 2 sessions"));
        let c = p.compare(0.05, 0.01).unwrap();
        // Paired over the rounds of both sessions, which never pair across sessions.
        assert_eq!(c.paired_rounds, Some(16));
        assert!((c.ratio - 1.1).abs() < 1e-9, "{}", c.ratio);
        assert!(slower(&c), "{}", c.words);
        assert_eq!(side(&c, 1.1f64.sqrt()), Side::Slow);
        assert_eq!(side(&c, 1.2), Side::Fast);
        // The same runs on CPU time (half the wall time here): the same ratio.
        let mut q = Pool::default();
        q.add(&session(&old, &new), "cpu_time").unwrap();
        assert!((q.compare(0.05, 0.01).unwrap().ratio - 1.1).abs() < 1e-9);
    }

    #[test]
    fn the_same_build_twice_is_no_verdict() {
        let old: Vec<f64> = (0..12).map(|i| 1.0 + 0.02 * ((i * 7) % 5) as f64).collect();
        let new: Vec<f64> = (0..12).map(|i| 1.0 + 0.02 * ((i * 3) % 5) as f64).collect();
        let mut p = Pool::default();
        p.add(&session(&old, &new), "wall_time").unwrap();
        let c = p.compare(0.05, 0.01).unwrap();
        assert!(!slower(&c), "{}", c.words);
        assert_eq!(side(&c, 1.0), Side::Undecided, "{:?}", c.ci);
    }

    #[test]
    fn an_interval_reaching_past_the_threshold_does_not_decide() {
        let mut c = Pool::default()
            .compare(0.05, 0.01)
            .unwrap_or_else(|| panic!("a comparison even without runs"));
        c.ci = Some((1.005, 1.035));
        assert_eq!(side(&c, 1.0149), Side::Undecided);
        c.ci = Some((1.02, 1.04));
        assert_eq!(side(&c, 1.0149), Side::Slow);
        c.ci = Some((0.99, 1.01));
        assert_eq!(side(&c, 1.0149), Side::Fast);
        c.ci = None;
        assert_eq!(side(&c, 1.0149), Side::Undecided);
    }
}
