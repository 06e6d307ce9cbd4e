//! The dashboard's first page, fast on a large store: each series with its newest stored value
//! and its alerts, without reading the series' history. One indexed look-up per candidate
//! series (benchmark × machine × metric): the newest summary by session id through the
//! `summaries_series` index, walked backwards (`+se.machine_id` keeps the planner from
//! scanning the machine's sessions instead); with a branch, the newest at a commit of it. Also
//! the branches the commits name, and which metric of a benchmark the first page shows by
//! default ([`alerting_first`]: the alerting one). Not for: trends (`query.rs`).

use super::db::{Db, Val};
use super::query::Series;
use anyhow::Result;

/// A series with its newest stored value.
#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    pub series: Series,
    pub session_id: i64,
    pub started_at: String,
    pub commit: Option<String>,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Alerts by status: new, acknowledged, dismissed, fixed.
    pub alerts: [i64; 4],
}

/// Every candidate series, its texts cut at the lengths ingest allows (a benchmark's name,
/// parameters and command 4096 characters, a host name 255): a row an older tare stored with
/// a 100 kB host name costs each of the 10,000 series of its machine 255 bytes, not 100 kB.
fn series_rows(db: &mut Db, metric: Option<&str>) -> Result<Vec<Series>> {
    let mut sql = String::from(
        "SELECT b.id, m.id, mc.id, substr(b.name, 1, 4096), substr(b.parameters, 1, 4096), substr(b.command, 1, 4096), \
         m.name, m.unit, m.direction, mc.fingerprint, substr(mc.hostname, 1, 255) \
         FROM benchmarks b, metrics m, machines mc",
    );
    let mut params = Vec::new();
    if let Some(m) = metric {
        sql.push_str(" WHERE m.name = ?");
        params.push(Val::text(m));
    }
    sql.push_str(" ORDER BY b.name, b.parameters, m.id, mc.fingerprint");
    Ok(db
        .query(&sql, &params)?
        .into_iter()
        .map(|r| {
            let mut r = r.into_iter();
            let mut i = || r.next().and_then(|v| v.as_i64()).unwrap_or(0);
            let (b, m, mc) = (i(), i(), i());
            let mut t = || r.next().and_then(Val::into_string).unwrap_or_default();
            Series {
                benchmark_id: b,
                metric_id: m,
                machine_id: mc,
                benchmark: t(),
                parameters: t(),
                command: t(),
                metric: t(),
                unit: t(),
                direction: t(),
                fingerprint: t(),
                hostname: t(),
            }
        })
        .collect())
}

/// One series by its ids, if the store has such a benchmark, metric and machine.
pub fn series_by_ids(db: &mut Db, b: i64, m: i64, mc: i64) -> Result<Option<Series>> {
    let rows = db.query(
        "SELECT b.name, b.parameters, b.command, m.name, m.unit, m.direction, mc.fingerprint, mc.hostname \
         FROM benchmarks b, metrics m, machines mc WHERE b.id = ? AND m.id = ? AND mc.id = ?",
        &[Val::int(b), Val::int(m), Val::int(mc)],
    )?;
    Ok(rows.into_iter().next().map(|r| {
        let mut r = r.into_iter();
        let mut t = || r.next().and_then(Val::into_string).unwrap_or_default();
        Series {
            benchmark_id: b,
            metric_id: m,
            machine_id: mc,
            benchmark: t(),
            parameters: t(),
            command: t(),
            metric: t(),
            unit: t(),
            direction: t(),
            fingerprint: t(),
            hostname: t(),
        }
    }))
}

/// Every series that has a value (of `metric`, when given), with its newest one and its alert
/// counts, ordered by benchmark, parameters, metric and machine.
pub fn latest(db: &mut Db, metric: Option<&str>) -> Result<Vec<Latest>> {
    latest_on(db, metric, None)
}

/// [`latest`] of the sessions at commits of `branch` (every session when None): the series
/// with a value on that branch, each with its newest value there.
pub fn latest_on(db: &mut Db, metric: Option<&str>, branch: Option<&str>) -> Result<Vec<Latest>> {
    latest_where(db, metric, branch, &|_| true)
}

/// The series of one benchmark on one machine (every metric that has a value), with their
/// newest values: what a series page links to beside its own metric.
pub fn benchmark_on(db: &mut Db, benchmark_id: i64, machine_id: i64) -> Result<Vec<Latest>> {
    latest_where(db, None, None, &|s| {
        s.benchmark_id == benchmark_id && s.machine_id == machine_id
    })
}

fn latest_where(
    db: &mut Db,
    metric: Option<&str>,
    branch: Option<&str>,
    keep: &dyn Fn(&Series) -> bool,
) -> Result<Vec<Latest>> {
    let mut alerts: std::collections::HashMap<(i64, i64, i64), [i64; 4]> = Default::default();
    for r in db.query(
        "SELECT benchmark_id, metric_id, machine_id, status, COUNT(*) FROM alerts GROUP BY benchmark_id, metric_id, machine_id, status",
        &[],
    )? {
        let k = (
            r[0].as_i64().unwrap_or(0),
            r[1].as_i64().unwrap_or(0),
            r[2].as_i64().unwrap_or(0),
        );
        if let Some(i) = super::detect::STATUSES
            .iter()
            .position(|s| Some(*s) == r[3].as_str())
        {
            alerts.entry(k).or_default()[i] = r[4].as_i64().unwrap_or(0);
        }
    }
    let ranks = super::query::commit_ranks(db)?;
    let mut out = Vec::new();
    for s in series_rows(db, metric)?.into_iter().filter(|s| keep(s)) {
        let mut params = vec![
            Val::int(s.benchmark_id),
            Val::int(s.metric_id),
            Val::int(s.machine_id),
        ];
        let on_branch = match branch {
            Some(b) => {
                params.push(Val::text(b));
                " AND c.branch = ?"
            }
            None => "",
        };
        // The newest commit's newest session: the commit latest in the repository's order
        // (`query::commit_ranks`), not the last uploaded; one look-up per series.
        let rows = db.query(
            &format!(
                "SELECT s.session_id, se.started_at, c.hash, s.median, s.ci_low, s.ci_high, se.commit_id \
                 FROM summaries s JOIN sessions se ON se.id = s.session_id LEFT JOIN commits c ON c.id = se.commit_id \
                 WHERE s.benchmark_id = ? AND s.metric_id = ? AND +se.machine_id = ?{on_branch}"
            ),
            &params,
        )?;
        let newest = rows.into_iter().max_by_key(|r| {
            (
                r[6].as_i64().and_then(|c| ranks.get(&c).copied()),
                r[0].as_i64(),
            )
        });
        let rows = newest.into_iter();
        let Some(mut r) = rows.into_iter().next() else {
            continue;
        };
        let key = (s.benchmark_id, s.metric_id, s.machine_id);
        out.push(Latest {
            session_id: r[0].as_i64().unwrap_or(0),
            started_at: std::mem::replace(&mut r[1], Val::Text(None))
                .into_string()
                .unwrap_or_default(),
            commit: std::mem::replace(&mut r[2], Val::Text(None)).into_string(),
            median: r[3].as_f64().unwrap_or(f64::NAN),
            ci_low: r[4].as_f64().unwrap_or(f64::NAN),
            ci_high: r[5].as_f64().unwrap_or(f64::NAN),
            alerts: alerts.get(&key).copied().unwrap_or_default(),
            series: s,
        });
    }
    Ok(out)
}

/// A machine's record: fingerprint, host name and the inventory JSON stored with it.
pub fn machine(db: &mut Db, id: i64) -> Result<Option<(String, String, String)>> {
    let rows = db.query(
        "SELECT fingerprint, hostname, inventory FROM machines WHERE id = ?",
        &[Val::int(id)],
    )?;
    Ok(rows.into_iter().next().map(|r| {
        let mut r = r.into_iter();
        let mut t = || r.next().and_then(Val::into_string).unwrap_or_default();
        (t(), t(), t())
    }))
}

/// The machines that measured commit `hash` (id, host name), by id.
pub fn machines_at(db: &mut Db, hash: &str) -> Result<Vec<(i64, String)>> {
    Ok(db
        .query(
            "SELECT DISTINCT mc.id, mc.hostname FROM sessions se JOIN commits c ON c.id = se.commit_id \
             JOIN machines mc ON mc.id = se.machine_id WHERE c.hash = ? ORDER BY mc.id",
            &[Val::text(hash)],
        )?
        .into_iter()
        .map(|r| {
            (
                r[0].as_i64().unwrap_or(0),
                r[1].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

/// The newest stored commits (hash, subject, time), newest first in the repository's order
/// (`query::commit_ranks`: parent links, commit time otherwise), not the order of upload.
pub fn recent_commits(db: &mut Db, limit: usize) -> Result<Vec<(String, String, i64)>> {
    let ranks = super::query::commit_ranks(db)?;
    let mut rows = db.query("SELECT id, hash, subject, time_unix FROM commits", &[])?;
    rows.sort_by_key(|r| std::cmp::Reverse(r[0].as_i64().and_then(|id| ranks.get(&id).copied())));
    rows.truncate(limit.min(10_000));
    Ok(rows
        .into_iter()
        .map(|r| r[1..].to_vec())
        .map(|r| {
            (
                r[0].as_str().unwrap_or_default().to_string(),
                r[1].as_str().unwrap_or_default().to_string(),
                r[2].as_i64().unwrap_or(0),
            )
        })
        .collect())
}

/// The branches the store's commits name, sorted.
pub fn branches(db: &mut Db) -> Result<Vec<String>> {
    Ok(db
        .query(
            "SELECT DISTINCT branch FROM commits WHERE branch IS NOT NULL ORDER BY branch",
            &[],
        )?
        .into_iter()
        .filter_map(|r| r.into_iter().next().and_then(Val::into_string))
        .filter(|b| !b.is_empty())
        .collect())
}

/// The series a reader looks at first, from [`latest`] of every metric: for each benchmark
/// on each machine, the metrics with an open alert (`open`: `detect::open_alerts`), else wall
/// time, else the first metric stored. A step in CPU time is then on the first page, where
/// wall time would hide it. In the order of `all`.
pub fn alerting_first(all: Vec<Latest>, open: &[super::detect::Alert]) -> Vec<Latest> {
    use std::collections::HashMap;
    let alerting = |l: &Latest| {
        open.iter().any(|a| {
            (a.benchmark_id, a.metric_id, a.machine_id)
                == (
                    l.series.benchmark_id,
                    l.series.metric_id,
                    l.series.machine_id,
                )
        })
    };
    // Per benchmark × machine: the index of the series shown when none alerts.
    let mut fallback: HashMap<(i64, i64), usize> = HashMap::new();
    let mut any_alert: HashMap<(i64, i64), bool> = HashMap::new();
    for (i, l) in all.iter().enumerate() {
        let key = (l.series.benchmark_id, l.series.machine_id);
        *any_alert.entry(key).or_default() |= alerting(l);
        match fallback.get(&key) {
            Some(&j) if all[j].series.metric == "wall_time" => {}
            Some(_) if l.series.metric != "wall_time" => {}
            _ => {
                fallback.insert(key, i);
            }
        }
    }
    all.into_iter()
        .enumerate()
        .filter(|(i, l)| {
            let key = (l.series.benchmark_id, l.series.machine_id);
            if any_alert.get(&key).copied().unwrap_or(false) {
                alerting(l)
            } else {
                fallback.get(&key) == Some(i)
            }
        })
        .map(|(_, l)| l)
        .collect()
}

/// The first page's default list: [`alerting_first`] of the series with a value (on `branch`,
/// when given), reading only what it may show — wall time and the series with an open alert,
/// and every metric of a benchmark that has neither — not every metric of every benchmark.
pub fn alerting_latest(
    db: &mut Db,
    branch: Option<&str>,
    open: &[super::detect::Alert],
) -> Result<Vec<Latest>> {
    let alerting = |s: &Series| {
        open.iter().any(|a| {
            (a.benchmark_id, a.metric_id, a.machine_id)
                == (s.benchmark_id, s.metric_id, s.machine_id)
        })
    };
    let mut rows = latest_where(db, None, branch, &|s| {
        s.metric == "wall_time" || alerting(s)
    })?;
    let seen: std::collections::HashSet<i64> = rows.iter().map(|l| l.series.benchmark_id).collect();
    rows.extend(latest_where(db, None, branch, &|s| {
        !seen.contains(&s.benchmark_id)
    })?);
    // Back in the order of `latest`.
    rows.sort_by(|a, b| {
        let k = |l: &Latest| {
            (
                l.series.benchmark.clone(),
                l.series.parameters.clone(),
                l.series.metric_id,
                l.series.fingerprint.clone(),
            )
        };
        k(a).cmp(&k(b))
    });
    Ok(alerting_first(rows, open))
}

/// Alerts with their series (None when the store has no such benchmark, metric or machine).
pub fn with_series(
    db: &mut Db,
    list: Vec<super::detect::Alert>,
) -> Result<Vec<(super::detect::Alert, Option<Series>)>> {
    let mut out = Vec::with_capacity(list.len());
    for a in list {
        let s = series_by_ids(db, a.benchmark_id, a.metric_id, a.machine_id)?;
        out.push((a, s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::detect::Alert;

    fn row(b: i64, m: i64, mc: i64, metric: &str) -> Latest {
        Latest {
            series: Series {
                benchmark_id: b,
                metric_id: m,
                machine_id: mc,
                benchmark: format!("b{b}"),
                parameters: "{}".into(),
                command: String::new(),
                metric: metric.into(),
                unit: "s".into(),
                direction: "lower".into(),
                fingerprint: format!("f{mc}"),
                hostname: format!("h{mc}"),
            },
            session_id: 1,
            started_at: String::new(),
            commit: None,
            median: 1.0,
            ci_low: 1.0,
            ci_high: 1.0,
            alerts: [0; 4],
        }
    }

    fn alert(b: i64, m: i64, mc: i64) -> Alert {
        Alert {
            id: 1,
            benchmark_id: b,
            metric_id: m,
            machine_id: mc,
            commit_key: "c".into(),
            before_key: "b".into(),
            kind: "regression".into(),
            ratio: 1.2,
            ratio_low: 1.1,
            ratio_high: 1.3,
            p_value: 0.01,
            status: "new".into(),
            note: String::new(),
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    fn shown(rows: &[Latest]) -> Vec<(i64, &str, i64)> {
        rows.iter()
            .map(|l| {
                (
                    l.series.benchmark_id,
                    l.series.metric.as_str(),
                    l.series.machine_id,
                )
            })
            .collect()
    }

    #[test]
    fn the_alerting_metric_is_shown_where_wall_time_would_hide_it() {
        // Benchmark 1 on machines 1 and 2, benchmark 2 (counts only) on machine 1.
        let all = vec![
            row(1, 1, 1, "wall_time"),
            row(1, 1, 2, "wall_time"),
            row(1, 2, 1, "cpu_time"),
            row(1, 2, 2, "cpu_time"),
            row(2, 6, 1, "instructions"),
            row(2, 7, 1, "cycles"),
        ];
        // No alert: wall time, else the first metric.
        assert_eq!(
            shown(&alerting_first(all.clone(), &[])),
            [
                (1, "wall_time", 1),
                (1, "wall_time", 2),
                (2, "instructions", 1)
            ]
        );
        // CPU time alerts on machine 2, cycles on benchmark 2: those replace the default.
        let open = [alert(1, 2, 2), alert(2, 7, 1)];
        assert_eq!(
            shown(&alerting_first(all, &open)),
            [(1, "wall_time", 1), (1, "cpu_time", 2), (2, "cycles", 1)]
        );
    }
}
