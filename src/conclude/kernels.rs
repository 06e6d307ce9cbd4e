//! Conclusions for kernel results (`tare kernels`, schema 2): the same summaries, comparisons
//! and diagnostics as for `tare run`, on seconds per loop, plus what only kernels have —
//! loop linearity, samples the clock cannot resolve, a JIT's warm-up, the invocation level
//! (between- and within-process variance; the ratio CI by a bootstrap over invocations, then
//! samples) and user metrics that must agree across implementations (`m.checksum`).
//!
//! Reads results and calls `stats`; never measures, never prints.

use super::analysis::{self, Advice, CompareSettings};
use super::summary;
use crate::results::KernelRecord;
use crate::results::{Benchmark, ComparisonRecord, Diagnostic, SampleRecord, Session};
// The readers of kernel records live in `results::kernels` (levels reads them too); here for
// the callers that reach them through the kernel conclusions.
pub use crate::results::kernels::{invocations, is_kernels, kernel_record, pairs, sample_of};
use crate::stats;
use serde_json::json;

/// A ratio time(2N)/time(N) below this flags the kernel (ideal: 2).
pub const LINEARITY_MIN: f64 = 1.6;
/// Above this, time grows faster than the loops (caches overflowing, a leak): also flagged.
pub const LINEARITY_MAX: f64 = 3.0;
/// Fewest processes a side for a verdict: with fewer, their spread cannot be estimated (JMH
/// runs 5 forks, pyperf 20 processes).
pub const MIN_INVOCATIONS: usize = 5;
/// What a withheld verdict's words say after the comparison's own words.
pub const WITHHELD: &str = " — withheld: ";

/// The invocation level of one benchmark: the processes' medians (s/loop) as replicates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessSpread {
    pub n: usize,
    pub mean: f64,
    /// σ of the processes' medians over their mean: how much processes differ.
    pub cv: f64,
    /// Half-width of the 95% t-interval of the mean over the processes, relative to the mean.
    pub half: f64,
}

/// The process-level interval of per-invocation medians; `None` with fewer than 2 or a mean
/// that is not positive.
pub fn process_spread(medians: &[f64]) -> Option<ProcessSpread> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = medians.len();
    if n < 2 {
        return None;
    }
    let mean = medians.iter().sum::<f64>() / n as f64;
    if mean.is_nan() || mean <= 0.0 {
        return None;
    }
    let var = medians.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.975);
    let sd = var.sqrt();
    Some(ProcessSpread {
        n,
        mean,
        cv: sd / mean,
        half: t * sd / (n as f64).sqrt() / mean,
    })
}

/// Where the next session's value is expected: the value a session prints is the mean of its
/// processes' medians, and a 95% interval of that mean covers the next session's (another draw
/// with its own error) only about 83% of the time. This is the 95% prediction interval of the
/// mean of as many new processes, `t(n−1) · s · √(1/n + 1/n)` (√2 wider than the interval of the
/// mean), widened where the processes' values fall into several modes (a machine with speed
/// modes: a next session whose processes land in one mode gets that mode's value) to reach every
/// mode, not to pick one; and, with 6 processes or more, widened to where `tare compare` of this
/// session against a next one alike would turn significant (`stats::session_ratio`: each
/// session's mean as uncertain as one of its thirds'), so that the line and `compare` agree.
///
/// Measured over 400 invocations of the C blur kernel on this VM (values in two speed modes,
/// 12.4–13.7 and 20.9–22.6 µs/loop, in episodes longer than an invocation), back-to-back
/// windows of 10–86 invocations: the prediction interval held the next window's mean in
/// 27–84%, widened to the modes in 64–86%, with the thirds in 91–98% (at ±36–61%: that is how
/// far this machine moves between sessions). On independent values the thirds make it wider
/// than needed (about 3× the prediction interval at 8 processes).
#[derive(Debug, Clone, PartialEq)]
pub struct NextSession {
    /// Half-width relative to the mean.
    pub half: f64,
    /// The half-width before widening for modes and thirds.
    pub predicted: f64,
    /// Where `tare compare` of one session a side would turn significant (0 with fewer than 6
    /// processes).
    pub thirds: f64,
    /// Modes of the processes' medians (s/loop) where there are several; empty otherwise.
    pub modes: Vec<f64>,
}

/// Fewest processes whose medians are looked at for modes (a density of fewer says nothing).
pub const MODES_MIN_PROCESSES: usize = 5;

/// The next-session interval of per-invocation medians ([`NextSession`]); `None` where
/// [`process_spread`] is.
pub fn next_session(medians: &[f64]) -> Option<NextSession> {
    let p = process_spread(medians)?;
    let predicted = p.half * std::f64::consts::SQRT_2;
    let modes = if p.n >= MODES_MIN_PROCESSES {
        stats::modes(medians)
            .filter(|m| m.multimodal)
            .map(|m| m.modes)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let reach = modes
        .iter()
        .map(|m| (m - p.mean).abs() / p.mean)
        .fold(0.0, f64::max);
    let thirds = if p.n >= super::levels::THIRDS_MIN_PROCESSES {
        stats::session_ratio::next_session_half(medians, 0.95).unwrap_or(0.0)
    } else {
        0.0
    };
    Some(NextSession {
        half: predicted.max(reach).max(thirds),
        predicted,
        thirds,
        modes,
    })
}

/// About how many more processes bring the interval's half-width to `precision` (the width
/// shrinks as 1/√n; at least 1 when it is wider).
pub fn more_invocations(s: &ProcessSpread, precision: f64) -> usize {
    if s.half <= precision || precision <= 0.0 {
        return 0;
    }
    let need = (s.n as f64 * (s.half / precision).powi(2)).ceil() as usize;
    need.saturating_sub(s.n).max(1)
}

/// Why an adaptive session stopped without the precision asked: `why` is the bound reached.
pub fn inconclusive(s: &ProcessSpread, precision: f64, why: &str) -> String {
    format!(
        "inconclusive: processes differ by {:.1}% (σ of their values; ±{:.1}% over {} processes); about {} more invocations would settle it to ±{:.1}% ({why})",
        100.0 * s.cv,
        100.0 * s.half,
        s.n,
        more_invocations(s, precision),
        100.0 * precision
    )
}

/// The test's name where a comparison is paired by round.
pub const PAIRED_TEST: &str = "paired t on log per-round ratios";

/// Relative tolerance of user metrics that must agree across implementations.
pub const METRIC_TOLERANCE: f64 = 1e-9;

/// Invocations that gave counted samples.
pub fn invocations_counted(b: &Benchmark) -> usize {
    by_invocation(b).len()
}

/// Why a comparison's verdict was withheld, if it was.
pub fn withheld(c: &ComparisonRecord) -> Option<&str> {
    c.words.split_once(WITHHELD).map(|(_, why)| why)
}

/// What follows "no significant difference" in the words of a verdict drawn ("~": a test whose
/// interval includes 1, or a change under the noise threshold), before its reason.
pub const NOT_SIGNIFICANT: &str = ": ";

/// The reason of a drawn "no significant difference" ("CI 0.773–1.349 includes 1 at 99%, …"
/// and the processes), `None` for any other verdict or a withheld one.
pub fn not_significant(c: &ComparisonRecord) -> Option<&str> {
    if c.verdict != "no-significant-difference" || withheld(c).is_some() {
        return None;
    }
    c.words
        .split_once(&format!("no significant difference{NOT_SIGNIFICANT}"))
        .map(|(_, why)| why)
}

/// Counted seconds per loop grouped by invocation, in order (the process level of
/// [`levels`](super::levels)).
pub fn by_invocation(b: &Benchmark) -> Vec<Vec<f64>> {
    super::levels::groups(b, super::levels::Origin::Kernels)
}

/// Counted seconds per loop grouped by invocation, each with the round it ran in.
pub fn by_round(b: &Benchmark) -> super::levels::ByRound {
    let rounds: std::collections::BTreeMap<usize, usize> = crate::results::kernels::invocations(b)
        .iter()
        .map(|r| (r.index, r.round))
        .collect();
    super::levels::groups_by_invocation(b)
        .into_iter()
        .map(|(i, g)| (rounds.get(&i).copied().unwrap_or(i), g))
        .collect()
}

/// Outliers, summaries, comparisons (kernel by kernel, each implementation against the
/// first), the hierarchical ratio over invocations, and diagnostics.
pub fn conclude(session: &mut Session, s: &CompareSettings) {
    for b in &mut session.benchmarks {
        analysis::mark_outliers(b, false);
        b.summary = summary::summarize(b);
        if let Some(c) = super::counts::summary(b) {
            b.extra.insert(super::counts::SUMMARY_KEY.into(), c);
        }
        let has_cpu = b
            .runs
            .iter()
            .filter_map(sample_of)
            .any(|s| s.cpu_ns.is_some());
        if !has_cpu {
            b.summary.cpu_time = None;
            b.summary.user_time = None;
            b.summary.system_time = None;
        }
        b.summary.system_time = None;
    }
    let pairs = pairs(&session.benchmarks);
    let settings = CompareSettings {
        paired: false,
        ..*s
    };
    session.comparisons =
        analysis::compare_pairs(&session.benchmarks, &session.benchmarks, &pairs, &settings);
    let mut h = Vec::new();
    for &(r, c) in &pairs {
        let x = by_invocation(&session.benchmarks[r]);
        let y = by_invocation(&session.benchmarks[c]);
        if x.len() >= 2 && y.len() >= 2 {
            if let Some(iv) =
                stats::hierarchical_bootstrap_ratio(&x, &y, false, 0.95, s.resamples / 5, s.seed)
            {
                h.push(
                    json!({"reference": r, "candidate": c, "invocations": [x.len(), y.len()],
                    "statistic": "ratio of means", "ratio": iv.estimate,
                    "ci_low": iv.low, "ci_high": iv.high, "confidence": iv.confidence}),
                );
            }
        }
    }
    // Samples of one process are not independent of each other (Kalibera & Jones): the
    // verdict, its interval and its test come from the one process-level model, so the printed
    // interval is the one the verdict used. Each program runs once a round (in a counterbalanced
    // order), so a kernel's processes in two programs pair by round: where both sides have
    // values in 3 or more common rounds, the interval and the t test are of the per-round
    // ratios of per-invocation means and the ratio is their geometric mean
    // (`levels::compare_rounds`, `stats::paired_ratio`: what the machine did to a whole round
    // cancels); otherwise the expanded bootstrap interval of the ratio of the means each
    // kernel's line prints and Welch's t on the per-invocation means (scripts/levels_simulation.py).
    // Either way at 1 − α/m for the m kernels compared, the verdict that interval's (issue 43;
    // too few processes for the rank test: Welch's t on logs). Where a side has fewer than two processes the
    // sample-level numbers stay, and the words say why there is no verdict.
    let sides: Vec<(super::levels::ByRound, super::levels::ByRound)> = session
        .comparisons
        .iter()
        .map(|c| {
            (
                by_round(&session.benchmarks[c.reference]),
                by_round(&session.benchmarks[c.candidate]),
            )
        })
        .collect();
    let process_test = super::analysis::Test::Welch;
    let model = super::levels::compare_rounds(
        &sides,
        &super::levels::Settings {
            test: process_test,
            alpha: s.alpha,
            noise: s.noise,
            confidence: 0.95,
            resamples: s.resamples,
            seed: s.seed,
        },
    );
    for (c, m) in session.comparisons.iter_mut().zip(model) {
        apply_process_level(c, &m, process_test);
    }
    // Where both kernels were counted (`--counters`) and their counts repeat, the verdict is
    // on the work, not on the time (whose processes were under Valgrind, or noisy): a change
    // of 0.1% or more in the counts per loop is a change in work, no interval or test needed.
    let mut on_counts = vec![false; session.comparisons.len()];
    for (c, done) in session.comparisons.iter_mut().zip(&mut on_counts) {
        if let Some(m) = count_verdict(
            &session.benchmarks[c.reference],
            &session.benchmarks[c.candidate],
        ) {
            let (event, m) = m;
            c.metric = event.clone();
            c.ratio = m.ratio;
            if let Some((lo, hi)) = m.ci {
                c.ratio_ci_low = lo;
                c.ratio_ci_high = hi;
            }
            c.confidence = m.confidence;
            c.test = "none (deterministic counts)".into();
            c.p_value = 0.0;
            c.p_adjusted = 0.0;
            c.verdict = m.outcome.as_str().to_string();
            c.words = format!(
                "{} vs {}: {} per loop: {} (the verdict is on the counts, not on time)",
                c.candidate_name, c.reference_name, event, m.words
            );
            *done = true;
        }
    }
    // Too few processes to know their spread: no verdict whatever the samples say.
    for (c, _) in session
        .comparisons
        .iter_mut()
        .zip(&on_counts)
        .filter(|(_, d)| !**d)
    {
        let n = invocations_counted(&session.benchmarks[c.reference])
            .min(invocations_counted(&session.benchmarks[c.candidate]));
        if n < MIN_INVOCATIONS {
            // First on the line: the reason that stands whatever the rest says.
            let few = format!(
                "inconclusive: {n} invocations (a verdict needs at least {MIN_INVOCATIONS} processes a side; -i {MIN_INVOCATIONS} or more)"
            );
            let drawn = format!("no significant difference{NOT_SIGNIFICANT}");
            c.words = match (c.words.split_once(WITHHELD), c.words.split_once(&drawn)) {
                (Some((head, why)), _) => format!("{head}{WITHHELD}{few}; {why}"),
                (None, Some((head, why))) => {
                    format!("{head}no significant difference{WITHHELD}{few}; {why}")
                }
                (None, None) => format!("{}{WITHHELD}{few}", c.words),
            };
            c.verdict = "no-significant-difference".into();
        }
    }
    session.extra.insert(
        "comparison_unit".into(),
        json!("invocation, paired by round where both sides have 3 or more rounds (geometric mean of per-round ratios of per-invocation means); otherwise unpaired (ratio of means of per-invocation means)"),
    );
    session.extra.insert("hierarchical_ratio".into(), json!(h));
    let advice = Advice {
        comparing: !pairs.is_empty(),
        alpha: s.alpha,
        sequential_several: false,
    };
    let checks = metric_agreement(&session.benchmarks, &pairs);
    for (i, b) in session.benchmarks.iter_mut().enumerate() {
        let mut d = analysis::diagnose(b, &advice);
        // The run-level warm-up check looks at samples across invocations; the kernel
        // checks below look per invocation, where a JIT's warm-up is.
        d.retain(|x| x.kind != "warmup");
        d.extend(kernel_diagnostics(b));
        d.extend(
            checks
                .iter()
                .filter(|(j, _)| *j == i)
                .map(|(_, d)| d.clone()),
        );
        b.diagnostics = d;
    }
}

/// The comparison of two kernels on their counts per loop (`--counters`): the event both
/// have (`instructions` first), where each side's counts repeat (`counts::compare`); None
/// where a side has no counts or they vary (the time decides then).
pub fn count_verdict(
    reference: &Benchmark,
    candidate: &Benchmark,
) -> Option<(String, super::levels::Comparison)> {
    use super::levels::{sessions_of, Metric, Origin};
    let events = |b: &Benchmark| -> Vec<String> {
        b.extra
            .get(super::counts::SUMMARY_KEY)
            .and_then(|c| c["events"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|e| e["event"].as_str().map(String::from))
            .collect()
    };
    let (a, b) = (events(reference), events(candidate));
    let mut shared: Vec<&String> = a.iter().filter(|e| b.contains(e)).collect();
    shared.sort_by_key(|e| e.as_str() != "instructions");
    let event = shared.first()?;
    let metric = Metric::Counter(event.to_string());
    let old = sessions_of(reference, Origin::Kernels, &metric);
    let new = sessions_of(candidate, Origin::Kernels, &metric);
    super::counts::compare(&old, &new, event).map(|m| (event.to_string(), m))
}

/// Puts the process-level comparison `m` into the record `c`: ratio, interval, p-values,
/// verdict and words. Without an interval (a side with one process) the ratio and interval stay
/// the samples' and the verdict is none.
fn apply_process_level(
    c: &mut ComparisonRecord,
    m: &super::levels::Comparison,
    test: super::analysis::Test,
) {
    use super::levels::Outcome;
    if let Some((low, high)) = m.ci {
        c.ratio = m.ratio;
        c.ratio_ci_low = low;
        c.ratio_ci_high = high;
        c.confidence = m.confidence;
    }
    c.paired = m.paired_rounds.is_some();
    if let (Some(p), Some(q)) = (m.p_value, m.p_adjusted) {
        c.p_value = p;
        c.p_adjusted = q;
        c.test = if m.paired_rounds.is_some() {
            PAIRED_TEST.to_string()
        } else if m.procedure == Some(super::levels::Procedure::WelchLogs) {
            "welch (logs)".to_string()
        } else {
            test.name().to_string()
        };
    }
    let names = format!("{} vs {}", c.candidate_name, c.reference_name);
    (c.verdict, c.words) = match m.outcome {
        Outcome::Faster | Outcome::Slower | Outcome::EqualWithinNoise => (
            m.outcome.as_str().to_string(),
            format!("{names}: {}", m.words),
        ),
        // A test drawn whose interval includes 1 is a verdict ("~"), its reason in its words;
        // only a comparison no verdict could be drawn for is withheld ("?" and the reason).
        Outcome::NoSignificantDifference | Outcome::Inconclusive => (
            "no-significant-difference".to_string(),
            format!(
                "{names}: no significant difference{}{} ({} vs {} processes{})",
                if m.outcome == Outcome::Inconclusive {
                    WITHHELD
                } else {
                    NOT_SIGNIFICANT
                },
                m.why.join("; "),
                m.old_processes,
                m.new_processes,
                m.paired_rounds
                    .map(|k| format!(", paired over {k} rounds"))
                    .unwrap_or_default()
            ),
        ),
    };
}

/// Linearity, unresolved samples, steady state, invocation variance.
/// A native harness (`tare native-worker`): its client in the hello is `tare-native-NAME`,
/// recorded with the version after a space.
pub fn native_harness(client: &str) -> Option<&str> {
    client
        .split_whitespace()
        .next()?
        .strip_prefix("tare-native-")
}

/// What to change where loop 1 may leave state the rest reuse, in the terms of a native
/// harness (`native_harness`): a suite is changed in its own terms, not with tare's calls.
fn first_loop_native_advice(harness: &str) -> &'static str {
    match harness {
        "go" => "nothing to change for start-up (b.RunParallel's goroutines, setup before b.ResetTimer is only paid once a sample); if the b.N loop changes its input (sorts in place), reset it inside the loop between b.StopTimer() and b.StartTimer(), or move the setup out of the timed loop",
        "gbench" => "nothing to change for start-up (threads, a fixture); if the loop changes its input, reset it between state.PauseTiming() and state.ResumeTiming()",
        "criterion" => "nothing to change for start-up; if the routine changes its input, give each iteration fresh input with iter_batched (BatchSize::SmallInput)",
        "pytest-benchmark" => "nothing to change for start-up; if the function changes its input, give each round fresh input with benchmark.pedantic(setup=...)",
        "pyperf" => "nothing to change for start-up; if the function changes its input, time only the work on fresh input with bench_time_func",
        "jmh" => "nothing to change for start-up; if the method changes its state, reset it in a @Setup(Level.Invocation) method",
        _ => "nothing to change for start-up; if the loop changes its input, give each iteration fresh input in the harness's own terms",
    }
}

/// The larger loop count of the first-loop check (`method::kernels::FIRST_LOOP_K`, which this
/// layer does not import), named in its note.
const FIRST_LOOP_K: u64 = 16;

/// Per-loop init in tare's own clients.
const PER_LOOP_INIT: &str = "give each loop its own input with per-loop init (C tare_on_each, C++ .each, Rust Kernel::each, Go InitEach/RunEach, Java .each, JS input/each, Python init_each/body_each), or time a copy of the input in the body";

/// A start-up's share of a sample at or above which its note says the time per loop is raised
/// by it (below, the time per loop is the later loops' within that share).
const START_UP_SHARE: f64 = 0.1;

/// What a start-up of `first − later` ns each sample does to the time per loop at `loops` N:
/// nothing worth a word where it is under [`START_UP_SHARE`] of a sample ("the time per loop
/// (N = 2334) is of the later loops"), else how far it raises it and what lowers that (a
/// larger N, from a longer sample: what `go test -bench`'s 1 s b.N does).
fn start_up_weight(first: f64, later: f64, loops: u64) -> String {
    let a = (first - later).max(0.0);
    let sample = a + loops as f64 * later.max(0.0);
    let share = if sample > 0.0 { a / sample } else { 0.0 };
    if share < START_UP_SHARE || later <= 0.0 {
        return format!("the time per loop (N = {loops}) is of the later loops");
    }
    format!(
        "at N = {loops} it is {:.0}% of a sample, so the time per loop is {:.2}× the later loops': raise --sample-time so N grows",
        share * 100.0,
        1.0 / (1.0 - share)
    )
}

/// The first-loop diagnostic (`first`, `later`: a fresh sample's first loop and the per-loop
/// cost of the later ones, ns). Both causes give time(n) ≈ a + b·n over fresh samples, so the
/// kind is told by who owns the timed region: in tare's own clients a single-threaded body's
/// per-sample init is untimed and nothing else is paid once a sample, so a first loop far
/// dearer than the rest is the body's own work on what init left — state that carries over, a
/// warning ("first-loop", said in full); a native harness (goroutines, fixtures, setup before
/// its loop) or a threaded kernel pays start-up each sample, which leaves the per-loop value
/// honest — a note about the intercept ("first-loop-start-up"), with the suite's own terms
/// for the case it is state after all.
fn first_loop_diagnostic(b: &Benchmark, k: &KernelRecord, first: f64, later: f64) -> Diagnostic {
    let fmt = |ns: f64| crate::units::format_time(ns * 1e-9, None);
    let later_words = if later > 0.0 {
        format!("{} a loop ({:.0}× less)", fmt(later), first / later)
    } else {
        "too little to tell from the first loop's spread".to_string()
    };
    let evidence = json!({"first_ns": first, "later_ns": later, "intercept_ns": first - later, "loops": k.loops});
    let per_loop = start_up_weight(first, later, k.loops);
    match native_harness(&k.client) {
        Some(h) => Diagnostic {
            kind: "first-loop-start-up".into(),
            message: format!(
                "{}: every fresh sample's first loop took {}, the later loops {later_words}: a start-up of {} each sample pays (time(n) ≈ a + b·n over samples of 1, 2 and {} loops); {per_loop}",
                b.name,
                fmt(first),
                fmt(first - later),
                FIRST_LOOP_K,
            ),
            suggestion: first_loop_native_advice(h).into(),
            evidence,
        },
        None if k.threads > 1 => Diagnostic {
            kind: "first-loop-start-up".into(),
            message: format!(
                "{}: every fresh sample's first loop took {}, the later loops {later_words}: a start-up of {} each sample pays ({} threads released a sample); {per_loop}",
                b.name, fmt(first), fmt(first - later), k.threads
            ),
            suggestion: format!("nothing to change for start-up; if loop 1 leaves state the rest reuse, {PER_LOOP_INIT}"),
            evidence,
        },
        None => Diagnostic {
            kind: "first-loop".into(),
            message: format!(
                "{}: state from loop 1 carries over: a sample's first loop took {}, the later loops {later_words} (medians of fresh samples of 1, 2 and {} loops, each after the per-sample init); the time per loop (N = {}) is of loops that reuse what loop 1 left (a body that sorts in place sorts sorted data after loop 1), too low for the work on fresh input",
                b.name,
                fmt(first),
                FIRST_LOOP_K,
                k.loops
            ),
            suggestion: PER_LOOP_INIT.into(),
            evidence,
        },
    }
}

pub fn kernel_diagnostics(b: &Benchmark) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(k) = kernel_record(b) else {
        return out;
    };
    if let Some(l) = k.linearity {
        // The interval of the pairs' median ratio where recorded (a record from before it: the
        // ratio itself); only an interval wholly outside the linear range is a warning.
        let [lo, hi] = k.linearity_ci.unwrap_or([l, l]);
        let range = match k.linearity_ci {
            Some(_) => format!(
                " (95% CI {lo:.2}–{hi:.2} over {} N/2N pairs)",
                k.linearity_pairs.unwrap_or(0)
            ),
            None => String::new(),
        };
        if hi < LINEARITY_MIN || lo > LINEARITY_MAX {
            let start_up = (native_harness(&k.client).is_some() || k.threads > 1)
                .then_some(k.first_loop_ns)
                .flatten()
                .filter(|[first, later]| first > later);
            let (message, suggestion) = if let (true, Some([first, later])) =
                (hi < LINEARITY_MIN, start_up)
            {
                (
                    format!(
                        "{}: time does not grow with the loops: 2N loops took {l:.2}× the time of N{range} (N = {}): the start-up each fresh sample pays ({}, the first-loop-start-up note) is much of a sample at this N",
                        b.name,
                        k.loops,
                        crate::units::format_time((first - later) * 1e-9, None)
                    ),
                    "raise --sample-time so N grows and the start-up weighs less (go test -bench's default mode runs b.N for 1 s)".to_string(),
                )
            } else if hi < LINEARITY_MIN {
                (
                    format!(
                        "{}: time does not grow with the loops: 2N loops took {l:.2}× the time of N{range} (N = {}); {}",
                        b.name,
                        k.loops,
                        // A suite's own loop: what a run of it pays once (goroutines, setup
                        // before the loop) comes first; its body is the suite's.
                        match native_harness(&k.client) {
                            Some("go") => "a cost each sample pays (b.RunParallel's goroutines, setup timed before the loop) weighs on so few loops, or the loop reuses what its first loop left",
                            Some(_) => "a cost each sample pays (threads, a fixture, setup timed before the loop) weighs on so few loops, or the loop reuses what its first loop left",
                            None => "the body was optimized away, per-sample overhead dominates, or state left by earlier loops makes later ones cheaper (a body that sorts in place sorts sorted data after loop 1)",
                        }
                    ),
                    match native_harness(&k.client) {
                        Some(h) => format!(
                            "raise --sample-time if a cost each sample pays weighs on N = {}; {}",
                            k.loops,
                            first_loop_native_advice(h)
                                .split_once("; ")
                                .map_or("", |(_, r)| r)
                        ),
                        None => "pass the body's result to the client's do-not-optimize helper; make the body do more work per loop; give each loop its own input with per-loop init (C tare_on_each, C++ .each, Rust Kernel::each, Go InitEach/RunEach, Java .each, JS input/each, Python init_each/body_each)".to_string(),
                    },
                )
            } else {
                (
                    format!(
                        "{}: time grows faster than the loops: 2N loops took {l:.2}× the time of N{range} (N = {})",
                        b.name, k.loops
                    ),
                    "check for state that grows across loops (caches, allocations) or reset it in the per-repetition init".to_string(),
                )
            };
            out.push(Diagnostic {
                kind: "linearity".into(),
                message,
                suggestion,
                evidence: json!({"ratio": l, "ci": [lo, hi], "pairs": k.linearity_pairs, "loops": k.loops}),
            });
        }
    }
    if let Some([first, later]) = k.first_loop_ns {
        out.push(first_loop_diagnostic(b, &k, first, later));
    }
    if let Some(why) = &k.linearity_skipped {
        out.push(Diagnostic {
            kind: "linearity-skipped".into(),
            message: format!("{}: linearity not checked: {why}", b.name),
            suggestion: if why.starts_with("--loops") {
                "without --loops tare calibrates N and checks that the time grows with it".into()
            } else {
                "a body whose time depends on state left by earlier loops is not caught at N = 1; check such a kernel with a smaller size".into()
            },
            evidence: json!({"loops": k.loops}),
        });
    }
    let samples: Vec<SampleRecord> = b.runs.iter().filter_map(sample_of).collect();
    let unresolved = samples
        .iter()
        .filter(|s| s.excluded.as_deref() == Some("unresolved"))
        .count();
    if unresolved > 0 {
        out.push(Diagnostic {
            kind: "unresolved-samples".into(),
            message: format!(
                "{}: {unresolved} of {} samples were shorter than the worker's clock can resolve (< {:.0} ns; resolution {} ns, read cost {:.1} ns) and were refused",
                b.name,
                samples.len(),
                (100.0 * k.clock_resolution_ns).max(10.0 * k.clock_cost_ns),
                k.clock_resolution_ns,
                k.clock_cost_ns
            ),
            suggestion: "make each sample longer (--sample-time) or the body heavier; a kernel optimized away cannot be measured".into(),
            evidence: json!({"unresolved": unresolved, "samples": samples.len()}),
        });
    }
    let invs = invocations(b);
    // Other work on the worker's cores while its processes ran (as `tare run`'s per-run
    // check): the invocations that counted as interfered with.
    let envs: Vec<&serde_json::Value> =
        invs.iter().filter_map(|i| i.environment.as_ref()).collect();
    let hit: Vec<&&serde_json::Value> = envs
        .iter()
        .filter(|e| e["interfered"] == json!(true))
        .collect();
    if !hit.is_empty() {
        let sum = |key: &str| hit.iter().filter_map(|e| e[key].as_f64()).sum::<f64>();
        let (other, steal) = (sum("other_cpu_time"), sum("steal_time"));
        let fmt = |s: f64| crate::units::format_time(s, None);
        out.push(Diagnostic {
            kind: "interference".into(),
            message: format!(
                "{}: {} of {} invocations were interfered with (the machine was busy): other processes used {} of CPU on the worker's cores and the hypervisor stole {} while they ran",
                b.name,
                hit.len(),
                envs.len(),
                fmt(other),
                fmt(steal)
            ),
            suggestion: "stop the other load, or pin the workers away from it with --cpus; measure again on a quiet machine before comparing".into(),
            evidence: json!({"interfered": hit.len(), "invocations": envs.len(), "other_cpu_time": other, "steal_time": steal}),
        });
    }
    let steady: Vec<(usize, usize)> = invs
        .iter()
        .filter(|i| i.steady_from > 0)
        .map(|i| (i.index, i.steady_from))
        .collect();
    if !steady.is_empty() {
        let list = steady
            .iter()
            .map(|(i, n)| format!("#{}: samples 1–{n}", i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Diagnostic {
            kind: "steady-state".into(),
            message: format!(
                "{}: warm-up before a steady state excluded in {} of {} invocations ({list})",
                b.name,
                steady.len(),
                invs.len()
            ),
            suggestion: "expected for a JIT (JVM, V8); raise --warmup to skip it by default".into(),
            evidence: json!(steady),
        });
    }
    let groups = by_invocation(b);
    if groups.len() >= 2 {
        let slices: Vec<&[f64]> = groups.iter().map(|g| g.as_slice()).collect();
        if let Some(c) = stats::one_way_random_effects(&slices) {
            let between = c.var_between.max(0.0).sqrt();
            let within = c.var_within.max(0.0).sqrt();
            let n0 = c.n0.max(1.0);
            if c.grand_mean > 0.0
                && between > 2.0 * within / n0.sqrt()
                && between > 0.01 * c.grand_mean
            {
                out.push(Diagnostic {
                    kind: "invocation-spread".into(),
                    message: format!(
                        "{}: processes differ: between-invocation σ {:.2}% of the mean against {:.2}% within one; more samples per process cannot average it away",
                        b.name,
                        100.0 * between / c.grand_mean,
                        100.0 * within / c.grand_mean
                    ),
                    suggestion: "raise --invocations (fresh processes), not samples; see tare plan".into(),
                    evidence: json!({"sd_between": between, "sd_within": within, "invocations": groups.len()}),
                });
            }
        }
    }
    out
}

/// User metrics that must agree across the implementations of a kernel (`checksum`): the
/// candidate's last value against the reference's, to [`METRIC_TOLERANCE`] relative.
fn metric_agreement(benches: &[Benchmark], pairs: &[(usize, usize)]) -> Vec<(usize, Diagnostic)> {
    let last = |b: &Benchmark, name: &str| -> Option<f64> {
        b.runs
            .iter()
            .rev()
            .filter_map(sample_of)
            .find_map(|s| s.metrics.get(name).copied())
    };
    let mut out: Vec<(usize, Diagnostic)> = Vec::new();
    for &(r, c) in pairs {
        let (x, y) = match (last(&benches[r], "checksum"), last(&benches[c], "checksum")) {
            (Some(x), Some(y)) => (x, y),
            // One reports a checksum, the other none (and it has samples: a kernel that failed
            // before any is not checked): the check cannot be made, said once per benchmark.
            (Some(v), None) | (None, Some(v)) => {
                let (has, lacks) = if last(&benches[r], "checksum").is_some() {
                    (r, c)
                } else {
                    (c, r)
                };
                let sampled = benches[lacks].runs.iter().any(|x| sample_of(x).is_some());
                if sampled
                    && !out
                        .iter()
                        .any(|(i, d)| *i == lacks && d.kind == "checksum-missing")
                {
                    out.push((
                        lacks,
                        Diagnostic {
                            kind: "checksum-missing".into(),
                            message: format!(
                                "{}: reports no checksum where {} reports {v}: whether they compute the same thing is not checked",
                                benches[lacks].name, benches[has].name
                            ),
                            suggestion: "report the same m.checksum as the other implementations (the client's metric(\"checksum\", ...))".into(),
                            evidence: json!({"other": benches[has].name, "checksum": v}),
                        },
                    ));
                }
                continue;
            }
            (None, None) => continue,
        };
        let scale = x.abs().max(y.abs()).max(f64::MIN_POSITIVE);
        if (x - y).abs() / scale > METRIC_TOLERANCE {
            out.push((
                c,
                Diagnostic {
                    kind: "metric-disagrees".into(),
                    message: format!(
                        "{}: checksum {y} differs from {}'s {x}: the implementations do not compute the same thing",
                        benches[c].name, benches[r].name
                    ),
                    suggestion: "fix the implementation before comparing its speed".into(),
                    evidence: json!({"reference": x, "candidate": y}),
                },
            ));
        }
    }
    out
}

/// Whether every checksum agrees, for the summary: `Some(value)` when all implementations of
/// the kernel (benchmarks `group`) report the same `m.checksum`.
pub fn agreed_checksum(benches: &[Benchmark], group: &[usize]) -> Option<f64> {
    let vals: Vec<f64> = group
        .iter()
        .filter_map(|&i| {
            benches[i]
                .runs
                .iter()
                .rev()
                .filter_map(sample_of)
                .find_map(|s| s.metrics.get("checksum").copied())
        })
        .collect();
    let first = *vals.first()?;
    (vals.len() == group.len()
        && vals
            .iter()
            .all(|v| (v - first).abs() <= METRIC_TOLERANCE * first.abs().max(v.abs())))
    .then_some(first)
}

/// A comparison's record for the pair, if made.
pub fn comparison_of(s: &Session, r: usize, c: usize) -> Option<&ComparisonRecord> {
    s.comparisons
        .iter()
        .find(|x| x.reference == r && x.candidate == c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_up_that_is_much_of_a_sample_is_said_to_raise_the_time_per_loop() {
        // fastjson's Parse/citm at N = 2: a first loop of 36.1 ms, later loops of 1.68 ms.
        let (first, later) = (36_097_007.0, 1_678_635.0);
        let a = first - later;
        let share = a / (a + 2.0 * later);
        let w = start_up_weight(first, later, 2);
        assert!(
            w.starts_with(&format!("at N = 2 it is {:.0}% of a sample", share * 100.0)),
            "{w}"
        );
        assert!(w.contains(&format!("{:.2}×", 1.0 / (1.0 - share))), "{w}");
        assert!(w.contains("raise --sample-time"), "{w}");
        // Parse/small at N = 20798: the start-up is under 1% of a sample; nothing to raise.
        let w = start_up_weight(79_419.0, 602.5, 20_798);
        assert_eq!(w, "the time per loop (N = 20798) is of the later loops");
        // At the share's edge: a start-up of 9 loops' worth over N = 81 is 10%.
        assert!(start_up_weight(10.0, 1.0, 81).starts_with("at N = 81 it is 10%"));
        assert!(start_up_weight(10.0, 1.0, 82).starts_with("the time per loop"));
    }

    #[test]
    fn process_interval_and_how_many_more() {
        // Medians 0.9, 1.0, 1.1, 0.9, 1.0: mean 0.98, sd = √0.007 = 0.0836660; the t quantile
        // scipy.stats.t.ppf(0.975, 4) = 2.7764451051977987.
        let p = process_spread(&[0.9, 1.0, 1.1, 0.9, 1.0]).unwrap();
        let sd = 0.007f64.sqrt();
        assert_eq!(p.n, 5);
        assert!((p.mean - 0.98).abs() < 1e-12);
        assert!((p.cv - sd / 0.98).abs() < 1e-12);
        let half = 2.7764451051977987 * sd / 5f64.sqrt() / 0.98;
        assert!((p.half - half).abs() < 1e-9, "{} vs {half}", p.half);
        // ±10.6% to ±5%: (10.6/5)² × 5 ≈ 22.5 processes, 18 more.
        assert_eq!(more_invocations(&p, 0.05), 18);
        assert_eq!(more_invocations(&p, 0.2), 0);
        let words = inconclusive(&p, 0.05, "--time-budget 2m reached");
        assert!(
            words.starts_with("inconclusive: processes differ by 8.5%")
                && words.contains("about 18 more invocations would settle it to ±5.0%"),
            "{words}"
        );
        assert_eq!(process_spread(&[1.0]), None);
        assert_eq!(process_spread(&[0.0, 0.0]), None);
    }

    #[test]
    fn next_session_interval_matches_scipy() {
        // tests/data/stats/next_session.json, from scripts/next_session_reference.py.
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/stats/next_session.json")).unwrap();
        for c in v["cases"].as_array().unwrap() {
            let xs: Vec<f64> = serde_json::from_value(c["medians"].clone()).unwrap();
            let p = process_spread(&xs).unwrap();
            let x = next_session(&xs).unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
            assert!(close(p.half, c["ci_half"].as_f64().unwrap()), "{c}");
            assert!(
                close(x.predicted, c["predicted_half"].as_f64().unwrap()),
                "{c}"
            );
            assert!(x.half >= x.predicted);
        }
        assert_eq!(next_session(&[1.0]), None);
    }

    /// A standard normal draw (Box–Muller).
    fn normal(rng: &mut impl rand::Rng) -> f64 {
        let (u, v): (f64, f64) = (rng.gen::<f64>().max(1e-300), rng.gen());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    #[test]
    fn next_session_lands_inside_at_the_stated_rate() {
        use rand::SeedableRng;
        // Sessions of 8 processes whose values scatter 5% about the same value: the next
        // session's mean lies inside the previous session's prediction interval ~95% of the
        // time, inside its interval of the mean only ~83% (what the "±" alone gave, and what
        // bench/kernels_aa.sh measured on xxhash: 35 of 42).
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(34);
        let session = |rng: &mut rand_chacha::ChaCha8Rng| -> Vec<f64> {
            (0..8).map(|_| 1e-6 * (1.0 + 0.05 * normal(rng))).collect()
        };
        let (trials, mut in_next, mut in_pred, mut in_ci) = (4000, 0, 0, 0);
        for _ in 0..trials {
            let a = session(&mut rng);
            let b = session(&mut rng);
            let p = process_spread(&a).unwrap();
            let x = next_session(&a).unwrap();
            let next = process_spread(&b).unwrap().mean;
            let off = (next / p.mean - 1.0).abs();
            in_next += usize::from(off <= x.half);
            in_pred += usize::from(off <= x.predicted);
            in_ci += usize::from(off <= p.half);
        }
        let rate = |n: usize| n as f64 / trials as f64;
        let (r_next, r_pred, r_ci) = (rate(in_next), rate(in_pred), rate(in_ci));
        assert!(
            (0.935..=0.97).contains(&r_pred),
            "prediction interval: {r_pred}"
        );
        // Widened to where compare of one session a side turns: wider than independent
        // processes need, never narrower.
        assert!(
            r_next >= r_pred && r_next >= 0.95,
            "next-session interval: {r_next}"
        );
        assert!(
            (0.79..=0.87).contains(&r_ci),
            "interval of the mean: {r_ci}"
        );
    }

    #[test]
    fn speed_modes_among_processes_widen_the_next_session_interval() {
        // Seven processes in a fast mode (1.00 µs), three in a slow one (1.30 µs, one in each
        // third of the session), each within ±0.3%: the prediction interval (±13.5%) stops
        // short of the slow mode; widened, it reaches both modes instead of sitting near the
        // fast one.
        let slow = |i: usize| [2, 5, 8].contains(&i);
        let xs: Vec<f64> = (0..10)
            .map(|i| (if slow(i) { 1.3 } else { 1.0 } + 0.003 * ((i % 3) as f64 - 1.0)) * 1e-6)
            .collect();
        let x = next_session(&xs).unwrap();
        assert_eq!(x.modes.len(), 2, "{x:?}");
        assert!((x.modes[0] - 1.0e-6).abs() < 0.03e-6 && (x.modes[1] - 1.3e-6).abs() < 0.03e-6);
        let mean = xs.iter().sum::<f64>() / 10.0;
        let reach = (x.modes[1] - mean) / mean;
        assert!(x.predicted < reach, "{x:?}");
        assert!((x.half - reach).abs() < 1e-12, "{x:?}");
        // The same processes with the slow ones all at the end: the session moved from one
        // state to the other over its course, and its thirds say how far a next session may
        // land (where `tare compare` would see no change).
        let mut late = xs.clone();
        late.sort_by(f64::total_cmp);
        let w = next_session(&late).unwrap();
        assert!(w.thirds > reach && w.half == w.thirds, "{w:?}");
        // One mode: the prediction interval, or the thirds' reach where wider.
        let one = [1.00, 1.02, 0.98, 1.01, 0.99, 1.00, 1.03, 0.97].map(|x| x * 1e-6);
        let y = next_session(&one).unwrap();
        assert!(
            y.modes.is_empty() && y.half == y.predicted.max(y.thirds),
            "{y:?}"
        );
        // Fewer than five processes: not looked at for modes.
        let z = next_session(&[1.0, 1.3, 1.0, 1.3]).unwrap();
        assert!(z.modes.is_empty());
    }
}
