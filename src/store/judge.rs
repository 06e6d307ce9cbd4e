//! The judgment of `tare history check`, one code for the CLI and the server's
//! `POST /api/v1/check` (issue 42: every view gives one answer): the settings from their
//! parameters, the scope of a commit judged against a baseline branch, each selected series'
//! trend, change points, alerts and newest-commit judgment, and the gate's verdict. The CLI
//! parses and prints; the server answers in JSON.

use super::detect::{self, Alert, Change, DetectSettings, Interfered, Tip};
use super::query::{self, Point, Series};
use super::thresholds::Thresholds;
use super::{git, ingest, Store};
use crate::error::exit;
use anyhow::Result;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

/// The detection parameters as given (`tare history check`'s options; the server's query).
#[derive(Debug, Clone)]
pub struct Params {
    pub alpha: f64,
    pub permutations: usize,
    pub min_size: usize,
    /// "1%", "0.01".
    pub min_effect: String,
    pub window: usize,
    pub tip_baseline: usize,
    /// keep, flag or drop.
    pub interfered: String,
}

impl Default for Params {
    fn default() -> Self {
        let d = DetectSettings::default();
        Params {
            alpha: d.changepoint.alpha,
            permutations: d.changepoint.permutations,
            min_size: d.changepoint.min_size,
            min_effect: format!("{}%", 100.0 * d.min_effect),
            window: detect::WINDOW,
            tip_baseline: d.tip_baseline,
            interfered: d.interfered.name().into(),
        }
    }
}

impl Params {
    /// The settings, or one line saying what to fix; `dash` prefixes the parameters' names
    /// (`--` for the CLI's options, nothing for the server's query).
    pub fn settings(&self, dash: &str) -> std::result::Result<DetectSettings, String> {
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(format!(
                "{dash}alpha {}: give a p-value between 0 and 0.5 (it is also the one-sided level of the newest commit's judgment)",
                self.alpha
            ));
        }
        if self.permutations < 19 {
            return Err(format!(
                "{dash}permutations: give at least 19 (the smallest p-value is 1/(N+1))"
            ));
        }
        let min_effect = crate::units::parse_fraction(&self.min_effect)
            .map_err(|e| format!("{dash}min-effect {}: {e}", self.min_effect))?;
        if self.tip_baseline < detect::TIP_MIN_BASELINE {
            return Err(format!(
                "{dash}tip-baseline {}: give at least {} (the newest commit is judged against the commits before it)",
                self.tip_baseline,
                detect::TIP_MIN_BASELINE
            ));
        }
        let interfered = Interfered::parse(&self.interfered).ok_or_else(|| {
            format!(
                "{dash}interfered {}: give keep, flag or drop",
                self.interfered
            )
        })?;
        Ok(DetectSettings {
            changepoint: crate::stats::changepoint::Settings {
                alpha: self.alpha,
                permutations: self.permutations,
                min_size: self.min_size.max(1),
                ..DetectSettings::default().changepoint
            },
            min_effect,
            tip_baseline: self.tip_baseline,
            interfered,
        })
    }
}

/// The metrics of the store when `metric` names none of them (`None`: it names one, or is a
/// word of `also`, e.g. `all`): the fixed ones, then the counted events (`--counters`),
/// energies (`--energy`) and ratios (`history add --ratios`) that series hold. The one check
/// behind `history`'s `--metric` and the server's `metric=`.
pub fn unknown_metric(st: &mut Store, metric: &str, also: &[&str]) -> Result<Option<Vec<String>>> {
    if also.contains(&metric) || ingest::METRICS.contains(&metric) {
        return Ok(None);
    }
    let mut counted: Vec<String> = query::series(&mut st.db)?
        .into_iter()
        .filter(|s| ingest::added_unit(&s.unit))
        .map(|s| s.metric)
        .collect();
    if counted.iter().any(|m| m == metric) {
        return Ok(None);
    }
    counted.sort();
    counted.dedup();
    let mut known: Vec<String> = ingest::METRICS.iter().map(|m| m.to_string()).collect();
    known.extend(counted);
    Ok(Some(known))
}

/// One line saying what to give when `metric` names no metric of the store; `flag` names the
/// parameter (`--metric`, `metric`).
pub fn metric_error(st: &mut Store, metric: &str, flag: &str) -> Result<Option<String>> {
    Ok(unknown_metric(st, metric, &["all", "default"])?
        .map(|known| format!("{flag} {metric}: give one of {} or all", known.join(", "))))
}

/// A commit judged against the history of a baseline branch up to their merge base (`check
/// --commit REV --baseline-branch B`; the server's `?commit=&baseline_branch=`).
#[derive(Debug, Clone)]
pub struct Scope {
    /// Full hash of the commit judged.
    pub commit: String,
    /// The baseline branch and its merge base with the commit (None where the store knows no
    /// parent links of the commit: see [`Scope::from_store`]).
    pub branch: String,
    pub merge_base: Option<String>,
    /// The merge base and its ancestors: the commits a baseline may use.
    pub history: HashSet<String>,
    /// Whether the repository read is a shallow clone (its history cut).
    pub shallow: bool,
}

/// Most ancestors of the merge base read from git (the baseline uses the newest of them).
const ANCESTORS: usize = 100_000;

pub fn short(h: &str) -> String {
    h.chars().take(10).collect()
}

impl Scope {
    /// Which commit is judged against what, in words (Markdown with code spans when `md`).
    pub fn words(&self, md: bool) -> String {
        let c = |h: &str| {
            if md {
                format!("`{}`", short(h))
            } else {
                short(h)
            }
        };
        let against = match &self.merge_base {
            Some(m) if *m == self.commit => format!(
                "judged against the commits of {} before it",
                c(&self.branch)
            ),
            Some(m) => format!(
                "on a branch: judged against the history of {} up to their merge base {} (the branch's own commits do not count)",
                c(&self.branch),
                c(m)
            ),
            None => format!(
                "judged against the stored commits of {} (the store knows no parent commit of it: upload it with its git metadata for its ancestry)",
                c(&self.branch)
            ),
        };
        let shallow = if self.shallow {
            " — a shallow clone: its baseline has only the commits fetched (fetch the whole history: fetch-depth: 0)"
        } else {
            ""
        };
        format!("Commit {} {against}{shallow}.", c(&self.commit))
    }

    /// The scope from git in the repository holding `cwd` (the CLI's), or one line saying
    /// what to do.
    pub fn from_git(
        cwd: &Path,
        commit: Option<&str>,
        branch: Option<&str>,
    ) -> std::result::Result<Scope, String> {
        let Some(top) = git::toplevel(cwd) else {
            return Err("--commit and --baseline-branch read the baseline's history from git: run tare history check in the repository's checkout".into());
        };
        let rev = commit.unwrap_or("HEAD");
        let hash = git::resolve(&top, rev).map_err(|e| {
            format!("--commit {rev}: {e:#}; fetch it (a CI checkout: fetch-depth: 0)")
        })?;
        let branch = branch
            .map(String::from)
            .unwrap_or_else(|| git::default_branch(&top));
        let tip = git::branch_tip(&top, &branch).ok_or_else(|| {
            format!(
                "--baseline-branch {branch}: no branch {branch} (nor origin/{branch}) in {}: name the branch whose history is the baseline, and fetch it (a CI checkout: fetch-depth: 0)",
                top.display()
            )
        })?;
        let merge_base = git::merge_base(&top, &hash, &tip).ok_or_else(|| {
            format!(
                "commit {} and {branch} have no common ancestor in {}: fetch the whole history (a CI checkout: fetch-depth: 0)",
                short(&hash),
                top.display()
            )
        })?;
        let history = git::ancestors(&top, &merge_base, ANCESTORS)
            .map_err(|e| format!("{e:#}"))?
            .into_iter()
            .collect();
        Ok(Scope {
            commit: hash,
            branch,
            merge_base: Some(merge_base),
            history,
            shallow: git::is_shallow(&top),
        })
    }

    /// The scope from the parent links the store holds (the server's, which has no
    /// repository): the baseline is the commits that are ancestors both of `commit` and of a
    /// commit stored on `branch` (the merge base and its ancestors, as git would say). A
    /// commit the store knows no parent of (its hash given by hand) is judged against the
    /// stored commits of `branch`, in the order the series has them. `commit` is a full hash
    /// or a prefix of one stored; `Ok(Err(line))` says what to give.
    pub fn from_store(
        st: &mut Store,
        commit: &str,
        branch: &str,
    ) -> Result<std::result::Result<Scope, String>> {
        let rows = st
            .db
            .query("SELECT hash, parents, branch FROM commits", &[])?;
        let mut parents: HashMap<String, Vec<String>> = HashMap::new();
        let mut on_branch: Vec<String> = Vec::new();
        for r in rows {
            let hash = r[0].as_str().unwrap_or("").to_string();
            let ps = r[1]
                .as_str()
                .unwrap_or("")
                .split_whitespace()
                .map(String::from)
                .collect();
            if r[2].as_str() == Some(branch) {
                on_branch.push(hash.clone());
            }
            parents.insert(hash, ps);
        }
        let found: Vec<&String> = parents.keys().filter(|h| h.starts_with(commit)).collect();
        let hash = match found.as_slice() {
            [h] => (*h).clone(),
            [] => {
                return Ok(Err(format!(
                    "commit {commit}: no such commit in the store: upload its results first"
                )))
            }
            _ => {
                return Ok(Err(format!(
                    "commit {commit}: more than one stored commit starts so: give more of its hash"
                )))
            }
        };
        if on_branch.is_empty() {
            return Ok(Err(format!(
                "baseline_branch {branch}: no stored commit is on branch {branch}: name the branch whose history is the baseline"
            )));
        }
        let ancestors = |from: &str| {
            // Breadth first: the nearest ancestors come first.
            let mut seen: Vec<String> = Vec::new();
            let mut set: HashSet<String> = HashSet::new();
            let mut queue = VecDeque::from([from.to_string()]);
            while let Some(h) = queue.pop_front() {
                if !set.insert(h.clone()) {
                    continue;
                }
                if let Some(ps) = parents.get(&h) {
                    queue.extend(ps.iter().cloned());
                }
                seen.push(h);
            }
            seen
        };
        if parents.get(&hash).is_none_or(|p| p.is_empty()) {
            return Ok(Ok(Scope {
                history: on_branch.into_iter().filter(|h| *h != hash).collect(),
                commit: hash,
                branch: branch.into(),
                merge_base: None,
                shallow: false,
            }));
        }
        let of_branch: HashSet<String> = on_branch.iter().flat_map(|b| ancestors(b)).collect();
        let mine = ancestors(&hash);
        let merge_base = mine.iter().find(|h| of_branch.contains(*h)).cloned();
        let Some(merge_base) = merge_base else {
            return Ok(Err(format!(
                "commit {} and {branch} have no common ancestor among the stored commits: upload the results of their merge base",
                short(&hash)
            )));
        };
        let history = mine.into_iter().filter(|h| of_branch.contains(h)).collect();
        Ok(Ok(Scope {
            commit: hash,
            branch: branch.into(),
            merge_base: Some(merge_base),
            history,
            shallow: false,
        }))
    }
}

/// One selected series, detected and judged.
#[derive(Debug, Clone)]
pub struct Judged {
    pub series: Series,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    pub alerts: Vec<Alert>,
    pub interfered: Interfered,
    /// The judgment of its newest commit (the commit of the scope, when there is one).
    pub tip: Option<Tip>,
}

/// What is analysed: the series (`metric` as [`detect::selected`] takes it, `benchmark` a part
/// of the name), under `settings` (each series' min effect from `thresholds` where a rule
/// matches it), over the newest `window` commits.
pub struct Selection<'a> {
    pub metric: &'a str,
    pub benchmark: Option<&'a str>,
    pub settings: DetectSettings,
    pub window: usize,
    pub thresholds: Option<&'a Thresholds>,
}

/// Every selected series with its trend, change points, alerts and the judgment of its newest
/// commit; the ids of the alerts created `new`. Only a check writes alerts (`raise`); the
/// views read them, so looking at history never takes a new alert away from the CI gate.
/// With a `scope`, a series is the scope's commit after the baseline branch's history up to
/// the merge base, and is left out when the commit has no value in it.
pub fn analyse(
    st: &mut Store,
    sel: &Selection,
    raise: bool,
    scope: Option<&Scope>,
) -> Result<(Vec<Judged>, Vec<i64>)> {
    let now = super::now();
    let mut out = Vec::new();
    let mut new = Vec::new();
    let w = sel.window.max(2);
    for s in query::series(&mut st.db)? {
        if !detect::selected(sel.metric, &s)
            || sel.benchmark.is_some_and(|b| !s.benchmark.contains(b))
        {
            continue;
        }
        let points = match scope {
            None => query::trend(&mut st.db, &s, Some(w))?,
            Some(sc) => {
                let mut all = query::trend(&mut st.db, &s, None)?;
                let Some(at) = all.iter().position(|p| p.key == sc.commit) else {
                    continue;
                };
                let judged = all.remove(at);
                all.retain(|p| {
                    !p.dirty && p.commit.as_ref().is_some_and(|h| sc.history.contains(h))
                });
                all.push(judged);
                if all.len() > w {
                    all.drain(..all.len() - w);
                }
                all
            }
        };
        // The series' own threshold, where a rule of the thresholds file matches it.
        let mut settings = sel.settings;
        if let Some(r) = sel.thresholds.and_then(|t| t.for_series(&s)) {
            settings.min_effect = r.min_effect;
        }
        let changes = detect::changes(&points, &s, &settings);
        let tip = detect::tip(&points, &s, &changes, &settings);
        if raise {
            st.db.begin_write()?;
            match detect::update_alerts_with(
                &mut st.db,
                &s,
                &points,
                &changes,
                tip.as_ref(),
                &settings,
                &now,
            ) {
                Ok(c) => {
                    st.db.batch("COMMIT")?;
                    new.extend(c);
                }
                Err(e) => {
                    let _ = st.db.batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        let alerts = detect::series_alerts(&mut st.db, &s)?;
        out.push(Judged {
            series: s,
            points,
            changes,
            alerts,
            interfered: settings.interfered,
            tip,
        });
    }
    Ok((out, new))
}

/// What the gate reads of one analysed series.
pub struct Seen<'a> {
    pub tip: Option<&'a Tip>,
    pub points: &'a [Point],
    pub alerts: &'a [Alert],
}

impl Judged {
    pub fn seen(&self) -> Seen<'_> {
        Seen {
            tip: self.tip.as_ref(),
            points: &self.points,
            alerts: &self.alerts,
        }
    }
}

/// The gate's verdict over analysed series (indices into them).
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Series whose commit was judged (its baseline long enough).
    pub judged: usize,
    /// Regressions of the judged commit whose alert is new: they fail the gate.
    pub failing: usize,
    /// Regressions whose alert was acknowledged or dismissed (a scope's only).
    pub accepted: usize,
    /// Series whose judgment is said (a regression, significant, or not judged).
    pub said: Vec<usize>,
    /// A scope's series in which its commit has no value of its own.
    pub no_value: Vec<usize>,
    /// New alerts: (series, alert id); with a scope, those not at its commit.
    pub new_alerts: Vec<(usize, i64)>,
    /// New regression alerts (without a scope, what fails the gate).
    pub new_regressions: usize,
    /// The exit code: `exit::VERDICT` when the gate fails.
    pub code: i32,
}

/// The gate: without a scope, it fails when new regression alerts were raised (a regression
/// at the newest commit raises one); with one, while a regression of the scope's commit has
/// its alert `new` (raised now or by an earlier run of the same check: a job run again stays
/// red until the alert is acknowledged or dismissed). New alerts found elsewhere in the
/// baseline's history are listed, but are not the commit's and do not fail it.
pub fn verdict(judged: &[Seen], new: &[i64], scope: Option<&Scope>) -> Verdict {
    let mut v = Verdict::default();
    for (i, j) in judged.iter().enumerate() {
        let t = match (j.tip, scope) {
            (Some(t), Some(sc)) if t.key != sc.commit => None,
            (t, _) => t,
        };
        let Some(t) = t else {
            if scope.is_some() {
                v.no_value.push(i);
            }
            continue;
        };
        if t.judged.is_some() {
            v.judged += 1;
        }
        if !(t.regression || t.significant || t.judged.is_none()) {
            continue;
        }
        v.said.push(i);
        if t.regression {
            match (scope, t.alert(j.points, j.alerts)) {
                (Some(_), Some(a)) if a.status != "new" => v.accepted += 1,
                _ => v.failing += 1,
            }
        }
    }
    for (i, j) in judged.iter().enumerate() {
        for a in j.alerts.iter().filter(|a| new.contains(&a.id)) {
            if scope.is_some_and(|sc| a.commit_key == sc.commit) {
                continue;
            }
            v.new_alerts.push((i, a.id));
            if a.kind == "regression" {
                v.new_regressions += 1;
            }
        }
    }
    let fails = match scope {
        Some(_) => v.failing > 0,
        None => v.new_regressions > 0,
    };
    v.code = if fails { exit::VERDICT } else { exit::OK };
    v
}
