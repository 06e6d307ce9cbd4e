//! Results processors (Rancid's processors: averages, histograms, warm-up and window filters,
//! invalid-run removal): a narrow trait over one benchmark's results, run in order after
//! measuring and before the summaries. docs/extending.md shows how to add one.
//!
//! Depends on `results` and `stats` only; never measures or prints.

use crate::results::Benchmark;

/// Changes or annotates one benchmark's results after measuring, e.g. marks runs that do not
/// count. It must leave runs in place (they are the record): mark them `counted = false`.
pub trait Processor {
    fn name(&self) -> &str;
    fn process(&self, b: &mut Benchmark);
}

/// Keeps only runs `from..to` (by position among the runs, warm-up included) as counted:
/// Rancid's window filter.
pub struct Window {
    pub from: usize,
    pub to: usize,
}

impl Processor for Window {
    fn name(&self) -> &str {
        "window"
    }
    fn process(&self, b: &mut Benchmark) {
        for (i, r) in b.runs.iter_mut().enumerate() {
            if i < self.from || i >= self.to {
                r.counted = false;
            }
        }
    }
}

/// Drops runs whose value of a user metric (`m.NAME` of a kernel sample) is outside
/// `[min, max]`: invalid-run removal (e.g. a checksum that shows the run computed garbage).
pub struct MetricRange {
    pub metric: String,
    pub min: f64,
    pub max: f64,
}

impl Processor for MetricRange {
    fn name(&self) -> &str {
        "metric-range"
    }
    fn process(&self, b: &mut Benchmark) {
        for r in &mut b.runs {
            if let Some(v) =
                super::kernels::sample_of(r).and_then(|s| s.metrics.get(&self.metric).copied())
            {
                if !(self.min..=self.max).contains(&v) {
                    r.counted = false;
                }
            }
        }
    }
}

/// Runs every processor over every benchmark, in order.
pub fn apply(processors: &[Box<dyn Processor>], benches: &mut [Benchmark]) {
    for p in processors {
        for b in benches.iter_mut() {
            p.process(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Run;

    fn run(i: usize, checksum: f64) -> Run {
        let mut extra = std::collections::BTreeMap::new();
        extra.insert(
            crate::results::SAMPLE_KEY.to_string(),
            serde_json::json!({"invocation": 0, "position": i, "loops": 1, "ns": 10,
                               "metrics": {"checksum": checksum}}),
        );
        Run {
            extra,
            ..Run::sample(i, 1e-8, 0.0)
        }
    }

    #[test]
    fn processors_mark_runs_and_keep_them() {
        let mut b = Benchmark {
            name: "k/c".into(),
            command: String::new(),
            argv: Vec::new(),
            parameters: Default::default(),
            summary: Default::default(),
            stop_reason: String::new(),
            runs: (0..6)
                .map(|i| run(i, if i == 4 { -1.0 } else { 5.0 }))
                .collect(),
            diagnostics: Vec::new(),
            extra: Default::default(),
        };
        let ps: Vec<Box<dyn Processor>> = vec![
            Box::new(Window { from: 1, to: 6 }),
            Box::new(MetricRange {
                metric: "checksum".into(),
                min: 0.0,
                max: 10.0,
            }),
        ];
        apply(&ps, std::slice::from_mut(&mut b));
        let counted: Vec<bool> = b.runs.iter().map(|r| r.counted).collect();
        assert_eq!(counted, [false, true, true, true, false, true]);
        assert_eq!(b.runs.len(), 6);
    }
}
