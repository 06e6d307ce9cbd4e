//! The alerts a series' changes and its newest commit's judgment raise, and their lifecycle in
//! the `alerts` table (see [`super`]'s documentation): stored, listed, matched to the changes
//! found again, dismissed when no longer found, fixed when undone.

use super::{short, tip, Change, DetectSettings, Tip};
use crate::stats::next_value::NextValue;
use crate::store::db::{Db, Val};
use crate::store::query::{Point, Series};
use anyhow::Result;

/// A stored alert.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub id: i64,
    pub benchmark_id: i64,
    pub metric_id: i64,
    pub machine_id: i64,
    /// Commit key of the first point of the new level, and of the last before it.
    pub commit_key: String,
    pub before_key: String,
    pub kind: String,
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    pub p_value: f64,
    /// `new`, `acknowledged`, `dismissed` or `fixed`.
    pub status: String,
    pub note: String,
    pub created_at: String,
    pub updated_at: String,
}

/// The note of an alert dismissed because its change is no longer found.
const NOT_FOUND: &str = "no longer detected";

/// The note of an alert raised by the judgment of the newest commit.
pub const TIP_NOTE: &str = "newest commit judged";

/// The note of such an alert once the change-point search found its change.
const TIP_FOUND: &str = "raised at the newest commit, then found by the change-point search";

impl Alert {
    /// What `ratio_low`–`ratio_high` is: "95% CI" (a change's bootstrap interval), or for an
    /// alert raised by the judgment of the newest commit (and not yet found by the search) its
    /// interval, "98% interval".
    pub fn interval_name(&self) -> String {
        self.note
            .strip_prefix(TIP_NOTE)
            .and_then(|r| r.rsplit("; ").next())
            .filter(|x| x.ends_with("% interval"))
            .map_or_else(|| "95% CI".into(), str::to_string)
    }
}

pub const STATUSES: &[&str] = &["new", "acknowledged", "dismissed", "fixed"];

const ALERT_COLUMNS: &str = "id, benchmark_id, metric_id, machine_id, commit_key, before_key, kind, ratio, ratio_low, ratio_high, p_value, status, note, created_at, updated_at";

fn alert_of(r: Vec<Val>) -> Alert {
    let mut r = r.into_iter();
    let mut next = || r.next().unwrap_or(Val::Text(None));
    let (id, b, m, mc) = (next(), next(), next(), next());
    let t = |v: Val| v.into_string().unwrap_or_default();
    let f = |v: Val| v.as_f64().unwrap_or(f64::NAN);
    Alert {
        id: id.as_i64().unwrap_or(0),
        benchmark_id: b.as_i64().unwrap_or(0),
        metric_id: m.as_i64().unwrap_or(0),
        machine_id: mc.as_i64().unwrap_or(0),
        commit_key: t(next()),
        before_key: t(next()),
        kind: t(next()),
        ratio: f(next()),
        ratio_low: f(next()),
        ratio_high: f(next()),
        p_value: f(next()),
        status: t(next()),
        note: t(next()),
        created_at: t(next()),
        updated_at: t(next()),
    }
}

/// Alerts, oldest first; `statuses` empty means all.
pub fn alerts(db: &mut Db, statuses: &[&str]) -> Result<Vec<Alert>> {
    let rows = db.query(
        &format!("SELECT {ALERT_COLUMNS} FROM alerts ORDER BY id"),
        &[],
    )?;
    Ok(rows
        .into_iter()
        .map(alert_of)
        .filter(|a| statuses.is_empty() || statuses.contains(&a.status.as_str()))
        .collect())
}

/// Alerts of one series.
pub fn series_alerts(db: &mut Db, s: &Series) -> Result<Vec<Alert>> {
    let rows = db.query(
        &format!("SELECT {ALERT_COLUMNS} FROM alerts WHERE benchmark_id = ? AND metric_id = ? AND machine_id = ? ORDER BY id"),
        &[Val::int(s.benchmark_id), Val::int(s.metric_id), Val::int(s.machine_id)],
    )?;
    Ok(rows.into_iter().map(alert_of).collect())
}

/// Sets an alert's status (and note, when given). False when there is no such alert.
pub fn set_status(
    db: &mut Db,
    id: i64,
    status: &str,
    note: Option<&str>,
    now: &str,
) -> Result<bool> {
    let n = match note {
        Some(note) => db.exec(
            "UPDATE alerts SET status = ?, note = ?, updated_at = ? WHERE id = ?",
            &[
                Val::text(status),
                Val::text(note),
                Val::text(now),
                Val::int(id),
            ],
        )?,
        None => db.exec(
            "UPDATE alerts SET status = ?, updated_at = ? WHERE id = ?",
            &[Val::text(status), Val::text(now), Val::int(id)],
        )?,
    };
    Ok(n > 0)
}

/// Brings the series' alerts up to date with `changes` and the judgment of its newest commit
/// under the default settings (see the module documentation); returns the ids of alerts created
/// `new` by this call.
pub fn update_alerts(
    db: &mut Db,
    s: &Series,
    points: &[Point],
    changes: &[Change],
    now: &str,
) -> Result<Vec<i64>> {
    let settings = DetectSettings::default();
    let t = tip(points, s, changes, &settings);
    update_alerts_with(db, s, points, changes, t.as_ref(), &settings, now)
}

/// [`update_alerts`] with the tip judged as the caller did (`tip`, under `settings`).
pub fn update_alerts_with(
    db: &mut Db,
    s: &Series,
    points: &[Point],
    changes: &[Change],
    tip: Option<&Tip>,
    settings: &DetectSettings,
    now: &str,
) -> Result<Vec<i64>> {
    let pos = |key: &str| points.iter().position(|p| p.key == key);
    let existing = series_alerts(db, s)?;
    let mut matched: Vec<i64> = Vec::new();
    let mut created = Vec::new();
    for c in changes.iter().filter(|c| c.alerted) {
        // The same level shift: an alert of the same kind at a commit between the change
        // points on either side (the estimate may move as commits and trials are added),
        // the nearest one first.
        let same = existing
            .iter()
            .filter(|a| {
                a.kind == c.kind
                    && !matched.contains(&a.id)
                    && pos(&a.commit_key).is_some_and(|p| p > c.from && p < c.to)
            })
            .min_by_key(|a| pos(&a.commit_key).map(|p| p.abs_diff(c.index)));
        match same {
            Some(a) => {
                matched.push(a.id);
                // Found again after it was dismissed for not being found: open again, but
                // not new (the gate already failed on it once).
                if a.status == "dismissed" && a.note.starts_with(NOT_FOUND) {
                    set_status(db, a.id, "new", Some("found again"), now)?;
                }
                // Raised at the newest commit, found by the search now: its numbers are the
                // change's from here on.
                if a.note.starts_with(TIP_NOTE) {
                    set_status(db, a.id, &a.status, Some(TIP_FOUND), now)?;
                }
                db.exec(
                    "UPDATE alerts SET commit_key = ?, before_key = ?, ratio = ?, ratio_low = ?, ratio_high = ?, p_value = ?, updated_at = ? WHERE id = ?",
                    &[
                        Val::text(&c.after_key),
                        Val::text(&c.before_key),
                        Val::real(c.ratio.estimate),
                        Val::real(c.ratio.low),
                        Val::real(c.ratio.high),
                        Val::real(c.p_value),
                        Val::text(now),
                        Val::int(a.id),
                    ],
                )?;
            }
            None => {
                let (status, mut note) = match &c.machine_change {
                    Some(m) => (
                        "dismissed",
                        format!("the machine changed here ({m}): annotated, not alarmed"),
                    ),
                    None => ("new", String::new()),
                };
                if c.multimodal {
                    if !note.is_empty() {
                        note.push_str("; ");
                    }
                    note.push_str("multimodal runs after the change");
                }
                let id = db.insert_id(
                    "INSERT INTO alerts (benchmark_id, metric_id, machine_id, commit_key, before_key, kind, ratio, ratio_low, ratio_high, p_value, status, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    &[
                        Val::int(s.benchmark_id),
                        Val::int(s.metric_id),
                        Val::int(s.machine_id),
                        Val::text(&c.after_key),
                        Val::text(&c.before_key),
                        Val::text(&c.kind),
                        Val::real(c.ratio.estimate),
                        Val::real(c.ratio.low),
                        Val::real(c.ratio.high),
                        Val::real(c.p_value),
                        Val::text(status),
                        Val::text(note),
                        Val::text(now),
                        Val::text(now),
                    ],
                )?;
                matched.push(id);
                if status == "new" {
                    created.push(id);
                }
            }
        }
    }
    if let Some(t) = tip.filter(|t| t.regression) {
        // The same level shift: a regression found by the search at the tip, or an alert at a
        // commit after the baseline's first up to the tip (raised when an earlier tip was
        // judged: the tips after a step match it), the newest first.
        let found = changes
            .iter()
            .any(|c| c.alerted && c.kind == "regression" && c.index == t.index);
        let same = existing
            .iter()
            .filter(|a| {
                a.kind == "regression"
                    && pos(&a.commit_key).is_some_and(|p| p > t.from && p <= t.index)
            })
            .max_by_key(|a| pos(&a.commit_key));
        match (found, same) {
            (true, _) => {}
            (false, Some(a)) => {
                matched.push(a.id);
                if a.status == "dismissed" && a.note.starts_with(NOT_FOUND) {
                    set_status(db, a.id, "new", Some("found again"), now)?;
                }
            }
            (false, None) => {
                let j = t.judged.unwrap_or(NextValue {
                    ratio: f64::NAN,
                    low: f64::NAN,
                    high: f64::NAN,
                    t: f64::NAN,
                    p_higher: f64::NAN,
                    p_lower: f64::NAN,
                    df: f64::NAN,
                    confidence: f64::NAN,
                });
                let id = db.insert_id(
                    "INSERT INTO alerts (benchmark_id, metric_id, machine_id, commit_key, before_key, kind, ratio, ratio_low, ratio_high, p_value, status, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    &[
                        Val::int(s.benchmark_id),
                        Val::int(s.metric_id),
                        Val::int(s.machine_id),
                        Val::text(&t.key),
                        Val::text(t.before_key.as_deref().unwrap_or("")),
                        Val::text("regression"),
                        Val::real(j.ratio),
                        Val::real(j.low),
                        Val::real(j.high),
                        Val::real(t.p_value),
                        Val::text("new"),
                        Val::text(format!(
                            "{TIP_NOTE} against the {} before it; {:.0}% interval",
                            crate::units::plural(t.baseline, "commit"),
                            100.0 * j.confidence
                        )),
                        Val::text(now),
                        Val::text(now),
                    ],
                )?;
                matched.push(id);
                created.push(id);
            }
        }
    }
    // An alert with fewer than `min_size` commits after it is too new for the search to find
    // its change (one raised at the tip): it is kept until the search can see it.
    let too_new = |key: &str| {
        pos(key).is_some_and(|p| points.len() - 1 - p < settings.changepoint.min_size.max(1))
    };
    // Only an alert at a commit among `points` can be judged no longer found: one at a commit
    // these points leave out (another branch's, under `check --commit`; older than the
    // window) is not looked at.
    for a in &existing {
        if a.status == "new"
            && !matched.contains(&a.id)
            && pos(&a.commit_key).is_some()
            && !too_new(&a.commit_key)
        {
            set_status(
                db,
                a.id,
                "dismissed",
                Some(&format!("{NOT_FOUND} with {} commits", points.len())),
                now,
            )?;
        }
    }
    // A regression undone by a later improvement back to (near) the old level is fixed.
    for a in series_alerts(db, s)? {
        if a.kind != "regression" || !(a.status == "new" || a.status == "acknowledged") {
            continue;
        }
        let Some(k) = pos(&a.commit_key) else {
            continue;
        };
        let Some(c0) = changes.iter().find(|c| c.index == k) else {
            continue;
        };
        let undo = changes.iter().find(|c| {
            c.index > k
                && c.kind == "improvement"
                && c.alerted
                && (c.level_after - c0.level_before).abs()
                    <= 0.5 * (c0.level_after - c0.level_before).abs()
        });
        if let Some(u) = undo {
            set_status(
                db,
                a.id,
                "fixed",
                Some(&format!("fixed at {}", short(&u.after_key))),
                now,
            )?;
        }
    }
    Ok(created)
}

/// The statuses of an open alert: `new` and `acknowledged` (one that still stands: seen or
/// not). `dismissed` and `fixed` are closed.
pub const OPEN: &[&str] = &["new", "acknowledged"];

/// The open alerts of the store, oldest first: every metric, machine and benchmark, none
/// paged away. Every view that lists open alerts lists these (`history show`, `check` and its
/// Markdown summary, `alerts`, `report`, the server's pages and `GET /api/v1/alerts`).
pub fn open_alerts(db: &mut Db) -> Result<Vec<Alert>> {
    alerts(db, OPEN)
}

impl Tip {
    /// The regression alert this judgment raised or matched: the newest at a commit after the
    /// baseline's first, up to the tip (as [`update_alerts_with`] matches them).
    pub fn alert<'a>(&self, points: &[Point], alerts: &'a [Alert]) -> Option<&'a Alert> {
        if !self.regression {
            return None;
        }
        alerts.iter().rfind(|a| {
            a.kind == "regression"
                && points
                    .iter()
                    .position(|p| p.key == a.commit_key)
                    .is_some_and(|p| p > self.from && p <= self.index)
        })
    }
}
