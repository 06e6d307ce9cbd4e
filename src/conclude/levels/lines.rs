//! The lines each command prints about a comparison's model: the unit of replication and the
//! counts ([`model_line`]) and what the session level rested on ([`session_lines`]).
//!
//! For: formatting what the comparisons were drawn over. Not for: a benchmark's own verdict in
//! words (`verdict.rs`) or rendering comparisons (`report::comparison`).

use super::{Comparison, SessionLevel, Test};

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
    let welch = comparisons
        .iter()
        .filter(|c| c.procedure == Some(super::Procedure::WelchLogs))
        .count();
    let drawn = comparisons.iter().filter(|c| c.procedure.is_some()).count();
    let bootstrap =
        format!("bootstrap CI over processes (expanded for few), {test_name} p for reference");
    let mut method = match thirds {
        0 if welch > 0 && welch == drawn => {
            "Welch's t on log per-process values (their geometric means compared), CI and verdict (too few processes for the rank test at the level)".to_string()
        }
        0 => bootstrap,
        n if n == comparisons.len() => {
            "CI and t test (2 df) from each session's thirds (one session a side)".to_string()
        }
        n => format!(
            "{bootstrap}; for {n} with one session a side, CI and t test (2 df) from each session's thirds"
        ),
    };
    if welch > 0 && welch < drawn {
        method.push_str(&format!(
            "; for {welch} with too few processes for the rank test at the level, Welch's t on log per-process values (geometric means)"
        ));
    }
    let m = comparisons
        .iter()
        .map(|c| c.adjusted_for)
        .max()
        .unwrap_or(1);
    let level = 1.0
        - comparisons
            .iter()
            .find(|c| c.adjusted_for == m)
            .map_or(0.05, |c| 1.0 - c.confidence);
    let (conf, _) = super::level_words(level, m);
    let verdict = if m > 1 {
        format!("verdict: its {conf} (adjusted for {m} comparisons) excludes 1")
    } else {
        format!("verdict: its {conf} excludes 1")
    };
    format!(
        "unit: process ({}){}; {} vs {} processes{} ({} vs {} samples); ratio of means of per-process means, {method}; {verdict} ({})",
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
