//! History: a store of every session's raw runs and summaries, by commit and machine, and the
//! change points found in it. SQLite by default, PostgreSQL (same schema) for a team. Reads
//! results and git; never measures.
//!
//! * [`db`] — the two backends behind one interface;
//! * [`schema`] — versioned tables, created and migrated by tare;
//! * [`git`] — commit, branch and dirty flag of the repository; work trees for `confirm`;
//! * [`ingest`] — one session in, in one transaction;
//! * [`query`] — the series and one series' trend (one point per commit);
//! * [`detect`] — change points, effect sizes, the newest commit's judgment; alerts and their
//!   lifecycle (`detect::alerts`);
//! * [`judge`] — `history check`'s analysis and gate, one code for the CLI and the server;
//! * [`load`] — stored sessions read back whole, for comparing two commits (`tare serve`);
//! * [`overview`] — each series' newest value, fast, for the server's first page;
//! * [`tokens`] — the hashed upload tokens of `tare serve`;
//! * [`thresholds`] — per-series minimum effects kept with the code (`.tare/thresholds.toml`).
//!
//! Where the store is ([`location`]): `--store`, else `TARE_STORE`, else
//! `.tare/history.sqlite` in the top directory of the git repository holding the current
//! directory, else `$XDG_DATA_HOME/tare/history.sqlite` (`~/.local/share/tare/…`). A value
//! starting with `postgres://` or `postgresql://` is a PostgreSQL server.

pub mod bisect;
pub mod db;
pub mod detect;
pub mod git;
pub mod ingest;
pub mod judge;
pub mod load;
pub mod overview;
pub mod query;
pub mod schema;
pub mod thresholds;
pub mod tokens;

use anyhow::{Context, Result};
use db::Db;
use std::path::{Path, PathBuf};

/// An open, migrated store.
pub struct Store {
    pub db: Db,
    /// Where it is, for messages (a URL without its password, or a path).
    pub location: String,
}

/// Where the store is when `--store` names none (see the module documentation).
pub fn default_location(cwd: &Path) -> String {
    if let Ok(s) = std::env::var("TARE_STORE") {
        if !s.is_empty() {
            return s;
        }
    }
    if let Some(top) = git::toplevel(cwd) {
        return top
            .join(".tare/history.sqlite")
            .to_string_lossy()
            .into_owned();
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("tare/history.sqlite")
        .to_string_lossy()
        .into_owned()
}

/// The store `spec` names (or the default one).
pub fn location(spec: Option<&str>) -> String {
    match spec {
        Some(s) if !s.is_empty() && s != "default" => expand_home(s),
        _ => default_location(&std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))),
    }
}

/// `~/x` as the shell would expand it (it does not after `--store=`): HOME joined with `x`.
/// Other `~` forms are left as they are (a path named `~user` is refused by [`check_spec`]).
fn expand_home(s: &str) -> String {
    match (s.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if !home.is_empty() => PathBuf::from(home)
            .join(rest)
            .to_string_lossy()
            .into_owned(),
        _ => s.to_string(),
    }
}

/// Refuses a store path that starts with `~` after expansion (`~user/…`, or `~/` without
/// HOME): it would make a directory named `~` in the current directory.
pub fn check_spec(spec: &str) -> std::result::Result<(), String> {
    if spec.starts_with('~') {
        return Err(format!(
            "--store {spec}: a path starting with '~' is not expanded here; give the full path (e.g. $HOME/…)"
        ));
    }
    Ok(())
}

pub fn is_postgres(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

impl Store {
    /// Opens (creating and migrating) the store at `spec`: a PostgreSQL URL or an SQLite path.
    pub fn open(spec: &str) -> Result<Store> {
        check_spec(spec).map_err(|e| anyhow::anyhow!(e))?;
        let (mut db, location) = if is_postgres(spec) {
            (Db::open_postgres(spec)?, db::redact(spec))
        } else {
            (Db::open_sqlite(Path::new(spec))?, spec.to_string())
        };
        schema::migrate(&mut db, &location)
            .with_context(|| format!("cannot set up the store {location}"))?;
        Ok(Store { db, location })
    }

    /// Drops every table and creates the schema anew (for `tare history rebuild`).
    pub fn reset(&mut self) -> Result<()> {
        self.db.begin_write()?;
        for t in schema::TABLES {
            self.db.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
        }
        self.db.batch("COMMIT")?;
        schema::migrate(&mut self.db, &self.location)
    }
}

/// Now as RFC 3339 UTC (seconds).
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
