//! The session level of a comparison across results files ([`session_level`]): whether the
//! processes of several sessions may be pooled (the F test, [`POOL_P`]), a session is the
//! unit, or one session a side is judged by its thirds ([`THIRDS_MIN_PROCESSES`]).
//!
//! For: deciding the unit and the values the interval and test are drawn over, with the note
//! or blocker that says why. Not for: drawing the interval and test (`compare.rs`) or the
//! verdict (`verdict.rs`).

use super::{mean, process_values, Sessions};
use crate::stats;
use serde::Serialize;

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
