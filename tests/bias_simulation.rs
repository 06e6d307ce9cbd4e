//! Simulations that prove the setup analyses: the factor sweep of `tare bias` detects
//! synthetic level effects and keeps its false-positive rate near α when there is none; the
//! random-effects split recovers known variance components on average; the comparison paired
//! by setup covers the true ratio.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::collections::BTreeMap;
use tare::conclude::analysis::{CompareSettings, Test};
use tare::conclude::setups::{analyse_setups, compare_by_setup, spread_diagnostic, sweep};
use tare::results::{Benchmark, Run, Summary, Termination};
use tare::stats::one_way_random_effects;

/// Standard normal by Box–Muller.
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v): (f64, f64) = (rng.gen::<f64>().max(1e-300), rng.gen());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// Levels of a sweep: lognormal run noise (σ = 2%), level `l` multiplied by `effect(l)`.
fn levels(
    rng: &mut ChaCha8Rng,
    n_levels: usize,
    runs: usize,
    effect: impl Fn(usize) -> f64,
) -> Vec<(String, Vec<f64>)> {
    (0..n_levels)
        .map(|l| {
            let xs = (0..runs)
                .map(|_| 0.05 * effect(l) * (0.02 * normal(rng)).exp())
                .collect();
            (l.to_string(), xs)
        })
        .collect()
}

#[test]
fn sweep_false_positive_rate_is_controlled() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let trials = 1000;
    let mut rejections = 0;
    for _ in 0..trials {
        let l = levels(&mut rng, 8, 6, |_| 1.0);
        if sweep(&l, 0.05).unwrap().significant {
            rejections += 1;
        }
    }
    let rate = rejections as f64 / trials as f64;
    // Kruskal–Wallis is slightly conservative with small groups; binomial sd at 5% ≈ 0.7%.
    assert!((0.02..=0.075).contains(&rate), "false-positive rate {rate}");
}

#[test]
fn sweep_detects_alignment_like_effects() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let trials = 300;
    // Every fourth level 5% slower (a cache-line split every 64 bytes at 16-byte steps).
    let mut hits = 0;
    for _ in 0..trials {
        let l = levels(&mut rng, 8, 6, |l| if l % 4 == 0 { 1.05 } else { 1.0 });
        let a = sweep(&l, 0.05).unwrap();
        if a.significant && (a.slowest_level == "0" || a.slowest_level == "4") {
            hits += 1;
        }
    }
    assert!(hits as f64 / trials as f64 > 0.95, "power {hits}/{trials}");
}

#[test]
fn variance_components_are_unbiased_on_average() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let (sb, sw) = (0.03, 0.02);
    let trials = 2000;
    let (mut mean_b, mut mean_w) = (0.0, 0.0);
    for _ in 0..trials {
        // Unbalanced on purpose: 6 setups with 2..7 runs.
        let groups: Vec<Vec<f64>> = (0..6)
            .map(|g| {
                let e = sb * normal(&mut rng);
                (0..2 + g)
                    .map(|_| 1.0 + e + sw * normal(&mut rng))
                    .collect()
            })
            .collect();
        let slices: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let v = one_way_random_effects(&slices).unwrap();
        mean_b += v.var_between_raw / trials as f64;
        mean_w += v.var_within / trials as f64;
    }
    assert!((mean_b / (sb * sb) - 1.0).abs() < 0.08, "between {mean_b}");
    assert!((mean_w / (sw * sw) - 1.0).abs() < 0.03, "within {mean_w}");
}

fn run(index: usize, round: usize, wall: f64, seed: u64) -> Run {
    let mut extra = BTreeMap::new();
    extra.insert(
        "setup".to_string(),
        json!({"seed": seed, "env_pad": seed % 4096}),
    );
    Run {
        index,
        round: Some(round),
        warmup: false,
        start_offset: 0.0,
        wall_time: wall,
        user_time: 0.0,
        system_time: 0.0,
        cpu_time: 0.0,
        peak_memory: None,
        exit_code: Some(0),
        signal: None,
        termination: Termination::Exit,
        involuntary_context_switches: None,
        counted: true,
        extra,
        meters: Default::default(),
    }
}

fn bench(name: &str, runs: Vec<Run>) -> Benchmark {
    Benchmark {
        name: name.into(),
        command: name.into(),
        argv: vec![name.into()],
        parameters: BTreeMap::new(),
        summary: Summary::default(),
        stop_reason: String::new(),
        runs,
        diagnostics: Vec::new(),
        extra: BTreeMap::new(),
    }
}

/// Two commands measured in `setups` setups × `per` rounds each; the setup multiplies both
/// by a shared factor (σ `sb`), B is `ratio` × A, run noise σ 1%.
fn session(rng: &mut ChaCha8Rng, setups: usize, per: usize, sb: f64, ratio: f64) -> Vec<Benchmark> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for s in 0..setups {
        let e = (sb * normal(rng)).exp();
        for k in 0..per {
            let round = s * per + k;
            a.push(run(
                round,
                round,
                0.1 * e * (0.01 * normal(rng)).exp(),
                1000 + s as u64,
            ));
            b.push(run(
                round,
                round,
                0.1 * ratio * e * (0.01 * normal(rng)).exp(),
                1000 + s as u64,
            ));
        }
    }
    vec![bench("A", a), bench("B", b)]
}

#[test]
fn setup_spread_is_flagged_only_when_setups_matter() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let with = session(&mut rng, 10, 5, 0.05, 1.0);
    let a = analyse_setups(&with[0]).unwrap();
    assert_eq!(a.setups.len(), 10);
    assert!(a.setups.iter().all(|s| s.runs == 5));
    let d = spread_diagnostic(&a, 0.05).expect("setup-spread flagged");
    assert_eq!(d.kind, "setup-spread");
    let without = session(&mut rng, 10, 5, 0.0, 1.0);
    let a = analyse_setups(&without[0]).unwrap();
    assert!(spread_diagnostic(&a, 0.05).is_none());
}

#[test]
fn ratio_ci_over_setups_covers_the_true_ratio() {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let settings = CompareSettings {
        reference: 0,
        test: Test::MannWhitney,
        alpha: 0.05,
        noise: 0.01,
        paired: true,
        resamples: 1000,
        seed: 1,
    };
    let trials = 200;
    let mut covered = 0;
    for _ in 0..trials {
        let s = session(&mut rng, 12, 3, 0.05, 1.02);
        let c = compare_by_setup(&s, &settings);
        assert_eq!(c.len(), 1);
        assert!(c[0].paired && c[0].words.contains("12 setups"));
        if c[0].ratio_ci_low <= 1.02 && 1.02 <= c[0].ratio_ci_high {
            covered += 1;
        }
    }
    // Percentile bootstrap over 12 setups: nominal 95%, somewhat below with so few.
    assert!(
        covered as f64 / trials as f64 >= 0.85,
        "coverage {covered}/{trials}"
    );
}

#[test]
fn setup_spread_false_alarm_rate_and_power() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let trials = 300;
    let flagged = |rng: &mut ChaCha8Rng, sb: f64| {
        (0..trials)
            .filter(|_| {
                let s = session(rng, 8, 4, sb, 1.0);
                spread_diagnostic(&analyse_setups(&s[0]).unwrap(), 0.05).is_some()
            })
            .count() as f64
            / trials as f64
    };
    let null = flagged(&mut rng, 0.0);
    assert!(null <= 0.08, "false alarms {null}");
    // Setup effect σ 2% against run noise 1% (4 runs per setup): nearly always flagged.
    let power = flagged(&mut rng, 0.02);
    assert!(power >= 0.9, "power {power}");
}

#[test]
fn comparison_over_setups_keeps_false_positives_near_alpha() {
    // A/A with a strong shared setup effect (σ 5%): the paired test over setups must not see it.
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let settings = CompareSettings {
        reference: 0,
        test: Test::MannWhitney,
        alpha: 0.05,
        noise: 0.0,
        paired: true,
        resamples: 500,
        seed: 2,
    };
    let trials = 300;
    let wrong = (0..trials)
        .filter(|_| {
            let s = session(&mut rng, 10, 3, 0.05, 1.0);
            let c = compare_by_setup(&s, &settings);
            c[0].verdict == "faster" || c[0].verdict == "slower"
        })
        .count();
    let rate = wrong as f64 / trials as f64;
    assert!(rate <= 0.08, "A/A false positives {rate}");
}
