//! The scale check of issue 44 on a real `tare serve` (SQLite): an upload with a 100 kB host
//! name is refused with 422 and one line; a store of 10,000 series whose machine carries one
//! anyway (written by SQL, as a store of an older tare may hold it) serves its first anonymous
//! page, the first series of the API and the same with `metric=all` each in far less than a
//! generous bound, and the server's peak memory (VmHWM) stays far below another. The figures
//! are printed (`cargo test --test serve_scale -- --nocapture`); the bounds are no timings.

mod serve_support;
mod store_support;

use serve_support::*;
use std::time::{Duration, Instant};
use store_support::*;

/// A kB value of /proc/PID/status.
fn status_kb(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim_start_matches(':').split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} in /proc/{pid}/status"))
}

const SERIES: usize = 10_000;
const HOST: usize = 100_000;

#[test]
fn a_long_host_name_and_10000_series() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let st = store.to_str().unwrap();
    let token = new_token(st, "ci");
    let srv = Server::start(st, &[]);
    let results = srv.at(&format!("/api/v1/results?commit={}", commit(0).hash));

    // Refused at ingest: 422, one line naming the field and the limit.
    let mut s = serde_json::to_value(session_at(&fixture(), 0, 1.0)).unwrap();
    s["machine"]["hostname"] = "h".repeat(HOST).into();
    let (code, v) = post(&results, Some(&token), &serde_json::to_vec(&s).unwrap());
    assert_eq!(code, 422, "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("host") && e.contains("255") && !e.contains('\n'),
        "{e}"
    );
    assert!(
        e.len() < 1000,
        "the error repeats the name: {} bytes",
        e.len()
    );

    // 10,000 benchmarks of 3 counted runs in one session (one series each per metric).
    s["machine"]["hostname"] = "scale-host".into();
    let mut one = s["benchmarks"][0].clone();
    let runs = one["runs"].as_array().unwrap();
    one["runs"] = serde_json::Value::Array(runs[runs.len() - 3..].to_vec());
    s["benchmarks"] = (0..SERIES)
        .map(|i| {
            let mut b = one.clone();
            b["name"] = format!("bench-{i:05}").into();
            b
        })
        .collect();
    let t = Instant::now();
    let (code, v) = post(&results, Some(&token), &serde_json::to_vec(&s).unwrap());
    assert_eq!(code, 201, "{v}");
    eprintln!("upload of {SERIES} benchmarks × 3 runs: {:?}", t.elapsed());
    let t = Instant::now();
    let (_, v) = get(&srv.at("/api/v1/series?per_page=1"));
    assert_eq!(v["total"].as_u64(), Some(SERIES as u64), "{v}");
    eprintln!(
        "/api/v1/series?per_page=1 with a short host name: {:?}",
        t.elapsed()
    );
    drop(srv);

    // The machine's host name made 100 kB by SQL, in the column and in its stored record.
    let c = rusqlite::Connection::open(&store).unwrap();
    let n = c
        .execute(
            "UPDATE machines SET hostname = ?1, inventory = json_set(inventory, '$.hostname', ?1)",
            [&"h".repeat(HOST)],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(c);

    let srv = Server::start(st, &[]);
    let pid = srv.pid();
    let start_kb = status_kb(pid, "VmHWM");
    let mut figures = Vec::new();
    for path in [
        "/api/v1/series?per_page=1",
        "/?page=1",
        "/api/v1/series?metric=all&per_page=1",
        "/?metric=all&page=1",
    ] {
        let t = Instant::now();
        let r = ureq::get(&srv.at(path)).call().unwrap();
        let text = r.into_string().unwrap();
        let took = t.elapsed();
        if path.starts_with("/api") {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(
                v["total"].as_u64().unwrap() >= SERIES as u64,
                "{path}: {text}"
            );
            assert_eq!(v["series"].as_array().unwrap().len(), 1, "{path}");
        } else {
            assert!(
                text.contains("bench-0"),
                "{path}: a page without the series: {}",
                &text[..text.len().min(3000)]
            );
        }
        figures.push(format!("{path}: {took:?}, {} bytes", text.len()));
        // metric=all looks up five times the series (3.8 s in a debug build on a loaded 2-CPU VM).
        let bound = Duration::from_secs(if path.contains("all") { 20 } else { 5 });
        assert!(took < bound, "{path} took {took:?}");
    }
    let peak_kb = status_kb(pid, "VmHWM");
    eprintln!(
        "{SERIES} series, a {HOST}-byte host name: {}; server VmHWM {start_kb} kB at start, {peak_kb} kB after",
        figures.join("; ")
    );
    assert!(peak_kb < 200_000, "the server peaked at {peak_kb} kB");
}
