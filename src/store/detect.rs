//! Change points of a series and the alerts they raise.
//!
//! A series (benchmark × metric × machine fingerprint) is cut by E-divisive means with a
//! permutation test (`crate::stats::changepoint`) over its per-commit values. Each change point
//! gets an effect size — the ratio of the medians of the commit values after and before it,
//! within the neighbouring change points — with a 95% bootstrap interval. A change is alerted
//! when that interval excludes 1 and the ratio differs from 1 by at least `min_effect`.
//!
//! Runs tare flagged as interfered with are treated by [`Interfered`] (`--interfered`): by
//! default a point counts without them, and a point whose every run was flagged keeps them,
//! so a shared runner's history never empties; `drop` leaves such a point out, `keep` counts
//! every run. The views say how many, and which points were kept or left out. A change of the
//! machine's kernel, OS or measurement method starts a new segment: change points are searched
//! within segments, and the boundary is annotated, never alarmed. A different machine
//! (fingerprint) is a different series.
//!
//! Alerts have a lifecycle stored in the `alerts` table: `new` → `acknowledged` | `dismissed` |
//! `fixed`. One alert per level shift: running detection again updates the alert of the same
//! kind lying between the neighbouring change points (its estimated commit may move as commits
//! and trials are added) rather than adding a second one; a `new` alert whose change is no
//! longer found is dismissed with a note, and opened again (not new to the gate) when it is
//! found again; an open regression whose level is undone by a later improvement is marked
//! `fixed`. A change whose sessions after it were multimodal says so.
//!
//! The newest commit is judged when it is checked ([`tip`]): a step at it is found before the
//! change-point search has the commits after it that it needs. Its value (each commit one
//! replicate: its `detect_value`) is judged against up to `tip_baseline` commits before it by
//! the prediction interval for one new value on log values (`crate::stats::next_value`, the
//! spread between commits taken from the baseline itself, widened by the tip's own noise
//! where its session is noisier than the baseline's: [`own_noise`]); the baseline stops at a change point
//! and at a machine change (kernel, OS, method), as segments do, and needs
//! [`TIP_MIN_BASELINE`] commits. A regression there (one-sided p < α in the metric's bad
//! direction, and at least `min_effect`) raises an alert at the tip; while the level shift it
//! starts is too new for the search (fewer than `min_size` commits after it), the alert is
//! kept and the tips after it match it instead of raising a second one, and once the search
//! finds the change, the change updates it (one alert per level shift).

use super::query::{Point, Series};
use crate::stats::bootstrap::{bootstrap_ratio_of_medians, Interval};
use crate::stats::changepoint::{e_divisive, Settings};
use crate::stats::next_value::{next_value_with, NextValue};

mod alerts;
pub use alerts::{
    alerts, open_alerts, series_alerts, set_status, update_alerts, update_alerts_with, Alert, OPEN,
    STATUSES, TIP_NOTE,
};

/// Fewest commits of baseline that the newest commit is judged against.
pub const TIP_MIN_BASELINE: usize = 3;

/// What detection does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectSettings {
    pub changepoint: Settings,
    /// Smallest |ratio − 1| that raises an alert (0.01 = 1%).
    pub min_effect: f64,
    /// Most commits before the newest that it is judged against ([`tip`]); its one-sided
    /// level is `changepoint.alpha`.
    pub tip_baseline: usize,
    /// What the runs flagged as interfered with count for.
    pub interfered: Interfered,
}

impl Default for DetectSettings {
    fn default() -> Self {
        DetectSettings {
            changepoint: Settings::default(),
            min_effect: 0.01,
            tip_baseline: 10,
            interfered: Interfered::default(),
        }
    }
}

/// What detection does with the runs tare flagged as interfered with (`--interfered`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interfered {
    /// Every run counts, flagged or not.
    Keep,
    /// A point counts without its flagged runs; a point whose every run was flagged keeps
    /// them (and is said), so a history on a runner shared with other load never empties.
    #[default]
    Flag,
    /// Flagged runs never count: a point whose every run was flagged is left out (and said).
    Drop,
}

impl Interfered {
    pub const NAMES: [&'static str; 3] = ["keep", "flag", "drop"];

    pub fn parse(name: &str) -> Option<Interfered> {
        match name {
            "keep" => Some(Interfered::Keep),
            "flag" => Some(Interfered::Flag),
            "drop" => Some(Interfered::Drop),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Interfered::Keep => "keep",
            Interfered::Flag => "flag",
            Interfered::Drop => "drop",
        }
    }

    /// The value detection uses for point `p`; NaN when it is left out.
    pub fn value(self, p: &Point) -> f64 {
        match self {
            Interfered::Keep => p.value,
            Interfered::Flag if p.detect_value.is_finite() => p.detect_value,
            Interfered::Flag => p.value,
            Interfered::Drop => p.detect_value,
        }
    }

    /// Whether the flagged runs of point `p` are left out of its value.
    pub fn leaves_out(self, p: &Point) -> bool {
        match self {
            Interfered::Keep => false,
            Interfered::Flag => p.detect_value.is_finite(),
            Interfered::Drop => true,
        }
    }
}

/// One change point of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Index of the first point of the new level.
    pub index: usize,
    /// Index of the first point of the level before, and one past the last of the level
    /// after (the neighbouring change points): the stretch in which a stored alert is this
    /// same level shift.
    pub from: usize,
    pub to: usize,
    /// Commit keys of the last point before and the first after.
    pub before_key: String,
    pub after_key: String,
    /// median(after) / median(before), with its 95% interval.
    pub ratio: Interval,
    pub p_value: f64,
    /// `regression` or `improvement`, by the metric's direction.
    pub kind: String,
    /// Whether it is alerted: the interval excludes 1 and the effect reaches `min_effect`.
    pub alerted: bool,
    /// The machine change at this commit, if any (then it is annotated, not alarmed).
    pub machine_change: Option<String>,
    /// Whether sessions after it were multimodal.
    pub multimodal: bool,
    /// Median level before and after.
    pub level_before: f64,
    pub level_after: f64,
}

fn seed_of(s: &Series) -> u64 {
    (s.benchmark_id as u64)
        .wrapping_mul(0x9E3779B97F4A7C15)
        .wrapping_add((s.metric_id as u64) << 32)
        .wrapping_add(s.machine_id as u64)
}

fn config(p: &Point, last: bool) -> Option<(String, String, String)> {
    let s = if last {
        p.sessions.last()
    } else {
        p.sessions.first()
    }?;
    Some((s.kernel.clone(), s.os.clone(), s.method.clone()))
}

fn describe_config_change(x: &(String, String, String), y: &(String, String, String)) -> String {
    let mut parts = Vec::new();
    if x.0 != y.0 {
        parts.push(format!("kernel {} → {}", x.0, y.0));
    }
    if x.1 != y.1 {
        parts.push(format!("OS {} → {}", x.1, y.1));
    }
    if x.2 != y.2 {
        parts.push(format!("method {} → {}", x.2, y.2));
    }
    parts.join(", ")
}

/// The change points of a series' points, with effect sizes.
///
/// Each point counts by `settings.interfered` ([`Interfered::value`]): by default without its
/// runs flagged as interfered with, unless every run was; a point without a value is left out. A change of kernel, OS or
/// measurement method between two points starts a new segment: change points are searched
/// within segments, never across one, and each boundary is returned as a change with its
/// `machine_change` set, never alerted.
pub fn changes(points: &[Point], series: &Series, settings: &DetectSettings) -> Vec<Change> {
    let used: Vec<usize> = (0..points.len())
        .filter(|&i| settings.interfered.value(&points[i]).is_finite())
        .collect();
    let mut segments: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for k in 1..used.len() {
        if config(&points[used[k - 1]], true) != config(&points[used[k]], false) {
            segments.push((start, k));
            start = k;
        }
    }
    if !used.is_empty() {
        segments.push((start, used.len()));
    }
    let mut cfg = settings.changepoint;
    cfg.seed ^= seed_of(series);
    let med = |xs: &[f64]| {
        crate::stats::quantile::median(&crate::stats::quantile::sorted_without_nan(xs))
            .unwrap_or(f64::NAN)
    };
    let worse = |r: f64| {
        if series.direction == "higher" {
            r < 1.0
        } else {
            r > 1.0
        }
    };
    let value_of = |k: usize| settings.interfered.value(&points[used[k]]);
    // A count that repeats (Valgrind's) has no noise to test against: every step of at least
    // `counts::WORK_CHANGE` that persists is a change in work.
    let deterministic = repeating_counts(points, series);
    let min_effect = if deterministic {
        crate::conclude::counts::WORK_CHANGE
    } else {
        settings.min_effect
    };
    let mut out = Vec::new();
    for (si, &(s0, s1)) in segments.iter().enumerate() {
        let values: Vec<f64> = (s0..s1).map(value_of).collect();
        if si > 0 {
            // The boundary: annotated with the machine change, never alerted.
            let (p0, p1) = segments[si - 1];
            let before: Vec<f64> = (p0..p1).map(value_of).collect();
            let (x, y) = (
                config(&points[used[s0 - 1]], true).unwrap_or_default(),
                config(&points[used[s0]], false).unwrap_or_default(),
            );
            let (lb, la) = (med(&before), med(&values));
            let ratio = bootstrap_ratio_of_medians(&before, &values, false, 0.95, 2000, cfg.seed)
                .unwrap_or(Interval {
                    estimate: la / lb,
                    low: f64::NAN,
                    high: f64::NAN,
                    confidence: 0.95,
                });
            out.push(Change {
                index: used[s0],
                from: used[p0],
                to: used.get(s1).copied().unwrap_or(points.len()),
                before_key: points[used[s0 - 1]].key.clone(),
                after_key: points[used[s0]].key.clone(),
                kind: if worse(ratio.estimate) {
                    "regression"
                } else {
                    "improvement"
                }
                .into(),
                ratio,
                p_value: 1.0,
                alerted: false,
                machine_change: Some(describe_config_change(&x, &y)),
                multimodal: false,
                level_before: lb,
                level_after: la,
            });
        }
        let cps = if deterministic {
            count_steps(&values)
        } else {
            e_divisive(&values, &cfg)
        };
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(cps.iter().map(|c| c.index));
        bounds.push(values.len());
        for (k, cp) in cps.iter().enumerate() {
            let (a, i, b) = (bounds[k], bounds[k + 1], bounds[k + 2]);
            let before = &values[a..i];
            let after = &values[i..b];
            let Some(ratio) =
                bootstrap_ratio_of_medians(before, after, false, 0.95, 2000, cfg.seed ^ i as u64)
            else {
                continue;
            };
            let alerted =
                (ratio.low > 1.0 || ratio.high < 1.0) && (ratio.estimate - 1.0).abs() >= min_effect;
            let (pa, pi) = (used[s0 + a], used[s0 + i]);
            let pb = used.get(s0 + b).copied().unwrap_or(points.len());
            out.push(Change {
                index: pi,
                from: pa,
                to: pb,
                before_key: points[used[s0 + i - 1]].key.clone(),
                after_key: points[pi].key.clone(),
                kind: if worse(ratio.estimate) {
                    "regression"
                } else {
                    "improvement"
                }
                .into(),
                ratio,
                p_value: cp.p_value,
                alerted,
                machine_change: None,
                multimodal: points[pi..pb].iter().any(Point::multimodal),
                level_before: med(before),
                level_after: med(after),
            });
        }
    }
    out
}

/// The newest commit of a series judged against the commits before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tip {
    /// Index of the judged point: the newest with a value.
    pub index: usize,
    pub key: String,
    /// Commit key of the point before it, if any.
    pub before_key: Option<String>,
    /// Index of the first baseline point (`index` when there is none), and how many.
    pub from: usize,
    pub baseline: usize,
    /// What stopped the baseline before `tip_baseline` commits, if anything: a change point or
    /// a machine change, in words.
    pub cut: Option<String>,
    /// The judgment; None when the baseline is too short (`missing` says why).
    pub judged: Option<NextValue>,
    /// Why it is not judged: "2 commits of baseline; 3 needed …".
    pub missing: Option<String>,
    /// `regression` or `improvement` by the side of 1 the ratio lies on (the metric's direction).
    pub kind: String,
    /// The interval excludes 1 on the metric's bad side (one-sided p < α).
    pub significant: bool,
    /// Significant and at least `min_effect`: what raises an alert.
    pub regression: bool,
    /// The one-sided p-value in the metric's bad direction, and α.
    pub p_value: f64,
    pub alpha: f64,
    /// The smallest change that alerts for this series (`min_effect`, or a repeating
    /// count's work change).
    pub min_effect: f64,
}

/// The newest point with a value of a series judged against up to `tip_baseline` points before
/// it (see the module documentation); None when no point has a value. `changes` are the
/// series' changes from [`changes`]: the baseline starts after the latest change point before
/// the tip, and at the latest machine change at or before it.
pub fn tip(
    points: &[Point],
    series: &Series,
    changes: &[Change],
    settings: &DetectSettings,
) -> Option<Tip> {
    let value = |i: usize| settings.interfered.value(&points[i]);
    let used: Vec<usize> = (0..points.len())
        .filter(|&i| value(i).is_finite())
        .collect();
    let (&index, earlier) = used.split_last()?;
    // Where the baseline may start: the latest change point before the tip, or machine change
    // at or before it (the tip then starts a segment of its own).
    let cut = changes
        .iter()
        .filter(|c| match c.machine_change {
            Some(_) => c.index <= index,
            None => c.index < index,
        })
        .max_by_key(|c| c.index);
    let start = cut.map_or(0, |c| c.index);
    let window: Vec<usize> = earlier.iter().copied().filter(|&i| i >= start).collect();
    let base = &window[window.len().saturating_sub(settings.tip_baseline.max(1))..];
    let cut_words = cut
        .filter(|_| base.len() == window.len())
        .map(|c| match &c.machine_change {
            Some(m) => format!("the machine change at {} ({m})", short(&c.after_key)),
            None => format!("the change point at {}", short(&c.after_key)),
        });
    let deterministic = repeating_counts(points, series);
    let min_effect = if deterministic {
        crate::conclude::counts::WORK_CHANGE
    } else {
        settings.min_effect
    };
    let alpha = settings.changepoint.alpha;
    let values: Vec<f64> = base.iter().map(|&i| value(i)).collect();
    let mut t = Tip {
        index,
        key: points[index].key.clone(),
        before_key: earlier.last().map(|&i| points[i].key.clone()),
        from: base.first().copied().unwrap_or(index),
        baseline: base.len(),
        cut: cut_words,
        judged: None,
        missing: None,
        kind: String::new(),
        significant: false,
        regression: false,
        p_value: f64::NAN,
        alpha,
        min_effect,
    };
    if values.len() < TIP_MIN_BASELINE {
        t.missing = Some(format!(
            "{} of baseline; {TIP_MIN_BASELINE} needed{}",
            crate::units::plural(values.len(), "commit"),
            match &t.cut {
                Some(c) => format!(" (the baseline starts at {c})"),
                None => String::new(),
            }
        ));
        return Some(t);
    }
    let Some(j) = next_value_with(&values, value(index), alpha, own_noise(points, base, index))
    else {
        t.missing = Some(format!(
            "no judgment at α = {alpha} (give --alpha below 0.5) or of a value that is not positive"
        ));
        return Some(t);
    };
    let higher_better = series.direction == "higher";
    let worse = if higher_better {
        j.ratio < 1.0
    } else {
        j.ratio > 1.0
    };
    t.kind = match (worse, j.ratio == 1.0) {
        (_, true) => "none",
        (true, false) => "regression",
        (false, false) => "improvement",
    }
    .into();
    (t.significant, t.p_value) = if higher_better {
        (j.high < 1.0, j.p_lower)
    } else {
        (j.low > 1.0, j.p_higher)
    };
    t.regression = t.significant && (j.ratio - 1.0).abs() >= min_effect;
    t.judged = Some(j);
    Some(t)
}

/// The variance (log scale) of the tip's own value beyond the baseline's: the square of its
/// 95% interval's half-width in logs (/1.96) less the mean of the baseline points' own, when
/// larger (else 0). Sessions on a machine under changing load are not exchangeable: one run
/// during a burst of other load is noisier than the commits before it, and without this its
/// noise alone was flagged (A/A 1.9–2.2% at α 0.01, bench/tip_aa.out.txt); a session as
/// noisy as its baseline's adds nothing (the baseline's spread already holds that).
fn own_noise(points: &[Point], base: &[usize], tip: usize) -> f64 {
    let var = |p: &Point| {
        let h = (p.ci_high.ln() - p.ci_low.ln()) / (2.0 * 1.959964);
        Some(h * h).filter(|v| v.is_finite())
    };
    let Some(own) = var(&points[tip]) else {
        return 0.0;
    };
    let known: Vec<f64> = base.iter().filter_map(|&i| var(&points[i])).collect();
    if known.is_empty() {
        return 0.0;
    }
    (own - known.iter().sum::<f64>() / known.len() as f64).max(0.0)
}

/// Whether a series is a count whose runs repeat in every session (the range of each
/// session's runs within `counts::REPEAT` of its median): its change points are steps
/// ([`count_steps`]), not a permutation test's.
pub fn repeating_counts(points: &[Point], series: &Series) -> bool {
    series.unit == super::ingest::COUNT_UNIT
        && !points.is_empty()
        && points.iter().flat_map(|p| &p.sessions).all(|s| {
            s.n >= 2
                && s.median > 0.0
                && (s.ci_high - s.ci_low) / s.median <= crate::conclude::counts::REPEAT
        })
}

/// The change points of a repeating count's values: each point that differs from the level
/// before it by at least `counts::WORK_CHANGE` and is not undone by the next point (a step
/// that persists; the last point's step is one too: the count repeats, nothing to wait for).
/// p-value 0: no test is made.
pub fn count_steps(values: &[f64]) -> Vec<crate::stats::changepoint::ChangePoint> {
    use crate::conclude::counts::WORK_CHANGE;
    let moved = |a: f64, b: f64| a > 0.0 && (b / a - 1.0).abs() >= WORK_CHANGE;
    let mut out = Vec::new();
    let Some(&first) = values.first() else {
        return out;
    };
    let mut level = first;
    for i in 1..values.len() {
        if !moved(level, values[i]) {
            continue;
        }
        let undone = values.get(i + 1).is_some_and(|&next| !moved(level, next));
        if undone {
            continue;
        }
        out.push(crate::stats::changepoint::ChangePoint {
            index: i,
            p_value: 0.0,
            statistic: values[i] / level,
        });
        level = values[i];
    }
    out
}

/// What the runs flagged as interfered with did to a series under a policy: flagged runs in
/// all, how many of them detection left out, and the indices of the points whose every run
/// was flagged (kept with their runs under `flag` and `keep`, left out under `drop`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Interference {
    pub runs: i64,
    pub left_out: i64,
    pub whole: Vec<usize>,
}

/// [`Interference`] of `points` under `policy`.
pub fn interference(points: &[Point], policy: Interfered) -> Interference {
    Interference {
        runs: points.iter().map(|p| p.interfered).sum(),
        left_out: points
            .iter()
            .filter(|p| policy.leaves_out(p))
            .map(|p| p.interfered)
            .sum(),
        whole: (0..points.len())
            .filter(|&i| points[i].interfered > 0 && !points[i].detect_value.is_finite())
            .collect(),
    }
}

/// Counted runs flagged as interfered with, and points whose every run was.
pub fn left_out(points: &[Point]) -> (i64, usize) {
    (
        points.iter().map(|p| p.interfered).sum(),
        points
            .iter()
            .filter(|p| !p.detect_value.is_finite())
            .count(),
    )
}

fn short(key: &str) -> String {
    key.chars().take(10).collect()
}

/// Commits of each series that detection looks at (`--window`; the server's too).
pub const WINDOW: usize = 200;

/// Which series detection covers for a metric selection: `all`, `default` (wall time, the
/// counted events and a head to head's ratios, `history add --ratios`), or one metric by name.
/// The CLI's `--metric` and the server's `?metric=`.
pub fn selected(metric: &str, s: &Series) -> bool {
    match metric {
        "all" => true,
        "default" => {
            s.metric == "wall_time"
                || s.unit == super::ingest::COUNT_UNIT
                || s.unit == super::ingest::RATIO_UNIT
        }
        m => s.metric == m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::query::SessionRef;

    fn series(direction: &str) -> Series {
        Series {
            benchmark_id: 1,
            metric_id: 1,
            machine_id: 1,
            benchmark: "b".into(),
            parameters: "{}".into(),
            command: "b".into(),
            metric: "wall_time".into(),
            unit: "s".into(),
            direction: direction.into(),
            fingerprint: "f".into(),
            hostname: "h".into(),
        }
    }

    /// Points with these per-commit values (NaN: every run interfered with) on `kernel(i)`.
    fn points(values: &[f64], kernel: &dyn Fn(usize) -> &'static str) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| Point {
                key: format!("c{i:02}"),
                commit: Some(format!("c{i:02}")),
                subject: None,
                branch: None,
                dirty: false,
                time: i as i64,
                value: v,
                ci_low: v,
                ci_high: v,
                n: 10,
                detect_value: v,
                interfered: 0,
                sessions: vec![SessionRef {
                    id: i as i64,
                    started_at: String::new(),
                    source: None,
                    median: v,
                    ci_low: v,
                    ci_high: v,
                    n: 10,
                    multimodal: false,
                    kernel: kernel(i).into(),
                    os: "os".into(),
                    method: "m".into(),
                    interfered: 0,
                    clean_median: None,
                }],
            })
            .collect()
    }

    fn judge(values: &[f64], kernel: &dyn Fn(usize) -> &'static str, dir: &str) -> Tip {
        let (p, s) = (points(values, kernel), series(dir));
        let settings = DetectSettings::default();
        tip(&p, &s, &changes(&p, &s, &settings), &settings).unwrap()
    }

    const SAME: &dyn Fn(usize) -> &'static str = &|_| "6.1";

    #[test]
    fn a_tip_noisier_than_its_baseline_carries_its_own_noise() {
        let values = [1.0, 1.004, 0.997, 1.002, 0.999, 1.001, 1.05];
        let with_ci = |tip_half: f64| {
            let mut p = points(&values, SAME);
            for (i, q) in p.iter_mut().enumerate() {
                let h = if i == values.len() - 1 {
                    tip_half
                } else {
                    0.02
                };
                (q.ci_low, q.ci_high) = (q.value * (1.0 - h), q.value * (1.0 + h));
            }
            let (s, settings) = (series("lower"), DetectSettings::default());
            tip(&p, &s, &changes(&p, &s, &settings), &settings).unwrap()
        };
        // As noisy as its baseline's sessions: 5% slower is a regression.
        let t = with_ci(0.02);
        assert!(t.regression, "{t:?}");
        // Its session's interval ±30% (a burst of other load): not significant.
        let t = with_ci(0.3);
        assert!(!t.significant && !t.regression, "{t:?}");
        // Narrower than the baseline's adds nothing.
        let (a, b) = (with_ci(0.001).p_value, with_ci(0.02).p_value);
        assert!((a - b).abs() <= 1e-9 * b, "{a} {b}");
    }

    #[test]
    fn the_newest_commit_is_judged_in_the_metrics_bad_direction() {
        let base = [1.0, 1.004, 0.997, 1.002];
        let t = judge(&[&base[..], &[1.2]].concat(), SAME, "lower");
        assert!(
            t.regression && t.kind == "regression" && t.baseline == 4,
            "{t:?}"
        );
        let j = t.judged.unwrap();
        assert!(j.low > 1.0 && t.p_value < 0.01 && (j.ratio - 1.2).abs() < 0.01);
        // Higher is better: the same value is an improvement, a lower one the regression.
        let t = judge(&[&base[..], &[1.2]].concat(), SAME, "higher");
        assert!(!t.regression && t.kind == "improvement", "{t:?}");
        let t = judge(&[&base[..], &[0.8]].concat(), SAME, "higher");
        assert!(t.regression && t.judged.unwrap().high < 1.0, "{t:?}");
        // Significant but below min_effect (1%): not a regression.
        let flat = [1.0, 1.0001, 0.9999, 1.0];
        let t = judge(&[&flat[..], &[1.005]].concat(), SAME, "lower");
        assert!(t.significant && !t.regression, "{t:?}");
    }

    #[test]
    fn the_baseline_leaves_out_interfered_commits_and_stops_at_a_machine_change() {
        // Up to 10 commits before; a commit whose every run was flagged does not count.
        let mut v = vec![1.0; 14];
        v[12] = f64::NAN;
        v.push(1.0);
        let t = judge(&v, SAME, "lower");
        assert_eq!((t.baseline, t.index, t.from), (10, 14, 3), "{t:?}");
        assert_eq!(t.before_key.as_deref(), Some("c13"));
        // The kernel changed 2 commits before the newest: 2 commits of baseline, said so.
        let t = judge(&[1.0; 8], &|i| if i >= 5 { "6.2" } else { "6.1" }, "lower");
        assert!(t.judged.is_none(), "{t:?}");
        let missing = t.missing.unwrap();
        assert!(
            missing == "2 commits of baseline; 3 needed (the baseline starts at the machine change at c05 (kernel 6.1 → 6.2))",
            "{missing}"
        );
        // The newest commit itself changed the machine: no baseline at all.
        let t = judge(&[1.0; 8], &|i| if i >= 7 { "6.2" } else { "6.1" }, "lower");
        assert!(t
            .missing
            .unwrap()
            .starts_with("0 commits of baseline; 3 needed"));
        // Nothing to judge without a value.
        let (p, s) = (points(&[f64::NAN; 3], SAME), series("lower"));
        assert!(tip(&p, &s, &[], &DetectSettings::default()).is_none());
    }

    #[test]
    fn steps_of_a_repeating_count_that_persist_are_changes() {
        let v = [1e6, 1e6, 1.01e6, 1.01e6, 1.0105e6, 1.02e6, 1.01e6, 1.01e6];
        let idx: Vec<usize> = count_steps(&v).iter().map(|c| c.index).collect();
        // 1% up at 2; 0.05% at 4 is none; 1.02e6 at 5 is undone at 6: a blip, not a change.
        assert_eq!(idx, vec![2]);
        // A step at the last point counts (a count repeats: nothing to wait for).
        assert_eq!(count_steps(&[5.0, 5.0, 5.1]).len(), 1);
        assert!(count_steps(&[5.0, 5.004, 5.0]).is_empty());
    }
}
