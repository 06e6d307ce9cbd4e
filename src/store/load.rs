//! Stored sessions read back as sessions: the header `ingest` kept (everything but the runs)
//! with the runs of the `runs` table, for comparing two commits the way `tare compare` compares
//! two results files. What the `runs` table does not keep (a run's `extra` records and optional
//! meters) comes back empty. Not for: trends (`query.rs`).

use super::db::{Db, Val};
use crate::results::model::{Run, Session, Termination};
use anyhow::{anyhow, bail, Context, Result};

/// The significance level and noise band of a comparison: `tare compare`'s defaults (its
/// `--alpha` and `--noise-threshold` take them from here) and what `tare serve` compares two
/// stored commits with, so that both give one verdict.
pub const COMPARE_ALPHA: f64 = 0.05;
pub const COMPARE_NOISE: f64 = 0.01;

/// The settings `tare serve` compares two stored commits with: `tare compare`'s defaults.
pub fn compare_settings() -> crate::conclude::levels::Settings {
    crate::conclude::levels::Settings {
        test: crate::conclude::analysis::Test::MannWhitney,
        alpha: COMPARE_ALPHA,
        noise: COMPARE_NOISE,
        confidence: 0.95,
        resamples: 10_000,
        seed: 0,
    }
}

/// The full hash of the stored commit `rev` names (a hash or a prefix of at least 4 digits).
pub fn resolve_commit(db: &mut Db, rev: &str) -> Result<String> {
    if rev.len() < 4
        || !rev
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
    {
        bail!("commit '{rev}': give a stored commit's hash or its first 4 or more characters");
    }
    let exact = db.query("SELECT hash FROM commits WHERE hash = ?", &[Val::text(rev)])?;
    if !exact.is_empty() {
        return Ok(rev.to_string());
    }
    // A literal, case-sensitive prefix (LIKE would take `_` for any character, and ignores
    // case on SQLite).
    let rows = db.query(
        "SELECT hash FROM commits WHERE substr(hash, 1, length(?)) = ? ORDER BY hash LIMIT 2",
        &[Val::text(rev), Val::text(rev)],
    )?;
    match rows.as_slice() {
        [one] => Ok(one[0].as_str().unwrap_or_default().to_string()),
        [] => bail!(
            "no stored commit starts with '{rev}': give a commit that has results in the store"
        ),
        _ => bail!("'{rev}' is the start of several stored commits: give more of the hash"),
    }
}

/// The sessions stored at commit `hash` (on machine `machine_id` when given), oldest first,
/// each with its runs. Dirty sessions of the commit are left out (they measured other code).
pub fn sessions_at(db: &mut Db, hash: &str, machine_id: Option<i64>) -> Result<Vec<Session>> {
    let mut sql = String::from(
        "SELECT se.id, h.header FROM sessions se JOIN commits c ON c.id = se.commit_id \
         JOIN session_headers h ON h.session_id = se.id WHERE c.hash = ? AND se.dirty = 0",
    );
    let mut params = vec![Val::text(hash)];
    if let Some(m) = machine_id {
        sql.push_str(" AND se.machine_id = ?");
        params.push(Val::int(m));
    }
    sql.push_str(" ORDER BY se.started_unix, se.id");
    let rows = db.query(&sql, &params)?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let id = r[0].as_i64().unwrap_or(0);
        let header = r[1].as_str().unwrap_or_default();
        let mut s: Session = serde_json::from_str(header)
            .with_context(|| format!("store: the header of session {id} does not read"))?;
        let runs = db.query(
            "SELECT b.name, b.parameters, r.idx, r.round, r.warmup, r.counted, r.termination, r.exit_code, r.signal, \
                    r.start_offset, r.wall_time, r.cpu_time, r.user_time, r.system_time, r.peak_memory, r.context_switches \
             FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id WHERE r.session_id = ? ORDER BY r.benchmark_id, r.idx",
            &[Val::int(id)],
        )?;
        for row in runs {
            let name = row[0].as_str().unwrap_or_default();
            let params: std::collections::BTreeMap<String, String> =
                serde_json::from_str(row[1].as_str().unwrap_or("{}")).unwrap_or_default();
            let Some(b) = s
                .benchmarks
                .iter_mut()
                .find(|b| b.name == name && b.parameters == params)
            else {
                continue;
            };
            b.runs.push(run_of(&row)?);
        }
        out.push(s);
    }
    Ok(out)
}

fn run_of(r: &[Val]) -> Result<Run> {
    let termination: Termination = serde_json::from_value(serde_json::Value::String(
        r[6].as_str().unwrap_or("exit").to_string(),
    ))
    .map_err(|e| anyhow!("store: a run's termination does not read: {e}"))?;
    let f = |i: usize| r[i].as_f64().unwrap_or(f64::NAN);
    Ok(Run {
        index: r[2].as_i64().unwrap_or(0) as usize,
        round: r[3].as_i64().map(|x| x as usize),
        warmup: r[4].as_i64() == Some(1),
        counted: r[5].as_i64() == Some(1),
        termination,
        exit_code: r[7].as_i64().map(|x| x as i32),
        signal: r[8].as_i64().map(|x| x as i32),
        start_offset: f(9),
        wall_time: f(10),
        cpu_time: f(11),
        user_time: f(12),
        system_time: f(13),
        peak_memory: r[14].as_i64().map(|x| x as u64),
        involuntary_context_switches: r[15].as_i64().map(|x| x as u64),
        extra: Default::default(),
        meters: Default::default(),
    })
}
