//! Classical two-sided hypothesis tests used by comparisons: Mann–Whitney U, Welch's t,
//! Kruskal–Wallis H, Holm's step-down adjustment, and the minimum sample size at which the
//! exact Mann–Whitney test can reach significance at all.
//!
//! All tests ignore NaN values in their inputs. The p-values follow `scipy.stats`
//! conventions exactly (see each function).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF, StudentsT};
use statrs::function::erf::erfc;
use statrs::function::factorial::ln_binomial;

use super::rank::{average_ranks, tie_term};

/// Result of a two-sided test: the test statistic and its p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Test statistic; its meaning is documented on each test.
    pub statistic: f64,
    /// Two-sided p-value in `[0, 1]`.
    pub p_value: f64,
}

/// How the Mann–Whitney p-value is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MannWhitneyMethod {
    /// scipy's rule: exact if either sample has at most 8 values and there are no ties,
    /// asymptotic otherwise.
    Auto,
    /// Exact null distribution of U (valid only without ties).
    Exact,
    /// Normal approximation with tie and continuity corrections.
    Asymptotic,
}

fn finite_only(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| !x.is_nan()).collect()
}

/// Two-sided Mann–Whitney U test of `a` against `b` with [`MannWhitneyMethod::Auto`].
///
/// `statistic` is U of `a`: `R_a − n_a(n_a+1)/2` with `R_a` the sum of the average ranks of
/// `a` in the pooled sample. Matches `scipy.stats.mannwhitneyu(a, b, alternative="two-sided")`
/// (method `"auto"`, continuity correction on). `None` if either sample is empty after
/// dropping NaN.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<TestResult> {
    mann_whitney_u_with(a, b, MannWhitneyMethod::Auto)
}

/// Two-sided Mann–Whitney U test with an explicit method; see [`mann_whitney_u`].
///
/// * Exact: `p = min(1, 2·P(U ≤ min(U_a, U_b)))` under the null distribution of U, as scipy's
///   `method="exact"`. Returns `None` when there are ties (the exact null distribution does not
///   apply; scipy would silently return a wrong value) or when the computation would be too
///   large (`min(n)²·max(n) > 10⁸` or `n_a·n_b > 4·10⁶`). `Auto` falls back to the asymptotic
///   method in that case (only reachable with one sample ≤ 8 and the other > 500 000 runs).
/// * Asymptotic: `z = (max(U_a, U_b) − n_a·n_b/2 − 0.5) / σ`, with
///   `σ² = n_a·n_b/12 · ((N + 1) − Σ(t³ − t)/(N(N − 1)))`, `p = min(1, 2·Φ(−z))`; as scipy's
///   `method="asymptotic"` with `use_continuity=True`. When every value is tied, σ = 0 and
///   p = 1 (same as scipy).
pub fn mann_whitney_u_with(a: &[f64], b: &[f64], method: MannWhitneyMethod) -> Option<TestResult> {
    let (a, b) = (finite_only(a), finite_only(b));
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b.iter()).copied().collect();
    let (ranks, ties) = average_ranks(&pooled);
    let r1: f64 = ranks[..n1].iter().sum();
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = r1 - f1 * (f1 + 1.0) / 2.0;
    let u2 = f1 * f2 - u1;
    let exact = match method {
        MannWhitneyMethod::Auto => {
            (n1 <= 8 || n2 <= 8) && ties.is_empty() && exact_feasible(n1, n2)
        }
        MannWhitneyMethod::Exact => true,
        MannWhitneyMethod::Asymptotic => false,
    };
    let p = if exact {
        if !ties.is_empty() {
            return None;
        }
        // Without ties U is an integer; round away the float noise of the rank sum.
        let k = u1.min(u2).round() as usize;
        2.0 * mwu_exact_cdf(k, n1, n2)?
    } else {
        let n = f1 + f2;
        let s = (f1 * f2 / 12.0 * ((n + 1.0) - tie_term(&ties) / (n * (n - 1.0)))).sqrt();
        let z = (u1.max(u2) - f1 * f2 / 2.0 - 0.5) / s;
        // 2·Φ(−z) = erfc(z/√2); erfc(−∞) = 2 covers σ = 0.
        if z.is_nan() {
            1.0
        } else {
            erfc(z / std::f64::consts::SQRT_2)
        }
    };
    Some(TestResult {
        statistic: u1,
        p_value: p.clamp(0.0, 1.0),
    })
}

/// Whether [`mwu_exact_cdf`] will compute for these sizes: at most ~10⁸ operations and 16 MB
/// (`min(n)²·max(n) ≤ 10⁸`, `n1·n2 ≤ 4·10⁶`), and a total count representable in f64.
fn exact_feasible(n1: usize, n2: usize) -> bool {
    let (m, n) = (n1.min(n2) as f64, n1.max(n2) as f64);
    m * m * n <= 1e8 && m * n <= 4e6 && ln_binomial((n1 + n2) as u64, n1.min(n2) as u64) <= 700.0
}

/// `P(U ≤ k)` under the null for sample sizes `n1`, `n2` without ties.
///
/// Hand-written because statrs has no Mann–Whitney distribution. The number of arrangements
/// with `U = u` is the coefficient of `q^u` in the Gaussian binomial
/// `∏_{i=1..m} (1 − q^{n+i}) / (1 − q^i)` (m = min size, n = max size); we build it one factor
/// at a time, truncated at degree `k`. Coefficients of degree < n + i never see a subtraction,
/// so the lower tail (which is what we sum) is computed from additions only and stays accurate
/// even beyond 2⁵³. Cost O(m·k).
fn mwu_exact_cdf(k: usize, n1: usize, n2: usize) -> Option<f64> {
    if !exact_feasible(n1, n2) {
        return None;
    }
    let (m, n) = (n1.min(n2), n1.max(n2));
    let ln_total = ln_binomial((m + n) as u64, m as u64);
    let k = k.min(m * n);
    let mut c = vec![0.0f64; k + 1];
    c[0] = 1.0;
    for i in 1..=m {
        let d = n + i;
        for u in (d..=k).rev() {
            c[u] -= c[u - d];
        }
        for u in i..=k {
            c[u] += c[u - i];
        }
    }
    let count: f64 = c.iter().sum();
    Some(count / ln_total.exp())
}

/// Smallest number of runs `n` per group for which the exact two-sided Mann–Whitney test can
/// reach `p < alpha` at all: its most extreme outcome (complete separation) has
/// `p = 2 / C(2n, n)`, so this is the smallest `n` with `2 / C(2n, n) < alpha`
/// (4 for α = 0.05, 5 for α = 0.01). Returns `usize::MAX` when no `n` can do it
/// (`alpha ≤ 0` or NaN, or below ~1e-300).
pub fn min_runs_for_significance(alpha: f64) -> usize {
    if alpha.is_nan() || alpha <= 0.0 {
        return usize::MAX;
    }
    (1..=600u64)
        .find(|&n| extreme_p(n) < alpha)
        .map_or(usize::MAX, |n| n as usize)
}

/// `2 / C(2n, n)`, from exact integers while they fit so that boundary cases such as
/// `2/20 = 0.1` compare exactly, then from log-binomials.
fn extreme_p(n: u64) -> f64 {
    let mut c: u128 = 1;
    for i in 1..=n {
        // C(n+i, i) = C(n+i−1, i−1)·(n+i)/i, exact at every step.
        match c.checked_mul((n + i) as u128) {
            Some(v) => c = v / i as u128,
            None => return (2f64.ln() - ln_binomial(2 * n, n)).exp(),
        }
    }
    2.0 / c as f64
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, v)
}

/// Welch's unequal-variance two-sample t-test, two-sided.
///
/// `statistic = (mean(a) − mean(b)) / √(s²_a/n_a + s²_b/n_b)` (sample variances with `n − 1`),
/// Welch–Satterthwaite degrees of freedom, `p = 2·P(T_df > |t|)`. Matches
/// `scipy.stats.ttest_ind(a, b, equal_var=False)`. `None` if either sample has fewer than 2
/// non-NaN values, if both variances are 0, or if the result is not finite.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let (a, b) = (finite_only(a), finite_only(b));
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((ma, va), (mb, vb)) = (mean_var(&a), mean_var(&b));
    let (wa, wb) = (va / a.len() as f64, vb / b.len() as f64);
    let se2 = wa + wb;
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (wa * wa / (a.len() - 1) as f64 + wb * wb / (b.len() - 1) as f64);
    if !(t.is_finite() && df.is_finite() && df > 0.0) {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(TestResult {
        statistic: t,
        p_value: (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
    })
}

/// Kruskal–Wallis H test that all groups come from the same distribution.
///
/// `H = [12/(N(N+1)) Σ R_i²/n_i − 3(N+1)] / [1 − Σ(t³ − t)/(N³ − N)]` with average ranks in
/// the pooled sample and tie groups of size t; `p = P(χ²_{g−1} > H)`. Matches
/// `scipy.stats.kruskal(*groups)`. NaN values are dropped. `None` with fewer than two groups,
/// any empty group, or when all values are equal (H undefined).
pub fn kruskal_wallis(groups: &[&[f64]]) -> Option<TestResult> {
    let groups: Vec<Vec<f64>> = groups.iter().map(|g| finite_only(g)).collect();
    if groups.len() < 2 || groups.iter().any(|g| g.is_empty()) {
        return None;
    }
    let pooled: Vec<f64> = groups.iter().flatten().copied().collect();
    let n = pooled.len() as f64;
    let (ranks, ties) = average_ranks(&pooled);
    let mut start = 0;
    let mut sum = 0.0;
    for g in &groups {
        let r: f64 = ranks[start..start + g.len()].iter().sum();
        sum += r * r / g.len() as f64;
        start += g.len();
    }
    let correction = 1.0 - tie_term(&ties) / (n * n * n - n);
    let h = (12.0 / (n * (n + 1.0)) * sum - 3.0 * (n + 1.0)) / correction;
    if !(h.is_finite() && correction > 0.0) {
        return None;
    }
    let h = h.max(0.0);
    let chi = ChiSquared::new((groups.len() - 1) as f64).ok()?;
    Some(TestResult {
        statistic: h,
        p_value: chi.sf(h).clamp(0.0, 1.0),
    })
}

/// Holm's step-down adjusted p-values, in the input order.
///
/// With the m non-NaN p-values sorted ascending `p_(1) ≤ … ≤ p_(m)`, the adjusted value of
/// `p_(i)` is `min(1, max_{j ≤ i} (m − j + 1)·p_(j))`. Matches
/// `statsmodels.stats.multitest.multipletests(p, method="holm")[1]`. NaN entries stay NaN and
/// do not count towards m. Ties keep their input order.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let mut out = vec![f64::NAN; p_values.len()];
    let mut idx: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    idx.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let m = idx.len();
    let mut running = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        let adj = ((m - rank) as f64 * p_values[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}
