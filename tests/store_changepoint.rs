//! Change points: `tare::stats::changepoint` against MongoDB's `signal-processing-algorithms`
//! (reference values by `scripts/changepoint_reference.py`, committed in
//! `tests/data/stats/changepoint.json`), and the error rates of detection + alerting
//! (`tare::store::detect::changes`) by simulation: false alarms on stationary noise, power for a
//! 3% step, creep of 0.5% per commit over 10 commits.
//!
//! The quick simulation here uses 100 series per case and asserts wide bounds; the printed
//! table in docs/store.md comes from `scripts/changepoint_simulation.sh` (the ignored test
//! below, 1000 series per case, release build).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr_free::normal;
use serde_json::Value;
use tare::stats::changepoint::{e_divisive, energy_statistics, t_statistics, Settings};
use tare::store::detect::{changes, DetectSettings};
use tare::store::query::{Point, Series, SessionRef};

/// A normal draw by Box–Muller (rand_distr is not a dependency).
mod rand_distr_free {
    use rand::Rng;
    pub fn normal(rng: &mut impl Rng, mean: f64, sd: f64) -> f64 {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

fn reference() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/stats/changepoint.json"
    ))
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn fs(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn statistics_match_signal_processing_algorithms() {
    for c in reference() {
        let name = c["name"].as_str().unwrap();
        let xs = fs(&c["series"]);
        let want = fs(&c["t_statistics"]);
        let got = t_statistics(&xs);
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{name} τ={i}: {g} vs {w}"
            );
        }
        let split = c["split"].as_u64().unwrap() as usize;
        let (e, t, h) = energy_statistics(&xs[..split], &xs[split..]).unwrap();
        for (g, key) in [(e, "e"), (t, "t"), (h, "h")] {
            let w = c[key].as_f64().unwrap();
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{name} {key}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn change_points_match_on_clear_series() {
    for c in reference()
        .into_iter()
        .filter(|c| c["clear"].as_bool() == Some(true))
    {
        let name = c["name"].as_str().unwrap();
        let xs = fs(&c["series"]);
        let want: Vec<usize> = c["change_points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        // The package's settings: p ≤ 0.05, 100 permutations, segments of any length.
        let got: Vec<usize> = e_divisive(
            &xs,
            &Settings {
                alpha: 0.05,
                permutations: 100,
                min_size: 1,
                seed: 3,
                kappa: false,
            },
        )
        .iter()
        .map(|c| c.index)
        .collect();
        assert_eq!(got, want, "{name}");
    }
}

fn series() -> Series {
    Series {
        benchmark_id: 1,
        metric_id: 1,
        machine_id: 1,
        benchmark: "sim".into(),
        parameters: "{}".into(),
        command: "sim".into(),
        metric: "wall_time".into(),
        unit: "s".into(),
        direction: "lower".into(),
        fingerprint: "0".into(),
        hostname: "sim".into(),
    }
}

fn points(values: &[f64]) -> Vec<Point> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| Point {
            key: format!("c{i}"),
            commit: Some(format!("c{i}")),
            subject: None,
            branch: None,
            dirty: false,
            time: i as i64,
            value: v,
            ci_low: v,
            ci_high: v,
            n: 1,
            detect_value: v,
            interfered: 0,
            sessions: vec![SessionRef {
                id: i as i64,
                started_at: String::new(),
                source: None,
                median: v,
                ci_low: v,
                ci_high: v,
                n: 1,
                multimodal: false,
                kernel: "k".into(),
                os: "o".into(),
                method: "m".into(),
                interfered: 0,
                clean_median: None,
            }],
        })
        .collect()
}

/// Rates over `trials` series of `len` commits with per-commit noise `cv`:
/// (any alerted change, an alerted regression near `near` (±3 commits)).
fn rates(
    trials: usize,
    len: usize,
    cv: f64,
    level: impl Fn(usize) -> f64,
    near: Option<usize>,
    seed: u64,
) -> (f64, f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let settings = DetectSettings::default();
    let s = series();
    let (mut any, mut hit) = (0, 0);
    for t in 0..trials {
        let values: Vec<f64> = (0..len)
            .map(|i| normal(&mut rng, 100.0 * level(i), 100.0 * cv))
            .collect();
        let mut st = settings;
        st.changepoint.seed = t as u64;
        let found: Vec<_> = changes(&points(&values), &s, &st)
            .into_iter()
            .filter(|c| c.alerted)
            .collect();
        if !found.is_empty() {
            any += 1;
        }
        if let Some(k) = near {
            if found
                .iter()
                .any(|c| c.kind == "regression" && c.index.abs_diff(k) <= 3)
            {
                hit += 1;
            }
        }
    }
    (any as f64 / trials as f64, hit as f64 / trials as f64)
}

fn step(at: usize, by: f64) -> impl Fn(usize) -> f64 {
    move |i| if i >= at { 1.0 + by } else { 1.0 }
}

fn creep(from: usize, per: f64, commits: usize) -> impl Fn(usize) -> f64 {
    move |i| 1.0 + per * (i.saturating_sub(from).min(commits)) as f64
}

#[test]
fn error_rates_by_simulation() {
    // Stationary noise, CV 1% per commit: false alarms (any alert) at most 5% (α = 1%, the
    // effect filter only removes alerts).
    let (fa, _) = rates(100, 40, 0.01, |_| 1.0, None, 1);
    assert!(fa <= 0.05, "false-alarm rate {fa}");
    // A 3% step (3σ) in the middle of 40 commits: found near its place in most series.
    let (_, power) = rates(100, 40, 0.01, step(20, 0.03), Some(20), 2);
    assert!(power >= 0.8, "power for a 3% step {power}");
    // Creep of 0.5% per commit over 10 commits (5% in all), from commit 15 of 40.
    let (_, creep_found) = rates(100, 40, 0.01, creep(15, 0.005, 10), Some(20), 3);
    assert!(creep_found >= 0.5, "creep found in {creep_found}");
}

type Case = (String, Box<dyn Fn(usize) -> f64>, Option<usize>);

/// The table in docs/store.md: `scripts/changepoint_simulation.sh` runs this.
#[test]
#[ignore]
fn error_rate_table() {
    println!("| noise (CV per commit) | commits | case | alerted (any) | alerted regression at the change (±3) |");
    println!("|---|---|---|---|---|");
    for &cv in &[0.005, 0.01, 0.02] {
        for &len in &[30usize, 60] {
            let mid = len / 2;
            let cases: Vec<Case> = vec![
                ("stationary".into(), Box::new(|_| 1.0), None),
                (
                    format!("3% step at commit {mid}"),
                    Box::new(step(mid, 0.03)),
                    Some(mid),
                ),
                (
                    format!("3% step {} commits before the end", 4),
                    Box::new(step(len - 4, 0.03)),
                    Some(len - 4),
                ),
                (
                    "creep 0.5%/commit × 10".into(),
                    Box::new(creep(mid - 5, 0.005, 10)),
                    Some(mid),
                ),
            ];
            for (name, f, near) in cases {
                let (any, hit) = rates(1000, len, cv, f, near, 42);
                println!(
                    "| {:.1}% | {len} | {name} | {:.1}% | {} |",
                    cv * 100.0,
                    any * 100.0,
                    near.map(|_| format!("{:.1}%", hit * 100.0))
                        .unwrap_or("–".into())
                );
            }
        }
    }
}
