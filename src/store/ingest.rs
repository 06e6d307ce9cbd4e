//! Putting a finished session into the store: its commit, machine, benchmarks, every run and
//! their summaries (recomputed from the runs: [`recomputed`]), in one transaction, after
//! [`check`]. A session already in the store (same start time, host and seed) is skipped, so
//! adding a file twice changes nothing. Not for: reading results files
//! (`crate::results::read`) or computing statistics.

use super::db::{Db, Val};
use super::git::CommitInfo;
use crate::results::model::{MetricSummary, Session};
use anyhow::Result;

/// The metrics every session has, in the order of the `metrics` table.
pub const METRICS: &[&str] = &[
    "wall_time",
    "cpu_time",
    "user_time",
    "system_time",
    "peak_memory",
];

/// What adding one session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// False when the session was already in the store.
    pub added: bool,
    pub session_id: i64,
    pub runs: usize,
}

/// The machine's fingerprint: FNV-1a (64 bit) of host name, CPU model, CPUs, cores and memory,
/// in hex. Hand-written: six lines, and it must never change between versions (a hasher
/// crate's default may).
pub fn fingerprint(m: &crate::results::model::MachineInfo) -> String {
    let text = format!(
        "{}\x1f{}\x1f{}\x1f{}\x1f{}",
        m.hostname, m.cpu_model, m.logical_cpus, m.physical_cores, m.memory_bytes
    );
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// The key that matches a benchmark across sessions: its name and parameters.
pub fn benchmark_key(
    name: &str,
    parameters: &std::collections::BTreeMap<String, String>,
) -> String {
    format!(
        "{name}\x1f{}",
        serde_json::to_string(parameters).unwrap_or_default()
    )
}

/// Seconds since the epoch of an RFC 3339 time (`Z`, a `+HH:MM` offset, or none: UTC), or
/// None when it does not read as one.
pub fn parse_time(rfc3339: &str) -> Option<i64> {
    let t = rfc3339.trim();
    let secs = |t: &str| {
        humantime::parse_rfc3339_weak(t)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs() as i64)
    };
    let b = t.as_bytes();
    if b.len() > 19 && matches!(b[b.len() - 6], b'+' | b'-') && b[b.len() - 3] == b':' {
        let (local, off) = t.split_at(t.len() - 6);
        let h: i64 = off[1..3].parse().ok()?;
        let m: i64 = off[4..6].parse().ok()?;
        let sign = if off.starts_with('-') { -1 } else { 1 };
        return Some(secs(local)? - sign * (h * 3600 + m * 60));
    }
    secs(t)
}

/// Seconds since the epoch of an RFC 3339 time (0 when it cannot be read; [`check`] refuses
/// such a session before it is stored).
pub fn unix_time(rfc3339: &str) -> i64 {
    parse_time(rfc3339).unwrap_or(0)
}

/// Whether a session (with the commit it will be stored at) can be stored: its start time
/// reads as a time, its commit is a hash ([`super::git::check_commit`]), its texts are within
/// the limits ([`MAX_TEXT`], [`MAX_HOST`], [`MAX_LABEL`], [`MAX_SUBJECT`]). One line saying
/// what is wrong otherwise.
pub fn check(s: &Session, commit: Option<&CommitInfo>) -> std::result::Result<(), String> {
    if parse_time(&s.started_at).is_none() {
        return Err(format!(
            "started_at '{}' is not a time: give an RFC 3339 time such as 2026-10-01T12:00:00Z (as tare run writes)",
            s.started_at.chars().take(60).flat_map(char::escape_default).collect::<String>()
        ));
    }
    if let Some(c) = commit {
        super::git::check_commit(c)?;
        if let Some(subj) = &c.subject {
            bounded("commit subject", subj, MAX_SUBJECT)?;
        }
    }
    let m = &s.machine;
    bounded("host name", &m.hostname, MAX_HOST)?;
    for (what, v) in [
        ("CPU model", &m.cpu_model),
        ("kernel", &m.kernel),
        ("OS", &m.os),
        ("tare_version", &s.tare_version),
    ] {
        bounded(what, v, MAX_LABEL)?;
    }
    for b in &s.benchmarks {
        check_runs(b)?;
        bounded("benchmark name", &b.name, MAX_TEXT)?;
        bounded("command", &b.command, MAX_TEXT)?;
        bounded(
            "benchmark parameters",
            &serde_json::to_string(&b.parameters).unwrap_or_default(),
            MAX_TEXT,
        )?;
    }
    Ok(())
}

/// Whether every run's times (wall, user, system and CPU time, start offset) are seconds:
/// finite and not negative. One line naming the benchmark, the run and the field otherwise.
fn check_runs(b: &crate::results::model::Benchmark) -> std::result::Result<(), String> {
    for r in &b.runs {
        for (field, v) in [
            ("wall_time", r.wall_time),
            ("user_time", r.user_time),
            ("system_time", r.system_time),
            ("cpu_time", r.cpu_time),
            ("start_offset", r.start_offset),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "benchmark '{}' run {}: {field} is {v}, not a time: a run's times are seconds, finite and not negative",
                    b.name.chars().take(40).flat_map(char::escape_default).collect::<String>(),
                    r.index
                ));
            }
        }
    }
    Ok(())
}

/// A benchmark's summaries as stored: recomputed from its counted runs (as `tare run` and the
/// importers compute them), never taken from the file, for each metric the file summarizes
/// (those its tool measured: an import without CPU times has none); a metric without counted
/// runs has none.
pub fn recomputed(b: &crate::results::model::Benchmark) -> crate::results::model::Summary {
    let s = crate::conclude::summary::summarize(b);
    let keep = |file: &Option<MetricSummary>, x: Option<MetricSummary>| file.as_ref().and(x);
    crate::results::model::Summary {
        wall_time: keep(&b.summary.wall_time, s.wall_time),
        cpu_time: keep(&b.summary.cpu_time, s.cpu_time),
        user_time: keep(&b.summary.user_time, s.user_time),
        system_time: keep(&b.summary.system_time, s.system_time),
        peak_memory: keep(&b.summary.peak_memory, s.peak_memory),
    }
}

/// Longest benchmark name, command, and parameters (as JSON) the store takes, in bytes.
pub const MAX_TEXT: usize = 4096;
/// Longest host name the store takes, in bytes.
pub const MAX_HOST: usize = 255;
/// Longest CPU model, kernel, OS and tare version the store takes, in bytes.
pub const MAX_LABEL: usize = 255;
/// Longest commit subject the store takes, in bytes.
pub const MAX_SUBJECT: usize = 1024;

fn bounded(what: &str, v: &str, max: usize) -> std::result::Result<(), String> {
    if v.len() > max {
        return Err(format!(
            "the {what} '{}…' is {} bytes, longer than the {max} the store takes: shorten it",
            v.chars()
                .take(40)
                .flat_map(char::escape_default)
                .collect::<String>(),
            v.len()
        ));
    }
    Ok(())
}

/// The identity of a session: two files with the same one hold the same session.
pub fn identity(s: &Session) -> String {
    format!("{}|{}|{}", s.started_at, s.machine.hostname, s.seed)
}

fn id_of(db: &mut Db, sql: &str, params: &[Val]) -> Result<Option<i64>> {
    Ok(db
        .query(sql, params)?
        .first()
        .and_then(|r| r.first())
        .and_then(Val::as_i64))
}

/// A session's fields without its benchmarks (which hold the runs).
trait WithoutBenchmarks {
    fn clone_without_benchmarks(&self) -> Session;
}

impl WithoutBenchmarks for Session {
    fn clone_without_benchmarks(&self) -> Session {
        Session {
            schema_version: self.schema_version,
            tare_version: self.tare_version.clone(),
            invocation: self.invocation.clone(),
            started_at: self.started_at.clone(),
            machine: self.machine.clone(),
            method: self.method.clone(),
            cores: self.cores.clone(),
            limits: self.limits.clone(),
            environment: self.environment.clone(),
            seed: self.seed,
            benchmarks: Vec::new(),
            comparisons: self.comparisons.clone(),
            complete: self.complete,
            extra: self.extra.clone(),
        }
    }
}

/// The id of a commit's row, added when missing (an upsert, safe beside other writers).
pub fn commit_id(db: &mut Db, c: &CommitInfo) -> Result<i64> {
    let id = upsert_id(
        db,
        "INSERT INTO commits (hash, parents, branch, time_unix, subject) VALUES (?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
        &[
            Val::text(&c.hash),
            Val::text(c.parents.join(" ")),
            Val::Text(c.branch.clone()),
            Val::Int(c.time),
            Val::Text(c.subject.clone()),
        ],
        "SELECT id FROM commits WHERE hash = ?",
        Val::text(&c.hash),
    )?;
    if let Some(b) = &c.branch {
        db.exec(
            "UPDATE commits SET branch = ? WHERE id = ? AND branch IS NULL",
            &[Val::text(b), Val::int(id)],
        )?;
    }
    complete_commit(db, id, c)?;
    Ok(id)
}

/// Fills in the parents and time of commit row `id` where it has none (the row was added from
/// a hash alone): what the order of a trend needs.
fn complete_commit(db: &mut Db, id: i64, c: &CommitInfo) -> Result<()> {
    if !c.parents.is_empty() {
        db.exec(
            "UPDATE commits SET parents = ? WHERE id = ? AND (parents IS NULL OR parents = '')",
            &[Val::text(c.parents.join(" ")), Val::int(id)],
        )?;
    }
    if c.time.is_some() {
        db.exec(
            "UPDATE commits SET time_unix = ? WHERE id = ? AND time_unix IS NULL",
            &[Val::Int(c.time), Val::int(id)],
        )?;
    }
    Ok(())
}

/// The id of the row `insert` adds unless `select` finds it: an upsert (`ON CONFLICT DO
/// NOTHING`, then a select), so that two writers adding the same machine or benchmark at once
/// both get the one row instead of one of them failing on the unique key.
fn upsert_id(db: &mut Db, insert: &str, params: &[Val], select: &str, key: Val) -> Result<i64> {
    db.exec(insert, params)?;
    id_of(db, select, &[key])?
        .ok_or_else(|| anyhow::anyhow!("store: {} found no row after inserting it", select))
}

fn machine_id(db: &mut Db, s: &Session) -> Result<i64> {
    let fp = fingerprint(&s.machine);
    let m = &s.machine;
    upsert_id(
        db,
        "INSERT INTO machines (fingerprint, hostname, cpu_model, logical_cpus, physical_cores, memory_bytes, inventory) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING",
        &[
            Val::text(&fp),
            Val::text(&m.hostname),
            Val::text(&m.cpu_model),
            Val::int(m.logical_cpus as i64),
            Val::int(m.physical_cores as i64),
            Val::int(m.memory_bytes as i64),
            Val::text(serde_json::to_string(m)?),
        ],
        "SELECT id FROM machines WHERE fingerprint = ?",
        Val::text(fp),
    )
}

/// The id of benchmark `b` stored under `name` (its name told apart from the session's other
/// benchmarks: [`names_apart`]).
fn benchmark_id(db: &mut Db, b: &crate::results::model::Benchmark, name: &str) -> Result<i64> {
    let key = benchmark_key(name, &b.parameters);
    upsert_id(
        db,
        "INSERT INTO benchmarks (key, name, command, parameters) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
        &[
            Val::text(&key),
            Val::text(name),
            Val::text(&b.command),
            Val::text(serde_json::to_string(&b.parameters)?),
        ],
        "SELECT id FROM benchmarks WHERE key = ?",
        Val::text(key),
    )
}

/// The names a session's benchmarks are stored under: two of one name and parameters (two
/// identical commands in one hyperfine run, an older tare's `tare run true true`) are stored
/// apart, the second as `NAME (2)` ([`crate::results::names::names_apart`]), instead of failing
/// on the store's unique keys.
pub fn names_apart(s: &Session) -> Vec<String> {
    let items: Vec<(&str, &std::collections::BTreeMap<String, String>)> = s
        .benchmarks
        .iter()
        .map(|b| (b.name.as_str(), &b.parameters))
        .collect();
    crate::results::names::names_apart(&items)
}

/// Metric ids by name, in [`METRICS`] order.
pub fn metric_ids(db: &mut Db) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for m in METRICS {
        out.push(
            id_of(
                db,
                "SELECT id FROM metrics WHERE name = ?",
                &[Val::text(*m)],
            )?
            .ok_or_else(|| anyhow::anyhow!("store: metric {m} is missing"))?,
        );
    }
    Ok(out)
}

/// The commit of a session: the one given, else the one the results file recorded
/// (`extra["git"]`, written by `tare run --store`).
pub fn recorded_commit(s: &Session) -> Option<CommitInfo> {
    s.extra
        .get("git")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Ids already looked up in this connection (metrics, machines, benchmarks): each costs a
/// round trip to a PostgreSQL server otherwise.
#[derive(Debug, Default)]
pub struct Cache {
    metrics: Option<Vec<i64>>,
    machines: std::collections::HashMap<String, i64>,
    commits: std::collections::HashMap<String, i64>,
    benchmarks: std::collections::HashMap<String, i64>,
    /// Metrics of counted events (`--counters`), by event name.
    counters: std::collections::HashMap<String, i64>,
}

/// The unit of a counted event's metric (`--counters`: instructions, estimated cycles, …): a
/// series of its own per event, named by the event.
pub const COUNT_UNIT: &str = "count";

/// The unit of an energy metric (`--energy`: `package_energy`, `gpu_energy`).
pub const ENERGY_UNIT: &str = "J";

/// The unit of a head to head's ratio (`tare history add --ratios`): metric `ratio`, one
/// series a `KERNEL vs BASELINE` benchmark.
pub const RATIO_UNIT: &str = "×";

/// Whether a series of this unit is a metric beyond [`METRICS`] that `--metric` (and the
/// server's `?metric=`) may name: a counted event, an energy, a head to head's ratio.
pub fn added_unit(unit: &str) -> bool {
    [COUNT_UNIT, ENERGY_UNIT, RATIO_UNIT].contains(&unit)
}

/// Where a run of such a benchmark carries its process's ratio (`Run.extra`).
pub const RATIO_KEY: &str = "ratio";

/// A benchmark's runs' ratios (`runs[].extra.ratio`, written by `tare history add --ratios`
/// only), as metric `ratio`; empty for every other benchmark.
pub fn ratio_values(b: &crate::results::model::Benchmark) -> Vec<(String, &'static str, Vec<f64>)> {
    let xs: Vec<f64> = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .filter_map(|r| r.extra.get(RATIO_KEY)?.as_f64())
        .collect();
    if xs.is_empty() {
        return Vec::new();
    }
    vec![("ratio".to_string(), RATIO_UNIT, xs)]
}

/// The id of a metric beyond [`METRICS`] (a counted event, an energy), added when missing.
fn added_metric_id(db: &mut Db, cache: &mut Cache, name: &str, unit: &str) -> Result<i64> {
    if let Some(&id) = cache.counters.get(name) {
        return Ok(id);
    }
    let id = upsert_id(
        db,
        "INSERT INTO metrics (name, unit, direction) VALUES (?, ?, 'lower') ON CONFLICT (name) DO NOTHING",
        &[Val::text(name), Val::text(unit)],
        "SELECT id FROM metrics WHERE name = ?",
        Val::text(name),
    )?;
    cache.counters.insert(name.to_string(), id);
    Ok(id)
}

/// Each energy a benchmark's counted runs carry (`--energy`), with the runs' values in order:
/// `package_energy` (attributed runs) and `gpu_energy` (runs long enough for the GPU counter),
/// as `conclude::levels::Metric` reads them, so the history judges what `compare` judges.
pub fn energy_values(b: &crate::results::model::Benchmark) -> Vec<(&'static str, Vec<f64>)> {
    use crate::conclude::levels::{EnergyKind, Metric};
    [
        ("package_energy", EnergyKind::Package),
        ("gpu_energy", EnergyKind::Gpu),
    ]
    .into_iter()
    .filter_map(|(name, kind)| {
        let m = Metric::Energy(kind);
        let xs: Vec<f64> = b
            .runs
            .iter()
            .filter(|r| r.counted)
            .filter_map(|r| m.value(r))
            .collect();
        (!xs.is_empty()).then_some((name, xs))
    })
    .collect()
}

/// Each counted event of a benchmark's counted runs (`runs[].extra.counters`), with the runs'
/// values in order. A metric of time (`wall_time`, …) is never a counter's name.
pub fn counter_values(b: &crate::results::model::Benchmark) -> Vec<(String, Vec<f64>)> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    for r in b.runs.iter().filter(|r| r.counted) {
        let Some(list) = r.extra.get("counters").and_then(|v| v.as_array()) else {
            continue;
        };
        for c in list {
            let (Some(ev), Some(v)) = (c["event"].as_str(), c["value"].as_f64()) else {
                continue;
            };
            if METRICS.contains(&ev) {
                continue;
            }
            match out.iter_mut().find(|e| e.0 == ev) {
                Some(e) => e.1.push(v),
                None => out.push((ev.to_string(), vec![v])),
            }
        }
    }
    out
}

/// Adds one session (inside its own transaction).
pub fn add_session(
    db: &mut Db,
    s: &Session,
    commit: Option<&CommitInfo>,
    source: Option<&str>,
) -> Result<Added> {
    let mut out = add_sessions(db, &[(s, commit, source)], &mut Cache::default())?;
    Ok(out.remove(0))
}

/// Adds several sessions in one transaction: all or none. A handful of statements per call
/// whatever the number of sessions (multi-row inserts, one bulk insert of runs and one of
/// summaries): on a PostgreSQL server each statement is a round trip.
pub fn add_sessions(
    db: &mut Db,
    sessions: &[(&Session, Option<&CommitInfo>, Option<&str>)],
    cache: &mut Cache,
) -> Result<Vec<Added>> {
    db.begin_write()?;
    match add_batch(db, sessions, cache) {
        Ok(out) => {
            db.batch("COMMIT")?;
            Ok(out)
        }
        Err(e) => {
            let _ = db.batch("ROLLBACK");
            // Ids cached inside the rolled-back transaction are gone.
            *cache = Cache::default();
            Err(e)
        }
    }
}

/// `(?, ?, …), (?, ?, …)` for `rows` rows of `cols` values.
fn placeholders(rows: usize, cols: usize) -> String {
    let one = format!("({})", vec!["?"; cols].join(", "));
    vec![one; rows].join(", ")
}

fn add_batch(
    db: &mut Db,
    sessions: &[(&Session, Option<&CommitInfo>, Option<&str>)],
    cache: &mut Cache,
) -> Result<Vec<Added>> {
    // Commits: the ones not seen yet, in one insert and one select.
    let recorded: Vec<Option<CommitInfo>> = sessions
        .iter()
        .map(|(s, c, _)| c.cloned().or_else(|| recorded_commit(s)))
        .collect();
    for ((s, _, _), c) in sessions.iter().zip(&recorded) {
        check(s, c.as_ref()).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let mut fresh: Vec<&CommitInfo> = Vec::new();
    for c in recorded.iter().flatten() {
        if !cache.commits.contains_key(&c.hash) && !fresh.iter().any(|f| f.hash == c.hash) {
            fresh.push(c);
        }
    }
    if !fresh.is_empty() {
        let mut params = Vec::with_capacity(fresh.len() * 5);
        for c in &fresh {
            params.extend([
                Val::text(&c.hash),
                Val::text(c.parents.join(" ")),
                Val::Text(c.branch.clone()),
                Val::Int(c.time),
                Val::Text(c.subject.clone()),
            ]);
        }
        db.exec(
            &format!(
                "INSERT INTO commits (hash, parents, branch, time_unix, subject) VALUES {} ON CONFLICT (hash) DO NOTHING",
                placeholders(fresh.len(), 5)
            ),
            &params,
        )?;
        let hashes: Vec<Val> = fresh.iter().map(|c| Val::text(&c.hash)).collect();
        let rows = db.query(
            &format!(
                "SELECT id, hash, parents, time_unix FROM commits WHERE hash IN ({})",
                vec!["?"; hashes.len()].join(", ")
            ),
            &hashes,
        )?;
        for r in rows {
            if let (Some(id), Some(h)) = (r[0].as_i64(), r[1].as_str()) {
                cache.commits.insert(h.to_string(), id);
                // A commit stored before without its parents or time (a hash given by hand)
                // gets them now: the order of a trend follows them.
                let stored_parents = r[2].as_str().unwrap_or("").trim().is_empty();
                if let Some(c) = fresh.iter().find(|c| c.hash == h) {
                    if (stored_parents && !c.parents.is_empty())
                        || (r[3].as_i64().is_none() && c.time.is_some())
                    {
                        complete_commit(db, id, c)?;
                    }
                }
            }
        }
    }
    // Machines and benchmarks: few; looked up once per connection.
    let mut machine_ids = Vec::with_capacity(sessions.len());
    for (s, _, _) in sessions {
        let fp = fingerprint(&s.machine);
        let id = match cache.machines.get(&fp) {
            Some(&id) => id,
            None => {
                let id = machine_id(db, s)?;
                cache.machines.insert(fp, id);
                id
            }
        };
        machine_ids.push(id);
    }
    if cache.metrics.is_none() {
        cache.metrics = Some(metric_ids(db)?);
    }
    // Sessions: one insert; those already stored (same identity) insert nothing.
    let idents: Vec<String> = sessions.iter().map(|(s, _, _)| identity(s)).collect();
    let mut params = Vec::with_capacity(sessions.len() * 11);
    let mut headers: std::collections::HashMap<String, String> = Default::default();
    let mut first: Vec<bool> = Vec::with_capacity(sessions.len());
    let mut count = 0;
    for (k, (s, _, source)) in sessions.iter().enumerate() {
        let dup = idents[..k].contains(&idents[k]);
        first.push(!dup);
        if dup {
            continue;
        }
        let commit = recorded[k].as_ref();
        let header = Session {
            benchmarks: s
                .benchmarks
                .iter()
                .zip(names_apart(s))
                .map(|(b, name)| crate::results::model::Benchmark {
                    name,
                    command: b.command.clone(),
                    argv: b.argv.clone(),
                    parameters: b.parameters.clone(),
                    summary: recomputed(b),
                    stop_reason: b.stop_reason.clone(),
                    runs: Vec::new(),
                    diagnostics: b.diagnostics.clone(),
                    extra: b.extra.clone(),
                })
                .collect(),
            ..s.clone_without_benchmarks()
        };
        params.extend([
            Val::text(&idents[k]),
            Val::Int(commit.and_then(|c| cache.commits.get(&c.hash).copied())),
            Val::int(i64::from(commit.is_some_and(|c| c.dirty))),
            Val::int(machine_ids[k]),
            Val::text(&s.started_at),
            Val::int(unix_time(&s.started_at)),
            Val::text(&s.tare_version),
            Val::text(s.method.kind.as_str()),
            Val::text(&s.machine.kernel),
            Val::text(&s.machine.os),
            Val::Text(source.map(String::from)),
        ]);
        headers.insert(idents[k].clone(), serde_json::to_string(&header)?);
        count += 1;
    }
    let mut new_ids: std::collections::HashMap<String, i64> = Default::default();
    if count > 0 {
        let rows = db.query(
            &format!(
                "INSERT INTO sessions (identity, commit_id, dirty, machine_id, started_at, started_unix, tare_version, method, kernel, os, source) VALUES {} ON CONFLICT (identity) DO NOTHING RETURNING id, identity",
                placeholders(count, 11)
            ),
            &params,
        )?;
        for r in rows {
            if let (Some(id), Some(i)) = (r[0].as_i64(), r[1].as_str()) {
                new_ids.insert(i.to_string(), id);
            }
        }
    }
    let header_rows: Vec<Vec<Val>> = new_ids
        .iter()
        .filter_map(|(ident, id)| {
            headers
                .remove(ident)
                .map(|h| vec![Val::int(*id), Val::text(h)])
        })
        .collect();
    db.bulk_insert("session_headers", &["session_id", "header"], &header_rows)?;
    let metrics = cache.metrics.clone().unwrap_or_default();
    let mut runs: Vec<Vec<Val>> = Vec::new();
    let mut sums: Vec<Vec<Val>> = Vec::new();
    let mut out = Vec::with_capacity(sessions.len());
    for (k, (s, _, _)) in sessions.iter().enumerate() {
        let Some(&sid) = new_ids.get(&idents[k]).filter(|_| first[k]) else {
            let id = id_of(
                db,
                "SELECT id FROM sessions WHERE identity = ?",
                &[Val::text(&idents[k])],
            )?
            .unwrap_or(0);
            out.push(Added {
                added: false,
                session_id: id,
                runs: 0,
            });
            continue;
        };
        let before = runs.len();
        for (b, name) in s.benchmarks.iter().zip(names_apart(s)) {
            let key = benchmark_key(&name, &b.parameters);
            let bid = match cache.benchmarks.get(&key) {
                Some(&id) => id,
                None => {
                    let id = benchmark_id(db, b, &name)?;
                    cache.benchmarks.insert(key, id);
                    id
                }
            };
            for r in &b.runs {
                runs.push(run_row(sid, bid, r));
            }
            let multimodal = i64::from(b.diagnostics.iter().any(|d| d.kind == "modes"));
            let summary = recomputed(b);
            let per_metric: [&Option<MetricSummary>; 5] = [
                &summary.wall_time,
                &summary.cpu_time,
                &summary.user_time,
                &summary.system_time,
                &summary.peak_memory,
            ];
            for (m, summary) in per_metric.iter().enumerate() {
                if let Some(x) = summary {
                    let (interfered, clean) = clean_median(&b.runs, m);
                    sums.push(vec![
                        Val::int(sid),
                        Val::int(bid),
                        Val::int(metrics[m]),
                        Val::int(x.n as i64),
                        Val::real(x.median),
                        Val::real(x.median_ci_low),
                        Val::real(x.median_ci_high),
                        Val::real(x.mean),
                        Val::real(x.stddev),
                        Val::real(x.min),
                        Val::real(x.max),
                        Val::int(multimodal),
                        Val::int(interfered as i64),
                        Val::Real(clean),
                    ]);
                }
            }
            // Counts: a series per event; the interval stored is the range of the runs (a
            // count Valgrind simulates repeats, and load does not disturb it: none is left
            // out as interfered with). Energy: a series per kind, summarized as time is
            // (median and its interval).
            let counts = counter_values(b)
                .into_iter()
                .map(|(e, xs)| (e, COUNT_UNIT, xs));
            let energies = energy_values(b)
                .into_iter()
                .map(|(n, xs)| (n.to_string(), ENERGY_UNIT, xs));
            for (name, unit, xs) in counts.chain(energies).chain(ratio_values(b)) {
                let Some(d) = crate::stats::describe(&xs) else {
                    continue;
                };
                let mid = added_metric_id(db, cache, &name, unit)?;
                let (low, high) = if unit == COUNT_UNIT {
                    (d.min, d.max)
                } else {
                    (d.median_ci_low, d.median_ci_high)
                };
                sums.push(vec![
                    Val::int(sid),
                    Val::int(bid),
                    Val::int(mid),
                    Val::int(d.n as i64),
                    Val::real(d.median),
                    Val::real(low),
                    Val::real(high),
                    Val::real(d.mean),
                    Val::real(d.stddev),
                    Val::real(d.min),
                    Val::real(d.max),
                    Val::int(multimodal),
                    Val::int(0),
                    Val::Real(None),
                ]);
            }
        }
        out.push(Added {
            added: true,
            session_id: sid,
            runs: runs.len() - before,
        });
    }
    db.bulk_insert("runs", RUN_COLUMNS, &runs)?;
    db.bulk_insert("summaries", SUMMARY_COLUMNS, &sums)?;
    Ok(out)
}

pub const RUN_COLUMNS: &[&str] = &[
    "session_id",
    "benchmark_id",
    "idx",
    "round",
    "warmup",
    "counted",
    "termination",
    "exit_code",
    "signal",
    "start_offset",
    "wall_time",
    "cpu_time",
    "user_time",
    "system_time",
    "peak_memory",
    "context_switches",
];

pub const SUMMARY_COLUMNS: &[&str] = &[
    "session_id",
    "benchmark_id",
    "metric_id",
    "n",
    "median",
    "ci_low",
    "ci_high",
    "mean",
    "stddev",
    "min",
    "max",
    "multimodal",
    "interfered",
    "clean_median",
];

/// Whether tare flagged the run as interfered with (`extra.environment.interfered`).
pub fn interfered(r: &crate::results::model::Run) -> bool {
    r.extra
        .get(crate::machine::extra_keys::RUN_ENVIRONMENT)
        .and_then(|e| e.get("interfered"))
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// Of the counted runs, how many were interfered with, and the median of metric `m` (in
/// [`METRICS`] order) over the others: `None` when none was flagged (the summary's median
/// stands) or every one was (nothing clean to detect with).
pub fn clean_median(runs: &[crate::results::model::Run], m: usize) -> (usize, Option<f64>) {
    let counted = runs.iter().filter(|r| r.counted);
    let flagged = counted.clone().filter(|r| interfered(r)).count();
    if flagged == 0 {
        return (0, None);
    }
    let values: Vec<f64> = counted
        .filter(|r| !interfered(r))
        .filter_map(|r| match m {
            0 => Some(r.wall_time),
            1 => Some(r.cpu_time),
            2 => Some(r.user_time),
            3 => Some(r.system_time),
            _ => r.peak_memory.map(|x| x as f64),
        })
        .collect();
    let sorted = crate::stats::quantile::sorted_without_nan(&values);
    (flagged, crate::stats::quantile::median(&sorted))
}

/// One `runs` row.
pub fn run_row(sid: i64, bid: i64, r: &crate::results::model::Run) -> Vec<Val> {
    vec![
        Val::int(sid),
        Val::int(bid),
        Val::int(r.index as i64),
        Val::Int(r.round.map(|x| x as i64)),
        Val::int(i64::from(r.warmup)),
        Val::int(i64::from(r.counted)),
        Val::text(r.termination.as_str()),
        Val::Int(r.exit_code.map(i64::from)),
        Val::Int(r.signal.map(i64::from)),
        Val::real(r.start_offset),
        Val::real(r.wall_time),
        Val::real(r.cpu_time),
        Val::real(r.user_time),
        Val::real(r.system_time),
        Val::Int(r.peak_memory.map(|x| x as i64)),
        Val::Int(r.involuntary_context_switches.map(|x| x as i64)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_with_or_without_an_offset() {
        assert_eq!(parse_time("1970-01-01T01:00:00Z"), Some(3600));
        assert_eq!(parse_time("1970-01-01T02:00:00+01:00"), Some(3600));
        assert_eq!(parse_time("1970-01-01T00:30:00-00:30"), Some(3600));
        assert_eq!(parse_time("1970-01-01 01:00:00"), Some(3600));
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-10-01T00:00:00+xx:00",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn commits_are_checked() {
        let ok = CommitInfo {
            hash: "0123abcd".into(),
            ..Default::default()
        };
        assert!(super::super::git::check_commit(&ok).is_ok());
        for bad in ["", "a b", "x\ny", &"a".repeat(201)] {
            let c = CommitInfo {
                hash: bad.to_string(),
                ..Default::default()
            };
            let e = super::super::git::check_commit(&c).unwrap_err();
            assert!(e.starts_with("commit '") && !e.contains('\n'), "{e}");
        }
    }
}
