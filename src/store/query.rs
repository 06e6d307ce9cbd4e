//! Reading history back: the series in a store (benchmark × metric × machine) and one
//! series' trend, one point per commit. The same SQL runs on both backends and gives the same
//! answers (`tests/store_backends.rs`). Not for: change points (`detect.rs`) or display.
//!
//! A point is a commit (or, for a session stored without one, that session). Several sessions
//! of one commit — trials run again on the same machine — are merged: the point's value is the
//! median of the sessions' medians, its interval the median of their interval bounds, `n` the
//! sum of their counted runs. Points are in the repository's order ([`order`]): where the store
//! knows commits' parents, ancestry (a parent before its children, whatever the commit times
//! say: a rebased commit keeps an older date; a session that arrived late lands at its commit);
//! otherwise, and between commits not linked, commit time, then session start. Each point
//! also carries its clean value (`detect_value`): the same merge over the sessions'
//! medians without the runs tare flagged as interfered with (what detection makes of it is its
//! `--interfered` policy, `detect::Interfered`).

use super::db::{Db, Val};
use anyhow::Result;

/// One series: a benchmark's metric on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub benchmark_id: i64,
    pub metric_id: i64,
    pub machine_id: i64,
    pub benchmark: String,
    /// Parameters as JSON (`{}` when none).
    pub parameters: String,
    pub command: String,
    pub metric: String,
    pub unit: String,
    /// `lower` (smaller is better) or `higher`.
    pub direction: String,
    pub fingerprint: String,
    pub hostname: String,
}

impl Series {
    /// The benchmark's name with its parameters, e.g. `sort (n=100)`.
    pub fn label(&self) -> String {
        let params: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&self.parameters).unwrap_or_default();
        if params.is_empty() {
            self.benchmark.clone()
        } else {
            let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{} ({})", self.benchmark, p.join(", "))
        }
    }
}

/// One stored session's contribution to a point.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRef {
    pub id: i64,
    pub started_at: String,
    pub source: Option<String>,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: i64,
    pub multimodal: bool,
    /// Kernel, OS and measurement method: what may change on the same machine.
    pub kernel: String,
    pub os: String,
    pub method: String,
    /// Counted runs tare flagged as interfered with, and the median of the others (`None`
    /// when none was flagged, or all were).
    pub interfered: i64,
    pub clean_median: Option<f64>,
}

impl SessionRef {
    /// The value change-point detection uses: the median without the runs flagged as
    /// interfered with; NaN when every counted run was (the session is left out).
    pub fn detect_value(&self) -> f64 {
        if self.interfered == 0 {
            self.median
        } else {
            self.clean_median.unwrap_or(f64::NAN)
        }
    }
}

/// One point of a trend: a commit (or a session without one).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The commit hash, or `session:<id>` for a session stored without a commit.
    pub key: String,
    pub commit: Option<String>,
    pub subject: Option<String>,
    pub branch: Option<String>,
    pub dirty: bool,
    /// Commit time (or session start), seconds since the epoch.
    pub time: i64,
    pub value: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: i64,
    /// The median of the sessions' values without their interfered runs; NaN when every run
    /// of the point was interfered with. What detection uses depends on its policy
    /// (`detect::Interfered::value`).
    pub detect_value: f64,
    /// Counted runs left out of detection as interfered with.
    pub interfered: i64,
    pub sessions: Vec<SessionRef>,
}

impl Point {
    /// A short name: the abbreviated hash, or the session.
    pub fn short(&self) -> String {
        match &self.commit {
            Some(h) => h.chars().take(10).collect(),
            None => self.key.clone(),
        }
    }
    pub fn multimodal(&self) -> bool {
        self.sessions.iter().any(|s| s.multimodal)
    }
}

/// Every series in the store, ordered by benchmark, parameters, metric and machine.
pub fn series(db: &mut Db) -> Result<Vec<Series>> {
    let rows = db.query(
        "SELECT DISTINCT s.benchmark_id, s.metric_id, se.machine_id \
         FROM summaries s JOIN sessions se ON se.id = s.session_id",
        &[],
    )?;
    let mut out = Vec::new();
    for r in rows {
        let (b, m, mc) = (
            r[0].as_i64().unwrap_or(0),
            r[1].as_i64().unwrap_or(0),
            r[2].as_i64().unwrap_or(0),
        );
        let d = db.query(
            "SELECT b.name, b.parameters, b.command, m.name, m.unit, m.direction, mc.fingerprint, mc.hostname \
             FROM benchmarks b, metrics m, machines mc WHERE b.id = ? AND m.id = ? AND mc.id = ?",
            &[Val::int(b), Val::int(m), Val::int(mc)],
        )?;
        let Some(mut d) = d.into_iter().next() else {
            continue;
        };
        let mut take = |i: usize| {
            std::mem::replace(&mut d[i], Val::Text(None))
                .into_string()
                .unwrap_or_default()
        };
        out.push(Series {
            benchmark_id: b,
            metric_id: m,
            machine_id: mc,
            benchmark: take(0),
            parameters: take(1),
            command: take(2),
            metric: take(3),
            unit: take(4),
            direction: take(5),
            fingerprint: take(6),
            hostname: take(7),
        });
    }
    out.sort_by(|a, b| {
        (&a.benchmark, &a.parameters, a.metric_id, &a.fingerprint).cmp(&(
            &b.benchmark,
            &b.parameters,
            b.metric_id,
            &b.fingerprint,
        ))
    });
    Ok(out)
}

/// The trend of one series: one point per commit, oldest first; `last` keeps the newest N.
pub fn trend(db: &mut Db, s: &Series, last: Option<usize>) -> Result<Vec<Point>> {
    let rows = db.query(
        "SELECT s.median, s.ci_low, s.ci_high, s.n, s.multimodal, se.id, se.started_at, se.source, \
                se.kernel, se.os, se.method, se.dirty, se.started_unix, c.hash, c.subject, c.branch, c.time_unix, \
                s.interfered, s.clean_median, c.parents \
         FROM summaries s JOIN sessions se ON se.id = s.session_id \
              LEFT JOIN commits c ON c.id = se.commit_id \
         WHERE s.benchmark_id = ? AND s.metric_id = ? AND se.machine_id = ? \
         ORDER BY COALESCE(c.time_unix, se.started_unix), se.started_unix, se.id",
        &[Val::int(s.benchmark_id), Val::int(s.metric_id), Val::int(s.machine_id)],
    )?;
    let mut points: Vec<Point> = Vec::new();
    let mut parents: Vec<Vec<String>> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    for mut r in rows {
        let f = |r: &[Val], i: usize| r[i].as_f64().unwrap_or(f64::NAN);
        let text =
            |r: &mut [Val], i: usize| std::mem::replace(&mut r[i], Val::Text(None)).into_string();
        let sref = SessionRef {
            id: r[5].as_i64().unwrap_or(0),
            started_at: text(&mut r, 6).unwrap_or_default(),
            source: text(&mut r, 7),
            median: f(&r, 0),
            ci_low: f(&r, 1),
            ci_high: f(&r, 2),
            n: r[3].as_i64().unwrap_or(0),
            multimodal: r[4].as_i64() == Some(1),
            kernel: text(&mut r, 8).unwrap_or_default(),
            os: text(&mut r, 9).unwrap_or_default(),
            method: text(&mut r, 10).unwrap_or_default(),
            interfered: r[17].as_i64().unwrap_or(0),
            clean_median: r[18].as_f64(),
        };
        let dirty = r[11].as_i64() == Some(1);
        let started = r[12].as_i64().unwrap_or(0);
        let commit = text(&mut r, 13);
        let key = match &commit {
            Some(h) if !dirty => h.clone(),
            Some(h) => format!("{h}+dirty:{}", sref.id),
            None => format!("session:{}", sref.id),
        };
        match index.get(&key) {
            Some(&i) => points[i].sessions.push(sref),
            None => {
                index.insert(key.clone(), points.len());
                let mut ps: Vec<String> = text(&mut r, 19)
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(String::from)
                    .collect();
                if dirty {
                    // A dirty work tree at a commit comes after the commit itself.
                    ps.extend(commit.clone());
                }
                parents.push(ps);
                points.push(Point {
                    key,
                    commit,
                    subject: text(&mut r, 14),
                    branch: text(&mut r, 15),
                    dirty,
                    time: r[16].as_i64().unwrap_or(started),
                    value: f64::NAN,
                    ci_low: f64::NAN,
                    ci_high: f64::NAN,
                    n: 0,
                    detect_value: f64::NAN,
                    interfered: 0,
                    sessions: vec![sref],
                });
            }
        }
    }
    let mut points = order(points, &parents);
    if let Some(k) = last {
        if points.len() > k {
            points.drain(..points.len() - k);
        }
    }
    for p in &mut points {
        let med = |f: &dyn Fn(&SessionRef) -> f64| -> f64 {
            let xs = crate::stats::quantile::sorted_without_nan(
                &p.sessions.iter().map(f).collect::<Vec<_>>(),
            );
            crate::stats::quantile::median(&xs).unwrap_or(f64::NAN)
        };
        p.value = med(&|s| s.median);
        p.ci_low = med(&|s| s.ci_low);
        p.ci_high = med(&|s| s.ci_high);
        p.n = p.sessions.iter().map(|s| s.n).sum();
        p.detect_value = med(&SessionRef::detect_value);
        p.interfered = p.sessions.iter().map(|s| s.interfered).sum();
    }
    Ok(points)
}

/// `points` (each with the parents of its commit, `parents[i]`) in the repository's order: a
/// topological order of the parent links the store knows — a point after every stored
/// ancestor it is linked to — choosing among the points whose stored parents are all placed
/// the one of earliest commit time, then earliest session start. Without
/// parent links this is commit time, then session start. Links to commits the store does not
/// hold are not followed (their ancestry is unknown here); a cycle (hashes given by hand) is
/// broken at its earliest point once nothing else can be placed.
pub fn order(points: Vec<Point>, parents: &[Vec<String>]) -> Vec<Point> {
    let keys: Vec<Option<&str>> = points
        .iter()
        .map(|p| p.commit.as_ref().map(|_| p.key.as_str()))
        .collect();
    let times: Vec<i64> = points.iter().map(|p| p.time).collect();
    let out = order_indices(&keys, &times, parents);
    let mut slots: Vec<Option<Point>> = points.into_iter().map(Some).collect();
    out.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// [`order`] of items by their keys (a commit's hash; None: no commit, never a parent), times
/// and parents: the indices in the repository's order (ties of time by index).
pub fn order_indices(keys: &[Option<&str>], times: &[i64], parents: &[Vec<String>]) -> Vec<usize> {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    let n = keys.len();
    let at: HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| k.map(|k| (k, i)))
        .collect();
    let mut waiting = vec![0usize; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, ps) in parents.iter().enumerate().take(n) {
        let mut seen: Vec<usize> = Vec::new();
        for p in ps {
            if let Some(&j) = at.get(p.as_str()) {
                if j != i && !seen.contains(&j) {
                    seen.push(j);
                    children[j].push(i);
                    waiting[i] += 1;
                }
            }
        }
    }
    // `points` come in the query's order (commit time, then session start): the index breaks
    // ties of commit time by session start.
    let rank: Vec<(i64, usize)> = times.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    let mut ready: BinaryHeap<Reverse<(i64, usize)>> = (0..n)
        .filter(|&i| waiting[i] == 0)
        .map(|i| Reverse(rank[i]))
        .collect();
    let mut out: Vec<usize> = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    loop {
        while let Some(Reverse((_, i))) = ready.pop() {
            placed[i] = true;
            out.push(i);
            for &c in &children[i] {
                if placed[c] || waiting[c] == 0 {
                    continue; // released from a cycle
                }
                waiting[c] -= 1;
                if waiting[c] == 0 {
                    ready.push(Reverse(rank[c]));
                }
            }
        }
        if out.len() == n {
            break;
        }
        // A cycle: release its earliest point.
        let i = (0..n)
            .filter(|&i| !placed[i])
            .min_by(|&a, &b| rank[a].cmp(&rank[b]))
            .unwrap_or(0);
        waiting[i] = 0;
        ready.push(Reverse(rank[i]));
    }
    out
}

/// Each stored commit's place in the repository's order ([`order_indices`] of the stored
/// parent links, commit time otherwise, then the order they were stored in), by commit row
/// id: the larger, the newer. What "newest" means where the server shows one commit or value.
pub fn commit_ranks(db: &mut Db) -> Result<std::collections::HashMap<i64, usize>> {
    let rows = db.query(
        "SELECT id, hash, parents, time_unix FROM commits ORDER BY COALESCE(time_unix, 0), id",
        &[],
    )?;
    let ids: Vec<i64> = rows.iter().map(|r| r[0].as_i64().unwrap_or(0)).collect();
    let keys: Vec<Option<&str>> = rows.iter().map(|r| r[1].as_str()).collect();
    let times: Vec<i64> = rows.iter().map(|r| r[3].as_i64().unwrap_or(0)).collect();
    let parents: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r[2].as_str()
                .unwrap_or("")
                .split_whitespace()
                .map(String::from)
                .collect()
        })
        .collect();
    Ok(order_indices(&keys, &times, &parents)
        .into_iter()
        .enumerate()
        .map(|(rank, i)| (ids[i], rank))
        .collect())
}

/// The counted values of `metric` of one benchmark in one session (for drill-down views).
pub fn run_values(
    db: &mut Db,
    session_id: i64,
    benchmark_id: i64,
    metric: &str,
) -> Result<Vec<f64>> {
    let column = match metric {
        "wall_time" | "cpu_time" | "user_time" | "system_time" | "peak_memory" => metric,
        _ => anyhow::bail!("unknown metric {metric}"),
    };
    let rows = db.query(
        &format!(
            "SELECT {column} FROM runs WHERE session_id = ? AND benchmark_id = ? AND counted = 1 ORDER BY idx"
        ),
        &[Val::int(session_id), Val::int(benchmark_id)],
    )?;
    Ok(rows.iter().filter_map(|r| r[0].as_f64()).collect())
}

/// Counts of what a store holds: (commits, machines, sessions, benchmarks, runs).
pub fn counts(db: &mut Db) -> Result<[i64; 5]> {
    let mut out = [0; 5];
    for (i, t) in ["commits", "machines", "sessions", "benchmarks", "runs"]
        .iter()
        .enumerate()
    {
        out[i] = db
            .query(&format!("SELECT COUNT(*) FROM {t}"), &[])?
            .first()
            .and_then(|r| r[0].as_i64())
            .unwrap_or(0);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(key: &str, time: i64) -> Point {
        Point {
            key: key.into(),
            commit: Some(key.split('+').next().unwrap_or(key).into()),
            subject: None,
            branch: None,
            dirty: key.contains('+'),
            time,
            value: 1.0,
            ci_low: 1.0,
            ci_high: 1.0,
            n: 1,
            detect_value: 1.0,
            interfered: 0,
            sessions: Vec::new(),
        }
    }

    fn keys(points: &[Point]) -> Vec<&str> {
        points.iter().map(|p| p.key.as_str()).collect()
    }

    #[test]
    fn ancestry_orders_before_commit_time_and_time_orders_the_rest() {
        // Query order (by time): c (rebased, oldest date), a, x (no links), b, m (merge of b
        // and c).
        let pts = vec![
            point("c", 5),
            point("a", 10),
            point("x", 15),
            point("b", 20),
            point("m", 30),
        ];
        let parents: Vec<Vec<String>> = vec![
            vec!["b".into()],
            vec![],
            vec![],
            vec!["a".into()],
            vec!["b".into(), "c".into()],
        ];
        assert_eq!(keys(&order(pts, &parents)), ["a", "x", "b", "c", "m"]);
    }

    #[test]
    fn a_cycle_and_a_dirty_tree_do_not_lose_points() {
        // Hashes given by hand that claim each other as parents: placed last, in time order.
        let pts = vec![point("p", 1), point("q", 2), point("r", 3)];
        let parents = vec![vec!["q".to_string()], vec!["p".to_string()], vec![]];
        assert_eq!(keys(&order(pts, &parents)), ["r", "p", "q"]);
        // A dirty work tree at a comes after a, even started before it.
        let pts = vec![point("a+dirty:1", 1), point("a", 2), point("b", 3)];
        let parents = vec![vec!["a".to_string()], vec![], vec!["a".to_string()]];
        assert_eq!(keys(&order(pts, &parents)), ["a", "a+dirty:1", "b"]);
    }
}
