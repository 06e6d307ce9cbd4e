//! Seeded simulations of the statistical procedures' error rates: A/A false positives, power
//! for a known 3% shift, bootstrap and median-interval coverage, warm-up and multimodality
//! detection rates. Trial counts are modest so the file runs in seconds in a debug build;
//! tolerances are binomial (3 standard errors around the nominal rate).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr_free::normal;
use tare::stats::*;

/// Standard-normal draws without another dependency: statrs' `Normal` implements
/// `rand::distributions::Distribution`.
mod rand_distr_free {
    use rand::distributions::Distribution;
    use rand_chacha::ChaCha8Rng;
    use statrs::distribution::Normal;

    pub fn normal(rng: &mut ChaCha8Rng, mean: f64, sd: f64) -> f64 {
        Normal::new(mean, sd).unwrap().sample(rng)
    }
}

/// Lower limit for an observed rate whose true value is at least `p`, over `trials` trials.
fn lower_limit(p: f64, trials: usize) -> f64 {
    p - 3.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

fn upper_limit(p: f64, trials: usize) -> f64 {
    p + 3.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

/// `n` run times: `base · exp(N(0, sigma))` (lognormal, CV ≈ sigma).
fn lognormal(rng: &mut ChaCha8Rng, n: usize, base: f64, sigma: f64) -> Vec<f64> {
    (0..n)
        .map(|_| base * normal(rng, 0.0, sigma).exp())
        .collect()
}

/// Paired rounds: both commands share a per-round factor `exp(N(0, round_sigma))`.
fn paired_rounds(
    rng: &mut ChaCha8Rng,
    n: usize,
    base_a: f64,
    base_b: f64,
    sigma: f64,
    round_sigma: f64,
) -> (Vec<f64>, Vec<f64>) {
    (0..n)
        .map(|_| {
            let round = normal(rng, 0.0, round_sigma);
            (
                base_a * (round + normal(rng, 0.0, sigma)).exp(),
                base_b * (round + normal(rng, 0.0, sigma)).exp(),
            )
        })
        .unzip()
}

/// Bootstrap resamples per comparison. Small (the debug-build ChaCha RNG costs ~0.2 µs per
/// draw) but enough for the 2.5% / 97.5% percentiles; production uses 10 000.
const RESAMPLES: usize = 400;

fn opts(paired: bool, seed: u64) -> CompareOptions {
    CompareOptions {
        paired,
        resamples: RESAMPLES,
        seed,
        ..CompareOptions::default()
    }
}

const TRIALS: usize = 300;

#[test]
fn a_a_comparisons_rarely_claim_a_difference() {
    for paired in [false, true] {
        let mut rng = ChaCha8Rng::seed_from_u64(if paired { 11 } else { 10 });
        let mut quiet = 0;
        for t in 0..TRIALS {
            let (a, b) = if paired {
                paired_rounds(&mut rng, 30, 1.0, 1.0, 0.015, 0.02)
            } else {
                (
                    lognormal(&mut rng, 30, 1.0, 0.015),
                    lognormal(&mut rng, 30, 1.0, 0.015),
                )
            };
            let c = compare(&a, &b, &opts(paired, t as u64)).unwrap();
            if !c.verdict.is_significant() {
                quiet += 1;
            }
        }
        let rate = quiet as f64 / TRIALS as f64;
        eprintln!("A/A paired={paired}: {rate} not significant");
        assert!(rate >= lower_limit(0.95, TRIALS), "paired={paired}: {rate}");
    }
}

#[test]
fn a_three_percent_shift_is_detected_with_the_right_sign() {
    // One direction per design keeps the run time down; both verdict signs are covered.
    for (paired, factor) in [(false, 1.03), (true, 1.0 / 1.03)] {
        let mut rng = ChaCha8Rng::seed_from_u64(20 + paired as u64);
        let mut right = 0;
        for t in 0..TRIALS {
            let (a, b) = if paired {
                paired_rounds(&mut rng, 30, 1.0, factor, 0.02, 0.02)
            } else {
                (
                    lognormal(&mut rng, 30, 1.0, 0.02),
                    lognormal(&mut rng, 30, factor, 0.02),
                )
            };
            let c = compare(&a, &b, &opts(paired, t as u64)).unwrap();
            let ok = match c.verdict {
                Verdict::Slower { .. } => factor > 1.0,
                Verdict::Faster { .. } => factor < 1.0,
                _ => false,
            };
            right += ok as usize;
        }
        let rate = right as f64 / TRIALS as f64;
        eprintln!("3% shift paired={paired} factor={factor}: {rate} detected with the right sign");
        assert!(rate > 0.8, "paired={paired} factor={factor}: {rate}");
    }
}

#[test]
fn ratio_interval_covers_the_true_ratio_about_95_percent_of_the_time() {
    const N: usize = 300;
    for method in [BootstrapMethod::Percentile, BootstrapMethod::Bca] {
        for paired in [false, true] {
            let mut rng = ChaCha8Rng::seed_from_u64(30 + paired as u64);
            let truth = 1.02;
            let mut covered = 0;
            for t in 0..N {
                // Medians of exp(normal) are exp(mean), so the true ratio of medians is exact.
                let (a, b) = if paired {
                    paired_rounds(&mut rng, 30, 1.0, truth, 0.02, 0.03)
                } else {
                    (
                        lognormal(&mut rng, 30, 1.0, 0.02),
                        lognormal(&mut rng, 30, truth, 0.02),
                    )
                };
                let r = bootstrap_ratio_of_medians_with(
                    &a,
                    &b,
                    paired,
                    0.95,
                    3 * RESAMPLES / 2,
                    t as u64,
                    method,
                )
                .unwrap();
                covered += (r.low <= truth && truth <= r.high) as usize;
            }
            let rate = covered as f64 / N as f64;
            eprintln!("ratio CI {method:?} paired={paired}: coverage {rate}");
            // The percentile interval of a ratio of medians tends to be conservative (the
            // bootstrap distribution of a median is lumpy; ~97-98% when paired), so allow some
            // over-coverage, but no under-coverage beyond sampling error.
            // BCa with pairing genuinely under-covers a little for this statistic (≈ 94% at
            // n = 30, 91% at n = 10 in 2000-trial release runs), which is why it is not the
            // default; hold it to a looser floor.
            let floor = if method == BootstrapMethod::Bca && paired {
                0.90
            } else {
                lower_limit(0.95, N)
            };
            assert!(
                rate >= floor && rate <= 0.995,
                "{method:?} paired={paired}: coverage {rate}"
            );
        }
    }
}

#[test]
fn median_interval_coverage_is_at_least_nominal() {
    const N: usize = 2000;
    let mut rng = ChaCha8Rng::seed_from_u64(40);
    for n in [6, 10, 25, 60] {
        let mut covered = 0;
        for _ in 0..N {
            // Exponential(1): median ln 2, strongly skewed.
            let x: Vec<f64> = (0..n).map(|_| -(1.0 - rng.gen::<f64>()).ln()).collect();
            let d = describe(&x).unwrap();
            assert!(d.median_ci_exact);
            let m = std::f64::consts::LN_2;
            covered += (d.median_ci_low <= m && m <= d.median_ci_high) as usize;
        }
        let rate = covered as f64 / N as f64;
        eprintln!("median CI n={n}: coverage {rate}");
        assert!(rate >= lower_limit(0.95, N), "n={n}: coverage {rate}");
    }
}

#[test]
fn mann_whitney_false_positive_rate_is_at_most_alpha() {
    const N: usize = 1000;
    let mut rng = ChaCha8Rng::seed_from_u64(50);
    for (n1, n2) in [(5, 7), (20, 20)] {
        let mut rejections = 0;
        for _ in 0..N {
            let a = lognormal(&mut rng, n1, 1.0, 0.02);
            let b = lognormal(&mut rng, n2, 1.0, 0.02);
            rejections += (mann_whitney_u(&a, &b).unwrap().p_value < 0.05) as usize;
        }
        let rate = rejections as f64 / N as f64;
        eprintln!("Mann-Whitney A/A {n1}x{n2}: rejection rate {rate}");
        assert!(rate <= upper_limit(0.05, N), "{n1}x{n2}: {rate}");
    }
}

#[test]
fn decaying_warmup_is_found_with_roughly_the_right_length() {
    let mut rng = ChaCha8Rng::seed_from_u64(60);
    let mut good = 0;
    for _ in 0..200 {
        // 30% slower at first, decaying with time constant 4 runs; 1% noise. The transient
        // falls below the single-run noise after ~14 runs and below the noise of a 5-run batch
        // mean (what MSER-5 sees) after ~25, so anything in 10..=30 is a right answer.
        let x: Vec<f64> = (0..60)
            .map(|t| (1.0 + 0.3 * (-(t as f64) / 4.0).exp()) * normal(&mut rng, 0.0, 0.01).exp())
            .collect();
        let w = warmup_transient(&x).unwrap();
        good += (10..=30).contains(&w.suggested_warmup) as usize;
    }
    eprintln!("warm-up: {good}/200 found with 10..=30 runs");
    assert!(good >= 180, "{good}/200 warm-ups found with 10..=30 runs");
}

#[test]
fn stationary_noise_is_rarely_flagged_as_warmup() {
    let mut rng = ChaCha8Rng::seed_from_u64(61);
    let mut flagged = 0;
    for _ in 0..200 {
        let x = lognormal(&mut rng, 60, 1.0, 0.01);
        flagged += (warmup_transient(&x).unwrap().suggested_warmup > 0) as usize;
    }
    eprintln!("warm-up: {flagged}/200 iid series flagged");
    assert!(flagged <= 20, "{flagged}/200 iid series flagged");
}

#[test]
fn two_clusters_are_flagged_and_one_is_not() {
    let mut rng = ChaCha8Rng::seed_from_u64(70);
    let (mut two, mut one) = (0, 0);
    for _ in 0..200 {
        let mut x = lognormal(&mut rng, 30, 1.0, 0.01);
        x.extend(lognormal(&mut rng, 20, 1.1, 0.01));
        two += modes(&x).unwrap().multimodal as usize;
        let y = lognormal(&mut rng, 50, 1.0, 0.01);
        one += !modes(&y).unwrap().multimodal as usize;
    }
    eprintln!("modes: {two}/200 two-cluster flagged, {one}/200 unimodal not flagged");
    assert!(two >= 190, "{two}/200 two-cluster samples flagged");
    assert!(one >= 190, "{one}/200 unimodal samples not flagged");
}
