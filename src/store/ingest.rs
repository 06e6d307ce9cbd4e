//! Putting a finished session into the store: its commit, machine, benchmarks, every run and
//! the summaries tare computed, in one transaction. A session already in the store (same start
//! time, host and seed) is skipped, so adding a file twice changes nothing. Not for: reading
//! results files (`crate::results::read`) or computing statistics.

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

/// Seconds since the epoch of an RFC 3339 time (0 when it cannot be read).
pub fn unix_time(rfc3339: &str) -> i64 {
    humantime::parse_rfc3339_weak(rfc3339)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
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

pub fn commit_id(db: &mut Db, c: &CommitInfo) -> Result<i64> {
    if let Some(id) = id_of(
        db,
        "SELECT id FROM commits WHERE hash = ?",
        &[Val::text(&c.hash)],
    )? {
        if let Some(b) = &c.branch {
            db.exec(
                "UPDATE commits SET branch = ? WHERE id = ? AND branch IS NULL",
                &[Val::text(b), Val::int(id)],
            )?;
        }
        return Ok(id);
    }
    db.insert_id(
        "INSERT INTO commits (hash, parents, branch, time_unix, subject) VALUES (?, ?, ?, ?, ?) RETURNING id",
        &[
            Val::text(&c.hash),
            Val::text(c.parents.join(" ")),
            Val::Text(c.branch.clone()),
            Val::Int(c.time),
            Val::Text(c.subject.clone()),
        ],
    )
}

fn machine_id(db: &mut Db, s: &Session) -> Result<i64> {
    let fp = fingerprint(&s.machine);
    if let Some(id) = id_of(
        db,
        "SELECT id FROM machines WHERE fingerprint = ?",
        &[Val::text(&fp)],
    )? {
        return Ok(id);
    }
    let m = &s.machine;
    db.insert_id(
        "INSERT INTO machines (fingerprint, hostname, cpu_model, logical_cpus, physical_cores, memory_bytes, inventory) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        &[
            Val::text(fp),
            Val::text(&m.hostname),
            Val::text(&m.cpu_model),
            Val::int(m.logical_cpus as i64),
            Val::int(m.physical_cores as i64),
            Val::int(m.memory_bytes as i64),
            Val::text(serde_json::to_string(m)?),
        ],
    )
}

fn benchmark_id(db: &mut Db, b: &crate::results::model::Benchmark) -> Result<i64> {
    let key = benchmark_key(&b.name, &b.parameters);
    if let Some(id) = id_of(
        db,
        "SELECT id FROM benchmarks WHERE key = ?",
        &[Val::text(&key)],
    )? {
        return Ok(id);
    }
    db.insert_id(
        "INSERT INTO benchmarks (key, name, command, parameters) VALUES (?, ?, ?, ?) RETURNING id",
        &[
            Val::text(key),
            Val::text(&b.name),
            Val::text(&b.command),
            Val::text(serde_json::to_string(&b.parameters)?),
        ],
    )
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

/// Adds one session (inside its own transaction).
pub fn add_session(
    db: &mut Db,
    s: &Session,
    commit: Option<&CommitInfo>,
    source: Option<&str>,
) -> Result<Added> {
    db.batch("BEGIN")?;
    match add_in_transaction(db, s, commit, source) {
        Ok(a) => {
            db.batch("COMMIT")?;
            Ok(a)
        }
        Err(e) => {
            let _ = db.batch("ROLLBACK");
            Err(e)
        }
    }
}

fn add_in_transaction(
    db: &mut Db,
    s: &Session,
    commit: Option<&CommitInfo>,
    source: Option<&str>,
) -> Result<Added> {
    let ident = identity(s);
    if let Some(id) = id_of(
        db,
        "SELECT id FROM sessions WHERE identity = ?",
        &[Val::text(&ident)],
    )? {
        return Ok(Added {
            added: false,
            session_id: id,
            runs: 0,
        });
    }
    let recorded = recorded_commit(s);
    let commit = commit.or(recorded.as_ref());
    let cid = match commit {
        Some(c) => Some(commit_id(db, c)?),
        None => None,
    };
    let mid = machine_id(db, s)?;
    let mut header = s.clone();
    for b in &mut header.benchmarks {
        b.runs.clear();
    }
    let sid = db.insert_id(
        "INSERT INTO sessions (identity, commit_id, dirty, machine_id, started_at, started_unix, tare_version, method, kernel, os, source, header) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        &[
            Val::text(ident),
            Val::Int(cid),
            Val::int(i64::from(commit.is_some_and(|c| c.dirty))),
            Val::int(mid),
            Val::text(&s.started_at),
            Val::int(unix_time(&s.started_at)),
            Val::text(&s.tare_version),
            Val::text(s.method.kind.as_str()),
            Val::text(&s.machine.kernel),
            Val::text(&s.machine.os),
            Val::Text(source.map(String::from)),
            Val::text(serde_json::to_string(&header)?),
        ],
    )?;
    let metrics = metric_ids(db)?;
    let mut runs: Vec<Vec<Val>> = Vec::new();
    let mut sums: Vec<Vec<Val>> = Vec::new();
    for b in &s.benchmarks {
        let bid = benchmark_id(db, b)?;
        for r in &b.runs {
            runs.push(run_row(sid, bid, r));
        }
        let multimodal = i64::from(b.diagnostics.iter().any(|d| d.kind == "modes"));
        let per_metric: [&Option<MetricSummary>; 5] = [
            &b.summary.wall_time,
            &b.summary.cpu_time,
            &b.summary.user_time,
            &b.summary.system_time,
            &b.summary.peak_memory,
        ];
        for (k, m) in per_metric.iter().enumerate() {
            if let Some(m) = m {
                sums.push(vec![
                    Val::int(sid),
                    Val::int(bid),
                    Val::int(metrics[k]),
                    Val::int(m.n as i64),
                    Val::real(m.median),
                    Val::real(m.median_ci_low),
                    Val::real(m.median_ci_high),
                    Val::real(m.mean),
                    Val::real(m.stddev),
                    Val::real(m.min),
                    Val::real(m.max),
                    Val::int(multimodal),
                ]);
            }
        }
    }
    let n = runs.len();
    db.bulk_insert("runs", RUN_COLUMNS, &runs)?;
    db.bulk_insert("summaries", SUMMARY_COLUMNS, &sums)?;
    Ok(Added {
        added: true,
        session_id: sid,
        runs: n,
    })
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
];

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
