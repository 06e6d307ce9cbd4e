//! Degenerate inputs never panic and give `None` or the documented result; verdict rules and
//! wording.

use tare::stats::*;

const NAN: f64 = f64::NAN;

fn degenerate_inputs() -> Vec<Vec<f64>> {
    vec![
        vec![],
        vec![1.0],
        vec![NAN],
        vec![NAN, NAN, NAN],
        vec![2.0, 2.0],
        vec![3.0; 50],
        vec![1.0, NAN, 2.0],
        vec![0.0; 10],
        vec![1.0, f64::INFINITY, 2.0, 3.0],
        vec![f64::NEG_INFINITY, 1.0, f64::INFINITY],
        vec![-1.0, 0.0, 1.0, 2.0, -3.0, 5.0, 7.0],
        vec![1e308, -1e308, 1e308, 5.0, 6.0],
        (0..25).map(|i| i as f64).collect(),
        (0..25)
            .map(|i| if i % 3 == 0 { NAN } else { 1.0 })
            .collect(),
    ]
}

#[test]
fn nothing_panics_on_degenerate_input() {
    let all = degenerate_inputs();
    for x in &all {
        let s = sorted_without_nan(x);
        let _ = quantile(&s, 0.5);
        let _ = quantile(&s, NAN);
        let _ = quantile(&s, -0.1);
        let _ = median(&s);
        let _ = describe(x);
        let _ = median_ci(&s, 0.95);
        let _ = median_ci(&s, NAN);
        let _ = median_ci(&s, 1.0);
        let _ = relative_median_ci_halfwidth(x);
        let _ = tukey_outliers(x);
        let _ = mann_kendall(x);
        let _ = lag1_autocorrelation(x);
        let _ = warmup_transient(x);
        let _ = mser_truncation(x, 5);
        let _ = mser_truncation(x, 0);
        let _ = modes(x);
        let _ = bimodality_coefficient(x);
        let _ = holm(x);
        for y in &all {
            for m in [
                MannWhitneyMethod::Auto,
                MannWhitneyMethod::Exact,
                MannWhitneyMethod::Asymptotic,
            ] {
                let _ = mann_whitney_u_with(x, y, m);
            }
            let _ = welch_t_test(x, y);
            let _ = kruskal_wallis(&[x, y]);
            let _ = kruskal_wallis(&[x, y, x]);
            for paired in [false, true] {
                let _ = bootstrap_ratio_of_medians(x, y, paired, 0.95, 50, 1);
                let opts = CompareOptions {
                    paired,
                    resamples: 50,
                    ..CompareOptions::default()
                };
                if let Some(c) = compare(x, y, &opts) {
                    let _ = c.verdict.words("A", "B");
                }
            }
        }
    }
    let _ = kruskal_wallis(&[]);
    let _ = min_runs_for_significance(NAN);
    let _ = min_runs_for_significance(0.0);
    let _ = min_runs_for_significance(2.0);
    for n in 0..70 {
        for c in [NAN, 0.0, 1e-9, 0.5, 0.95, 0.999_999, 1.0, 2.0] {
            let _ = median_ci_rank(n, c);
        }
    }
}

#[test]
fn documented_degenerate_results() {
    assert_eq!(quantile(&[], 0.5), None);
    assert_eq!(quantile(&[1.0, 2.0], 1.5), None);
    assert_eq!(quantile(&[4.0], 0.3), Some(4.0));
    assert_eq!(sorted_without_nan(&[3.0, NAN, 1.0]), vec![1.0, 3.0]);

    assert_eq!(describe(&[]), None);
    assert_eq!(describe(&[NAN]), None);
    let d = describe(&[5.0]).unwrap();
    assert_eq!((d.n, d.median, d.stddev, d.cv), (1, 5.0, 0.0, 0.0));
    assert_eq!(
        (d.median_ci_low, d.median_ci_high, d.median_ci_exact),
        (5.0, 5.0, false)
    );
    let d = describe(&[2.0, 1.0, NAN, 3.0, 4.0, 5.0]).unwrap();
    assert_eq!((d.n, d.median_ci_exact), (5, false));
    assert_eq!((d.median_ci_low, d.median_ci_high), (1.0, 5.0));
    let d = describe(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    assert!(d.median_ci_exact);
    assert_eq!((d.median_ci_low, d.median_ci_high), (1.0, 6.0));
    let d = describe(&[0.0; 8]).unwrap();
    assert_eq!((d.mean, d.stddev, d.cv), (0.0, 0.0, 0.0));
    assert_eq!(relative_median_ci_halfwidth(&[0.0; 8]), None);
    assert_eq!(relative_median_ci_halfwidth(&[1.0; 8]), Some(0.0));
    assert_eq!(median_ci_rank(5, 0.95), None);
    assert_eq!(median_ci_rank(6, 0.95), Some(1));

    assert_eq!(mann_whitney_u(&[], &[1.0]), None);
    let r = mann_whitney_u(&[1.0; 4], &[1.0; 6]).unwrap();
    assert_eq!((r.statistic, r.p_value), (12.0, 1.0));
    assert_eq!(
        mann_whitney_u_with(&[1.0, 2.0], &[2.0, 3.0], MannWhitneyMethod::Exact),
        None,
        "exact refuses ties"
    );
    assert_eq!(welch_t_test(&[1.0], &[1.0, 2.0]), None);
    assert_eq!(welch_t_test(&[1.0, 1.0], &[2.0, 2.0]), None);
    assert_eq!(kruskal_wallis(&[&[1.0, 2.0]]), None);
    assert_eq!(kruskal_wallis(&[&[1.0, 2.0], &[]]), None);
    assert_eq!(kruskal_wallis(&[&[1.0, 1.0], &[1.0]]), None);
    assert_eq!(min_runs_for_significance(0.05), 4);
    assert_eq!(min_runs_for_significance(0.01), 5);
    assert_eq!(min_runs_for_significance(0.0), usize::MAX);

    let h = holm(&[0.01, NAN, 0.04]);
    assert_eq!(h[0], 0.02);
    assert!(h[1].is_nan());
    assert_eq!(h[2], 0.04);
    assert!(holm(&[]).is_empty());

    assert_eq!(
        bootstrap_ratio_of_medians(&[1.0], &[1.0, 2.0], false, 0.95, 100, 0),
        None
    );
    assert_eq!(
        bootstrap_ratio_of_medians(&[1.0, 2.0], &[1.0, 2.0, 3.0], true, 0.95, 100, 0),
        None
    );
    assert_eq!(
        bootstrap_ratio_of_medians(&[0.0, 0.0], &[1.0, 2.0], false, 0.95, 100, 0),
        None
    );
    assert_eq!(
        bootstrap_ratio_of_medians(&[1.0, 2.0], &[1.0, 2.0], false, 1.0, 100, 0),
        None
    );
    assert_eq!(
        bootstrap_ratio_of_medians(&[1.0, 2.0], &[1.0, 2.0], false, 0.95, 0, 0),
        None
    );
    let r = bootstrap_ratio_of_medians(&[2.0; 10], &[3.0; 10], true, 0.95, 100, 0).unwrap();
    assert_eq!((r.estimate, r.low, r.high), (1.5, 1.5, 1.5));

    let o = tukey_outliers(&[1.0, 1.0, 1.0, 1.0, 2.0]).unwrap();
    assert_eq!(o.high_severe, 1);
    assert_eq!(tukey_outliers(&[]), None);

    assert_eq!(mann_kendall(&[1.0, 2.0]), None);
    let t = mann_kendall(&[2.0; 10]).unwrap();
    assert_eq!((t.s, t.z, t.p_value, t.sen_slope), (0.0, 0.0, 1.0, 0.0));
    assert_eq!(lag1_autocorrelation(&[1.0; 10]), None);
    assert_eq!(warmup_transient(&[1.0; 19]), None);
    assert_eq!(warmup_transient(&[1.0; 40]).unwrap().suggested_warmup, 0);
    assert_eq!(modes(&[1.0; 10]), None);
    assert_eq!(modes(&[1.0, 2.0]), None);
}

#[test]
fn mann_kendall_thins_long_series_and_keeps_slope_units() {
    let x: Vec<f64> = (0..9000)
        .map(|i| 0.5 * i as f64 + ((i * 7919) % 13) as f64)
        .collect();
    let t = mann_kendall(&x).unwrap();
    assert_eq!(t.n, 2250);
    assert!((t.sen_slope - 0.5).abs() < 0.01, "{}", t.sen_slope);
    assert!(t.p_value < 1e-10);
}

fn iv(estimate: f64, low: f64, high: f64) -> Interval {
    Interval {
        estimate,
        low,
        high,
        confidence: 0.95,
    }
}

#[test]
fn verdict_rules() {
    let v = Verdict::classify(&iv(1.0, 0.995, 1.004), 0.001, 0.05, 0.01);
    assert!(matches!(v, Verdict::EqualWithinNoise { .. }));
    let v = Verdict::classify(&iv(0.9, 0.88, 0.92), 0.001, 0.05, 0.01);
    match v {
        Verdict::Faster {
            ratio, low, high, ..
        } => {
            assert!((ratio - 1.0 / 0.9).abs() < 1e-15);
            assert!((low - 1.0 / 0.92).abs() < 1e-15);
            assert!((high - 1.0 / 0.88).abs() < 1e-15);
        }
        other => panic!("{other:?}"),
    }
    let v = Verdict::classify(&iv(1.12, 1.10, 1.14), 0.001, 0.05, 0.01);
    assert!(matches!(v, Verdict::Slower { ratio, .. } if ratio == 1.12));
    // CI excludes 1 but the test is not significant.
    let v = Verdict::classify(&iv(1.12, 1.10, 1.14), 0.2, 0.05, 0.01);
    assert!(matches!(v, Verdict::NoSignificantDifference { .. }));
    // Significant but the CI straddles 1.
    let v = Verdict::classify(&iv(1.01, 0.98, 1.03), 0.01, 0.05, 0.01);
    assert!(matches!(v, Verdict::NoSignificantDifference { .. }));
    // NaN p-value is never significant.
    let v = Verdict::classify(&iv(1.2, 1.1, 1.3), NAN, 0.05, 0.01);
    assert!(!v.is_significant());
}

#[test]
fn verdict_words() {
    let v = Verdict::classify(&iv(1.12, 1.10, 1.14), 0.001, 0.05, 0.01);
    assert_eq!(
        v.words("A", "B"),
        "B is 1.12× slower than A (95% CI 1.10–1.14)"
    );
    let v = Verdict::classify(&iv(1.0 / 1.12, 1.0 / 1.14, 1.0 / 1.10), 0.001, 0.05, 0.01);
    assert_eq!(
        v.words("A", "B"),
        "B is 1.12× faster than A (95% CI 1.10–1.14)"
    );
    let v = Verdict::classify(&iv(1.0, 0.99, 1.02), 0.3, 0.05, 0.01);
    assert_eq!(
        v.words("A", "B"),
        "no significant difference (B/A 95% CI 0.99–1.02)"
    );
    let v = Verdict::classify(&iv(1.0, 0.995, 1.004), 0.3, 0.05, 0.01);
    assert_eq!(
        v.words("A", "B"),
        "equal within noise (B/A 95% CI 0.995–1.004)"
    );
    let v = Verdict::classify(
        &Interval {
            estimate: 1.0,
            low: 0.9995,
            high: 1.0004,
            confidence: 0.999,
        },
        0.3,
        0.05,
        0.01,
    );
    assert_eq!(
        v.words("A", "B"),
        "equal within noise (B/A 99.9% CI 0.9995–1.0004)"
    );
}

#[test]
fn bootstrap_is_reproducible_and_seed_dependent() {
    let a: Vec<f64> = (0..30)
        .map(|i| 1.0 + 0.001 * ((i * 37) % 17) as f64)
        .collect();
    let b: Vec<f64> = (0..30)
        .map(|i| 1.03 + 0.001 * ((i * 53) % 19) as f64)
        .collect();
    let r1 = bootstrap_ratio_of_medians(&a, &b, false, 0.95, 500, 42).unwrap();
    let r2 = bootstrap_ratio_of_medians(&a, &b, false, 0.95, 500, 42).unwrap();
    let r3 = bootstrap_ratio_of_medians(&a, &b, false, 0.95, 500, 43).unwrap();
    assert_eq!(r1, r2);
    assert_ne!((r1.low, r1.high), (r3.low, r3.high));
    assert!(r1.low <= r1.estimate && r1.estimate <= r1.high);
    assert!(r1.low > 1.0, "candidate b is slower, ratio b/a > 1: {r1:?}");
}

#[test]
fn mann_whitney_exact_is_capped_and_auto_falls_back() {
    let a: Vec<f64> = (0..8).map(|i| i as f64 * 0.5 + 0.25).collect();
    let b: Vec<f64> = (0..600_000).map(|i| i as f64 * 1e-5).collect();
    assert_eq!(mann_whitney_u_with(&a, &b, MannWhitneyMethod::Exact), None);
    let auto = mann_whitney_u(&a, &b).unwrap();
    let asym = mann_whitney_u_with(&a, &b, MannWhitneyMethod::Asymptotic).unwrap();
    assert_eq!(auto, asym);
    let big: Vec<f64> = (0..20_000).map(|i| i as f64 + 0.5).collect();
    let small: Vec<f64> = (0..100).map(|i| i as f64 * 3.0).collect();
    assert_eq!(
        mann_whitney_u_with(&small, &big, MannWhitneyMethod::Exact),
        None
    );
}

#[test]
fn describe_is_ordered_on_random_samples() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for n in 1..80 {
        let x: Vec<f64> = (0..n).map(|_| rng.gen::<f64>().powi(3)).collect();
        let d = describe(&x).unwrap();
        let chain = [d.min, d.p5, d.q1, d.median, d.q3, d.p95, d.max];
        assert!(chain.windows(2).all(|w| w[0] <= w[1]), "n={n}: {d:?}");
        assert!(
            d.median_ci_low <= d.median && d.median <= d.median_ci_high,
            "{d:?}"
        );
        assert!(d.min <= d.median_ci_low && d.median_ci_high <= d.max);
        assert!(d.min <= d.mean && d.mean <= d.max && d.stddev >= 0.0);
        if let Some(h) = relative_median_ci_halfwidth(&x) {
            assert!(h >= 0.0);
        }
    }
}
