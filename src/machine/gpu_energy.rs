//! GPU energy as a meter (`--energy`, beside RAPL): joules per run per NVIDIA GPU, read off the
//! runs' path.
//!
//! For: a session's sampler thread that reads each GPU's energy counter (NVML's
//! `nvmlDeviceGetTotalEnergyConsumption`), the counter's update period and the idle power
//! measured before the first run, and each run's energy computed afterwards from the readings
//! around it. Not for: clocks and temperature (every run's environment reads those, cheaply:
//! `machine::probe`), CPU packages (`machine::energy`).
//!
//! Why a thread: one read of the counter took 3.1 ms on an H200 (p90 5.7 ms, max 18 ms), and
//! the counter moves only every ~100 ms (steps of ~9 J idle, ~42 J busy there). Read before and
//! after every run it cost more than the run (`/bin/true` at 6.8–8.4× hyperfine), and a run
//! shorter than the step read 0 or one whole step. So the sampler reads each counter every
//! [`TICK`] (plus the read's own time) and keeps the moments it changed ("knots"); the
//! energy a counter reports at a knot is taken as used evenly since the knot before, and a
//! run's energy is that piecewise-linear curve's rise from the run's start to its end. A run
//! needs a knot after its end, so runs are given their energy when the session's runs are
//! over ([`GpuEnergyMeter::finish`]).
//!
//! Resolution: about one update period's energy either way at each end, so a run shorter than
//! [`COARSE_PERIODS`] periods is marked `coarse` and no verdict is drawn on its energy (the
//! comparison says so). The period is measured during the idle window: the median time
//! between knots.

use super::gpu::Nvml;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Pause between two rounds of counter reads on the sampler thread.
pub const TICK: Duration = Duration::from_millis(5);

/// A run shorter than this many update periods gets a `coarse` energy: no verdict on it.
pub const COARSE_PERIODS: f64 = 5.0;

/// One observed change of a counter: when it was first seen and its value (mJ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knot {
    /// Seconds since the meter started.
    pub t: f64,
    pub mj: u64,
}

/// The counter readings of one GPU, in time order: a knot at each change seen (the first
/// reading is none: when its value was reached is unknown), and the moment of the last read.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub knots: Vec<Knot>,
    /// The value last read.
    pub last_value: Option<u64>,
    /// When the counter was last read (seconds since the meter started).
    pub last_read: f64,
    /// Reads made, and their summed duration (seconds): the sampler's cost.
    pub reads: u64,
    pub read_seconds: f64,
}

impl Trace {
    /// Adds a reading taken at `t`.
    pub fn push(&mut self, t: f64, mj: u64) {
        if self.last_value.is_some_and(|v| v != mj) {
            self.knots.push(Knot { t, mj });
        }
        self.last_value = Some(mj);
        self.last_read = t;
    }

    /// The counter's energy at `t`, interpolated between the knots around it (mJ as f64);
    /// `None` before the first knot or after the last one.
    pub fn energy_at(&self, t: f64) -> Option<f64> {
        let i = self.knots.partition_point(|k| k.t <= t);
        if i == 0 || i == self.knots.len() {
            // At or after the last knot: exact only when it is the very moment of it.
            return (i > 0 && self.knots[i - 1].t == t).then(|| self.knots[i - 1].mj as f64);
        }
        let (a, b) = (self.knots[i - 1], self.knots[i]);
        let span = b.t - a.t;
        Some(a.mj as f64 + (b.mj - a.mj) as f64 * (t - a.t) / span)
    }

    /// Joules used from `start` to `end` (seconds since the meter started); `None` where the
    /// knots do not cover both ends.
    pub fn joules(&self, start: f64, end: f64) -> Option<f64> {
        Some((self.energy_at(end)? - self.energy_at(start)?).max(0.0) / 1000.0)
    }

    /// Whether a knot after `t` was seen.
    pub fn covers(&self, t: f64) -> bool {
        self.knots.last().is_some_and(|k| k.t > t)
    }

    /// The update period: the median time between consecutive knots within `[from, to]`
    /// (seconds; `None` with fewer than three knots there).
    pub fn period(&self, from: f64, to: f64) -> Option<f64> {
        let ts: Vec<f64> = self
            .knots
            .iter()
            .map(|k| k.t)
            .filter(|&t| t >= from && t <= to)
            .collect();
        let mut gaps: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
        if gaps.len() < 2 {
            return None;
        }
        gaps.sort_by(f64::total_cmp);
        Some(gaps[gaps.len() / 2])
    }
}

/// One GPU's energy in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuRunEnergy {
    pub index: u32,
    pub name: String,
    /// Joules the GPU used during the run (whatever ran on it).
    pub joules: f64,
    /// Joules above the idle power: `joules − idle_watts × wall time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_joules: Option<f64>,
    /// The run was shorter than [`COARSE_PERIODS`] of the counter's update period: its
    /// energy is known to about a period's worth, and no verdict is drawn on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coarse: bool,
}

/// What the session learnt of a GPU before its first run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuEnergyInfo {
    pub index: u32,
    pub name: String,
    /// How often the energy counter moved (seconds), measured while idle.
    pub update_period_s: Option<f64>,
    /// Watts while idle.
    pub idle_watts: Option<f64>,
    /// Time one read of the counter took, median (seconds): the sampler thread's cost.
    pub read_seconds: Option<f64>,
}

struct Shared {
    traces: Mutex<Vec<Trace>>,
    stop: AtomicBool,
}

/// The session's GPU energy meter: the sampler thread and what it learnt.
pub struct GpuEnergyMeter {
    gpus: Vec<(u32, String)>,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    t0: Instant,
    pub info: Vec<GpuEnergyInfo>,
}

impl std::fmt::Debug for GpuEnergyMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuEnergyMeter")
            .field("gpus", &self.gpus)
            .finish()
    }
}

impl GpuEnergyMeter {
    /// Starts sampling every GPU that has an energy counter; `None` where NVML is absent or
    /// no GPU has the counter.
    pub fn start() -> Option<GpuEnergyMeter> {
        let nvml = Nvml::load()?;
        let gpus: Vec<(u32, String)> = nvml
            .gpus()
            .into_iter()
            .filter(|(i, _)| nvml.energy_mj(*i).is_some())
            .collect();
        if gpus.is_empty() {
            return None;
        }
        let shared = Arc::new(Shared {
            traces: Mutex::new(vec![Trace::default(); gpus.len()]),
            stop: AtomicBool::new(false),
        });
        let t0 = Instant::now();
        let (s, indices) = (shared.clone(), gpus.iter().map(|g| g.0).collect::<Vec<_>>());
        let thread = std::thread::Builder::new()
            .name("tare-gpu-energy".into())
            .spawn(move || sample(&nvml, &indices, &s, t0))
            .ok()?;
        let info = gpus
            .iter()
            .map(|(index, name)| GpuEnergyInfo {
                index: *index,
                name: name.clone(),
                update_period_s: None,
                idle_watts: None,
                read_seconds: None,
            })
            .collect();
        let meter = GpuEnergyMeter {
            gpus,
            shared,
            thread: Some(thread),
            t0,
            info,
        };
        // Interpolation starts at the first change: wait for it (at most a second).
        meter.wait_until(Duration::from_secs(1), |tr| !tr.knots.is_empty());
        Some(meter)
    }

    /// Seconds since the meter started, of an instant.
    pub fn at(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.t0).as_secs_f64()
    }

    /// Waits until every GPU's trace meets `done` (at most `limit`); whether they all did.
    fn wait_until(&self, limit: Duration, done: impl Fn(&Trace) -> bool) -> bool {
        let until = Instant::now() + limit;
        loop {
            let all = self
                .shared
                .traces
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .all(&done);
            if all || Instant::now() >= until {
                return all;
            }
            std::thread::sleep(TICK);
        }
    }

    /// Waits until every counter moved after `t` (at most `limit`); whether they all did.
    fn wait_past(&self, t: f64, limit: Duration) -> bool {
        self.wait_until(limit, |tr| tr.covers(t))
    }

    /// Idle power and update period from the window `[from, to]` with nothing measured in
    /// it (waits for the counters to move once past its end, at most a second).
    pub fn set_idle(&mut self, from: Instant, to: Instant) {
        let (a, b) = (self.at(from), self.at(to));
        self.wait_past(b, Duration::from_secs(1));
        let traces = self.shared.traces.lock().unwrap_or_else(|e| e.into_inner());
        for (info, tr) in self.info.iter_mut().zip(traces.iter()) {
            info.update_period_s = tr.period(a, b);
            info.idle_watts = tr.joules(a, b).filter(|_| b > a).map(|j| j / (b - a));
            info.read_seconds = (tr.reads > 0).then(|| tr.read_seconds / tr.reads as f64);
        }
    }

    /// Stops sampling and gives each run, `(start, end, wall seconds)`, its energy per GPU
    /// (in `runs`' order). Waits for the counters to move past the last run's end (at most
    /// a second).
    pub fn finish(mut self, runs: &[(Instant, Instant, f64)]) -> Vec<Vec<GpuRunEnergy>> {
        let last = runs.iter().map(|r| self.at(r.1)).fold(0.0, f64::max);
        self.wait_past(last, Duration::from_secs(1));
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let traces = self.shared.traces.lock().unwrap_or_else(|e| e.into_inner());
        runs.iter()
            .map(|&(s, e, wall)| {
                let (a, b) = (self.at(s), self.at(e));
                self.gpus
                    .iter()
                    .zip(traces.iter())
                    .zip(&self.info)
                    .filter_map(|(((index, name), tr), info)| {
                        let joules = tr.joules(a, b)?;
                        Some(GpuRunEnergy {
                            index: *index,
                            name: name.clone(),
                            joules,
                            dynamic_joules: info.idle_watts.map(|w| joules - w * wall),
                            coarse: info
                                .update_period_s
                                .is_none_or(|p| wall < COARSE_PERIODS * p),
                        })
                    })
                    .collect()
            })
            .collect()
    }
}

impl Drop for GpuEnergyMeter {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The sampler thread: each GPU's counter read in turn, then a [`TICK`]'s pause, until told to
/// stop. A reading is stamped with the middle of its call.
fn sample(nvml: &Nvml, indices: &[u32], shared: &Shared, t0: Instant) {
    while !shared.stop.load(Ordering::Relaxed) {
        for (k, &i) in indices.iter().enumerate() {
            let a = t0.elapsed().as_secs_f64();
            let v = nvml.energy_mj(i);
            let b = t0.elapsed().as_secs_f64();
            let mut traces = shared.traces.lock().unwrap_or_else(|e| e.into_inner());
            let tr = &mut traces[k];
            tr.reads += 1;
            tr.read_seconds += b - a;
            if let Some(mj) = v {
                tr.push((a + b) / 2.0, mj);
            }
        }
        std::thread::sleep(TICK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter that moves every 0.1 s at `watts`, read every 5 ms from t = 0.
    fn stepped(watts: f64, until: f64) -> Trace {
        let mut tr = Trace::default();
        let mut t = 0.0;
        while t <= until {
            let steps = (t / 0.1f64).floor();
            tr.push(t, (steps * 0.1 * watts * 1000.0).round() as u64);
            t += 0.005;
        }
        tr
    }

    #[test]
    fn the_period_is_the_time_between_changes() {
        let tr = stepped(100.0, 1.0);
        let p = tr.period(0.0, 1.0).unwrap();
        assert!((p - 0.1).abs() < 0.006, "{p}");
        assert!(Trace::default().period(0.0, 1.0).is_none());
    }

    #[test]
    fn a_run_of_several_periods_reads_power_times_time() {
        let tr = stepped(300.0, 2.0);
        // 0.73 s at 300 W is 219 J; each end is known to within a period's 30 J.
        let j = tr.joules(0.213, 0.943).unwrap();
        assert!((j - 219.0).abs() < 30.0, "{j}");
        // A counter that held still reads nothing; past the last knot, nothing is known.
        assert_eq!(stepped(0.0, 1.0).joules(0.2, 0.5), None);
        assert_eq!(tr.joules(0.5, 2.5), None);
    }

    #[test]
    fn interpolation_is_linear_between_knots() {
        let mut tr = Trace::default();
        tr.push(0.5, 700);
        assert!(tr.knots.is_empty());
        tr.push(1.0, 1000);
        tr.push(1.05, 1000);
        tr.push(2.0, 3000);
        tr.push(3.0, 3500);
        assert_eq!(tr.energy_at(1.5), Some(2000.0));
        assert_eq!(tr.energy_at(2.5), Some(3250.0));
        assert_eq!(tr.energy_at(0.5), None);
        assert!((tr.joules(1.5, 2.5).unwrap() - 1.25).abs() < 1e-12);
        assert!(tr.covers(2.9) && !tr.covers(3.0));
    }
}
