//! The verdict of each comparison: the test's p-value, Holm across the pairs that could be
//! tested ([`finish`]), and the classification — faster, slower, no significant difference
//! (each failed criterion named), equal within noise, inconclusive — with its words.
//!
//! For: turning the raw interval and test of each pair into a [`Comparison`]. Not for:
//! drawing the interval (`compare.rs`) or the lines a command prints about the model
//! (`lines.rs`).

use super::{mean, Comparison, Outcome, Raw, Settings, Test};
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

pub(super) fn finish(raws: Vec<Raw>, s: &Settings) -> Vec<Comparison> {
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
