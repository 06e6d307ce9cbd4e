//! Where `tare run --store` and `tare kernels --store` put a finished session (a history store
//! or a `tare serve` server), opened before the first run; and the store every `tare history`
//! command opens. Here, not in `cli/history.rs`, so that `tare run`'s files and the history
//! commands (whose `confirm` and `bisect` run `tare run` sessions) do not import each other.

use crate::error::usage;
use crate::results::model::Session;
use crate::store::git::{self, CommitInfo};
use crate::store::{self, ingest, Store};
use anyhow::Result;
use std::path::Path;

/// The store a `tare history` command works on (a path or postgresql://…); a server's URL is a
/// usage error that says what to use instead.
pub(crate) fn open(spec: &str) -> Result<Store> {
    if crate::serve::client::is_url(spec) {
        return Err(usage(format!(
            "--store {spec} is a server: `tare history add --server {spec}` uploads to it, and its pages and API (docs/server.md) show it; the other history commands need the store itself (a path or postgresql://…)"
        )));
    }
    Store::open(spec).map_err(|e| usage(format!("{e:#}; check --store or TARE_STORE")))
}

/// For `tare run --store`: the commit of the repository in the current directory, if any.
pub fn current_commit() -> Option<CommitInfo> {
    git::commit_info(&std::env::current_dir().ok()?, None).ok()
}

/// Where `tare run --store` puts its session: a store, or a `tare serve` server.
pub enum RunStore {
    Local(Store),
    Server(crate::serve::client::Server),
}

/// For `tare run --store`: opens the store (or checks that the server answers and takes
/// TARE_TOKEN) before the first run (a bad URL is a usage error).
pub fn open_for_run(spec: Option<&str>) -> Result<RunStore> {
    let spec = store::location(spec);
    match spec.as_str() {
        url if crate::serve::client::is_url(url) => {
            let server = crate::serve::client::Server::from(Some(url), None)
                .map_err(|e| usage(format!("--store {url}: {e:#}")))?;
            server
                .check()
                .map_err(|e| usage(format!("--store {url}: {e:#}")))?;
            Ok(RunStore::Server(server))
        }
        local => Ok(RunStore::Local(open(local)?)),
    }
}

/// For `tare run --store`: adds the finished session. One line on failure.
pub fn store_session(st: &mut RunStore, session: &Session, source: Option<&Path>) -> Result<()> {
    let st = match st {
        RunStore::Local(st) => st,
        RunStore::Server(server) => {
            // The commit `tare run` recorded in the session's extra.git goes with it.
            let u = server.upload(vec![(session.clone(), None)])?;
            eprintln!(
                "stored {} runs on {}{}",
                u.runs,
                server.url,
                ingest::recorded_commit(session)
                    .map(|c| format!(" at commit {}", &c.hash[..10.min(c.hash.len())]))
                    .unwrap_or_default()
            );
            return Ok(());
        }
    };
    let source = source.map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
    let r = ingest::add_session(
        &mut st.db,
        session,
        None,
        source.as_ref().map(|p| p.to_string_lossy()).as_deref(),
    )
    .map_err(|e| anyhow::anyhow!("cannot store the session in {}: {e:#}", st.location))?;
    eprintln!(
        "stored {} runs in {}{}",
        r.runs,
        st.location,
        ingest::recorded_commit(session)
            .map(|c| format!(" at commit {}", &c.hash[..10.min(c.hash.len())]))
            .unwrap_or_default()
    );
    Ok(())
}
