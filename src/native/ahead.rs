//! Samples taken ahead: the native harnesses start a process for every `run` (Go's test
//! binary, a pyperf worker, a Google Benchmark binary), which costs more than a sample (tens of ms against 5 ms), so a
//! run of requests for the same kernel and loops — the samples of an invocation — is served
//! from one process that takes several samples (`-test.count`, `--values`), kept here until
//! asked for.
//!
//! Only a request for several samples at the same (kernel, loops) as the request before it
//! takes ahead — the batches of an invocation's samples: calibration (loops growing, one sample
//! a request) and the linearity check (N and 2N in pairs, N 2N 2N N ..., one sample a request)
//! get exactly what they ask, each from its own process as before (calibration's last step,
//! two samples to confirm N, takes ahead once per kernel and process). Any other request drops what is kept, so a kept sample
//! is only ever served for the kernel and loops it was taken at, in the order taken. Ahead is
//! bounded by [`AHEAD_MAX`] samples and about [`AHEAD_WALL_NS`] of sampling at the pace of the
//! last sample, so one process never runs long (the worker's reply timeout) and few samples are
//! wasted when tare stops.

use super::{Harness, Sample};
use std::collections::VecDeque;

/// Most samples one process takes for later requests.
pub const AHEAD_MAX: u64 = 10;
/// About how long the samples of one process may take together (ns).
pub const AHEAD_WALL_NS: f64 = 0.5e9;

/// The samples kept for later requests, and the request before.
#[derive(Default)]
pub struct Ahead {
    /// (kernel index, loops) of the previous request.
    last: Option<(usize, u64)>,
    kept: VecDeque<Sample>,
    /// Wall time (ns) of the last sample taken, to size the next process's share.
    pace_ns: Option<f64>,
    /// Processes started (harness runs), for the tests and the debug line.
    pub starts: u64,
}

impl Ahead {
    /// `reps` samples of `loops` loops of kernel `index`, from those kept where there are
    /// enough, else from one new run of the harness.
    pub fn run(
        &mut self,
        h: &mut dyn Harness,
        index: usize,
        loops: u64,
        reps: u64,
    ) -> Result<Vec<Sample>, String> {
        let key = (index, loops);
        let again = self.last == Some(key);
        if !again {
            self.kept.clear();
        }
        self.last = Some(key);
        if (self.kept.len() as u64) < reps {
            let missing = reps - self.kept.len() as u64;
            let n = if again && reps >= 2 {
                self.share(reps).max(missing)
            } else {
                missing
            };
            self.starts += 1;
            let got = match h.run(index, loops, n) {
                Ok(s) => s,
                Err(e) => {
                    self.kept.clear();
                    self.last = None;
                    return Err(e);
                }
            };
            if let Some(s) = got.last() {
                self.pace_ns = Some(s.ns as f64);
            }
            self.kept.extend(got);
        }
        if (self.kept.len() as u64) < reps {
            let had = self.kept.len();
            self.kept.clear();
            self.last = None;
            return Err(format!("asked {reps} samples, the harness gave {had}"));
        }
        Ok(self.kept.drain(..reps as usize).collect())
    }

    /// Drops what is kept (a kernel torn down).
    pub fn forget(&mut self) {
        self.kept.clear();
        self.last = None;
    }

    /// How many samples one process takes for a request of `reps`: enough for about
    /// [`AHEAD_WALL_NS`] at the last sample's pace, at most [`AHEAD_MAX`], never fewer than
    /// asked.
    fn share(&self, reps: u64) -> u64 {
        let fit = match self.pace_ns {
            Some(ns) if ns > 0.0 => (AHEAD_WALL_NS / ns).floor() as u64,
            _ => 1,
        };
        fit.clamp(1, AHEAD_MAX).max(reps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::Kernel;

    /// A harness whose samples take `ns` ns each (numbered in `bytes`, over all runs) and
    /// that records each run's (kernel, loops, reps).
    struct Fake {
        ns: u64,
        taken: u64,
        runs: Vec<(usize, u64, u64)>,
        fail: bool,
    }

    impl Harness for Fake {
        fn kernels(&self) -> &[Kernel] {
            &[]
        }
        fn clock(&mut self) -> Result<(f64, f64), String> {
            Ok((1.0, 0.0))
        }
        fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
            self.runs.push((index, loops, reps));
            if self.fail {
                return Err("boom".into());
            }
            Ok((0..reps)
                .map(|_| {
                    self.taken += 1;
                    Sample {
                        loops,
                        ns: self.ns,
                        cpu_ns: None,
                        bytes: Some(self.taken),
                        items: None,
                        metrics: Default::default(),
                    }
                })
                .collect())
        }
    }

    fn fake(ns: u64) -> Fake {
        Fake {
            ns,
            taken: 0,
            runs: Vec::new(),
            fail: false,
        }
    }

    #[test]
    fn an_invocations_samples_come_from_few_processes_in_order() {
        // 5 ms samples: a warm-up sample, then ten batches of 3 (30 samples).
        let mut h = fake(5_000_000);
        let mut a = Ahead::default();
        let mut seen = Vec::new();
        seen.extend(a.run(&mut h, 0, 1000, 1).unwrap());
        for _ in 0..10 {
            let s = a.run(&mut h, 0, 1000, 3).unwrap();
            assert_eq!(s.len(), 3);
            seen.extend(s);
        }
        // Every sample served once, in the order taken, at the loops asked.
        let order: Vec<u64> = seen.iter().filter_map(|s| s.bytes).collect();
        assert_eq!(order, (1..=31).collect::<Vec<_>>());
        assert!(seen.iter().all(|s| s.loops == 1000));
        // 1 (warm-up) + 30 samples at 10 a process: 4 processes, not 11.
        assert_eq!(a.starts, 4, "{:?}", h.runs);
        assert_eq!(h.runs[0], (0, 1000, 1));
        assert!(h.runs[1..].iter().all(|r| r.2 == AHEAD_MAX));
    }

    #[test]
    fn calibration_and_the_linearity_check_get_exactly_what_they_ask() {
        let mut h = fake(1_000_000);
        let mut a = Ahead::default();
        // Loops growing, then N and 2N in pairs (N 2N, 2N N, ...: the same loops twice in a row
        // at a pair's edge): each request its own process, of its size.
        let asks = [
            (1, 1),
            (16, 1),
            (256, 1),
            (1000, 1),
            (2000, 1),
            (2000, 1),
            (1000, 1),
            (1000, 1),
            (2000, 1),
        ];
        for (loops, reps) in asks {
            assert_eq!(a.run(&mut h, 0, loops, reps).unwrap().len(), 1);
        }
        assert_eq!(
            h.runs,
            asks.iter().map(|&(l, r)| (0, l, r)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn kept_samples_never_serve_another_kernel_or_loops() {
        let mut h = fake(1_000_000);
        let mut a = Ahead::default();
        a.run(&mut h, 0, 100, 1).unwrap();
        a.run(&mut h, 0, 100, 3).unwrap(); // takes ahead
        assert_eq!(h.runs.last(), Some(&(0, 100, AHEAD_MAX)));
        // Kernel 1 at the same loops: a process of its own; kernel 0's kept samples are gone.
        a.run(&mut h, 1, 100, 3).unwrap();
        assert_eq!(h.runs.last(), Some(&(1, 100, 3)));
        a.run(&mut h, 0, 100, 3).unwrap();
        assert_eq!(h.runs.last(), Some(&(0, 100, 3)));
        assert_eq!(a.starts, 4);
    }

    #[test]
    fn long_samples_take_less_ahead_and_errors_keep_nothing() {
        // 200 ms samples: 0.5 s fits 2, fewer than asked: the ask.
        let mut h = fake(200_000_000);
        let mut a = Ahead::default();
        a.run(&mut h, 0, 1, 1).unwrap();
        a.run(&mut h, 0, 1, 3).unwrap();
        assert_eq!(h.runs.last(), Some(&(0, 1, 3)));
        // 100 ms samples: 5 a process.
        let mut h = fake(100_000_000);
        let mut a = Ahead::default();
        a.run(&mut h, 0, 1, 1).unwrap();
        a.run(&mut h, 0, 1, 3).unwrap();
        assert_eq!(h.runs.last(), Some(&(0, 1, 5)));
        a.run(&mut h, 0, 1, 3).unwrap(); // 2 kept, 1 more needed: another process of 5
        assert_eq!(h.runs.last(), Some(&(0, 1, 5)));
        assert_eq!(a.kept.len(), 4);
        h.fail = true;
        a.kept.clear();
        assert_eq!(a.run(&mut h, 0, 1, 3).unwrap_err(), "boom");
        assert!(a.kept.is_empty() && a.last.is_none());
    }
}
