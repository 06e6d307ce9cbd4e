//! Helpers of the store tests: the PostgreSQL server that `.ci/services.d/20-postgresql.sh`
//! starts (a fresh schema per test), and synthetic series of sessions made from the fixture
//! results by scaling their times.
#![allow(dead_code)]

#[path = "../common/skip.rs"]
pub mod skip;
use tare::results::model::{MetricSummary, Session};
use tare::store::git::CommitInfo;

/// The test server's URL: `TARE_TEST_POSTGRES`, else /run/tare-ci/postgres.url. Missing: a
/// failure when `CI=true`, otherwise `None` (the caller skips, saying so).
pub fn pg_url() -> Option<String> {
    let url = std::env::var("TARE_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/run/tare-ci/postgres.url")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        });
    if url.is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "CI=true but no PostgreSQL: run .ci/services.d/20-postgresql.sh or set TARE_TEST_POSTGRES"
        );
        skip::skip(
            "PostgreSQL",
            "run .ci/services.d/20-postgresql.sh as root, or set TARE_TEST_POSTGRES",
        );
    }
    url
}

/// A fresh, empty schema on the server for the test `prefix` and a URL whose connections use
/// it. Schemas left by earlier runs of the same test (other process ids) are dropped first.
pub fn pg_schema(base: &str, prefix: &str) -> String {
    let name = format!("{prefix}_{}", std::process::id());
    let mut c =
        postgres::Client::connect(base, postgres::NoTls).expect("connect to the test server");
    let old = c
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE $1",
            &[&format!("{prefix}\\_%")],
        )
        .unwrap();
    for r in old {
        let n: String = r.get(0);
        c.batch_execute(&format!("DROP SCHEMA IF EXISTS {n} CASCADE"))
            .unwrap();
    }
    c.batch_execute(&format!("CREATE SCHEMA {name}")).unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-c%20search_path%3D{name}")
}

pub fn fixture() -> Session {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/results/plain.json"
    );
    tare::results::read::load_session(std::path::Path::new(path)).unwrap()
}

fn scale(m: &mut Option<MetricSummary>, f: f64) {
    if let Some(m) = m {
        for v in [
            &mut m.median,
            &mut m.median_ci_low,
            &mut m.median_ci_high,
            &mut m.mean,
            &mut m.stddev,
            &mut m.min,
            &mut m.max,
            &mut m.q1,
            &mut m.q3,
            &mut m.iqr,
            &mut m.p5,
            &mut m.p95,
        ] {
            *v *= f;
        }
    }
}

/// The fixture session as measured at commit `i` with wall times scaled by `factor`.
pub fn session_at(base: &Session, i: usize, factor: f64) -> Session {
    let mut s = base.clone();
    s.started_at = format!(
        "2026-10-{:02}T{:02}:{:02}:00Z",
        1 + i / 48,
        (i / 2) % 24,
        (i % 2) * 30
    );
    s.seed = 1000 + i as u64;
    for b in &mut s.benchmarks {
        for r in &mut b.runs {
            r.wall_time *= factor;
        }
        scale(&mut b.summary.wall_time, factor);
    }
    s
}

/// The fixture session as measured at commit `i` with wall times scaled by `wall` and CPU
/// times (user and system with them) by `cpu`.
pub fn session_scaled(base: &Session, i: usize, wall: f64, cpu: f64) -> Session {
    let mut s = session_at(base, i, wall);
    for b in &mut s.benchmarks {
        for r in &mut b.runs {
            r.cpu_time *= cpu;
            r.user_time *= cpu;
            r.system_time *= cpu;
        }
        scale(&mut b.summary.cpu_time, cpu);
        scale(&mut b.summary.user_time, cpu);
        scale(&mut b.summary.system_time, cpu);
    }
    s
}

/// A made-up commit hash whose first characters differ between commits.
pub fn hash(i: usize) -> String {
    format!(
        "{:08x}{:032x}",
        ((i as u64).wrapping_mul(2654435761) & 0xffff_ffff) ^ 0xabcd_ef12,
        i
    )
}

pub fn commit(i: usize) -> CommitInfo {
    CommitInfo {
        hash: hash(i),
        parents: if i == 0 { vec![] } else { vec![hash(i - 1)] },
        branch: Some("main".into()),
        time: Some(1_790_000_000 + 3600 * i as i64),
        subject: Some(format!("commit {i}")),
        dirty: false,
    }
}

/// A deterministic per-commit noise factor around 1 (CV ≈ 0.5%).
pub fn noise(i: usize) -> f64 {
    let x = ((i as f64 + 1.0) * 12.9898).sin() * 43758.5453;
    1.0 + 0.01 * (x - x.floor() - 0.5)
}
