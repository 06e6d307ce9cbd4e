//! Several writers adding sessions to one fresh store at the same moment — two CI jobs running
//! `tare history add` into a new store: every session lands once, the machine, commit and
//! benchmark rows once each, and no writer fails. On SQLite writers wait for each other
//! (WAL, `BEGIN IMMEDIATE`, a busy timeout) instead of failing with "database is locked"; on
//! PostgreSQL the shared rows are upserts, so no writer stops on a duplicate key
//! (`machines_fingerprint_key` failed 3 of 3 tries before). Threads with a connection each,
//! released together by a barrier, several fresh stores in a row (the race is a window, not a
//! certainty); then two real `tare history add` processes.

mod store_support;

use std::sync::{Arc, Barrier};
use store_support::skip;
use store_support::*;
use tare::store::{ingest, query, Store};

const WRITERS: usize = 4;
const PER_WRITER: usize = 6;

/// `WRITERS` threads each open `spec` and add their own sessions of the same machine and
/// benchmarks (and two shared commits), all at once. Returns each writer's error, if any.
fn race(spec: &str) -> Vec<String> {
    let base = Arc::new(fixture());
    let barrier = Arc::new(Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (spec, base, barrier) = (spec.to_string(), base.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut st = Store::open(&spec).map_err(|e| format!("open: {e:#}"))?;
                let sessions: Vec<_> = (0..PER_WRITER)
                    .map(|k| session_at(&base, w * PER_WRITER + k, 1.0))
                    .collect();
                // Even writers name two shared commits; odd ones none (as `--no-git` does),
                // so that their transactions start with a read.
                let commits: Vec<_> = (0..PER_WRITER).map(|k| commit(k % 2)).collect();
                let commit_of = |k: usize| (w % 2 == 0).then(|| &commits[k]);
                barrier.wait();
                // Sessions one at a time (the path `tare run --store` takes), then a batch.
                for (k, s) in sessions.iter().enumerate().take(PER_WRITER / 2) {
                    ingest::add_session(&mut st.db, s, commit_of(k), None)
                        .map_err(|e| format!("{e:#}"))?;
                }
                let items: Vec<_> = (PER_WRITER / 2..PER_WRITER)
                    .map(|k| (&sessions[k], commit_of(k), None))
                    .collect();
                ingest::add_sessions(&mut st.db, &items, &mut ingest::Cache::default())
                    .map_err(|e| format!("{e:#}"))?;
                Ok(())
            })
        })
        .collect();
    handles
        .into_iter()
        .filter_map(|h| h.join().unwrap().err())
        .collect()
}

fn check(spec: &str) {
    let errors = race(spec);
    assert!(errors.is_empty(), "concurrent writers failed: {errors:?}");
    let mut st = Store::open(spec).unwrap();
    let [commits, machines, sessions, benchmarks, _] = query::counts(&mut st.db).unwrap();
    assert_eq!(
        (commits, machines, sessions),
        (2, 1, (WRITERS * PER_WRITER) as i64)
    );
    // Every session kept all its runs.
    let runs = st.db.query("SELECT COUNT(*) FROM runs", &[]).unwrap()[0][0]
        .as_i64()
        .unwrap();
    let per = fixture()
        .benchmarks
        .iter()
        .map(|b| b.runs.len())
        .sum::<usize>();
    assert_eq!(runs, (WRITERS * PER_WRITER * per) as i64);
    assert_eq!(benchmarks, fixture().benchmarks.len() as i64);
}

#[test]
fn concurrent_writers_on_a_fresh_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..5 {
        check(
            &dir.path()
                .join(format!("s{round}.sqlite"))
                .to_string_lossy(),
        );
    }
}

#[test]
fn concurrent_writers_on_a_fresh_postgresql_store() {
    let Some(base) = pg_url() else { return };
    for round in 0..5 {
        check(&pg_schema(&base, &format!("concurrent{round}")));
    }
}

/// Two `tare history add` processes into one new SQLite store, at once: both succeed.
#[test]
fn two_history_add_processes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let base = fixture();
    for w in 0..2 {
        let d = dir.path().join(format!("w{w}"));
        std::fs::create_dir(&d).unwrap();
        for k in 0..30 {
            let s = session_at(&base, w * 30 + k, 1.0);
            std::fs::write(
                d.join(format!("{k:03}.json")),
                serde_json::to_vec(&s).unwrap(),
            )
            .unwrap();
        }
    }
    let mut specs = vec![dir.path().join("p.sqlite").to_string_lossy().into_owned()];
    if let Some(base) = pg_url() {
        specs.push(pg_schema(&base, "concurrentproc"));
    }
    for spec in specs {
        let children: Vec<_> = (0..2)
            .map(|w| {
                std::process::Command::new(env!("CARGO_BIN_EXE_tare"))
                    .args(["history", "--store", &spec, "add", "--no-git"])
                    .arg(dir.path().join(format!("w{w}")))
                    .output_async()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let mut st = Store::open(&spec).unwrap();
        let [_, machines, sessions, _, _] = query::counts(&mut st.db).unwrap();
        assert_eq!((machines, sessions), (1, 60), "{spec}");
    }
}

trait Spawn {
    fn output_async(&mut self) -> std::process::Child;
}

impl Spawn for std::process::Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Peak resident memory of `tare history --store STORE add --no-git DIR`, by /usr/bin/time.
fn peak_rss_kb(store: &std::path::Path, dir: &std::path::Path) -> Option<u64> {
    let o = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss=%M"])
        .arg(env!("CARGO_BIN_EXE_tare"))
        .args(["history", "--store"])
        .arg(store)
        .args(["add", "--no-git"])
        .arg(dir)
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    err.lines()
        .rev()
        .find_map(|l| l.strip_prefix("maxrss=")?.trim().parse().ok())
}

/// `history add` streams its files: adding six times as many files takes about the same
/// memory (before: every file was parsed first, +60 MB for the 750 more files here).
#[test]
fn history_add_memory_does_not_grow_with_the_number_of_files() {
    if !std::path::Path::new("/usr/bin/time").exists() {
        skip::skip("/usr/bin/time", "apt-get install time");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut base = fixture();
    // 198 runs a file: three copies of each run.
    for b in &mut base.benchmarks {
        let runs = b.runs.clone();
        for _ in 0..2 {
            for r in &runs {
                let mut r = r.clone();
                r.index = b.runs.len();
                b.runs.push(r);
            }
        }
    }
    let mut rss = Vec::new();
    for n in [150, 900] {
        let d = dir.path().join(format!("f{n}"));
        std::fs::create_dir(&d).unwrap();
        for k in 0..n {
            let s = session_at(&base, k, 1.0);
            std::fs::write(
                d.join(format!("{k:04}.json")),
                serde_json::to_vec(&s).unwrap(),
            )
            .unwrap();
        }
        let store = dir.path().join(format!("s{n}.sqlite"));
        rss.push(peak_rss_kb(&store, &d).expect("/usr/bin/time printed maxrss"));
        let mut st = Store::open(&store.to_string_lossy()).unwrap();
        assert_eq!(query::counts(&mut st.db).unwrap()[2], n as i64);
    }
    assert!(
        rss[1] < rss[0] + 20_000,
        "peak RSS grew with the number of files: {} kB for 150 files, {} kB for 900",
        rss[0],
        rss[1]
    );
}
