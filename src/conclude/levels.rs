//! One model of a measurement, for every verdict between two versions (issue 22).
//!
//! The levels are session → process → iteration (sample). Samples of one process share its
//! state (layout, JIT, caches, frequency) and are not independent of each other (Kalibera &
//! Jones): the process is the unit of replication. So a comparison
//!
//! 1. groups the counted samples of each side by process ([`groups`]): a `tare run` run is a
//!    process; a `tare kernels` sample belongs to its invocation (none of a failed one); an
//!    imported sample to the process its harness records (`Run.extra["process"]`: hyperfine
//!    run, JMH fork, pyperf worker, go test binary run) or, where the format records none, to
//!    its file;
//! 2. takes each process's median, and compares the two sides' MEANS of those medians: a
//!    bootstrap CI over processes for the ratio new/old (percentile, expanded for few
//!    processes: [`stats::bootstrap_ratio_of_means`]), and a test (Mann–Whitney or Welch) on
//!    the per-process medians, Holm-adjusted across benchmarks;
//! 3. calls a difference significant only when the CI excludes 1, the Holm-adjusted p is below
//!    α and the change is at least the noise threshold — and says which of these failed
//!    otherwise; with fewer than two processes on a side there is no verdict:
//!    "inconclusive: one process per side" (iterations alone never make one).
//!
//! Pure: takes samples grouped by process (or benchmarks), returns records; never prints.

use super::analysis::Test;
use crate::results::kernels;
use crate::results::{
    Benchmark, MethodKind, ProcessLevel, Session, PROCESS_KEY, PROCESS_LEVEL_KEY,
};
use crate::stats;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a benchmark's samples come from, which decides what a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `tare run`: each run is a process.
    Run,
    /// `tare kernels`: samples belong to invocations.
    Kernels,
    /// Another harness's results (`tare import`): the recorded process, else the file.
    Imported,
}

impl Origin {
    pub fn of(s: &Session) -> Origin {
        if kernels::is_kernels(s) {
            Origin::Kernels
        } else if s.method.kind == MethodKind::Imported {
            Origin::Imported
        } else {
            Origin::Run
        }
    }
}

/// What one process is for a benchmark of this origin, in a few words ("run", "invocation",
/// "JMH fork", "file").
pub fn unit(b: &Benchmark, origin: Origin) -> String {
    match origin {
        Origin::Run => "run".into(),
        Origin::Kernels => "invocation".into(),
        Origin::Imported => b
            .extra
            .get(PROCESS_LEVEL_KEY)
            .and_then(|v| serde_json::from_value::<ProcessLevel>(v.clone()).ok())
            .map(|l| l.unit)
            .unwrap_or_else(|| "file".into()),
    }
}

/// What a comparison compares: the runs' wall times, one of their counters (`--counters`),
/// by event name, or their energy (`--energy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    WallTime,
    Counter(String),
    Energy(EnergyKind),
}

/// Which energy of a run (`Run.meters.energy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnergyKind {
    /// The CPU packages' (RAPL `package-N` domains, or `psys` without them), where the run
    /// could use every CPU of its packages (`attributed`).
    Package,
    /// Every NVIDIA GPU's (NVML), where the run was long enough for the counter's resolution
    /// (not `coarse`).
    Gpu,
}

impl Metric {
    /// `time` is the wall time; `energy`/`package_energy` and `gpu_energy` the runs' energy;
    /// any other name a counter's event.
    pub fn parse(name: &str) -> Metric {
        match name {
            "time" | "wall" | "wall-time" | "wall_time" => Metric::WallTime,
            "energy" | "package_energy" | "package-energy" => Metric::Energy(EnergyKind::Package),
            "gpu_energy" | "gpu-energy" => Metric::Energy(EnergyKind::Gpu),
            e => Metric::Counter(e.to_string()),
        }
    }

    /// The run's value of this metric; None for a run that has none (a counter not counted,
    /// energy not measured, not attributed or too coarse to judge).
    pub fn value(&self, r: &crate::results::Run) -> Option<f64> {
        match self {
            Metric::WallTime => Some(r.wall_time),
            Metric::Counter(event) => r
                .extra
                .get("counters")?
                .as_array()?
                .iter()
                .find(|c| c["event"] == event.as_str())?["value"]
                .as_f64(),
            Metric::Energy(EnergyKind::Package) => package_joules(r),
            Metric::Energy(EnergyKind::Gpu) => {
                let (j, coarse) = gpu_joules(r)?;
                (!coarse).then_some(j)
            }
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Metric::WallTime => "wall time",
            Metric::Counter(e) => e,
            Metric::Energy(EnergyKind::Package) => "package energy (J)",
            Metric::Energy(EnergyKind::Gpu) => "GPU energy (J)",
        }
    }
}

/// The run's package energy: the sum of its `package-N` domains (or `psys` when there is no
/// package domain), joules; `None` when not measured or not attributed to the run.
pub fn package_joules(r: &crate::results::Run) -> Option<f64> {
    let attributed = r.meters.energy.as_ref()?["attributed"] == true;
    attributed
        .then(|| crate::results::facts::recorded_package_joules(r))
        .flatten()
}

/// The run's GPU energy, summed over its GPUs (joules), and whether any GPU's reading was
/// coarse: the one reading of the record (`results::facts`), which exports and reports use too.
pub use crate::results::facts::gpu_joules;

/// Counted wall times of a benchmark keyed by (source, process): numbers sort as numbers.
fn keyed(b: &Benchmark, origin: Origin) -> BTreeMap<(u64, u64, String), Vec<f64>> {
    keyed_by(b, origin, &Metric::WallTime)
}

/// Counted values of `metric` keyed by (source, process); runs without a value are left out.
fn keyed_by(
    b: &Benchmark,
    origin: Origin,
    metric: &Metric,
) -> BTreeMap<(u64, u64, String), Vec<f64>> {
    let mut by: BTreeMap<(u64, u64, String), Vec<f64>> = BTreeMap::new();
    // A failed invocation's samples are no value of the kernel (its line and its stop rule
    // leave it out too).
    let failed = match origin {
        Origin::Kernels => kernels::failed_invocations(b),
        _ => Default::default(),
    };
    for r in b.runs.iter().filter(|r| r.counted) {
        let source = r.extra.get("source").and_then(|v| v.as_u64()).unwrap_or(0);
        let key = match origin {
            Origin::Run => (source, r.index as u64, String::new()),
            Origin::Kernels => match kernels::sample_of(r) {
                Some(s) if !failed.contains(&s.invocation) => {
                    (source, s.invocation as u64, String::new())
                }
                _ => continue,
            },
            Origin::Imported => match r.extra.get(PROCESS_KEY) {
                Some(v) => match v.as_u64() {
                    Some(n) => (source, n, String::new()),
                    None => (source, u64::MAX, v.to_string()),
                },
                None => (source, 0, String::new()),
            },
        };
        if let Some(v) = metric.value(r) {
            by.entry(key).or_default().push(v);
        }
    }
    by
}

/// Counted wall times of a benchmark grouped by process, in process order. An imported sample
/// with no process recorded belongs to the one process of its file (and of its source, in a
/// merged import).
pub fn groups(b: &Benchmark, origin: Origin) -> Groups {
    keyed(b, origin).into_values().collect()
}

/// Counted wall times of a benchmark of `tare kernels` keyed by the invocation's index (each
/// program once a round; `results::kernels::invocations` gives each index its round).
pub fn groups_by_invocation(b: &Benchmark) -> Vec<(usize, Vec<f64>)> {
    keyed(b, Origin::Kernels)
        .into_iter()
        .map(|((_, i, _), g)| (i as usize, g))
        .collect()
}

/// Counted wall times grouped by session, then process: a results file is one session, and
/// each source file of a merged import is one of its own (each was a separate harness run).
pub fn sessions(b: &Benchmark, origin: Origin) -> Sessions {
    sessions_of(b, origin, &Metric::WallTime)
}

/// [`sessions`] of any metric.
pub fn sessions_of(b: &Benchmark, origin: Origin, metric: &Metric) -> Sessions {
    let mut out: Vec<(u64, Groups)> = Vec::new();
    for ((source, _, _), g) in keyed_by(b, origin, metric) {
        match out.last_mut() {
            Some((s, gs)) if *s == source => gs.push(g),
            _ => out.push((source, vec![g])),
        }
    }
    out.into_iter().map(|(_, g)| g).collect()
}

/// The groups of one side made of several parts (the same benchmark in several files): each
/// file's processes are distinct processes.
pub fn side_groups(parts: &[(Origin, &Benchmark)]) -> Groups {
    parts.iter().flat_map(|(o, b)| groups(b, *o)).collect()
}

/// The sessions of one side made of several parts (one or more sessions per file).
pub fn side_sessions(parts: &[(Origin, &Benchmark)]) -> Sessions {
    side_sessions_of(parts, &Metric::WallTime)
}

/// [`side_sessions`] of any metric.
pub fn side_sessions_of(parts: &[(Origin, &Benchmark)], metric: &Metric) -> Sessions {
    parts
        .iter()
        .flat_map(|(o, b)| sessions_of(b, *o, metric))
        .collect()
}

/// Settings of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub test: Test,
    pub alpha: f64,
    /// Relative change below which a difference is not called one, and within which a whole
    /// CI is "equal within noise".
    pub noise: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
}

/// The outcome of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Faster,
    Slower,
    NoSignificantDifference,
    EqualWithinNoise,
    /// Too few processes on a side for any verdict.
    Inconclusive,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Faster => "faster",
            Outcome::Slower => "slower",
            Outcome::NoSignificantDifference => "no-significant-difference",
            Outcome::EqualWithinNoise => "equal-within-noise",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// One benchmark, old against new, at the process level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub old_processes: usize,
    pub new_processes: usize,
    pub old_samples: usize,
    pub new_samples: usize,
    /// Each side's value: the MEAN of its per-process medians (of its sessions' means where the
    /// session is the unit); NaN when a side has no sample. (Named for the medians it averages;
    /// the ratio is of these values, so what is printed beside it agrees with it.)
    pub old_median: f64,
    pub new_median: f64,
    /// new_median / old_median, a ratio of means: above 1 means the new version is slower.
    pub ratio: f64,
    /// Bootstrap CI of the ratio over processes; None with fewer than two processes a side.
    pub ci: Option<(f64, f64)>,
    pub confidence: f64,
    /// Test on the per-process medians, raw and Holm-adjusted over the benchmarks compared.
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub outcome: Outcome,
    /// Why a difference is not significant (each failed criterion), or why inconclusive.
    pub why: Vec<String>,
    /// The verdict in words.
    pub words: String,
    /// How the session level was handled (comparisons across results files only).
    pub session: Option<SessionLevel>,
    /// Over how many rounds the interval and test came from per-round ratios
    /// ([`compare_rounds`]; the ratio is then their geometric mean); `None` when unpaired.
    pub paired_rounds: Option<usize>,
}

/// The process-level statistic: the mean of the per-process values (NaN when there are none).
///
/// A mean, not a median (nor a trimmed mean), of per-process medians, measured on seeded
/// synthetic sides (`scripts/levels_simulation.py`, 200 trials a row, the table in
/// docs/statistics.md): where processes fall into two speed modes (half near 2.0, half near
/// 3.2, as a 15% slower Go build's 79 vs 79 processes did), a 15% change is found by the ratio
/// of medians in 11–14% of trials at 20–79 processes — its bootstrap jumps between modes — by
/// a 20%-trimmed mean in 23–66%, by the mean (expanded interval) in 45–94%; A/A with the same
/// modes gives false verdicts at or below α. A trimmed mean resists stray slow processes better
/// (10% of processes 1.5× slower: a 5% change at 79 processes found by the mean in 49% of
/// trials, by the 20%-trimmed mean in 96%), but such processes only widen the mean's interval,
/// they make no false verdicts; and the mean is the value each kernel's line prints
/// (`conclude::kernels::process_spread`) and the stop rule uses, so the printed ratio is the ratio of the
/// printed values.
fn mean(xs: &[f64]) -> f64 {
    let v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Each process's value: the mean of its samples (seconds per loop; a kernel's samples of one
/// process share one loop count, so this is its total time over its total loops).
///
/// A mean, as the harnesses tare is checked against report (`go test`'s ns/op over a second,
/// JMH's iteration score, Google Benchmark's repetition), not a median of samples: on a machine
/// whose speed moves in episodes, short samples of one process fall into a fast and a slow
/// state, and their median picks the state most of them were in. On cespare/xxhash the
/// per-invocation median put tare at 0.80–0.85× of `go test -count 5` (Sum64/4B, 100B, 4KB),
/// the mean at 0.89–0.94×; over 400 invocations of the C blur kernel the next session's value
/// fell inside the next-session interval more often with means (91–98%) than medians (82–96%).
pub fn process_values(groups: &[Vec<f64>]) -> Vec<f64> {
    groups
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| mean(g))
        .collect()
}

/// Samples grouped by process: one inner vector per process.
pub type Groups = Vec<Vec<f64>>;

/// Samples grouped by session, then by process.
pub type Sessions = Vec<Groups>;

/// Compares each `(old, new)` pair of sample groups (one group per process) of ONE session —
/// processes of both sides interleaved in time, as `tare kernels` runs them — under the model;
/// p-values are Holm-adjusted across the pairs that could be tested.
pub fn compare(pairs: &[(Groups, Groups)], s: &Settings) -> Vec<Comparison> {
    let raws: Vec<Raw> = pairs
        .iter()
        .map(|(old, new)| Raw::new(process_values(old), process_values(new), old, new, s, None))
        .collect();
    finish(raws, s)
}

/// Process values of one side keyed by the round they ran in (`tare kernels`: every program
/// once a round, in a counterbalanced order, `method::order`).
pub type ByRound = Vec<(usize, Vec<f64>)>;

/// Least rounds in which both sides have a value for the paired interval and test; with fewer,
/// [`compare_rounds`] falls back to [`compare`]'s unpaired ones.
pub const PAIRED_MIN_ROUNDS: usize = 3;

/// [`compare`] for sides whose processes ran in the same rounds: the interval and the test come
/// from the per-round ratios of the rounds both sides have a value in
/// (`stats::paired_ratio`), so what the machine did to a whole round cancels. Everything else
/// (the counts, each side's value) is as in [`compare`]. A pair with fewer than
/// [`PAIRED_MIN_ROUNDS`] common rounds is compared unpaired.
pub fn compare_rounds(pairs: &[(ByRound, ByRound)], s: &Settings) -> Vec<Comparison> {
    let raws: Vec<Raw> = pairs
        .iter()
        .map(|(old, new)| {
            let groups = |side: &ByRound| side.iter().map(|(_, g)| g.clone()).collect::<Groups>();
            let (og, ng) = (groups(old), groups(new));
            let mut raw = Raw::new(process_values(&og), process_values(&ng), &og, &ng, s, None);
            let value = |side: &ByRound| -> BTreeMap<usize, f64> {
                side.iter()
                    .filter(|(_, g)| !g.is_empty())
                    .map(|(r, g)| (*r, mean(g)))
                    .collect()
            };
            let (ov, nv) = (value(old), value(new));
            let (x, y): (Vec<f64>, Vec<f64>) = ov
                .iter()
                .filter_map(|(r, o)| nv.get(r).map(|n| (*o, *n)))
                .unzip();
            if x.len() >= PAIRED_MIN_ROUNDS {
                if let Some(r) = stats::paired_ratio::paired_ratio(&x, &y, s.confidence) {
                    raw.interval = Some(stats::Interval {
                        estimate: r.ratio,
                        low: r.low,
                        high: r.high,
                        confidence: s.confidence,
                    });
                    raw.p = Some(r.p_value);
                    raw.paired = Some((r.ratio, x.len()));
                }
            }
            raw
        })
        .collect();
    finish(raws, s)
}

/// Compares each `(old, new)` pair of sides measured in separate sessions (results files):
/// the session level is checked first ([`session_level`]), and the interval and test are
/// drawn over processes or, where sessions differ, over sessions; p-values are
/// Holm-adjusted across the pairs that could be tested.
pub fn compare_sessions(pairs: &[(Sessions, Sessions)], s: &Settings) -> Vec<Comparison> {
    let raws: Vec<Raw> = pairs
        .iter()
        .map(|(old, new)| {
            let (level, x, y) = session_level(old, new);
            let flat = |side: &Sessions| side.iter().flatten().cloned().collect::<Groups>();
            Raw::new(x, y, &flat(old), &flat(new), s, Some(level))
        })
        .collect();
    finish(raws, s)
}

/// Pooling of processes across sessions needs evidence that sessions do not differ: a
/// session effect is assumed unless the F test of the sessions of each side has p ≥ 0.25
/// (the "sometimes pool" rule of Bancroft (1964): a pretest at 0.25, not 0.05, so that a
/// session level too small to be detected at 0.05 does not leak into the verdict).
pub const POOL_P: f64 = 0.25;
/// Processes a single session needs for a verdict across two single sessions: three
/// consecutive thirds of at least two (`stats::session_ratio`).
pub const THIRDS_MIN_PROCESSES: usize = 6;

/// How the session level was handled for one comparison across results files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionLevel {
    pub old_sessions: usize,
    pub new_sessions: usize,
    /// The unit the interval and test are drawn over: "process" or "session".
    pub unit: &'static str,
    /// What was checked and found, in words.
    pub note: String,
    /// Why no verdict can be drawn across these sessions, if none can.
    pub blocker: Option<String>,
    /// One session a side: each session's mean is taken to be as uncertain as the mean of one
    /// of its thirds (`stats::session_ratio`), not as precise as its processes' standard error.
    pub thirds: bool,
}

/// F test (one-way ANOVA on log values, as `scipy.stats.f_oneway`) across groups; None when
/// it cannot be computed (fewer than two groups, no group with two values, all equal).
fn f_p(groups: &[Vec<f64>]) -> Option<f64> {
    let logs: Vec<Vec<f64>> = groups
        .iter()
        .map(|g| g.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect())
        .collect();
    let refs: Vec<&[f64]> = logs.iter().map(Vec::as_slice).collect();
    stats::variance::one_way_random_effects(&refs).map(|c| c.p_value)
}

/// The session level of a comparison across results files (sessions → processes →
/// samples), and the values the interval and test are drawn over:
///
/// - several sessions on both sides: the processes are pooled when neither side's sessions
///   differ (F test p ≥ [`POOL_P`]); otherwise each session's mean of process medians is
///   one value (the session the unit);
/// - one session on a side, several on the other: pooled when the other side shows no session
///   effect, else no verdict;
/// - one session a side: the processes of one session share the machine's state, which on a
///   VM moves in episodes of seconds, so they are not independent and their standard error
///   claims a precision the next session refutes. Each session's mean is taken to be as
///   uncertain as the mean of one of its thirds (in time order), and the test and interval
///   are `stats::session_ratio`'s; a session of fewer than [`THIRDS_MIN_PROCESSES`] processes
///   gives no verdict. A change of the machine between two sessions that each stayed in one
///   state is beyond any test on them: the note says the verdict assumes it did not happen.
pub fn session_level(old: &Sessions, new: &Sessions) -> (SessionLevel, Vec<f64>, Vec<f64>) {
    let per = |side: &Sessions| -> Vec<Vec<f64>> {
        side.iter()
            .map(|g| process_values(g))
            .filter(|m| !m.is_empty())
            .collect()
    };
    let (po, pn) = (per(old), per(new));
    let pooled = |p: &[Vec<f64>]| p.iter().flatten().copied().collect::<Vec<f64>>();
    let by_session = |p: &[Vec<f64>]| p.iter().map(|m| mean(m)).collect::<Vec<f64>>();
    let mut level = SessionLevel {
        old_sessions: po.len(),
        new_sessions: pn.len(),
        unit: "process",
        note: String::new(),
        blocker: None,
        thirds: false,
    };
    let p_fmt = |p: f64| crate::units::format_p(p);
    // Each session's F test (None: not testable, e.g. one process a session).
    let effect = |p: &[Vec<f64>]| if p.len() >= 2 { f_p(p) } else { None };
    match (po.len() >= 2, pn.len() >= 2) {
        (true, true) => {
            let ps: Vec<f64> = [effect(&po), effect(&pn)].into_iter().flatten().collect();
            let every_single = po.iter().chain(&pn).all(|m| m.len() == 1);
            if every_single {
                level.note = "each session one process".into();
            } else if ps.len() == 2 && ps.iter().all(|p| *p >= POOL_P) {
                level.note =
                    format!("sessions pooled: no session effect (F p ≥ {POOL_P} on each side)");
            } else {
                level.unit = "session";
                level.note = match ps.iter().copied().reduce(f64::min) {
                    Some(p) if p < POOL_P => format!(
                        "sessions differ (F p < {POOL_P} on a side): each session's mean is one value"
                    ),
                    _ => "session effect not testable: each session's mean is one value".into(),
                };
                return (level, by_session(&po), by_session(&pn));
            }
        }
        (false, false) => {
            let short = [("old", &po), ("new", &pn)]
                .into_iter()
                .map(|(side, p)| (side, p.first().map_or(0, Vec::len)))
                .find(|(_, n)| *n < THIRDS_MIN_PROCESSES);
            if po.iter().chain(&pn).all(|m| m.len() == 1) {
                // A session of one process: "one process per side" says it all.
            } else if let Some((side, n)) = short {
                // Too few processes to cut into thirds: nothing in the data says how far the
                // session's mean moves with the machine's state, so there is no verdict.
                level.blocker = Some(format!(
                    "one session per side, and the {side} session has {n} processes, too few to tell how far its mean moves with the machine's state ({THIRDS_MIN_PROCESSES} needed, in thirds)"
                ));
            } else {
                level.thirds = true;
                level.note = "one session per side: each session's mean is as uncertain as one of its thirds' (its processes share the machine's state and are not independent); the verdict assumes the machine did not change between the two sessions".into();
            }
        }
        (old_many, _) => {
            // One side has one session, the other several.
            let (many, many_name) = if old_many { (&po, "old") } else { (&pn, "new") };
            match effect(many) {
                Some(p) if p < POOL_P => {
                    level.blocker = Some(format!(
                        "the {many_name} side's sessions differ (F p = {} < {POOL_P}) and the other side has one session: its session cannot be placed among them",
                        p_fmt(p)
                    ));
                }
                Some(_) => {
                    level.note = format!(
                        "sessions pooled: the {many_name} side's sessions show no session effect (F p ≥ {POOL_P})"
                    );
                }
                None => {
                    level.note = format!(
                        "session effect not testable on the {many_name} side; processes pooled"
                    );
                }
            }
        }
    }
    (level, pooled(&po), pooled(&pn))
}

struct Raw {
    x: Vec<f64>,
    y: Vec<f64>,
    samples: (usize, usize),
    processes: (usize, usize),
    interval: Option<stats::Interval>,
    p: Option<f64>,
    level: Option<SessionLevel>,
    /// The paired ratio where the interval and test are paired ([`compare_rounds`]).
    /// With the rounds it rests on.
    paired: Option<(f64, usize)>,
}

impl Raw {
    fn new(
        x: Vec<f64>,
        y: Vec<f64>,
        old: &Groups,
        new: &Groups,
        s: &Settings,
        level: Option<SessionLevel>,
    ) -> Raw {
        let samples = (
            old.iter().map(Vec::len).sum(),
            new.iter().map(Vec::len).sum(),
        );
        let blocked = level.as_ref().is_some_and(|l| l.blocker.is_some());
        let thirds = level.as_ref().is_some_and(|l| l.thirds);
        let (interval, p) = if thirds && !blocked {
            match stats::session_ratio::thirds_ratio(&x, &y, s.confidence) {
                Some(r) => (
                    Some(stats::Interval {
                        estimate: r.ratio,
                        low: r.low,
                        high: r.high,
                        confidence: s.confidence,
                    }),
                    Some(r.p_value),
                ),
                None => (None, None),
            }
        } else if x.len() >= 2 && y.len() >= 2 && !blocked {
            // Expanded: with few processes a plain percentile interval of a mean covers ~88%
            // where it claims 95% (stats::mean_ratio).
            let iv =
                stats::bootstrap_ratio_of_means(&x, &y, s.confidence, s.resamples, s.seed, true);
            (iv, test_p(&x, &y, s.test))
        } else {
            (None, None)
        };
        let count = |g: &Groups| g.iter().filter(|p| !p.is_empty()).count();
        Raw {
            x,
            y,
            samples,
            processes: (count(old), count(new)),
            interval,
            p,
            level,
            paired: None,
        }
    }
}

fn test_p(x: &[f64], y: &[f64], test: Test) -> Option<f64> {
    let t = match test {
        Test::MannWhitney => stats::mann_whitney_u(x, y),
        Test::Welch => stats::welch_t_test(x, y),
    };
    t.map(|t| t.p_value).filter(|p| p.is_finite())
}

/// The smallest p-value Mann–Whitney can give with `n` vs `m` values (all of one side below
/// the other): with 3 vs 3 it is 0.1, so no verdict at α 0.05 is possible however large the
/// change.
pub fn smallest_p(n: usize, m: usize, test: Test) -> Option<f64> {
    if test != Test::MannWhitney || n == 0 || m == 0 {
        return None;
    }
    let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let y: Vec<f64> = (0..m).map(|i| (n + i) as f64).collect();
    test_p(&x, &y, test)
}

fn finish(raws: Vec<Raw>, s: &Settings) -> Vec<Comparison> {
    let tested: Vec<f64> = raws.iter().filter_map(|r| r.p).collect();
    let m = tested.len();
    let mut adjusted = stats::holm(&tested).into_iter();
    raws.into_iter()
        .map(|r| {
            let p_adj = r.p.and_then(|_| adjusted.next());
            classify(r, p_adj, m, s)
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:+.2}%", (x - 1.0) * 100.0)
}

fn classify(r: Raw, p_adj: Option<f64>, tested: usize, s: &Settings) -> Comparison {
    let Raw {
        x,
        y,
        samples,
        processes,
        interval,
        p,
        level,
        paired,
    } = r;
    let (om, nm) = (mean(&x), mean(&y));
    let ratio = paired.map_or(nm / om, |(r, _)| r);
    let unit = level.as_ref().map_or("process", |l| l.unit);
    let mut c = Comparison {
        old_processes: processes.0,
        new_processes: processes.1,
        old_samples: samples.0,
        new_samples: samples.1,
        old_median: om,
        new_median: nm,
        ratio,
        ci: interval.map(|iv| (iv.low, iv.high)),
        confidence: s.confidence,
        p_value: p,
        p_adjusted: p_adj,
        outcome: Outcome::Inconclusive,
        why: Vec::new(),
        words: String::new(),
        session: level.clone(),
        paired_rounds: paired.map(|(_, k)| k),
    };
    let units = if unit == "session" {
        "sessions"
    } else {
        "processes"
    };
    let counts = match paired {
        Some((_, k)) => format!("{} vs {} {units}, paired over {k} rounds", x.len(), y.len()),
        None => format!("{} vs {} {units}", x.len(), y.len()),
    };
    if let Some(blocker) = level.as_ref().and_then(|l| l.blocker.clone()) {
        c.why.push(blocker.clone());
        c.words = format!(
            "inconclusive: {blocker} ({counts}): give several sessions a side, measured alternately (old, new, old, new …; `tare compare old/ new/`), or measure both in one session (`tare run OLD NEW`)"
        );
        return c;
    }
    if x.len() < 2 || y.len() < 2 {
        let one = &units[..units.len() - if unit == "session" { 1 } else { 2 }];
        let which = match (x.len() < 2, y.len() < 2) {
            (true, true) => format!("one {one} per side"),
            (true, false) => format!("{} {one} in old", x.len()),
            _ => format!("{} {one} in new", y.len()),
        };
        c.why.push(which.clone());
        c.words = if unit == "session" {
            format!(
                "inconclusive: {which} ({counts}; sessions differ, so a session is the unit): give more sessions a side"
            )
        } else {
            format!(
                "inconclusive: {which} ({counts}, {} vs {} samples; samples of one process make no verdict): give more processes (files a side, forks, workers, runs)",
                samples.0, samples.1
            )
        };
        return c;
    }
    let (Some(iv), Some(p_adj)) = (interval, p_adj) else {
        c.why.push("no interval or test on these values".into());
        c.words = format!("inconclusive: no interval or test could be computed ({counts})");
        return c;
    };
    let conf = format!("{:.0}%", 100.0 * s.confidence);
    let d = if iv.high - iv.low < 0.002 { 4 } else { 3 };
    let ci_words = format!("{conf} CI {:.d$}–{:.d$}", iv.low, iv.high);
    if iv.low >= 1.0 - s.noise && iv.high <= 1.0 + s.noise {
        c.outcome = Outcome::EqualWithinNoise;
        c.words = format!(
            "equal within noise (new/old {ci_words}, within ±{:.1}%; {counts})",
            100.0 * s.noise
        );
        return c;
    }
    if iv.low <= 1.0 && 1.0 <= iv.high {
        c.why
            .push(format!("CI {:.d$}–{:.d$} includes 1", iv.low, iv.high));
    }
    if p_adj >= s.alpha {
        let mut w = format!("Holm p = {} ≥ α {}", crate::units::format_p(p_adj), s.alpha);
        // Say when no verdict was possible at all with this many units (not with one session
        // a side, whose test is not the one --test names).
        let thirds = level.as_ref().is_some_and(|l| l.thirds);
        if let Some(least) = smallest_p(x.len(), y.len(), s.test).filter(|_| !thirds) {
            let least_adj = (least * tested.max(1) as f64).min(1.0);
            if least_adj >= s.alpha {
                w.push_str(&format!(
                    " — with {counts} Mann–Whitney's smallest p is {}{}: give more {units}, or --test welch",
                    crate::units::format_p(least),
                    if tested > 1 {
                        format!(" (Holm over {tested}: {})", crate::units::format_p(least_adj))
                    } else {
                        String::new()
                    }
                ));
            }
        }
        c.why.push(w);
    }
    if (ratio - 1.0).abs() < s.noise {
        c.why.push(format!(
            "change {} below the ±{:.1}% noise threshold",
            pct(ratio),
            100.0 * s.noise
        ));
    }
    if !c.why.is_empty() {
        c.outcome = Outcome::NoSignificantDifference;
        c.words = format!("no significant difference ({}; {counts})", c.why.join("; "));
        return c;
    }
    if ratio < 1.0 {
        c.outcome = Outcome::Faster;
        c.words = format!(
            "new is {:.3}× faster ({conf} CI {:.3}–{:.3}, Holm p = {}; {counts})",
            1.0 / ratio,
            1.0 / iv.high,
            1.0 / iv.low,
            crate::units::format_p(p_adj)
        );
    } else {
        c.outcome = Outcome::Slower;
        c.words = format!(
            "new is {:.3}× slower ({ci_words}, Holm p = {}; {counts})",
            ratio,
            crate::units::format_p(p_adj)
        );
    }
    c
}

/// The one line stating the model of a comparison: the unit of replication and how many of
/// them each side has (a range when benchmarks differ).
pub fn model_line(units: &[String], comparisons: &[Comparison], test: Test) -> String {
    let range = |f: fn(&Comparison) -> usize| {
        let lo = comparisons.iter().map(f).min().unwrap_or(0);
        let hi = comparisons.iter().map(f).max().unwrap_or(0);
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    let mut u: Vec<&str> = units.iter().map(String::as_str).collect();
    u.sort();
    u.dedup();
    let sessions = comparisons.iter().any(|c| c.session.is_some());
    let by_session = comparisons
        .iter()
        .filter(|c| c.session.as_ref().is_some_and(|l| l.unit == "session"))
        .count();
    let session_count = |f: fn(&SessionLevel) -> usize| {
        let ns: Vec<usize> = comparisons
            .iter()
            .filter_map(|c| c.session.as_ref().map(f))
            .collect();
        let (lo, hi) = (ns.iter().min(), ns.iter().max());
        match (lo, hi) {
            (Some(lo), Some(hi)) if lo != hi => format!("{lo}–{hi}"),
            (Some(lo), _) => lo.to_string(),
            _ => "0".into(),
        }
    };
    let thirds = comparisons
        .iter()
        .filter(|c| c.session.as_ref().is_some_and(|l| l.thirds))
        .count();
    let test_name = match test {
        Test::MannWhitney => "Mann–Whitney",
        Test::Welch => "Welch's t",
    };
    let method = match thirds {
        0 => format!(
            "bootstrap CI over processes (expanded for few), {test_name} on per-process means"
        ),
        n if n == comparisons.len() => {
            "CI and t test (2 df) from each session's thirds (one session a side)".to_string()
        }
        n => format!(
            "bootstrap CI over processes (expanded for few), {test_name} on per-process means; for {n} with one session a side, CI and t test (2 df) from each session's thirds"
        ),
    };
    format!(
        "unit: process ({}){}; {} vs {} processes{} ({} vs {} samples); ratio of means of per-process means, {method}, Holm across {}",
        u.join(", "),
        match by_session {
            0 => String::new(),
            n if n == comparisons.len() => " — session, as sessions differ".into(),
            n => format!(" — session for {n} where sessions differ"),
        },
        range(|c| c.old_processes),
        range(|c| c.new_processes),
        if sessions {
            format!(
                " in {} vs {} sessions",
                session_count(|l| l.old_sessions),
                session_count(|l| l.new_sessions)
            )
        } else {
            String::new()
        },
        range(|c| c.old_samples),
        range(|c| c.new_samples),
        crate::units::plural(comparisons.len(), "benchmark")
    )
}

/// What the session level rested on, one line per distinct finding ("sessions: …"), with
/// how many benchmarks it holds for when not all.
pub fn session_lines(comparisons: &[Comparison]) -> Vec<String> {
    let mut notes: Vec<(String, usize)> = Vec::new();
    for l in comparisons.iter().filter_map(|c| c.session.as_ref()) {
        let n = if l.blocker.is_some() {
            continue;
        } else {
            l.note.clone()
        };
        if n.is_empty() {
            continue;
        }
        match notes.iter_mut().find(|(t, _)| *t == n) {
            Some((_, k)) => *k += 1,
            None => notes.push((n, 1)),
        }
    }
    notes
        .into_iter()
        .map(|(n, k)| {
            if k == comparisons.len() {
                n
            } else {
                format!("{n} ({})", crate::units::plural(k, "benchmark"))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const S: Settings = Settings {
        test: Test::MannWhitney,
        alpha: 0.05,
        noise: 0.01,
        confidence: 0.95,
        resamples: 2000,
        seed: 0,
    };

    /// `procs` processes of `n` samples: each process has its own offset (σ `between`), its
    /// samples 0.1% noise around it.
    fn side(rng: &mut impl Rng, procs: usize, n: usize, level: f64, between: f64) -> Groups {
        (0..procs)
            .map(|_| {
                let off = level * (1.0 + between * (rng.gen::<f64>() - 0.5) * 3.46);
                (0..n)
                    .map(|_| off * (1.0 + 0.001 * (rng.gen::<f64>() - 0.5)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn one_process_per_side_is_inconclusive_however_many_samples() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        // Two processes that differ by 5% (the process offset), 1000 samples each: pooled
        // samples would call it significant; the model does not.
        let old = side(&mut rng, 1, 1000, 1.0, 0.0);
        let new = side(&mut rng, 1, 1000, 1.05, 0.0);
        let c = &compare(&[(old, new)], &S)[0];
        assert_eq!(c.outcome, Outcome::Inconclusive);
        assert!(c.words.contains("one process per side"), "{}", c.words);
        assert_eq!((c.old_samples, c.new_samples), (1000, 1000));
        assert!(c.ci.is_none() && c.p_value.is_none());
    }

    #[test]
    fn a_aa_with_process_noise_gives_few_false_verdicts() {
        // 40 A/A pairs, 5 processes a side, 3% between-process σ, 200 samples each.
        let mut false_verdicts = 0;
        for seed in 0..40 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let old = side(&mut rng, 5, 200, 1.0, 0.03);
            let new = side(&mut rng, 5, 200, 1.0, 0.03);
            let c = &compare(&[(old, new)], &S)[0];
            if matches!(c.outcome, Outcome::Faster | Outcome::Slower) {
                false_verdicts += 1;
            }
        }
        assert!(false_verdicts <= 4, "{false_verdicts} of 40");
    }

    #[test]
    fn a_real_change_across_processes_is_found_and_reasons_are_given() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let old = side(&mut rng, 8, 50, 1.0, 0.01);
        let new = side(&mut rng, 8, 50, 1.10, 0.01);
        let same_old = side(&mut rng, 8, 50, 1.0, 0.01);
        let same_new = side(&mut rng, 8, 50, 1.0, 0.01);
        let tiny_old = side(&mut rng, 8, 50, 1.0, 0.0005);
        let tiny_new = side(&mut rng, 8, 50, 1.005, 0.0005);
        let cs = compare(
            &[(old, new), (same_old, same_new), (tiny_old, tiny_new)],
            &S,
        );
        assert_eq!(cs[0].outcome, Outcome::Slower, "{}", cs[0].words);
        assert!(cs[0].words.contains("8 vs 8 processes"), "{}", cs[0].words);
        assert_ne!(cs[1].outcome, Outcome::Slower);
        if cs[1].outcome == Outcome::NoSignificantDifference {
            assert!(
                cs[1]
                    .why
                    .iter()
                    .any(|w| w.contains("includes 1") || w.contains("Holm p")),
                "{:?}",
                cs[1].why
            );
        }
        // +0.5%: significant, but under the 1% threshold: the reason says so.
        assert_ne!(cs[2].outcome, Outcome::Slower, "{}", cs[2].words);
        assert!(
            cs[2].outcome == Outcome::EqualWithinNoise
                || cs[2].why.iter().any(|w| w.contains("noise threshold")),
            "{}",
            cs[2].words
        );
        // Holm over the three: adjusted ≥ raw.
        for c in &cs {
            assert!(c.p_adjusted.unwrap() >= c.p_value.unwrap());
        }
    }

    /// `k` sessions of `procs` processes: each session its own offset (σ `session`), each
    /// process its own around it (σ `between`).
    fn sessions_of(
        rng: &mut impl Rng,
        k: usize,
        procs: usize,
        level: f64,
        session: f64,
        between: f64,
    ) -> Sessions {
        (0..k)
            .map(|_| {
                let l = level * (1.0 + session * (rng.gen::<f64>() - 0.5) * 3.46);
                side(rng, procs, 20, l, between)
            })
            .collect()
    }

    fn verdict(c: &Comparison) -> bool {
        matches!(c.outcome, Outcome::Faster | Outcome::Slower)
    }

    #[test]
    fn sessions_that_differ_become_the_unit_and_a_aa_stays_at_alpha() {
        // 5 sessions of 4 processes a side; sessions differ by 5% (σ), processes by 1%.
        // Pooling the 20 processes a side (the process-level model alone) calls most of these
        // A/A pairs different; with the session level, at most α of them.
        let (mut pooled_false, mut false_verdicts, mut by_session) = (0, 0, 0);
        for seed in 0..40 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let old = sessions_of(&mut rng, 5, 4, 1.0, 0.05, 0.01);
            let new = sessions_of(&mut rng, 5, 4, 1.0, 0.05, 0.01);
            let flat = |x: &Sessions| x.iter().flatten().cloned().collect::<Groups>();
            if verdict(&compare(&[(flat(&old), flat(&new))], &S)[0]) {
                pooled_false += 1;
            }
            let c = &compare_sessions(&[(old, new)], &S)[0];
            let l = c.session.as_ref().unwrap();
            assert_eq!((l.old_sessions, l.new_sessions), (5, 5));
            assert_eq!((c.old_processes, c.new_processes), (20, 20));
            if l.unit == "session" {
                by_session += 1;
                assert!(c.words.contains("5 vs 5 sessions"), "{}", c.words);
            }
            if verdict(c) {
                false_verdicts += 1;
            }
        }
        assert!(pooled_false >= 10, "pooled: {pooled_false} of 40");
        assert!(false_verdicts <= 4, "{false_verdicts} of 40");
        assert!(by_session >= 30, "session the unit in {by_session} of 40");
    }

    #[test]
    fn sessions_alike_are_pooled_and_a_real_change_is_found() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let old = sessions_of(&mut rng, 3, 5, 1.0, 0.0, 0.01);
        let new = sessions_of(&mut rng, 3, 5, 1.10, 0.0, 0.01);
        let c = &compare_sessions(&[(old, new)], &S)[0];
        let l = c.session.as_ref().unwrap();
        assert_eq!(l.unit, "process", "{}", l.note);
        assert!(l.note.contains("pooled"), "{}", l.note);
        assert_eq!(c.outcome, Outcome::Slower, "{}", c.words);
        assert!(c.words.contains("15 vs 15 processes"), "{}", c.words);
    }

    #[test]
    fn one_session_a_side_is_as_uncertain_as_its_thirds() {
        // Two single sessions of 12 processes. The old one ran its first third in the
        // machine's slow state (1.6×), as this VM does in episodes of seconds: its processes'
        // standard error calls a 20% change significant, the session's thirds do not. A steady
        // session against a build 2.4× slower throughout is a verdict.
        let session = |levels: &dyn Fn(usize) -> f64| -> Sessions {
            vec![(0..12)
                .map(|i| {
                    let l = levels(i);
                    (0..20)
                        .map(|j| l * (1.0 + 0.002 * ((i * 7 + j) % 5) as f64))
                        .collect()
                })
                .collect()]
        };
        let old = session(&|i| if i < 4 { 1.6 } else { 1.0 });
        let same = session(&|_| 1.0);
        let far = session(&|_| 2.4);
        let flat = |x: &Sessions| x.iter().flatten().cloned().collect::<Groups>();
        // Processes taken as independent: a verdict.
        assert!(verdict(&compare(&[(flat(&old), flat(&same))], &S)[0]));
        let cs = compare_sessions(&[(old, same.clone()), (same, far)], &S);
        let l = cs[0].session.as_ref().unwrap();
        assert!(l.thirds, "{l:?}");
        assert!(!verdict(&cs[0]), "{}", cs[0].words);
        assert!(cs[0].words.contains("includes 1"), "{}", cs[0].words);
        assert_eq!(cs[1].outcome, Outcome::Slower, "{}", cs[1].words);
    }

    #[test]
    fn one_session_a_side_says_what_the_verdict_assumes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let old = sessions_of(&mut rng, 1, 8, 1.0, 0.0, 0.01);
        let new = sessions_of(&mut rng, 1, 8, 1.2, 0.0, 0.01);
        let c = &compare_sessions(&[(old, new)], &S)[0];
        assert_eq!(c.outcome, Outcome::Slower, "{}", c.words);
        let lines = session_lines(std::slice::from_ref(c));
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains("assumes the machine did not change between the two sessions"),
            "{lines:?}"
        );
    }

    #[test]
    fn one_session_a_side_too_short_to_cut_into_thirds_is_inconclusive() {
        // JMH's default of 5 forks a file: a 20% change, but nothing shows whether the machine
        // stayed the same between the two sessions.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let old = sessions_of(&mut rng, 1, 5, 1.0, 0.0, 0.01);
        let new = sessions_of(&mut rng, 1, 8, 1.2, 0.0, 0.01);
        let c = &compare_sessions(&[(old, new)], &S)[0];
        assert_eq!(c.outcome, Outcome::Inconclusive, "{}", c.words);
        assert!(
            c.words.contains(
                "the old session has 5 processes, too few to tell how far its mean moves"
            ),
            "{}",
            c.words
        );
    }

    #[test]
    fn one_session_against_sessions_that_differ_is_inconclusive() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let old = sessions_of(&mut rng, 1, 6, 1.0, 0.0, 0.01);
        // Four sessions at 1.0, 1.1, 1.2, 1.3: they clearly differ.
        let new: Sessions = (0..4)
            .map(|i| side(&mut rng, 4, 20, 1.0 + 0.1 * i as f64, 0.005))
            .collect();
        let c = &compare_sessions(&[(old, new)], &S)[0];
        assert_eq!(c.outcome, Outcome::Inconclusive, "{}", c.words);
        assert!(
            c.words.contains("new side's sessions differ"),
            "{}",
            c.words
        );
        assert!(c.ci.is_none() && c.p_value.is_none());
    }

    #[test]
    fn too_few_units_for_mann_whitney_are_named() {
        // scipy.stats.mannwhitneyu([0,1,2],[3,4,5]).pvalue == 0.1; ([0,1],[2,3]) == 1/3.
        assert!((smallest_p(3, 3, Test::MannWhitney).unwrap() - 0.1).abs() < 1e-12);
        assert!((smallest_p(2, 2, Test::MannWhitney).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(smallest_p(3, 3, Test::Welch), None);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let old = side(&mut rng, 3, 20, 1.0, 0.001);
        let new = side(&mut rng, 3, 20, 1.5, 0.001);
        let c = &compare(&[(old, new)], &S)[0];
        assert_eq!(c.outcome, Outcome::NoSignificantDifference);
        assert!(
            c.words.contains("Mann–Whitney's smallest p is 0.1"),
            "{}",
            c.words
        );
    }

    /// `procs` processes of 5 samples each, each process in a fast (2.0 µs) or a slow (3.2 µs)
    /// speed mode with probability ½, 2% between processes within a mode: the per-process
    /// medians of the 15% slower Go build that the ratio of medians missed (issue 34).
    fn bimodal(rng: &mut impl Rng, procs: usize, level: f64) -> Groups {
        (0..procs)
            .map(|_| {
                let mode = if rng.gen::<f64>() < 0.5 {
                    2.0e-6
                } else {
                    3.2e-6
                };
                let off = level * mode * (1.0 + 0.02 * (rng.gen::<f64>() - 0.5) * 3.46);
                (0..5)
                    .map(|_| off * (1.0 + 0.001 * (rng.gen::<f64>() - 0.5)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_change_among_speed_modes_is_found_and_a_aa_among_them_stays_at_alpha() {
        // 40 seeded trials of 79 vs 79 bimodal processes: a 15% slower side is found in most
        // (the mean of the per-process medians moves smoothly with how many processes fall in
        // each mode); a bootstrap of the ratio of their medians, the statistic before, jumps
        // between modes and excludes 1 in few. (300 trials: 289 found, the medians' interval
        // 37; A/A 14 of 300 — measured with the expansion still linear, which at 79 processes,
        // c = 1.006, moves the bounds by well under 0.1%.)
        let s = Settings {
            test: Test::Welch,
            resamples: 1000,
            ..S
        };
        let (mut found, mut medians_found) = (0, 0);
        for seed in 0..40 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1000 + seed);
            let old = bimodal(&mut rng, 79, 1.0);
            let new = bimodal(&mut rng, 79, 1.15);
            let c = &compare(&[(old.clone(), new.clone())], &s)[0];
            found += usize::from(c.outcome == Outcome::Slower);
            // The printed ratio is the ratio of the sides' values, and inside its interval.
            assert!((c.ratio - c.new_median / c.old_median).abs() < 1e-12);
            let (lo, hi) = c.ci.unwrap();
            assert!(lo <= c.ratio && c.ratio <= hi, "{}", c.words);
            let iv = stats::bootstrap_ratio_of_medians(
                &process_values(&old),
                &process_values(&new),
                false,
                0.95,
                1000,
                seed,
            )
            .unwrap();
            medians_found += usize::from(iv.low > 1.0);
        }
        assert!(found >= 32, "15% found in {found} of 40");
        assert!(
            medians_found <= 20,
            "ratio of medians: {medians_found} of 40"
        );
        // The same modes and no change, 100 trials: false verdicts at most at α — the
        // one-sided 95% lower bound of their rate (Clopper–Pearson) not above 0.05.
        let mut false_verdicts = 0;
        for seed in 0..100 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2000 + seed);
            let old = bimodal(&mut rng, 79, 1.0);
            let new = bimodal(&mut rng, 79, 1.0);
            false_verdicts += u64::from(verdict(&compare(&[(old, new)], &s)[0]));
        }
        let (low, _) = stats::binomial::clopper_pearson(false_verdicts, 100, 0.90).unwrap();
        assert!(low <= s.alpha, "A/A: {false_verdicts} of 100");
    }

    #[test]
    fn few_processes_get_an_interval_as_wide_as_welchs() {
        // 5 vs 5 processes, 5% between them: the plain percentile interval of a mean is too
        // narrow with so few (it claims 95% and covers ~88%); the expanded one is about as wide
        // as Welch's t-interval, so interval and test agree.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let old = side(&mut rng, 5, 20, 1.0, 0.05);
        let new = side(&mut rng, 5, 20, 1.0, 0.05);
        let c = &compare(&[(old.clone(), new.clone())], &S)[0];
        let (lo, hi) = c.ci.unwrap();
        let (x, y) = (process_values(&old), process_values(&new));
        let plain = stats::bootstrap_ratio_of_means(&x, &y, 0.95, 2000, 0, false).unwrap();
        assert!(
            hi - lo > 1.3 * (plain.high - plain.low),
            "{lo}–{hi} against {}–{}",
            plain.low,
            plain.high
        );
    }

    #[test]
    fn a_failed_invocation_is_no_process_of_a_kernel() {
        // Three invocations of a kernel, 2 samples each; the second failed: its samples are
        // left out, as the kernel's line and stop rule leave it out.
        let run = |i: usize, inv: usize, t: f64| {
            serde_json::json!({"index": i, "warmup": false, "start_offset": 0.0, "wall_time": t,
                "user_time": 0.0, "system_time": 0.0, "cpu_time": 0.0, "peak_memory": null,
                "exit_code": null, "signal": null, "termination": "exit", "counted": true,
                "extra": {"sample": {"invocation": inv, "position": i % 2, "loops": 1, "ns": 1}}})
        };
        let inv = |i: usize, error: Option<&str>| {
            serde_json::json!({"index": i, "round": i, "wall_time": 1.0, "cpu_time": 1.0,
                "samples": 2, "counted": 2, "median": 1.0, "error": error})
        };
        let b: Benchmark = serde_json::from_value(serde_json::json!({
            "name": "k", "command": "", "argv": [], "summary": {}, "stop_reason": "",
            "runs": [run(0, 0, 1.0), run(1, 0, 1.0), run(2, 1, 9.0), run(3, 1, 9.0),
                     run(4, 2, 2.0), run(5, 2, 2.0)],
            "extra": {"kernel": {}, "invocations": [inv(0, None), inv(1, Some("died")), inv(2, None)]}
        }))
        .unwrap();
        assert_eq!(
            groups(&b, Origin::Kernels),
            vec![vec![1.0, 1.0], vec![2.0, 2.0]]
        );
        // Not a kernel benchmark: a run is a process, whatever it holds.
        assert_eq!(groups(&b, Origin::Run).len(), 6);
    }

    #[test]
    fn process_values_are_the_mean_of_each_group() {
        let g = vec![vec![3.0, 1.0, 8.0], vec![], vec![10.0, 20.0]];
        assert_eq!(process_values(&g), vec![4.0, 15.0]);
    }
}
