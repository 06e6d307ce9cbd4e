//! Scale of the history store (run by `bench/store_scale.sh`): ingest COMMITS sessions of RUNS
//! runs each (1,000,000 runs by default) into SQLite and PostgreSQL, then time one benchmark's
//! trend over all COMMITS commits, and change detection over the default window.
//!
//!   cargo run --release --example store_scale -- --sqlite /tmp/s.sqlite [--postgres URL]
//!                                                 [--commits 10000] [--runs 100]
//!
//! The sessions are made in memory from the fixture results (one benchmark, its runs
//! repeated with made-up times), so the figures are the store's, not JSON parsing's.

use std::time::Instant;
use tare::results::model::Session;
use tare::store::git::CommitInfo;
use tare::store::{detect, ingest, query, Store};

fn arg(name: &str) -> Option<String> {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1).cloned())
}

fn sessions(commits: usize, runs: usize) -> Vec<(Session, CommitInfo)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/results/plain.json"
    );
    let mut base = tare::results::read::load_session(std::path::Path::new(path)).unwrap();
    base.benchmarks.truncate(1);
    let template = base.benchmarks[0].runs[5].clone();
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut out = Vec::with_capacity(commits);
    for i in 0..commits {
        let mut s = base.clone();
        s.started_at = format!("2026-01-01T00:00:00Z+{i}");
        s.seed = i as u64;
        // A 5% step 50 commits before the end: inside the detection window.
        let level = if i + 50 >= commits { 1.05 } else { 1.0 };
        let b = &mut s.benchmarks[0];
        b.runs = (0..runs)
            .map(|k| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut r = template.clone();
                r.index = k;
                r.round = Some(k);
                r.extra.clear();
                r.wall_time = 0.01 * level * (1.0 + 0.02 * ((x % 1000) as f64 / 1000.0 - 0.5));
                r
            })
            .collect();
        if let Some(m) = b.summary.wall_time.as_mut() {
            m.median = 0.01 * level;
        }
        let c = CommitInfo {
            hash: format!("{:040x}", 0x5ca1_e000_0000_u64 + i as u64),
            parents: vec![],
            branch: Some("main".into()),
            time: Some(1_700_000_000 + 60 * i as i64),
            subject: None,
            dirty: false,
        };
        out.push((s, c));
    }
    out
}

fn bench(name: &str, mut st: Store, data: &[(Session, CommitInfo)]) {
    let runs: usize = data.iter().map(|(s, _)| s.benchmarks[0].runs.len()).sum();
    let t = Instant::now();
    let mut cache = ingest::Cache::default();
    for chunk in data.chunks(200) {
        let items: Vec<_> = chunk.iter().map(|(s, c)| (s, Some(c), None)).collect();
        ingest::add_sessions(&mut st.db, &items, &mut cache).unwrap();
    }
    let ingest_s = t.elapsed().as_secs_f64();
    let series = query::series(&mut st.db).unwrap();
    let s = series
        .iter()
        .find(|s| s.metric == "wall_time")
        .unwrap()
        .clone();
    let mut times = Vec::new();
    let mut points = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let p = query::trend(&mut st.db, &s, None).unwrap();
        times.push(t.elapsed().as_secs_f64());
        points = p.len();
    }
    times.sort_by(f64::total_cmp);
    let t = Instant::now();
    let p = query::trend(&mut st.db, &s, Some(200)).unwrap();
    let changes = detect::changes(&p, &s, &detect::DetectSettings::default());
    let detect_s = t.elapsed().as_secs_f64();
    println!(
        "{name}: ingest {runs} runs ({} sessions) in {ingest_s:.2} s ({:.0} runs/s); trend over {points} commits in {:.1} ms (median of 5); detection over the newest 200 commits in {:.0} ms ({} change points)",
        data.len(),
        runs as f64 / ingest_s,
        times[2] * 1e3,
        detect_s * 1e3,
        changes.len()
    );
}

fn main() {
    let commits: usize = arg("--commits")
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runs: usize = arg("--runs").and_then(|v| v.parse().ok()).unwrap_or(100);
    let data = sessions(commits, runs);
    if let Some(path) = arg("--sqlite") {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(format!("{path}-wal"));
        bench("sqlite", Store::open(&path).unwrap(), &data);
    }
    if let Some(url) = arg("--postgres") {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        c.batch_execute("DROP SCHEMA IF EXISTS tare_scale CASCADE; CREATE SCHEMA tare_scale")
            .unwrap();
        let sep = if url.contains('?') { '&' } else { '?' };
        let scoped = format!("{url}{sep}options=-c%20search_path%3Dtare_scale");
        bench("postgresql", Store::open(&scoped).unwrap(), &data);
        c.batch_execute("DROP SCHEMA tare_scale CASCADE").unwrap();
    }
}
