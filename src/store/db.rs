//! The two database backends behind one small interface: SQLite (an embedded file, the
//! default) and PostgreSQL (a server shared by a team). Everything above this file writes one
//! SQL dialect — `?` placeholders, `RETURNING id`, 64-bit integers and doubles — and this file
//! turns it into what each backend takes. Not for: the schema (`schema.rs`) or any query.
//!
//! Values travel as [`Val`], with typed nulls, because PostgreSQL checks a parameter's type
//! even when it is null. Bulk inserts use one prepared statement in a transaction (SQLite) and
//! `COPY … FROM STDIN` (PostgreSQL).

use anyhow::{anyhow, Context, Result};
use std::path::Path;

/// How long an SQLite writer waits for another one before it gives up.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// One SQL value. Nulls carry their column's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
}

impl Val {
    pub fn int(v: i64) -> Val {
        Val::Int(Some(v))
    }
    pub fn real(v: f64) -> Val {
        Val::Real(Some(v))
    }
    pub fn text(v: impl Into<String>) -> Val {
        Val::Text(Some(v.into()))
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Val::Int(v) => *v,
            Val::Real(v) => v.map(|x| x as i64),
            Val::Text(_) => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(v) => v.map(|x| x as f64),
            Val::Real(v) => *v,
            Val::Text(_) => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Text(v) => v.as_deref(),
            _ => None,
        }
    }
    pub fn into_string(self) -> Option<String> {
        match self {
            Val::Text(v) => v,
            _ => None,
        }
    }
}

/// Which backend a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// A connection to either backend.
pub enum Db {
    Sqlite(rusqlite::Connection),
    /// The client and its prepared statements by SQL text (each saves a round trip).
    Postgres(
        Box<postgres::Client>,
        std::collections::HashMap<String, postgres::Statement>,
    ),
}

/// A store path that exists must be a regular file (through any links): SQLite on a FIFO, a
/// device or a directory fails later with "disk I/O error" or, on a device, reads and writes it.
fn not_a_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // missing: SQLite creates it (a dangling link's target too)
    };
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(anyhow!(
        "the store {} is {kind}, not an SQLite file: name a file (a new path creates one)",
        path.display()
    ))
}

impl Db {
    /// Opens (creating) an SQLite file; its directory is created when missing.
    pub fn open_sqlite(path: &Path) -> Result<Db> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the store's directory {}", dir.display())
            })?;
        }
        not_a_file(path)?;
        let c = rusqlite::Connection::open(path)
            .with_context(|| format!("cannot open the SQLite store {}", path.display()))?;
        // Concurrent writers (two CI jobs adding results) wait for each other up to this long.
        c.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: readers do not block the writer; NORMAL sync is durable across a process crash.
        // Switching a new file to WAL takes a lock of its own, which another process opening
        // the same new file may hold for a moment: tried again within the busy timeout.
        let start = std::time::Instant::now();
        loop {
            match c.execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
            ) {
                Ok(()) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && start.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(anyhow!(
                        "{} is not an SQLite database tare can open: {e}",
                        path.display()
                    ))
                }
            }
        }
        Ok(Db::Sqlite(c))
    }

    /// Connects to a PostgreSQL server by URL (`postgresql://user:pass@host:port/db`).
    pub fn open_postgres(url: &str) -> Result<Db> {
        let c = postgres::Client::connect(url, postgres::NoTls)
            .with_context(|| format!("cannot connect to the PostgreSQL store {}", redact(url)))?;
        Ok(Db::Postgres(Box::new(c), Default::default()))
    }

    pub fn kind(&self) -> Kind {
        match self {
            Db::Sqlite(_) => Kind::Sqlite,
            Db::Postgres(..) => Kind::Postgres,
        }
    }

    /// Starts a transaction that will write. SQLite: `BEGIN IMMEDIATE`, which takes the write
    /// lock now, waiting (the busy timeout) while another process holds it; a deferred `BEGIN`
    /// that reads first and writes later fails at once with "database is locked" when another
    /// writer committed in between (the busy handler cannot help a read transaction that must
    /// become a write one). PostgreSQL: `BEGIN` (its row locks and upserts do the rest).
    pub fn begin_write(&mut self) -> Result<()> {
        match self {
            Db::Sqlite(_) => self.batch("BEGIN IMMEDIATE"),
            Db::Postgres(..) => self.batch("BEGIN"),
        }
    }

    /// Runs several statements without parameters (DDL, BEGIN, COMMIT).
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Db::Sqlite(c) => c.execute_batch(sql).map_err(|e| anyhow!("{e}")),
            Db::Postgres(c, _) => c.batch_execute(sql).map_err(|e| anyhow!("{}", pg_err(&e))),
        }
        .with_context(|| format!("store: {}", first_words(sql)))
    }

    /// Runs one statement; returns the number of rows changed.
    pub fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(sql)?;
                let n = st.execute(rusqlite::params_from_iter(params.iter().map(SqliteVal)))?;
                Ok(n as u64)
            }
            Db::Postgres(c, cache) => {
                let st = prepared(c, cache, sql)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                c.execute(&st, &refs).map_err(|e| anyhow!("{}", pg_err(&e)))
            }
        }
        .with_context(|| format!("store: {}", first_words(sql)))
    }

    /// Runs one statement that may be skipped: on SQLite it does not wait for another writer
    /// (fails at once instead of after the busy timeout); the busy timeout is restored after.
    pub fn exec_nowait(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        if let Db::Sqlite(c) = self {
            c.busy_timeout(std::time::Duration::ZERO)?;
        }
        let r = self.exec(sql, params);
        if let Db::Sqlite(c) = self {
            c.busy_timeout(BUSY_TIMEOUT)?;
        }
        r
    }

    /// Runs a query; every row as values in column order.
    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>> {
        match self {
            Db::Sqlite(c) => (|| -> Result<Vec<Vec<Val>>> {
                let mut st = c.prepare_cached(sql)?;
                let cols = st.column_count();
                let mut rows =
                    st.query(rusqlite::params_from_iter(params.iter().map(SqliteVal)))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    let mut row = Vec::with_capacity(cols);
                    for i in 0..cols {
                        use rusqlite::types::ValueRef;
                        row.push(match r.get_ref(i)? {
                            ValueRef::Null => Val::Text(None),
                            ValueRef::Integer(v) => Val::int(v),
                            ValueRef::Real(v) => Val::real(v),
                            ValueRef::Text(t) => Val::text(String::from_utf8_lossy(t)),
                            ValueRef::Blob(_) => Val::Text(None),
                        });
                    }
                    out.push(row);
                }
                Ok(out)
            })(),
            Db::Postgres(c, cache) => (|| -> Result<Vec<Vec<Val>>> {
                use postgres::types::Type;
                let st = prepared(c, cache, sql)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                let rows = c.query(&st, &refs).map_err(|e| anyhow!("{}", pg_err(&e)))?;
                let mut out = Vec::with_capacity(rows.len());
                for r in &rows {
                    let mut row = Vec::with_capacity(r.len());
                    for (i, col) in r.columns().iter().enumerate() {
                        let t = col.type_();
                        row.push(if *t == Type::INT8 {
                            Val::Int(r.try_get(i)?)
                        } else if *t == Type::INT4 {
                            Val::Int(r.try_get::<_, Option<i32>>(i)?.map(i64::from))
                        } else if *t == Type::FLOAT8 {
                            Val::Real(r.try_get(i)?)
                        } else if *t == Type::TEXT || *t == Type::VARCHAR {
                            Val::Text(r.try_get(i)?)
                        } else {
                            return Err(anyhow!(
                                "column {} has type {t}, which the store does not read",
                                col.name()
                            ));
                        });
                    }
                    out.push(row);
                }
                Ok(out)
            })(),
        }
        .with_context(|| format!("store: {}", first_words(sql)))
    }

    /// Runs an `INSERT … RETURNING id`; returns the id.
    pub fn insert_id(&mut self, sql: &str, params: &[Val]) -> Result<i64> {
        let rows = self.query(sql, params)?;
        rows.first()
            .and_then(|r| r.first())
            .and_then(Val::as_i64)
            .ok_or_else(|| anyhow!("store: {} returned no id", first_words(sql)))
    }

    /// Inserts many rows into `table` (inside the caller's transaction).
    pub fn bulk_insert(&mut self, table: &str, columns: &[&str], rows: &[Vec<Val>]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        match self {
            Db::Sqlite(c) => {
                let sql = format!(
                    "INSERT INTO {table} ({}) VALUES ({})",
                    columns.join(", "),
                    vec!["?"; columns.len()].join(", ")
                );
                let mut st = c.prepare_cached(&sql)?;
                for r in rows {
                    st.execute(rusqlite::params_from_iter(r.iter().map(SqliteVal)))
                        .with_context(|| format!("store: inserting into {table}"))?;
                }
                Ok(())
            }
            Db::Postgres(c, _) => {
                use std::io::Write;
                let sql = format!("COPY {table} ({}) FROM STDIN", columns.join(", "));
                let mut w = c
                    .copy_in(sql.as_str())
                    .map_err(|e| anyhow!("store: {sql}: {}", pg_err(&e)))?;
                let mut buf = String::with_capacity(64 * 1024);
                for r in rows {
                    for (i, v) in r.iter().enumerate() {
                        if i > 0 {
                            buf.push('\t');
                        }
                        copy_text(&mut buf, v);
                    }
                    buf.push('\n');
                    if buf.len() > 60 * 1024 {
                        w.write_all(buf.as_bytes())?;
                        buf.clear();
                    }
                }
                w.write_all(buf.as_bytes())?;
                w.finish()
                    .map_err(|e| anyhow!("store: {sql}: {}", pg_err(&e)))?;
                Ok(())
            }
        }
    }
}

/// The prepared statement of `sql` (`?` placeholders), prepared once per connection.
fn prepared(
    c: &mut postgres::Client,
    cache: &mut std::collections::HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement> {
    if let Some(st) = cache.get(sql) {
        return Ok(st.clone());
    }
    let st = c
        .prepare(&dollar_placeholders(sql))
        .map_err(|e| anyhow!("{}", pg_err(&e)))?;
    cache.insert(sql.to_string(), st.clone());
    Ok(st)
}

/// A value in COPY's text format: `\N` for null, backslash escapes in text.
fn copy_text(buf: &mut String, v: &Val) {
    use std::fmt::Write;
    match v {
        Val::Int(Some(x)) => {
            let _ = write!(buf, "{x}");
        }
        // `{:?}` prints the shortest representation that reads back exactly.
        Val::Real(Some(x)) => {
            let _ = write!(buf, "{x:?}");
        }
        Val::Text(Some(s)) => {
            for ch in s.chars() {
                match ch {
                    '\\' => buf.push_str("\\\\"),
                    '\t' => buf.push_str("\\t"),
                    '\n' => buf.push_str("\\n"),
                    '\r' => buf.push_str("\\r"),
                    c => buf.push(c),
                }
            }
        }
        _ => buf.push_str("\\N"),
    }
}

struct SqliteVal<'a>(&'a Val);

impl rusqlite::ToSql for SqliteVal<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value, ValueRef};
        Ok(match self.0 {
            Val::Int(Some(v)) => ToSqlOutput::Owned(Value::Integer(*v)),
            Val::Real(Some(v)) => ToSqlOutput::Owned(Value::Real(*v)),
            Val::Text(Some(s)) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            _ => ToSqlOutput::Owned(Value::Null),
        })
    }
}

fn pg_params(params: &[Val]) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    params
        .iter()
        .map(|v| -> Box<dyn postgres::types::ToSql + Sync> {
            match v {
                Val::Int(x) => Box::new(*x),
                Val::Real(x) => Box::new(*x),
                Val::Text(x) => Box::new(x.clone()),
            }
        })
        .collect()
}

/// `?` placeholders as PostgreSQL's `$1, $2, …` (the store's SQL has no `?` in literals).
pub fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(ch);
        }
    }
    out
}

/// A PostgreSQL error with the server's message (the client's Display hides it).
fn pg_err(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

fn first_words(sql: &str) -> String {
    let s: String = sql.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    s
}

/// A connection URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_redaction() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE b = ? AND c = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = $2"
        );
        assert_eq!(
            redact("postgresql://tare:secret@127.0.0.1:5433/tare"),
            "postgresql://tare:***@127.0.0.1:5433/tare"
        );
        assert_eq!(redact("postgresql://h/db"), "postgresql://h/db");
        let mut b = String::new();
        copy_text(&mut b, &Val::text("a\tb\\c\nd"));
        assert_eq!(b, "a\\tb\\\\c\\nd");
    }
}
