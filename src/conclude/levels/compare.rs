//! The comparisons at each level: one session's processes ([`compare`]), the same with
//! processes paired by round ([`compare_rounds`]), and sides from separate sessions
//! ([`compare_sessions`]); each gathers the values every pair's interval and verdict are
//! drawn from (`verdict.rs`).
//!
//! For: the values of each `(old, new)` pair. Not for: the session level's rule
//! (`session.rs`), the procedure, level and verdict in words (`verdict.rs`).

use super::session::session_level;
use super::verdict::finish;
use super::{
    mean, process_values, ByRound, Comparison, Groups, Raw, SessionLevel, Sessions, Settings,
};
use std::collections::BTreeMap;

/// Compares each `(old, new)` pair of sample groups (one group per process) of ONE session —
/// processes of both sides interleaved in time, as `tare kernels` runs them — under the model;
/// intervals at 1 − α/m across the m pairs that could be drawn (`verdict.rs`).
pub fn compare(pairs: &[(Groups, Groups)], s: &Settings) -> Vec<Comparison> {
    let raws: Vec<Raw> = pairs
        .iter()
        .map(|(old, new)| Raw::new(process_values(old), process_values(new), old, new, None))
        .collect();
    finish(raws, s)
}

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
            let mut raw = Raw::new(process_values(&og), process_values(&ng), &og, &ng, None);
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
                raw.rounds = Some((x, y));
            }
            raw
        })
        .collect();
    finish(raws, s)
}

/// Compares each `(old, new)` pair of sides measured in separate sessions (results files):
/// the session level is checked first ([`session_level`]), and the interval and test are
/// drawn over processes or, where sessions differ, over sessions; p-values are
/// intervals at 1 − α/m across the m pairs that could be drawn (`verdict.rs`).
pub fn compare_sessions(pairs: &[(Sessions, Sessions)], s: &Settings) -> Vec<Comparison> {
    let raws: Vec<Raw> = pairs
        .iter()
        .map(|(old, new)| {
            let (level, x, y) = session_level(old, new);
            let flat = |side: &Sessions| side.iter().flatten().cloned().collect::<Groups>();
            Raw::new(x, y, &flat(old), &flat(new), Some(level))
        })
        .collect();
    finish(raws, s)
}

impl Raw {
    fn new(
        x: Vec<f64>,
        y: Vec<f64>,
        old: &Groups,
        new: &Groups,
        level: Option<SessionLevel>,
    ) -> Raw {
        let samples = (
            old.iter().map(Vec::len).sum(),
            new.iter().map(Vec::len).sum(),
        );
        let count = |g: &Groups| g.iter().filter(|p| !p.is_empty()).count();
        Raw {
            x,
            y,
            samples,
            processes: (count(old), count(new)),
            level,
            rounds: None,
        }
    }
}
