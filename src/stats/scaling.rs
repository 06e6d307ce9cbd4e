//! How time grows with a parameter: the scaling fit of a parameter scan.
//!
//! Input: for each parameter value `n`, the values of its processes (e.g. each run's wall time,
//! or each kernel invocation's median); the process is the unit of replication. Output:
//!
//! * a power law `t = a + c·n^k` fitted to the per-value medians by least squares on relative
//!   residuals `(t − a − c·n^k)/t`, with `a ≥ 0` a constant cost (process start-up, harness)
//!   and `c ≥ 0`; with fewer than 4 values, or when the times do not grow significantly, the
//!   plain log–log line `ln t = ln c + k ln n` (`np.polyfit` on logs) instead;
//! * a bootstrap percentile interval of `k` that resamples processes within each value;
//! * the best of the complexity classes O(1), O(log n), O(n), O(n log n), O(n²), O(n³):
//!   `t = a + c·f(n)` with `a, c ≥ 0` by least squares (Google Benchmark's fit plus a constant
//!   term); its RMS relative to the mean time is the fit error. O(1) unless an F-test of the
//!   least-RMS class against O(1) finds growth (p < 0.05) or the interval of `k` lies above 0;
//!   then the simplest class whose
//!   growth exponent over the scan lies in the interval of `k` ([`consistent_class`]), else
//!   the least-RMS class (Google Benchmark's rule).
//!
//! Pure; reference values from numpy/scipy (`scripts/scaling_reference.py`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

use super::quantile::{median, quantile, sorted_without_nan};

/// Range of exponents searched.
pub const K_MIN: f64 = -3.0;
pub const K_MAX: f64 = 5.0;
/// Significance level of the growth test.
pub const GROWTH_ALPHA: f64 = 0.05;

/// A complexity class, as Google Benchmark's `BigO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    #[serde(rename = "1")]
    Constant,
    #[serde(rename = "log n")]
    Log,
    #[serde(rename = "n")]
    Linear,
    #[serde(rename = "n log n")]
    NLogN,
    #[serde(rename = "n^2")]
    Square,
    #[serde(rename = "n^3")]
    Cube,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::Constant,
        Class::Log,
        Class::Linear,
        Class::NLogN,
        Class::Square,
        Class::Cube,
    ];

    /// `f(n)` of the class (log base 2, as Google Benchmark).
    pub fn f(self, n: f64) -> f64 {
        match self {
            Class::Constant => 1.0,
            Class::Log => n.log2(),
            Class::Linear => n,
            Class::NLogN => n * n.log2(),
            Class::Square => n * n,
            Class::Cube => n * n * n,
        }
    }

    /// "O(n log n)", "O(n²)".
    pub fn big_o(self) -> &'static str {
        match self {
            Class::Constant => "O(1)",
            Class::Log => "O(log n)",
            Class::Linear => "O(n)",
            Class::NLogN => "O(n log n)",
            Class::Square => "O(n²)",
            Class::Cube => "O(n³)",
        }
    }
}

/// `t = constant + coefficient·f(n)` for one class.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassFit {
    pub class: Class,
    pub constant: f64,
    pub coefficient: f64,
    /// RMS of the residuals divided by the mean time.
    pub rms: f64,
}

/// Which power law gave the exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerModel {
    /// `t = a + c·n^k`, relative least squares.
    Offset,
    /// `ln t = ln c + k ln n`.
    LogLog,
}

/// `t = constant + coefficient·n^exponent`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PowerLaw {
    pub model: PowerModel,
    pub exponent: f64,
    pub constant: f64,
    pub coefficient: f64,
}

/// One parameter value of a scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub n: f64,
    pub processes: usize,
    /// Median of the process values.
    pub median: f64,
    /// Distribution-free interval of the median (None with fewer than 6 processes at 95%).
    pub ci: Option<(f64, f64)>,
}

/// The scaling of one scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub points: Vec<Point>,
    pub power: PowerLaw,
    /// Bootstrap percentile interval of the exponent (None when too few processes).
    pub exponent_ci: Option<(f64, f64)>,
    pub confidence: f64,
    pub resamples: usize,
    /// The chosen class and every class's fit.
    pub class: ClassFit,
    pub classes: Vec<ClassFit>,
    /// p-value of the F-test of the best non-constant class against O(1).
    pub growth_p: f64,
}

/// Least-squares line through `(ln n, ln t)`: `(k, c)`. `None` with fewer than 2 points, a
/// non-positive value, or all `n` equal.
pub fn log_log(ns: &[f64], ts: &[f64]) -> Option<(f64, f64)> {
    if ns.len() != ts.len() || ns.len() < 2 || ns.iter().chain(ts).any(|v| v.is_nan() || *v <= 0.0)
    {
        return None;
    }
    let x: Vec<f64> = ns.iter().map(|v| v.ln()).collect();
    let y: Vec<f64> = ts.iter().map(|v| v.ln()).collect();
    let m = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / m, y.iter().sum::<f64>() / m);
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let k = sxy / sxx;
    Some((k, (my - k * mx).exp()))
}

/// Non-negative `(a, c)` minimising `Σ w_i (t_i − a − c f_i)²`, and that sum. Exact for two
/// parameters: the unconstrained solution when feasible, else the better boundary one.
fn nnls2(f: &[f64], t: &[f64], w: &[f64]) -> (f64, f64, f64) {
    let sse = |a: f64, c: f64| -> f64 {
        f.iter()
            .zip(t)
            .zip(w)
            .map(|((fi, ti), wi)| wi * (ti - a - c * fi).powi(2))
            .sum()
    };
    let (mut sw, mut sf, mut st, mut sff, mut sft) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for ((fi, ti), wi) in f.iter().zip(t).zip(w) {
        sw += wi;
        sf += wi * fi;
        st += wi * ti;
        sff += wi * fi * fi;
        sft += wi * fi * ti;
    }
    let mut cands: Vec<(f64, f64)> = Vec::with_capacity(3);
    let det = sw * sff - sf * sf;
    if det > 1e-12 * sw * sff && det.is_finite() {
        let a = (st * sff - sf * sft) / det;
        let c = (sw * sft - sf * st) / det;
        if a >= 0.0 && c >= 0.0 {
            return (a, c, sse(a, c));
        }
    }
    if sff > 0.0 {
        cands.push((0.0, (sft / sff).max(0.0)));
    }
    if sw > 0.0 {
        cands.push(((st / sw).max(0.0), 0.0));
    }
    cands
        .into_iter()
        .map(|(a, c)| (a, c, sse(a, c)))
        .filter(|x| x.2.is_finite())
        .min_by(|x, y| x.2.total_cmp(&y.2))
        .unwrap_or((f64::NAN, f64::NAN, f64::INFINITY))
}

/// `t = a + c·f(n)` for one class, fitted to the medians `ts` (O(1): `a` = the mean, `c = 0`).
pub fn fit_class(ns: &[f64], ts: &[f64], class: Class) -> Option<ClassFit> {
    if ns.len() != ts.len() || ns.is_empty() || ts.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mean = ts.iter().sum::<f64>() / ts.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let (a, c, sse) = if class == Class::Constant {
        let a = mean;
        (a, 0.0, ts.iter().map(|t| (t - a).powi(2)).sum::<f64>())
    } else {
        let f: Vec<f64> = ns.iter().map(|&n| class.f(n)).collect();
        nnls2(&f, ts, &vec![1.0; ts.len()])
    };
    if !sse.is_finite() {
        return None;
    }
    Some(ClassFit {
        class,
        constant: a,
        coefficient: c,
        rms: (sse / ts.len() as f64).sqrt() / mean,
    })
}

/// Every class's fit, and the chosen one with the F-test's p: the smallest RMS, unless the
/// growth over O(1) is not significant.
pub fn best_class(ns: &[f64], ts: &[f64]) -> Option<(ClassFit, Vec<ClassFit>, f64)> {
    let fits: Vec<ClassFit> = Class::ALL
        .iter()
        .map(|&c| fit_class(ns, ts, c))
        .collect::<Option<_>>()?;
    let best = *fits.iter().min_by(|a, b| a.rms.total_cmp(&b.rms))?;
    let constant = fits[0];
    let m = ts.len() as f64;
    let p = if ts.len() < 3 {
        1.0
    } else {
        let mean = ts.iter().sum::<f64>() / m;
        let sse0 = m * (constant.rms * mean).powi(2);
        let sse1 = m * (best.rms * mean).powi(2);
        let dof = m - 2.0;
        if sse1 <= 0.0 {
            if sse0 > 0.0 {
                0.0
            } else {
                1.0
            }
        } else {
            let f = ((sse0 - sse1) / (sse1 / dof)).max(0.0);
            FisherSnedecor::new(1.0, dof)
                .map(|d| d.sf(f))
                .unwrap_or(1.0)
        }
    };
    let chosen = if p < GROWTH_ALPHA { best } else { constant };
    Some((chosen, fits, p))
}

/// How fast a class grows over the scan's values: the log–log slope of `f(n)` (0 for O(1),
/// about 1.09 for O(n log n) over 10⁴…10⁶).
pub fn class_exponent(ns: &[f64], class: Class) -> Option<f64> {
    let f: Vec<f64> = ns.iter().map(|&n| class.f(n)).collect();
    log_log(ns, &f).map(|(k, _)| k)
}

/// The simplest growing class whose exponent over the scan ([`class_exponent`]) lies in the
/// interval of `k`, with its fit; None without an interval or when no class does. Classes that
/// a noisy scan cannot tell apart (O(n) and O(n log n) differ by ~0.09 in exponent over two
/// decades) resolve to the simpler one; the least RMS alone flips between them with the noise
/// of the largest values.
pub fn consistent_class(
    ns: &[f64],
    fits: &[ClassFit],
    exponent_ci: Option<(f64, f64)>,
) -> Option<ClassFit> {
    let (lo, hi) = exponent_ci?;
    fits.iter()
        .filter(|f| f.class != Class::Constant)
        .find(|f| class_exponent(ns, f.class).is_some_and(|e| lo <= e && e <= hi))
        .copied()
}

/// Non-negative `(a, c)` and the relative sum of squares for a fixed exponent.
fn offset_at(ns: &[f64], ts: &[f64], w: &[f64], k: f64) -> (f64, f64, f64) {
    let f: Vec<f64> = ns.iter().map(|n| n.powf(k)).collect();
    nnls2(&f, ts, w)
}

/// `t = a + c·n^k` minimising `Σ ((t − a − c·n^k)/t)²` over `a, c ≥ 0`, `k ∈ [K_MIN, K_MAX]`:
/// a grid over `k` (step 0.02), then golden-section search between the best point's
/// neighbours. `None` with a non-positive time or value.
pub fn offset_power_law(ns: &[f64], ts: &[f64]) -> Option<PowerLaw> {
    offset_search(ns, ts, (K_MIN, K_MAX), 0.02, 1e-10).map(|(p, _)| p)
}

/// The search of [`offset_power_law`] over `range` with a grid `step` and golden-section
/// tolerance `tol`; also whether the grid's best point was at an end of the range.
fn offset_search(
    ns: &[f64],
    ts: &[f64],
    range: (f64, f64),
    step: f64,
    tol: f64,
) -> Option<(PowerLaw, bool)> {
    if ns.len() != ts.len() || ns.len() < 2 || ns.iter().chain(ts).any(|v| v.is_nan() || *v <= 0.0)
    {
        return None;
    }
    let w: Vec<f64> = ts.iter().map(|t| 1.0 / (t * t)).collect();
    let steps = (((range.1 - range.0) / step).round() as usize).max(2);
    let grid = |i: usize| range.0 + (range.1 - range.0) * i as f64 / steps as f64;
    let best = (0..=steps)
        .map(|i| (i, offset_at(ns, ts, &w, grid(i)).2))
        .min_by(|a, b| a.1.total_cmp(&b.1))?
        .0;
    let (mut lo, mut hi) = (grid(best.saturating_sub(1)), grid((best + 1).min(steps)));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let obj = |k: f64| offset_at(ns, ts, &w, k).2;
    let (mut x1, mut x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut f1, mut f2) = (obj(x1), obj(x2));
    while hi - lo > tol {
        if f1 <= f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = obj(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = obj(x2);
        }
    }
    let mut k = (lo + hi) / 2.0;
    // The grid point itself may be better (a minimum at the edge of the range).
    if obj(grid(best)) < obj(k) {
        k = grid(best);
    }
    let (a, c, _) = offset_at(ns, ts, &w, k);
    let law = PowerLaw {
        model: PowerModel::Offset,
        exponent: k,
        constant: a,
        coefficient: c,
    };
    Some((law, best == 0 || best == steps))
}

/// A bootstrap refit: the offset law searched within ±1.5 of the estimate `k0` (grid 0.05,
/// tolerance 1e-6), over the whole range when the best point is at an end of that window.
fn refit(ns: &[f64], ts: &[f64], model: PowerModel, k0: f64) -> Option<PowerLaw> {
    if model == PowerModel::LogLog {
        return power_law(ns, ts, model);
    }
    let range = ((k0 - 1.5).max(K_MIN), (k0 + 1.5).min(K_MAX));
    match offset_search(ns, ts, range, 0.05, 1e-6)? {
        (_, true) => offset_search(ns, ts, (K_MIN, K_MAX), 0.02, 1e-6).map(|(p, _)| p),
        (p, false) => Some(p),
    }
}

fn power_law(ns: &[f64], ts: &[f64], model: PowerModel) -> Option<PowerLaw> {
    match model {
        PowerModel::Offset => offset_power_law(ns, ts),
        PowerModel::LogLog => log_log(ns, ts).map(|(k, c)| PowerLaw {
            model,
            exponent: k,
            constant: 0.0,
            coefficient: c,
        }),
    }
}

/// The scaling fit of a scan: `groups` holds `(n, process values)`, one entry per distinct
/// value of the parameter (values with no usable process are dropped). `None` with fewer than 3
/// parameter values or a non-positive value or median. The exponent's interval resamples
/// processes within each value `resamples` times with `ChaCha8Rng::seed_from_u64(seed)`;
/// None when a value has fewer than 2 processes.
pub fn scaling(
    groups: &[(f64, Vec<f64>)],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Scaling> {
    let mut gs: Vec<(f64, Vec<f64>)> = groups
        .iter()
        .map(|(n, v)| (*n, sorted_without_nan(v)))
        .filter(|(n, v)| n.is_finite() && !v.is_empty())
        .collect();
    gs.sort_by(|a, b| a.0.total_cmp(&b.0));
    if gs.len() < 3 || gs.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    let ns: Vec<f64> = gs.iter().map(|g| g.0).collect();
    let ts: Vec<f64> = gs.iter().map(|g| median(&g.1)).collect::<Option<_>>()?;
    if ns.iter().chain(&ts).any(|v| v.is_nan() || *v <= 0.0) {
        return None;
    }
    let (_, classes, growth_p) = best_class(&ns, &ts)?;
    let model = if gs.len() >= 4 && growth_p < GROWTH_ALPHA {
        PowerModel::Offset
    } else {
        PowerModel::LogLog
    };
    let power = power_law(&ns, &ts, model)?;
    let exponent_ci = if gs.iter().all(|g| g.1.len() >= 2) && resamples > 0 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut ks = Vec::with_capacity(resamples);
        let mut buf = Vec::new();
        let mut meds = vec![0.0; gs.len()];
        for _ in 0..resamples {
            for (m, (_, v)) in meds.iter_mut().zip(&gs) {
                buf.clear();
                buf.extend((0..v.len()).map(|_| v[rng.gen_range(0..v.len())]));
                buf.sort_unstable_by(f64::total_cmp);
                *m = median(&buf).unwrap_or(f64::NAN);
            }
            if let Some(p) = refit(&ns, &meds, model, power.exponent) {
                ks.push(p.exponent);
            }
        }
        ks.sort_unstable_by(f64::total_cmp);
        let tail = (1.0 - confidence) / 2.0;
        if ks.len() * 2 >= resamples {
            Some((quantile(&ks, tail)?, quantile(&ks, 1.0 - tail)?))
        } else {
            None
        }
    } else {
        None
    };
    // Growth: the F-test, or an interval of k above 0 (the F-test has 1 degree of freedom
    // with 3 values).
    let grows = growth_p < GROWTH_ALPHA || exponent_ci.is_some_and(|(lo, _)| lo > 0.0);
    let growing = classes
        .iter()
        .filter(|f| f.class != Class::Constant)
        .min_by(|a, b| a.rms.total_cmp(&b.rms))
        .copied();
    let class = match growing {
        Some(least) if grows => consistent_class(&ns, &classes, exponent_ci).unwrap_or(least),
        _ => classes[0],
    };
    let points = gs
        .iter()
        .zip(&ts)
        .map(|((n, v), m)| Point {
            n: *n,
            processes: v.len(),
            median: *m,
            ci: super::describe::median_ci(v, confidence),
        })
        .collect();
    Some(Scaling {
        points,
        power,
        exponent_ci,
        confidence,
        resamples,
        class,
        classes,
        growth_p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn reference() -> Value {
        // tests/data/stats/scaling.json, from scripts/scaling_reference.py.
        serde_json::from_str(include_str!("../../tests/data/stats/scaling.json")).unwrap()
    }

    fn floats(v: &Value) -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    }

    fn close(a: f64, b: f64, rel: f64, abs: f64, what: &str) {
        assert!(
            (a - b).abs() <= rel * b.abs().max(a.abs()) + abs,
            "{what}: {a} vs {b}"
        );
    }

    fn class_of(name: &str) -> Class {
        serde_json::from_value(Value::String(name.into())).unwrap()
    }

    #[test]
    fn log_log_matches_polyfit() {
        for c in reference()["cases"].as_array().unwrap() {
            let (k, coef) = log_log(&floats(&c["ns"]), &floats(&c["medians"])).unwrap();
            close(
                k,
                c["loglog"]["exponent"].as_f64().unwrap(),
                1e-9,
                1e-12,
                "k",
            );
            close(
                coef,
                c["loglog"]["coefficient"].as_f64().unwrap(),
                1e-8,
                0.0,
                "c",
            );
        }
    }

    #[test]
    fn offset_fit_matches_scipy() {
        for c in reference()["cases"].as_array().unwrap() {
            let name = c["name"].as_str().unwrap();
            if name == "constant" {
                continue; // k is not identified when the times do not grow
            }
            let (ns, ts) = (floats(&c["ns"]), floats(&c["medians"]));
            let p = offset_power_law(&ns, &ts).unwrap();
            let r = &c["offset"];
            close(
                p.exponent,
                r["exponent"].as_f64().unwrap(),
                1e-5,
                1e-6,
                name,
            );
            let t_max = ts.iter().cloned().fold(0.0, f64::max);
            close(
                p.constant,
                r["constant"].as_f64().unwrap(),
                1e-3,
                1e-6 * t_max,
                name,
            );
            let w: Vec<f64> = ts.iter().map(|t| 1.0 / (t * t)).collect();
            let sse = offset_at(&ns, &ts, &w, p.exponent).2;
            assert!(
                sse <= r["sse"].as_f64().unwrap() * (1.0 + 1e-6) + 1e-15,
                "{name}"
            );
        }
    }

    #[test]
    fn classes_match_nnls() {
        for c in reference()["cases"].as_array().unwrap() {
            let name = c["name"].as_str().unwrap();
            let (ns, ts) = (floats(&c["ns"]), floats(&c["medians"]));
            let (chosen, fits, p) = best_class(&ns, &ts).unwrap();
            for f in &fits {
                let key = serde_json::to_value(f.class).unwrap();
                let r = &c["classes"][key.as_str().unwrap()];
                let scale = ts.iter().cloned().fold(0.0, f64::max);
                close(
                    f.constant,
                    r["constant"].as_f64().unwrap(),
                    1e-6,
                    1e-9 * scale,
                    name,
                );
                close(f.rms, r["rms"].as_f64().unwrap(), 1e-6, 1e-12, name);
            }
            close(p, c["growth_p"].as_f64().unwrap(), 1e-6, 1e-12, name);
            assert_eq!(
                chosen.class,
                class_of(c["best_class"].as_str().unwrap()),
                "{name}"
            );
        }
    }

    #[test]
    fn bootstrap_interval_agrees_with_scipy_and_is_seeded() {
        for c in reference()["cases"].as_array().unwrap() {
            let Some(ci) = c.get("bootstrap_exponent_ci") else {
                continue;
            };
            let name = c["name"].as_str().unwrap();
            let ns = floats(&c["ns"]);
            let groups: Vec<(f64, Vec<f64>)> = ns
                .iter()
                .zip(c["groups"].as_array().unwrap())
                .map(|(n, g)| (*n, floats(g)))
                .collect();
            let s = scaling(&groups, 0.95, 2000, 1).unwrap();
            assert_eq!(s.power.model, PowerModel::Offset, "{name}");
            let (lo, hi) = s.exponent_ci.unwrap();
            let (rlo, rhi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            // Monte Carlo error: different random streams; within a fifth of the width.
            let tol = 0.2 * (rhi - rlo);
            close(lo, rlo, 0.0, tol, name);
            close(hi, rhi, 0.0, tol, name);
            assert!(lo <= s.power.exponent && s.power.exponent <= hi, "{name}");
            assert_eq!(scaling(&groups, 0.95, 2000, 1).unwrap(), s);
        }
    }

    #[test]
    fn chosen_class_is_the_truth_of_each_reference_scan() {
        let truth = [
            ("linear-no-offset", Class::Linear),
            ("linear-offset", Class::Linear),
            ("quadratic-offset", Class::Square),
            ("nlogn", Class::NLogN),
            ("cubic", Class::Cube),
            ("constant", Class::Constant),
            ("log", Class::Log),
        ];
        for c in reference()["cases"].as_array().unwrap() {
            let name = c["name"].as_str().unwrap();
            let Some((_, want)) = truth.iter().find(|t| t.0 == name) else {
                continue;
            };
            let groups: Vec<(f64, Vec<f64>)> = floats(&c["ns"])
                .into_iter()
                .zip(c["groups"].as_array().unwrap())
                .map(|(n, g)| (n, floats(g)))
                .collect();
            let s = scaling(&groups, 0.95, 500, 3).unwrap();
            assert_eq!(s.class.class, *want, "{name}: {:?}", s.exponent_ci);
        }
    }

    #[test]
    fn class_exponents_and_the_simpler_consistent_class() {
        let ns = [1e4, 1e5, 1e6];
        close(
            class_exponent(&ns, Class::Linear).unwrap(),
            1.0,
            1e-12,
            0.0,
            "n",
        );
        close(
            class_exponent(&ns, Class::Square).unwrap(),
            2.0,
            1e-12,
            0.0,
            "n²",
        );
        let nlogn = class_exponent(&ns, Class::NLogN).unwrap();
        assert!(nlogn > 1.05 && nlogn < 1.1, "{nlogn}");
        let fits: Vec<ClassFit> = Class::ALL
            .iter()
            .map(|&class| ClassFit {
                class,
                constant: 0.0,
                coefficient: 1.0,
                rms: 0.1,
            })
            .collect();
        let pick = |ci| consistent_class(&ns, &fits, ci).map(|f| f.class);
        assert_eq!(pick(Some((0.93, 1.08))), Some(Class::Linear));
        assert_eq!(pick(Some((1.04, 1.12))), Some(Class::NLogN));
        assert_eq!(pick(Some((1.3, 1.6))), None);
        assert_eq!(pick(None), None);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(scaling(&[], 0.95, 100, 1).is_none());
        let two = [(1.0, vec![1.0, 1.1]), (10.0, vec![2.0, 2.1])];
        assert!(scaling(&two, 0.95, 100, 1).is_none());
        let dup = [(1.0, vec![1.0]), (1.0, vec![2.0]), (4.0, vec![3.0])];
        assert!(scaling(&dup, 0.95, 100, 1).is_none());
        let zero = [(1.0, vec![0.0]), (4.0, vec![1.0]), (16.0, vec![2.0])];
        assert!(scaling(&zero, 0.95, 100, 1).is_none());
        // One process per value: a fit, no interval.
        let one = [(1.0, vec![1.0]), (4.0, vec![4.0]), (16.0, vec![16.0])];
        let s = scaling(&one, 0.95, 100, 1).unwrap();
        assert!(s.exponent_ci.is_none());
        assert!((s.power.exponent - 1.0).abs() < 1e-9);
        assert_eq!(s.class.class, Class::Linear);
        assert!(log_log(&[1.0, 1.0], &[1.0, 2.0]).is_none());
        assert!(fit_class(&[1.0], &[f64::NAN], Class::Linear).is_none());
    }
}
