//! The verdict of each comparison, drawn by one procedure with its interval ([`finish`]): the
//! level adjusted for the comparisons drawn (Bonferroni, 1 − α/m), the procedure chosen by
//! the data ([`small_sample`]: Welch's t on logs where the rank test could not reach the
//! level), and the classification — faster, slower (the interval excludes 1), no significant
//! difference (it includes 1, or the change is under the noise threshold), equal within
//! noise, inconclusive — with its words.
//!
//! For: turning the raw interval and test of each pair into a [`Comparison`]. Not for:
//! drawing the interval (`compare.rs`) or the lines a command prints about the model
//! (`lines.rs`).

use super::{mean, Comparison, Outcome, Procedure, Raw, Settings, Test};
use crate::stats;

pub(super) fn test_p(x: &[f64], y: &[f64], test: Test) -> Option<f64> {
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

/// Whether a comparison of `n` vs `m` processes is too small for the rank test at the level
/// its verdict needs (`need`, α/m): the exact Mann–Whitney test's smallest attainable p-value
/// is at least `need` (3 vs 3 at α 0.05: 0.1; 4 vs 4 from 2 comparisons on: 0.029 ≥ 0.025).
/// Such a comparison is drawn by Welch's t on the logs of its values, which has power there;
/// the rule does not depend on `--test`.
pub fn small_sample(n: usize, m: usize, need: f64) -> bool {
    smallest_p(n, m, Test::MannWhitney).is_some_and(|p| p >= need)
}

/// The level of an interval in words: "95% CI", or "97.5% CI" with ", adjusted for 2
/// comparisons" where the level was adjusted.
pub fn level_words(level: f64, adjusted_for: usize) -> (String, String) {
    let pct = format!("{:.2}", 100.0 * level);
    let pct = pct.trim_end_matches('0').trim_end_matches('.');
    let adj = if adjusted_for > 1 {
        format!(", adjusted for {adjusted_for} comparisons")
    } else {
        String::new()
    };
    (format!("{pct}% CI"), adj)
}

/// One comparison's interval, p-value and procedure at `level`.
struct Drawn {
    interval: stats::Interval,
    p: Option<f64>,
    procedure: Procedure,
    /// The paired ratio and its rounds ([`Procedure::Paired`]).
    paired: Option<(f64, usize)>,
}

/// Draws the interval and p-value of one comparison at `level`, by the one procedure its data
/// call for: paired by round where it has the rounds; one session a side by its thirds; too
/// few processes for the rank test at `need` by Welch's t on logs; otherwise the expanded
/// bootstrap of the ratio of means. None where none can be drawn (a blocker, a side with
/// fewer than two units, values not positive).
fn draw(r: &Raw, level: f64, need: f64, s: &Settings) -> Option<Drawn> {
    let iv = |estimate: f64, low: f64, high: f64| stats::Interval {
        estimate,
        low,
        high,
        confidence: level,
    };
    if let Some((a, b)) = &r.rounds {
        if let Some(p) = stats::paired_ratio::paired_ratio(a, b, level) {
            return Some(Drawn {
                interval: iv(p.ratio, p.low, p.high),
                p: Some(p.p_value),
                procedure: Procedure::Paired,
                paired: Some((p.ratio, a.len())),
            });
        }
    }
    if r.level.as_ref().is_some_and(|l| l.blocker.is_some()) {
        return None;
    }
    let (x, y) = (&r.x, &r.y);
    if r.level.as_ref().is_some_and(|l| l.thirds) {
        let t = stats::session_ratio::thirds_ratio(x, y, level)?;
        return Some(Drawn {
            interval: iv(t.ratio, t.low, t.high),
            p: Some(t.p_value),
            procedure: Procedure::Thirds,
            paired: None,
        });
    }
    if x.len() < 2 || y.len() < 2 {
        return None;
    }
    if small_sample(x.len(), y.len(), need) {
        let w = stats::welch_ratio::welch_log_ratio(x, y, level)?;
        return Some(Drawn {
            interval: iv(w.ratio, w.low, w.high),
            p: Some(w.p_value),
            procedure: Procedure::WelchLogs,
            paired: None,
        });
    }
    // Expanded: with few processes a plain percentile interval of a mean covers ~88% where it
    // claims 95% (stats::mean_ratio).
    let b = stats::bootstrap_ratio_of_means(x, y, level, s.resamples, s.seed, true)?;
    Some(Drawn {
        interval: b,
        p: test_p(x, y, s.test),
        procedure: Procedure::Bootstrap,
        paired: None,
    })
}

/// The verdicts of a family of comparisons, each from ONE procedure: the m comparisons that
/// can be drawn get their intervals at level 1 − α/m (Bonferroni), and a difference is called
/// exactly when that interval excludes 1 (and the change is at least the noise threshold),
/// so the interval printed beside a verdict is the one the verdict was drawn from. The
/// p-values are adjusted alike (m·p, at most 1); for the t procedures p·m < α exactly when the
/// interval excludes 1, for the bootstrap the p-value is `--test`'s, for reference only.
pub(super) fn finish(raws: Vec<Raw>, s: &Settings) -> Vec<Comparison> {
    let first: Vec<Option<Drawn>> = raws
        .iter()
        .map(|r| draw(r, 1.0 - s.alpha, s.alpha, s))
        .collect();
    let m = first.iter().filter(|d| d.is_some()).count().max(1);
    let level = 1.0 - s.alpha / m as f64;
    let drawn: Vec<Option<Drawn>> = if m == 1 {
        first
    } else {
        raws.iter()
            .map(|r| draw(r, level, s.alpha / m as f64, s))
            .collect()
    };
    raws.into_iter()
        .zip(drawn)
        .map(|(r, d)| classify(r, d, m, level, s))
        .collect()
}

fn geometric_mean(xs: &[f64]) -> f64 {
    (xs.iter().map(|v| v.ln()).sum::<f64>() / xs.len() as f64).exp()
}

fn pct(x: f64) -> String {
    format!("{:+.2}%", (x - 1.0) * 100.0)
}

fn classify(r: Raw, d: Option<Drawn>, m: usize, level: f64, s: &Settings) -> Comparison {
    let Raw {
        x,
        y,
        samples,
        processes,
        level: session,
        rounds: _,
    } = r;
    // The values printed beside the ratio are the ones it is of: the geometric means where
    // the procedure works on logs (its ratio is exp(mean log y − mean log x)).
    let (om, nm) = if d
        .as_ref()
        .is_some_and(|d| d.procedure == Procedure::WelchLogs)
    {
        (geometric_mean(&x), geometric_mean(&y))
    } else {
        (mean(&x), mean(&y))
    };
    let paired = d.as_ref().and_then(|d| d.paired);
    let ratio = match &d {
        Some(d) if d.procedure != Procedure::Bootstrap => d.interval.estimate,
        _ => nm / om,
    };
    let unit = session.as_ref().map_or("process", |l| l.unit);
    let mut c = Comparison {
        old_processes: processes.0,
        new_processes: processes.1,
        old_samples: samples.0,
        new_samples: samples.1,
        old_median: om,
        new_median: nm,
        ratio,
        ci: d.as_ref().map(|d| (d.interval.low, d.interval.high)),
        confidence: level,
        p_value: d.as_ref().and_then(|d| d.p),
        p_adjusted: d
            .as_ref()
            .and_then(|d| d.p)
            .map(|p| (p * m as f64).min(1.0)),
        outcome: Outcome::Inconclusive,
        why: Vec::new(),
        words: String::new(),
        session: session.clone(),
        paired_rounds: paired.map(|(_, k)| k),
        procedure: d.as_ref().map(|d| d.procedure),
        adjusted_for: m,
    };
    let units = if unit == "session" {
        "sessions"
    } else {
        "processes"
    };
    let counts = match (paired, c.procedure) {
        (Some((_, k)), _) => format!("{} vs {} {units}, paired over {k} rounds", x.len(), y.len()),
        (None, Some(Procedure::WelchLogs)) => format!(
            "{} vs {} {units}, Welch's t on logs: too few for the rank test",
            x.len(),
            y.len()
        ),
        _ => format!("{} vs {} {units}", x.len(), y.len()),
    };
    if let Some(blocker) = session.as_ref().and_then(|l| l.blocker.clone()) {
        c.why.push(blocker.clone());
        c.words = format!(
            "inconclusive: {blocker} ({counts}): give several sessions a side, measured alternately (old, new, old, new …; `tare compare old/ new/`), or measure both in one session (`tare run OLD NEW`)"
        );
        return c;
    }
    let Some(d) = d else {
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
        } else {
            c.why.push("no interval or test on these values".into());
            c.words = format!("inconclusive: no interval or test could be computed ({counts})");
        }
        return c;
    };
    let iv = d.interval;
    let (conf, adj) = level_words(level, m);
    let dp = if iv.high - iv.low < 0.002 { 4 } else { 3 };
    let ci_words = format!("{conf} {:.dp$}–{:.dp$}{adj}", iv.low, iv.high);
    if iv.low >= 1.0 - s.noise && iv.high <= 1.0 + s.noise {
        c.outcome = Outcome::EqualWithinNoise;
        c.words = format!(
            "equal within noise (new/old {ci_words}, within ±{:.1}%; {counts})",
            100.0 * s.noise
        );
        return c;
    }
    let excludes = iv.low > 1.0 || iv.high < 1.0;
    if !excludes {
        c.why.push(format!(
            "CI {:.dp$}–{:.dp$} includes 1 at {}{adj}",
            iv.low,
            iv.high,
            conf.trim_end_matches(" CI")
        ));
        c.outcome = Outcome::NoSignificantDifference;
        c.words = format!("no significant difference ({}; {counts})", c.why.join("; "));
        return c;
    }
    if (ratio - 1.0).abs() < s.noise {
        // The interval excludes 1, but the change is under what the user calls one.
        c.why.push(format!(
            "change {} below the ±{:.1}% noise threshold",
            pct(ratio),
            100.0 * s.noise
        ));
        c.outcome = Outcome::NoSignificantDifference;
        c.words = format!(
            "below the noise threshold (change {} within ±{:.1}%, though {ci_words} excludes 1; {counts})",
            pct(ratio),
            100.0 * s.noise
        );
        return c;
    }
    if ratio < 1.0 {
        c.outcome = Outcome::Faster;
        c.words = format!(
            "new is {:.3}× faster ({conf} {:.3}–{:.3}{adj}; {counts})",
            1.0 / ratio,
            1.0 / iv.high,
            1.0 / iv.low,
        );
    } else {
        c.outcome = Outcome::Slower;
        c.words = format!("new is {:.3}× slower ({ci_words}; {counts})", ratio);
    }
    c
}
